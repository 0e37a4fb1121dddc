//! Options of the streamable HTTP transport: what it accepts, how long it
//! waits, how many connections it holds, who requests act for.

use std::sync::Arc;
use std::time::Duration;

use crate::mcp::auth::{Authenticator, StaticToken};

/// Options of the streamable HTTP transport.
///
/// By default only loopback `Host` names (`localhost`, `127.0.0.1`, `::1`)
/// and loopback browser origins are accepted (DNS-rebinding protection, as the
/// MCP specification asks), and no token is required.
///
/// Connections and sessions are bounded: at most
/// [`HttpOptions::DEFAULT_MAX_CONNECTIONS`] open connections (more are
/// answered `503` and closed, with a log line), a request head must arrive
/// within [`HttpOptions::DEFAULT_HEADER_READ_TIMEOUT`] (also the longest a
/// kept-alive connection waits for its next request), a connection that moves
/// no bytes for [`HttpOptions::DEFAULT_IDLE_TIMEOUT`] is closed, and a session
/// without requests for [`HttpOptions::DEFAULT_SESSION_IDLE_TIMEOUT`] ends
/// (its client gets `404` and starts a new one, as MCP specifies).
#[derive(Clone)]
pub struct HttpOptions {
    pub(in crate::mcp) allowed_hosts: Vec<String>,
    pub(in crate::mcp) allowed_origins: Vec<String>,
    /// Who requests act for; [`Unverified`](crate::mcp::Unverified) when unset.
    pub(in crate::mcp) authenticator: Option<Arc<dyn Authenticator>>,
    pub(in crate::mcp) max_connections: usize,
    /// `None`: half of `max_connections`.
    pub(in crate::mcp) max_connections_per_peer: Option<usize>,
    pub(in crate::mcp) header_read_timeout: Duration,
    pub(in crate::mcp) idle_timeout: Duration,
    pub(in crate::mcp) session_idle_timeout: Duration,
    pub(in crate::mcp) replica: Option<axum::http::HeaderValue>,
    pub(in crate::mcp) drain_timeout: Duration,
    pub(in crate::mcp) stream_resume: Duration,
    pub(in crate::mcp) stream_close_after: Option<Duration>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            authenticator: None,
            max_connections: Self::DEFAULT_MAX_CONNECTIONS,
            max_connections_per_peer: None,
            header_read_timeout: Self::DEFAULT_HEADER_READ_TIMEOUT,
            idle_timeout: Self::DEFAULT_IDLE_TIMEOUT,
            session_idle_timeout: Self::DEFAULT_SESSION_IDLE_TIMEOUT,
            replica: None,
            drain_timeout: Self::DEFAULT_DRAIN_TIMEOUT,
            stream_resume: Self::DEFAULT_STREAM_RESUME,
            stream_close_after: None,
        }
    }
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field(
                "authenticator",
                &self.authenticator.as_ref().map(|_| "<set>"),
            )
            .field("max_connections", &self.max_connections)
            .field("max_connections_per_peer", &self.max_connections_per_peer)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("session_idle_timeout", &self.session_idle_timeout)
            .field("replica", &self.replica)
            .field("drain_timeout", &self.drain_timeout)
            .field("stream_resume", &self.stream_resume)
            .field("stream_close_after", &self.stream_close_after)
            .finish()
    }
}

impl HttpOptions {
    /// Accepts another `Host` header value (`name` or `name:port`), for
    /// example the name a reverse proxy forwards.
    pub fn allow_host(&mut self, host: impl Into<String>) -> &mut Self {
        self.allowed_hosts.push(host.into());
        self
    }

    /// Accepts another browser origin (`scheme://host:port`, `:*` for any port).
    pub fn allow_origin(&mut self, origin: impl Into<String>) -> &mut Self {
        self.allowed_origins.push(origin.into());
        self
    }

    /// Requires `Authorization: Bearer <token>` on every request
    /// ([`StaticToken`]; replaces any [`HttpOptions::authenticator`]).
    pub fn bearer_token(&mut self, token: impl Into<String>) -> &mut Self {
        self.authenticator(StaticToken::new(token))
    }

    /// Authenticates every request with `authenticator`: a request it refuses
    /// is answered `401` before MCP sees it, and the [`Principal`] it names
    /// is the caller of that request's calls (their
    /// [`Identity`](crate::toolset::Identity), the owner of their tasks).
    /// Unset, every request is accepted ([`Unverified`](crate::mcp::Unverified)).
    ///
    /// [`Principal`]: crate::toolset::Principal
    pub fn authenticator(&mut self, authenticator: impl Authenticator) -> &mut Self {
        self.authenticator = Some(Arc::new(authenticator));
        self
    }

