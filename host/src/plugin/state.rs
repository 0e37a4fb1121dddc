//! What one plugin instance may touch: its WASI context, resource table,
//! limiter, and the host interface it imports (each contract version's
//! `Host` traits, in `abi/`, call the methods here).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::Engine;
use crate::engine::limits::{Limiter, Limits};
use crate::error::CallError;
use crate::policy::http::HttpHooks;
use crate::policy::stdio::StdioLog;
use crate::policy::{CallState, CallTag, Grants};

/// The longest log message the host keeps from a guest.
const MAX_MESSAGE_BYTES: usize = 8 << 10;

/// The most bytes of scratch state one invocation may hold (keys, values and
/// [`ENTRY_OVERHEAD`] per key).
const MAX_STATE_BYTES: usize = 4 << 20;

/// The most keys one invocation may hold.
const MAX_STATE_KEYS: usize = 4096;

/// What one key costs beyond its bytes (the map's own bookkeeping), so a
/// flood of tiny keys reaches the byte cap too.
const ENTRY_OVERHEAD: usize = 64;

/// The most bytes of scratch state all invocations together may hold.
const MAX_TOTAL_STATE_BYTES: usize = 256 << 20;

/// The scratch state of one invocation, with its running size.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    map: HashMap<String, String>,
    bytes: usize,
    /// The invocation ended while a call still held this: nothing more is kept.
    ended: bool,
}

/// One invocation's scratch state; a store keeps the handle it found, so its
/// calls never wait on other invocations' locks.
pub(crate) type ScratchHandle = Arc<Mutex<Scratch>>;

fn lock(scratch: &ScratchHandle) -> std::sync::MutexGuard<'_, Scratch> {
    // Each operation updates the map and its running size together, before
    // anything can panic: a poisoned lock holds consistent data.
    scratch.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Scratch state shared by the calls of one invocation (ADK's `temp:` state),
/// keyed by invocation ID, with an engine-wide total.
#[derive(Debug, Default, Clone)]
pub(crate) struct Invocations {
    states: Arc<Mutex<HashMap<String, ScratchHandle>>>,
    total: Arc<AtomicUsize>,
}

impl Invocations {
    fn with<R>(&self, f: impl FnOnce(&mut HashMap<String, ScratchHandle>) -> R) -> R {
        // A panic while holding this lock cannot leave the map half-updated in a
        // way that matters (each operation is a single insert, get or remove).
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut states)
    }

    /// The invocation's state, if it has any.
    pub(crate) fn find(&self, invocation: &str) -> Option<ScratchHandle> {
        self.with(|s| s.get(invocation).cloned())
    }

    /// The invocation's state, created empty if it has none.
    pub(crate) fn find_or_create(&self, invocation: &str) -> ScratchHandle {
        self.with(|s| Arc::clone(s.entry(invocation.to_owned()).or_default()))
    }

    /// Sets a key in `scratch`; refuses past the invocation's or the engine's budget.
    pub(crate) fn set(
        &self,
        scratch: &ScratchHandle,
        key: String,
        value: String,
    ) -> wasmtime::Result<()> {
        let mut scratch = lock(scratch);
        if scratch.ended {
            return Ok(());
        }
        let size = key.len() + value.len() + ENTRY_OVERHEAD;
        let old = scratch
            .map
            .get(&key)
            .map(|v| key.len() + v.len() + ENTRY_OVERHEAD);
        if old.is_none() && scratch.map.len() >= MAX_STATE_KEYS {
            return Err(StateFull::Keys {
                limit: MAX_STATE_KEYS,
            }
            .into());
        }
        let bytes = scratch.bytes - old.unwrap_or(0) + size;
        if bytes > MAX_STATE_BYTES {
            return Err(StateFull::Bytes {
                limit: MAX_STATE_BYTES,
            }
            .into());
        }
        let more = size.saturating_sub(old.unwrap_or(0));
        let fits = self
            .total
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |total| {
                total
                    .checked_add(more)
                    .filter(|&sum| sum <= MAX_TOTAL_STATE_BYTES)
            })
            .is_ok();
        if !fits {
            return Err(crate::error::Busy::State {
                limit: MAX_TOTAL_STATE_BYTES as u64,
            }
            .into());
        }
        let less = old.unwrap_or(0).saturating_sub(size);
        self.total.fetch_sub(less, Ordering::AcqRel);
        scratch.bytes = bytes;
        scratch.map.insert(key, value);
        Ok(())
    }

    pub(crate) fn delete(&self, scratch: &ScratchHandle, key: &str) {
        let mut scratch = lock(scratch);
        if let Some(value) = scratch.map.remove(key) {
            let size = key.len() + value.len() + ENTRY_OVERHEAD;
            scratch.bytes -= size;
            self.total.fetch_sub(size, Ordering::AcqRel);
        }
    }

    pub(crate) fn end(&self, invocation: &str) {
        if let Some(scratch) = self.with(|s| s.remove(invocation)) {
            let mut scratch = lock(&scratch);
            scratch.ended = true;
            scratch.map = HashMap::new();
            self.total.fetch_sub(scratch.bytes, Ordering::AcqRel);
            scratch.bytes = 0;
        }
    }

    pub(crate) fn snapshot(&self, invocation: &str) -> HashMap<String, String> {
        self.find(invocation)
            .map(|scratch| lock(&scratch).map.clone())
            .unwrap_or_default()
    }

    /// The bytes all invocations' state holds (keys, values and overhead).
    pub(crate) fn total_bytes(&self) -> usize {
        self.total.load(Ordering::Acquire)
    }
}

