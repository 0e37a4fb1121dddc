//! Serves any [`Toolset`] over the Model Context Protocol, on stdio or
//! streamable HTTP. This is the only module that names `rmcp`: its API moves
//! fast, so nothing of it leaks into the rest of the crate or its public API.
//!
//! What a client sees:
//! - `tools/list`: each tool's MCP name (see below), description (with the
//!   long-running note), `inputSchema`, and `outputSchema` where declared (a
//!   schema whose root is not an object is wrapped as `{"result": …}`, like the
//!   result itself).
//! - `tools/call`: JSON results as `structuredContent` plus their text; parts as
//!   text, image, audio or embedded-resource content. Tool failures (bad
//!   arguments, limits, traps) are results with `isError` and a message a model
//!   can act on; an unknown tool is a JSON-RPC error.
//! - Streaming tools send progress notifications when the call carries a
//!   `progressToken`: at most one per [`McpServer::with_progress_interval`]
//!   (100 ms by default) per call, each with the text of the chunks since the
//!   last one and the count of chunks so far; the final result holds the whole
//!   output.
//! - `notifications/cancelled` drops the running call: the guest stops at its
//!   next epoch tick and its instance is freed. So does the client going away:
//!   stdin closing (stdio) or the connection of the call's POST dropping (HTTP;
//!   the call is not kept for a later resumption of its stream).
//! - Every request gets a JSON-RPC answer over stdio, even one that cannot be
//!   read (see `mcp/stdio.rs`).
//! - Tools that need confirmation are asked through elicitation when the
//!   client supports it; otherwise the call fails with a clear message.
//! - Set changes (hot reload) send `notifications/tools/list_changed`.
//!
//! Tool names: MCP clients commonly accept only `[A-Za-z0-9_-]{1,64}`. Names
//! that fit are used as they are; in others every other character becomes
//! `_` (`echo.echo` → `echo_echo`), a name too long keeps its last 64
//! characters (the tool's own name), and a clash gets `_2`, `_3`… The mapping
//! is recomputed from the set each time, and `tools/call` also accepts the
//! original name.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use base64::Engine as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams,
    ElicitationAction, ElicitationSchema, JsonObject, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ResourceContents, ServerCapabilities, ServerConfig, Tool as McpTool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

mod http;
mod stdio;

use crate::Engine;
use crate::error::CallError;
use crate::plugin::ToolStream;
use crate::tool::{MediaKind, Part, ToolOutput, ToolSpec, wrap_result};
use crate::toolset::{Context, Decision, Identity, Tool, Toolset, ToolsetChange};

/// The longest tool name many MCP clients accept.
const MAX_NAME: usize = 64;

/// Why serving MCP stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The client never completed the MCP handshake.
    #[error("the MCP session did not start: {reason}")]
    Start {
        /// What went wrong.
        reason: String,
    },
    /// The session's task failed.
    #[error("the MCP session failed: {reason}")]
    Session {
        /// What went wrong.
        reason: String,
    },
    /// The HTTP server could not listen or serve.
    /// Its message includes the I/O error's (not also its `source()`).
    #[error("the MCP HTTP server failed: {error}")]
    Http {
        /// The I/O error.
        error: std::io::Error,
    },
}

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
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
    bearer_token: Option<String>,
    max_connections: usize,
    header_read_timeout: Duration,
    idle_timeout: Duration,
    session_idle_timeout: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            bearer_token: None,
            max_connections: Self::DEFAULT_MAX_CONNECTIONS,
            header_read_timeout: Self::DEFAULT_HEADER_READ_TIMEOUT,
            idle_timeout: Self::DEFAULT_IDLE_TIMEOUT,
            session_idle_timeout: Self::DEFAULT_SESSION_IDLE_TIMEOUT,
        }
    }
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "<redacted>"),
            )
            .field("max_connections", &self.max_connections)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("session_idle_timeout", &self.session_idle_timeout)
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

    /// Requires `Authorization: Bearer <token>` on every request.
    pub fn bearer_token(&mut self, token: impl Into<String>) -> &mut Self {
        self.bearer_token = Some(token.into());
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

    /// The most connections open at once (at least 1); more are answered
    /// `503 Service Unavailable` and closed. Keep it well under the process's
    /// file-descriptor limit (`ulimit -n`): plugins and the cache need some.
    pub fn max_connections(&mut self, max: usize) -> &mut Self {
        self.max_connections = max.max(1);
        self
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
}

/// An MCP server over a [`Toolset`].
///
/// # Examples
/// ```no_run
/// use toolhost::{Engine, EngineConfig, McpServer, PluginDir, PluginOptions};
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let engine = Engine::new(&EngineConfig::default())?;
/// let plugins = PluginDir::open(&engine, "target/plugins", PluginOptions::default()).await?;
/// plugins.watch()?;
/// let changes = plugins.subscribe();
/// McpServer::new(plugins)
///     .with_changes(changes)
///     .with_engine(&engine)
///     .serve_stdio()
///     .await?;
/// # Ok(()) }
/// ```
pub struct McpServer {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("toolset", &self.shared.toolset.name())
            .finish_non_exhaustive()
    }
}

