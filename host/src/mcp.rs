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
//!   client supports it; otherwise the call fails with a clear message. On
//!   2025-11-25 the question is sent during the call; on 2026-07-28 the call
//!   answers `InputRequiredResult` with a sealed state and the client's retry
//!   resumes it (`mcp/approval.rs`).
//! - A request may name its invocation in `_meta` (`dev.toolhost/invocation`);
//!   without it, a 2025-11-25 session is one invocation and a 2026-07-28 call
//!   is its own.
//! - Set changes (hot reload) send `notifications/tools/list_changed`: to
//!   every session (2025-11-25), on `subscriptions/listen` streams (2026-07-28).
//! - Long-running tools run as tasks (the Tasks extension, SEP-2663) for a
//!   client that declares the extension on its `tools/call`: the call answers
//!   a task handle at once, and `tasks/get`, `tasks/update` (an approval) and
//!   `tasks/cancel` follow it, on any replica sharing the state store
//!   (`mcp/features/tasks.rs`; [`McpServer::with_tasks`]). Other clients get the
//!   plain call.
//!
//! Tool names: MCP clients commonly accept only `[A-Za-z0-9_-]{1,64}`. Names
//! that fit are used as they are; in others every other character becomes
//! `_` (`echo.echo` → `echo_echo`), a name too long keeps its last 64
//! characters (the tool's own name), and a clash gets `_2`, `_3`… The mapping
//! is recomputed from the set each time, and `tools/call` also accepts the
//! original name.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use rmcp::ServiceExt;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

mod approval;
mod auth;
mod calls;
mod convert;
mod features;
mod http;
mod request;
mod revision;
mod session;
mod stdio;
mod trace;
mod transport;

pub use approval::{ApprovalKeys, KeyRingError};
pub use auth::{
    AuthError, Authenticator, OAuth, OAuthOptions, OAuthSetupError, ProtectedResource, StaticToken,
    Unverified,
};
use calls::Calls;
pub use calls::STOPPING;
use features::{Feature, completions, logging, prompts, resources, tasks, tools};
pub use http::options::{HttpOptions, REPLICA_HEADER};
use session::Session;

use crate::Engine;
use crate::catalog::Kind;
use crate::metrics::Metrics;
use crate::toolset::{Toolset, ToolsetChange};

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

/// What every session of a server shares.
struct Shared {
    toolset: Box<dyn Toolset>,
    changes: Option<broadcast::Receiver<ToolsetChange>>,
    engine: Option<Engine>,
    name: String,
    version: String,
    sessions: AtomicU64,
    /// Holds `true` once the toolset has finished its first load.
    ready: Option<tokio::sync::watch::Receiver<bool>>,
    /// How tools are served.
    tools: tools::Tools,
    /// Whether resources are served.
    resources: resources::Resources,
    /// Whether prompts are served.
    prompts: prompts::Prompts,
    /// Whether completions are served.
    completions: completions::Completions,
    /// Guest log messages to clients that ask (2025-11-25).
    logging: logging::Logging,
    /// The `tools/call`s running now, and whether a stop is draining them.
    calls: Calls,
    /// What `GET /metrics` reports.
    metrics: Arc<Metrics>,
    /// What watches every call: the metrics.
    observers: Arc<[Arc<dyn crate::toolset::CallObserver>]>,
    /// Long-running calls run as tasks, and where their records live.
    tasks: tasks::Tasks,
    /// The HTTP sessions whose calls can run directly.
    direct: http::direct::Sessions,
}

impl Shared {
    /// The feature areas served (see `features.rs`).
    fn features(&self) -> [&dyn Feature; 6] {
        [
            &self.tools,
            &self.resources,
            &self.prompts,
            &self.completions,
            &self.logging,
            &self.tasks,
        ]
    }

    fn is_ready(&self) -> bool {
        self.ready.as_ref().is_none_or(|ready| *ready.borrow())
    }

