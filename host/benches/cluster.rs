//! The cluster of docs/deploy.md, measured: `toolhost serve --http` replicas
//! sharing one Redis, behind nginx (round robin, the page's `nginx` block),
//! all on loopback ports in a temp dir, driven by a lean HTTP/1.1 client
//! sending stateless MCP 2026-07-28 POSTs (no session, no SDK).
//!
//! Round trips, sequential and interleaved so drift in machine load hits all
//! alike, each as a ratio to the baseline — a direct call of the trivial tool
//! `add` on a replica without Redis:
//! - the same call through nginx (one replica behind it): what nginx adds;
//! - `add` on a replica with `[state] url` set: what Redis costs a call that
//!   keeps no state;
//! - `remember` reading `temp:` state of a named invocation, embedded and in
//!   Redis: what a state round trip to Redis adds.
//!
//! Throughput with 32 requests in flight (32 keep-alive connections), direct
//! to one replica and through nginx with 1, 2 and 3 replicas (median of 3
//! interleaved rounds), and the CPU time each process spent per call it
//! served (`/proc/<pid>/stat`): on a machine with fewer cores than processes
//! busy, more replicas cannot add throughput; CPU per call is what tells how
//! a deployment with a core per replica scales.
//!
//! Needs `redis-server` and `nginx` on `PATH` (`cargo xtask bench` installs
//! them, as `cargo xtask cluster-test` does). Run: `cargo xtask bench cluster`
//! (or `cargo bench -p toolhost --bench cluster`; `BENCH_ITERS` sets the count).

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
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

#[path = "support/report.rs"]
mod report;
#[path = "support/stats.rs"]
mod stats;
use stats::{cpu_time, stats, us};

/// The header each replica names itself in.
const REPLICA_HEADER: &str = "x-toolhost-replica";
/// The `_meta` key naming an invocation.
const INVOCATION_KEY: &str = "dev.toolhost/invocation";
/// Requests in flight in the throughput runs.
const IN_FLIGHT: usize = 32;
/// What a replica or nginx gets to start (a hang guard, not a measurement).
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// A service this bench started, stopped (SIGTERM, then SIGKILL) when dropped,
/// so nothing outlives the bench, also when it fails.
struct Service {
    name: String,
    child: Child,
    log: PathBuf,
}

impl Service {
    fn start(name: &str, command: &mut Command, dir: &Path) -> Result<Self> {
        let log = dir.join(format!("{name}.log"));
        let out = std::fs::File::create(&log)?;
        let child = command
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {name} ({command:?}); `cargo xtask bench` installs redis-server and nginx"))?;
        Ok(Self {
            name: name.to_owned(),
            child,
            log,
        })
    }

    fn pid(&self) -> Result<u32> {
        self.child
            .id()
            .with_context(|| format!("{} has exited", self.name))
    }

    /// Fails with the service's log if it has exited.
    fn check_alive(&mut self) -> Result<()> {
        if let Some(status) = self.child.try_wait()? {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            bail!("{} exited ({status}):\n{log}", self.name);
        }
        Ok(())
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let Some(pid) = self.child.id() else { return };
        // SIGTERM lets nginx's master stop its workers; SIGKILL (kill_on_drop) would orphan them.
        if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// The processes whose parent is `pid` (nginx's workers).
fn children(pid: u32) -> Result<Vec<u32>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc")? {
        let Ok(child) = entry?.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|ppid| ppid.parse::<u32>().ok());
        if parent == Some(pid) {
            found.push(child);
        }
    }
    Ok(found)
}

/// One keep-alive HTTP/1.1 connection speaking MCP 2026-07-28 without a session.
struct Client {
    port: u16,
    sender: SendRequest<Full<Bytes>>,
}

impl Client {
    async fn connect(port: u16) -> Result<Self> {
        Ok(Self {
            port,
            sender: Self::open(port).await?,
        })
    }

