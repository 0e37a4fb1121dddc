//! What a `tools/call` costs over streamable HTTP, against stdio, in one run:
//!
//! - (s) `toolhost serve` over stdio: the baseline, driven by the `mcp`
//!   bench's lean line client;
//! - (h) `toolhost serve --http`, a 2025-11-25 session (`initialize`, then
//!   calls naming the session in `Mcp-Session-Id`);
//! - (t) `toolhost serve --http`, stateless 2026-07-28 POSTs (the protocol
//!   version and client capabilities in each request's `_meta`, no session);
//! - (n) the official unsandboxed `@modelcontextprotocol/server-everything`
//!   in `streamableHttp` mode (its tool `get-sum`; it speaks 2025-11-25
//!   sessions only), pinned in `benches/node/` and installed by
//!   `cargo xtask bench` (`npm ci` into `<target>/bench-node`).
//!
//! All HTTP targets are driven by the same lean HTTP/1.1 keep-alive client
//! (hyper, one thread, no SDK). Sequential calls in interleaved blocks, so
//! drift in machine load hits all alike: round trip median and p99, and the
//! CPU time each server process spent per call (`/proc/<pid>/stat`, summed
//! over its blocks). Then 32 calls in flight (32 keep-alive connections; over
//! stdio 32 requests pipelined on the one pipe), 3 interleaved rounds: calls/s
//! of the median round and CPU per call over all rounds.
//!
//! Run: `cargo xtask bench mcp-http` (or `cargo bench -p toolhost --bench
//! mcp-http`; `BENCH_ITERS` sets the sequential count per target,
//! `BENCH_ROUND` the calls of a throughput round, `BENCH_TARGETS=s,h` runs
//! only those targets, e.g. under `perf record -p`).

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

#[path = "support/rpc.rs"]
mod rpc;
#[path = "support/stats.rs"]
mod stats;
use stats::{Stats, cpu_time, stats, us};

/// Requests in flight in the throughput rounds.
const IN_FLIGHT: usize = 32;
/// Sequential calls per block; blocks of the targets alternate.
const BLOCK: u64 = 500;
/// What a server gets to start (a hang guard, not a measurement).
const START_TIMEOUT: Duration = Duration::from_secs(120);

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// How a target's calls are framed.
#[derive(Clone)]
enum Mode {
    /// A 2025-11-25 session: this ID in `Mcp-Session-Id`.
    Session(String),
    /// Stateless 2026-07-28 POSTs.
    Stateless,
}

/// What to call and how to check the answer.
struct Spec {
    port: u16,
    mode: Mode,
    tool: &'static str,
    /// The call's `params`, as JSON text.
    params: String,
    /// The last request ID used: IDs are unique within a session.
    ids: AtomicU64,
    check: fn(&Value) -> bool,
}

impl Spec {
    /// The body of a `tools/call` with a fresh request ID.
    fn body(&self) -> Bytes {
        let id = self.ids.fetch_add(1, Ordering::Relaxed) + 1;
        let params = &self.params;
        Bytes::from(format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#
        ))
    }
}

/// One keep-alive HTTP/1.1 connection.
struct Connection {
    spec: Arc<Spec>,
    sender: SendRequest<Full<Bytes>>,
}

impl Connection {
    async fn open(spec: Arc<Spec>) -> Result<Self> {
        let sender = handshake(spec.port).await?;
        Ok(Self { spec, sender })
    }

    /// One `tools/call`, checked.
    async fn call(&mut self) -> Result<()> {
        let spec = &*self.spec;
        let mut request = hyper::Request::post("/mcp")
            .header("host", format!("127.0.0.1:{}", spec.port))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        request = match &spec.mode {
            Mode::Session(id) => request
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", "2025-11-25"),
            Mode::Stateless => request
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", spec.tool),
        };
        let request = request.body(Full::new(spec.body()))?;
        if self.sender.ready().await.is_err() {
            self.sender = handshake(spec.port).await?;
        }
        let (status, message) = exchange(&mut self.sender, request).await?;
        ensure!(status == 200, "HTTP {status}: {message}");
        ensure!((spec.check)(&message), "unexpected answer: {message}");
        Ok(())
    }
}

async fn handshake(port: u16) -> Result<SendRequest<Full<Bytes>>> {
    let stream = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port))).await?;
    stream.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    Ok(sender)
}

