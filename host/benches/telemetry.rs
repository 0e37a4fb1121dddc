//! What OpenTelemetry costs a call (issue 35), in one run: the same trivial
//! call (`add` of the echo plugin, through the call driver: its
//! `execute_tool` span and the validate, instantiate and guest spans
//! beneath) with telemetry
//!
//! - off: no `[telemetry]`, no variable (the spans' callsites are disabled);
//! - on, live: exporting over OTLP/HTTP to a loopback receiver that answers
//!   every export at once;
//! - on, dead: exporting to a port nobody listens on (the collector away).
//!
//! Each mode runs in a process of its own (a process's tracing subscriber is
//! set once), the three in turn for several rounds so drift in the machine's
//! load hits all alike. Prints each mode's median and p99 over the rounds'
//! medians and p99s, and the ratios to off (targets: dead ≈ live, a dead
//! collector never slows a call; on as close to off as the spans allow).
//!
//! Measured (2-core machine, 3 rounds of 3000 calls): off 15.5 µs, live
//! 24.9 µs (1.60×), dead 24.1 µs (1.55×) at the median; p99 28.4 / 76.7 /
//! 49.9 µs. A dead collector costs nothing more than a live one; the spans
//! themselves (six per call through the OpenTelemetry bridge) cost ~9 µs.
//!
//! Run: `cargo xtask bench telemetry` (or `cargo bench -p toolhost --bench
//! telemetry`; `BENCH_ITERS` sets the calls per process, 3000 by default;
//! `BENCH_ROUNDS` the rounds, 3).

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::telemetry::{Telemetry, TelemetryOptions};
use toolhost::{Context, Engine, EngineConfig, PluginDir, PluginOptions, ToolsetExt};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

#[path = "support/stats.rs"]
mod stats;
use stats::{median, stats, us};

/// The variable that makes this binary one mode's process.
const MODE: &str = "BENCH_TELEMETRY_MODE";
/// The variable that gives it the endpoint to export to.
const ENDPOINT: &str = "BENCH_TELEMETRY_ENDPOINT";

fn main() -> anyhow::Result<()> {
    match std::env::var(MODE) {
        Ok(mode) => measure(&mode),
        Err(_) => compare(),
    }
}

/// One mode's process: prints `MEDIAN_NS P99_NS`.
fn measure(mode: &str) -> anyhow::Result<()> {
    let iters: usize = std::env::var("BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let telemetry = runtime.block_on(async {
        if mode == "off" {
            return Ok::<_, anyhow::Error>(None);
        }
        let mut options = TelemetryOptions::default();
        options.enabled = true;
        options.endpoint = Some(std::env::var(ENDPOINT)?);
        Ok(Telemetry::start(&options)?)
    })?;
    if let Some(telemetry) = &telemetry {
        tracing_subscriber::registry()
            .with(telemetry.layer())
            .init();
    }
    let samples = runtime.block_on(async {
        let mut config = EngineConfig::default();
        config
            .cache_dir(None)
            .compilation(toolhost::engine::Compilation::Optimized);
        let engine = Engine::new(&config)?;
        let dir = tempfile::tempdir()?;
        std::fs::copy(toolhost_test_plugins::ECHO, dir.path().join("echo.wasm"))?;
        let set = PluginDir::open(&engine, dir.path(), PluginOptions::default()).await?;
        let cx = Context::new();
        let mut samples = Vec::with_capacity(iters);
        for i in 0..iters + iters / 10 + 10 {
            let started = Instant::now();
            let out = set.invoke(&cx, "add", json!({"a": 2, "b": 3})).await?;
            let took = started.elapsed();
            anyhow::ensure!(
                out.result == Some(json!({"result": 5})),
                "add returned {:?}",
                out.result
            );
            // The first tenth warms up: code loaded, pool slots used.
            if i >= iters / 10 + 10 {
                samples.push(took);
            }
        }
        Ok::<_, anyhow::Error>(samples)
    })?;
    let s = stats(samples);
    println!("{} {}", s.median.as_nanos(), s.p99.as_nanos());
    // Exported (or given up) while the runtime still runs.
    drop(telemetry);
    Ok(())
}

/// Runs the modes in turn and compares them.
fn compare() -> anyhow::Result<()> {
    let rounds: usize = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let live = Receiver::start()?;
    let dead = {
        // A free port, closed again: nobody listens there.
        let listener = TcpListener::bind("127.0.0.1:0")?;
        format!("http://{}", listener.local_addr()?)
    };
    let modes = [
        ("off", String::new()),
        ("live", live.endpoint()),
        ("dead", dead),
    ];
    let mut results: Vec<(Vec<Duration>, Vec<Duration>)> = vec![(Vec::new(), Vec::new()); 3];
    let me = std::env::current_exe()?;
    for _ in 0..rounds {
        for (i, (mode, endpoint)) in modes.iter().enumerate() {
            let out = Command::new(&me)
                .env(MODE, mode)
                .env(ENDPOINT, endpoint)
                .env("OTEL_BSP_SCHEDULE_DELAY", "100")
                .output()?;
            anyhow::ensure!(
                out.status.success(),
                "{mode}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let text = String::from_utf8(out.stdout)?;
            let mut fields = text.split_whitespace().map(str::parse::<u64>);
            let (Some(Ok(median)), Some(Ok(p99))) = (fields.next(), fields.next()) else {
                anyhow::bail!("{mode}: unexpected output {text:?}");
            };
            results[i].0.push(Duration::from_nanos(median));
            results[i].1.push(Duration::from_nanos(p99));
        }
    }
    println!(
        "telemetry: `add` through the call driver, {rounds} rounds of a process per mode, in turn ({} export requests answered by the live receiver)",
        live.exports()
    );
    let off = (median(results[0].0.clone()), median(results[0].1.clone()));
    for ((mode, _), (medians, p99s)) in modes.iter().zip(results) {
        let (m, p) = (median(medians), median(p99s));
        println!(
            "  {mode:<5} median {:>7.1} µs ({:>5.2}× off)   p99 {:>8.1} µs ({:>5.2}× off)",
            us(m),
            us(m) / us(off.0),
            us(p),
            us(p) / us(off.1),
        );
    }
    Ok(())
}

/// A loopback OTLP/HTTP sink: answers every request `200` with an empty
/// body at once, and counts the requests (keep-alive, HTTP/1.1).
struct Receiver {
    address: std::net::SocketAddr,
    exports: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Receiver {
    fn start() -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let address = listener.local_addr()?;
        let exports = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counted = exports.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let counted = counted.clone();
                std::thread::spawn(move || answer(stream, &counted));
            }
        });
        Ok(Self { address, exports })
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.address)
    }

    fn exports(&self) -> u64 {
        self.exports.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Reads requests (headers, then `Content-Length` bytes) and answers each.
fn answer(stream: TcpStream, exports: &std::sync::atomic::AtomicU64) {
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        exports.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let reply =
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if writer.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}
