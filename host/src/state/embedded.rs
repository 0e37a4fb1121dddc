//! The in-process store: invocation state in a map of per-invocation entries
//! (each behind its own lock, with a running size and an engine-wide total),
//! expired lazily; used nonces as a bounded set of keyed hashes; tasks in
//! [`tasks`]; sessions in [`sessions`].

mod sessions;
mod tasks;

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::BuildHasher as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

// tokio's clock (std's outside a runtime): a test that pauses its runtime's
// time moves it, so TTLs are tested without waiting on the wall clock.
use tokio::time::Instant;

use super::{
    ENTRY_OVERHEAD, MAX_EMBEDDED_BYTES, MAX_INVOCATION_BYTES, MAX_INVOCATION_KEYS, StateError,
};

/// One invocation's scratch state, with its running size.
#[derive(Debug)]
pub(crate) struct Entry {
    map: HashMap<String, String>,
    bytes: usize,
    /// The last write (expiry counts from it).
    touched: Instant,
    gone: Option<Gone>,
}

/// Why an entry left the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gone {
    /// The invocation ended while a call still held this: nothing more is kept.
    Ended,
    /// Unwritten for the TTL: a call still holding it looks the invocation up again.
    Expired,
}

/// An entry as a call's [`Scratch`](super::Scratch) keeps it.
pub(crate) type EntryHandle = Arc<Mutex<Entry>>;

/// `after` from `now`; a span past what `Instant` counts means "for as long
/// as this runs". On tokio's clock, as the task and session maps keep time.
fn deadline(now: tokio::time::Instant, after: Duration) -> tokio::time::Instant {
    now.checked_add(after)
        .or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 24 * 3600)))
        .unwrap_or(now)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Each operation updates an entry's map and its running size together,
    // before anything can panic: a poisoned lock holds consistent data.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[derive(Debug)]
struct Invocations {
    map: HashMap<String, EntryHandle>,
    last_sweep: Instant,
}

/// Invocation state and used nonces of one process.
#[derive(Debug)]
pub(crate) struct Embedded {
    invocations: Mutex<Invocations>,
    /// The bytes all entries hold.
    total: AtomicUsize,
    ttl: Duration,
    nonces: Mutex<Nonces>,
    pub(crate) tasks: tasks::Tasks,
    pub(crate) sessions: sessions::Sessions,
    /// This store's epoch: random, made with it (see [`StateStore::epoch`](super::StateStore::epoch)).
    pub(crate) epoch: String,
}

impl Embedded {
    pub(crate) fn new(ttl: Duration, nonces: usize) -> Self {
        Self {
            invocations: Mutex::new(Invocations {
                map: HashMap::new(),
                last_sweep: Instant::now(),
            }),
            total: AtomicUsize::new(0),
            ttl,
            nonces: Mutex::new(Nonces::new(nonces)),
            tasks: tasks::Tasks::new(
                super::tasks::MAX_EMBEDDED_TASKS,
                super::tasks::MAX_EMBEDDED_TASK_BYTES,
            ),
            sessions: sessions::Sessions::new(super::sessions::MAX_EMBEDDED_SESSIONS),
            epoch: super::new_epoch(),
        }
    }

    fn stale(&self, entry: &Entry, now: Instant) -> bool {
        entry.gone.is_none() && now.saturating_duration_since(entry.touched) >= self.ttl
    }

    /// Empties an entry that is leaving the store and gives back its bytes.
    fn release(&self, entry: &mut Entry, why: Gone) {
        entry.gone = Some(why);
        entry.map = HashMap::new();
        self.total.fetch_sub(entry.bytes, Ordering::AcqRel);
        entry.bytes = 0;
    }

    /// The invocation's entry (created if `create`), expiring it first if
    /// it went unwritten for the TTL; new entries sweep out the expired ones
    /// now and then, so abandoned invocations do not pile up.
    fn lookup(&self, invocation: &str, create: bool) -> Option<EntryHandle> {
        let now = Instant::now();
        let mut invocations = lock(&self.invocations);
        if let Some(entry) = invocations.map.get(invocation) {
            let mut held = lock(entry);
            if !self.stale(&held, now) {
                drop(held);
                return Some(Arc::clone(entry));
            }
            self.release(&mut held, Gone::Expired);
            drop(held);
            invocations.map.remove(invocation);
        }
        if !create {
            return None;
        }
        let every = (self.ttl / 4).clamp(Duration::from_millis(10), Duration::from_secs(60));
        if now.saturating_duration_since(invocations.last_sweep) >= every {
            invocations.last_sweep = now;
            invocations.map.retain(|_, entry| {
                let mut held = lock(entry);
                let keep = !self.stale(&held, now);
                if !keep {
                    self.release(&mut held, Gone::Expired);
                }
                keep
            });
        }
        let entry = Arc::new(Mutex::new(Entry {
            map: HashMap::new(),
            bytes: 0,
            touched: now,
            gone: None,
        }));
        invocations
            .map
            .insert(invocation.to_owned(), Arc::clone(&entry));
        Some(entry)
    }

