//! The conformance tool set in each guest language, measured in one run: size of
//! the component, time to compile it (no code cache), and the full host path of
//! a call (`Plugin::invoke` of `greet`: validation, fresh instance, call, result
//! checks), with the fuel each call burns.
//!
//! Run: `cargo xtask guests && cargo bench -p toolhost --bench languages`
//! (`BENCH_ITERS` sets the number of calls; 200 by default).

use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::{Engine, EngineConfig, Plugin, PluginOptions, ToolCall};

#[path = "support/guests.rs"]
mod guests;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let iters: usize = std::env::var("BENCH_ITERS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    let mut config = EngineConfig::default();
    config.cache_dir(None);
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
    println!("| language | size | compile (no cache) | per call: median / p99 | fuel per call |");
    println!("| --- | --- | --- | --- | --- |");
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
        let mut samples = Vec::with_capacity(iters);
        for _ in 0..iters {
            let started = Instant::now();
            plugin.invoke(call()).await?;
            samples.push(started.elapsed());
        }
        samples.sort();
        let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
        println!(
            "| {language} | {:.2} MB | {:.2} s | {:.0} / {:.0} µs | {} |",
            size as f64 / 1e6,
            compile.as_secs_f64(),
            us(at(0.5)),
            us(at(0.99)),
            out.usage.fuel,
        );
    }
    Ok(())
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
