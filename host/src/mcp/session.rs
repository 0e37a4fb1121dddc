//! One MCP session: who the client is, the tools it sees and calls, the
//! questions it is asked, and the list changes it is told about.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    ElicitRequestParams, ElicitationAction, GetTaskParams, GetTaskResult, ListToolsResult,
    PaginatedRequestParams, RequestMetaObject, ServerCapabilities, ServerConfig,
    SubscriptionFilter, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::approval::{approval_form, not_approved, question, random_id, unanswered};
use super::convert::{error_result, mcp_error_names, mcp_names, mcp_tool, output_result};
use super::revision::Revision;
use super::tasks::{self, CreateTaskOr};
use super::{Shared, auth, http, progress};
use crate::Engine;
use crate::error::CallError;
use crate::tool::Prepared;
use crate::toolset::{
    Approver, BoxFuture, ConfirmationRequest, Context, Decision, Identity, NoApprover, Started,
    Tool, ToolsetChange, drive,
};

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

/// One MCP session: one client connection (stdio) or `Mcp-Session-Id` (HTTP).
#[derive(Clone)]
pub(super) struct Session {
    shared: Arc<Shared>,
    state: Arc<SessionState>,
}

struct SessionState {
    id: String,
    transport: &'static str,
    /// Set once the client has initialized: the identity its calls carry.
    identity: OnceLock<Identity>,
    /// Set once the client has initialized: the session's client.
    peer: OnceLock<Peer<RoleServer>>,
    /// Cancelled when the session ends: stops its change forwarder.
    ended: CancellationToken,
    /// Cancelled when the client's end closes (stdio): stops running calls.
    disconnected: CancellationToken,
    engine: Option<Engine>,
    /// Whether a request ran under the session's own invocation (2025-11-25
    /// without a named one). A 2026-07-28 "session" lives for one request
    /// and never does: ending it then would cost a Redis round trip for nothing.
    invocation_used: AtomicBool,
}

impl Drop for SessionState {
    fn drop(&mut self) {
        self.ended.cancel();
        if let Some(engine) = &self.engine
            && *self.invocation_used.get_mut()
        {
            engine.end_invocation(&self.id);
        }
        tracing::info!(session = %self.id, "MCP session ended");
    }
}

impl Session {
    pub(super) fn new(
        shared: Arc<Shared>,
        transport: &'static str,
        disconnected: CancellationToken,
    ) -> Self {
        shared.sessions.fetch_add(1, Ordering::Relaxed);
        // Unguessable and unique across replicas: it names the session's
        // invocation, whose state may live in a store replicas share.
        let state = SessionState {
            id: format!("mcp-{transport}-{}", random_id()),
            transport,
            identity: OnceLock::new(),
            peer: OnceLock::new(),
            ended: CancellationToken::new(),
            disconnected,
            engine: shared.engine.clone(),
            invocation_used: AtomicBool::new(false),
        };
        Self {
            shared,
            state: Arc::new(state),
        }
    }