/// Store data of one call.
pub(crate) struct PluginState {
    /// Plugin, tool and call ID, for the log (shared with stdio and HTTP hooks).
    pub(crate) call: Arc<CallTag>,
    /// Where the guest's stdout and stderr go (rebound per call on a reused instance).
    pub(crate) stdio: StdioLog,
    pub(crate) invocation_id: String,
    pub(crate) invocations: Invocations,
    /// The invocation's scratch state, once a call of this store touched it.
    pub(crate) scratch: Option<ScratchHandle>,
    pub(crate) wasi: WasiCtx,
    /// What the plugin is granted (each capability's linker additions ask it).
    pub(crate) grants: Arc<Grants>,
    pub(crate) http: WasiHttpCtx,
    /// Checks every outgoing HTTP request against the plugin's grants.
    pub(crate) http_hooks: HttpHooks,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: Limiter,
    pub(crate) panic_message: Option<String>,
    /// When the call must be over (checked by the epoch callback and by a host timer).
    pub(crate) deadline: std::time::Instant,
}

impl PluginState {
    /// The store data of one call of `call.tool`: exactly `grants` (each
    /// capability adds its part of the WASI context and its hooks), the
    /// memory limiter of `limits`, and a table of at most `max_resources`.
    /// The deadline is set when the call is armed.
    ///
    /// # Errors
    /// [`CallError::Host`] if a granted directory cannot be opened.
    pub(crate) fn new(
        engine: &Engine,
        grants: &Arc<Grants>,
        limits: &Limits,
        call: Arc<CallTag>,
        invocation_id: &str,
        max_resources: usize,
    ) -> Result<Self, CallError> {
        let mut table = ResourceTable::new();
        table.set_max_capacity(max_resources);
        let stdio = StdioLog::new(Arc::clone(&call), limits.max_stdio_bytes);
        // Exactly the grants: no inherited environment, arguments or network.
        let wasi = grants
            .wasi_ctx(&stdio, &call)
            .map_err(|reason| CallError::Host {
                tool: call.tool.clone(),
                reason,
            })?;
        Ok(Self {
            call: Arc::clone(&call),
            stdio,
            invocation_id: invocation_id.to_owned(),
            invocations: engine.invocations().clone(),
            scratch: None,
            wasi,
            grants: Arc::clone(grants),
            http: WasiHttpCtx::new(),
            http_hooks: HttpHooks::new(call, Arc::clone(grants)),
            table,
            limiter: Limiter::new(limits, Arc::clone(engine.memory_budget())),
            panic_message: None,
            deadline: std::time::Instant::now(),
        })
    }
}

impl WasiHttpView for PluginState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.http_hooks,
        }
    }
}

impl CallState for PluginState {
    fn grants(&self) -> &Grants {
        &self.grants
    }

    fn call_tag(&self) -> &Arc<CallTag> {
        &self.call
    }
}

