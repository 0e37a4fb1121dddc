//! The conformance tool set in each guest language, measured in one run: size of
//! the component, time to compile it (no code cache), and the full host path of
//! a call (`Plugin::invoke` of `greet`: validation, fresh instance, call, result
//! checks), with the fuel each call burns; then the same calls on an instance
//! reused within one invocation (`Reuse::PerInvocation`), and the speed-up.
//! Then the memory of a call in flight: [`HELD`] instances each held for its
//! invocation's next call, as a running call holds its instance (less the
//! call's stack): the resident memory they add to the process, the guest
//! linear memory they count against the engine's budget (which sizes the
//! pool), and what the pool keeps resident of their slots once they are gone.
//!
//! Run: `cargo xtask guests && cargo bench -p toolhost --bench languages`
//! (`BENCH_ITERS` sets the number of calls; 200 by default).

use std::time::Instant;

use serde_json::json;
use toolhost::plugin::Reuse;
use toolhost::tool::ToolCall;
use toolhost::{Engine, EngineConfig, Plugin, PluginOptions};

#[path = "support/guests.rs"]
mod guests;
#[path = "support/stats.rs"]
mod stats;
use stats::{rss, stats, us};

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
        .compilation(toolhost::engine::Compilation::Optimized)
        .max_idle_instances(HELD);
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
    let mut held = Vec::new();
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
        let (fresh, shared) = (stats(fresh), stats(shared));
        println!(
            "| {language} | {:.2} MB | {:.2} s | {:.0} / {:.0} µs | {} | {:.0} / {:.0} µs | {:.1}× |",
            size as f64 / 1e6,
            compile.as_secs_f64(),
            us(fresh.median),
            us(fresh.p99),
            out.usage.fuel,
            us(shared.median),
            us(shared.p99),
            us(fresh.median) / us(shared.median),
        );
        held.push((language, hold(&engine, &reused).await?));
    }
    let budget = engine.guest_memory().budget;
    println!();
    println!(
        "memory of a call in flight ({HELD} instances held at once; guest memory budget {} MiB, pool of {} slots):",
        budget >> 20,
        engine.max_concurrent_instances()
    );
    println!(
        "| language | resident per call | guest linear memory per call (budget) | calls the budget admits | kept resident per pool slot after |"
    );
    println!("| --- | --- | --- | --- | --- |");
    for (language, m) in held {
        println!(
            "| {language} | {:.2} MiB | {:.2} MiB | {} | {:.2} MiB |",
            mib(m.resident),
            mib(m.linear),
            (budget as f64 / m.linear.max(1.0)).floor(),
            mib(m.kept),
        );
    }
    Ok(())
}

/// How many instances [`hold`] keeps at once.
const HELD: usize = 32;

/// Memory per instance held, in bytes.
struct Held {
    /// Added to the process's resident set.
    resident: f64,
    /// Guest linear memory, as the engine's budget counts it.
    linear: f64,
    /// Still resident once the instances are dropped (the pool's slots keep
    /// up to `keep_resident` of each memory, table and stack for their next use).
    kept: f64,
}

/// This process's resident set, in bytes.
fn resident() -> anyhow::Result<f64> {
    Ok(rss(std::process::id())? as f64)
}

/// Holds [`HELD`] instances of `plugin` at once (one per invocation, each
/// kept for its invocation's next call) and reads what they take.
async fn hold(engine: &Engine, plugin: &Plugin) -> anyhow::Result<Held> {
    let (before, linear) = (resident()?, engine.guest_memory().in_use);
    for i in 0..HELD {
        let call = ToolCall::new("greet", json!({"name": "Ann", "times": 2}))
            .with_invocation_id(format!("held-{i}"));
        plugin.invoke(call).await?;
    }
    anyhow::ensure!(engine.idle_instances() == HELD, "instances not held");
    let per = |now: f64, before: f64| (now - before).max(0.0) / HELD as f64;
    let (rss_held, linear_held) = (resident()?, engine.guest_memory().in_use);
    for i in 0..HELD {
        engine.end_invocation(&format!("held-{i}"));
    }
    anyhow::ensure!(engine.idle_instances() == 0, "instances not dropped");
    Ok(Held {
        resident: per(rss_held, before),
        linear: per(linear_held as f64, linear as f64),
        kept: per(resident()?, before),
    })
}

fn mib(bytes: f64) -> f64 {
    bytes / f64::from(1 << 20)
}
