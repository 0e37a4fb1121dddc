//! The process-wide engine: wasmtime configuration (a wasmtime engine per
//! compilation tier), the epoch ticker, the loader threads, the guest memory
//! budget and the on-disk cache of compiled code. What runs on it keeps its
//! own per-engine parts (the plugin module: its linkers and idle instances)
//! in the engine's `Runtime` slot; the engine knows them only by that trait.

mod cache;
mod config;
pub(crate) mod limits;
mod loader;
mod wasm;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::state::{StateError, StateStore};
pub(crate) use cache::{CodeCache, CodeEntry, hash_compatibility};
use limits::MemoryBudget;
use loader::Loader;
use wasm::{pool, pool_slots, spawn_epoch_ticker, wasm_config};

pub use config::{Compilation, EngineConfig, LoadLimits, Tier, default_cache_dir};
pub use limits::Limits;
pub(crate) use loader::LoaderFailed;

/// Guest linear memory across all calls of an engine, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct GuestMemory {
    /// Held now (running calls and idle instances).
    pub in_use: u64,
    /// The most held at once since the engine started.
    pub peak: u64,
    /// The budget ([`EngineConfig::max_guest_memory`]).
    pub budget: u64,
}

/// The engine could not be created.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// wasmtime rejected the configuration.
    #[error("cannot configure the WebAssembly engine: {0}")]
    Config(String),
    /// The state store's settings are invalid ([`EngineConfig::state`]).
    #[error(transparent)]
    State(StateError),
    /// The compiled-code cache could not be set up.
    #[error("cannot use cache directory {dir}: {reason}")]
    Cache {
        /// The directory.
        dir: PathBuf,
        /// Why.
        reason: String,
    },
}

/// One per process: compiles plugins and runs their calls.
///
/// Cheap to clone (a handle over shared state).
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    /// Optimized code (Cranelift).
    wasm: wasmtime::Engine,
    /// Baseline code (Winch), unless compilation is
    /// [`Compilation::Optimized`] or Winch is not available here.
    baseline: Option<Baseline>,
    config: EngineConfig,
    /// Compiled code kept across restarts, with a cache directory.
    code_cache: Option<CodeCache>,
    state: StateStore,
    /// Where plugins say their resources changed.
    updates: crate::catalog::ResourceUpdates,
    /// The per-engine parts of what runs on it, made at first use.
    runtime: std::sync::OnceLock<Box<dyn Runtime>>,
    /// How many plugins load their code in the background at once.
    preload: Arc<tokio::sync::Semaphore>,
    /// How many plugins compile optimized code in the background at once: one.
    optimize: Arc<tokio::sync::Semaphore>,
    /// How many loads compile code a plugin waits for now: the background
    /// optimization waits for none, so it never slows a cold start.
    loading: tokio::sync::watch::Sender<usize>,
    /// Where plugins are hashed and compiled.
    loader: Loader,
    /// How many instances may be alive at once (per tier).
    slots: u32,
    /// Guest linear memory, all stores together.
    memory: Arc<MemoryBudget>,
}

/// The baseline tier: its engine, and the slots of its instances (allocated
/// on demand, so counted here).
struct Baseline {
    wasm: wasmtime::Engine,
    slots: Arc<tokio::sync::Semaphore>,
}

