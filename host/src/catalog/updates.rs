//! Resource updates: a plugin says one of its resources changed
//! (`host.resource-updated`), and front ends that serve subscriptions
//! (`resources/subscribe`) hear of it through the engine
//! ([`Engine::resource_updates`](crate::Engine::resource_updates)).
//!
//! Engines that share a Redis state store are replicas of one fleet: a
//! resource a call changed on one replica changed for every replica's
//! subscribers, so each update is also published on the store's bus
//! (`resources`), and each replica passes on what the others publish to its
//! own subscribers (at most once, as the bus delivers).

use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use crate::state::StateStore;

/// That a resource changed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResourceUpdated {
    /// The plugin that said so.
    pub plugin: Arc<str>,
    /// The resource's URI.
    pub uri: String,
}

/// How many updates a slow subscriber may fall behind before it misses some
/// (it is told how many it missed).
const CAPACITY: usize = 1024;

/// The most updates one call may send; more are dropped (and logged once).
pub(crate) const MAX_PER_CALL: u32 = 64;

/// Where every plugin of an engine sends its resource updates.
#[derive(Debug, Clone)]
pub(crate) struct ResourceUpdates {
    local: broadcast::Sender<ResourceUpdated>,
    /// The fleet's bus, when the state store is shared.
    fleet: Option<Arc<Fleet>>,
}

/// An engine's part in a fleet's resource updates.
#[derive(Debug)]
struct Fleet {
    store: StateStore,
    /// This engine's name on the bus (its own messages come back to it).
    me: String,
    /// Whether the updates of other replicas are heard (from the first
    /// subscriber on: the bus needs a runtime, which an engine may be made
    /// outside of).
    hearing: OnceLock<()>,
}

/// The bus channel of resource updates.
const CHANNEL: &str = "resources";

/// An update on the bus.
#[derive(Serialize, Deserialize)]
struct Message {
    from: String,
    plugin: String,
    uri: String,
}

impl ResourceUpdates {
    /// Updates of one engine, shared with the fleet's when `state` is.
    pub(crate) fn new(state: &StateStore) -> Self {
        let fleet = state.is_shared().then(|| {
            Arc::new(Fleet {
                store: state.clone(),
                me: engine_name(),
                hearing: OnceLock::new(),
            })
        });
        Self {
            local: broadcast::channel(CAPACITY).0,
            fleet,
        }
    }

    /// Tells every subscriber (none is fine), the fleet's too.
    pub(crate) fn send(&self, update: ResourceUpdated) {
        if let Some(fleet) = &self.fleet
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let message = Message {
                from: fleet.me.clone(),
                plugin: update.plugin.to_string(),
                uri: update.uri.clone(),
            };
            if let Ok(payload) = serde_json::to_string(&message) {
                let store = fleet.store.clone();
                runtime.spawn(async move {
                    if let Err(error) = store.publish(CHANNEL, &payload).await {
                        tracing::warn!(%error, "could not tell the other replicas of a resource update");
                    }
                });
            }
        }
        let _ = self.local.send(update);
    }

    /// A new subscriber: it hears of updates sent from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<ResourceUpdated> {
        if let Some(fleet) = &self.fleet {
            fleet.hear(&self.local);
        }
        self.local.subscribe()
    }
}

impl Fleet {
    /// Passes the other replicas' updates on to `local`, once started (the
    /// first call that can: in a runtime); ends when the engine is gone.
    fn hear(&self, local: &broadcast::Sender<ResourceUpdated>) {
        if tokio::runtime::Handle::try_current().is_err() || self.hearing.set(()).is_err() {
            return;
        }
        let Some(mut messages) = self.store.subscribe(vec![CHANNEL.to_owned()]) else {
            return;
        };
        let (me, local) = (self.me.clone(), local.downgrade());
        tokio::spawn(async move {
            while let Some(message) = messages.recv().await {
                let Some(local) = local.upgrade() else { return };
                let Ok(update) = serde_json::from_str::<Message>(&message.payload) else {
                    tracing::debug!("an unreadable resource update on the bus");
                    continue;
                };
                if update.from == me {
                    continue;
                }
                let _ = local.send(ResourceUpdated {
                    plugin: update.plugin.into(),
                    uri: update.uri,
                });
            }
        });
    }
}

/// A name for this engine on the bus, unlike any other's: std's hasher keys
/// are random per process and differ per instance.
fn engine_name() -> String {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    hasher.write_u128(now.map_or(0, |since| since.as_nanos()));
    format!("{:016x}", hasher.finish())
}
