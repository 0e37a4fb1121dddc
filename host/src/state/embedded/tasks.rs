//! The in-process task store: a map of records behind one lock, each with
//! its deadline; expired records are dropped when met, and swept out now and
//! then (and whenever the map is full).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

// tokio's clock (std's outside a runtime): a test that pauses its runtime's
// time moves it, so TTLs are tested without waiting on the wall clock.
use tokio::time::Instant;

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

    /// The bytes this slot counts against the store's budget.
    fn bytes(&self) -> usize {
        weight(self.record.payload.as_deref(), self.responses.as_deref())
    }
}

/// What a record with `payload` and `responses` counts against the byte
/// budget: both, plus a fixed overhead for the record itself.
fn weight(payload: Option<&str>, responses: Option<&str>) -> usize {
    RECORD_OVERHEAD + payload.map_or(0, str::len) + responses.map_or(0, str::len)
}

/// What one record costs beyond its payload and responses (ids, names,
/// the map's bookkeeping), so a flood of small tasks reaches the budget too.
const RECORD_OVERHEAD: usize = 512;

fn deadline(now: Instant, ttl_ms: u64) -> Instant {
    super::deadline(now, Duration::from_millis(ttl_ms))
}

#[derive(Debug)]
struct Map {
    slots: HashMap<String, Slot>,
    last_sweep: Instant,
    /// The sum of [`Slot::bytes`] over `slots`.
    bytes: usize,
}

impl Map {
    /// The task's slot, unless it expired (then it is dropped).
    fn live(&mut self, id: &str, now: Instant) -> Option<&mut Slot> {
        if self.slots.get(id).is_some_and(|slot| slot.expires <= now) {
            self.remove(id);
        }
        self.slots.get_mut(id)
    }

    fn remove(&mut self, id: &str) {
        if let Some(slot) = self.slots.remove(id) {
            self.bytes -= slot.bytes();
        }
    }

    fn sweep(&mut self, now: Instant) {
        self.last_sweep = now;
        let mut freed = 0;
        self.slots.retain(|_, slot| {
            let keep = slot.expires > now;
            if !keep {
                freed += slot.bytes();
            }
            keep
        });
        self.bytes -= freed;
    }

    /// The terminal record changed longest ago, other than `except`.
    fn oldest_final(&self, except: &str) -> Option<String> {
        self.slots
            .iter()
            .filter(|(id, slot)| slot.record.status.is_terminal() && id.as_str() != except)
            .min_by_key(|(_, slot)| slot.record.updated_at_ms)
            .map(|(id, _)| id.clone())
    }

