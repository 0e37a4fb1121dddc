//! State that outlives one call: invocation scratch state (the guest's
//! `state-get`/`state-set`/`state-delete`, ADK's `temp:` state), used
//! approval nonces (the [`Confirm`](crate::toolset::Confirm) layer's single-use
//! approvals) and long-running calls as tasks ([`tasks`]).
//!
//! One [`StateStore`] holds them, in process (the default, [`StateStore::embedded`])
//! or in Redis (`[state] url` in `toolhost.toml`, [`StateOptions::url`]), where
//! several replicas share them: the calls of one invocation see the same state
//! on whichever replica they run, and an approval used on one is refused on the
//! others.
//!
//! Budgets are the same in both: an invocation holds at most
//! [`MAX_INVOCATION_BYTES`] (keys, values and [`ENTRY_OVERHEAD`] per key) in at
//! most [`MAX_INVOCATION_KEYS`] keys, checked atomically (in Redis by one Lua
//! script per write). An invocation's state expires [`StateOptions::ttl`] after
//! its last write, and is dropped at once when it is ended
//! ([`Engine::end_invocation`](crate::Engine::end_invocation)).

pub mod bus;
mod embedded;
mod redis;
pub mod sessions;
pub mod tasks;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

pub use crate::error::StateError;

/// The most bytes of scratch state one invocation may hold (keys, values and
/// [`ENTRY_OVERHEAD`] per key).
pub const MAX_INVOCATION_BYTES: usize = 4 << 20;

/// The most keys one invocation may hold.
pub const MAX_INVOCATION_KEYS: usize = 4096;

/// What one key costs beyond its bytes (the store's own bookkeeping), so a
/// flood of tiny keys reaches the byte cap too.
pub const ENTRY_OVERHEAD: usize = 64;

/// The most bytes of scratch state all invocations of one in-process store
/// may hold together (Redis has its own `maxmemory`).
pub const MAX_EMBEDDED_BYTES: usize = 256 << 20;

/// How many used approval nonces an in-process store remembers by default.
pub const DEFAULT_EMBEDDED_NONCES: usize = 1 << 18;

/// Where state lives and how long it is kept (`[state]` in `toolhost.toml`).
///
/// # Examples
/// ```
/// use std::time::Duration;
/// let mut options = toolhost::state::StateOptions::default();
/// options
///     .url(Some("redis://127.0.0.1:6379/0".into()))
///     .ttl(Duration::from_secs(600));
/// let mut config = toolhost::EngineConfig::default();
/// config.state(options);
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StateOptions {
    /// See [`StateOptions::url()`].
    pub url: Option<String>,
    /// See [`StateOptions::prefix()`].
    pub prefix: String,
    /// See [`StateOptions::ttl()`].
    pub ttl: Duration,
    /// See [`StateOptions::timeout()`].
    pub timeout: Duration,
}

impl Default for StateOptions {
    fn default() -> Self {
        Self {
            url: None,
            prefix: "toolhost:".to_owned(),
            ttl: Duration::from_secs(3600),
            timeout: Duration::from_millis(2000),
        }
    }
}

impl std::fmt::Debug for StateOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateOptions")
            .field("url", &self.url.as_deref().map(redact))
            .field("prefix", &self.prefix)
            .field("ttl", &self.ttl)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl StateOptions {
    /// The Redis server to keep state in (`redis://[user:password@]host:port/db`,
    /// `rediss://` for TLS is not built in); `None` (the default) keeps it in
    /// this process. Redis 6 or later (the connection speaks RESP3). The
    /// connection is made at first use, on the tokio runtime of that use
    /// (keep the store on one runtime), and remade by itself as soon as
    /// Redis closes it, until Redis answers again: while Redis is down,
    /// calls that need it fail after the [timeout](Self::timeout), and the
    /// first one after it is back works.
    pub fn url(&mut self, url: Option<String>) -> &mut Self {
        self.url = url;
        self
    }

    /// What every Redis key starts with (default `toolhost:`): invocation
    /// state is at `PREFIXinv:ID`, used approvals at `PREFIXused:HASH`,
    /// tasks at `PREFIXtask:ID`, the store's epoch at `PREFIXepoch`. Give
    /// each deployment sharing one Redis database its own.
    pub fn prefix(&mut self, prefix: impl Into<String>) -> &mut Self {
        self.prefix = prefix.into();
        self
    }

    /// How long an invocation's state is kept after its last write (default
    /// one hour), and, in Redis, how long a used approval is remembered: keep
    /// it above the longest an approval may wait before it is used.
    pub fn ttl(&mut self, ttl: Duration) -> &mut Self {
        self.ttl = ttl;
        self
    }

    /// How long one Redis operation may take, connecting included (default
    /// 2 s); past it the call that needed it fails with [`StateError::Timeout`].
    pub fn timeout(&mut self, timeout: Duration) -> &mut Self {
        self.timeout = timeout;
        self
    }
}

