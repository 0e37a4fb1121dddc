//! What plugins keep per engine: a linker per compilation tier (everything a
//! plugin may import: WASI, our HTTP and socket hooks, every contract
//! version's host imports), and the idle instances of
//! [`Reuse::PerInvocation`](super::Reuse::PerInvocation) plugins. Made at the
//! first load on an engine and kept in it (the engine knows it only as an
//! [`engine::Runtime`](crate::engine::Runtime), and tells it when an
//! invocation ends).

use wasmtime::component::Linker;

use super::reuse::IdleInstances;
use super::state::PluginState;
use crate::Engine;
use crate::engine::{Runtime, Tier};

/// One engine's linkers and idle instances.
pub(crate) struct PluginRuntime {
    /// The linkers of the optimized and (when the engine tiers) baseline
    /// engines, or why they could not be made.
    linkers: Result<Linkers, String>,
    idle: IdleInstances,
}

struct Linkers {
    optimized: Linker<PluginState>,
    baseline: Option<Linker<PluginState>>,
}

impl PluginRuntime {
    fn new(engine: &Engine) -> Self {
        let linkers = (|| {
            Ok(Linkers {
                optimized: new_linker(engine.wasm())?,
                baseline: engine.baseline().map(new_linker).transpose()?,
            })
        })()
        .map_err(|e: wasmtime::Error| format!("cannot link the plugin imports: {e:#}"));
        Self {
            linkers,
            idle: IdleInstances::new(engine.config().max_idle_instances),
        }
    }

    /// The runtime kept in `engine`, made now if it is not yet.
    pub(crate) fn of(engine: &Engine) -> Option<&Self> {
        engine.runtime(Self::new)
    }

    /// The linker for stores of a tier.
    pub(crate) fn linker_for(&self, tier: Tier) -> Result<&Linker<PluginState>, String> {
        let linkers = self.linkers.as_ref().map_err(Clone::clone)?;
        Ok(match (&linkers.baseline, tier) {
            (Some(baseline), Tier::Baseline) => baseline,
            _ => &linkers.optimized,
        })
    }

    /// The idle instances of `Reuse::PerInvocation` plugins.
    pub(crate) fn idle(&self) -> &IdleInstances {
        &self.idle
    }
}

impl Runtime for PluginRuntime {
    fn end_invocation(&self, invocation_id: &str) {
        self.idle.end(invocation_id);
    }

    fn idle_instances(&self) -> usize {
        self.idle.len()
    }
}

/// A linker with everything a plugin may import, for stores of `wasm`.
fn new_linker(wasm: &wasmtime::Engine) -> wasmtime::Result<Linker<PluginState>> {
    let mut linker = Linker::new(wasm);
    crate::policy::add_to_linker(&mut linker)?;
    super::abi::add_to_linker(&mut linker)?;
    super::guest_spans::add_to_linker(&mut linker)?;
    Ok(linker)
}
