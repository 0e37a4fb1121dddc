//! Start-up and memory with 50 plugins, in one run.
//!
//! The directory: 48 Rust components (seven test and example plugins, cycled)
//! plus the Python and JavaScript conformance guests (`cargo xtask guests`;
//! Rust ones stand in with a message if those are not built). Each file gets a
//! distinct custom section appended, so all 50 are distinct components to the
//! compiled-code cache, as 50 real plugins would be.
//!
//! Start-up (in process, `PluginDir::open` + the first `invoke`):
//! - cold: an empty compiled-code cache, so all 50 compile (and fill the
//!   cache), through `PluginSet::load_dir_with` (the loader `PluginDir::open`
//!   uses). Process CPU time over wall time, and the sum of per-file load
//!   times over wall time, show how parallel compiling is;
//! - warm: a new engine on that cache (median of 3);
//! - baseline: a warm start of a directory with one plugin.
//!
//! Memory (`toolhost serve` as a child process, warm cache, RSS from
//! `/proc/<pid>/status`):
//! - idle: RSS with the 50 plugins loaded, minus RSS serving an empty
//!   directory, per plugin; "beyond compiled code" subtracts each component's
//!   compiled image (`Component::serialize` length: the code and metadata
//!   wasmtime maps, all of whose pages are resident once loaded);
//! - in flight: N calls blocked in WASI sleep (the `hostile` test plugin's
//!   `sleep_forever`, deadline 3 s) at once; RSS while they wait, minus RSS
//!   idle after one call, per call.
//!
//! Run: `cargo xtask bench` (or `cargo xtask guests && cargo bench -p toolhost --bench startup`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use serde_json::json;
use tokio::process::Command;
use toolhost::{Context, Engine, EngineConfig, PluginDir, PluginOptions, ToolsetExt};

#[path = "support/guests.rs"]
mod guests;
#[path = "support/rpc.rs"]
mod rpc;
#[path = "support/stats.rs"]
mod stats;
use guests::polyglot;
use rpc::Server;
use stats::{cpu_time, median, ms, rss};

const PLUGINS: usize = 50;
const MIB: f64 = 1024.0 * 1024.0;

/// `bytes` with a custom section appended that makes the component distinct.
fn distinct(bytes: &[u8], tag: usize) -> Vec<u8> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }
    let name = b"toolhost-bench";
    let payload = tag.to_le_bytes();
    let mut body = Vec::new();
    leb(name.len(), &mut body);
    body.extend_from_slice(name);
    body.extend_from_slice(&payload);
    let mut out = bytes.to_vec();
    out.push(0);
    leb(body.len(), &mut out);
    out.extend_from_slice(&body);
    out
}

/// Fills `dir` with the 50 plugins; returns (file stem, source) of each.
fn populate(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    use toolhost_test_plugins as t;
    let rust = [
        ("echo", t::ECHO),
        ("calc", t::CALC),
        ("codec", t::CODEC),
        ("json", t::JSON),
        ("text", t::TEXT),
        ("conformance", t::CONFORMANCE),
        ("hostile", t::HOSTILE),
    ];
    let mut chosen: Vec<(String, PathBuf)> = Vec::new();
    for (name, path) in [("py", t::CONFORMANCE_PY), ("js", t::CONFORMANCE_JS)] {
        match polyglot(path) {
            Some(found) => chosen.push((format!("conformance-{name}"), found)),
            None => {
                println!("  (no {path}: run `cargo xtask guests`; a Rust plugin takes its place)")
            }
        }
    }
    for (name, path) in rust.iter().cycle().take(PLUGINS - chosen.len()) {
        chosen.push(((*name).to_owned(), PathBuf::from(path)));
    }
    let mut files = Vec::new();
    for (i, (name, path)) in chosen.into_iter().enumerate() {
        let stem = format!("p{i:02}-{name}");
        let bytes = std::fs::read(&path).with_context(|| path.display().to_string())?;
        std::fs::write(dir.join(format!("{stem}.wasm")), distinct(&bytes, i))?;
        files.push((stem, path));
    }
    Ok(files)
}

