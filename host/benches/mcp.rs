//! `tools/call` round trips over MCP stdio, in one run:
//!
//! - direct: `Plugin::invoke` of the trivial tool `add` (fresh sandboxed
//!   instance, validation, result checking) — the baseline;
//! - toolhost: the `toolhost serve` binary as a child process serving `add`;
//! - node: the official unsandboxed `@modelcontextprotocol/server-everything`
//!   (stdio transport, its tool `get-sum`), pinned in `benches/node/` and
//!   installed by `cargo xtask bench` (`npm ci` into `<target>/bench-node`).
//!
//! Both servers are driven by the same lean JSON-RPC client (one line per
//! message, no SDK): sequentially, interleaved so drift in machine load hits
//! all alike, then with 32 requests in flight for throughput (alternating
//! rounds, median of the rounds), with the CPU time each call cost the
//! server and the client (from `/proc/<pid>/stat`): on a 2-core machine the
//! calls/s of a server are bounded by the CPU both spend per call.
//!
//! The pipe floor: the same client sends a line as long as a `tools/call` to
//! `cat`, which writes it back: two pipes, two processes, two wake-ups, no
//! parsing. No MCP server over stdio can answer faster; the round trips are
//! also given as a multiple of it.
//!
//! Run: `cargo xtask bench` (or `cargo bench -p toolhost --bench mcp`; set
//! `BENCH_ITERS` to change the count, `TOOLHOST_BENCH_NODE_DIR` to point at
//! another install of the Node server).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use toolhost::tool::ToolCall;
use toolhost::{Engine, EngineConfig, Plugin, PluginOptions};

#[path = "support/report.rs"]
mod report;
#[path = "support/rpc.rs"]
mod rpc;
#[path = "support/stats.rs"]
mod stats;
use rpc::Server;
use stats::{cpu_time, stats, us};

/// One MCP server under test: how to call its trivial tool and check the answer.
struct Target {
    server: Server,
    tool: &'static str,
    check: fn(&Value) -> bool,
}

impl Target {
    async fn round_trip(&mut self) -> Result<()> {
        self.server
            .call(self.tool, &json!({"a": 1, "b": 2}))
            .await?;
        let response = self.server.response().await?;
        if !(self.check)(&response) {
            bail!("unexpected response: {response}");
        }
        Ok(())
    }

    /// Calls per second with `in_flight` requests outstanding, over `total`
    /// calls, and the CPU time each call cost the server and this client.
    async fn pipelined(&mut self, total: u64, in_flight: usize) -> Result<Round> {
        let pid = self.server.pid().context("the server has exited")?;
        let cpu = (cpu_time(pid)?, cpu_time(std::process::id())?);
        let start = Instant::now();
        let arguments = json!({"a": 1, "b": 2});
        self.server
            .pipelined(self.tool, &arguments, total, in_flight, self.check)
            .await?;
        let rate = total as f64 / start.elapsed().as_secs_f64();
        let per_call = |spent: Duration| us(spent) / total as f64;
        Ok(Round {
            rate,
            server_cpu: per_call(cpu_time(pid)?.saturating_sub(cpu.0)),
            client_cpu: per_call(cpu_time(std::process::id())?.saturating_sub(cpu.1)),
        })
    }
}

/// One round of pipelined calls: calls per second, and CPU µs per call.
struct Round {
    rate: f64,
    server_cpu: f64,
    client_cpu: f64,
}

/// The pipe floor: `cat` echoing lines over its stdin and stdout.
struct PipeEcho {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    request: Vec<u8>,
    line: Vec<u8>,
}

impl PipeEcho {
    async fn start() -> Result<Self> {
        let mut child = Command::new("cat")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .context("starting `cat` for the pipe floor")?;
        // A line as long as the servers' requests.
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 2}}});
        let mut request = serde_json::to_vec(&call)?;
        request.push(b'\n');
        Ok(Self {
            stdin: child.stdin.take().context("no stdin")?,
            stdout: BufReader::new(child.stdout.take().context("no stdout")?),
            _child: child,
            request,
            line: Vec::new(),
        })
    }

    async fn round_trip(&mut self) -> Result<()> {
        self.stdin.write_all(&self.request).await?;
        self.line.clear();
        self.stdout.read_until(b'\n', &mut self.line).await?;
        if self.line != self.request {
            bail!("`cat` echoed something else");
        }
        Ok(())
    }
}

fn toolhost_checks(response: &Value) -> bool {
    response["result"]["structuredContent"] == json!({"result": 3})
}

fn node_checks(response: &Value) -> bool {
    response["result"]["content"][0]["text"] == "The sum of 1 and 2 is 3."
}

/// Where `cargo xtask bench` installs the Node server: `<target>/bench-node`.
fn node_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("TOOLHOST_BENCH_NODE_DIR") {
        return Some(dir.into());
    }
    // This binary is `<target>/<profile>/deps/mcp-<hash>`.
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.parent()?.join("bench-node"))
}