    /// The name of this replica, sent as [`REPLICA_HEADER`] on every HTTP
    /// response, so a client or a test behind a load balancer can tell which
    /// replica answered. Ignored (with a warning) unless it is a valid header
    /// value.
    pub fn replica_name(&mut self, name: &str) -> &mut Self {
        match axum::http::HeaderValue::from_str(name) {
            Ok(value) => self.replica = Some(value),
            Err(_) => tracing::warn!(
                name,
                "the replica name is not a valid header value; not sent"
            ),
        }
        self
    }

    /// The default of [`HttpOptions::max_connections`].
    pub const DEFAULT_MAX_CONNECTIONS: usize = 256;
    /// The default of [`HttpOptions::header_read_timeout`].
    pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
    /// The default of [`HttpOptions::idle_timeout`].
    pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);
    /// The default of [`HttpOptions::session_idle_timeout`].
    pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
    /// The default of [`HttpOptions::drain_timeout`].
    pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);
    /// The default of [`HttpOptions::stream_resume`].
    pub const DEFAULT_STREAM_RESUME: Duration = Duration::from_secs(30);

    /// The most connections open at once (at least 1); more are answered
    /// `503 Service Unavailable` and closed. Keep it well under the process's
    /// file-descriptor limit (`ulimit -n`): plugins and the cache need some.
    pub fn max_connections(&mut self, max: usize) -> &mut Self {
        self.max_connections = max.max(1);
        self
    }

    /// The most connections one peer address may hold at once (at least 1;
    /// default half of [`HttpOptions::max_connections`]), so that one client
    /// holding connections open (slowly sending a byte now and then) cannot
    /// take every slot; more get a `503` and are closed. Behind a proxy every
    /// connection comes from the proxy: give it `max_connections`.
    pub fn max_connections_per_peer(&mut self, max: usize) -> &mut Self {
        self.max_connections_per_peer = Some(max.max(1));
        self
    }

    /// The per-peer cap in effect (see [`HttpOptions::max_connections_per_peer`]).
    pub(in crate::mcp) fn per_peer(&self) -> usize {
        self.max_connections_per_peer
            .unwrap_or(self.max_connections / 2)
            .clamp(1, self.max_connections)
    }

    /// How long a connection may take to send a request head, counted from
    /// when the server starts waiting for one: on a new connection and between
    /// the requests of a kept-alive one.
    pub fn header_read_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.header_read_timeout = timeout;
        self
    }

    /// How long a connection may move no bytes either way (a slow request
    /// body, a client that stopped reading) before it is closed. Response
    /// streams send a keep-alive comment every 15 s, so an open stream is
    /// never idle when this is longer.
    pub fn idle_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.idle_timeout = timeout;
        self
    }

    /// How long a session may go without a request (or a message from its
    /// calls) before it ends and frees its memory. A call that runs silently
    /// for longer ends with its session: keep this above the call deadline.
    pub fn session_idle_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.session_idle_timeout = timeout;
        self
    }

    /// How long a stop waits for the `tools/call`s still running to finish
    /// (the drain) before it cuts those left short. Zero cuts them at once.
    pub fn drain_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.drain_timeout = timeout;
        self
    }

    /// How long a session's request stream that dropped before its end
    /// (the client's connection broke, or the server closed it, see
    /// [`HttpOptions::stream_close_after`]) can be resumed with a `GET` that
    /// names its last event in `Last-Event-ID`: the call keeps running
    /// meanwhile, and the events the client missed wait for it, up to the
    /// response. A stream nobody resumes in that time is given up, and a call
    /// still running on it is cancelled. A finished stream's events are kept
    /// that long after its end. Zero cancels a call at once when its stream
    /// drops (no resumption).
    pub fn stream_resume(&mut self, window: Duration) -> &mut Self {
        self.stream_resume = window;
        self
    }

    /// Polling (SEP-1699): the server ends a call's stream once it has been
    /// open this long, and the client resumes it with a `GET` after the
    /// stream's `retry` interval (3 s), so no connection stays open through a
    /// long call (a proxy's read timeout cannot cut it). Unset (the default),
    /// a stream stays open until its response. Only useful with a
    /// [`HttpOptions::stream_resume`] window longer than the retry interval.
    pub fn stream_close_after(&mut self, after: Option<Duration>) -> &mut Self {
        self.stream_close_after = after;
        self
    }
}

/// The response header naming the replica that answered (see
/// [`HttpOptions::replica_name`]).
pub const REPLICA_HEADER: &str = "x-toolhost-replica";
