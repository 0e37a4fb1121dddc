//! Tools over MCP: `tools/list` and `tools/call`, the confirmation questions a
//! call asks its client, and the progress of a streaming call
//! (`progress.rs`). A long-running call a client wants as a task goes to
//! `tasks.rs`; a tool's own questions are `elicitation.rs`'.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams,
    ElicitationAction, InputRequiredResult, ListToolsResult, ServerCapabilities, ToolsCapability,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, Peer, RoleServer};
use serde_json::Value;
use tokio::sync::broadcast;

use super::elicitation::{self, Questions, Round, Unopened};
use super::tasks::{self, CreateTaskOr};
use super::{Feature, List};
use crate::error::CallError;
use crate::mcp::Shared;
use crate::mcp::approval::{Approvals, approval_form, not_approved, question, unanswered};
use crate::mcp::convert::{error_result, mcp_error_names, mcp_names, mcp_tool, output_result};
use crate::mcp::revision::Revision;
use crate::mcp::session::Session;
use crate::mcp::{auth, transport};
use crate::tool::Prepared;
use crate::toolset::{
    Approver, BoxFuture, ConfirmationRequest, Context, Decision, NoApprover, Started, Tool,
    ToolsetChange, drive,
};

mod progress;

/// How the server serves tools.
pub(in crate::mcp) struct Tools {
    /// The shortest time between two progress notifications of one call.
    pub(in crate::mcp) progress_interval: Duration,
    /// Whether a JSON result also goes out as a text block.
    pub(in crate::mcp) result_text: bool,
    /// Seals and opens the approval states of 2026-07-28 confirmations.
    pub(in crate::mcp) approvals: Approvals,
}

impl Feature for Tools {
    fn advertise(&self, capabilities: &mut ServerCapabilities) {
        let mut tools = ToolsCapability::default();
        tools.list_changed = Some(true);
        capabilities.tools = Some(tools);
    }

    fn list(&self) -> Option<List> {
        Some(List::Tools)
    }

    fn changed(&self, change: &ToolsetChange) -> bool {
        change.tools_changed()
    }
}

/// `tools/list`: every tool the caller sees, under its MCP name.
pub(in crate::mcp) async fn list(
    session: &Session,
    context: RequestContext<RoleServer>,
) -> Result<ListToolsResult, ErrorData> {
    let shared = session.shared();
    shared.wait_ready().await;
    let cx = session.context(&context, Revision::of(&context))?;
    let tools = shared.toolset.tools(&cx);
    let names = mcp_names(tools.iter().map(|t| t.spec().name.as_str()));
    let listed = names
        .into_iter()
        .zip(&tools)
        .map(|(name, tool)| mcp_tool(name, tool.spec()))
        .collect();
    Ok(ListToolsResult::with_all_items(listed))
}