/// A new epoch (see [`StateStore::epoch`]): 128 random bits (std's
/// hasher keys, seeded from the OS), as hex.
fn new_epoch() -> String {
    use std::hash::{BuildHasher as _, RandomState};
    let half = || RandomState::new().hash_one(std::process::id());
    format!("{:016x}{:016x}", half(), half())
}

/// `url` with its password, if any, replaced by `***`.
pub(crate) fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return url.to_owned();
    };
    match rest[..at].split_once(':') {
        Some((user, _password)) => format!("{scheme}://{user}:***{}", &rest[at..]),
        None => url.to_owned(),
    }
}

/// Invocation state, used approvals and tasks, in process or in Redis.
///
/// Cheap to clone: clones share the same state (and connection).
#[derive(Clone)]
pub struct StateStore {
    repr: Repr,
}

#[derive(Clone)]
enum Repr {
    Embedded(Arc<embedded::Embedded>),
    Redis(Arc<redis::Redis>),
}

impl std::fmt::Debug for StateStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.repr {
            Repr::Embedded(_) => f.write_str("StateStore::Embedded"),
            Repr::Redis(redis) => f
                .debug_tuple("StateStore::Redis")
                .field(&redis.url_redacted())
                .finish(),
        }
    }
}

impl Default for StateStore {
    fn default() -> Self {
        Self::embedded()
    }
}

impl StateStore {
    /// The store `options` describe: in Redis if they name a URL, else in
    /// this process. Connects at first use, not now.
    ///
    /// # Errors
    /// [`StateError::Settings`] if the URL does not parse or the TTL or
    /// timeout is zero.
    pub fn new(options: &StateOptions) -> Result<Self, StateError> {
        if options.ttl.is_zero() || options.timeout.is_zero() {
            return Err(StateError::Settings {
                reason: "the TTL and the timeout must be greater than 0".to_owned(),
            });
        }
        let repr = match &options.url {
            None => Repr::Embedded(Arc::new(embedded::Embedded::new(
                options.ttl,
                DEFAULT_EMBEDDED_NONCES,
            ))),
            Some(url) => Repr::Redis(Arc::new(redis::Redis::new(url, options)?)),
        };
        Ok(Self { repr })
    }

    /// An in-process store with the default TTL, remembering
    /// [`DEFAULT_EMBEDDED_NONCES`] used approvals.
    pub fn embedded() -> Self {
        Self::embedded_with(DEFAULT_EMBEDDED_NONCES)
    }

    /// An in-process store with the default TTL remembering the last
    /// `nonces` used approvals (at least 1; 8 bytes each). In process, used
    /// approvals are bounded by count, not time.
    pub fn embedded_with(nonces: usize) -> Self {
        Self {
            repr: Repr::Embedded(Arc::new(embedded::Embedded::new(
                StateOptions::default().ttl,
                nonces,
            ))),
        }
    }

    /// True if the state is shared through Redis.
    pub fn is_shared(&self) -> bool {
        matches!(self.repr, Repr::Redis(_))
    }

