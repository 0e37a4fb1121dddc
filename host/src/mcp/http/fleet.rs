//! 2025-11-25 sessions that any replica serves: when the state store is
//! shared (Redis), a session is a record there
//! ([`SessionStore`](crate::state::sessions::SessionStore)), not only memory
//! on the replica that opened it, so a load balancer may send each of its
//! requests to any replica (issue 37).
//!
//! The replica that answers `initialize` stores the session's record (the
//! client's `initialize` params and its owner, the principal that opened
//! it) before the client learns the session's ID. A replica that gets a
//! request of a session it does not hold reads the record: if the request's
//! principal is the owner, rmcp takes the session up (it replays the
//! handshake from the params, `StreamableHttpServerConfig::session_store`)
//! and serves the request; another principal gets 404, as for a session
//! that does not exist. Every replica that serves a session keeps its
//! record alive (at most once a [`TOUCH_EVERY`] per session), so it expires
//! a session idle timeout after its last request on any replica. A
//! `DELETE` from its owner ends the record and the session's invocation
//! state; a replica still holding a copy closes it at its next request
//! there (within a [`TOUCH_EVERY`]), or when it idles out.
//!
//! A session opened while the store cannot be reached is served by its
//! replica alone (a warning says so), rather than refused.
//!
//! The session's invocation is named from its ID alike on every replica
//! ([`http_session_name`]), so its `temp:` state is shared; a copy that
//! idles out on one replica leaves it to the others.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use axum::response::IntoResponse as _;
use rmcp::model::InitializeRequestParams;
use rmcp::transport::streamable_http_server::session::SessionId;
use rmcp::transport::streamable_http_server::session::SessionManager as _;
use rmcp::transport::streamable_http_server::session::store::{
    SessionState, SessionStore as RmcpStore, SessionStoreError,
};

use super::resume::Resumable;
use crate::mcp::Shared;
use crate::mcp::session::http_session_name;
use crate::state::StateError;
use crate::state::sessions::{Ended, SessionRecord, SessionStore};
use crate::toolset::Principal;

/// How often, at most, a replica renews a session it serves: a session
/// another replica ended is closed here within this much of its end.
pub(in crate::mcp) const TOUCH_EVERY: Duration = Duration::from_secs(1);

/// The most sessions being opened at once whose params wait for their
/// record (each waits one request's time; past it the oldest go).
const MAX_OPENING: usize = 1024;

/// The sessions of a fleet of replicas: their records, the local sessions
/// (rmcp's, to close one another replica ended), and when each was last
/// renewed from here.
pub(in crate::mcp) struct Fleet {
    records: Arc<Records>,
    manager: Arc<Resumable>,
    idle: Duration,
    touched: Mutex<HashMap<SessionId, Renewal>>,
}

/// When a session served here was last renewed, or used if it is this
/// replica's only.
#[derive(Clone, Copy)]
struct Renewal {
    at: Instant,
    /// False for a session opened while the store could not be reached:
    /// it has no record, and only this replica serves it.
    shared: bool,
}

/// rmcp's view of the session records: what it takes a session up from.
pub(in crate::mcp) struct Records {
    store: SessionStore,
    /// The `initialize` params of sessions opened here, until [`gate`]
    /// stores them with their owner.
    opening: Mutex<HashMap<String, InitializeRequestParams>>,
}

impl Records {
    /// The records of `store`.
    pub(in crate::mcp) fn new(store: SessionStore) -> Self {
        Self {
            store,
            opening: Mutex::default(),
        }
    }

    fn opening(&self) -> MutexGuard<'_, HashMap<String, InitializeRequestParams>> {
        self.opening.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait::async_trait]
impl RmcpStore for Records {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Some(record) = self.store.get(session_id).await? else {
            return Ok(None);
        };
        let params = serde_json::from_str(&record.initialize)?;
        Ok(Some(SessionState::new(params)))
    }

    /// Called once a session opened here answered `initialize`: the record
    /// needs its owner too, which [`gate`] knows.
    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let mut opening = self.opening();
        if opening.len() >= MAX_OPENING {
            opening.clear();
        }
        opening.insert(session_id.to_owned(), state.initialize_params.clone());
        Ok(())
    }

    /// Called for a `DELETE`, after [`gate`] ended the record (only its
    /// owner may: rmcp does not check).
    async fn delete(&self, _session_id: &str) -> Result<(), SessionStoreError> {
        Ok(())
    }
}