/// The per-engine parts of what runs on an engine (the plugin module's
/// linkers and idle instances), kept in the engine and made at first use
/// ([`Engine::runtime`]). The engine tells it when an invocation ends.
pub(crate) trait Runtime: std::any::Any + Send + Sync {
    /// An invocation ended: drop what was kept for it.
    fn end_invocation(&self, invocation_id: &str);
    /// How many instances wait idle for their invocation's next call.
    fn idle_instances(&self) -> usize;
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// Creates the engine and starts its epoch ticker thread.
    ///
    /// # Errors
    /// Fails if wasmtime rejects the configuration, the cache directory
    /// cannot be created, or the state store's settings are invalid (a
    /// Redis store connects at first use, not here).
    pub fn new(config: &EngineConfig) -> Result<Self, EngineError> {
        let state = StateStore::new(&config.state).map_err(EngineError::State)?;
        let code_cache = match &config.cache_dir {
            Some(dir) => Some(CodeCache::open(dir)?),
            None => None,
        };
        let budget = config
            .max_guest_memory
            .unwrap_or_else(limits::default_memory_budget);
        let slots = pool_slots(config, budget);
        let mut optimized = wasm_config(config);
        if config.pooling {
            optimized.allocation_strategy(pool(config, slots));
        }
        let wasm =
            wasmtime::Engine::new(&optimized).map_err(|e| EngineError::Config(e.to_string()))?;
        let baseline = match config.compilation {
            Compilation::Optimized => None,
            Compilation::Tiered | Compilation::Baseline => {
                let mut winch = wasm_config(config);
                winch.strategy(wasmtime::Strategy::Winch);
                match wasmtime::Engine::new(&winch) {
                    Ok(wasm) => Some(Baseline {
                        wasm,
                        slots: Arc::new(tokio::sync::Semaphore::new(slots as usize)),
                    }),
                    // Not on this platform: every plugin gets optimized code.
                    Err(e) => {
                        tracing::info!(
                            error = %e,
                            "the baseline compiler is not available here; plugins load optimized code only"
                        );
                        None
                    }
                }
            }
        };
        let ticked = [Some(&wasm), baseline.as_ref().map(|b| &b.wasm)];
        spawn_epoch_ticker(ticked.into_iter().flatten(), config.epoch_tick)
            .map_err(|e| EngineError::Config(format!("cannot start the epoch ticker: {e}")))?;
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        // One loader thread more than the background preloads take, so a call
        // that needs a plugin's code now does not queue behind them, and one
        // more for the background optimization.
        let loader = Loader::new(cores + 2)
            .map_err(|e| EngineError::Config(format!("cannot start the loader threads: {e}")))?;
        Ok(Self {
            inner: Arc::new(Inner {
                wasm,
                baseline,
                config: config.clone(),
                code_cache,
                updates: crate::catalog::ResourceUpdates::new(&state),
                state,
                runtime: std::sync::OnceLock::new(),
                // One load per core.
                preload: Arc::new(tokio::sync::Semaphore::new(cores)),
                optimize: Arc::new(tokio::sync::Semaphore::new(1)),
                loading: tokio::sync::watch::Sender::new(0),
                loader,
                slots,
                memory: Arc::new(MemoryBudget::new(budget, config.memory_wait)),
            }),
        })
    }

    /// The baseline compiler's engine, when plugins load baseline code first
    /// or only.
    pub(crate) fn baseline(&self) -> Option<&wasmtime::Engine> {
        self.inner.baseline.as_ref().map(|b| &b.wasm)
    }

    /// The cache of compiled code, with a cache directory.
    pub(crate) fn code_cache(&self) -> Option<&CodeCache> {
        self.inner.code_cache.as_ref()
    }

    /// The tier of code compiled by `wasm` (this engine's or its baseline's).
    pub(crate) fn tier_of(&self, wasm: &wasmtime::Engine) -> Tier {
        match &self.inner.baseline {
            Some(b) if wasmtime::Engine::same(wasm, &b.wasm) => Tier::Baseline,
            _ => Tier::Optimized,
        }
    }

    /// The runtime of type `R` kept in this engine, made by `make` at first
    /// use; `None` if the engine keeps a runtime of another type.
    pub(crate) fn runtime<R: Runtime>(&self, make: impl FnOnce(&Engine) -> R) -> Option<&R> {
        let runtime = self.inner.runtime.get_or_init(|| Box::new(make(self)));
        let runtime: &dyn std::any::Any = runtime.as_ref();
        runtime.downcast_ref()
    }

    /// A slot for one instance of baseline code, held as long as its store
    /// lives; `None` when all [`EngineConfig::max_concurrent_instances`] are taken.
    pub(crate) fn baseline_slot(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let slots = &self.inner.baseline.as_ref()?.slots;
        Arc::clone(slots).try_acquire_owned().ok()
    }

    /// The turn to compile optimized code in the background (one plugin at a time).
    pub(crate) fn optimize_gate(&self) -> Arc<tokio::sync::Semaphore> {
        Arc::clone(&self.inner.optimize)
    }

    /// Counts a load that compiles code a plugin waits for, until dropped.
    pub(crate) fn loading(&self) -> Loading {
        self.inner.loading.send_modify(|n| *n += 1);
        Loading(self.clone())
    }

    /// Waits until no load compiles code a plugin waits for.
    pub(crate) async fn no_loads(&self) {
        let mut loading = self.inner.loading.subscribe();
        // The sender lives as long as `self`.
        let _ = loading.wait_for(|n| *n == 0).await;
    }

    pub(crate) fn wasm(&self) -> &wasmtime::Engine {
        &self.inner.wasm
    }

    /// The underlying wasmtime engine, for benchmarks that measure the raw floor
    /// on the very same configuration. Not a stable API.
    #[doc(hidden)]
    pub fn __wasmtime(&self) -> &wasmtime::Engine {
        &self.inner.wasm
    }

    /// The configuration this engine was built with.
    pub fn config(&self) -> &EngineConfig {
        &self.inner.config
    }

    pub(crate) fn max_wasm_stack(&self) -> usize {
        self.inner.config.max_wasm_stack
    }

