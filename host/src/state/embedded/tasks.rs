//! The in-process task store: a map of records behind one lock, each with
//! its deadline; expired records are dropped when met, and swept out now and
//! then (and whenever the map is full).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::lock;
use crate::state::StateError;
use crate::state::tasks::{Beat, Change, TaskRecord, TaskStatus, Transition};

/// How often `create` sweeps out expired records at most (besides when full).
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// One task as the map keeps it.
#[derive(Debug)]
struct Slot {
    record: TaskRecord,
    /// Input responses not yet taken by the owner.
    responses: Option<String>,
    /// `ttl_ms` after the last write.
    expires: Instant,
}

impl Slot {
    fn touch(&mut self, now: Instant) {
        self.expires = deadline(now, self.record.ttl_ms);
    }
}

fn deadline(now: Instant, ttl_ms: u64) -> Instant {
    // A TTL past what `Instant` can count means "for as long as this runs".
    now.checked_add(Duration::from_millis(ttl_ms))
        .or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 24 * 3600)))
        .unwrap_or(now)
}

#[derive(Debug)]
struct Map {
    slots: HashMap<String, Slot>,
    last_sweep: Instant,
}

impl Map {
    /// The task's slot, unless it expired (then it is dropped).
    fn live(&mut self, id: &str, now: Instant) -> Option<&mut Slot> {
        if self.slots.get(id).is_some_and(|slot| slot.expires <= now) {
            self.slots.remove(id);
        }
        self.slots.get_mut(id)
    }

    fn sweep(&mut self, now: Instant) {
        self.last_sweep = now;
        self.slots.retain(|_, slot| slot.expires > now);
    }

    /// Makes room for one more record: sweeps, then evicts the terminal
    /// record changed longest ago; false if every record is live and running.
    fn make_room(&mut self, capacity: usize, now: Instant) -> bool {
        if now.saturating_duration_since(self.last_sweep) >= SWEEP_EVERY
            || self.slots.len() >= capacity
        {
            self.sweep(now);
        }
        if self.slots.len() < capacity {
            return true;
        }
        let oldest_final = self
            .slots
            .iter()
            .filter(|(_, slot)| slot.record.status.is_terminal())
            .min_by_key(|(_, slot)| slot.record.updated_at_ms)
            .map(|(id, _)| id.clone());
        match oldest_final {
            Some(id) => {
                self.slots.remove(&id);
                true
            }
            None => false,
        }
    }
}

/// The tasks of one process.
#[derive(Debug)]
pub(crate) struct Tasks {
    map: Mutex<Map>,
    capacity: usize,
}

impl Tasks {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            map: Mutex::new(Map {
                slots: HashMap::new(),
                last_sweep: Instant::now(),
            }),
            capacity: capacity.max(1),
        }
    }

    pub(crate) fn create(&self, record: &TaskRecord) -> Result<(), StateError> {
        let now = Instant::now();
        let mut map = lock(&self.map);
        if map.live(&record.id, now).is_some() {
            return Err(StateError::TaskExists {
                id: record.id.clone(),
            });
        }
        if !map.make_room(self.capacity, now) {
            return Err(StateError::Tasks {
                limit: self.capacity,
            });
        }
        let slot = Slot {
            record: record.clone(),
            responses: None,
            expires: deadline(now, record.ttl_ms),
        };
        map.slots.insert(record.id.clone(), slot);
        Ok(())
    }

    pub(crate) fn get(&self, id: &str) -> Option<TaskRecord> {
        let mut map = lock(&self.map);
        map.live(id, Instant::now()).map(|slot| slot.record.clone())
    }

    pub(crate) fn transition(&self, id: &str, change: &Change<'_>) -> Transition {
        let now = Instant::now();
        let mut map = lock(&self.map);
        let Some(slot) = map.live(id, now) else {
            return Transition::Missing;
        };
        if slot.record.status.is_terminal() {
            return Transition::Final(slot.record.clone());
        }
        let record = &mut slot.record;
        record.status = change.to;
        record.status_message = change.message.map(str::to_owned);
        record.payload = change.payload.map(str::to_owned);
        record.updated_at_ms = change.now_ms;
        slot.responses = None;
        slot.touch(now);
        Transition::Applied(slot.record.clone())
    }

    pub(crate) fn respond(&self, id: &str, responses: &str) -> bool {
        let now = Instant::now();
        let mut map = lock(&self.map);
        match map.live(id, now) {
            Some(slot) if slot.record.status == TaskStatus::InputRequired => {
                slot.responses = Some(responses.to_owned());
                slot.touch(now);
                true
            }
            _ => false,
        }
    }

    pub(crate) fn beat(&self, id: &str, now_ms: u64) -> Option<Beat> {
        let now = Instant::now();
        let mut map = lock(&self.map);
        let slot = map.live(id, now)?;
        let status = slot.record.status;
        if status.is_terminal() {
            return Some(Beat {
                status,
                responses: None,
            });
        }
        slot.record.heartbeat_ms = now_ms;
        slot.touch(now);
        Some(Beat {
            status,
            responses: slot.responses.take(),
        })
    }

    /// How many records the map holds (expired ones not yet dropped included).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        lock(&self.map).slots.len()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

    use super::*;

    fn record(id: &str, ttl: Duration) -> TaskRecord {
        TaskRecord::new(id, "a", "p", "t", ttl, Duration::from_millis(250))
    }

    fn change(to: TaskStatus) -> Change<'static> {
        Change {
            to,
            message: None,
            payload: None,
            now_ms: 1,
        }
    }

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn past_the_cap_terminal_records_make_room_then_create_fails() {
        let tasks = Tasks::new(3);
        for id in ["a", "b", "c"] {
            tasks.create(&record(id, HOUR)).unwrap();
        }
        let err = tasks.create(&record("d", HOUR)).unwrap_err();
        assert!(matches!(err, StateError::Tasks { limit: 3 }), "{err:?}");
        assert!(err.to_string().contains('3'), "{err}");
        // A finished task gives way to a new one; running ones stay.
        tasks.transition("b", &change(TaskStatus::Completed));
        tasks.create(&record("d", HOUR)).unwrap();
        assert!(tasks.get("b").is_none());
        assert!(tasks.get("a").is_some() && tasks.get("c").is_some());
        assert_eq!(tasks.len(), 3);
    }

    #[test]
    fn expired_records_are_swept_to_make_room() {
        let tasks = Tasks::new(2);
        tasks
            .create(&record("short", Duration::from_millis(50)))
            .unwrap();
        tasks.create(&record("long", HOUR)).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        tasks.create(&record("new", HOUR)).unwrap();
        assert_eq!(tasks.len(), 2);
        assert!(tasks.get("long").is_some());
    }

    #[test]
    fn expired_records_are_swept_now_and_then() {
        let tasks = Tasks::new(100);
        for i in 0..10 {
            tasks
                .create(&record(&format!("{i}"), Duration::from_millis(10)))
                .unwrap();
        }
        lock(&tasks.map).last_sweep = Instant::now() - SWEEP_EVERY;
        std::thread::sleep(Duration::from_millis(50));
        tasks.create(&record("new", HOUR)).unwrap();
        assert_eq!(tasks.len(), 1);
    }
}
