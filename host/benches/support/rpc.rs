//! A lean MCP client for the benches: JSON-RPC over a child process's stdin
//! and stdout, one JSON message per line, no SDK.

use std::process::Stdio;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// A running MCP server and the client end of its stdio.
pub(crate) struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
    next_id: u64,
}

impl Server {
    /// Starts `command` (its stderr is discarded unless `TOOLHOST_BENCH_STDERR`
    /// is set) and completes the MCP handshake.
    pub(crate) async fn start(mut command: Command) -> Result<Self> {
        let stderr = if std::env::var_os("TOOLHOST_BENCH_STDERR").is_some() {
            Stdio::inherit()
        } else {
            Stdio::null()
        };
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {command:?}"))?;
        let mut server = Self {
            stdin: child.stdin.take().context("no stdin")?,
            stdout: BufReader::new(child.stdout.take().context("no stdout")?),
            child,
            line: String::new(),
            next_id: 0,
        };
        let id = server.next_id();
        server
            .send(&json!({
                "jsonrpc": "2.0", "id": id, "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "0"},
                },
            }))
            .await?;
        server.response().await?;
        server
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        Ok(server)
    }

    /// The child's process ID.
    #[allow(dead_code, reason = "not every bench binary reads RSS")]
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// A fresh request ID.
    pub(crate) fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Sends one message.
    pub(crate) async fn send(&mut self, message: &Value) -> Result<()> {
        let mut bytes = serde_json::to_vec(message)?;
        bytes.push(b'\n');
        self.stdin.write_all(&bytes).await?;
        Ok(())
    }

    /// Sends a `tools/call` and returns its ID.
    pub(crate) async fn call(&mut self, tool: &str, arguments: &Value) -> Result<u64> {
        let id = self.next_id();
        self.send(&json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }))
        .await?;
        Ok(id)
    }

    /// The next response (notifications are skipped).
    pub(crate) async fn response(&mut self) -> Result<Value> {
        loop {
            self.line.clear();
            if self.stdout.read_line(&mut self.line).await? == 0 {
                bail!("the server closed its stdout");
            }
            let message: Value = serde_json::from_str(&self.line)
                .with_context(|| format!("not JSON on stdout: {}", self.line))?;
            if message.get("id").is_some() {
                return Ok(message);
            }
        }
    }

    /// `total` calls of `tool` with `in_flight` requests outstanding, each
    /// answer checked with `check`.
    #[allow(dead_code, reason = "not every bench binary pipelines")]
    pub(crate) async fn pipelined(
        &mut self,
        tool: &str,
        arguments: &Value,
        total: u64,
        in_flight: usize,
        check: fn(&Value) -> bool,
    ) -> Result<()> {
        let mut outstanding = std::collections::HashSet::new();
        let (mut sent, mut done) = (0u64, 0u64);
        while done < total {
            while sent < total && outstanding.len() < in_flight {
                sent += 1;
                outstanding.insert(self.call(tool, arguments).await?);
            }
            let response = self.response().await?;
            if !check(&response) {
                bail!("unexpected response: {response}");
            }
            let answered = response["id"].as_u64().context("response without an id")?;
            if !outstanding.remove(&answered) {
                bail!("a response to an unknown request {answered}");
            }
            done += 1;
        }
        Ok(())
    }

    /// Closes stdin and waits for the child to exit.
    pub(crate) async fn stop(self) -> Result<()> {
        let Self {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let waited = tokio::time::timeout(std::time::Duration::from_secs(5), child.wait()).await;
        if waited.is_err() {
            child.kill().await?;
        }
        Ok(())
    }
}
