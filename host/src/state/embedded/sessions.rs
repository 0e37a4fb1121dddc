//! The in-process session store: a map of records by digest behind one
//! lock, each with its deadline; expired records are dropped when met, and
//! swept out when the map is full.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

// tokio's clock (std's outside a runtime): a test that pauses its runtime's
// time moves it, so idle timeouts are tested without waiting.
use tokio::time::Instant;

use super::{deadline, lock};
use crate::state::StateError;
use crate::state::sessions::{Ended, SessionRecord, Set, Setting};

#[derive(Debug)]
struct Slot {
    record: SessionRecord,
    expires: Instant,
}

/// The sessions of one process, at most `limit` live ones.
#[derive(Debug)]
pub(crate) struct Sessions {
    slots: Mutex<HashMap<String, Slot>>,
    limit: usize,
}

impl Sessions {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            slots: Mutex::default(),
            limit,
        }
    }

    pub(crate) fn create(
        &self,
        key: String,
        record: &SessionRecord,
        idle: Duration,
    ) -> Result<bool, StateError> {
        let now = Instant::now();
        let mut slots = lock(&self.slots);
        if slots.get(&key).is_some_and(|slot| slot.expires > now) {
            return Ok(false);
        }
        if slots.len() >= self.limit {
            slots.retain(|_, slot| slot.expires > now);
            if slots.len() >= self.limit {
                return Err(StateError::Sessions { limit: self.limit });
            }
        }
        let slot = Slot {
            record: record.clone(),
            expires: deadline(now, idle),
        };
        slots.insert(key, slot);
        Ok(true)
    }

    pub(crate) fn get(&self, key: &str) -> Option<SessionRecord> {
        let now = Instant::now();
        let mut slots = lock(&self.slots);
        match slots.get(key) {
            Some(slot) if slot.expires > now => Some(slot.record.clone()),
            Some(_) => {
                slots.remove(key);
                None
            }
            None => None,
        }
    }

    pub(crate) fn touch(&self, key: &str, idle: Duration) -> bool {
        let now = Instant::now();
        let mut slots = lock(&self.slots);
        match slots.get_mut(key) {
            Some(slot) if slot.expires > now => {
                slot.expires = deadline(now, idle);
                true
            }
            Some(_) => {
                slots.remove(key);
                false
            }
            None => false,
        }
    }

    pub(crate) fn set(&self, key: &str, setting: Setting<'_>) -> Set {
        let now = Instant::now();
        let mut slots = lock(&self.slots);
        let Some(slot) = slots.get_mut(key).filter(|slot| slot.expires > now) else {
            slots.remove(key);
            return Set::Missing;
        };
        let record = &mut slot.record;
        match setting {
            Setting::LogLevel(level) => record.log_level = Some(level.to_owned()),
            Setting::Subscribe { uri, limit } => {
                if let Err(at) = record
                    .subscriptions
                    .binary_search_by(|s| s.as_str().cmp(uri))
                {
                    if record.subscriptions.len() >= limit {
                        return Set::Full;
                    }
                    record.subscriptions.insert(at, uri.to_owned());
                }
            }
            Setting::Unsubscribe(uri) => record.subscriptions.retain(|s| s != uri),
        }
        Set::Set
    }

    pub(crate) fn end(&self, key: &str, owner: &str) -> Ended {
        let now = Instant::now();
        let mut slots = lock(&self.slots);
        match slots.get(key) {
            Some(slot) if slot.expires <= now => {
                slots.remove(key);
                Ended::Missing
            }
            Some(slot) if slot.record.owner != owner => Ended::NotOwner,
            Some(_) => {
                slots.remove(key);
                Ended::Ended
            }
            None => Ended::Missing,
        }
    }
}