/// Opens `dir` on a new engine with `cache`, calls `add`, then waits until
/// every plugin's code is loaded; (open, first call, all code loaded).
async fn start(dir: &Path, cache: &Path, first: &str) -> Result<(Duration, Duration, Duration)> {
    let mut config = EngineConfig::default();
    config.cache_dir(Some(cache.to_owned()));
    let engine = Engine::new(&config)?;
    let started = Instant::now();
    let set = PluginDir::open(&engine, dir, PluginOptions::default()).await?;
    let opened = started.elapsed();
    let failed: Vec<String> = set
        .status()
        .into_iter()
        .filter(|s| !matches!(s.state, toolhost::toolset::LoadState::Loaded { .. }))
        .map(|s| format!("{}: {:?}", s.path.display(), s.state))
        .collect();
    anyhow::ensure!(failed.is_empty(), "plugins failed to load: {failed:?}");
    let out = set
        .invoke(&Context::new(), first, json!({"a": 1, "b": 2}))
        .await?;
    anyhow::ensure!(out.result == Some(json!({"result": 3})), "wrong result");
    let first_call = started.elapsed();
    for plugin in set.plugins() {
        plugin.ready().await?;
    }
    Ok((opened, first_call, started.elapsed()))
}

fn serve(dir: &Path, cache: &Path, extra: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    command
        .arg("--plugins")
        .arg(dir)
        .arg("--cache-dir")
        .arg(cache)
        .args(extra)
        .args(["serve", "--no-watch"]);
    command
}

/// RSS once the process has settled: background loads done, two readings
/// 300 ms apart within 1% (or after 20 s).
async fn settled_rss(server: &Server) -> Result<u64> {
    let pid = server.pid().context("the server exited")?;
    let mut last = rss(pid)?;
    for _ in 0..66 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let now = rss(pid)?;
        if now.abs_diff(last) * 100 <= last {
            return Ok(now);
        }
        last = now;
    }
    Ok(last)
}