/// `tools/call`: runs the call (as a task when the client asked for one),
/// until it ends, the client cancels it or the client hangs up.
pub(in crate::mcp) async fn call(
    session: &Session,
    mut request: CallToolRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let shared = session.shared();
    // Counted until answered, so that a stop can drain it.
    let _running = shared.calls.enter()?;
    let revision = Revision::of(&context);
    let name = request.name.to_string();
    let cx = super::logging::attach(
        session,
        &context,
        session.context(&context, revision)?,
        &name,
    );
    // 2025-11-25 asks in the call; 2026-07-28 by a retry (below).
    let cx = if revision.asks_by_retry() {
        cx
    } else {
        elicitation::attach(&context, cx)
    };
    let Some(tool) = resolve_when_loaded(shared, &cx, &name).await else {
        return Err(not_found(shared, &cx, &name));
    };
    let arguments = Value::Object(request.arguments.take().unwrap_or_default());
    // Prepared once: a resumed approval or question is checked against
    // them, and they run.
    let arguments = crate::toolset::validate(&*tool, &cx, arguments);
    // A 2026-07-28 retry after an approval or a tool's question resumes
    // that call.
    let (cx, round) = if revision.asks_by_retry() {
        match resume(shared, &*tool, cx, &arguments, &request) {
            Ok(resumed) => resumed,
            Err(refused) => return Ok(refused.into()),
        }
    } else {
        let round = Round::first(cx.call_id());
        (cx, round)
    };
    // A retry that runs on an approval runs only while the store remembers
    // which approvals were used: in the epoch it was sealed in.
    if let Some(epoch) = round.epoch.as_deref().filter(|_| round.approved)
        && let Err(refused) = shared.tools.approvals.check_epoch(epoch).await
    {
        let message = refused.message(&name);
        tracing::info!(tool = %name, call = %round.call_id(), "retry refused (its approval): {message}");
        return Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into());
    }
    let can_ask = revision.asks_by_retry() && elicitation::can_ask(&context);
    // A long-running tool runs as a task for a client that declared the
    // Tasks extension on this request (SEP-2663); others get the plain call.
    if shared.tasks.enabled && tool.spec().long_running && tasks::declared(&context) {
        let job = tasks::Job {
            tool,
            cx,
            arguments,
            principal: auth::principal(&context).key(),
            can_ask,
            running: shared.calls.enter()?,
        };
        return match tasks::spawn(session.shared(), job).await? {
            CreateTaskOr::Task(task) => Ok(CallToolResponse::Task(task)),
            CreateTaskOr::Busy(refused) => Ok(refused.into()),
        };
    }
    // 2026-07-28: the call replays the answers so far, and stops at a new
    // question to ask it by answering (`elicitation/retry.rs`).
    let cx = if can_ask {
        elicitation::replay(cx, round.answers.clone())
    } else {
        cx
    };
    let call_id = cx.call_id().to_owned();
    let stopped = |why: &str| {
        // The call's future is dropped here: its Store and instance go
        // with it, and a guest still running stops at its next epoch tick.
        tracing::info!(tool = %name, call = %call_id, "call cancelled: {why}; guest stopped");
        Ok(CallToolResult::error(vec![ContentBlock::text(format!(
            "the call of `{name}` was cancelled"
        ))])
        .into())
    };
    tokio::select! {
        biased;
        () = shared.calls.cut_off() => {
            tracing::debug!(tool = %name, call = %call_id, "call cut short: the drain deadline passed; guest stopped");
            Err(crate::mcp::calls::cut_short())
        }
        () = context.ct.cancelled() => stopped("the client cancelled it"),
        why = transport::hung_up(&context) => stopped(why),
        result = run(shared, tool, cx, arguments, &context, revision, &round) => result,
    }
}

/// The error for a name no tool answers to: unknown, ambiguous, or an alias
/// of a missing tool (the set says which), with the names it offers instead
/// given as MCP names.
fn not_found(shared: &Shared, cx: &Context, name: &str) -> ErrorData {
    let listed: Vec<String> = shared
        .toolset
        .tools(cx)
        .iter()
        .map(|t| t.spec().name.clone())
        .collect();
    let mapped = mcp_names(listed.iter().map(String::as_str));
    let as_mcp: HashMap<&str, &str> = listed
        .iter()
        .map(String::as_str)
        .zip(mapped.iter().map(String::as_str))
        .collect();
    let err = mcp_error_names(shared.toolset.not_found(cx, name), &as_mcp);
    ErrorData::invalid_params(err.to_string(), None)
}