    /// The entry a call found before, unless it expired since; else the
    /// store's (created if `create`).
    fn entry(
        &self,
        invocation: &str,
        found: &mut Option<EntryHandle>,
        create: bool,
    ) -> Option<EntryHandle> {
        if let Some(entry) = found {
            let held = lock(entry);
            if held.gone != Some(Gone::Expired) && !self.stale(&held, Instant::now()) {
                drop(held);
                return Some(Arc::clone(entry));
            }
        }
        *found = self.lookup(invocation, create);
        found.clone()
    }

    pub(crate) fn get(
        &self,
        invocation: &str,
        found: &mut Option<EntryHandle>,
        key: &str,
    ) -> Option<String> {
        let entry = self.entry(invocation, found, false)?;
        let entry = lock(&entry);
        entry.map.get(key).cloned()
    }

    /// Sets a key; refuses past the invocation's or the store's budget.
    pub(crate) fn set(
        &self,
        invocation: &str,
        found: &mut Option<EntryHandle>,
        key: &str,
        value: &str,
    ) -> Result<(), StateError> {
        // A sweep may expire the entry between finding and locking it; then
        // look once more (a fresh entry cannot be stale).
        for _ in 0..2 {
            let entry = self
                .entry(invocation, found, true)
                .expect("created on demand");
            let mut entry = lock(&entry);
            match entry.gone {
                Some(Gone::Ended) => return Ok(()),
                Some(Gone::Expired) => continue,
                None => return self.set_in(&mut entry, key, value),
            }
        }
        Ok(())
    }

    fn set_in(&self, entry: &mut Entry, key: &str, value: &str) -> Result<(), StateError> {
        let size = key.len() + value.len() + ENTRY_OVERHEAD;
        let old = entry
            .map
            .get(key)
            .map(|v| key.len() + v.len() + ENTRY_OVERHEAD);
        if old.is_none() && entry.map.len() >= MAX_INVOCATION_KEYS {
            return Err(StateError::Keys {
                limit: MAX_INVOCATION_KEYS,
            });
        }
        let bytes = entry.bytes - old.unwrap_or(0) + size;
        if bytes > MAX_INVOCATION_BYTES {
            return Err(StateError::Bytes {
                limit: MAX_INVOCATION_BYTES,
            });
        }
        let more = size.saturating_sub(old.unwrap_or(0));
        let fits = self
            .total
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |total| {
                total
                    .checked_add(more)
                    .filter(|&sum| sum <= MAX_EMBEDDED_BYTES)
            })
            .is_ok();
        if !fits {
            return Err(StateError::Busy {
                limit: MAX_EMBEDDED_BYTES as u64,
            });
        }
        let less = old.unwrap_or(0).saturating_sub(size);
        self.total.fetch_sub(less, Ordering::AcqRel);
        entry.bytes = bytes;
        entry.touched = Instant::now();
        entry.map.insert(key.to_owned(), value.to_owned());
        Ok(())
    }

    pub(crate) fn delete(&self, invocation: &str, found: &mut Option<EntryHandle>, key: &str) {
        let Some(entry) = self.entry(invocation, found, false) else {
            return;
        };
        let mut entry = lock(&entry);
        if let Some(value) = entry.map.remove(key) {
            let size = key.len() + value.len() + ENTRY_OVERHEAD;
            entry.bytes -= size;
            entry.touched = Instant::now();
            self.total.fetch_sub(size, Ordering::AcqRel);
        }
    }

    pub(crate) fn end(&self, invocation: &str) {
        let removed = lock(&self.invocations).map.remove(invocation);
        if let Some(entry) = removed {
            self.release(&mut lock(&entry), Gone::Ended);
        }
    }

    pub(crate) fn snapshot(&self, invocation: &str) -> HashMap<String, String> {
        self.lookup(invocation, false)
            .map(|entry| lock(&entry).map.clone())
            .unwrap_or_default()
    }

    /// The bytes all invocations' state holds (keys, values and overhead).
    pub(crate) fn total_bytes(&self) -> usize {
        self.total.load(Ordering::Acquire)
    }

    pub(crate) fn claim_once(&self, nonce: &str) -> bool {
        lock(&self.nonces).insert(nonce)
    }

    pub(crate) fn is_claimed(&self, nonce: &str) -> bool {
        lock(&self.nonces).contains(nonce)
    }
}

