//! `tools/call` round trips over MCP stdio against a direct library call of the
//! same tool, in one run.
//!
//! - direct: `Plugin::invoke` of the trivial tool `add` (fresh sandboxed
//!   instance, validation, result checking);
//! - stdio: the `toolhost serve` binary as a child process, driven by a lean
//!   JSON-RPC client (one line per message, no SDK) — sequentially, and with
//!   32 requests in flight for throughput.
//!
//! Run: `cargo bench -p toolhost --bench mcp` (set `BENCH_ITERS` to change the count).

use std::collections::HashSet;
use std::process::Stdio;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout, Command};
use toolhost::{Engine, EngineConfig, Plugin, PluginOptions, ToolCall};

#[path = "support/stats.rs"]
mod stats;
use stats::{stats, us};

/// A JSON-RPC client over a child's stdin/stdout: one JSON message per line.
struct Client {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
}

impl Client {
    async fn send(&mut self, message: &Value) -> Result<()> {
        let mut bytes = serde_json::to_vec(message)?;
        bytes.push(b'\n');
        self.stdin.write_all(&bytes).await?;
        Ok(())
    }

    /// The next response (notifications are skipped).
    async fn response(&mut self) -> Result<Value> {
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
}

fn call(id: u64) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
    })
}

fn check(response: &Value) -> Result<()> {
    if response["result"]["structuredContent"] != json!({"result": 3}) {
        bail!("unexpected response: {response}");
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    let iters: u64 = std::env::var("BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let engine = Engine::new(&EngineConfig::default())?;
    let plugin = Plugin::load(
        &engine,
        toolhost_test_plugins::ECHO,
        &PluginOptions::default(),
    )
    .await?;

    let dir = tempfile::tempdir()?;
    std::fs::copy(toolhost_test_plugins::ECHO, dir.path().join("echo.wasm"))?;
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--plugins")
        .arg(dir.path())
        .args(["serve", "--no-watch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .context("starting toolhost serve")?;
    let mut client = Client {
        stdin: child.stdin.take().context("no stdin")?,
        stdout: BufReader::new(child.stdout.take().context("no stdout")?),
        line: String::new(),
    };
    client
        .send(&json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            },
        }))
        .await?;
    client.response().await?;
    client
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await?;

    let direct_once = async || -> Result<()> {
        let out = plugin
            .invoke(ToolCall::new("add", json!({"a": 1, "b": 2})))
            .await?;
        if out.result != Some(json!({"result": 3})) {
            bail!("wrong result");
        }
        Ok(())
    };
    let mut id = 0;
    for _ in 0..200 {
        direct_once().await?;
        id += 1;
        client.send(&call(id)).await?;
        check(&client.response().await?)?;
    }
    // Interleaved so drift in machine load hits both alike.
    let (mut direct, mut stdio) = (Vec::new(), Vec::new());
    for _ in 0..iters {
        let start = Instant::now();
        direct_once().await?;
        direct.push(start.elapsed());
        id += 1;
        let start = Instant::now();
        client.send(&call(id)).await?;
        check(&client.response().await?)?;
        stdio.push(start.elapsed());
    }

    // Throughput: keep 32 requests in flight.
    let in_flight = 32;
    let total = iters.max(in_flight) * 2;
    let start = Instant::now();
    let mut outstanding = HashSet::new();
    let (mut sent, mut done) = (0u64, 0u64);
    while done < total {
        while sent < total && outstanding.len() < in_flight as usize {
            id += 1;
            sent += 1;
            client.send(&call(id)).await?;
            outstanding.insert(id);
        }
        let response = client.response().await?;
        check(&response)?;
        let answered = response["id"].as_u64().context("response without an id")?;
        if !outstanding.remove(&answered) {
            bail!("a response to an unknown request {answered}");
        }
        done += 1;
    }
    let pipelined = total as f64 / start.elapsed().as_secs_f64();

    let (direct, stdio) = (stats(direct), stats(stdio));
    println!("tools/call of a trivial Rust tool (`add`), {iters} iterations each, interleaved");
    println!(
        "  (a) direct library call (Plugin::invoke)     median {:>8.1} µs   p99 {:>8.1} µs",
        us(direct.median),
        us(direct.p99)
    );
    println!(
        "  (b) MCP stdio round trip (toolhost serve)    median {:>8.1} µs   p99 {:>8.1} µs",
        us(stdio.median),
        us(stdio.p99)
    );
    println!(
        "  (c) ratio b/a                                median {:>8.2}      p99 {:>8.2}",
        us(stdio.median) / us(direct.median),
        us(stdio.p99) / us(direct.p99)
    );
    println!("  (d) MCP stdio, {in_flight} in flight               {pipelined:>8.0} calls/s");
    drop(client);
    let _ = child.wait().await;
    Ok(())
}