/// Sends `request`; the status, and the JSON-RPC message of the answer (a
/// JSON body, or the SSE event that carries an `id`).
async fn exchange(
    sender: &mut SendRequest<Full<Bytes>>,
    request: hyper::Request<Full<Bytes>>,
) -> Result<(u16, Value)> {
    let response = sender.send_request(request).await?;
    let status = response.status().as_u16();
    let body = response.into_body().collect().await?.to_bytes();
    let text = std::str::from_utf8(&body)?;
    let message = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .filter(|data| !data.is_empty())
        .find_map(|data| serde_json::from_str::<Value>(data).ok())
        .or_else(|| serde_json::from_str(text).ok())
        .unwrap_or_else(|| Value::String(text.to_owned()));
    Ok((status, message))
}

/// Opens a 2025-11-25 session on `port`: its ID.
async fn open_session(port: u16) -> Result<String> {
    let mut sender = handshake(port).await?;
    let initialize = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    });
    let post = |body: &Value, session: Option<&str>| {
        let mut request = hyper::Request::post("/mcp")
            .header("host", format!("127.0.0.1:{port}"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        request.body(Full::new(Bytes::from(body.to_string())))
    };
    let response = sender.send_request(post(&initialize, None)?).await?;
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .context("no Mcp-Session-Id in the initialize answer")?
        .to_owned();
    response.into_body().collect().await?;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _) = exchange(&mut sender, post(&initialized, Some(&session))?).await?;
    ensure!(status == 202, "notifications/initialized: HTTP {status}");
    Ok(session)
}

fn call_params(tool: &str, stateless: bool) -> String {
    let mut params = json!({"name": tool, "arguments": {"a": 1, "b": 2}});
    if stateless {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        });
    }
    params.to_string()
}

fn toolhost_checks(message: &Value) -> bool {
    message["result"]["structuredContent"] == json!({"result": 3})
}

fn node_checks(message: &Value) -> bool {
    message["result"]["content"][0]["text"] == "The sum of 1 and 2 is 3."
}

/// A server process this bench started, killed when dropped.
struct Process {
    child: Child,
    log: PathBuf,
}

impl Process {
    fn pid(&self) -> Result<u32> {
        self.child.id().context("the server has exited")
    }
}

