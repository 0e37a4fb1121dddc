//! One MCP session: who the client is and the context its calls run in; it
//! routes each request to its feature area (`features/`) and tells its
//! client of list changes.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Instant;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
    CompleteResult, CustomRequest, CustomResult, ErrorCode, GetPromptRequestParams,
    GetPromptResponse, GetTaskParams, GetTaskResult, InitializeRequestParams, InitializeResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, RequestMetaObject,
    ServerCapabilities, ServerConfig, ServerNotification, SubscribeRequestParams,
    SubscriptionFilter, UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};
use tokio_util::sync::CancellationToken;

use super::approval::random_id;
use super::features::logging::SessionLevel;
use super::features::resources::Subscriptions;
use super::features::{self, List};
use super::revision::Revision;
use super::trace::{self, Target, Traced};
use super::{Shared, auth, transport};
use sha2::{Digest as _, Sha256};

mod changes;
pub(super) mod settings;

use crate::Engine;
use crate::hex::hex;
use crate::toolset::{Context, Identity};
use changes::forward_list_changes;

/// The request `_meta` key a client names its invocation with: calls that
/// carry the same value share the guest's scratch (`temp:`) state, on
/// whichever server or replica they land.
pub(super) const INVOCATION_META: &str = "dev.toolhost/invocation";

/// The longest invocation name accepted, in bytes.
const MAX_INVOCATION_LEN: usize = 128;

/// The invocation a request names in `_meta`, checked: 1 to 128 printable
/// ASCII characters without spaces.
fn named_invocation(meta: &RequestMetaObject) -> Result<Option<String>, ErrorData> {
    let Some(value) = meta.get(INVOCATION_META) else {
        return Ok(None);
    };
    let name = value.as_str().unwrap_or_default();
    let valid = !name.is_empty()
        && name.len() <= MAX_INVOCATION_LEN
        && name.bytes().all(|b| b.is_ascii_graphic());
    if !valid {
        return Err(ErrorData::invalid_params(
            format!(
                "`_meta.{INVOCATION_META}` must be a string of 1 to {MAX_INVOCATION_LEN} \
                 printable ASCII characters without spaces"
            ),
            None,
        ));
    }
    Ok(Some(name.to_owned()))
}

/// Whether a call's answer is a tool's error (a result with `isError`).
fn is_tool_error(response: &CallToolResponse) -> bool {
    matches!(response, CallToolResponse::Complete(result) if result.is_error == Some(true))
}

/// The name of the HTTP session `id` in logs, call IDs and as its
/// invocation: the same on every replica, and not the ID (a bearer secret).
pub(super) fn http_session_name(id: &str) -> String {
    format!("mcp-http-{}", crate::state::sessions::public_name(id))
}

/// One MCP session: one client connection (stdio) or `Mcp-Session-Id` (HTTP).
#[derive(Clone)]
pub(super) struct Session {
    shared: Arc<Shared>,
    state: Arc<SessionState>,
}

/// A [`Session`] that may have ended.
pub(super) struct WeakSession {
    shared: Weak<Shared>,
    state: Weak<SessionState>,
}

impl WeakSession {
    /// The session, unless it ended.
    pub(super) fn upgrade(&self) -> Option<Session> {
        Some(Session {
            shared: self.shared.upgrade()?,
            state: self.state.upgrade()?,
        })
    }

    /// Whether the session has not ended.
    pub(super) fn is_alive(&self) -> bool {
        self.state.strong_count() > 0
    }
}

struct SessionState {
    /// Its name in logs, call IDs and as its invocation: for an HTTP
    /// session, made from its `Mcp-Session-Id` when it is initialized (so
    /// every replica that serves it names it alike); else random, at first
    /// use.
    id: OnceLock<String>,
    transport: &'static str,
    /// Whether its invocation's state outlives this copy of the session:
    /// an HTTP session when the state store is shared (other replicas may
    /// serve it), whose state its `DELETE` or the state's TTL ends.
    shared_invocation: AtomicBool,
    /// Set once the client has initialized: the identity its calls carry.
    identity: OnceLock<Identity>,
    /// Set once the client has initialized: the session's client.
    peer: OnceLock<Peer<RoleServer>>,
    /// The issuer and subject of the principal whose first request opened
    /// the session: no other principal may use it (a stolen session ID
    /// reaches nothing).
    owner: OnceLock<(String, String)>,
    /// Cancelled when the session ends: stops its change forwarder.
    ended: CancellationToken,
    engine: Option<Engine>,
    /// Whether a request ran under the session's own invocation (2025-11-25
    /// without a named one). A 2026-07-28 "session" lives for one request
    /// and never does: ending it then would cost a Redis round trip for nothing.
    invocation_used: AtomicBool,
    /// The level of guest log messages the client asked for, if it did.
    log_level: SessionLevel,
    /// The resources its client subscribed to (`resources/subscribe`).
    subscriptions: Arc<Subscriptions>,
    /// When the session began (`mcp.server.session.duration`).
    started: Instant,
    /// Where its duration is recorded.
    metrics: Arc<crate::metrics::Metrics>,
}