    /// Makes room for `grow` more bytes (a record `id` about to grow, or a
    /// new one): sweeps, then evicts terminal records oldest first; false
    /// if the budget is still short.
    fn make_bytes(&mut self, id: &str, grow: usize, budget: usize, now: Instant) -> bool {
        if self.bytes + grow <= budget {
            return true;
        }
        self.sweep(now);
        while self.bytes + grow > budget {
            match self.oldest_final(id) {
                Some(oldest) => self.remove(&oldest),
                None => return false,
            }
        }
        true
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
        match self.oldest_final("") {
            Some(id) => {
                self.remove(&id);
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
    /// The most bytes all records may hold together ([`Slot::bytes`]).
    budget: usize,
}

impl Tasks {
    pub(crate) fn new(capacity: usize, budget: usize) -> Self {
        Self {
            map: Mutex::new(Map {
                slots: HashMap::new(),
                last_sweep: Instant::now(),
                bytes: 0,
            }),
            capacity: capacity.max(1),
            budget,
        }
    }

    fn over_budget(&self) -> StateError {
        StateError::TaskBytes { limit: self.budget }
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
        let bytes = weight(record.payload.as_deref(), None);
        if !map.make_bytes(&record.id, bytes, self.budget, now) {
            return Err(self.over_budget());
        }
        let slot = Slot {
            record: record.clone(),
            responses: None,
            expires: deadline(now, record.ttl_ms),
        };
        map.bytes += bytes;
        map.slots.insert(record.id.clone(), slot);
        Ok(())
    }

    pub(crate) fn get(&self, id: &str) -> Option<TaskRecord> {
        let mut map = lock(&self.map);
        map.live(id, Instant::now()).map(|slot| slot.record.clone())
    }

    pub(crate) fn transition(
        &self,
        id: &str,
        change: &Change<'_>,
    ) -> Result<Transition, StateError> {
        let now = Instant::now();
        let mut map = lock(&self.map);
        let Some(slot) = map.live(id, now) else {
            return Ok(Transition::Missing);
        };
        if slot.record.status.is_terminal() {
            return Ok(Transition::Final(slot.record.clone()));
        }
        let (old, new) = (slot.bytes(), weight(change.payload, None));
        if new > old && !map.make_bytes(id, new - old, self.budget, now) {
            return Err(self.over_budget());
        }
        map.bytes = map.bytes - old + new;
        let Some(slot) = map.slots.get_mut(id) else {
            return Ok(Transition::Missing);
        };
        let record = &mut slot.record;
        record.status = change.to;
        record.status_message = change.message.map(str::to_owned);
        record.payload = change.payload.map(str::to_owned);
        record.updated_at_ms = change.now_ms;
        slot.responses = None;
        slot.touch(now);
        Ok(Transition::Applied(slot.record.clone()))
    }

    pub(crate) fn respond(&self, id: &str, responses: &str) -> Result<bool, StateError> {
        let now = Instant::now();
        let mut map = lock(&self.map);
        let (old, new) = match map.live(id, now) {
            Some(slot) if slot.record.status == TaskStatus::InputRequired => (
                slot.bytes(),
                weight(slot.record.payload.as_deref(), Some(responses)),
            ),
            _ => return Ok(false),
        };
        if new > old && !map.make_bytes(id, new - old, self.budget, now) {
            return Err(self.over_budget());
        }
        map.bytes = map.bytes - old + new;
        let Some(slot) = map.slots.get_mut(id) else {
            return Ok(false);
        };
        slot.responses = Some(responses.to_owned());
        slot.touch(now);
        Ok(true)
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
        let responses = slot.responses.take();
        map.bytes -= responses.as_deref().map_or(0, str::len);
        Some(Beat { status, responses })
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
        let tasks = Tasks::new(3, usize::MAX);
        for id in ["a", "b", "c"] {
            tasks.create(&record(id, HOUR)).unwrap();
        }
        let err = tasks.create(&record("d", HOUR)).unwrap_err();
        assert!(matches!(err, StateError::Tasks { limit: 3 }), "{err:?}");
        assert!(err.to_string().contains('3'), "{err}");
        // A finished task gives way to a new one; running ones stay.
        tasks
            .transition("b", &change(TaskStatus::Completed))
            .unwrap();
        tasks.create(&record("d", HOUR)).unwrap();
        assert!(tasks.get("b").is_none());
        assert!(tasks.get("a").is_some() && tasks.get("c").is_some());
        assert_eq!(tasks.len(), 3);
    }

    #[test]
    fn payload_bytes_are_budgeted_and_finished_tasks_give_way() {
        let budget = 3 * RECORD_OVERHEAD + 1_000;
        let tasks = Tasks::new(100, budget);
        let with = |to, payload: &str| {
            let payload = payload.to_owned();
            move |tasks: &Tasks, id: &str| {
                let change = Change {
                    to,
                    message: None,
                    payload: Some(payload.as_str()),
                    now_ms: 1,
                };
                tasks.transition(id, &change)
            }
        };
        tasks.create(&record("a", HOUR)).unwrap();
        tasks.create(&record("b", HOUR)).unwrap();
        with(TaskStatus::Completed, &"r".repeat(800))(&tasks, "a").unwrap();
        // A new task with a payload fits only by dropping the finished `a`.
        let mut c = record("c", HOUR);
        c.payload = Some("p".repeat(900));
        tasks.create(&c).unwrap();
        assert!(tasks.get("a").is_none(), "the finished task gave way");
        // Nothing finished is left to drop: a running task cannot grow past it.
        let err = with(TaskStatus::InputRequired, &"q".repeat(700))(&tasks, "b").unwrap_err();
        assert!(
            matches!(err, StateError::TaskBytes { limit } if limit == budget),
            "{err:?}"
        );
        assert!(err.to_string().contains("try again"), "{err}");
        assert_eq!(
            tasks.get("b").unwrap().status,
            TaskStatus::Working,
            "unchanged"
        );
        with(TaskStatus::InputRequired, &"q".repeat(100))(&tasks, "b").unwrap();
        // Input responses count too, and leave the budget when taken.
        let err = tasks.respond("b", &"x".repeat(600)).unwrap_err();
        assert!(matches!(err, StateError::TaskBytes { .. }), "{err:?}");
        assert!(tasks.respond("b", "{}").unwrap());
        assert_eq!(tasks.beat("b", 2).unwrap().responses.as_deref(), Some("{}"));
        assert_eq!(lock(&tasks.map).bytes, 2 * RECORD_OVERHEAD + 900 + 100);
    }

    #[tokio::test(start_paused = true)]
    async fn expired_records_are_swept_to_make_room() {
        let tasks = Tasks::new(2, usize::MAX);
        tasks
            .create(&record("short", Duration::from_millis(50)))
            .unwrap();
        tasks.create(&record("long", HOUR)).unwrap();
        tokio::time::advance(Duration::from_millis(100)).await;
        tasks.create(&record("new", HOUR)).unwrap();
        assert_eq!(tasks.len(), 2);
        assert!(tasks.get("long").is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn expired_records_are_swept_now_and_then() {
        let tasks = Tasks::new(100, usize::MAX);
        for i in 0..10 {
            tasks
                .create(&record(&format!("{i}"), Duration::from_millis(10)))
                .unwrap();
        }
        lock(&tasks.map).last_sweep = Instant::now() - SWEEP_EVERY;
        tokio::time::advance(Duration::from_millis(50)).await;
        tasks.create(&record("new", HOUR)).unwrap();
        assert_eq!(tasks.len(), 1);
    }
}
