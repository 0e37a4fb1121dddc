//! What one plugin instance may touch: its WASI context, resource table,
//! limiter, and the host interface it imports.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::bindings::v0_1::toolhost::plugin::{host, types};
use crate::engine::limits::Limiter;
use crate::policy::CallTag;
use crate::policy::http::HttpHooks;
use crate::policy::stdio::StdioLog;

/// The longest log line or panic message the host keeps from a guest.
const MAX_MESSAGE_BYTES: usize = 8 << 10;

/// The most bytes of scratch state one invocation may hold (keys plus values).
const MAX_STATE_BYTES: usize = 4 << 20;

/// Scratch state shared by the calls of one invocation (ADK's `temp:` state),
/// keyed by invocation ID.
#[derive(Debug, Default, Clone)]
pub(crate) struct Invocations {
    states: Arc<Mutex<HashMap<String, HashMap<String, String>>>>,
}

impl Invocations {
    fn with<R>(&self, f: impl FnOnce(&mut HashMap<String, HashMap<String, String>>) -> R) -> R {
        // A panic while holding this lock cannot leave the maps half-updated in a
        // way that matters (each operation is a single insert or remove).
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut states)
    }

    pub(crate) fn get(&self, invocation: &str, key: &str) -> Option<String> {
        self.with(|s| s.get(invocation).and_then(|m| m.get(key)).cloned())
    }

    /// Sets a key; refuses if the invocation would hold more than its budget.
    pub(crate) fn set(&self, invocation: &str, key: String, value: String) -> Result<(), usize> {
        self.with(|s| {
            let map = s.entry(invocation.to_owned()).or_default();
            let used: usize = map
                .iter()
                .filter(|(k, _)| **k != key)
                .map(|(k, v)| k.len() + v.len())
                .sum();
            if used + key.len() + value.len() > MAX_STATE_BYTES {
                return Err(MAX_STATE_BYTES);
            }
            map.insert(key, value);
            Ok(())
        })
    }

    pub(crate) fn delete(&self, invocation: &str, key: &str) {
        self.with(|s| {
            if let Some(map) = s.get_mut(invocation) {
                map.remove(key);
            }
        });
    }

    pub(crate) fn end(&self, invocation: &str) {
        self.with(|s| s.remove(invocation));
    }

    pub(crate) fn snapshot(&self, invocation: &str) -> HashMap<String, String> {
        self.with(|s| s.get(invocation).cloned().unwrap_or_default())
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
    pub(crate) wasi: WasiCtx,
    pub(crate) http: WasiHttpCtx,
    /// Checks every outgoing HTTP request against the plugin's grants.
    pub(crate) http_hooks: HttpHooks,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: Limiter,
    pub(crate) panic_message: Option<String>,
    /// When the call must be over (checked by the epoch callback and by a host timer).
    pub(crate) deadline: std::time::Instant,
}

impl WasiView for PluginState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
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

fn truncate(mut message: String) -> String {
    if message.len() > MAX_MESSAGE_BYTES {
        let mut end = MAX_MESSAGE_BYTES;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push('…');
    }
    message
}

/// The state budget was exceeded: the guest traps with this error.
#[derive(Debug, thiserror::Error)]
#[error("invocation state is limited to {limit} bytes")]
pub(crate) struct StateFull {
    pub(crate) limit: usize,
}

impl types::Host for PluginState {}

impl host::Host for PluginState {
    fn log(&mut self, level: host::Level, message: String) -> wasmtime::Result<()> {
        let message = truncate(message);
        let (plugin, tool, call) = (&*self.call.plugin, &self.call.tool, &self.call.call_id);
        match level {
            host::Level::Trace => {
                tracing::trace!(target: "toolhost::plugin", plugin, tool, call, "{message}")
            }
            host::Level::Debug => {
                tracing::debug!(target: "toolhost::plugin", plugin, tool, call, "{message}")
            }
            host::Level::Info => {
                tracing::info!(target: "toolhost::plugin", plugin, tool, call, "{message}")
            }
            host::Level::Warn => {
                tracing::warn!(target: "toolhost::plugin", plugin, tool, call, "{message}")
            }
            host::Level::Error => {
                tracing::error!(target: "toolhost::plugin", plugin, tool, call, "{message}")
            }
        }
        Ok(())
    }

    fn panicked(&mut self, message: String) -> wasmtime::Result<()> {
        self.panic_message = Some(truncate(message));
        Ok(())
    }

    fn state_get(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        Ok(self.invocations.get(&self.invocation_id, &key))
    }

    fn state_set(&mut self, key: String, value: String) -> wasmtime::Result<()> {
        self.invocations
            .set(&self.invocation_id, key, value)
            .map_err(|limit| StateFull { limit }.into())
    }

    fn state_delete(&mut self, key: String) -> wasmtime::Result<()> {
        self.invocations.delete(&self.invocation_id, &key);
        Ok(())
    }
}