    async fn open(port: u16) -> Result<SendRequest<Full<Bytes>>> {
        let stream = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port))).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(connection);
        Ok(sender)
    }

    /// Waits until the connection can take a request; reconnects, as a
    /// browser or SDK would, when the server closed it (nginx closes a
    /// keep-alive connection after `keepalive_requests`, 1000 by default).
    async fn ready(&mut self) -> Result<()> {
        if self.sender.is_closed() || self.sender.ready().await.is_err() {
            self.sender = Self::open(self.port).await?;
            self.sender.ready().await?;
        }
        Ok(())
    }

    /// `GET path`: the status code.
    async fn get(&mut self, path: &str) -> Result<u16> {
        let request = hyper::Request::get(path)
            .header("host", format!("127.0.0.1:{}", self.port))
            .body(Full::new(Bytes::new()))?;
        self.ready().await?;
        let response = self.sender.send_request(request).await?;
        let status = response.status().as_u16();
        response.into_body().collect().await?;
        Ok(status)
    }

    /// A `tools/call`: its structured result, and the replica that answered.
    async fn call(&mut self, call: &Call) -> Result<(Value, String)> {
        let request = hyper::Request::post("/mcp")
            .header("host", format!("127.0.0.1:{}", self.port))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", call.tool)
            .body(Full::new(call.body.clone()))?;
        self.ready().await?;
        let response = self.sender.send_request(request).await?;
        let status = response.status();
        let replica = response
            .headers()
            .get(REPLICA_HEADER)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("?")
            .to_owned();
        let body = response.into_body().collect().await?.to_bytes();
        ensure!(
            status.is_success(),
            "HTTP {status}: {}",
            String::from_utf8_lossy(&body)
        );
        // An SSE stream of one event (`data: {...}`), or a JSON body.
        let text = std::str::from_utf8(&body)?;
        let json = text
            .lines()
            .find_map(|line| line.strip_prefix("data: "))
            .unwrap_or(text);
        let message: Value = serde_json::from_str(json)?;
        let result = &message["result"];
        ensure!(
            result["isError"] == false,
            "the call of {} failed: {message}",
            call.tool
        );
        Ok((result["structuredContent"].clone(), replica))
    }
}

/// A prepared `tools/call` and the answer it must get.
struct Call {
    tool: &'static str,
    body: Bytes,
    expect: Value,
}

impl Call {
    fn new(tool: &'static str, arguments: Value, invocation: Option<&str>, expect: Value) -> Self {
        let mut meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        if let Some(invocation) = invocation {
            meta[INVOCATION_KEY] = json!(invocation);
        }
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments, "_meta": meta},
        });
        Self {
            tool,
            body: Bytes::from(body.to_string()),
            expect,
        }
    }

    async fn once(&self, client: &mut Client) -> Result<String> {
        let (result, replica) = client.call(self).await?;
        ensure!(
            result == self.expect,
            "{} answered {result}, not {}",
            self.tool,
            self.expect
        );
        Ok(replica)
    }
}

async fn wait_until<F, Fut>(what: &str, mut check: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + START_TIMEOUT;
    while Instant::now() < deadline {
        if check().await {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    bail!("{what} did not happen within {START_TIMEOUT:?}")
}

async fn ready(port: u16) -> bool {
    match Client::connect(port).await {
        Ok(mut client) => client
            .get("/readyz")
            .await
            .is_ok_and(|status| status == 200),
        Err(_) => false,
    }
}

/// A `toolhost serve --http` replica of `plugins`, with `config`.
async fn start_replica(
    name: &str,
    dir: &Path,
    plugins: &Path,
    config: &Path,
) -> Result<(Service, u16)> {
    let port = free_port()?;
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("TOOLHOST_") {
            command.env_remove(key);
        }
    }
    command
        .env("TOOLHOST_REPLICA", name)
        .env("TOOLHOST_CACHE_DIR", dir.join("cache"))
        .arg("--config")
        .arg(config)
        .arg("--plugins")
        .arg(plugins)
        .args(["serve", "--no-watch", "--http"])
        .arg(format!("127.0.0.1:{port}"));
    let mut service = Service::start(name, &mut command, dir)?;
    let deadline = Instant::now() + START_TIMEOUT;
    while !ready(port).await {
        service.check_alive()?;
        ensure!(
            Instant::now() < deadline,
            "{name} not ready within {START_TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok((service, port))
}

async fn start_redis(dir: &Path) -> Result<(Service, u16)> {
    let port = free_port()?;
    let data = dir.join("redis");
    std::fs::create_dir_all(&data)?;
    let mut command = Command::new("redis-server");
    command
        .args([
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--port",
        ])
        .arg(port.to_string())
        .arg("--dir")
        .arg(&data);
    let service = Service::start("redis-server", &mut command, dir)?;
    wait_until("redis-server listening", || async move {
        TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port)))
            .await
            .is_ok()
    })
    .await?;
    Ok((service, port))
}