impl SessionState {
    fn id(&self) -> &str {
        self.id
            .get_or_init(|| format!("mcp-{}-{}", self.transport, random_id()))
    }
}

impl Drop for SessionState {
    fn drop(&mut self) {
        self.ended.cancel();
        if let (Some(engine), Some(id)) = (&self.engine, self.id.get())
            && *self.invocation_used.get_mut()
        {
            if *self.shared_invocation.get_mut() {
                engine.leave_invocation(id);
            } else {
                engine.end_invocation(id);
            }
        }
        // Only an initialized session (2025-11-25) was one to its client: a
        // stateless request's lives for that request, and logging each would
        // be a line per call.
        if self.peer.get().is_some() {
            let seconds = self.started.elapsed().as_secs_f64();
            self.metrics.session_ended(self.transport, seconds);
            tracing::info!(session = %self.id(), "MCP session ended");
        }
    }
}

impl Session {
    pub(super) fn new(shared: Arc<Shared>, transport: &'static str) -> Self {
        shared.sessions.fetch_add(1, Ordering::Relaxed);
        let state = SessionState {
            id: OnceLock::new(),
            transport,
            shared_invocation: AtomicBool::new(false),
            identity: OnceLock::new(),
            peer: OnceLock::new(),
            owner: OnceLock::new(),
            ended: CancellationToken::new(),
            engine: shared.engine.clone(),
            invocation_used: AtomicBool::new(false),
            log_level: SessionLevel::default(),
            subscriptions: Arc::default(),
            started: Instant::now(),
            metrics: Arc::clone(&shared.metrics),
        };
        Self {
            shared,
            state: Arc::new(state),
        }
    }

    /// What every session of the server shares (an `Arc`, for a task that
    /// outlives the request).
    pub(super) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The resources its client subscribed to, and the session's end and
    /// engine (what forwards their updates needs).
    pub(super) fn subscriptions(
        &self,
    ) -> (&Arc<Subscriptions>, &CancellationToken, Option<&Engine>) {
        (
            &self.state.subscriptions,
            &self.state.ended,
            self.state.engine.as_ref(),
        )
    }

    /// The level of guest log messages its client asked for (`logging/setLevel`).
    pub(super) fn log_level(&self) -> &SessionLevel {
        &self.state.log_level
    }

