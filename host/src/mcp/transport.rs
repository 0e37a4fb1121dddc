//! What a transport attaches to each request it hands to the session, and the
//! one place a handler reads it from: who the request is from (HTTP: the
//! [`Principal`] its authentication named) and a [`Hangup`] cancelled when
//! the client can no longer receive the answer (stdio: its end closed; HTTP:
//! the connection of the request's POST dropped, or, for a session's stream
//! that can be resumed, no client resumed it in time).
//!
//! A transport attaches either to the request's own extensions (stdio) or to
//! the HTTP request's, which rmcp hands the handler as
//! [`axum::http::request::Parts`]; handlers never look at either directly.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::RoleServer;
use rmcp::service::RequestContext;
use tokio_util::sync::CancellationToken;

use crate::toolset::Principal;

/// Cancelled when the client can no longer receive a request's answer.
#[derive(Debug, Clone)]
pub(super) struct Hangup {
    token: CancellationToken,
    /// Why, for the log: "the client closed its end".
    why: &'static str,
    /// Set once another layer decides when the client has hung up (a
    /// resumable stream's), instead of the transport that attached it.
    deferred: Arc<AtomicBool>,
}

impl Hangup {
    /// A hangup that `token` signals, logged as `why`.
    pub(super) fn new(token: CancellationToken, why: &'static str) -> Self {
        Self {
            token,
            why,
            deferred: Arc::default(),
        }
    }

    /// Hands the decision to the caller: the transport that attached this
    /// hangup no longer signals it ([`Hangup::signal`] does nothing). Gives a
    /// hangup on the same token, logged as `why`, for the caller to attach
    /// in its place and cancel when it decides.
    pub(super) fn defer(&self, why: &'static str) -> Self {
        self.deferred.store(true, Ordering::Release);
        Self::new(self.token.clone(), why)
    }

    /// The transport's signal: the client can no longer receive the answer
    /// (unless the decision was deferred).
    pub(super) fn signal(&self) {
        if !self.deferred.load(Ordering::Acquire) {
            self.token.cancel();
        }
    }

    /// Signals the hangup, whoever attached it.
    pub(super) fn cancel(&self) {
        self.token.cancel();
    }

    /// Completes when the client has hung up; gives why.
    pub(super) async fn hung_up(&self) -> &'static str {
        self.token.cancelled().await;
        self.why
    }
}

/// What the transport attached to this request, of type `T`.
fn attached<T: Send + Sync + 'static>(context: &RequestContext<RoleServer>) -> Option<&T> {
    context.extensions.get::<T>().or_else(|| {
        context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<T>())
    })
}

/// The principal a request acts for (`None`: the transport authenticates
/// nobody, as on stdio).
pub(super) fn principal(context: &RequestContext<RoleServer>) -> Option<&Arc<Principal>> {
    attached(context)
}

/// The headers of the HTTP request that carried this one (`None` on stdio).
pub(super) fn http_headers(context: &RequestContext<RoleServer>) -> Option<&axum::http::HeaderMap> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .map(|parts| &parts.headers)
}

/// The HTTP session an `initialize` opens or takes up, attached to it by
/// the session manager (`http::resume`): rmcp names a new session in no
/// header of the request.
#[derive(Clone, Debug)]
pub(super) struct Opened(pub(super) rmcp::transport::streamable_http_server::session::SessionId);

/// The HTTP session a message came in (its `Mcp-Session-Id`, or the one an
/// `initialize` opens), from the extensions rmcp hands a handler (`None` on
/// stdio).
pub(super) fn http_session_id(extensions: &rmcp::model::Extensions) -> Option<&str> {
    if let Some(Opened(id)) = extensions.get::<Opened>() {
        return Some(id);
    }
    extensions
        .get::<axum::http::request::Parts>()?
        .headers
        .get("mcp-session-id")?
        .to_str()
        .ok()
}

/// The request's hangup: it never completes when the transport attached none.
pub(super) async fn hung_up(context: &RequestContext<RoleServer>) -> &'static str {
    match attached::<Hangup>(context) {
        Some(hangup) => hangup.hung_up().await,
        None => std::future::pending().await,
    }
}