    /// The session's client, once it has initialized (2025-11-25 and before).
    pub(super) fn peer(&self) -> Option<&Peer<RoleServer>> {
        self.state.peer.get()
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
            session: Some(self.state.id.clone()),
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
    fn context(
        &self,
        request: &RequestContext<RoleServer>,
        revision: Revision,
    ) -> Result<Context, ErrorData> {
        let call_id = format!("{}-{}", self.state.id, request.id);
        // rmcp moves the request's `_meta` into the context before the handler runs.
        let invocation = match named_invocation(&request.meta)? {
            Some(named) => named,
            None if revision.call_is_its_invocation() => call_id.clone(),
            None => {
                self.state.invocation_used.store(true, Ordering::Relaxed);
                self.state.id.clone()
            }
        };
        Ok(Context::new()
            .with_call_id(call_id)
            .with_invocation_id(invocation)
            .with_identity(self.identity(request))
            .with_observers(Arc::clone(&self.shared.observers)))
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
        let changes = changes.resubscribe();
        let ended = self.state.ended.clone();
        let session = self.state.id.clone();
        let shared = Arc::clone(&self.shared);
        tokio::spawn(async move {
            let send = || {
                let peer = peer.clone();
                async move {
                    if peer.is_transport_closed() {
                        return Err("the transport is closed".to_owned());
                    }
                    peer.notify_tool_list_changed()
                        .await
                        .map_err(|e| e.to_string())
                }
            };
            forward_list_changes(&shared, changes, ended.cancelled(), send, &session, None).await;
        });
    }

    /// The tool of that name; while the first load runs, a tool not there yet
    /// is waited for until it joins or the load ends (its plugin may be the
    /// one still loading).
    async fn resolve_when_loaded(&self, cx: &Context, name: &str) -> Option<Arc<dyn Tool>> {
        let found = self.resolve(cx, name);
        let Some(ready) = &self.shared.ready else {
            return found;
        };
        if found.is_some() {
            return found;
        }
        let mut ready = ready.clone();
        // Subscribed before the loop's first resolve: no change is missed.
        let mut changes = self.shared.changes.as_ref().map(|c| c.resubscribe());
        loop {
            // Read before the resolve: a load that ends between the two
            // (the tool joining with it) is then seen by the resolve.
            let loaded = *ready.borrow_and_update();
            if let Some(tool) = self.resolve(cx, name) {
                return Some(tool);
            }
            if loaded {
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

    /// Runs a call. On 2025-11-25 a confirmation is asked in the call (an
    /// elicitation request); on 2026-07-28 the call answers
    /// `InputRequiredResult` and the client's retry resumes it (see
    /// `approval.rs`).
    async fn call(
        &self,
        tool: Arc<dyn Tool>,
        cx: Context,
        arguments: Result<Prepared, CallError>,
        request: &RequestContext<RoleServer>,
        revision: Revision,
    ) -> Result<CallToolResponse, ErrorData> {
        let started = if revision.asks_by_retry() {
            drive(&*tool, &cx, arguments, &NoApprover).await
        } else {
            let approver = Elicit {
                peer: &request.peer,
            };
            drive(&*tool, &cx, arguments, &approver).await
        };
        let result = match started {
            Ok(Started::NeedsApproval(ask)) => {
                // The tool did not run.
                return self.ask(&ask, request).map_or_else(
                    |err| error_result(err).map(Into::into),
                    |asked| Ok(asked.into()),
                );
            }
            Ok(Started::Output(output)) => Ok(output_result(output, self.shared.result_text)),
            Ok(Started::Stream(stream)) => {
                let name = &tool.spec().name;
                let interval = self.shared.progress_interval;
                let result_text = self.shared.result_text;
                progress::pump(stream, name, request, interval, result_text).await
            }
            Err(err) => error_result(err),
        };
        result.map(Into::into)
    }

    /// The Multi Round-Trip answer that asks the client for an approval.
    fn ask(
        &self,
        ask: &ConfirmationRequest,
        request: &RequestContext<RoleServer>,
    ) -> Result<rmcp::model::InputRequiredResult, CallError> {
        let can_ask = request
            .client_capabilities()
            .and_then(|caps| caps.elicitation)
            .is_some_and(|e| e.form.is_some() || e.url.is_none());
        if !can_ask {
            return Err(cannot_ask(ask));
        }
        let asked = self.shared.approvals.ask(ask)?;
        tracing::info!(tool = %ask.tool, call = %ask.call_id, "asked the client for approval (input required)");
        Ok(asked)
    }

    /// A 2026-07-28 retry that carries an approval's state: the context to
    /// run it in (the sealed call ID, with the decision), or a refusal.
    fn resume(
        &self,
        tool: &dyn Tool,
        cx: Context,
        arguments: &Result<Prepared, CallError>,
        params: &CallToolRequestParams,
    ) -> Result<Context, CallToolResult> {
        let Some(state) = &params.request_state else {
            return Ok(cx);
        };
        let refuse = |message: String| {
            tracing::info!(tool = %tool.spec().name, call = %cx.call_id(), "approval refused: {message}");
            CallToolResult::error(vec![ContentBlock::text(message)])
        };
        // The arguments as they will run, so the digest matches what was asked.
        let prepared = match arguments {
            Ok(prepared) => prepared.arguments(),
            Err(err) => return Err(refuse(err.to_string())),
        };
        match self.shared.approvals.resume(
            &tool.spec().name,
            prepared,
            state,
            params.input_responses.as_ref(),
        ) {
            Ok(resumed) => Ok(cx
                .with_call_id(resumed.call_id.clone())
                .with_decision(resumed.call_id, resumed.decision)),
            Err(message) => Err(refuse(message)),
        }
    }
}

/// Why a call that needs approval cannot be asked about here.
fn cannot_ask(ask: &ConfirmationRequest) -> CallError {
    CallError::ConfirmationUnavailable {
        tool: ask.tool.clone(),
        hint: ask.hint.clone(),
        reason: "this MCP client cannot ask (it does not support elicitation); \
                 approve it in a client that does, or remove the tool from [confirm] \
                 in the server's configuration"
            .to_owned(),
    }
}

/// Asks the human through the client's form elicitation.
struct Elicit<'a> {
    peer: &'a Peer<RoleServer>,
}

impl Approver for Elicit<'_> {
    fn decide<'a>(
        &'a self,
        _cx: &'a Context,
        ask: &'a ConfirmationRequest,
    ) -> BoxFuture<'a, Result<Option<Decision>, CallError>> {
        Box::pin(async move {
            if self.peer.supported_elicitation_modes().is_empty() {
                return Err(cannot_ask(ask));
            }
            let answer = self
                .peer
                .create_elicitation(ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message: question(ask),
                    requested_schema: approval_form(ask)?,
                })
                .await;
            let answer = match answer {
                Ok(answer) => answer,
                Err(err) => {
                    tracing::warn!(tool = %ask.tool, %err, "elicitation failed");
                    return Ok(Some(Decision::reject(unanswered(&err))));
                }
            };
            let approved = answer.action == ElicitationAction::Accept
                && answer
                    .content
                    .as_ref()
                    .and_then(|c| c.get("approve"))
                    .and_then(Value::as_bool)
                    == Some(true);
            Ok(Some(if approved {
                Decision::approve(ask)
            } else {
                Decision::reject(not_approved(Some(&answer.action)))
            }))
        })
    }
}