impl Fleet {
    /// The sessions kept in `records`, served here by `manager`, each
    /// kept `idle` after its last request.
    pub(in crate::mcp) fn new(
        records: Arc<Records>,
        manager: Arc<Resumable>,
        idle: Duration,
    ) -> Self {
        Self {
            records,
            manager,
            idle,
            touched: Mutex::default(),
        }
    }

    fn touched(&self) -> MutexGuard<'_, HashMap<SessionId, Renewal>> {
        self.touched.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Notes that `id` was renewed now (`shared`), or used now if it is
    /// this replica's only.
    fn renewed(&self, id: &SessionId, shared: bool) {
        let mut touched = self.touched();
        // Sessions that ended or idled out leave their entry: swept as the
        // map grows.
        if touched.len() >= 64 && touched.len().is_power_of_two() {
            let idle = self.idle;
            touched.retain(|_, renewal| renewal.at.elapsed() < idle);
        }
        let at = Instant::now();
        touched.insert(id.clone(), Renewal { at, shared });
    }

    /// Whether `id`, served here, is due for renewal (never, if it is this
    /// replica's only: then its use is noted).
    fn due(&self, id: &SessionId) -> bool {
        let mut touched = self.touched();
        match touched.get_mut(id) {
            None => true,
            Some(renewal) if !renewal.shared => {
                renewal.at = Instant::now();
                false
            }
            Some(renewal) => renewal.at.elapsed() >= TOUCH_EVERY.min(self.idle / 10),
        }
    }

    /// Closes this replica's copy of `id` (another replica ended it).
    async fn close(&self, shared: &Shared, id: &SessionId) {
        self.touched().remove(id);
        shared.direct.remove(id);
        if let Err(error) = self.manager.close_session(id).await {
            tracing::warn!(%error, "could not close an MCP session that ended elsewhere");
        }
    }

    /// Stores the record of the session an `initialize` just opened here
    /// (its answer carries the ID), before the client learns of it. When
    /// the store cannot be reached, only this replica serves the session; when
    /// the record is refused, the session is closed and the client told why.
    async fn opened(
        &self,
        shared: &Shared,
        response: axum::response::Response,
        owner: &str,
    ) -> axum::response::Response {
        let Some(id) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(SessionId::from)
        else {
            return response;
        };
        let Some(params) = self.records.opening().remove(&*id) else {
            return response;
        };
        let Ok(params) = serde_json::to_string(&params) else {
            self.close(shared, &id).await;
            return unavailable("the session's initialize params cannot be stored");
        };
        let record = SessionRecord::new(params, owner);
        match self.records.store.create(&id, &record, self.idle).await {
            Ok(true) => {
                self.renewed(&id, true);
                response
            }
            Ok(false) => {
                self.close(shared, &id).await;
                unavailable("a session with that ID exists already")
            }
            Err(error @ StateError::SessionRecord { .. }) => {
                self.close(shared, &id).await;
                (
                    StatusCode::BAD_REQUEST,
                    format!("could not open an MCP session: {error}\n"),
                )
                    .into_response()
            }
            // The session is served here alone (as without a shared store)
            // rather than not at all: with a balancer's affinity, or one
            // replica, its client notices nothing.
            Err(error) => {
                tracing::warn!(%error, session = %http_session_name(&id), "could not store a new MCP session; only this replica serves it");
                self.renewed(&id, false);
                response
            }
        }
    }

