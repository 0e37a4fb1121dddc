//! Reload latency: from a plugin file written into a watched directory to its
//! tool being callable, through the real watcher (debounce, settle, load, swap).
//!
//! Run: `cargo bench -p toolhost --bench reload` (set `BENCH_ITERS`, default 10).
//! Reported for a cold engine cache (every version compiled) and a warm one
//! (compiled code already cached on disk), with `reload_now` (no watcher, no
//! debounce) in the same run as the baseline.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::{Context, Engine, EngineConfig, PluginDir, PluginOptions, Toolset, ToolsetExt};

#[path = "support/stats.rs"]
mod stats;
use stats::{median, ms};

/// Writes `from` into `dir` as `name` atomically (temp file + rename).
fn install(from: &str, dir: &Path, name: &str) -> std::io::Result<()> {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::copy(from, &tmp)?;
    std::fs::rename(&tmp, dir.join(name))
}

async fn callable(set: &PluginDir, tool: &str) -> bool {
    let cx = Context::new();
    set.tools(&cx).iter().any(|t| t.spec().name == tool)
        && set.invoke(&cx, tool, json!({"a": 1, "b": 2})).await.is_ok()
}

async fn measure(
    engine: &Engine,
    iters: usize,
    watch: bool,
) -> Result<Duration, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let set = PluginDir::open(engine, dir.path(), PluginOptions::default()).await?;
    if watch {
        set.watch()?;
    }
    let mut samples = Vec::with_capacity(iters);
    for i in 0..iters {
        // Alternate between a plugin with `add` and one without, under one name.
        let start = Instant::now();
        install(toolhost_test_plugins::ECHO, dir.path(), "p.wasm")?;
        if !watch {
            set.reload_now().await?;
        }
        while !callable(&set, "add").await {
            if start.elapsed() > Duration::from_secs(120) {
                return Err(format!("iteration {i}: the tool never became callable").into());
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        samples.push(start.elapsed());
        install(toolhost_test_plugins::CALC, dir.path(), "p.wasm")?;
        if !watch {
            set.reload_now().await?;
        }
        while set
            .tools(&Context::new())
            .iter()
            .any(|t| t.spec().name == "add")
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    Ok(median(samples))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let iters: usize = std::env::var("BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let cache = tempfile::tempdir()?;
    let mut cold = EngineConfig::default();
    cold.cache_dir(None);
    let cold = Engine::new(&cold)?;
    let mut warm = EngineConfig::default();
    warm.cache_dir(Some(cache.path().to_owned()));
    let warm = Engine::new(&warm)?;
    // Fill the warm cache.
    measure(&warm, 1, false).await?;

    println!("reload latency: file written → tool callable (median of {iters})");
    for (label, engine) in [("cold cache", &cold), ("warm cache", &warm)] {
        let direct = measure(engine, iters, false).await?;
        let watched = measure(engine, iters, true).await?;
        println!(
            "  {label}: reload_now {:>7.1} ms   watcher {:>7.1} ms   (watcher/reload_now {:.2})",
            ms(direct),
            ms(watched),
            ms(watched) / ms(direct)
        );
    }
    Ok(())
}