    /// Checks that the store answers (always true in process), for readiness
    /// probes.
    ///
    /// # Errors
    /// [`StateError::Unavailable`] or [`StateError::Timeout`].
    pub async fn ping(&self) -> Result<(), StateError> {
        match &self.repr {
            Repr::Embedded(_) => Ok(()),
            Repr::Redis(redis) => redis.ping().await,
        }
    }

    /// Records `nonce` as used: true the first time, false if it already was
    /// (in Redis: `SET PREFIXused:HASH TOKEN NX PX TTL`, on any replica).
    /// Nonces are hashed; any string will do.
    ///
    /// # Errors
    /// [`StateError::Unavailable`] or [`StateError::Timeout`]: then the caller
    /// must not act as if the nonce were its own, and the nonce stays unused:
    /// a claim that reached Redis all the same is undone in the background,
    /// so a later claim can succeed. [`StateError::Undoing`] when a failed
    /// claim of this nonce is still being undone: try again shortly.
    pub async fn claim_once(&self, nonce: &str) -> Result<bool, StateError> {
        match &self.repr {
            Repr::Embedded(embedded) => Ok(embedded.claim_once(nonce)),
            Repr::Redis(redis) => redis.claim_once(nonce).await,
        }
    }

    /// This store's epoch: a random ID made when the store is first asked
    /// for it, and kept in it (in Redis at `PREFIXepoch`, without expiry; in
    /// process, made with the store). A store that lost its data (Redis
    /// restarted without persistence, flushed, or a key evicted; a new
    /// process) has a new one. Whatever relies on the store remembering
    /// something (an approval used once) seals the epoch it was made in and
    /// is refused in another, so losing the store never makes a used
    /// approval usable again.
    ///
    /// # Errors
    /// As [`claim_once`](Self::claim_once).
    pub async fn epoch(&self) -> Result<String, StateError> {
        match &self.repr {
            Repr::Embedded(embedded) => Ok(embedded.epoch.clone()),
            Repr::Redis(redis) => redis.epoch().await,
        }
    }

    /// Whether `nonce` was recorded by [`claim_once`](Self::claim_once) (and
    /// is still remembered).
    ///
    /// # Errors
    /// As [`claim_once`](Self::claim_once).
    pub async fn is_claimed(&self, nonce: &str) -> Result<bool, StateError> {
        match &self.repr {
            Repr::Embedded(embedded) => Ok(embedded.is_claimed(nonce)),
            Repr::Redis(redis) => redis.is_claimed(nonce).await,
        }
    }

    /// The scratch state an invocation holds now.
    ///
    /// # Errors
    /// As [`claim_once`](Self::claim_once).
    pub async fn snapshot(&self, invocation: &str) -> Result<HashMap<String, String>, StateError> {
        match &self.repr {
            Repr::Embedded(embedded) => Ok(embedded.snapshot(invocation)),
            Repr::Redis(redis) => redis.snapshot(invocation).await,
        }
    }

    /// Drops an invocation's scratch state now. In process, a call of the
    /// invocation still running keeps nothing more; in Redis, what such a
    /// call writes later expires after the TTL.
    ///
    /// # Errors
    /// As [`claim_once`](Self::claim_once).
    pub async fn end_invocation(&self, invocation: &str) -> Result<(), StateError> {
        match &self.repr {
            Repr::Embedded(embedded) => {
                embedded.end(invocation);
                Ok(())
            }
            Repr::Redis(redis) => redis.end(invocation).await,
        }
    }