struct Shared {
    toolset: Box<dyn Toolset>,
    changes: Option<broadcast::Receiver<ToolsetChange>>,
    engine: Option<Engine>,
    name: String,
    version: String,
    sessions: AtomicU64,
    progress_interval: Duration,
    /// Holds `true` once the toolset has finished its first load.
    ready: Option<tokio::sync::watch::Receiver<bool>>,
}

impl Session {
    /// The tool of that name; while the first load runs, a tool not there yet
    /// is waited for until it joins or the load ends (its plugin may be the
    /// one still loading).
    async fn resolve_when_loaded(&self, cx: &Context, name: &str) -> Option<Arc<dyn Tool>> {
        let found = self.resolve(cx, name);
        let Some(ready) = &self.shared.ready else {
            return found;
        };
        if found.is_some() || *ready.borrow() {
            return found;
        }
        let mut ready = ready.clone();
        // Subscribed before the loop's first resolve: no change is missed.
        let mut changes = self.shared.changes.as_ref().map(|c| c.resubscribe());
        loop {
            if let Some(tool) = self.resolve(cx, name) {
                return Some(tool);
            }
            if *ready.borrow_and_update() {
                return None;
            }
            tokio::select! {
                changed = ready.changed() => {
                    if changed.is_err() {
                        return self.resolve(cx, name);
                    }
                }
                change = async {
                    match &mut changes {
                        Some(changes) => !matches!(
                            changes.recv().await,
                            Err(broadcast::error::RecvError::Closed)
                        ),
                        None => std::future::pending().await,
                    }
                } => {
                    if !change {
                        changes = None;
                    }
                }
            }
        }
    }
}

impl Shared {
    fn is_ready(&self) -> bool {
        self.ready.as_ref().is_none_or(|ready| *ready.borrow())
    }

    /// Waits for the toolset's first load (see [`McpServer::with_ready`]).
    async fn wait_ready(&self) {
        if let Some(ready) = &self.ready {
            let mut ready = ready.clone();
            // A dropped sender means nothing more will load: serve what is there.
            let _ = ready.wait_for(|ready| *ready).await;
        }
    }
}

impl McpServer {
    /// A server for this set of tools.
    pub fn new(toolset: impl Toolset + 'static) -> Self {
        Self {
            shared: Arc::new(Shared {
                toolset: Box::new(toolset),
                changes: None,
                engine: None,
                name: "toolhost".to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                sessions: AtomicU64::new(0),
                progress_interval: Self::DEFAULT_PROGRESS_INTERVAL,
                ready: None,
            }),
        }
    }

    fn shared_mut(&mut self) -> &mut Shared {
        Arc::get_mut(&mut self.shared).expect("the server is not shared before it serves")
    }

    /// Sends `notifications/tools/list_changed` to every session when a change
    /// arrives here (from [`PluginDir::subscribe`](crate::PluginDir::subscribe)).
    pub fn with_changes(mut self, changes: broadcast::Receiver<ToolsetChange>) -> Self {
        self.shared_mut().changes = Some(changes);
        self
    }

    /// Answers `initialize` at once, while the tools are still loading:
    /// `tools/list`, and a call of a tool not there yet, wait until `ready`
    /// holds `true` (for a plugins directory: every file's first load
    /// finished, see [`PluginDir::start`](crate::PluginDir::start)). Tools
    /// that have loaded can be called meanwhile.
    pub fn with_ready(mut self, ready: tokio::sync::watch::Receiver<bool>) -> Self {
        self.shared_mut().ready = Some(ready);
        self
    }

    /// Frees each session's invocation state when the session ends. Every
    /// session is one invocation: its calls share scratch state.
    pub fn with_engine(mut self, engine: &Engine) -> Self {
        self.shared_mut().engine = Some(engine.clone());
        self
    }

    /// The default of [`McpServer::with_progress_interval`].
    pub const DEFAULT_PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

    /// The shortest time between two progress notifications of one call
    /// (default [`McpServer::DEFAULT_PROGRESS_INTERVAL`]): chunks that arrive
    /// sooner are merged into the next notification, which carries their text
    /// and the latest chunk count. Zero sends one notification per chunk.
    pub fn with_progress_interval(mut self, interval: Duration) -> Self {
        self.shared_mut().progress_interval = interval;
        self
    }