#[tokio::main]
async fn main() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let cache = tempfile::tempdir()?;
    println!("start-up: {PLUGINS} plugins (PluginDir::open, then the first call)");
    let files = populate(dir.path())?;
    let echo = files
        .iter()
        .find(|(stem, _)| stem.ends_with("-echo"))
        .map(|(stem, _)| format!("{stem}.add"))
        .context("no echo plugin")?;

    // Cold: an empty cache, through the parallel loader `PluginDir::open`
    // uses, to see how many loads overlap: the sum of per-file load times
    // over the wall time (CPU time over wall time is capped by the cores that
    // other work on the machine leaves us).
    let mut config = EngineConfig::default();
    config.cache_dir(Some(cache.path().to_owned()));
    let engine = Engine::new(&config)?;
    let mut per_file = Duration::ZERO;
    let (cpu, wall) = (cpu_time(std::process::id())?, Instant::now());
    let set = toolhost::PluginSet::load_dir_with(
        &engine,
        dir.path(),
        &PluginOptions::default(),
        |loaded| per_file += loaded.elapsed,
    )
    .await?;
    let (cold_open, cold_cpu) = (wall.elapsed(), cpu_time(std::process::id())? - cpu);
    anyhow::ensure!(set.failures().is_empty(), "{:?}", set.failures());
    let plugin = set
        .plugins()
        .iter()
        .find(|p| p.name().ends_with("-echo"))
        .context("no echo plugin")?;
    plugin
        .invoke(toolhost::tool::ToolCall::new(
            "add",
            json!({"a": 1, "b": 2}),
        ))
        .await?;
    let cold_first = wall.elapsed();
    // Tiered compilation: the first call ran on baseline code; the warm
    // starts below should find every plugin's optimized code in the cache.
    for plugin in set.plugins() {
        anyhow::ensure!(plugin.settled().await? == toolhost::engine::Tier::Optimized);
    }
    let cold_optimized = wall.elapsed();
    drop((set, engine));
    let mut warm = Vec::new();
    for _ in 0..3 {
        warm.push(start(dir.path(), cache.path(), &echo).await?);
    }
    let (warm_open, warm_first, warm_all) = median(warm);
    let one = tempfile::tempdir()?;
    std::fs::copy(toolhost_test_plugins::ECHO, one.path().join("echo.wasm"))?;
    start(one.path(), cache.path(), "add").await?;
    let mut single = Vec::new();
    for _ in 0..3 {
        single.push(start(one.path(), cache.path(), "add").await?);
    }
    let (one_open, one_first, _) = median(single);
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    println!(
        "  (a) baseline: warm, 1 plugin                 open {:>8.1} ms   to first call {:>8.1} ms",
        ms(one_open),
        ms(one_first)
    );
    println!(
        "  (b) warm cache, {PLUGINS} plugins (median of 3)    open {:>8.1} ms   to first call {:>8.1} ms ({:.1}× a)",
        ms(warm_open),
        ms(warm_first),
        ms(warm_first) / ms(one_first)
    );
    println!(
        "  (b') warm cache, {PLUGINS} plugins: every plugin's code loaded  {:>8.1} ms ({:.1}× a; listed from manifests, code loads in the background)",
        ms(warm_all),
        ms(warm_all) / ms(one_first)
    );
    println!(
        "  (c) cold cache, {PLUGINS} plugins (all compile)    open {:>8.1} ms   to first call {:>8.1} ms ({:.1}× b)",
        ms(cold_open),
        ms(cold_first),
        ms(cold_first) / ms(warm_first)
    );
    println!(
        "  (c') cold cache, {PLUGINS} plugins: every plugin's optimized code in  {:>8.1} ms (compiled in the background, one plugin at a time)",
        ms(cold_optimized),
    );
    println!(
        "  (d) cold: CPU time / wall time               {:>8.2} on {cores} cores (CPU {:.1} s)",
        cold_cpu.as_secs_f64() / cold_open.as_secs_f64(),
        cold_cpu.as_secs_f64()
    );
    println!(
        "  (d') cold: loads in flight on average        {:>8.1} (sum of per-file load times / wall time)",
        per_file.as_secs_f64() / cold_open.as_secs_f64(),
    );

    // Memory, in a child `toolhost serve` on the warm cache.
    let empty = tempfile::tempdir()?;
    let server = Server::start(serve(empty.path(), cache.path(), &[])).await?;
    let base = settled_rss(&server).await?;
    server.stop().await?;
    let spawned = Instant::now();
    let mut server = Server::start(serve(dir.path(), cache.path(), &[])).await?;
    let initialized = spawned.elapsed();
    let loaded = settled_rss(&server).await?;
    let spawned_call = Instant::now();
    server.call(&echo, &json!({"a": 1, "b": 2})).await?;
    server.response().await?;
    let first_call = initialized + spawned_call.elapsed();
    server.stop().await?;

    let mut config = EngineConfig::default();
    config.cache_dir(Some(cache.path().to_owned()));
    let engine = Engine::new(&config)?;
    let mut compiled = 0usize;
    for entry in std::fs::read_dir(dir.path())? {
        let bytes = std::fs::read(entry?.path())?;
        let component = wasmtime::component::Component::new(engine.__wasmtime(), &bytes)
            .map_err(|e| anyhow::anyhow!("{e:#}"))?;
        compiled += component
            .serialize()
            .map_err(|e| anyhow::anyhow!("{e:#}"))?
            .len();
    }
    let per_plugin = (loaded.saturating_sub(base)) as f64 / PLUGINS as f64;
    let code = compiled as f64 / PLUGINS as f64;
    println!("memory: `toolhost serve` child process, warm cache, VmRSS");
    println!(
        "  (e) spawn → initialized {:.0} ms, → first call answered {:.0} ms ({PLUGINS} plugins)",
        ms(initialized),
        ms(first_call)
    );
    println!(
        "  (f) RSS empty directory (baseline)           {:>8.1} MiB",
        base as f64 / MIB
    );
    println!(
        "  (g) RSS {PLUGINS} plugins loaded, idle              {:>8.1} MiB ({:.1}× f)",
        loaded as f64 / MIB,
        loaded as f64 / base as f64
    );
    println!(
        "  (h) per idle plugin: (g − f) / {PLUGINS}            {:>8.2} MiB, of which compiled code {:.2} MiB, beyond it {:.2} MiB",
        per_plugin / MIB,
        code / MIB,
        (per_plugin - code) / MIB
    );

    // In-flight calls.
    let hostile = tempfile::tempdir()?;
    std::fs::copy(
        toolhost_test_plugins::HOSTILE,
        hostile.path().join("hostile.wasm"),
    )?;
    let mut server = Server::start(serve(
        hostile.path(),
        cache.path(),
        &["--timeout-ms", "3000"],
    ))
    .await?;
    server.call("ok", &json!({})).await?;
    server.response().await?;
    let idle = settled_rss(&server).await?;
    println!(
        "  (i) RSS one plugin, idle after one call      {:>8.1} MiB",
        idle as f64 / MIB
    );
    let mut first = None;
    for n in [1usize, 8, 64] {
        for _ in 0..n {
            server.call("sleep_forever", &json!({})).await?;
        }
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let during = rss(server.pid().context("the server exited")?)?;
        for _ in 0..n {
            server.response().await?;
        }
        let per_call = during.saturating_sub(idle) as f64 / n as f64;
        let first = *first.get_or_insert(per_call);
        println!(
            "  (j) {n:>2} calls in flight: RSS {:>6.1} MiB, per call {:>6.2} MiB ({:.2}× 1 call)",
            during as f64 / MIB,
            per_call / MIB,
            per_call / first
        );
    }
    server.stop().await?;
    Ok(())
}
