//! MCP 2025-11-25 sessions that any replica may serve: what a replica needs
//! to take up a session another one opened, kept in the [`StateStore`].
//!
//! A session is one [`SessionRecord`]: the client's `initialize` params (to
//! replay the handshake), the principal that opened it (no other may use or
//! end it), when it began, and what its client set in it through any replica
//! ([`Setting`]: its log level and resource subscriptions). It lives while the client uses it: each
//! replica that serves one of its requests [`touch`](SessionStore::touch)es
//! it, which keeps it for another idle timeout; a `DELETE` from its owner
//! [`end`](SessionStore::end)s it at once, on every replica.
//!
//! The session ID is a bearer secret (whoever holds it may use the session,
//! within its owner's rights), so the store never holds it: records are keyed
//! by a digest of it. In Redis a record is the hash `PREFIXsess:DIGEST`,
//! expiring an idle timeout after its last touch; in process one entry of a
//! map of at most [`MAX_EMBEDDED_SESSIONS`].

use std::time::Duration;

use sha2::{Digest as _, Sha256};

use super::tasks::now_ms;
use super::{Repr, StateError, StateStore};

/// The most bytes a session's `initialize` params may take in the store;
/// a longer record is refused with [`StateError::SessionRecord`].
pub const MAX_SESSION_RECORD_BYTES: usize = 64 << 10;

/// The most sessions an in-process store holds (expired ones make room
/// first); past it [`SessionStore::create`] fails with
/// [`StateError::Sessions`].
pub const MAX_EMBEDDED_SESSIONS: usize = 10_000;

/// What the store keeps of one session.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionRecord {
    /// The client's `initialize` params, as JSON text.
    pub initialize: String,
    /// The principal that opened the session (opaque; the caller makes it,
    /// e.g. from the principal's issuer and subject).
    pub owner: String,
    /// When the session began, Unix time in milliseconds.
    pub created_at_ms: u64,
    /// The lowest level of log messages the client wants
    /// (`logging/setLevel`), if it set one.
    pub log_level: Option<String>,
    /// The resources the client subscribed to (`resources/subscribe`),
    /// sorted.
    pub subscriptions: Vec<String>,
}

impl SessionRecord {
    /// A session `owner` opens now with these `initialize` params.
    pub fn new(initialize: impl Into<String>, owner: impl Into<String>) -> Self {
        Self {
            initialize: initialize.into(),
            owner: owner.into(),
            created_at_ms: now_ms(),
            log_level: None,
            subscriptions: Vec::new(),
        }
    }
}

/// What a session's client set in it, for every replica that serves it
/// ([`SessionStore::set`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Setting<'a> {
    /// `logging/setLevel`.
    LogLevel(&'a str),
    /// `resources/subscribe`, at most this many resources a session.
    Subscribe {
        /// The resource.
        uri: &'a str,
        /// The most subscriptions a session keeps.
        limit: usize,
    },
    /// `resources/unsubscribe`.
    Unsubscribe(&'a str),
}

/// The outcome of [`SessionStore::set`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Set {
    /// Kept.
    Set,
    /// There is no such session (ended, or expired).
    Missing,
    /// The session has as many subscriptions as it may: nothing changed.
    Full,
}

/// The outcome of [`SessionStore::end`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ended {
    /// The session was the owner's, and is gone now.
    Ended,
    /// There is no such session (never made, ended, or expired).
    Missing,
    /// The session is another principal's: it goes on, unchanged.
    NotOwner,
}

/// The sessions of one [`StateStore`], from [`StateStore::sessions`]. Cheap
/// to clone; the same semantics in process and in Redis, where each
/// operation is one round trip within the store's timeout and each write one
/// atomic step.
#[derive(Clone, Debug)]
pub struct SessionStore {
    store: StateStore,
}

impl StateStore {
    /// The sessions kept in this store (in Redis: `PREFIXsess:DIGEST` hashes).
    pub fn sessions(&self) -> SessionStore {
        SessionStore {
            store: self.clone(),
        }
    }
}

impl SessionStore {
    /// Stores a new session `id`, kept for `idle` unless touched: true if
    /// stored, false if a session (unexpired) has that ID already (it is
    /// left as it is).
    ///
    /// # Errors
    /// [`StateError::SessionRecord`] if the `initialize` params and the owner
    /// take over [`MAX_SESSION_RECORD_BYTES`]; in process,
    /// [`StateError::Sessions`] if the store holds [`MAX_EMBEDDED_SESSIONS`]
    /// live sessions; in Redis, [`StateError::Unavailable`] or
    /// [`StateError::Timeout`].
    pub async fn create(
        &self,
        id: &str,
        record: &SessionRecord,
        idle: Duration,
    ) -> Result<bool, StateError> {
        if record.initialize.len() + record.owner.len() > MAX_SESSION_RECORD_BYTES {
            return Err(StateError::SessionRecord {
                limit: MAX_SESSION_RECORD_BYTES,
            });
        }
        let key = digest(id);
        match &self.store.repr {
            Repr::Embedded(embedded) => embedded.sessions.create(key, record, idle),
            Repr::Redis(redis) => redis.create_session(&key, record, millis(idle)).await,
        }
    }