    /// Waits for the toolset's first load, then drops the changes it queued in
    /// `changes`: `tools/list` waits for that load, so they need no notice.
    /// Each is sent before its plugin counts as loaded, so once the load is
    /// done they are all queued. (Checking readiness per change raced with the
    /// last plugin's, and a `list_changed` landing right after the first
    /// `tools/list` broke clients that close at once, e.g.
    /// langchain-mcp-adapters on mcp 1.x.) False if `stop` came first.
    async fn past_first_load(
        &self,
        changes: &mut broadcast::Receiver<ToolsetChange>,
        stop: impl std::future::Future<Output = ()>,
    ) -> bool {
        if self.is_ready() {
            return true;
        }
        tokio::select! {
            () = stop => return false,
            () = self.wait_ready() => {}
        }
        while !matches!(
            changes.try_recv(),
            Err(broadcast::error::TryRecvError::Empty | broadcast::error::TryRecvError::Closed)
        ) {}
        true
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
        let metrics = Arc::new(Metrics::new());
        let kinds = toolset.kinds();
        Self {
            shared: Arc::new(Shared {
                toolset: Box::new(toolset),
                changes: None,
                engine: None,
                name: "toolhost".to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                sessions: AtomicU64::new(0),
                ready: None,
                tools: tools::Tools {
                    progress_interval: Self::DEFAULT_PROGRESS_INTERVAL,
                    result_text: true,
                    approvals: approval::Approvals::new(
                        ApprovalKeys::generate(),
                        Self::DEFAULT_APPROVAL_TTL,
                        crate::state::StateStore::embedded(),
                    ),
                },
                resources: resources::Resources {
                    offered: features::Offered(
                        kinds.contains(Kind::Resource) || kinds.contains(Kind::ResourceTemplate),
                    ),
                },
                prompts: prompts::Prompts {
                    offered: features::Offered(kinds.contains(Kind::Prompt)),
                },
                completions: completions::Completions {
                    offered: features::Offered(
                        kinds.contains(Kind::Prompt) || kinds.contains(Kind::ResourceTemplate),
                    ),
                },
                logging: logging::Logging,
                calls: Calls::default(),
                metrics: Arc::clone(&metrics),
                observers: Arc::new([Arc::new(crate::metrics::Observer(metrics)) as _]),
                tasks: tasks::Tasks::new(crate::state::StateStore::embedded().tasks()),
                direct: http::direct::Sessions::default(),
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

    /// Adds an observer of every call the server runs (an
    /// [`AuditLog`](crate::audit::AuditLog), a tracer), beside the server's
    /// own metrics.
    pub fn with_observer(mut self, observer: Arc<dyn crate::toolset::CallObserver>) -> Self {
        let shared = self.shared_mut();
        let mut observers = shared.observers.to_vec();
        observers.push(observer);
        shared.observers = observers.into();
        self
    }

    /// Frees each session's invocation state when the session ends. Every
    /// session is one invocation: its calls share scratch state.
    pub fn with_engine(mut self, engine: &Engine) -> Self {
        let shared = self.shared_mut();
        shared.engine = Some(engine.clone());
        // A call that is its own invocation frees its state when it ends.
        let mut observers = shared.observers.to_vec();
        observers.push(Arc::new(crate::toolset::OwnInvocations::new(engine)));
        shared.observers = observers.into();
        // Task records live where invocation state does: in Redis, when the
        // engine's state is there, so every replica sees them.
        shared.tasks.store = engine.state().tasks();
        // Approvals seal the epoch of the store their use is recorded in.
        let approvals = &shared.tools.approvals;
        shared.tools.approvals = approval::Approvals::new(
            approvals.keys().clone(),
            approvals.ttl(),
            engine.state().clone(),
        );
        self
    }

    /// The default of [`McpServer::with_task_ttl`]: one hour.
    pub const DEFAULT_TASK_TTL: Duration = tasks::Tasks::DEFAULT_TTL;

    /// Whether a long-running tool runs as an MCP task (the Tasks extension
    /// of MCP 2026-07-28, SEP-2663) for a client that declares the extension
    /// on its `tools/call` (default: yes). Off, the extension is not
    /// advertised, `tasks/*` are unknown methods, and every call is a plain
    /// one. Task records live in the engine's state store
    /// ([`McpServer::with_engine`]; in Redis, every replica serves every
    /// task), else in this process.
    pub fn with_tasks(mut self, enabled: bool) -> Self {
        self.shared_mut().tasks.enabled = enabled;
        self
    }

    /// How long a task's record is kept after its last change (default
    /// [`McpServer::DEFAULT_TASK_TTL`]); its owner refreshes it while the
    /// call runs, so this bounds how long a finished task's result can still
    /// be read.
    pub fn with_task_ttl(mut self, ttl: Duration) -> Self {
        self.shared_mut().tasks.ttl = ttl;
        self
    }

    /// The default of [`McpServer::with_approval_ttl`]: ten minutes.
    pub const DEFAULT_APPROVAL_TTL: Duration = Duration::from_secs(600);

    /// The keys that seal approval states on MCP 2026-07-28, where a call
    /// that needs confirmation answers `InputRequiredResult` and the client
    /// retries with the answer. Replicas behind one load balancer need the
    /// same keys; without this call each process makes its own, and an
    /// approval can only be answered to the process that asked. They also
    /// need the same state store ([`McpServer::with_engine`]'s): an approval
    /// runs only where its use is recorded in the store it was asked in
    /// ([`StateStore::epoch`](crate::state::StateStore::epoch)).
    pub fn with_approval_keys(mut self, keys: ApprovalKeys) -> Self {
        let approvals = &self.shared.tools.approvals;
        let (ttl, store) = (approvals.ttl(), approvals.store().clone());
        self.shared_mut().tools.approvals = approval::Approvals::new(keys, ttl, store);
        self
    }

    /// How long a client may take to answer an approval question on MCP
    /// 2026-07-28 (default [`McpServer::DEFAULT_APPROVAL_TTL`]); a later
    /// answer is refused and the call must be made again.
    pub fn with_approval_ttl(mut self, ttl: Duration) -> Self {
        let approvals = &self.shared.tools.approvals;
        let (keys, store) = (approvals.keys().clone(), approvals.store().clone());
        self.shared_mut().tools.approvals = approval::Approvals::new(keys, ttl, store);
        self
    }

    /// The default of [`McpServer::with_progress_interval`].
    pub const DEFAULT_PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

    /// The shortest time between two progress notifications of one call
    /// (default [`McpServer::DEFAULT_PROGRESS_INTERVAL`]): chunks that arrive
    /// sooner are merged into the next notification, which carries their text
    /// and the latest chunk count. Zero sends one notification per chunk.
    pub fn with_progress_interval(mut self, interval: Duration) -> Self {
        self.shared_mut().tools.progress_interval = interval;
        self
    }

    /// Whether a tool's JSON result, sent as `structuredContent`, also goes
    /// out serialized in a text block (default: yes). The MCP specification
    /// asks this of a tool returning structured content (SHOULD), for clients
    /// that read only `content`; a server whose clients all read
    /// `structuredContent` can turn it off and send each result once. Parts
    /// and the text of streamed text results are sent either way.
    pub fn with_result_text(mut self, enabled: bool) -> Self {
        self.shared_mut().tools.result_text = enabled;
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
        let (read, write) = stdio::stdio();
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
        let session = Session::new(self.shared.clone(), "stdio");
        let (transport, writer) = stdio::StdioTransport::new(read, write, closed.clone());
        let transport = transport.calling(session.clone());
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
    /// Two probes answer without a token: `GET /healthz` (200 while the
    /// process serves) and `GET /readyz` (200 once the toolset's first load
    /// has finished, see [`McpServer::with_ready`]; 503 before, and while a
    /// stop drains). `GET /metrics` answers the server's metrics in the
    /// Prometheus text format (OpenMetrics); it needs the bearer token when
    /// one is set.
    ///
    /// When `shutdown` completes the server drains: it stops accepting
    /// connections, closes idle ones, refuses new `tools/call`s, and lets the
    /// calls still running finish for up to [`HttpOptions::drain_timeout`];
    /// then it cuts the calls left (their guests stopped, each answered with
    /// a JSON-RPC error whose `data` names [`STOPPING`]), ends the sessions
    /// and returns within a few seconds.
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
        let mut config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(hosts.clone())
            .with_allowed_origins(origins)
            .with_cancellation_token(stop.child_token())
            // A stateless (2026-07-28) request answered in one message gets
            // it as a JSON body, not an SSE stream of one event (the spec
            // lets the server choose); one that sends more streams them.
            .with_json_response(true);
        // Replicas sharing a state store share 2025-11-25 sessions too.
        let fleet_state = self
            .shared
            .engine
            .as_ref()
            .map(|engine| engine.state().clone())
            .filter(crate::state::StateStore::is_shared);
        let records = fleet_state
            .as_ref()
            .map(|state| Arc::new(http::fleet::Records::new(state.sessions())));
        if let Some(records) = &records {
            config.session_store = Some(records.clone());
        }
        let shared = self.shared.clone();
        let mut sessions = LocalSessionManager::default();
        sessions.session_config.keep_alive = Some(options.session_idle_timeout);
        // Every request stream opens with a priming event whose ID names it.
        sessions.session_config.sse_retry = Some(http::resume::RETRY);
        let tag = fleet_state.as_ref().map(|_| http::route::new_tag());
        let streams = Arc::new(http::resume::Streams::new(
            self.shared.metrics.clone(),
            tag.clone(),
        ));
        let resume = http::resume::ResumeOptions {
            window: options.stream_resume,
            close_after: options.stream_close_after,
        };
        let sessions = Arc::new(http::resume::Resumable::new(
            sessions,
            streams.clone(),
            resume,
        ));
        let fleet = records.as_ref().map(|records| {
            let idle = options.session_idle_timeout;
            Arc::new(http::fleet::Fleet::new(
                records.clone(),
                sessions.clone(),
                idle,
            ))
        });
        // What a session's client sends for a call on another replica goes there.
        let routed = Arc::new(http::route::Routed::new(sessions, tag.zip(fleet_state)));
        routed.listen(&self.shared, stop.child_token());
        let service = StreamableHttpService::new(
            move || Ok(Session::new(shared.clone(), "http")),
            routed,
            config,
        );
        let authenticator = options
            .authenticator
            .clone()
            .unwrap_or_else(|| Arc::new(Unverified));
        let ready = self.shared.clone();
        let answers = self.shared.clone();
        let guarded = self.shared.clone();
        // Probes for load balancers and orchestrators: no token, no session.
        let mut probes = axum::Router::new()
            .route("/healthz", axum::routing::get(|| async { "alive\n" }))
            .route(
                "/readyz",
                axum::routing::get(move || {
                    let ready = ready.clone();
                    async move { http::readiness(&ready).await }
                }),
            );
        // An OAuth resource server's metadata (RFC 9728): no token, as
        // clients read it to learn where to get one.
        if let Some(resource) = authenticator.protected_resource() {
            let document = resource.document().to_string();
            for path in resource.metadata_paths() {
                let document = document.clone();
                probes = probes.route(
                    &path,
                    axum::routing::get(move || {
                        std::future::ready((
                            [(axum::http::header::CONTENT_TYPE, "application/json")],
                            document.clone(),
                        ))
                    }),
                );
            }
        }
        let metrics = self.shared.clone();
        let direct = self.shared.clone();
        let direct_options = http::direct::Options {
            streams: streams.clone(),
            resume,
            session_idle_timeout: options.session_idle_timeout,
            stateless: Arc::new(http::stateless::Stateless::new(
                &self.shared,
                &hosts,
                stop.child_token(),
            )),
        };
        let app = axum::Router::new()
            .nest_service("/mcp", service)
            .route(
                "/metrics",
                axum::routing::get(move || std::future::ready(http::metrics(&metrics))),
            )
            .layer(axum::middleware::from_fn(move |request, next| {
                http::direct::serve(direct.clone(), direct_options.clone(), request, next)
            }));
        let app = match fleet {
            Some(fleet) => {
                let shared = self.shared.clone();
                app.layer(axum::middleware::from_fn(move |request, next| {
                    http::fleet::gate(shared.clone(), fleet.clone(), request, next)
                }))
            }
            None => app,
        };
        let app = app
            .layer(axum::middleware::from_fn(move |request, next| {
                http::watch_disconnect(answers.clone(), streams.clone(), request, next)
            }))
            .layer(axum::middleware::from_fn(move |request, next| {
                http::authorize(Arc::clone(&authenticator), guarded.clone(), request, next)
            }))
            .merge(probes);
        let app = match options.replica.clone() {
            Some(name) => app.layer(axum::middleware::map_response(
                move |mut response: axum::response::Response| {
                    let name = name.clone();
                    async move {
                        response.headers_mut().insert(REPLICA_HEADER, name);
                        response
                    }
                },
            )),
            None => app,
        };
        let limits = http::Limits {
            max_connections: options.max_connections,
            max_connections_per_peer: options.per_peer(),
            header_read_timeout: options.header_read_timeout,
            idle_timeout: options.idle_timeout,
            drain_timeout: options.drain_timeout,
        };
        count_changes(&self.shared, stop.clone());
        http::serve(listener, app, limits, shutdown, stop, &self.shared.calls)
            .await
            .map_err(|error| McpError::Http { error })
    }
}

/// Counts the toolset's changes in the metrics until `stop`.
fn count_changes(shared: &Arc<Shared>, stop: CancellationToken) {
    let Some(changes) = &shared.changes else {
        return;
    };
    let mut changes = changes.resubscribe();
    let shared = Arc::downgrade(shared);
    tokio::spawn(async move {
        loop {
            let change = tokio::select! {
                () = stop.cancelled() => return,
                change = changes.recv() => change,
            };
            let Some(shared) = shared.upgrade() else {
                return;
            };
            match change {
                Ok(change) => shared.metrics.changed(&change),
                Err(broadcast::error::RecvError::Lagged(n)) => shared.metrics.missed_changes(n),
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    });
}
