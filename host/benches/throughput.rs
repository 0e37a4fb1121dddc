//! Throughput of the full host path under concurrency: calls per second of
//! the trivial Rust tool `add` with 1, 2, 8 and 64 concurrent callers, through
//! the `Toolset` API (`PluginDir` + `ToolsetExt::invoke`: lookup, validation,
//! fresh sandboxed instance, call, result checks) on a multi-threaded tokio
//! runtime with one worker per core.
//!
//! Each caller is a task that calls in a loop. Rounds of every concurrency
//! level alternate (so drift in machine load hits all alike); the median round
//! is reported, with its ratio to one caller, the per-call latency at that
//! level (from wanting to call to the answer, so the wait for a turn counts)
//! and how evenly callers were served: with more callers than cores,
//! throughput should stay flat while latency grows with the queue
//! (backpressure) and every caller keeps being served, not collapse.
//!
//! Run: `cargo xtask bench` (or `cargo bench -p toolhost --bench throughput`;
//! `BENCH_SECS` sets the length of a round, 1.5 s by default).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::{Context, Engine, EngineConfig, PluginDir, PluginOptions, ToolsetExt};

#[path = "support/stats.rs"]
mod stats;
use stats::{stats, us};

const LEVELS: [usize; 4] = [1, 2, 8, 64];
const ROUNDS: usize = 3;

/// One round: `callers` tasks calling for `length`; the calls per second and
/// every call's latency.
async fn round(
    set: &Arc<PluginDir>,
    callers: usize,
    length: Duration,
) -> anyhow::Result<(f64, f64, Vec<Duration>)> {
    let start = Instant::now();
    let until = start + length;
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..callers {
        let set = set.clone();
        tasks.spawn(async move {
            let cx = Context::new();
            let mut latencies = Vec::new();
            while Instant::now() < until {
                let started = Instant::now();
                // A call that never waits (this one) runs to its end without
                // yielding; give the other callers their turn between calls,
                // as a caller doing any I/O would, and count the wait for the
                // turn in the latency.
                tokio::task::yield_now().await;
                let out = set.invoke(&cx, "add", json!({"a": 1, "b": 2})).await?;
                anyhow::ensure!(out.result == Some(json!({"result": 3})), "wrong result");
                latencies.push(started.elapsed());
            }
            Ok(latencies)
        });
    }
    let mut all = Vec::new();
    let mut fewest = usize::MAX;
    while let Some(joined) = tasks.join_next().await {
        let samples = joined??;
        fewest = fewest.min(samples.len());
        all.extend(samples);
    }
    let rate = all.len() as f64 / start.elapsed().as_secs_f64();
    // The share of the mean a starved caller got (1.0: all served alike).
    let fairness = fewest as f64 * callers as f64 / all.len().max(1) as f64;
    Ok((rate, fairness, all))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let secs: f64 = std::env::var("BENCH_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1.5);
    let length = Duration::from_secs_f64(secs);
    // Optimized code only: the steady state every plugin reaches once tiered
    // compilation has compiled its optimized code.
    let mut config = EngineConfig::default();
    config
        .cache_dir(None)
        .compilation(toolhost::engine::Compilation::Optimized);
    let engine = Engine::new(&config)?;
    let dir = tempfile::tempdir()?;
    std::fs::copy(toolhost_test_plugins::ECHO, dir.path().join("echo.wasm"))?;
    let set = Arc::new(PluginDir::open(&engine, dir.path(), PluginOptions::default()).await?);
    let workers = std::thread::available_parallelism().map_or(0, usize::from);

    // Warm up every pool slot the widest level will use.
    round(&set, *LEVELS.iter().max().unwrap_or(&1), length / 3).await?;
    let mut rates = vec![Vec::new(); LEVELS.len()];
    let mut latencies = vec![Vec::new(); LEVELS.len()];
    let mut fairness = vec![f64::MAX; LEVELS.len()];
    for _ in 0..ROUNDS {
        for (i, &callers) in LEVELS.iter().enumerate() {
            let (rate, fair, samples) = round(&set, callers, length).await?;
            rates[i].push(rate);
            fairness[i] = fairness[i].min(fair);
            latencies[i].extend(samples);
        }
    }
    let medians: Vec<f64> = rates
        .into_iter()
        .map(|mut r| {
            r.sort_by(f64::total_cmp);
            r[r.len() / 2]
        })
        .collect();
    println!(
        "throughput: trivial Rust tool (`add`) through PluginDir + ToolsetExt::invoke, {workers} cores, {ROUNDS} rounds of {secs} s per level, median round"
    );
    for (((callers, rate), samples), fair) in
        LEVELS.iter().zip(&medians).zip(latencies).zip(fairness)
    {
        let latency = stats(samples);
        println!(
            "  {callers:>3} callers {rate:>8.0} calls/s ({:>4.2}× 1 caller)   latency median {:>8.1} µs  p99 {:>8.1} µs   fairness {fair:.2}",
            rate / medians[0],
            us(latency.median),
            us(latency.p99),
        );
    }
    println!(
        "  (latency includes the wait for a turn; fairness: the calls of the least-served caller over the mean, worst round)"
    );
    Ok(())
}