impl WasiView for PluginState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// The invocation's state budget was exceeded: the guest traps with this error.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StateFull {
    #[error("invocation state is limited to {limit} bytes")]
    Bytes { limit: usize },
    #[error("invocation state is limited to {limit} keys")]
    Keys { limit: usize },
}

impl PluginState {
    /// The invocation's scratch state: the one this store found before, or
    /// the engine's (created if `create`).
    fn scratch(&mut self, create: bool) -> Option<ScratchHandle> {
        if self.scratch.is_none() {
            self.scratch = if create {
                Some(self.invocations.find_or_create(&self.invocation_id))
            } else {
                self.invocations.find(&self.invocation_id)
            };
        }
        self.scratch.clone()
    }
}

/// The host interface every contract version imports, in host types.
impl PluginState {
    /// Writes a guest's log line, cut to [`MAX_MESSAGE_BYTES`].
    pub(crate) fn host_log(&mut self, level: tracing::Level, message: &str) {
        let mut end = message.len().min(MAX_MESSAGE_BYTES);
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        self.stdio.log(level, &message[..end], end < message.len());
    }

    /// Keeps why the guest is about to trap.
    pub(crate) fn host_panicked(&mut self, message: String) {
        self.panic_message = Some(crate::error::cut(
            message,
            crate::error::MAX_ERROR_MESSAGE_BYTES,
        ));
    }

    pub(crate) fn host_state_get(&mut self, key: &str) -> Option<String> {
        self.scratch(false)
            .and_then(|scratch| lock(&scratch).map.get(key).cloned())
    }

    pub(crate) fn host_state_set(&mut self, key: String, value: String) -> wasmtime::Result<()> {
        let scratch = self.scratch(true).expect("created on demand");
        self.invocations.set(&scratch, key, value)
    }

    pub(crate) fn host_state_delete(&mut self, key: &str) {
        if let Some(scratch) = self.scratch(false) {
            self.invocations.delete(&scratch, key);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

    use super::*;

    #[test]
    fn running_totals_follow_overwrites_deletes_and_the_end() {
        let invocations = Invocations::default();
        let scratch = invocations.find_or_create("inv");
        for _ in 0..10_000 {
            invocations
                .set(&scratch, "key".into(), "v".repeat(1000))
                .unwrap();
        }
        assert_eq!(invocations.total_bytes(), 3 + 1000 + ENTRY_OVERHEAD);
        invocations
            .set(&scratch, "key".into(), "short".into())
            .unwrap();
        assert_eq!(invocations.total_bytes(), 3 + 5 + ENTRY_OVERHEAD);
        invocations
            .set(&scratch, "other".into(), "x".into())
            .unwrap();
        invocations.delete(&scratch, "key");
        assert_eq!(invocations.total_bytes(), 5 + 1 + ENTRY_OVERHEAD);
        assert_eq!(invocations.snapshot("inv").len(), 1);
        invocations.end("inv");
        assert_eq!(invocations.total_bytes(), 0);
        // A call still holding the ended invocation's state keeps nothing.
        invocations
            .set(&scratch, "late".into(), "x".into())
            .unwrap();
        assert_eq!(invocations.total_bytes(), 0);
        assert!(invocations.snapshot("inv").is_empty());
    }

    #[test]
    fn bytes_and_keys_are_capped_per_invocation() {
        let invocations = Invocations::default();
        let scratch = invocations.find_or_create("inv");
        let big = "v".repeat(MAX_STATE_BYTES / 2);
        invocations.set(&scratch, "a".into(), big.clone()).unwrap();
        let err = invocations.set(&scratch, "b".into(), big).unwrap_err();
        assert!(err.to_string().contains("bytes"), "{err}");
        let other = invocations.find_or_create("other");
        for i in 0..MAX_STATE_KEYS {
            invocations
                .set(&other, format!("{i}"), String::new())
                .unwrap();
        }
        let err = invocations
            .set(&other, "one more".into(), String::new())
            .unwrap_err();
        assert!(err.to_string().contains("keys"), "{err}");
        // Overwriting a key that exists is still fine at the cap.
        invocations.set(&other, "0".into(), "x".into()).unwrap();
    }
}
