//! Cold start: what a user waits for when nothing is compiled yet, and what
//! baseline code costs per call while a plugin runs it.
//!
//! Per language (the conformance guests: Rust, C, JavaScript, Go, Python; in
//! process, no cache directory, a fresh engine each):
//! - (a) optimized code only (`Compilation::Optimized`: how every load went
//!   before tiers, the baseline of this bench): `Plugin::load` + the first
//!   `greet` call answered;
//! - (b) tiered (the default): the same, on baseline code; b/a; and (b′) until
//!   the plugin's optimized code is in (`Plugin::settled`);
//! - per call, median of interleaved rounds: baseline code
//!   (`Compilation::Baseline`) against optimized code, the same call; the ratio is
//!   the slowdown of a call that runs before the optimized code is in.
//!
//! `toolhost serve` (a child process on stdio, an empty cache directory), the
//! example plugins (`cargo xtask plugins --all` puts them in `target/plugins`):
//! spawn → `initialize` answered → `tools/list` lists every example tool → one
//! call of each plugin answered; `[engine] compilation = "optimized"` (the
//! baseline) against the default.
//!
//! Run: `cargo xtask bench coldstart`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use serde_json::{Value, json};
use tokio::process::Command;
use toolhost::engine::{Compilation, Tier};
use toolhost::tool::ToolCall;
use toolhost::{Engine, EngineConfig, Plugin, PluginOptions};

#[path = "support/guests.rs"]
mod guests;
#[path = "support/rpc.rs"]
mod rpc;
#[path = "support/stats.rs"]
mod stats;
use guests::polyglot;
use rpc::Server;
use stats::{median, ms, us};

