//! One MCP session: who the client is, the tools it sees and calls, the
//! questions it is asked, and the list changes it is told about.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams,
    ElicitationAction, ElicitationSchema, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::convert::{error_result, mcp_error_names, mcp_names, mcp_tool, output_result};
use super::{Shared, http, progress};
use crate::Engine;
use crate::error::CallError;
use crate::toolset::{
    Approver, BoxFuture, ConfirmationRequest, Context, Decision, Identity, Started, Tool, start,
};

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
    pub(super) fn new(
        shared: Arc<Shared>,
        transport: &'static str,
        disconnected: CancellationToken,
    ) -> Self {
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

    async fn call(
        &self,
        tool: Arc<dyn Tool>,
        cx: Context,
        arguments: Value,
        request: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let approver = Elicit {
            peer: &request.peer,
        };
        match start(&*tool, &cx, arguments, &approver).await {
            Ok(Started::Output(output)) => Ok(output_result(output)),
            Ok(Started::Stream(stream)) => {
                let name = &tool.spec().name;
                progress::pump(stream, name, request, self.shared.progress_interval).await
            }
            Err(err) => error_result(err),
        }
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
    ) -> BoxFuture<'a, Result<Decision, CallError>> {
        Box::pin(async move {
            if self.peer.supported_elicitation_modes().is_empty() {
                return Err(CallError::ConfirmationUnavailable {
                    tool: ask.tool.clone(),
                    hint: ask.hint.clone(),
                    reason: "this MCP client cannot ask (it does not support elicitation); \
                             approve it in a client that does, or remove the tool from [confirm] \
                             in the server's configuration"
                        .to_owned(),
                });
            }
            let schema = ElicitationSchema::builder()
                .required_bool_property("approve", |b| {
                    b.title("Approve")
                        .description(format!("Run `{}` with these arguments", ask.tool))
                })
                .build()
                .map_err(|e| CallError::Host {
                    tool: ask.tool.clone(),
                    reason: format!("cannot build the approval form: {e}"),
                })?;
            let message = format!(
                "The tool `{}` needs your approval: {}\nArguments: {}",
                ask.tool, ask.hint, ask.arguments
            );
            let answer = self
                .peer
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
                    return Ok(Decision::reject(format!(
                        "the approval request failed: {err}"
                    )));
                }
            };
            let approved = answer.action == ElicitationAction::Accept
                && answer
                    .content
                    .as_ref()
                    .and_then(|c| c.get("approve"))
                    .and_then(Value::as_bool)
                    == Some(true);
            Ok(if approved {
                Decision::approve(ask)
            } else {
                Decision::reject(match answer.action {
                    ElicitationAction::Accept => "the user did not approve it",
                    ElicitationAction::Decline => "the user declined it",
                    _ => "the user cancelled the approval",
                })
            })
        })
    }
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