    /// The server name and version clients see (default: `toolhost` and this
    /// crate's version).
    pub fn with_server_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        let shared = self.shared_mut();
        shared.name = name.into();
        shared.version = version.into();
        self
    }

    /// Serves one client on this process's stdin and stdout until the client
    /// closes its end. Nothing else may write to stdout meanwhile.
    ///
    /// # Errors
    /// [`McpError`] if the handshake or the session fails.
    ///
    /// When stdin and stdout are pipes (as when an MCP client spawns the
    /// server), they are read and written without blocking, through the
    /// runtime's reactor, and left in non-blocking mode.
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        let (read, write) = stdio();
        self.serve_io(read, write).await
    }

    /// Serves one client over a byte stream pair (for example a
    /// `tokio::io::duplex` in tests, or a socket).
    ///
    /// # Errors
    /// [`McpError`] if the handshake or the session fails.
    pub async fn serve_io<R, W>(self, read: R, write: W) -> Result<(), McpError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let closed = CancellationToken::new();
        let session = Session::new(self.shared.clone(), "stdio", closed.clone());
        let (transport, writer) = stdio::StdioTransport::new(read, write, closed.clone());
        let served = async {
            let running = session
                .serve(transport)
                .await
                .map_err(|e| McpError::Start {
                    reason: e.to_string(),
                })?;
            running.waiting().await.map_err(|e| McpError::Session {
                reason: e.to_string(),
            })
        }
        .await;
        // The client's end closed (or the session failed): stop what runs.
        closed.cancel();
        // Let the last answers out, unless the client stopped reading.
        if tokio::time::timeout(Duration::from_secs(2), writer)
            .await
            .is_err()
        {
            tracing::warn!("gave up writing the last MCP messages: the client is not reading");
        }
        served.map(|_| ())
    }

    /// Serves streamable HTTP at `/mcp` on `listener` until `shutdown`
    /// completes. Each MCP session gets its own identity and invocation.
    /// Connections and sessions are bounded as [`HttpOptions`] says.
    ///
    /// # Errors
    /// [`McpError::Http`] if serving fails.
    pub async fn serve_http(
        self,
        listener: tokio::net::TcpListener,
        options: HttpOptions,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), McpError> {
        use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
        use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

        let stop = CancellationToken::new();
        let mut hosts = vec!["localhost".to_owned(), "127.0.0.1".into(), "::1".into()];
        hosts.extend(options.allowed_hosts.iter().cloned());
        let mut origins = vec![
            "http://localhost:*".to_owned(),
            "http://127.0.0.1:*".into(),
            "http://[::1]:*".into(),
        ];
        origins.extend(options.allowed_origins.iter().cloned());
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(hosts)
            .with_allowed_origins(origins)
            .with_cancellation_token(stop.child_token());
        let shared = self.shared.clone();
        let mut sessions = LocalSessionManager::default();
        sessions.session_config.keep_alive = Some(options.session_idle_timeout);
        let service = StreamableHttpService::new(
            move || {
                Ok(Session::new(
                    shared.clone(),
                    "http",
                    CancellationToken::new(),
                ))
            },
            Arc::new(sessions),
            config,
        );
        let token: Option<Arc<str>> = options.bearer_token.as_deref().map(Arc::from);
        let app = axum::Router::new()
            .nest_service("/mcp", service)
            .layer(axum::middleware::from_fn(http::watch_disconnect))
            .layer(axum::middleware::from_fn(move |request, next| {
                authorize(token.clone(), request, next)
            }));
        let limits = http::Limits {
            max_connections: options.max_connections,
            header_read_timeout: options.header_read_timeout,
            idle_timeout: options.idle_timeout,
        };
        http::serve(listener, app, limits, shutdown, stop)
            .await
            .map_err(|error| McpError::Http { error })
    }
}

type Reader = Box<dyn tokio::io::AsyncRead + Send + Unpin>;
type Writer = Box<dyn tokio::io::AsyncWrite + Send + Unpin>;

/// This process's stdin and stdout for serving. tokio's `stdin()` and
/// `stdout()` do every read and write on the blocking thread pool, two thread
/// hand-offs per message (half the time of a trivial call's round trip went to
/// switching threads); a pipe is registered with the reactor instead.
fn stdio() -> (Reader, Writer) {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        use tokio::net::unix::pipe;
        let stdin = std::io::stdin().as_fd().try_clone_to_owned();
        let read: Reader = match stdin.and_then(pipe::Receiver::from_owned_fd) {
            Ok(pipe) => Box::new(pipe),
            Err(_) => Box::new(tokio::io::stdin()),
        };
        let stdout = std::io::stdout().as_fd().try_clone_to_owned();
        let write: Writer = match stdout.and_then(pipe::Sender::from_owned_fd) {
            Ok(pipe) => Box::new(pipe),
            Err(_) => Box::new(tokio::io::stdout()),
        };
        (read, write)
    }
    #[cfg(not(unix))]
    {
        (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout()))
    }
}

