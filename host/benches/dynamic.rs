//! A dynamic call's overhead against a typed call of the same function (issue
//! 34), in one run: any component's exported function called as a tool
//! (arguments checked against the schema made from its WIT types, converted
//! to wasmtime `Val`s, `Func::call_async`, the result converted back to JSON
//! and checked against its output schema) against the same function written
//! as a toolhost SDK tool (JSON across the `toolhost:plugin` contract, parsed
//! by serde in the guest, its result checked against the output schema it
//! declares).
//!
//! - dynamic: `shapes__translate` of `tests/plugins/any-component`
//!   (`translate: func(p: point, dx: s8, dy: s8) -> point`, plain wit-bindgen);
//! - typed: `translate` of `tests/plugins/typed-geometry`, the same argument
//!   shape and ranges, the same work and result.
//!
//! Both in one `PluginDir`, through the same public API
//! (`ToolsetExt::invoke`: lookup, validation, fresh sandboxed instance under
//! the same default limits, call, result checks), warm (loaded, optimized
//! code, pool slots used), interleaved call by call so drift in the
//! machine's load hits both alike. Prints each side's median and p99, the
//! ratio dynamic / typed (target ≤ 1.3×), and each side's fuel per call
//! (deterministic: the guest's share of the work).
//!
//! Run: `cargo xtask bench dynamic` (or `cargo bench -p toolhost --bench
//! dynamic`; `BENCH_ITERS` sets the calls per side, 3000 by default).
//!
//! Measured (docs/performance.md, *Any component's function against a typed
//! tool*): typed 15.7–16.3 µs, dynamic 12.8–13.1 µs at the median, b/a
//! 0.80–0.82× in four runs on the loaded 2-core machine: the dynamic call is
//! the faster, since the typed tool's guest parses and writes JSON (10 905
//! fuel per call against 66).

use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::{Context, Engine, EngineConfig, PluginDir, PluginOptions, ToolsetExt};

#[path = "support/stats.rs"]
mod stats;
use stats::{stats, us};

/// The component's function, as a tool.
const DYNAMIC: &str = "shapes__translate";
/// The SDK tool doing the same.
const TYPED: &str = "translate";

/// One call of `tool`: its time and fuel, the result checked.
async fn call(set: &PluginDir, cx: &Context, tool: &str) -> anyhow::Result<(Duration, u64)> {
    let arguments = json!({"p": {"x": 1, "y": 2}, "dx": 3, "dy": -4});
    let started = Instant::now();
    let out = set.invoke(cx, tool, arguments).await?;
    let took = started.elapsed();
    anyhow::ensure!(
        out.result == Some(json!({"x": 4, "y": -2})),
        "{tool} returned {:?}",
        out.result
    );
    Ok((took, out.usage.fuel))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let iters: usize = std::env::var("BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    // Optimized code only: the steady state every plugin reaches once tiered
    // compilation has compiled its optimized code.
    let mut config = EngineConfig::default();
    config
        .cache_dir(None)
        .compilation(toolhost::engine::Compilation::Optimized);
    let engine = Engine::new(&config)?;
    let dir = tempfile::tempdir()?;
    std::fs::copy(
        toolhost_test_plugins::ANY_COMPONENT,
        dir.path().join("geometry.wasm"),
    )?;
    std::fs::copy(
        toolhost_test_plugins::TYPED_GEOMETRY,
        dir.path().join("typed_geometry.wasm"),
    )?;
    let set = PluginDir::open(&engine, dir.path(), PluginOptions::default()).await?;
    let cx = Context::new();
    for tool in [DYNAMIC, TYPED] {
        set.find(&cx, tool)?;
    }

    // Warm up: code loaded, pool slots used, caches filled.
    for _ in 0..iters / 10 + 10 {
        call(&set, &cx, DYNAMIC).await?;
        call(&set, &cx, TYPED).await?;
    }
    let mut dynamic = Vec::with_capacity(iters);
    let mut typed = Vec::with_capacity(iters);
    let (mut dynamic_fuel, mut typed_fuel) = (0, 0);
    for i in 0..iters {
        // Alternate which side goes first, so neither always follows the other.
        let order = if i % 2 == 0 {
            [DYNAMIC, TYPED]
        } else {
            [TYPED, DYNAMIC]
        };
        for tool in order {
            let (took, fuel) = call(&set, &cx, tool).await?;
            if tool == DYNAMIC {
                dynamic.push(took);
                dynamic_fuel = fuel;
            } else {
                typed.push(took);
                typed_fuel = fuel;
            }
        }
    }
    let (dynamic, typed) = (stats(dynamic), stats(typed));
    println!(
        "dynamic: `translate({{p: {{x, y}}, dx, dy}})` through ToolsetExt::invoke, {iters} calls each, interleaved"
    );
    println!(
        "  (a) typed, SDK tool `translate`       median {:>7.1} µs   p99 {:>8.1} µs   fuel {typed_fuel}",
        us(typed.median),
        us(typed.p99),
    );
    println!(
        "  (b) dynamic, `shapes#translate`       median {:>7.1} µs   p99 {:>8.1} µs   fuel {dynamic_fuel}",
        us(dynamic.median),
        us(dynamic.p99),
    );
    println!(
        "  (c) b/a                               median {:>7.2}×     p99 {:>8.2}×     (target ≤ 1.3× at the median)",
        us(dynamic.median) / us(typed.median),
        us(dynamic.p99) / us(typed.p99),
    );
    Ok(())
}
