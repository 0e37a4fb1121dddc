//! The conformance tool set in each guest language, measured in one run: size of
//! the component, time to compile it (no code cache), and the full host path of
//! a call (`Plugin::invoke` of `greet`: validation, fresh instance, call, result
//! checks), with the fuel each call burns; then the same calls on an instance
//! reused within one invocation (`Reuse::PerInvocation`), and the speed-up.
//!
//! Run: `cargo xtask guests && cargo bench -p toolhost --bench languages`
//! (`BENCH_ITERS` sets the number of calls; 200 by default).

use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::plugin::Reuse;
use toolhost::tool::ToolCall;
use toolhost::{Engine, EngineConfig, Plugin, PluginOptions};

#[path = "support/guests.rs"]
mod guests;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let iters: usize = std::env::var("BENCH_ITERS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    // Optimized code only: these are the figures of a plugin's steady state
    // (the `coldstart` bench measures tiered compilation's baseline code).
    let mut config = EngineConfig::default();
    config
        .cache_dir(None)
        .compilation(toolhost::engine::Compilation::Optimized);
    let engine = Engine::new(&config)?;
    let builds = [
        ("Rust", toolhost_test_plugins::CONFORMANCE),
        (
            "JavaScript (QuickJS)",
            toolhost_test_plugins::CONFORMANCE_JS,
        ),
        ("Python", toolhost_test_plugins::CONFORMANCE_PY),
        ("C", toolhost_test_plugins::CONFORMANCE_C),
        ("Go", toolhost_test_plugins::CONFORMANCE_GO),
    ];
    println!(
        "| language | size | compile (no cache) | per call: median / p99 | fuel per call | reused per invocation: median / p99 | fresh / reused |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    let mut reusing = PluginOptions::default();
    reusing.reuse(Reuse::PerInvocation);
    for (language, path) in builds {
        let found = guests::polyglot(path);
        let path = found.as_deref().and_then(|p| p.to_str()).unwrap_or(path);
        let size = std::fs::metadata(path)
            .map_err(|e| anyhow::anyhow!("{path}: {e} (run `cargo xtask guests`)"))?
            .len();
        let started = Instant::now();
        let plugin = Plugin::load(&engine, path, &PluginOptions::default()).await?;
        let compile = started.elapsed();
        let call = || ToolCall::new("greet", json!({"name": "Ann", "times": 2}));
        // One call to warm up, and to check the result.
        let out = plugin.invoke(call()).await?;
        anyhow::ensure!(out.result == Some(json!({"text": "Hello, Ann! Hello, Ann!"})));
        // The same component reusing one instance within an invocation (the
        // compiled code is cached in memory by now: no second compile).
        let reused = Plugin::load(&engine, path, &reusing).await?;
        let turn = || call().with_invocation_id("bench-turn");
        anyhow::ensure!(reused.invoke(turn()).await?.result == out.result);
        // Interleaved, so load drift hits both alike.
        let (mut fresh, mut shared) = (Vec::with_capacity(iters), Vec::with_capacity(iters));
        for _ in 0..iters {
            let started = Instant::now();
            plugin.invoke(call()).await?;
            fresh.push(started.elapsed());
            let started = Instant::now();
            reused.invoke(turn()).await?;
            shared.push(started.elapsed());
        }
        engine.end_invocation("bench-turn");
        let (fresh, shared) = (quantiles(fresh), quantiles(shared));
        println!(
            "| {language} | {:.2} MB | {:.2} s | {:.0} / {:.0} µs | {} | {:.0} / {:.0} µs | {:.1}× |",
            size as f64 / 1e6,
            compile.as_secs_f64(),
            us(fresh.0),
            us(fresh.1),
            out.usage.fuel,
            us(shared.0),
            us(shared.1),
            us(fresh.0) / us(shared.0),
        );
    }
    Ok(())
}

/// Median and p99.
fn quantiles(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    (at(0.5), at(0.99))
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