/// Refuses a request without the expected bearer token; answers a session's
/// end the way clients expect.
async fn authorize(
    token: Option<Arc<str>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    if let Some(expected) = token {
        let given = request
            .headers()
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if !constant_time_eq(given.as_bytes(), expected.as_bytes()) {
            tracing::warn!("refused an MCP HTTP request without the right bearer token");
            return (
                axum::http::StatusCode::UNAUTHORIZED,
                [(axum::http::header::WWW_AUTHENTICATE, "Bearer")],
                "missing or wrong bearer token",
            )
                .into_response();
        }
    }
    let ending = request.method() == axum::http::Method::DELETE;
    let mut response = next.run(request).await;
    // rmcp answers a session's DELETE with 202; clients (the Python SDK among
    // them) expect 200 or 204 and warn on anything else.
    if ending && response.status() == axum::http::StatusCode::ACCEPTED {
        *response.status_mut() = axum::http::StatusCode::NO_CONTENT;
        *response.body_mut() = axum::body::Body::empty();
    }
    response
}

/// Compares secrets without leaking where they differ through timing.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for (i, x) in a.iter().enumerate() {
        diff |= x ^ b.get(i).copied().unwrap_or(0);
    }
    diff == 0
}

/// One MCP session: one client connection (stdio) or `Mcp-Session-Id` (HTTP).
#[derive(Clone)]
struct Session {
    shared: Arc<Shared>,
    state: Arc<SessionState>,
}

struct SessionState {
    id: String,
    transport: &'static str,
    /// Set once the client has initialized: the identity its calls carry.
    identity: OnceLock<Identity>,
    /// Cancelled when the session ends: stops its change forwarder.
    ended: CancellationToken,
    /// Cancelled when the client's end closes (stdio): stops running calls.
    disconnected: CancellationToken,
    engine: Option<Engine>,
}

impl Drop for SessionState {
    fn drop(&mut self) {
        self.ended.cancel();
        if let Some(engine) = &self.engine {
            engine.end_invocation(&self.id);
        }
        tracing::info!(session = %self.id, "MCP session ended");
    }
}

impl Session {
    fn new(shared: Arc<Shared>, transport: &'static str, disconnected: CancellationToken) -> Self {
        let n = shared.sessions.fetch_add(1, Ordering::Relaxed) + 1;
        let state = SessionState {
            id: format!("mcp-{transport}-{}-{n}", std::process::id()),
            transport,
            identity: OnceLock::new(),
            ended: CancellationToken::new(),
            disconnected,
            engine: shared.engine.clone(),
        };
        Self {
            shared,
            state: Arc::new(state),
        }
    }

    fn identity(&self, peer: &Peer<RoleServer>) -> Identity {
        if let Some(identity) = self.state.identity.get() {
            return identity.clone();
        }
        let mut identity = Identity {
            session: Some(self.state.id.clone()),
            ..Identity::default()
        };
        identity
            .attributes
            .insert("transport".to_owned(), self.state.transport.to_owned());
        if let Some(info) = peer.peer_info() {
            identity
                .attributes
                .insert("client".to_owned(), info.client_info.name.clone());
        }
        identity
    }

    fn context(&self, request: &RequestContext<RoleServer>) -> Context {
        Context::new()
            .with_call_id(format!("{}-{}", self.state.id, request.id))
            .with_invocation_id(self.state.id.clone())
            .with_identity(self.identity(&request.peer))
    }

    /// The tool a `tools/call` name reaches: the name itself (original names
    /// and aliases), else an MCP-mapped name.
    fn resolve(&self, cx: &Context, name: &str) -> Option<Arc<dyn Tool>> {
        let toolset = &self.shared.toolset;
        if let Some(tool) = toolset.lookup(cx, name) {
            return Some(tool);
        }
        let tools = toolset.tools(cx);
        let names = mcp_names(tools.iter().map(|t| t.spec().name.as_str()));
        names
            .iter()
            .position(|n| n == name)
            .and_then(|i| tools.get(i).cloned())
    }

    /// Forwards set changes to this session's client until the session ends.
    fn forward_changes(&self, peer: Peer<RoleServer>) {
        let Some(changes) = &self.shared.changes else {
            return;
        };
        let mut changes = changes.resubscribe();
        let ended = self.state.ended.clone();
        let session = self.state.id.clone();
        let shared = Arc::clone(&self.shared);
        tokio::spawn(async move {
            loop {
                let notify = tokio::select! {
                    () = ended.cancelled() => return,
                    change = changes.recv() => match change {
                        Ok(change) => !change.is_empty(),
                        Err(broadcast::error::RecvError::Lagged(_)) => true,
                        Err(broadcast::error::RecvError::Closed) => return,
                    },
                };
                // Plugins joining during the first load: `tools/list` waits
                // for all of them anyway.
                if !notify || !shared.is_ready() {
                    continue;
                }
                if peer.is_transport_closed() {
                    return;
                }
                if let Err(err) = peer.notify_tool_list_changed().await {
                    tracing::debug!(%session, %err, "could not send tools/list_changed");
                    return;
                }
                tracing::info!(%session, "sent tools/list_changed");
            }
        });
    }