async fn start_node() -> Result<Option<Target>> {
    let script = node_dir()
        .map(|dir| dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"));
    let Some(script) = script.filter(|s| s.is_file()) else {
        println!(
            "  (node server-everything not installed: `cargo xtask bench` installs it; skipping the Node figures)"
        );
        return Ok(None);
    };
    let mut command = Command::new("node");
    command.arg(script).arg("stdio");
    Ok(Some(Target {
        server: Server::start(command).await?,
        tool: "get-sum",
        check: node_checks,
    }))
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
    // Optimized code, here and (from the shared cache directory, which this
    // leaves it in) in the `serve` child below: tiered compilation would
    // start both on baseline code.
    anyhow::ensure!(plugin.settled().await? == toolhost::engine::Tier::Optimized);

    let dir = tempfile::tempdir()?;
    std::fs::copy(toolhost_test_plugins::ECHO, dir.path().join("echo.wasm"))?;
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    command
        .arg("--plugins")
        .arg(dir.path())
        .args(["serve", "--no-watch"]);
    let mut toolhost = Target {
        server: Server::start(command).await?,
        tool: "add",
        check: toolhost_checks,
    };
    println!("MCP stdio: tools/call of a trivial tool, {iters} sequential calls each, interleaved");
    let mut node = start_node().await?;
    let mut pipe = PipeEcho::start().await?;

    let direct_once = async || -> Result<()> {
        let out = plugin
            .invoke(ToolCall::new("add", json!({"a": 1, "b": 2})))
            .await?;
        if out.result != Some(json!({"result": 3})) {
            bail!("wrong result");
        }
        Ok(())
    };
    for _ in 0..200 {
        pipe.round_trip().await?;
        direct_once().await?;
        toolhost.round_trip().await?;
        if let Some(node) = &mut node {
            node.round_trip().await?;
        }
    }
    let (mut direct, mut stdio, mut node_stdio) = (Vec::new(), Vec::new(), Vec::new());
    let mut floor = Vec::new();
    for _ in 0..iters {
        let start = Instant::now();
        pipe.round_trip().await?;
        floor.push(start.elapsed());
        let start = Instant::now();
        direct_once().await?;
        direct.push(start.elapsed());
        let start = Instant::now();
        toolhost.round_trip().await?;
        stdio.push(start.elapsed());
        if let Some(node) = &mut node {
            let start = Instant::now();
            node.round_trip().await?;
            node_stdio.push(start.elapsed());
        }
    }

    // Throughput: 32 requests in flight, rounds alternating between servers.
    let in_flight = 32;
    // Long enough rounds for the CPU figures (10 ms clock ticks).
    let total = iters.max(in_flight as u64) * 10;
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        ours.push(toolhost.pipelined(total, in_flight).await?);
        if let Some(node) = &mut node {
            theirs.push(node.pipelined(total, in_flight).await?);
        }
    }
    // The round of median rate.
    let median = |mut v: Vec<Round>| {
        v.sort_by(|a, b| a.rate.total_cmp(&b.rate));
        let at = v.len() / 2;
        (at < v.len()).then(|| v.swap_remove(at))
    };

    let direct = stats(direct);
    let stdio = stats(stdio);
    let floor = stats(floor);
    println!("  round trip (ratio to the direct call in parentheses):");
    report::line(
        "(a) direct library call (Plugin::invoke)",
        44,
        &direct,
        &direct,
    );
    report::line("(b) toolhost serve, MCP stdio", 44, &stdio, &direct);
    let node_stdio = (!node_stdio.is_empty()).then(|| stats(node_stdio));
    if let Some(node_stdio) = &node_stdio {
        report::line(
            "(c) node server-everything, MCP stdio",
            44,
            node_stdio,
            &direct,
        );
        println!(
            "  (d) toolhost / node round trip               median {:>5.2}×            p99 {:>5.2}×",
            us(stdio.median) / us(node_stdio.median),
            us(stdio.p99) / us(node_stdio.p99),
        );
    }
    println!("  round trip as a multiple of the pipe floor (ratio to it in parentheses):");
    report::line("(p) pipe floor: `cat` echoing the line", 44, &floor, &floor);
    report::line("(b) toolhost serve, MCP stdio", 44, &stdio, &floor);
    if let Some(node_stdio) = &node_stdio {
        report::line(
            "(c) node server-everything, MCP stdio",
            44,
            node_stdio,
            &floor,
        );
    }
    let Some(ours) = median(ours) else {
        bail!("no throughput round");
    };
    println!("  throughput, {in_flight} requests in flight ({total} calls, median of 3 rounds;");
    println!("  CPU per call from /proc, server and this client, 10 ms clock ticks):");
    let round = |name: &str, r: &Round| {
        println!(
            "  {name:<44} {:>8.0} calls/s   CPU per call: server {:>5.1} µs, client {:>5.1} µs",
            r.rate, r.server_cpu, r.client_cpu
        );
    };
    round("(e) toolhost serve", &ours);
    if let Some(theirs) = median(theirs) {
        round("(f) node server-everything", &theirs);
        println!(
            "  (g) toolhost / node throughput               {:>8.2}×            server CPU per call {:>5.2}×",
            ours.rate / theirs.rate,
            ours.server_cpu / theirs.server_cpu
        );
    }
    toolhost.server.stop().await?;
    if let Some(node) = node {
        node.server.stop().await?;
    }
    Ok(())
}
