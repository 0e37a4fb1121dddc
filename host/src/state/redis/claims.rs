//! Used nonces (single-use approvals) in Redis: `PREFIXused:SHA256` keys set
//! with `NX` and a TTL, each holding the random token of the claim that set
//! it.
//!
//! A claim that fails (the timeout passed, the connection broke) may still
//! have reached Redis: with Redis slow to answer, the `SET` is applied and
//! only its answer is late. The caller was told the claim failed, so it did
//! not act on the nonce; if the key stayed, every retry would find the nonce
//! used although nothing used it (an approval spent on a call that never
//! ran). So a failed claim is undone in the background: a script deletes the
//! key if it still holds this claim's token, retried until Redis answers
//! (within the TTL, when the key would expire anyway). Commands on the one
//! connection are applied in order, so a retry sent after the claim failed
//! finds the key undone; a retry that finds the key while its undo is still
//! unanswered learns so ([`StateError::Undoing`]) instead of "used".

use std::collections::HashMap;
use std::hash::{BuildHasher as _, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use ::redis::Script;

use super::Redis;
use crate::state::StateError;

/// At most this many failed claims are undone at once; past it a failed
/// claim that reached Redis keeps its nonce used until the TTL (logged).
pub(super) const MAX_UNDOING: usize = 4096;

/// The longest pause between two tries of an undo.
const MAX_UNDO_DELAY: Duration = Duration::from_secs(5);

/// `KEYS[1]` a used-nonce key, `ARGV[1]` a claim's token: deletes the key if
/// that claim holds it. Returns 1 (deleted) or 0 (absent, or another claim's).
static UNDO: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
",
    )
});

/// `KEYS[1]` the epoch's key, `ARGV[1]` a new epoch: the epoch the key
/// holds, set to the new one first if it holds none.
static EPOCH: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local epoch = redis.call('GET', KEYS[1])
if epoch then return epoch end
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]
",
    )
});

/// The failed claims being undone, by key (a count: two failed claims of one
/// nonce are two undos).
#[derive(Debug, Default)]
pub(super) struct Undoing(Mutex<HashMap<String, usize>>);

impl Undoing {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, usize>> {
        // Each operation is one map update: a poisoned lock holds consistent data.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records an undo of `key` starting; false when [`MAX_UNDOING`] are
    /// running.
    fn begin(&self, key: &str) -> bool {
        let mut undoing = self.lock();
        if undoing.len() >= MAX_UNDOING && !undoing.contains_key(key) {
            return false;
        }
        *undoing.entry(key.to_owned()).or_default() += 1;
        true
    }

    fn end(&self, key: &str) {
        let mut undoing = self.lock();
        if let Some(count) = undoing.get_mut(key) {
            *count -= 1;
            if *count == 0 {
                undoing.remove(key);
            }
        }
    }

    fn contains(&self, key: &str) -> bool {
        self.lock().contains_key(key)
    }
}

/// A token no other claim holds: this process's random seed (std's hasher
/// keys) and a counter.
fn token() -> String {
    static SEED: LazyLock<u64> = LazyLock::new(|| RandomState::new().hash_one(std::process::id()));
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{:016x}{:016x}",
        *SEED,
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

impl Redis {
    /// The store's epoch (`PREFIXepoch`), made now if Redis holds none: a
    /// Redis that comes back empty (or was flushed) gets a new one.
    pub(crate) async fn epoch(&self) -> Result<String, StateError> {
        let key = format!("{}epoch", self.prefix);
        let fresh = crate::state::new_epoch();
        self.run("epoch", |mut c| async move {
            EPOCH.key(key).arg(fresh).invoke_async(&mut c).await
        })
        .await
    }

    /// `SET PREFIXused:HASH TOKEN NX PX TTL`: true if this claim set it. A
    /// failed claim is undone in the background (see the module).
    pub(crate) async fn claim_once(self: &Arc<Self>, nonce: &str) -> Result<bool, StateError> {
        let key = self.nonce_key(nonce);
        let token = token();
        let ttl = self.ttl_ms();
        let (set_key, set_token) = (key.clone(), token.clone());
        let set: Result<Option<String>, StateError> = self
            .run("claim", |mut c| async move {
                ::redis::cmd("SET")
                    .arg(set_key)
                    .arg(set_token)
                    .arg("NX")
                    .arg("PX")
                    .arg(ttl)
                    .query_async(&mut c)
                    .await
            })
            .await;
        match set {
            Ok(Some(_)) => Ok(true),
            Ok(None) if self.undoing.contains(&key) => Err(StateError::Undoing),
            Ok(None) => Ok(false),
            Err(error) => {
                self.undo_soon(key, token);
                Err(error)
            }
        }
    }

    /// Whether the nonce is used: false while a failed claim of it is being
    /// undone (nothing used it).
    pub(crate) async fn is_claimed(&self, nonce: &str) -> Result<bool, StateError> {
        let key = self.nonce_key(nonce);
        if self.undoing.contains(&key) {
            return Ok(false);
        }
        self.run("is_claimed", |mut c| async move {
            ::redis::cmd("EXISTS").arg(key).query_async(&mut c).await
        })
        .await
    }

    /// Undoes the claim `token` of `key` on a task, trying until Redis
    /// answers or the key has expired anyway.
    fn undo_soon(self: &Arc<Self>, key: String, token: String) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if !self.undoing.begin(&key) {
            tracing::warn!(
                limit = MAX_UNDOING,
                "too many unconfirmed approval records are being undone; this one stays used until it expires"
            );
            return;
        }
        let redis = Arc::clone(self);
        runtime.spawn(async move {
            let started = Instant::now();
            let mut delay = Duration::from_millis(100);
            loop {
                let (undo_key, undo_token) = (key.clone(), token.clone());
                let undone = redis
                    .run("undo_claim", |mut c| async move {
                        UNDO.key(undo_key)
                            .arg(undo_token)
                            .invoke_async::<i64>(&mut c)
                            .await
                    })
                    .await;
                match undone {
                    Ok(_) => break,
                    Err(error) if started.elapsed() + delay < redis.ttl => {
                        tracing::debug!(%error, "undoing an unconfirmed approval record; trying again");
                        tokio::time::sleep(delay).await;
                        delay = (delay * 2).min(MAX_UNDO_DELAY);
                    }
                    Err(error) => {
                        tracing::warn!(%error, "an unconfirmed approval record could not be undone; it expires with the TTL");
                        break;
                    }
                }
            }
            redis.undoing.end(&key);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_differ() {
        assert_ne!(token(), token());
        assert_eq!(token().len(), 32);
    }

    #[test]
    fn undos_are_counted_and_bounded() {
        let undoing = Undoing::default();
        assert!(undoing.begin("a") && undoing.begin("a"));
        undoing.end("a");
        assert!(undoing.contains("a"));
        undoing.end("a");
        assert!(!undoing.contains("a"));
        for n in 0..MAX_UNDOING {
            assert!(undoing.begin(&n.to_string()));
        }
        assert!(!undoing.begin("one more"));
        // A key already being undone may be undone again.
        assert!(undoing.begin("0"));
    }
}