/// One call of each example plugin, and what it needs.
const EXAMPLE_CALLS: &[(&str, &str)] = &[
    ("evaluate", r#"{"expression": "1 + 2"}"#),
    ("checksum", r#"{"text": "abc"}"#),
    ("batch_digest", r#"{"inputs": ["a"]}"#),
    ("add_days", r#"{"date": "2026-11-27", "days": 1}"#),
    ("list_dir", r#"{"path": "."}"#),
    ("http_fetch", r#"{"url": "http://127.0.0.1:9/"}"#),
    ("json_query", r#"{"document": "{\"a\": 1}", "path": "a"}"#),
    ("semver_sort", r#"{"versions": ["1.0.0", "0.9.0"]}"#),
    ("wrap_text", r#"{"text": "hello world", "width": 5}"#),
    ("word_count", r#"{"text": "one two"}"#),
];

fn engine(compilation: Compilation) -> Result<Engine> {
    let mut config = EngineConfig::default();
    config.cache_dir(None).compilation(compilation);
    Ok(Engine::new(&config)?)
}

fn greet() -> ToolCall {
    ToolCall::new("greet", json!({"name": "Ann", "times": 2}))
}

/// Loads `path` on a fresh engine and answers one call: the cold start.
async fn cold(path: &str, compilation: Compilation) -> Result<(Duration, Plugin, Engine)> {
    let engine = engine(compilation)?;
    let started = Instant::now();
    let plugin = Plugin::load(&engine, path, &PluginOptions::default()).await?;
    let out = plugin.invoke(greet()).await?;
    let took = started.elapsed();
    ensure!(out.result == Some(json!({"text": "Hello, Ann! Hello, Ann!"})));
    Ok((took, plugin, engine))
}

/// The median per-call time of each plugin, calls interleaved so both see the same machine.
async fn per_call(plugins: [&Plugin; 2], iters: usize) -> Result<[Duration; 2]> {
    let mut times = [Vec::new(), Vec::new()];
    for _ in 0..iters {
        for (plugin, times) in plugins.iter().zip(times.iter_mut()) {
            let started = Instant::now();
            plugin.invoke(greet()).await?;
            times.push(started.elapsed());
        }
    }
    let [a, b] = times;
    Ok([median(a), median(b)])
}

async fn languages() -> Result<()> {
    let iters: usize = std::env::var("BENCH_ITERS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    let builds = [
        ("Rust", toolhost_test_plugins::CONFORMANCE),
        ("C", toolhost_test_plugins::CONFORMANCE_C),
        (
            "JavaScript (QuickJS)",
            toolhost_test_plugins::CONFORMANCE_JS,
        ),
        ("Go", toolhost_test_plugins::CONFORMANCE_GO),
        ("Python", toolhost_test_plugins::CONFORMANCE_PY),
    ];
    println!(
        "| language | (a) cold first call, optimized only | (b) cold first call, tiered | b/a | (b′) optimized code in | per call: baseline / optimized code | slowdown |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for (language, path) in builds {
        let found = polyglot(path);
        let path = found.as_deref().and_then(|p| p.to_str()).unwrap_or(path);
        if !Path::new(path).is_file() {
            println!("| {language} | (not built: `cargo xtask guests`) | | | | | |");
            continue;
        }
        let (optimized, fast, _keep) = cold(path, Compilation::Optimized).await?;
        let started = Instant::now();
        let (tiered, plugin, _engine) = cold(path, Compilation::Tiered).await?;
        let first = plugin.tier();
        let settled = plugin.settled().await?;
        let optimized_in = tiered + started.elapsed();
        ensure!(
            settled == Tier::Optimized,
            "{language}: settled on {settled:?}"
        );
        let (_, slow, _keep_too) = cold(path, Compilation::Baseline).await?;
        ensure!(
            slow.tier() == Some(Tier::Baseline),
            "{language}: Winch fell back"
        );
        let [slow_call, fast_call] = per_call([&slow, &fast], iters).await?;
        println!(
            "| {language} | {:.0} ms | **{:.0} ms**{} | {:.2} | {:.1} s | {:.0} / {:.0} µs | {:.2}× |",
            ms(optimized),
            ms(tiered),
            if first == Some(Tier::Baseline) {
                ""
            } else {
                " (optimized: not tiered)"
            },
            tiered.as_secs_f64() / optimized.as_secs_f64(),
            optimized_in.as_secs_f64(),
            us(slow_call),
            us(fast_call),
            slow_call.as_secs_f64() / fast_call.as_secs_f64(),
        );
    }
    Ok(())
}

/// The example plugins `cargo xtask plugins --all` built.
fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/plugins")
}

/// `toolhost serve` on the example plugins with an empty cache: spawn →
/// every tool listed and one call of each plugin answered.
async fn serve_cold(compilation: &str) -> Result<(Duration, Duration, usize)> {
    let scratch = tempfile::tempdir()?;
    let config = scratch.path().join("toolhost.toml");
    std::fs::write(
        &config,
        format!("[engine]\ncompilation = \"{compilation}\"\n"),
    )?;
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    command
        .arg("--config")
        .arg(&config)
        .arg("--plugins")
        .arg(examples_dir())
        .arg("--cache-dir")
        .arg(scratch.path().join("cache"))
        .args(["serve", "--no-watch"]);
    let started = Instant::now();
    let mut server = Server::start(command).await?;
    let id = server.next_id();
    server
        .send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}))
        .await?;
    let listed = server.response().await?;
    let tools = listed["result"]["tools"]
        .as_array()
        .context("tools/list has no tools")?
        .len();
    let listed_after = started.elapsed();
    for (tool, arguments) in EXAMPLE_CALLS {
        let arguments: Value = serde_json::from_str(arguments)?;
        server.call(tool, &arguments).await?;
        let answer = server.response().await?;
        ensure!(
            answer.get("result").is_some(),
            "{tool}: no result: {answer}"
        );
    }
    let served = started.elapsed();
    server.stop().await?;
    Ok((listed_after, served, tools))
}

async fn serve() -> Result<()> {
    if !examples_dir().join("calc.wasm").is_file() {
        println!(
            "(the example plugins are not built in {}: `cargo xtask plugins --all`; skipping serve)",
            examples_dir().display()
        );
        return Ok(());
    }
    let plugins = std::fs::read_dir(examples_dir())?
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "wasm"))
        .count();
    println!();
    println!(
        "| `toolhost serve`, {plugins} example plugins, empty cache | every tool listed | one call of each plugin answered | ratio |"
    );
    println!("| --- | --- | --- | --- |");
    let (list_a, served_a, tools_a) = serve_cold("optimized").await?;
    println!(
        "| (c) optimized only (baseline) | {:.2} s ({tools_a} tools) | {:.2} s | 1 |",
        list_a.as_secs_f64(),
        served_a.as_secs_f64()
    );
    let (list_b, served_b, tools_b) = serve_cold("tiered").await?;
    ensure!(
        tools_a == tools_b,
        "tiered lists {tools_b} tools, optimized {tools_a}"
    );
    println!(
        "| (d) tiered (the default) | {:.2} s ({tools_b} tools) | **{:.2} s** | {:.2}× c |",
        list_b.as_secs_f64(),
        served_b.as_secs_f64(),
        served_b.as_secs_f64() / served_a.as_secs_f64()
    );
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    languages().await?;
    serve().await
}