    /// Ends an invocation without waiting: at once in process; in Redis on
    /// a task of the current tokio runtime (if there is none, or Redis
    /// fails, the state expires after the TTL).
    pub(crate) fn end_invocation_soon(&self, invocation: &str) {
        match &self.repr {
            Repr::Embedded(embedded) => embedded.end(invocation),
            Repr::Redis(redis) => {
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    let (redis, invocation) = (Arc::clone(redis), invocation.to_owned());
                    runtime.spawn(async move {
                        if let Err(error) = redis.end(&invocation).await {
                            tracing::warn!(%error, "invocation state not dropped; it expires after the TTL");
                        }
                    });
                }
            }
        }
    }

    /// Ends an invocation known to hold no state in Redis (its one call set
    /// none): in process as [`end_invocation_soon`](Self::end_invocation_soon);
    /// in Redis there is nothing to delete, so no round trip.
    pub(crate) fn end_unwritten_invocation(&self, invocation: &str) {
        if let Repr::Embedded(embedded) = &self.repr {
            embedded.end(invocation);
        }
    }

    /// The bytes all invocations hold in process (0 for Redis).
    pub(crate) fn embedded_bytes(&self) -> usize {
        match &self.repr {
            Repr::Embedded(embedded) => embedded.total_bytes(),
            Repr::Redis(_) => 0,
        }
    }

    /// One invocation's scratch state, as the calls of one store use it.
    pub(crate) fn scratch(&self, invocation: &str) -> Scratch {
        Scratch {
            store: self.clone(),
            invocation: invocation.to_owned(),
            found: None,
            wrote: false,
        }
    }
}

/// One invocation's scratch state, for the calls of one wasm store. In
/// process it keeps the entry it found, so its calls never wait on other
/// invocations' locks, and a call of an invocation that ended meanwhile
/// keeps nothing.
#[derive(Debug)]
pub(crate) struct Scratch {
    store: StateStore,
    invocation: String,
    found: Option<embedded::EntryHandle>,
    /// Whether `set` was called (even if it failed or was cut short: its
    /// write may have landed).
    wrote: bool,
}

impl Scratch {
    /// The value of `key`, if set.
    pub(crate) async fn get(&mut self, key: &str) -> Result<Option<String>, StateError> {
        match &self.store.repr {
            Repr::Embedded(embedded) => Ok(embedded.get(&self.invocation, &mut self.found, key)),
            Repr::Redis(redis) => redis.get(&self.invocation, key).await,
        }
    }

    /// Sets `key`; refuses past the invocation's budget (or the in-process
    /// store's) without changing anything.
    pub(crate) async fn set(&mut self, key: &str, value: &str) -> Result<(), StateError> {
        self.wrote = true;
        match &self.store.repr {
            Repr::Embedded(embedded) => embedded.set(&self.invocation, &mut self.found, key, value),
            Repr::Redis(redis) => redis.set(&self.invocation, key, value).await,
        }
    }

    /// Whether the current call has set state.
    pub(crate) fn wrote(&self) -> bool {
        self.wrote
    }

    /// A new call of this store begins (an instance kept for its invocation).
    pub(crate) fn begin_call(&mut self) {
        self.wrote = false;
    }

    /// Removes `key`, if set.
    pub(crate) async fn delete(&mut self, key: &str) -> Result<(), StateError> {
        match &self.store.repr {
            Repr::Embedded(embedded) => {
                embedded.delete(&self.invocation, &mut self.found, key);
                Ok(())
            }
            Repr::Redis(redis) => redis.delete(&self.invocation, key).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_print() {
        assert_eq!(
            redact("redis://user:secret@host:6379/0"),
            "redis://user:***@host:6379/0"
        );
        assert_eq!(redact("redis://:secret@host/0"), "redis://:***@host/0");
        assert_eq!(redact("redis://host:6379/0"), "redis://host:6379/0");
        let mut options = StateOptions::default();
        options.url(Some("redis://:hunter2@localhost/0".into()));
        assert!(!format!("{options:?}").contains("hunter2"));
        let store = StateStore::new(&options).unwrap();
        assert!(!format!("{store:?}").contains("hunter2"));
    }

    #[test]
    fn bad_settings_are_refused() {
        let mut options = StateOptions::default();
        options.url(Some("http://:hunter2@localhost".into()));
        let err = StateStore::new(&options).unwrap_err();
        assert!(matches!(err, StateError::Settings { .. }), "{err:?}");
        assert!(!err.to_string().contains("hunter2"), "{err}");
        let mut options = StateOptions::default();
        options.ttl(Duration::ZERO);
        assert!(StateStore::new(&options).is_err());
    }
}