/// The one `nginx` block of docs/deploy.md.
fn page_nginx() -> Result<String> {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/deploy.md");
    let text =
        std::fs::read_to_string(&page).with_context(|| format!("reading {}", page.display()))?;
    let start = text
        .find("```nginx\n")
        .context("no nginx block in docs/deploy.md")?
        + 9;
    let end = start
        + text[start..]
            .find("```")
            .context("unterminated nginx block")?;
    Ok(text[start..end].to_owned())
}

/// The page's replica addresses and listen address.
const PAGE_REPLICAS: [&str; 3] = ["127.0.0.1:8381", "127.0.0.1:8382", "127.0.0.1:8383"];
const PAGE_LISTEN: &str = "127.0.0.1:8080";

/// nginx running the page's block in front of the first `replicas.len()`
/// replicas (the page's other `server` lines dropped), on its own port.
async fn start_nginx(dir: &Path, page: &str, replicas: &[u16]) -> Result<(Service, u16)> {
    let port = free_port()?;
    let name = format!("nginx-{}", replicas.len());
    let mut block = String::new();
    for line in page.lines() {
        let mut line = line.to_owned();
        if let Some(at) = PAGE_REPLICAS.iter().position(|p| line.contains(p)) {
            let Some(replica) = replicas.get(at) else {
                continue;
            };
            line = line.replace(PAGE_REPLICAS[at], &format!("127.0.0.1:{replica}"));
        }
        block.push_str(&line.replace(PAGE_LISTEN, &format!("127.0.0.1:{port}")));
        block.push('\n');
    }
    let root = dir.join(&name);
    std::fs::create_dir_all(root.join("tmp"))?;
    let r = root.display();
    let conf = format!(
        "worker_processes 1;\ndaemon off;\npid {r}/nginx.pid;\nerror_log {r}/error.log warn;\n\
         events {{ worker_connections 1024; }}\nhttp {{\n    access_log {r}/access.log;\n\
         client_body_temp_path {r}/tmp/body;\n    proxy_temp_path {r}/tmp/proxy;\n\
         fastcgi_temp_path {r}/tmp/fastcgi;\n    uwsgi_temp_path {r}/tmp/uwsgi;\n\
         scgi_temp_path {r}/tmp/scgi;\n{block}}}\n"
    );
    let conf_path = root.join("nginx.conf");
    std::fs::write(&conf_path, conf)?;
    let mut command = Command::new("nginx");
    command.arg("-c").arg(&conf_path).arg("-p").arg(&root);
    let mut service = Service::start(&name, &mut command, dir)?;
    let deadline = Instant::now() + START_TIMEOUT;
    while !ready(port).await {
        service.check_alive()?;
        ensure!(
            Instant::now() < deadline,
            "{name} not proxying within {START_TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok((service, port))
}

/// One throughput run: calls per second, and the calls each replica answered.
async fn pipelined(port: u16, call: &Arc<Call>, total: u64) -> Result<(f64, HashMap<String, u64>)> {
    let next = Arc::new(AtomicU64::new(0));
    let mut clients = Vec::with_capacity(IN_FLIGHT);
    for _ in 0..IN_FLIGHT {
        clients.push(Client::connect(port).await?);
    }
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for mut client in clients {
        let (next, call) = (Arc::clone(&next), Arc::clone(call));
        tasks.spawn(async move {
            let mut served: HashMap<String, u64> = HashMap::new();
            while next.fetch_add(1, Ordering::Relaxed) < total {
                *served.entry(call.once(&mut client).await?).or_default() += 1;
            }
            anyhow::Ok(served)
        });
    }
    let mut served: HashMap<String, u64> = HashMap::new();
    while let Some(done) = tasks.join_next().await {
        for (replica, calls) in done?? {
            *served.entry(replica).or_default() += calls;
        }
    }
    Ok((total as f64 / start.elapsed().as_secs_f64(), served))
}

/// A process whose CPU time is accounted: a replica (by the name it answers
/// with), nginx's worker, Redis, or this client.
struct Accounted {
    name: String,
    pid: u32,
}

// One thread for the client, so it takes at most one core from the servers.
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let iters: u64 = std::env::var("BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let dir = tempfile::tempdir()?;
    let dir = dir.path();
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins)?;
    std::fs::copy(toolhost_test_plugins::ECHO, plugins.join("echo.wasm"))?;

    let (redis, redis_port) = start_redis(dir).await?;
    let embedded_config = dir.join("embedded.toml");
    std::fs::write(&embedded_config, "")?;
    let redis_config = dir.join("redis.toml");
    std::fs::write(
        &redis_config,
        format!("[state]\nurl = \"redis://127.0.0.1:{redis_port}/0\"\n"),
    )?;
    // The first replica compiles the plugin into the shared cache; the others load it.
    let (embedded, embedded_port) =
        start_replica("embedded", dir, &plugins, &embedded_config).await?;
    let mut replicas = Vec::new();
    for n in 1..=3 {
        replicas.push(start_replica(&format!("replica-{n}"), dir, &plugins, &redis_config).await?);
    }
    let ports: Vec<u16> = replicas.iter().map(|(_, port)| *port).collect();
    let page = page_nginx()?;
    let mut proxies = Vec::new();
    for n in 1..=3 {
        proxies.push(start_nginx(dir, &page, &ports[..n]).await?);
    }
    let workers: Vec<u32> = proxies
        .iter()
        .map(|(nginx, _)| children(nginx.pid()?).map(|w| w.into_iter().next()))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .map(|w| w.context("an nginx without a worker process"))
        .collect::<Result<_>>()?;

    let add = Arc::new(Call::new(
        "add",
        json!({"a": 1, "b": 2}),
        None,
        json!({"result": 3}),
    ));
    let remember = Call::new(
        "remember",
        json!({"key": "k"}),
        Some("bench"),
        json!({"value": "v"}),
    );
    let store = Call::new(
        "remember",
        json!({"key": "k", "value": "v"}),
        Some("bench"),
        json!({"stored": "k"}),
    );

    // Connections: direct to the replica without Redis, through nginx, direct to one with Redis.
    let mut clients = [
        Client::connect(embedded_port).await?,
        Client::connect(proxies[0].1).await?,
        Client::connect(ports[0]).await?,
    ];
    store.once(&mut clients[0]).await?;
    store.once(&mut clients[2]).await?;
    let runs: [(&Call, usize); 5] = [
        (&add, 0),
        (&add, 1),
        (&add, 2),
        (&remember, 0),
        (&remember, 2),
    ];

    println!(
        "Cluster (docs/deploy.md): MCP 2026-07-28 stateless POSTs over HTTP/1.1 keep-alive, nginx (1 worker) round robin, redis-server; {} cores",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("  round trip, {iters} sequential calls each, interleaved (ratio to (a)):");
    for _ in 0..200 {
        for (call, client) in runs {
            call.once(&mut clients[client]).await?;
        }
    }
    let mut samples: [Vec<Duration>; 5] = Default::default();
    for _ in 0..iters {
        for (at, (call, client)) in runs.into_iter().enumerate() {
            let start = Instant::now();
            call.once(&mut clients[client]).await?;
            samples[at].push(start.elapsed());
        }
    }
    let [a, b, c, d, e] = samples.map(stats);
    report::line(
        "(a) `add`, direct to a replica (embedded state)",
        52,
        &a,
        &a,
    );
    report::line("(b) `add` through nginx, 1 replica", 52, &b, &a);
    report::line(
        "(c) `add`, direct to a replica with Redis state",
        52,
        &c,
        &a,
    );
    report::line("(d) `remember` reads temp: state, embedded", 52, &d, &a);
    report::line("(e) `remember` reads temp: state, in Redis", 52, &e, &a);
    println!(
        "  nginx adds {:.1} µs per call ((b) − (a)); Redis adds {:.1} µs to a stateless call ((c) − (a)) and {:.1} µs to a state read ((e) − (d)), medians",
        us(b.median) - us(a.median),
        us(c.median) - us(a.median),
        us(e.median) - us(d.median),
    );
    drop(clients);

    // Throughput: every target once per round, rounds interleaved.
    let total = iters.max(IN_FLIGHT as u64) * 2;
    let mut accounted: Vec<Accounted> = replicas
        .iter()
        .enumerate()
        .map(|(n, (replica, _))| {
            Ok(Accounted {
                name: format!("replica-{}", n + 1),
                pid: replica.pid()?,
            })
        })
        .collect::<Result<_>>()?;
    accounted.push(Accounted {
        name: "redis-server".into(),
        pid: redis.pid()?,
    });
    accounted.push(Accounted {
        name: "this client".into(),
        pid: std::process::id(),
    });
    let targets: Vec<(String, u16, Option<u32>)> =
        std::iter::once(("direct to replica-1".to_owned(), ports[0], None))
            .chain(
                proxies
                    .iter()
                    .zip(&workers)
                    .enumerate()
                    .map(|(n, ((_, port), worker))| {
                        (format!("nginx, {} replica(s)", n + 1), *port, Some(*worker))
                    }),
            )
            .collect();
    // Per target: calls/s per round, CPU per process, calls per replica.
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); targets.len()];
    let mut cpu: Vec<HashMap<String, Duration>> = vec![HashMap::new(); targets.len()];
    let mut served: Vec<HashMap<String, u64>> = vec![HashMap::new(); targets.len()];
    pipelined(ports[0], &add, total / 4).await?;
    for _ in 0..3 {
        for (at, (_, port, worker)) in targets.iter().enumerate() {
            let mut watched: Vec<(String, u32)> =
                accounted.iter().map(|p| (p.name.clone(), p.pid)).collect();
            if let Some(worker) = worker {
                watched.push(("nginx".into(), *worker));
            }
            let before = watched
                .iter()
                .map(|(_, pid)| cpu_time(*pid))
                .collect::<Result<Vec<_>>>()?;
            let (rate, by_replica) = pipelined(*port, &add, total).await?;
            for ((name, pid), before) in watched.iter().zip(before) {
                *cpu[at].entry(name.clone()).or_default() += cpu_time(*pid)?.saturating_sub(before);
            }
            for (replica, calls) in by_replica {
                *served[at].entry(replica).or_default() += calls;
            }
            rates[at].push(rate);
        }
    }
    println!(
        "  throughput, {IN_FLIGHT} in flight, {total} calls per round, median of 3 rounds; CPU per call (µs) over the 3 rounds:"
    );
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let baseline = median(&rates[0]);
    for (at, (label, _, _)) in targets.iter().enumerate() {
        let rate = median(&rates[at]);
        let calls: u64 = served[at].values().sum();
        let per_call =
            |name: &str, of: u64| cpu[at].get(name).map_or(0.0, |t| us(*t) / of.max(1) as f64);
        let mut parts = Vec::new();
        let mut total_cpu = 0.0;
        for n in 1..=3 {
            let name = format!("replica-{n}");
            let Some(mine) = served[at].get(&name) else {
                continue;
            };
            let each = per_call(&name, *mine);
            total_cpu += cpu[at].get(&name).map_or(0.0, |t| us(*t)) / calls as f64;
            parts.push(format!("{name} {each:.0} ({mine} calls)"));
        }
        for name in ["nginx", "redis-server", "this client"] {
            if cpu[at].contains_key(name) {
                let each = per_call(name, calls);
                total_cpu += each;
                parts.push(format!("{name} {each:.0}"));
            }
        }
        println!(
            "  {label:<24} {rate:>7.0} calls/s ({:>4.2}×)   CPU/call: {}; all {total_cpu:.0}",
            rate / baseline,
            parts.join(", "),
        );
    }
    println!(
        "  With {} cores shared by the client, nginx, Redis and every replica, more replicas cannot add throughput here; \
         a replica with a core of its own serves about 1e6 / (its CPU per call) calls/s.",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    drop(proxies);
    drop(replicas);
    drop(embedded);
    drop(redis);
    Ok(())
}
