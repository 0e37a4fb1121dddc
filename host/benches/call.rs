//! Per-call cost of the full host path against the raw wasmtime floor, in one run.
//!
//! - floor: a fresh `Store` (deny-all WASI context, the same per-call limits:
//!   fuel, an epoch deadline, and wasmtime's own `StoreLimits` for memory,
//!   tables and instances) + instantiate from the `InstancePre` + a call of
//!   the trivial tool's `invoke` export, through wasmtime's own bindings, on
//!   the very same engine;
//! - host: `Plugin::invoke` of the same tool (argument coercion and validation,
//!   fresh sandboxed instance, call, result checking and wrapping).
//!
//! Run: `cargo bench -p toolhost --bench call` (set `BENCH_ITERS` to change the count).

use std::time::Instant;

use serde_json::json;
use toolhost::tool::ToolCall;
use toolhost::{Engine, EngineConfig, Plugin, PluginOptions};
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Store, StoreLimits, StoreLimitsBuilder, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

mod raw {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "toolhost:plugin/plugin",
        imports: { default: trappable },
        exports: { default: async },
    });
}

struct State {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: StoreLimits,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl raw::toolhost::plugin::types::Host for State {}

impl raw::toolhost::plugin::host::Host for State {
    fn log(&mut self, _: raw::toolhost::plugin::host::Level, _: String) -> wasmtime::Result<()> {
        Ok(())
    }
    fn panicked(&mut self, _: String) -> wasmtime::Result<()> {
        Ok(())
    }
    fn state_get(&mut self, _: String) -> wasmtime::Result<Option<String>> {
        Ok(None)
    }
    fn state_set(&mut self, _: String, _: String) -> wasmtime::Result<()> {
        Ok(())
    }
    fn state_delete(&mut self, _: String) -> wasmtime::Result<()> {
        Ok(())
    }
    fn resource_updated(&mut self, _: String) -> wasmtime::Result<()> {
        Ok(())
    }
    fn ask(
        &mut self,
        _: raw::toolhost::plugin::types::Question,
    ) -> wasmtime::Result<
        Result<raw::toolhost::plugin::types::Answer, raw::toolhost::plugin::types::AskError>,
    > {
        Ok(Err(raw::toolhost::plugin::types::AskError::Unavailable(
            String::new(),
        )))
    }
}

#[path = "support/stats.rs"]
mod stats;
use stats::{Stats, stats, us};

/// Floor and full-path samples for an engine keeping `keep_resident` bytes
/// of each pool slot resident between calls.
async fn measure(keep_resident: usize, iters: usize) -> wasmtime::Result<(Stats, Stats)> {
    let mut config = EngineConfig::default();
    config.cache_dir(None).keep_resident(keep_resident);
    let engine = Engine::new(&config)?;
    let path = toolhost_test_plugins::ECHO;
    let plugin = Plugin::load(&engine, path, &PluginOptions::default()).await?;
    // The optimized code, as the floor below runs (tiered compilation loads
    // baseline code first).
    let tier = plugin.settled().await?;
    if tier != toolhost::engine::Tier::Optimized {
        return Err(wasmtime::format_err!("the plugin settled on {tier:?} code"));
    }
    let limits = plugin.limits().clone();

    // The floor: wasmtime alone, on the same engine and component.
    let wasm = engine.__wasmtime();
    let component = Component::from_file(wasm, path)?;
    let mut linker: Linker<State> = Linker::new(wasm);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    raw::Plugin::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)?;
    let pre = raw::PluginPre::new(linker.instantiate_pre(&component)?)?;
    let raw_call = raw::exports::toolhost::plugin::tools::Call {
        call_id: "bench".into(),
        invocation_id: "bench".into(),
        tool: "add".into(),
        arguments: r#"{"a":1,"b":2}"#.into(),
        caller: None,
    };
    let floor_once = async || -> wasmtime::Result<()> {
        let state = State {
            wasi: WasiCtxBuilder::new().build(),
            table: ResourceTable::new(),
            limits: StoreLimitsBuilder::new()
                .memory_size(usize::try_from(limits.memory_bytes)?)
                .table_elements(usize::try_from(limits.table_elements)?)
                .instances(limits.instances as usize)
                .memories(limits.instances as usize)
                .tables(limits.instances as usize)
                .build(),
        };
        let mut store = Store::new(wasm, state);
        store.limiter(|s| &mut s.limits);
        store.set_fuel(limits.fuel)?;
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|_| Ok(UpdateDeadline::Yield(1)));
        let instance = pre.instantiate_async(&mut store).await?;
        let out = instance
            .toolhost_plugin_tools()
            .call_invoke(&mut store, &raw_call)
            .await?;
        if out.is_err() {
            return Err(wasmtime::Error::msg("floor call failed"));
        }
        Ok(())
    };
    let host_once = async || -> wasmtime::Result<()> {
        let out = plugin
            .invoke(ToolCall::new("add", json!({"a": 1, "b": 2})))
            .await?;
        if out.result != Some(json!({"result": 3})) {
            return Err(wasmtime::Error::msg("wrong result"));
        }
        Ok(())
    };

    for _ in 0..200 {
        floor_once().await?;
        host_once().await?;
    }
    // Interleave the two so drift in machine load hits both alike.
    let (mut floor, mut host) = (Vec::with_capacity(iters), Vec::with_capacity(iters));
    for _ in 0..iters {
        let start = Instant::now();
        floor_once().await?;
        floor.push(start.elapsed());
        let start = Instant::now();
        host_once().await?;
        host.push(start.elapsed());
    }
    Ok((stats(floor), stats(host)))
}

fn report(label: &str, floor: &Stats, host: &Stats) {
    println!("{label}");
    println!(
        "  (a) floor: raw wasmtime instantiate + call   median {:>8.1} µs   p99 {:>8.1} µs",
        us(floor.median),
        us(floor.p99)
    );
    println!(
        "  (b) toolhost full path (Plugin::invoke)      median {:>8.1} µs   p99 {:>8.1} µs",
        us(host.median),
        us(host.p99)
    );
    println!(
        "  (c) ratio b/a                                median {:>8.2}      p99 {:>8.2}",
        us(host.median) / us(floor.median),
        us(host.p99) / us(floor.p99)
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> wasmtime::Result<()> {
    let iters: usize = std::env::var("BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    println!("per call, trivial Rust tool (`add`), {iters} iterations each, interleaved");
    let (floor_cold, host_cold) = measure(0, iters).await?;
    report(
        "pool slots returned to the kernel after each call (keep_resident 0):",
        &floor_cold,
        &host_cold,
    );
    let (floor, host) = measure(1 << 20, iters).await?;
    report(
        "pool slots kept resident, 1 MiB (the default):",
        &floor,
        &host,
    );
    println!(
        "  (d) full path, resident / returned           median {:>8.2}      p99 {:>8.2}",
        us(host.median) / us(host_cold.median),
        us(host.p99) / us(host_cold.p99)
    );
    Ok(())
}