    async fn call(
        &self,
        tool: Arc<dyn Tool>,
        cx: Context,
        arguments: Value,
        request: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let name = tool.spec().name.clone();
        let started = match start(&*tool, &cx, arguments).await {
            Err(CallError::ConfirmationRequired(ask)) => {
                match confirm(&ask, &request.peer).await? {
                    Ok(()) => {
                        let approved = cx.clone().with_decision(
                            ask.call_id.clone(),
                            Decision::Approve {
                                arguments: ask.arguments.clone(),
                                payload: ask.payload.clone(),
                            },
                        );
                        start(&*tool, &approved, ask.arguments.clone()).await
                    }
                    Err(refusal) => Err(refusal),
                }
            }
            other => other,
        };
        match started {
            Ok(Started::Output(output)) => Ok(output_result(output)),
            Ok(Started::Stream(stream)) => {
                pump(stream, &name, request, self.shared.progress_interval).await
            }
            Err(err) => error_result(err),
        }
    }
}

/// A call that started: a finished output, or a stream to pull.
enum Started {
    Output(ToolOutput),
    Stream(ToolStream),
}

async fn start(tool: &dyn Tool, cx: &Context, arguments: Value) -> Result<Started, CallError> {
    if tool.spec().streaming {
        tool.stream(cx, arguments).await.map(Started::Stream)
    } else {
        tool.invoke(cx, arguments).await.map(Started::Output)
    }
}

/// Asks the human through elicitation. `Ok(Ok(()))`: approved; `Ok(Err(_))`:
/// not approved, or the client cannot ask.
async fn confirm(
    ask: &crate::toolset::ConfirmationRequest,
    peer: &Peer<RoleServer>,
) -> Result<Result<(), CallError>, ErrorData> {
    let rejected = |reason: String| CallError::ConfirmationRejected {
        tool: ask.tool.clone(),
        call_id: ask.call_id.clone(),
        reason: Some(reason),
    };
    if peer.supported_elicitation_modes().is_empty() {
        // The client cannot ask a human: the original "confirmation required"
        // error, with what to do about it.
        return Ok(Err(CallError::Host {
            tool: ask.tool.clone(),
            reason: format!(
                "`{}` needs confirmation ({}), and this MCP client cannot ask (it does not support elicitation); \
                 approve it in a client that does, or remove the tool from [confirm] in the server's configuration",
                ask.tool, ask.hint
            ),
        }));
    }
    let schema = ElicitationSchema::builder()
        .required_bool_property("approve", |b| {
            b.title("Approve")
                .description(format!("Run `{}` with these arguments", ask.tool))
        })
        .build()
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    let message = format!(
        "The tool `{}` needs your approval: {}\nArguments: {}",
        ask.tool, ask.hint, ask.arguments
    );
    let answer = peer
        .create_elicitation(ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema: schema,
        })
        .await;
    let answer = match answer {
        Ok(answer) => answer,
        Err(err) => {
            tracing::warn!(tool = %ask.tool, %err, "elicitation failed");
            return Ok(Err(rejected(format!("the approval request failed: {err}"))));
        }
    };
    let approved = answer.action == ElicitationAction::Accept
        && answer
            .content
            .as_ref()
            .and_then(|c| c.get("approve"))
            .and_then(Value::as_bool)
            == Some(true);
    if approved {
        Ok(Ok(()))
    } else {
        let reason = match answer.action {
            ElicitationAction::Accept => "the user did not approve it",
            ElicitationAction::Decline => "the user declined it",
            _ => "the user cancelled the approval",
        };
        Ok(Err(rejected(reason.to_owned())))
    }
}

/// Pulls a stream to its end, reporting it in progress notifications when the
/// client asked for progress (at most one per `interval`; see the module
/// docs); the result holds the whole output.
async fn pump(
    mut stream: ToolStream,
    tool: &str,
    request: &RequestContext<RoleServer>,
    interval: Duration,
) -> Result<CallToolResult, ErrorData> {
    let mut progress = request
        .meta
        .get_progress_token()
        .map(|token| Progress::new(token, interval));
    let mut parts: Vec<Part> = Vec::new();
    loop {
        let next = match progress.as_ref().and_then(Progress::due) {
            Some(due) => tokio::select! {
                biased;
                part = stream.next() => part,
                () = tokio::time::sleep_until(due) => {
                    if let Some(progress) = &mut progress {
                        progress.flush(tool, &request.peer).await;
                    }
                    continue;
                }
            },
            None => stream.next().await,
        };
        let Some(part) = next else { break };
        let part = match part {
            Ok(part) => part,
            Err(err) => return error_result(err),
        };
        if let Some(progress) = &mut progress {
            progress.add(&part);
            if progress
                .due()
                .is_some_and(|due| due <= tokio::time::Instant::now())
            {
                progress.flush(tool, &request.peer).await;
            }
        }
        match (part, parts.last_mut()) {
            (Part::Text(text), Some(Part::Text(last))) => last.push_str(&text),
            (part, _) => parts.push(part),
        }
    }
    // What is still pending goes out before the result.
    if let Some(progress) = &mut progress {
        progress.flush(tool, &request.peer).await;
    }
    let call_id = stream.call_id().to_owned();
    Ok(match parts.as_slice() {
        [] | [Part::Text(_)] => {
            let text = match parts.pop() {
                Some(Part::Text(text)) => text,
                _ => String::new(),
            };
            let mut result = CallToolResult::success(vec![ContentBlock::text(text.clone())]);
            result.structured_content = Some(wrap_result(Value::String(text)));
            result
        }
        _ => CallToolResult::success(
            parts
                .into_iter()
                .enumerate()
                .map(|(i, p)| content(p, &call_id, i))
                .collect(),
        ),
    })
}

