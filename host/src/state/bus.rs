//! Messages between the replicas that share a Redis store (Redis pub/sub):
//! what one replica must tell another now, such as a client's answer to a
//! question the other asked. At most once: a message sent while a
//! replica's subscription is being remade (Redis restarted) is lost, so
//! whatever waits for one must be bounded in time.
//!
//! Channels are named under the store's prefix (`PREFIXbus:NAME`). An
//! in-process store has no other replica to talk to: it has no bus.

use tokio::sync::mpsc;

use super::{Repr, StateError, StateStore};

/// The most messages a subscriber has not read yet; past it the
/// subscription waits (Redis keeps the rest in its output buffer).
const BACKLOG: usize = 256;

/// One message from the bus: the channel's name (without the prefix) and
/// the payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BusMessage {
    /// The channel it was published on.
    pub channel: String,
    /// What was published.
    pub payload: String,
}

impl StateStore {
    /// Publishes `payload` on `channel`: how many subscribers (replicas)
    /// received it; `Ok(0)` for an in-process store.
    ///
    /// # Errors
    /// [`StateError::Unavailable`] or [`StateError::Timeout`].
    pub async fn publish(&self, channel: &str, payload: &str) -> Result<u64, StateError> {
        match &self.repr {
            Repr::Embedded(_) => Ok(0),
            Repr::Redis(redis) => redis.publish(channel, payload).await,
        }
    }

    /// How many subscribers (replicas) hear `channel` now; `Ok(0)` for an
    /// in-process store.
    ///
    /// # Errors
    /// [`StateError::Unavailable`] or [`StateError::Timeout`].
    pub async fn listeners(&self, channel: &str) -> Result<u64, StateError> {
        match &self.repr {
            Repr::Embedded(_) => Ok(0),
            Repr::Redis(redis) => redis.listeners(channel).await,
        }
    }

    /// The messages published on `channels` from now on, until the receiver
    /// is dropped; `None` for an in-process store. The subscription is
    /// remade whenever Redis drops it (every 200 ms while it is away;
    /// messages published meanwhile are lost).
    pub fn subscribe(&self, channels: Vec<String>) -> Option<mpsc::Receiver<BusMessage>> {
        match &self.repr {
            Repr::Embedded(_) => None,
            Repr::Redis(redis) => {
                let (sender, receiver) = mpsc::channel(BACKLOG);
                redis.subscribe(channels, sender);
                Some(receiver)
            }
        }
    }
}