/// The tool a `tools/call` name reaches: the name itself (original names
/// and aliases), else an MCP-mapped name.
fn resolve(shared: &Shared, cx: &Context, name: &str) -> Option<Arc<dyn Tool>> {
    let toolset = &shared.toolset;
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

/// The tool of that name; while the first load runs, a tool not there yet
/// is waited for until it joins or the load ends (its plugin may be the
/// one still loading).
async fn resolve_when_loaded(shared: &Shared, cx: &Context, name: &str) -> Option<Arc<dyn Tool>> {
    let found = resolve(shared, cx, name);
    let Some(ready) = &shared.ready else {
        return found;
    };
    if found.is_some() {
        return found;
    }
    let mut ready = ready.clone();
    // Subscribed before the loop's first resolve: no change is missed.
    let mut changes = shared.changes.as_ref().map(|c| c.resubscribe());
    loop {
        // Read before the resolve: a load that ends between the two
        // (the tool joining with it) is then seen by the resolve.
        let loaded = *ready.borrow_and_update();
        if let Some(tool) = resolve(shared, cx, name) {
            return Some(tool);
        }
        if loaded {
            return None;
        }
        tokio::select! {
            changed = ready.changed() => {
                if changed.is_err() {
                    return resolve(shared, cx, name);
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
/// `approval.rs`), and so does a call stopped at its tool's question (see
/// `elicitation/retry.rs`; `round` is where it stands).
async fn run(
    shared: &Shared,
    tool: Arc<dyn Tool>,
    cx: Context,
    arguments: Result<Prepared, CallError>,
    request: &RequestContext<RoleServer>,
    revision: Revision,
    round: &Round,
) -> Result<CallToolResponse, ErrorData> {
    // What a question's state binds: the arguments as they run.
    let bound = match (&arguments, cx.asker()) {
        (Ok(prepared), Some(_)) if revision.asks_by_retry() => Some(prepared.arguments().clone()),
        _ => None,
    };
    let started = if revision.asks_by_retry() {
        drive(&*tool, &cx, arguments, &NoApprover).await
    } else {
        let approver = Elicit {
            peer: &request.peer,
        };
        drive(&*tool, &cx, arguments, &approver).await
    };
    if let Ok(Started::NeedsApproval(ask)) = &started {
        // The tool did not run.
        return self::ask(shared, ask, request).await.map_or_else(
            |err| error_result(err).map(Into::into),
            |asked| Ok(asked.into()),
        );
    }
    let name = &tool.spec().name;
    match (outcome(shared, name, started, Some(request)).await, bound) {
        (Err(CallError::InputRequired { input, .. }), Some(arguments)) => {
            // The guest stopped at the question: it is asked by answering.
            let owner = auth::principal(request).key();
            // A round that runs on an approval seals the store's epoch.
            let epoch = if round.approved {
                match shared.tools.approvals.epoch().await {
                    Ok(epoch) => epoch,
                    Err(err) => {
                        tracing::warn!(tool = %name, error = %err, "cannot ask the tool's question: the state store did not answer");
                        return error_result(CallError::Host {
                            tool: name.clone(),
                            reason: format!(
                                "the tool's question could not be asked ({err}); try again shortly"
                            ),
                        })
                        .map(Into::into);
                    }
                }
            } else {
                String::new()
            };
            let asked = Questions::new(&shared.tools.approvals)
                .ask(&input, round, name, &arguments, &owner, &epoch);
            match asked {
                Ok(asked) => {
                    tracing::info!(tool = %name, call = %round.call_id(), answered = input.answers.len(), "asked the client the tool's question (input required)");
                    Ok(asked.into())
                }
                Err(err) => error_result(err).map(Into::into),
            }
        }
        (Err(err @ CallError::AnswerRefused { .. }), _) => {
            tracing::info!(tool = %name, call = %round.call_id(), "{err}");
            Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "{err}; call again to be asked anew"
            ))])
            .into())
        }
        (outcome, _) => outcome.or_else(error_result).map(Into::into),
    }
}

/// A started call's MCP result, as every MCP way of calling gives it: the
/// whole output, or the stream gathered, with progress notifications to the
/// client of `request` when it asked for them (`None` for a task, whose client
/// polls). A call still waiting for an approval its caller could not get is
/// an error result saying so.
pub(in crate::mcp) async fn answer(
    shared: &Shared,
    tool: &str,
    started: Result<Started, CallError>,
    request: Option<&RequestContext<RoleServer>>,
) -> Result<CallToolResult, ErrorData> {
    outcome(shared, tool, started, request)
        .await
        .or_else(error_result)
}

/// As [`answer`], with the call's error (a stream's too) as it is, for a
/// caller that answers some errors otherwise (a tool's question).
async fn outcome(
    shared: &Shared,
    tool: &str,
    started: Result<Started, CallError>,
    request: Option<&RequestContext<RoleServer>>,
) -> Result<CallToolResult, CallError> {
    let result_text = shared.tools.result_text;
    match started? {
        Started::Output(output) => Ok(output_result(output, result_text)),
        Started::Stream(stream) => {
            let interval = shared.tools.progress_interval;
            progress::pump(stream, tool, request, interval, result_text).await
        }
        Started::NeedsApproval(ask) => Err(crate::mcp::approval::unavailable(&ask)),
    }
}

/// The Multi Round-Trip answer that asks the client for an approval, sealed
/// in the state store's epoch.
async fn ask(
    shared: &Shared,
    ask: &ConfirmationRequest,
    request: &RequestContext<RoleServer>,
) -> Result<InputRequiredResult, CallError> {
    let can_ask = request
        .client_capabilities()
        .and_then(|caps| caps.elicitation)
        .is_some_and(|e| e.form.is_some() || e.url.is_none());
    if !can_ask {
        return Err(cannot_ask(ask));
    }
    let owner = crate::mcp::auth::principal(request).key();
    let epoch = shared.tools.approvals.epoch().await.map_err(|err| {
        tracing::warn!(tool = %ask.tool, error = %err, "cannot ask for approval: the state store did not answer");
        crate::mcp::approval::unavailable(ask)
    })?;
    let asked = shared.tools.approvals.ask(ask, &owner, &epoch)?;
    tracing::info!(tool = %ask.tool, call = %ask.call_id, "asked the client for approval (input required)");
    Ok(asked)
}

/// A 2026-07-28 retry that carries an approval's or a question's state:
/// the context to run it in (the sealed call ID, or the round's; with the
/// approval's decision) and the round it is, or a refusal.
fn resume(
    shared: &Shared,
    tool: &dyn Tool,
    cx: Context,
    arguments: &Result<Prepared, CallError>,
    params: &CallToolRequestParams,
) -> Result<(Context, Round), CallToolResult> {
    let Some(state) = &params.request_state else {
        let round = Round::first(cx.call_id());
        return Ok((cx, round));
    };
    let refuse = |message: String| {
        tracing::info!(tool = %tool.spec().name, call = %cx.call_id(), "retry refused (its approval or question): {message}");
        CallToolResult::error(vec![ContentBlock::text(message)])
    };
    // The arguments as they will run, so the digest matches what was asked.
    let prepared = match arguments {
        Ok(prepared) => prepared.arguments(),
        Err(err) => return Err(refuse(err.to_string())),
    };
    let owner = cx
        .identity()
        .principal
        .as_deref()
        .map_or_else(|| "anonymous".to_owned(), |p| p.key());
    let name = &tool.spec().name;
    let responses = params.input_responses.as_ref();
    // A question's state first; one that is not goes to the approvals,
    // which open it or say why not.
    match Questions::new(&shared.tools.approvals).open(&owner, name, prepared, state, responses) {
        Ok(round) => {
            let call_id = round.call_id();
            let cx = cx.with_call_id(call_id.clone());
            // The approval the call runs on holds for this round, once.
            let cx = if round.approved {
                let approved = Decision::Approve {
                    arguments: prepared.clone(),
                    payload: None,
                };
                cx.with_decision(call_id, approved)
            } else {
                cx
            };
            return Ok((cx, round));
        }
        Err(Unopened::Refused(why)) => return Err(refuse(format!("`{name}` was not run: {why}"))),
        Err(Unopened::NotAQuestion) => {}
    }
    match shared
        .tools
        .approvals
        .resume(&owner, name, prepared, state, responses)
    {
        Ok(resumed) => {
            let round = Round {
                call: resumed.call_id.clone(),
                approved: matches!(resumed.decision, Decision::Approve { .. }),
                answers: Vec::new(),
                epoch: Some(resumed.epoch),
            };
            let cx = cx
                .with_call_id(resumed.call_id.clone())
                .with_decision(resumed.call_id, resumed.decision);
            Ok((cx, round))
        }
        Err(message) => Err(refuse(message)),
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