/// The most recent used nonces, as keyed 64-bit hashes (8 bytes each). A
/// hash collision can only refuse a nonce as used, never accept one twice.
#[derive(Debug)]
struct Nonces {
    hasher: RandomState,
    ids: HashSet<u64>,
    /// Oldest first, for eviction.
    order: VecDeque<u64>,
    capacity: usize,
}

impl Nonces {
    fn new(capacity: usize) -> Self {
        Self {
            hasher: RandomState::new(),
            ids: HashSet::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    fn contains(&self, nonce: &str) -> bool {
        self.ids.contains(&self.hasher.hash_one(nonce))
    }

    /// Records the nonce; false if it was already recorded.
    fn insert(&mut self, nonce: &str) -> bool {
        let key = self.hasher.hash_one(nonce);
        if !self.ids.insert(key) {
            return false;
        }
        self.order.push_back(key);
        while self.order.len() > self.capacity {
            if let Some(oldest) = self.order.pop_front() {
                self.ids.remove(&oldest);
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

    use super::*;

    fn store() -> Embedded {
        Embedded::new(Duration::from_secs(3600), 4)
    }

    #[test]
    fn running_totals_follow_overwrites_deletes_and_the_end() {
        let store = store();
        let mut found = None;
        for _ in 0..10_000 {
            store
                .set("inv", &mut found, "key", &"v".repeat(1000))
                .unwrap();
        }
        assert_eq!(store.total_bytes(), 3 + 1000 + ENTRY_OVERHEAD);
        store.set("inv", &mut found, "key", "short").unwrap();
        assert_eq!(store.total_bytes(), 3 + 5 + ENTRY_OVERHEAD);
        store.set("inv", &mut found, "other", "x").unwrap();
        store.delete("inv", &mut found, "key");
        assert_eq!(store.total_bytes(), 5 + 1 + ENTRY_OVERHEAD);
        assert_eq!(store.snapshot("inv").len(), 1);
        store.end("inv");
        assert_eq!(store.total_bytes(), 0);
        // A call still holding the ended invocation's state keeps nothing.
        store.set("inv", &mut found, "late", "x").unwrap();
        assert_eq!(store.get("inv", &mut found, "other"), None);
        assert_eq!(store.total_bytes(), 0);
        assert!(store.snapshot("inv").is_empty());
        // A new call of the same invocation starts afresh.
        store.set("inv", &mut None, "new", "x").unwrap();
        assert_eq!(store.snapshot("inv").len(), 1);
    }

    #[test]
    fn bytes_and_keys_are_capped_per_invocation() {
        let store = store();
        let mut found = None;
        let big = "v".repeat(MAX_INVOCATION_BYTES / 2);
        store.set("inv", &mut found, "a", &big).unwrap();
        let err = store.set("inv", &mut found, "b", &big).unwrap_err();
        assert!(err.to_string().contains("bytes"), "{err}");
        let mut other = None;
        for i in 0..MAX_INVOCATION_KEYS {
            store.set("other", &mut other, &format!("{i}"), "").unwrap();
        }
        let err = store.set("other", &mut other, "one more", "").unwrap_err();
        assert!(err.to_string().contains("keys"), "{err}");
        // Overwriting a key that exists is still fine at the cap.
        store.set("other", &mut other, "0", "x").unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn idle_invocations_expire_and_are_swept() {
        let store = Embedded::new(Duration::from_millis(200), 4);
        let mut held = None;
        store.set("idle", &mut held, "k", "v").unwrap();
        store.set("other", &mut None, "k", "v").unwrap();
        tokio::time::advance(Duration::from_millis(300)).await;
        // Reading does not keep state alive; the holder finds it gone.
        assert_eq!(store.get("idle", &mut held, "k"), None);
        assert!(store.snapshot("idle").is_empty());
        // A new invocation sweeps the rest out: nothing is held any more.
        store.set("fresh", &mut None, "k", "v").unwrap();
        assert_eq!(store.total_bytes(), 1 + 1 + ENTRY_OVERHEAD);
        assert_eq!(lock(&store.invocations).map.len(), 1);
        // A call that held an expired entry writes to a fresh one.
        store.set("idle", &mut held, "k", "again").unwrap();
        assert_eq!(store.snapshot("idle")["k"], "again");
    }

    #[test]
    fn nonces_are_single_use_and_bounded() {
        let store = store();
        assert!(store.claim_once("a"));
        assert!(!store.claim_once("a"));
        assert!(store.is_claimed("a"));
        for n in ["b", "c", "d", "e"] {
            assert!(store.claim_once(n));
        }
        // Past the bound the oldest is forgotten.
        assert!(!store.is_claimed("a"));
        assert!(store.is_claimed("e"));
    }
}
