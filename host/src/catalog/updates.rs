//! Resource updates: a plugin says one of its resources changed
//! (`host.resource-updated`), and front ends that serve subscriptions
//! (`resources/subscribe`) hear of it through the engine
//! ([`Engine::resource_updates`](crate::Engine::resource_updates)).

use std::sync::Arc;

use tokio::sync::broadcast;

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
pub(crate) struct ResourceUpdates(broadcast::Sender<ResourceUpdated>);

impl Default for ResourceUpdates {
    fn default() -> Self {
        Self(broadcast::channel(CAPACITY).0)
    }
}

impl ResourceUpdates {
    /// Tells every subscriber (none is fine).
    pub(crate) fn send(&self, update: ResourceUpdated) {
        let _ = self.0.send(update);
    }

    /// A new subscriber: it hears of updates sent from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<ResourceUpdated> {
        self.0.subscribe()
    }
}
