//! The wasmtime side of the engine: the settings both compilation tiers
//! share, the pool and the epoch ticker.

use std::time::Duration;

use super::EngineConfig;

/// The wasmtime settings both tiers share.
pub(super) fn wasm_config(config: &EngineConfig) -> wasmtime::Config {
    let mut wasm_config = wasmtime::Config::new();
    wasm_config
        .epoch_interruption(true)
        .consume_fuel(true)
        .max_wasm_stack(config.max_wasm_stack)
        .async_stack_size(config.max_wasm_stack + (1 << 20))
        .parallel_compilation(true);
    wasm_config
}

/// The most instances a pool sized from the budget gets.
const MAX_SLOTS: u64 = 1000;
/// The fewest.
const MIN_SLOTS: u64 = 4;
/// The regions a slot keeps up to `keep_resident` of: a linear memory, a
/// table and an async stack (most components have one of each; a second
/// memory or more tables keep more).
const RESIDENT_REGIONS: u64 = 3;

/// How many instances may be alive at once: as configured, or as many as keep
/// at most a quarter of the guest memory `budget` resident between calls, each
/// used slot keeping up to `keep_resident` of its memory, table and stack
/// (memory the budget does not count), within [`MIN_SLOTS`]..=[`MAX_SLOTS`].
pub(super) fn pool_slots(config: &EngineConfig, budget: u64) -> u32 {
    if let Some(n) = config.max_concurrent_instances {
        return n;
    }
    let per_slot = (config.keep_resident as u64).saturating_mul(RESIDENT_REGIONS);
    let slots = (budget / 4).checked_div(per_slot).unwrap_or(MAX_SLOTS);
    // At most MAX_SLOTS, which fits a u32.
    u32::try_from(slots.clamp(MIN_SLOTS, MAX_SLOTS)).unwrap_or(u32::MAX)
}

/// The pooling allocator of optimized code's instances, `n` of them.
pub(super) fn pool(config: &EngineConfig, n: u32) -> wasmtime::PoolingAllocationConfig {
    let mut pool = wasmtime::PoolingAllocationConfig::new();
    pool.total_component_instances(n)
        .total_core_instances(n.saturating_mul(4))
        .total_memories(n.saturating_mul(2))
        .total_tables(n.saturating_mul(4))
        .total_stacks(n)
        .max_memories_per_module(2)
        .max_tables_per_module(4)
        .table_elements(200_000)
        .max_component_instance_size(4 << 20)
        .max_core_instance_size(4 << 20)
        .max_memory_size(4 << 30)
        .linear_memory_keep_resident(config.keep_resident)
        .table_keep_resident(config.keep_resident)
        .async_stack_keep_resident(config.keep_resident)
        // Reset only the pages a call dirtied (Linux 6.7+), not the
        // whole resident region; elsewhere the region is memset.
        .pagemap_scan(wasmtime::Enabled::Auto);
    pool
}

pub(super) fn spawn_epoch_ticker<'a>(
    engines: impl IntoIterator<Item = &'a wasmtime::Engine>,
    tick: Duration,
) -> std::io::Result<()> {
    // The ticker holds only weak handles, so it ends when the engine is dropped.
    let weak: Vec<_> = engines.into_iter().map(wasmtime::Engine::weak).collect();
    std::thread::Builder::new()
        .name("toolhost-epoch".into())
        .spawn(move || {
            loop {
                let mut alive = false;
                for engine in weak.iter().filter_map(wasmtime::EngineWeak::upgrade) {
                    engine.increment_epoch();
                    alive = true;
                }
                if !alive {
                    return;
                }
                std::thread::sleep(tick);
            }
        })
        .map(drop)
}