/// The progress of one streaming call: chunks not yet reported are merged
/// until the next notification may go.
struct Progress {
    token: rmcp::model::ProgressToken,
    interval: Duration,
    /// Chunks so far.
    count: u32,
    /// The text of the chunks not yet reported, and how many there are.
    pending: String,
    unsent: u32,
    last_sent: Option<tokio::time::Instant>,
}

impl Progress {
    fn new(token: rmcp::model::ProgressToken, interval: Duration) -> Self {
        Self {
            token,
            interval,
            count: 0,
            pending: String::new(),
            unsent: 0,
            last_sent: None,
        }
    }

    fn add(&mut self, part: &Part) {
        self.count = self.count.saturating_add(1);
        self.unsent += 1;
        let message = progress_message(part);
        if !matches!(part, Part::Text(_))
            && !self.pending.is_empty()
            && !self.pending.ends_with('\n')
        {
            self.pending.push('\n');
        }
        self.pending.push_str(&message);
    }

    /// When the pending chunks may be reported; `None` when there are none.
    fn due(&self) -> Option<tokio::time::Instant> {
        if self.unsent == 0 {
            return None;
        }
        Some(match self.last_sent {
            Some(at) => at + self.interval,
            None => tokio::time::Instant::now(),
        })
    }

    async fn flush(&mut self, tool: &str, peer: &Peer<RoleServer>) {
        if self.unsent == 0 {
            return;
        }
        let message = std::mem::take(&mut self.pending);
        self.unsent = 0;
        self.last_sent = Some(tokio::time::Instant::now());
        let progress = ProgressNotificationParam::new(self.token.clone(), f64::from(self.count))
            .with_message(message);
        if let Err(err) = peer.notify_progress(progress).await {
            tracing::debug!(%tool, %err, "could not send a progress notification");
        }
    }
}

fn progress_message(part: &Part) -> String {
    match part {
        Part::Text(text) => text.clone(),
        Part::Json(value) => value.to_string(),
        Part::Blob {
            mime_type, data, ..
        } => format!("{mime_type}, {} bytes", data.len()),
    }
}

fn output_result(output: ToolOutput) -> CallToolResult {
    let mut blocks = Vec::with_capacity(output.parts.len() + 1);
    if let Some(result) = &output.result {
        blocks.push(ContentBlock::text(result.to_string()));
    }
    for (i, part) in output.parts.into_iter().enumerate() {
        blocks.push(content(part, &output.call_id, i));
    }
    let mut result = CallToolResult::success(blocks);
    result.structured_content = output.result;
    result
}

fn content(part: Part, call_id: &str, index: usize) -> ContentBlock {
    let base64 = |data: &[u8]| base64::engine::general_purpose::STANDARD.encode(data);
    match part {
        Part::Text(text) => ContentBlock::text(text),
        Part::Json(value) => ContentBlock::text(value.to_string()),
        Part::Blob {
            kind: MediaKind::Image,
            mime_type,
            data,
            ..
        } => ContentBlock::image(base64(&data), mime_type),
        Part::Blob {
            kind: MediaKind::Audio,
            mime_type,
            data,
            ..
        } => ContentBlock::audio(base64(&data), mime_type),
        Part::Blob {
            mime_type,
            name,
            data,
            ..
        } => {
            let file = name.unwrap_or_else(|| format!("part-{}", index + 1));
            let uri = format!("toolhost://{call_id}/{}", uri_segment(&file));
            ContentBlock::resource(
                ResourceContents::blob(base64(&data), uri).with_mime_type(mime_type),
            )
        }
    }
}