    /// Whether the owner's request of session `id` may go on: a session
    /// held here is renewed (closed if it ended elsewhere); one held
    /// elsewhere is looked up, for rmcp to take up.
    async fn admit(
        &self,
        shared: &Shared,
        id: &SessionId,
        principal: &Principal,
    ) -> Result<(), axum::response::Response> {
        let store = &self.records.store;
        if self.manager.has_session(id).await.unwrap_or(false) {
            if shared.direct.is_owned_by(id, principal) == Some(false) {
                tracing::warn!(target: "toolhost::auth", "refused a request on a session another caller opened");
                return Err(not_yours());
            }
            if !self.due(id) {
                return Ok(());
            }
            return match store.touch(id, self.idle).await {
                Ok(true) => {
                    self.renewed(id, true);
                    Ok(())
                }
                Ok(false) => {
                    tracing::info!(session = %http_session_name(id), "MCP session ended elsewhere; closed here");
                    self.close(shared, id).await;
                    Err(gone())
                }
                // The copy here serves on while the store is away.
                Err(error) => {
                    tracing::warn!(%error, "could not renew an MCP session");
                    Ok(())
                }
            };
        }
        match store.get(id).await {
            Ok(Some(record)) if record.owner == principal.key() => {
                if let Err(error) = store.touch(id, self.idle).await {
                    tracing::warn!(%error, "could not renew an MCP session");
                }
                self.renewed(id, true);
                tracing::info!(session = %http_session_name(id), "MCP session taken up from the shared store");
                Ok(())
            }
            Ok(Some(_)) => {
                tracing::warn!(target: "toolhost::auth", "refused a request on a session another caller opened");
                Err(not_yours())
            }
            // rmcp finds no record either: 404.
            Ok(None) => Ok(()),
            Err(error) => {
                tracing::warn!(%error, "could not read an MCP session's record");
                Err(unavailable(&error.to_string()))
            }
        }
    }
}

/// The middleware, between authorization and the MCP service: stores the
/// sessions opened here, lets rmcp take up the owner's sessions opened
/// elsewhere, and ends one for its owner's `DELETE`.
pub(in crate::mcp) async fn gate(
    shared: Arc<Shared>,
    fleet: Arc<Fleet>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if request.uri().path() != "/mcp" {
        return next.run(request).await;
    }
    let principal = request
        .extensions()
        .get::<Arc<Principal>>()
        .cloned()
        .unwrap_or_else(|| Arc::new(Principal::anonymous()));
    let id = request
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(SessionId::from);
    let Some(id) = id else {
        let response = next.run(request).await;
        return fleet.opened(&shared, response, &principal.key()).await;
    };
    if request.method() == Method::DELETE {
        return match fleet.records.store.end(&id, &principal.key()).await {
            Ok(Ended::NotOwner) => {
                tracing::warn!(target: "toolhost::auth", "refused to end an MCP session another caller opened");
                not_yours()
            }
            Ok(ended) => {
                if ended == Ended::Ended
                    && let Some(engine) = &shared.engine
                {
                    engine.end_invocation(&http_session_name(&id));
                }
                fleet.touched().remove(&id);
                next.run(request).await
            }
            // A session held here ends here; its record, if any, expires.
            Err(error) if fleet.manager.has_session(&id).await.unwrap_or(false) => {
                tracing::warn!(%error, "could not end an MCP session's record; it expires after the idle timeout");
                fleet.touched().remove(&id);
                next.run(request).await
            }
            Err(error) => {
                tracing::warn!(%error, "could not end an MCP session");
                unavailable(&error.to_string())
            }
        };
    }
    match fleet.admit(&shared, &id, &principal).await {
        Ok(()) => next.run(request).await,
        Err(refused) => refused,
    }
}

/// The answer to a request on a session another principal opened: as for
/// one that does not exist (it reaches nothing, and says nothing of it).
pub(in crate::mcp) fn not_yours() -> axum::response::Response {
    (
        StatusCode::NOT_FOUND,
        "no MCP session of yours has that ID\n",
    )
        .into_response()
}

/// The answer to a request on a session that ended: 404, as rmcp answers
/// one it does not know (clients then start a new session).
fn gone() -> axum::response::Response {
    (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response()
}

/// The answer when the session store cannot be reached: 503, to try again.
fn unavailable(why: &str) -> axum::response::Response {
    let mut response = (
        StatusCode::SERVICE_UNAVAILABLE,
        format!("the MCP session store is unavailable: {why}\n"),
    )
        .into_response();
    response.headers_mut().insert(
        axum::http::header::RETRY_AFTER,
        axum::http::HeaderValue::from_static("1"),
    );
    response
}