    /// The store of invocation state (and, for layers given it, of used
    /// approvals): in process, or Redis ([`EngineConfig::state`]). Its
    /// [`ping`](StateStore::ping) tells whether it is reachable.
    pub fn state(&self) -> &StateStore {
        &self.inner.state
    }

    /// Resource updates the engine's plugins send from now on
    /// (`host.resource-updated`): what an MCP server's
    /// `resources/subscribe` listens to.
    pub fn resource_updates(
        &self,
    ) -> tokio::sync::broadcast::Receiver<crate::catalog::ResourceUpdated> {
        self.inner.updates.subscribe()
    }

    /// Where this engine's plugins send resource updates.
    pub(crate) fn updates(&self) -> &crate::catalog::ResourceUpdates {
        &self.inner.updates
    }

    /// Ends an invocation: drops the scratch state its calls shared, and the
    /// instances kept for it (`Reuse::PerInvocation`).
    /// With Redis the state is deleted on a background task (it expires after
    /// the TTL if that fails); await [`StateStore::end_invocation`] on
    /// [`Engine::state`] to know it is gone.
    pub fn end_invocation(&self, invocation_id: &str) {
        self.inner.state.end_invocation_soon(invocation_id);
        self.leave_invocation(invocation_id);
    }

    /// This process keeps nothing more for an invocation (its idle
    /// instances) while its state lives on: another replica serves it.
    pub(crate) fn leave_invocation(&self, invocation_id: &str) {
        if let Some(runtime) = self.inner.runtime.get() {
            runtime.end_invocation(invocation_id);
        }
    }

    /// Ends a call's own invocation (its ID is the call's): as
    /// [`end_invocation`](Self::end_invocation), but when the call is known
    /// to have set no state (`wrote_state` false in its [`Usage`](crate::tool::Usage)),
    /// without a Redis round trip.
    pub(crate) fn end_call_invocation(&self, invocation_id: &str, wrote_state: bool) {
        if wrote_state {
            self.inner.state.end_invocation_soon(invocation_id);
        } else {
            self.inner.state.end_unwritten_invocation(invocation_id);
        }
        if let Some(runtime) = self.inner.runtime.get() {
            runtime.end_invocation(invocation_id);
        }
    }

    /// Runs blocking load work (hashing, compiling) on the engine's loader threads.
    pub(crate) async fn load_blocking<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, LoaderFailed> {
        self.inner.loader.run(job).await
    }

    /// Reads a plugin file on a loader thread (see [`loader`]).
    pub(crate) async fn read_file(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        let path = path.to_owned();
        self.load_blocking(move || std::fs::read(path))
            .await
            .unwrap_or_else(|LoaderFailed| {
                Err(std::io::Error::other("the engine is shutting down"))
            })
    }

    pub(crate) fn preload_gate(&self) -> Arc<tokio::sync::Semaphore> {
        Arc::clone(&self.inner.preload)
    }

    pub(crate) fn memory_budget(&self) -> &Arc<MemoryBudget> {
        &self.inner.memory
    }

    /// The guest linear memory all calls hold now, the most they held at
    /// once, and the budget ([`EngineConfig::max_guest_memory`]).
    pub fn guest_memory(&self) -> GuestMemory {
        let memory = &self.inner.memory;
        GuestMemory {
            in_use: memory.used(),
            peak: memory.peak(),
            budget: memory.limit(),
        }
    }

    /// How many component instances may be alive at once: the configured
    /// [`EngineConfig::max_concurrent_instances`], or the size derived from
    /// the guest memory budget.
    pub fn max_concurrent_instances(&self) -> u32 {
        self.inner.slots
    }

    /// How many instances wait idle for their invocation's next call.
    pub fn idle_instances(&self) -> usize {
        self.inner
            .runtime
            .get()
            .map_or(0, |runtime| runtime.idle_instances())
    }

    /// The bytes of scratch state all invocations hold now in this process
    /// (keys, values and a fixed overhead per key), for metrics and tests; 0
    /// when the state is in Redis.
    pub fn invocation_state_bytes(&self) -> usize {
        self.inner.state.embedded_bytes()
    }

    /// The scratch state an invocation holds now (for inspection and tests).
    ///
    /// # Errors
    /// A Redis store that cannot be reached or does not answer in time.
    pub async fn invocation_state(
        &self,
        invocation_id: &str,
    ) -> Result<std::collections::HashMap<String, String>, StateError> {
        self.inner.state.snapshot(invocation_id).await
    }
}

/// A load counted by [`Engine::loading`].
pub(crate) struct Loading(Engine);

impl Drop for Loading {
    fn drop(&mut self) {
        self.0
            .inner
            .loading
            .send_modify(|n| *n = n.saturating_sub(1));
    }
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Engine>();
};