/// Percent-encodes what may not appear in a URI path segment.
fn uri_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The names in an unresolved-name error as MCP lists them (`echo_add` for
/// `echo.add`); names it does not list stay as they are.
fn mcp_error_names(err: CallError, as_mcp: &HashMap<&str, &str>) -> CallError {
    let map = |names: Vec<String>| -> Vec<String> {
        names
            .into_iter()
            .map(|name| as_mcp.get(name.as_str()).map_or(name, |n| (*n).to_owned()))
            .collect()
    };
    match err {
        CallError::UnknownTool { tool, available } => CallError::UnknownTool {
            tool,
            available: map(available),
        },
        CallError::AmbiguousTool { tool, candidates } => CallError::AmbiguousTool {
            tool,
            candidates: map(candidates),
        },
        CallError::AliasUnresolved {
            alias,
            tool,
            problem,
        } => CallError::AliasUnresolved {
            alias,
            tool,
            problem: Box::new(mcp_error_names(*problem, as_mcp)),
        },
        other => other,
    }
}

/// A failed call as MCP sees it: a name that reaches no tool is a protocol
/// error; all else is a tool result with `isError`, whose text a model can act on.
fn error_result(err: CallError) -> Result<CallToolResult, ErrorData> {
    match &err {
        err if err.is_unresolved_name() => Err(ErrorData::invalid_params(err.to_string(), None)),
        CallError::Trapped { source, .. } => {
            tracing::warn!(error = ?source, "{err}");
            Ok(CallToolResult::error(vec![ContentBlock::text(
                err.to_string(),
            )]))
        }
        _ => {
            tracing::info!("{err}");
            Ok(CallToolResult::error(vec![ContentBlock::text(
                err.to_string(),
            )]))
        }
    }
}

/// MCP names for tool names, in order: see the module docs.
fn mcp_names<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let names: Vec<&str> = names.collect();
    let fits = |name: &str| {
        (1..=MAX_NAME).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    let mut taken: HashSet<String> = names
        .iter()
        .filter(|n| fits(n))
        .map(|n| (*n).to_owned())
        .collect();
    names
        .iter()
        .map(|name| {
            if fits(name) {
                return (*name).to_owned();
            }
            let mut base: String = name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            if base.is_empty() {
                base.push_str("tool");
            }
            // Too long: keep the end, where the tool's own name is (`plugin.tool`).
            let tail = |keep: usize| base[base.len().saturating_sub(keep)..].to_owned();
            let mut candidate = tail(MAX_NAME);
            let mut n = 1;
            while taken.contains(&candidate) {
                n += 1;
                let suffix = format!("_{n}");
                candidate = format!("{}{suffix}", tail(MAX_NAME.saturating_sub(suffix.len())));
            }
            taken.insert(candidate.clone());
            candidate
        })
        .collect()
}

/// A JSON Schema as an MCP `outputSchema`, whose root must be an object: a
/// schema of another type describes `result` in `{"result": …}`, the way the
/// host wraps such results.
fn object_schema(schema: &Value) -> JsonObject {
    let Value::Object(map) = schema else {
        return JsonObject::new();
    };
    if map.get("type").and_then(Value::as_str) == Some("object") {
        return map.clone();
    }
    let mut inner = map.clone();
    let mut root = JsonObject::new();
    // References are resolved from the root, so definitions move up with them.
    for key in ["$schema", "$defs", "definitions"] {
        if let Some(value) = inner.remove(key) {
            root.insert(key.to_owned(), value);
        }
    }
    root.insert("type".to_owned(), json!("object"));
    root.insert("properties".to_owned(), json!({ "result": inner }));
    root.insert("required".to_owned(), json!(["result"]));
    root
}

fn mcp_tool(name: String, spec: &ToolSpec) -> McpTool {
    let input = match &spec.input_schema {
        Value::Object(map) => map.clone(),
        _ => {
            let mut map = JsonObject::new();
            map.insert("type".to_owned(), json!("object"));
            map
        }
    };
    let mut tool = McpTool::new(name.clone(), spec.model_description(), Arc::new(input));
    tool.output_schema = spec
        .output_schema
        .as_ref()
        .map(|schema| Arc::new(object_schema(schema)));
    if name != spec.name {
        tool.title = Some(spec.name.clone());
    }
    tool
}

impl ServerHandler for Session {
    fn get_info(&self) -> ServerConfig {
        let mut config = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_instructions(
            "Tools run as sandboxed WebAssembly components; each call gets a fresh instance.",
        );
        config.server_info.name = self.shared.name.clone();
        config.server_info.version = self.shared.version.clone();
        config
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let mut identity = self.identity(&context.peer);
        identity.session = Some(self.state.id.clone());
        let client = identity.attributes.get("client").cloned();
        // Set once; a second initialized notification changes nothing.
        let _ = self.state.identity.set(identity);
        tracing::info!(session = %self.state.id, client = client.as_deref().unwrap_or("?"), "MCP session initialized");
        self.forward_changes(context.peer.clone());
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.shared.wait_ready().await;
        let cx = self.context(&context);
        let tools = self.shared.toolset.tools(&cx);
        let names = mcp_names(tools.iter().map(|t| t.spec().name.as_str()));
        let listed = names
            .into_iter()
            .zip(&tools)
            .map(|(name, tool)| mcp_tool(name, tool.spec()))
            .collect();
        Ok(ListToolsResult::with_all_items(listed))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let cx = self.context(&context);
        let name = request.name.to_string();
        let Some(tool) = self.resolve_when_loaded(&cx, &name).await else {
            // Unknown, ambiguous, or an alias of a missing tool: the set says
            // which, and the names it offers instead are given as MCP names.
            let listed: Vec<String> = self
                .shared
                .toolset
                .tools(&cx)
                .iter()
                .map(|t| t.spec().name.clone())
                .collect();
            let mapped = mcp_names(listed.iter().map(String::as_str));
            let as_mcp: HashMap<&str, &str> = listed
                .iter()
                .map(String::as_str)
                .zip(mapped.iter().map(String::as_str))
                .collect();
            let err = mcp_error_names(self.shared.toolset.not_found(&cx, &name), &as_mcp);
            return Err(ErrorData::invalid_params(err.to_string(), None));
        };
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let call_id = cx.call_id().to_owned();
        let cancelled = context.ct.clone();
        let disconnected = self.state.disconnected.clone();
        // Over HTTP: cancelled when the connection of this call's POST drops.
        let dropped = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<http::Disconnect>())
            .map(|d| d.0.clone())
            .unwrap_or_default();
        let stopped = |why: &str| {
            // The call's future is dropped here: its Store and instance go
            // with it, and a guest still running stops at its next epoch tick.
            tracing::info!(tool = %name, call = %call_id, "call cancelled: {why}; guest stopped");
            Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "the call of `{name}` was cancelled"
            ))]))
        };
        let result = tokio::select! {
            biased;
            () = cancelled.cancelled() => stopped("the client cancelled it"),
            () = disconnected.cancelled() => stopped("the client closed its end"),
            () = dropped.cancelled() => stopped("the client's connection dropped"),
            result = self.call(tool, cx, arguments, &context) => result,
        };
        result.map(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_fit_stay_and_others_map_without_clashes() {
        let names = mcp_names(
            [
                "echo",
                "echo.echo",
                "echo_echo",
                "text.echo",
                "naïve tool",
                "",
            ]
            .into_iter(),
        );
        assert_eq!(
            names,
            [
                "echo",
                "echo_echo_2",
                "echo_echo",
                "text_echo",
                "na_ve_tool",
                "tool"
            ]
        );
        let long = "x".repeat(70) + ".word_count";
        let mapped = mcp_names([long.as_str(), long.as_str()].into_iter());
        assert_eq!(mapped[0].len(), MAX_NAME);
        assert!(mapped[0].ends_with("x_word_count"), "{}", mapped[0]);
        assert_ne!(mapped[0], mapped[1]);
        assert!(mapped[1].len() <= MAX_NAME && mapped[1].ends_with("_2"));
    }

    #[test]
    fn output_schemas_get_an_object_root_with_definitions_kept_at_the_root() {
        let object = json!({"type": "object", "properties": {"a": {"type": "integer"}}});
        assert_eq!(Value::Object(object_schema(&object)), object);
        let integer =
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "integer"});
        assert_eq!(
            Value::Object(object_schema(&integer)),
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "properties": {"result": {"type": "integer"}},
                "required": ["result"],
            })
        );
        let array = json!({"type": "array", "items": {"$ref": "#/$defs/X"}, "$defs": {"X": {"type": "string"}}});
        let wrapped = Value::Object(object_schema(&array));
        assert_eq!(wrapped["$defs"]["X"]["type"], "string");
        assert_eq!(
            wrapped["properties"]["result"]["items"]["$ref"],
            "#/$defs/X"
        );
    }

    #[test]
    fn bearer_tokens_compare_exactly() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret2"));
        assert!(!constant_time_eq(b"", b"secret"));
    }

    #[test]
    fn blobs_become_images_audio_or_resources() {
        let image = content(
            Part::Blob {
                kind: MediaKind::Image,
                mime_type: "image/png".into(),
                name: None,
                data: vec![1, 2, 3],
            },
            "c1",
            0,
        );
        assert!(
            matches!(&image, ContentBlock::Image(i) if i.data == "AQID" && i.mime_type == "image/png")
        );
        let file = content(
            Part::Blob {
                kind: MediaKind::File,
                mime_type: "application/pdf".into(),
                name: Some("my report.pdf".into()),
                data: vec![0],
            },
            "c1",
            0,
        );
        let json = serde_json::to_value(&file).unwrap();
        assert_eq!(json["resource"]["uri"], "toolhost://c1/my%20report.pdf");
        assert_eq!(json["resource"]["mimeType"], "application/pdf");
    }
}