/// Starts `command` (output into `log`) and waits until `port` accepts a
/// connection.
async fn start(mut command: Command, log: PathBuf, port: u16) -> Result<Process> {
    let out = std::fs::File::create(&log)?;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {command:?}"))?;
    let deadline = Instant::now() + START_TIMEOUT;
    while TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port)))
        .await
        .is_err()
    {
        if let Some(status) = child.try_wait()? {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            bail!("{command:?} exited ({status}):\n{log}");
        }
        ensure!(
            Instant::now() < deadline,
            "{command:?} did not listen in time"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(Process { child, log })
}

/// Where `cargo xtask bench` installs the Node server: `<target>/bench-node`.
fn node_script() -> Option<PathBuf> {
    let dir = match std::env::var_os("TOOLHOST_BENCH_NODE_DIR") {
        Some(dir) => PathBuf::from(dir),
        // This binary is `<target>/<profile>/deps/mcp_http-<hash>`.
        None => std::env::current_exe()
            .ok()?
            .parent()?
            .parent()?
            .parent()?
            .join("bench-node"),
    };
    let script = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    script.is_file().then_some(script)
}

/// A target's figures: sequential round trips, and CPU per call.
#[derive(Default)]
struct Figures {
    samples: Vec<Duration>,
    sequential_cpu: Duration,
    sequential_calls: u64,
    rounds: Vec<f64>,
    pipelined_cpu: Duration,
    pipelined_calls: u64,
}

impl Figures {
    fn sequential_cpu_us(&self) -> f64 {
        us(self.sequential_cpu) / self.sequential_calls.max(1) as f64
    }

    fn pipelined_cpu_us(&self) -> f64 {
        us(self.pipelined_cpu) / self.pipelined_calls.max(1) as f64
    }

    fn rate(&self) -> f64 {
        let mut rounds = self.rounds.clone();
        rounds.sort_by(f64::total_cmp);
        rounds.get(rounds.len() / 2).copied().unwrap_or(0.0)
    }
}

/// A server under test: its process, and how to call it.
#[allow(clippy::large_enum_variant, reason = "four targets a run")]
enum Target {
    Stdio(rpc::Server),
    Http {
        process: Process,
        spec: Arc<Spec>,
        connection: Connection,
    },
}

impl Target {
    fn pid(&self) -> Result<u32> {
        match self {
            Target::Stdio(server) => server.pid().context("the stdio server has exited"),
            Target::Http { process, .. } => process.pid(),
        }
    }

    async fn call(&mut self) -> Result<()> {
        match self {
            Target::Stdio(server) => {
                server.call("add", &json!({"a": 1, "b": 2})).await?;
                let response = server.response().await?;
                ensure!(toolhost_checks(&response), "unexpected answer: {response}");
                Ok(())
            }
            Target::Http { connection, .. } => connection.call().await,
        }
    }

    /// `count` sequential calls: their round trips, and the server's CPU.
    async fn block(&mut self, count: u64, figures: &mut Figures) -> Result<()> {
        let pid = self.pid()?;
        let before = cpu_time(pid)?;
        for _ in 0..count {
            let start = Instant::now();
            self.call().await?;
            figures.samples.push(start.elapsed());
        }
        figures.sequential_cpu += cpu_time(pid)?.saturating_sub(before);
        figures.sequential_calls += count;
        Ok(())
    }

    /// `total` calls with [`IN_FLIGHT`] outstanding: calls/s.
    async fn round(&mut self, total: u64, figures: &mut Figures) -> Result<()> {
        let pid = self.pid()?;
        let before = cpu_time(pid)?;
        let start = Instant::now();
        match self {
            Target::Stdio(server) => {
                let arguments = json!({"a": 1, "b": 2});
                server
                    .pipelined("add", &arguments, total, IN_FLIGHT, toolhost_checks)
                    .await?;
            }
            Target::Http { spec, .. } => pipelined_http(spec, total).await?,
        }
        figures
            .rounds
            .push(total as f64 / start.elapsed().as_secs_f64());
        figures.pipelined_cpu += cpu_time(pid)?.saturating_sub(before);
        figures.pipelined_calls += total;
        Ok(())
    }
}

async fn pipelined_http(spec: &Arc<Spec>, total: u64) -> Result<()> {
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..IN_FLIGHT {
        let mut connection = Connection::open(Arc::clone(spec)).await?;
        let next = Arc::clone(&next);
        tasks.spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < total {
                connection.call().await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok(())
}

async fn http_target(
    process: Process,
    port: u16,
    mode: Mode,
    tool: &'static str,
    check: fn(&Value) -> bool,
) -> Result<Target> {
    let stateless = matches!(mode, Mode::Stateless);
    let spec = Arc::new(Spec {
        port,
        mode,
        tool,
        params: call_params(tool, stateless),
        ids: AtomicU64::new(0),
        check,
    });
    let connection = Connection::open(Arc::clone(&spec)).await?;
    Ok(Target::Http {
        process,
        spec,
        connection,
    })
}

// One thread for the client, so it takes at most one core from the servers.
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let iters: u64 = std::env::var("BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let dir = tempfile::tempdir()?;
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins)?;
    std::fs::copy(toolhost_test_plugins::ECHO, plugins.join("echo.wasm"))?;
    // One cache directory: the stdio server compiles the plugin's optimized
    // code first, the HTTP server loads it (tiered compilation would start
    // it on baseline code).
    let cache = dir.path().join("cache");
    let toolhost = |cache: &PathBuf| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("TOOLHOST_") {
                command.env_remove(key);
            }
        }
        command
            .env("TOOLHOST_CACHE_DIR", cache)
            .arg("--plugins")
            .arg(&plugins)
            .args(["serve", "--no-watch"]);
        command
    };

    let mut targets: Vec<(&str, Target)> = Vec::new();
    let stdio = rpc::Server::start(toolhost(&cache)).await?;
    targets.push(("(s) toolhost serve, stdio", Target::Stdio(stdio)));

    let start_http = async |name: &str| -> Result<(Process, u16)> {
        let port = free_port()?;
        let mut command = toolhost(&cache);
        command.arg("--http").arg(format!("127.0.0.1:{port}"));
        let process = start(command, dir.path().join(format!("{name}.log")), port).await?;
        Ok((process, port))
    };
    let (process, port) = start_http("toolhost-session").await?;
    let session = open_session(port).await?;
    targets.push((
        "(h) toolhost serve --http, 2025-11-25 session",
        http_target(
            process,
            port,
            Mode::Session(session),
            "add",
            toolhost_checks,
        )
        .await?,
    ));
    // A server of its own for the stateless POSTs, so each server's CPU is
    // that of one kind of call.
    let (process, port) = start_http("toolhost-stateless").await?;
    targets.push((
        "(t) toolhost serve --http, 2026-07-28 stateless",
        http_target(process, port, Mode::Stateless, "add", toolhost_checks).await?,
    ));

    match node_script() {
        Some(script) => {
            let port = free_port()?;
            let mut command = Command::new("node");
            command
                .arg(script)
                .arg("streamableHttp")
                .env("PORT", port.to_string());
            let process = start(command, dir.path().join("node.log"), port).await?;
            let session = open_session(port).await?;
            targets.push((
                "(n) node server-everything, 2025-11-25 session",
                http_target(
                    process,
                    port,
                    Mode::Session(session),
                    "get-sum",
                    node_checks,
                )
                .await?,
            ));
        }
        None => println!(
            "  (node server-everything not installed: `cargo xtask bench mcp-http` installs it; skipping the Node figures)"
        ),
    }

    // For profiling one target: `BENCH_TARGETS=h` (letters, comma-separated).
    if let Ok(only) = std::env::var("BENCH_TARGETS") {
        targets.retain(|(name, _)| only.split(',').any(|l| name.starts_with(&format!("({l})"))));
    }
    println!(
        "MCP over streamable HTTP and stdio: tools/call of a trivial tool, {iters} sequential calls each in blocks of {BLOCK}, interleaved"
    );
    let mut figures: Vec<Figures> = targets.iter().map(|_| Figures::default()).collect();
    // Warm-up: connections, caches, the JIT of the Node server.
    for (_, target) in &mut targets {
        for _ in 0..300 {
            target.call().await?;
        }
    }
    for _ in 0..iters.div_ceil(BLOCK) {
        for ((_, target), figures) in targets.iter_mut().zip(&mut figures) {
            target.block(BLOCK, figures).await?;
        }
    }
    let total = std::env::var("BENCH_ROUND")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or((iters * 2).max(IN_FLIGHT as u64 * 100));
    for _ in 0..3 {
        for ((_, target), figures) in targets.iter_mut().zip(&mut figures) {
            target.round(total, figures).await?;
        }
    }

    let baseline = figures.first().context("no targets")?;
    let base_seq = baseline.sequential_cpu_us();
    let base_pipe = baseline.pipelined_cpu_us();
    let node = targets
        .iter()
        .position(|(name, _)| name.starts_with("(n)"))
        .map(|at| &figures[at]);
    println!("  sequential, one in flight: round trip, and server CPU per call (ratio to (s)):");
    for ((name, _), f) in targets.iter().zip(&figures) {
        let Stats { median, p99 } = stats(f.samples.clone());
        println!(
            "  {name:<48} median {:>7.1} µs  p99 {:>7.1} µs ({:>4.2}× median)   CPU {:>6.1} µs ({:>5.2}×)",
            us(median),
            us(p99),
            us(p99) / us(median),
            f.sequential_cpu_us(),
            f.sequential_cpu_us() / base_seq,
        );
    }
    println!(
        "  {IN_FLIGHT} in flight ({total} calls a round, 3 rounds; calls/s of the median round; CPU per call over all):"
    );
    for ((name, _), f) in targets.iter().zip(&figures) {
        let to_node = node
            .map(|n| {
                format!(
                    "  {:>5.2}× node's CPU",
                    f.pipelined_cpu_us() / n.pipelined_cpu_us()
                )
            })
            .unwrap_or_default();
        println!(
            "  {name:<48} {:>8.0} calls/s   CPU {:>6.1} µs ({:>5.2}×){to_node}",
            f.rate(),
            f.pipelined_cpu_us(),
            f.pipelined_cpu_us() / base_pipe,
        );
    }
    for (_, target) in targets {
        if let Target::Http { process, .. } = &target {
            let log = std::fs::metadata(&process.log)
                .map(|m| m.len())
                .unwrap_or(0);
            if log > 1 << 20 {
                println!(
                    "  (note: {} wrote {log} bytes of log)",
                    process.log.display()
                );
            }
        }
        if let Target::Stdio(server) = target {
            server.stop().await?;
        }
    }
    Ok(())
}