    /// Begins tracing a request of `method` on this session (`trace.rs`).
    fn trace(
        &self,
        context: &RequestContext<RoleServer>,
        method: &'static str,
        target: Target<'_>,
    ) -> Traced<'_> {
        trace::request(
            context,
            (method, target),
            self.state.id(),
            self.state.transport,
            &self.shared.metrics,
        )
    }

    /// The session's client, once it has initialized (2025-11-25 and before).
    pub(super) fn peer(&self) -> Option<&Peer<RoleServer>> {
        self.state.peer.get()
    }

    /// Whether `principal` may act on this session: it opened it (or nobody
    /// has claimed it yet).
    pub(super) fn is_owned_by(&self, principal: &crate::toolset::Principal) -> bool {
        self.state.owner.get().is_none_or(|(issuer, subject)| {
            *issuer == principal.issuer && *subject == principal.subject
        })
    }

    /// A handle that does not keep the session alive.
    pub(super) fn downgrade(&self) -> WeakSession {
        WeakSession {
            shared: Arc::downgrade(&self.shared),
            state: Arc::downgrade(&self.state),
        }
    }

    /// The identity calls carry: set once the client has initialized
    /// (2025-11-25), else made from what this request says (2026-07-28).
    /// Each carries the request's principal (`auth.rs`), its roles among the
    /// identity's.
    fn identity(&self, request: &RequestContext<RoleServer>) -> Identity {
        let mut identity = match self.state.identity.get() {
            Some(identity) => identity.clone(),
            None => self.new_identity(request.client_info().map(|info| info.name)),
        };
        let principal = auth::principal(request);
        identity.roles.extend(principal.roles.iter().cloned());
        identity.principal = Some(principal);
        identity
    }

    fn new_identity(&self, client: Option<String>) -> Identity {
        let mut identity = Identity {
            session: Some(self.state.id().to_owned()),
            ..Identity::default()
        };
        identity
            .attributes
            .insert("transport".to_owned(), self.state.transport.to_owned());
        if let Some(client) = client {
            identity.attributes.insert("client".to_owned(), client);
        }
        identity
    }

    /// The call's context: a call ID unique across replicas, and its
    /// invocation: the one named in `_meta`, else the session's (2025-11-25),
    /// else the call's own (2026-07-28, sessionless).
    pub(super) fn context(
        &self,
        request: &RequestContext<RoleServer>,
        revision: Revision,
    ) -> Result<Context, ErrorData> {
        let call_id = self.request_id(request);
        let principal = self.owned(request)?;
        // rmcp moves the request's `_meta` into the context before the handler runs.
        let invocation = match named_invocation(&request.meta)? {
            // Each principal names its own invocations: another caller
            // naming the same one reaches other state.
            Some(named) if principal.is_anonymous() => named,
            Some(named) => format!("{named}@{}", &hex(&Sha256::digest(principal.key()))[..16]),
            None if revision.call_is_its_invocation() => call_id.clone(),
            None => {
                self.state.invocation_used.store(true, Ordering::Relaxed);
                self.state.id().to_owned()
            }
        };
        Ok(Context::new()
            .with_call_id(call_id)
            .with_invocation_id(invocation)
            .with_identity(self.identity(request))
            .with_observers(Arc::clone(&self.shared.observers)))
    }

    /// A request's ID unique across replicas: `session-request`.
    fn request_id(&self, request: &RequestContext<RoleServer>) -> String {
        format!("{}-{}", self.state.id(), request.id)
    }

    /// The context of a read or get of a catalog item (a resource, a
    /// prompt): an ID for the request and the caller's identity; no
    /// invocation, since nothing runs in the sandbox.
    pub(super) fn item_context(
        &self,
        request: &RequestContext<RoleServer>,
    ) -> Result<Context, ErrorData> {
        self.owned(request)?;
        Ok(Context::new()
            .with_call_id(self.request_id(request))
            .with_identity(self.identity(request)))
    }

    /// The request's principal, if the session is its own: the first
    /// request's principal owns the session, and another's requests on it
    /// are refused.
    fn owned(
        &self,
        request: &RequestContext<RoleServer>,
    ) -> Result<Arc<crate::toolset::Principal>, ErrorData> {
        let principal = auth::principal(request);
        // The first request claims the session.
        self.state
            .owner
            .get_or_init(|| (principal.issuer.clone(), principal.subject.clone()));
        if !self.is_owned_by(&principal) {
            tracing::warn!(
                target: "toolhost::auth",
                session = %self.state.id(),
                "refused a request on a session another caller opened"
            );
            return Err(ErrorData::invalid_request(
                "this MCP session belongs to another caller; start a session of your own",
                None,
            ));
        }
        Ok(principal)
    }

    /// The session begins, once: when it answers `initialize` (over HTTP
    /// the client's `notifications/initialized` may reach another replica,
    /// or come again to one that took the session up), else at
    /// `initialized`. Its calls carry the client's identity from now on,
    /// its client hears of list changes, and its HTTP `tools/call`s may run
    /// without rmcp's hops (`http::direct`).
    fn begin(&self, peer: &Peer<RoleServer>, extensions: &rmcp::model::Extensions) {
        let client = peer.peer_info().map(|info| info.client_info.name.clone());
        let identity = self.new_identity(client);
        let client = identity.attributes.get("client").cloned();
        if self.state.identity.set(identity).is_err() {
            return;
        }
        let _ = self.state.peer.set(peer.clone());
        if let Some(id) = transport::http_session_id(extensions) {
            self.shared.direct.register(id, self);
            // Taken up from another replica: what its client set there.
            settings::load_soon(self, id);
        }
        tracing::info!(session = %self.state.id(), client = client.as_deref().unwrap_or("?"), "MCP session initialized");
        self.forward_changes(peer.clone());
    }
}