impl ServerHandler for Session {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed();
        if self.shared.tasks.enabled {
            capabilities = capabilities.enable_tasks();
        }
        let mut config = ServerConfig::new(capabilities.build()).with_instructions(
            "Tools run as sandboxed WebAssembly components; each call gets a fresh instance.",
        );
        config.server_info.name = self.shared.name.clone();
        config.server_info.version = self.shared.version.clone();
        config
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let client = context
            .peer
            .peer_info()
            .map(|info| info.client_info.name.clone());
        let identity = self.new_identity(client);
        let client = identity.attributes.get("client").cloned();
        // Set once; a second initialized notification changes nothing.
        let _ = self.state.identity.set(identity);
        let _ = self.state.peer.set(context.peer.clone());
        tracing::info!(session = %self.state.id, client = client.as_deref().unwrap_or("?"), "MCP session initialized");
        self.forward_changes(context.peer.clone());
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.shared.wait_ready().await;
        let cx = self.context(&context, Revision::of(&context))?;
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
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Counted until answered, so that a stop can drain it.
        let _running = self.shared.calls.enter()?;
        let revision = Revision::of(&context);
        let cx = self.context(&context, revision)?;
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
        let arguments = Value::Object(request.arguments.take().unwrap_or_default());
        // Prepared once: a resumed approval is checked against them, and they run.
        let arguments = tool.prepare(&cx, arguments);
        // A 2026-07-28 retry after an approval question resumes that call.
        let cx = if revision.asks_by_retry() {
            match self.resume(&*tool, cx, &arguments, &request) {
                Ok(cx) => cx,
                Err(refused) => return Ok(refused.into()),
            }
        } else {
            cx
        };
        // A long-running tool runs as a task for a client that declared the
        // Tasks extension on this request (SEP-2663); others get the plain call.
        if self.shared.tasks.enabled && tool.spec().long_running && tasks::declared(&context) {
            let job = tasks::Job {
                tool,
                cx,
                arguments,
                principal: auth::principal(&context).key(),
                running: self.shared.calls.enter()?,
            };
            return match tasks::spawn(&self.shared, job).await? {
                CreateTaskOr::Task(task) => Ok(CallToolResponse::Task(task)),
                CreateTaskOr::Busy(refused) => Ok(refused.into()),
            };
        }
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
            ))])
            .into())
        };
        let result = tokio::select! {
            biased;
            () = cancelled.cancelled() => stopped("the client cancelled it"),
            () = disconnected.cancelled() => stopped("the client closed its end"),
            () = dropped.cancelled() => stopped("the client's connection dropped"),
            result = self.call(tool, cx, arguments, &context, revision) => result,
        };
        result
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
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // Tool-list changes are all there is to listen to, and only when the
        // set can change.
        self.shared.changes.as_ref()?;
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    /// 2026-07-28's `subscriptions/listen`: tool-list changes, on the
    /// listening request's stream, until the client cancels it or goes away.
    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let Some(changes) = &self.shared.changes else {
            subscription.cancelled().await;
            return Ok(());
        };
        let changes = changes.resubscribe();
        let listening = subscription.request_context().id.to_string();
        tracing::info!(session = %self.state.id, request = %listening, "client listens for tool-list changes");
        let stop = async {
            tokio::select! {
                () = subscription.cancelled() => {}
                () = self.state.disconnected.cancelled() => {}
            }
        };
        let sink = &subscription;
        let send = || async move {
            sink.sink()
                .notify_tool_list_changed()
                .await
                .map_err(|e| e.to_string())
        };
        let session = &self.state.id;
        forward_list_changes(&self.shared, changes, stop, send, session, Some(&listening)).await;
        Ok(())
    }
}

/// The one change-forwarding loop, for a session's client (2025-11-25) and
/// a listening request (2026-07-28's `subscriptions/listen`): past the first
/// load, `send` a `tools/list_changed` for every change of the set (and after
/// changes missed), until `stop`, the set's end, or a send fails.
async fn forward_list_changes<F, Fut>(
    shared: &Shared,
    mut changes: broadcast::Receiver<ToolsetChange>,
    stop: impl Future<Output = ()>,
    mut send: F,
    session: &str,
    request: Option<&str>,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let mut stop = std::pin::pin!(stop);
    if !shared.past_first_load(&mut changes, stop.as_mut()).await {
        return;
    }
    let request = request.unwrap_or("-");
    loop {
        let notify = tokio::select! {
            () = stop.as_mut() => return,
            change = changes.recv() => match change {
                Ok(change) => !change.is_empty(),
                Err(broadcast::error::RecvError::Lagged(_)) => true,
                Err(broadcast::error::RecvError::Closed) => return,
            },
        };
        if !notify {
            continue;
        }
        if let Err(err) = send().await {
            tracing::debug!(%session, %request, %err, "could not send tools/list_changed");
            return;
        }
        tracing::info!(%session, %request, "sent tools/list_changed");
    }
}