    /// The session, if it exists and has not expired. Reading does not keep
    /// it alive.
    ///
    /// # Errors
    /// In Redis, [`StateError::Unavailable`] (also for a record this host
    /// cannot read) or [`StateError::Timeout`].
    pub async fn get(&self, id: &str) -> Result<Option<SessionRecord>, StateError> {
        let key = digest(id);
        match &self.store.repr {
            Repr::Embedded(embedded) => Ok(embedded.sessions.get(&key)),
            Repr::Redis(redis) => redis.get_session(&key).await,
        }
    }

    /// Keeps the session for another `idle` from now: false if it is gone
    /// (ended or expired), when it must not be served.
    ///
    /// # Errors
    /// In Redis, [`StateError::Unavailable`] or [`StateError::Timeout`].
    pub async fn touch(&self, id: &str, idle: Duration) -> Result<bool, StateError> {
        let key = digest(id);
        match &self.store.repr {
            Repr::Embedded(embedded) => Ok(embedded.sessions.touch(&key, idle)),
            Repr::Redis(redis) => redis.touch_session(&key, millis(idle)).await,
        }
    }

    /// Keeps `setting` in the session, for the replicas that take it up or
    /// hold it: one atomic step. It changes neither the owner nor when the
    /// session expires.
    ///
    /// # Errors
    /// [`StateError::SessionRecord`] for a level or URI of over
    /// [`MAX_SESSION_RECORD_BYTES`]; in Redis, [`StateError::Unavailable`]
    /// or [`StateError::Timeout`].
    pub async fn set(&self, id: &str, setting: Setting<'_>) -> Result<Set, StateError> {
        let text = match setting {
            Setting::LogLevel(text) | Setting::Unsubscribe(text) => text,
            Setting::Subscribe { uri, .. } => uri,
        };
        if text.len() > MAX_SESSION_RECORD_BYTES {
            return Err(StateError::SessionRecord {
                limit: MAX_SESSION_RECORD_BYTES,
            });
        }
        let key = digest(id);
        match &self.store.repr {
            Repr::Embedded(embedded) => Ok(embedded.sessions.set(&key, setting)),
            Repr::Redis(redis) => redis.set_in_session(&key, setting).await,
        }
    }

    /// Ends the session if `owner` opened it: one atomic step, so a session
    /// is ended once, and only by its owner.
    ///
    /// # Errors
    /// In Redis, [`StateError::Unavailable`] or [`StateError::Timeout`]:
    /// then the session may or may not have ended.
    pub async fn end(&self, id: &str, owner: &str) -> Result<Ended, StateError> {
        let key = digest(id);
        match &self.store.repr {
            Repr::Embedded(embedded) => Ok(embedded.sessions.end(&key, owner)),
            Repr::Redis(redis) => redis.end_session(&key, owner).await,
        }
    }
}

/// A name for the session `id` that does not give it away (a digest, the
/// same on every replica): what logs and the session's invocation may show.
pub fn public_name(id: &str) -> String {
    digest(id)
}

/// What a session is stored under: 128 bits of a digest of its ID, as hex.
/// The ID itself (a bearer secret) is never stored.
fn digest(id: &str) -> String {
    let digest = Sha256::new()
        .chain_update(b"toolhost-session\0")
        .chain_update(id.as_bytes())
        .finalize();
    crate::hex::hex(&digest[..16])
}

/// An idle timeout in ms, at least 1 (Redis deletes a key given 0).
fn millis(idle: Duration) -> u64 {
    super::tasks::millis(idle).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_stored_under_a_digest_of_its_id() {
        let key = digest("mcp-session-1");
        assert_eq!(key.len(), 32);
        assert!(!key.contains("mcp-session-1"));
        assert_eq!(key, digest("mcp-session-1"));
        assert_ne!(key, digest("mcp-session-2"));
    }

    #[tokio::test]
    async fn a_record_over_the_bound_is_refused() {
        let store = StateStore::embedded();
        let big = SessionRecord::new("x".repeat(MAX_SESSION_RECORD_BYTES), "alice");
        assert_eq!(
            store
                .sessions()
                .create("s", &big, Duration::from_secs(60))
                .await,
            Err(StateError::SessionRecord {
                limit: MAX_SESSION_RECORD_BYTES
            })
        );
    }
}
