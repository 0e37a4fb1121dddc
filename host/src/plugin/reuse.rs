//! Instances kept between the calls of one invocation, for plugins loaded with
//! [`Reuse::PerInvocation`](super::Reuse::PerInvocation): a bounded, engine-wide
//! set of idle instances, each tied to one plugin version and one invocation ID.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use wasmtime::Store;
use wasmtime::component::Instance;

use super::state::PluginState;

/// A unique ID per loaded plugin version (never reused, unlike an address).
pub(crate) fn next_plugin_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// An instance between two calls of its invocation.
pub(crate) struct Idle {
    pub(crate) store: Store<PluginState>,
    pub(crate) instance: Instance,
    /// The code it is an instance of.
    pub(crate) code: std::sync::Arc<super::code::Linked>,
}

struct Entry {
    plugin: u64,
    invocation: String,
    idle: Idle,
}

/// The idle instances of an engine, least recently used first. Each holds a
/// pool slot, so there are at most `capacity`.
#[derive(Clone)]
pub(crate) struct IdleInstances {
    entries: Arc<Mutex<VecDeque<Entry>>>,
    capacity: usize,
}

impl IdleInstances {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            entries: Arc::default(),
            capacity,
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut VecDeque<Entry>) -> R) -> R {
        // Every operation below leaves the queue whole, so a poisoned lock is usable.
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut entries)
    }

    /// Takes the idle instance of this plugin version and invocation, if any.
    pub(crate) fn take(&self, plugin: u64, invocation: &str) -> Option<Idle> {
        self.with(|entries| {
            let index = entries
                .iter()
                .rposition(|e| e.plugin == plugin && e.invocation == invocation)?;
            entries.remove(index).map(|entry| entry.idle)
        })
    }

    /// Keeps an instance for the invocation's next call; the least recently
    /// used instance goes when the set is full.
    pub(crate) fn put(&self, plugin: u64, invocation: &str, idle: Idle) {
        if self.capacity == 0 {
            return;
        }
        // Stores are dropped outside the lock: dropping one frees its slot.
        let evicted = self.with(|entries| {
            entries.push_back(Entry {
                plugin,
                invocation: invocation.to_owned(),
                idle,
            });
            let excess = entries.len().saturating_sub(self.capacity);
            entries.drain(..excess).collect::<Vec<_>>()
        });
        drop(evicted);
    }

    /// Drops every instance of the invocation (it has ended).
    pub(crate) fn end(&self, invocation: &str) {
        let ended = self.with(|entries| {
            let (ended, kept): (VecDeque<Entry>, VecDeque<Entry>) = std::mem::take(entries)
                .into_iter()
                .partition(|e| e.invocation == invocation);
            *entries = kept;
            ended
        });
        drop(ended);
    }

    /// How many instances are idle.
    pub(crate) fn len(&self) -> usize {
        self.with(|entries| entries.len())
    }
}