impl ServerHandler for Session {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::default();
        for feature in self.shared.features() {
            feature.advertise(&mut capabilities);
        }
        let mut config = ServerConfig::new(capabilities).with_instructions(
            "Tools run as sandboxed WebAssembly components; each call gets a fresh instance.",
        );
        config.server_info.name = self.shared.name.clone();
        config.server_info.version = self.shared.version.clone();
        config
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        if let Some(id) = transport::http_session_id(&context.extensions) {
            let _ = self.state.id.set(http_session_name(id));
            let shared = self
                .state
                .engine
                .as_ref()
                .is_some_and(|e| e.state().is_shared());
            self.state
                .shared_invocation
                .store(shared, Ordering::Relaxed);
        }
        let initialize = async {
            // The session's owner: whoever initialized it (a replica taking
            // up the session replays its `initialize` for a request of the
            // owner's, `http::fleet`).
            self.owned(&context)?;
            context.peer.set_peer_info(request.clone());
            let result = self.negotiate_initialize(&request)?;
            self.begin(&context.peer, &context.extensions);
            Ok(result)
        };
        self.trace(&context, "initialize", Target::None)
            .run(initialize, |_| false)
            .await
    }

    /// A request of a method rmcp serves whose `params` do not fit its
    /// types reaches here as a custom request (rmcp's untagged reading):
    /// invalid params (−32602), not "method not found", on every transport.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let CustomRequest { method, params, .. } = request;
        if super::request::is_known_method(&method) {
            let why = super::request::params_problem(&method, params);
            let message = super::request::invalid_params_message(&method, &why);
            return Err(ErrorData::invalid_params(message, None));
        }
        Err(ErrorData::new(ErrorCode::METHOD_NOT_FOUND, method, None))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.begin(&context.peer, &context.extensions);
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.trace(&context, "tools/list", Target::None)
            .run(features::tools::list(self, context), |_| false)
            .await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.trace(&context, "tools/call", Target::Tool(&request.name))
            .run(features::tools::call(self, request, context), is_tool_error)
            .await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.trace(&context, "resources/list", Target::None)
            .run(features::resources::list(self, context), |_| false)
            .await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.trace(&context, "resources/templates/list", Target::None)
            .run(features::resources::templates(self, context), |_| false)
            .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.trace(&context, "resources/read", Target::Resource(&request.uri))
            .run(features::resources::read(self, request, context), |_| false)
            .await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.trace(&context, "prompts/list", Target::None)
            .run(features::prompts::list(self, context), |_| false)
            .await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.trace(&context, "prompts/get", Target::Prompt(&request.name))
            .run(features::prompts::get(self, request, context), |_| false)
            .await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        features::resources::subscribe(self, request, context).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        features::resources::unsubscribe(self, request, context).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.trace(&context, "completion/complete", Target::None)
            .run(
                features::completions::complete(self, request, context),
                |_| false,
            )
            .await
    }

    #[expect(
        deprecated,
        reason = "rmcp marks MCP logging deprecated (SEP-2577); 2025-11-25 clients still use it"
    )]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        features::logging::set_level(self, request, &context).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let principal = auth::principal(&context).key();
        self.shared.tasks.get(&request.task_id, &principal).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let principal = auth::principal(&context).key();
        self.shared
            .tasks
            .update(&request.task_id, &principal, &request.input_responses)
            .await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let principal = auth::principal(&context).key();
        self.shared.tasks.cancel(&request.task_id, &principal).await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // The lists the feature areas serve, when the set can change, and the
        // resources asked for when plugins can say they changed (rmcp keeps
        // of it what the client asked for and the capabilities say).
        let updates = self.shared.resources.offered.0 && self.state.engine.is_some();
        if self.shared.changes.is_none() && !updates {
            return None;
        }
        let mut accepted = SubscriptionFilter::new();
        if self.shared.changes.is_some() {
            for list in self.shared.features().iter().filter_map(|f| f.list()) {
                list.accept(&mut accepted);
            }
        }
        if updates {
            accepted.resource_subscriptions = requested.resource_subscriptions.clone();
        }
        Some(accepted)
    }

    /// 2026-07-28's `subscriptions/listen`: list changes and the updates of
    /// the resources it names, on the listening request's stream, until the
    /// client cancels it or hangs up.
    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let listening = subscription.request_context().id.to_string();
        tracing::info!(session = %self.state.id(), request = %listening, "client listens for list changes and resource updates");
        let sink = &subscription;
        let send = |notification: ServerNotification| async move {
            sink.sink()
                .send(notification)
                .await
                .map_err(|e| e.to_string())
        };
        let accepted = |list: List| list.accepted_by(subscription.accepted());
        let session = self.state.id();
        let request = Some(listening.as_str());
        // Each part ends only with the listen: one that has nothing (more)
        // to send waits for the others.
        let lists = async {
            if let Some(changes) = &self.shared.changes {
                let stop = std::future::pending::<()>();
                forward_list_changes(
                    &self.shared,
                    changes.resubscribe(),
                    stop,
                    send,
                    session,
                    request,
                    accepted,
                )
                .await;
            }
            std::future::pending::<()>().await;
        };
        let uris = subscription
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        let updates = async {
            features::resources::forward_to_listener(
                self,
                subscription.request_context(),
                &uris,
                send,
            )
            .await;
            std::future::pending::<()>().await;
        };
        tokio::select! {
            () = subscription.cancelled() => {}
            _ = transport::hung_up(subscription.request_context()) => {}
            () = lists => {}
            () = updates => {}
        }
        Ok(())
    }
}
