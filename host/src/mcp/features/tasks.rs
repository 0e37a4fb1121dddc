//! Long-running tools as MCP tasks: the Tasks extension of MCP 2026-07-28
//! (`io.modelcontextprotocol/tasks`, SEP-2663).
//!
//! A `tools/call` of a tool declared long-running, from a client that
//! declared the extension for that request, answers at once with a task
//! handle (`CreateTaskResult`); the call runs on, detached from the request.
//! Its record lives in the state store ([`TaskStore`]): in Redis when one is
//! configured, so `tasks/get`, `tasks/update` and `tasks/cancel` may land on
//! any replica. The replica running the call (the owner) beats every
//! [`BEAT`]: the beat tells it about a cancel (it drops the call, so the
//! guest stops at its next epoch tick) and hands it the client's input
//! responses (an approval, a tool's question: `tasks/input.rs`). A task whose owner has not beaten for
//! [`STALE_AFTER`] is reported failed by whichever replica reads it: its
//! owner stopped, and a call cannot move to another replica.
//!
//! Who may see a task is its principal: the key of the `Principal` the
//! server's authenticator made of its `tools/call`'s credentials (`auth.rs`;
//! stdio's calls are anonymous). A task of another principal is as unknown as
//! one that never existed. Task IDs are 128 random bits, so they also act as
//! capabilities where every client shares one principal (one server token).
//!
//! The 2025-11-25 experimental tasks (`tasks/result`, `tasks/list`) are not
//! served: rmcp 3.x dropped them.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolResult, ContentBlock, CreateTaskResult, DetailedTask, GetTaskResult, InputResponses,
    JsonObject, ServerCapabilities, TASKS_EXTENSION_ID, Task, TaskPayload,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use tokio::sync::mpsc;

use super::{Feature, tools};
use crate::error::CallError;
use crate::mcp::Shared;
use crate::mcp::approval::random_id;
use crate::mcp::calls::Counted;
use crate::state::StateError;
use crate::state::tasks::{TaskRecord, TaskStatus, TaskStore, Transition, now_ms};
use crate::tool::Prepared;
use crate::toolset::{Context, Tool, drive};

mod input;

/// How often the owner of a running task beats.
pub(in crate::mcp) const BEAT: Duration = Duration::from_millis(250);

/// How long a running task's owner may go without a beat before a reader
/// reports the task failed. Twelve beats, not three: a busy machine or a slow
/// store round trip can hold a beat back for a second, and a live task
/// reported failed is worse than a dead one reported a few seconds late.
pub(in crate::mcp) const STALE_AFTER: Duration = Duration::from_secs(3);

/// The most tasks one server runs at once; past it a `tools/call` that would
/// start one is refused as busy (each also holds guest memory, which the
/// engine's budget bounds on its own).
pub(in crate::mcp) const MAX_RUNNING_TASKS: usize = 1024;

/// The status message of a task whose owner stopped beating.
const OWNER_STOPPED: &str = "the replica running it stopped before it finished";

/// The tasks of one server: where they are kept and how they are announced.
#[derive(Debug)]
pub(in crate::mcp) struct Tasks {
    /// Whether long-running calls may run as tasks at all.
    pub(in crate::mcp) enabled: bool,
    pub(in crate::mcp) store: TaskStore,
    /// How long a record is kept after its last write.
    pub(in crate::mcp) ttl: Duration,
    /// How often clients are told to poll.
    pub(in crate::mcp) poll: Duration,
    /// This process, as task owner (records name it, logs too).
    owner: String,
    running: Arc<AtomicUsize>,
}

impl Feature for Tasks {
    fn advertise(&self, capabilities: &mut ServerCapabilities) {
        if self.enabled {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(TASKS_EXTENSION_ID.to_owned(), JsonObject::new());
        }
    }
}

impl Tasks {
    /// The default of [`McpServer::with_task_ttl`](crate::mcp::McpServer::with_task_ttl).
    pub(in crate::mcp) const DEFAULT_TTL: Duration = Duration::from_secs(3600);
    /// The poll interval clients are given.
    pub(in crate::mcp) const POLL: Duration = Duration::from_millis(500);

    pub(in crate::mcp) fn new(store: TaskStore) -> Self {
        Self {
            enabled: true,
            store,
            ttl: Self::DEFAULT_TTL,
            poll: Self::POLL,
            owner: format!("toolhost-{}-{}", std::process::id(), &random_id()[..8]),
            running: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// The record of `id` if `principal` may see it.
    async fn find(&self, id: &str, principal: &str) -> Result<TaskRecord, ErrorData> {
        match self.store.get(id).await.map_err(store_error)? {
            Some(record) if record.principal == principal => Ok(record),
            // A task of another principal is as unknown as one never made.
            _ => Err(no_such_task(id)),
        }
    }

    /// `tasks/get`: the task as it is now. A running task whose owner
    /// stopped beating is failed first.
    pub(in crate::mcp) async fn get(
        &self,
        id: &str,
        principal: &str,
    ) -> Result<GetTaskResult, ErrorData> {
        let mut record = self.find(id, principal).await?;
        let stale = now_ms().saturating_sub(record.heartbeat_ms) > millis(STALE_AFTER);
        if !record.status.is_terminal() && stale {
            let error = error_object(-32603, OWNER_STOPPED);
            let outcome = self
                .store
                .transition(id, TaskStatus::Failed, Some(OWNER_STOPPED), Some(&error))
                .await
                .map_err(store_error)?;
            match outcome {
                Transition::Applied(now) | Transition::Final(now) => {
                    if now.status == TaskStatus::Failed {
                        tracing::warn!(task = %id, owner = %now.owner, tool = %now.tool, "task failed: its owner stopped beating");
                    }
                    record = now;
                }
                Transition::Missing => return Err(no_such_task(id)),
            }
        }
        Ok(GetTaskResult::new(detailed(&record)))
    }

    /// `tasks/update`: the client's input responses, for the owner's next
    /// beat. Responses to a task that asks nothing now are ignored, as
    /// SEP-2663 says of keys that are not outstanding.
    pub(in crate::mcp) async fn update(
        &self,
        id: &str,
        principal: &str,
        responses: &InputResponses,
    ) -> Result<(), ErrorData> {
        self.find(id, principal).await?;
        let text = serde_json::to_string(responses).map_err(|e| {
            ErrorData::invalid_params(format!("unreadable inputResponses: {e}"), None)
        })?;
        if !self.store.respond(id, &text).await.map_err(store_error)? {
            tracing::info!(task = %id, "input responses ignored: the task asks for no input now");
        }
        Ok(())
    }

    /// `tasks/cancel`: the task is cancelled now (unless it ended already);
    /// its owner drops the call at its next beat.
    pub(in crate::mcp) async fn cancel(&self, id: &str, principal: &str) -> Result<(), ErrorData> {
        self.find(id, principal).await?;
        let outcome = self
            .store
            .transition(
                id,
                TaskStatus::Cancelled,
                Some("cancelled by the client"),
                None,
            )
            .await
            .map_err(store_error)?;
        match outcome {
            Transition::Applied(record) => {
                tracing::info!(task = %id, tool = %record.tool, owner = %record.owner, "task cancelled");
                Ok(())
            }
            Transition::Missing => Err(no_such_task(id)),
            // Ended already: the cancel is acknowledged and changes nothing.
            _ => Ok(()),
        }
    }
}

/// Everything a task's call needs, moved onto the task that runs it.
pub(in crate::mcp) struct Job {
    pub(in crate::mcp) tool: Arc<dyn Tool>,
    pub(in crate::mcp) cx: Context,
    /// The arguments, prepared (or why they could not be: the task fails
    /// with it, as a plain call would).
    pub(in crate::mcp) arguments: Result<Prepared, CallError>,
    pub(in crate::mcp) principal: String,
    /// Whether the client can be asked (it declared form elicitation): then
    /// the tool's questions go through the task.
    pub(in crate::mcp) can_ask: bool,
    /// Counts the call as running, so a stop drains it.
    pub(in crate::mcp) running: Counted,
}

/// Starts `job` as a task: stores its record, spawns its call, and answers
/// the task handle. Refused as busy (a tool result, as a plain call's busy
/// error is) past [`MAX_RUNNING_TASKS`] or the store's own cap.
pub(in crate::mcp) async fn spawn(
    shared: &Arc<Shared>,
    job: Job,
) -> Result<CreateTaskOr, ErrorData> {
    let tasks = &shared.tasks;
    let name = job.tool.spec().name.clone();
    let Some(slot) = Slot::take(&tasks.running) else {
        return Ok(CreateTaskOr::Busy(busy(
            &name,
            &format!("this server runs {MAX_RUNNING_TASKS} tasks at once already"),
        )));
    };
    let id = random_id();
    let record = TaskRecord::new(
        id.clone(),
        tasks.owner.clone(),
        job.principal.clone(),
        name.clone(),
        tasks.ttl,
        tasks.poll,
    );
    match tasks.store.create(&record).await {
        Ok(()) => {}
        Err(StateError::Tasks { limit }) => {
            return Ok(CreateTaskOr::Busy(busy(
                &name,
                &format!("this server keeps {limit} tasks at most, and that many are running"),
            )));
        }
        Err(StateError::TaskBytes { limit }) => {
            return Ok(CreateTaskOr::Busy(busy(
                &name,
                &format!("this server's tasks hold the {limit} bytes they may"),
            )));
        }
        Err(err) => return Err(store_error(err)),
    }
    tracing::info!(task = %id, tool = %name, call = %job.cx.call_id(), "call runs as a task");
    let runner = Runner {
        shared: Arc::clone(shared),
        id,
    };
    tokio::spawn(async move {
        let _slot = slot;
        let Job {
            tool,
            cx,
            arguments,
            can_ask,
            running,
            ..
        } = job;
        let (answers, inbox) = mpsc::channel(4);
        let inbox = Arc::new(tokio::sync::Mutex::new(inbox));
        let store = &runner.shared.tasks.store;
        let approver =
            input::TaskApprover::new(store.clone(), runner.id.clone(), Arc::clone(&inbox));
        // The tool's questions wait for their answers through the task too.
        let cx = if can_ask {
            cx.with_asker(input::asker(store.clone(), runner.id.clone(), inbox))
        } else {
            cx
        };
        let call = run_call(&runner.shared, &*tool, &cx, arguments, &approver);
        runner.drive(call, answers).await;
        drop(running);
    });
    Ok(CreateTaskOr::Task(CreateTaskResult::new(task(&record))))
}

/// What a `tools/call` that would start a task answers.
pub(in crate::mcp) enum CreateTaskOr {
    /// The task handle.
    Task(CreateTaskResult),
    /// No task: too many run.
    Busy(CallToolResult),
}

/// A place among the tasks this server runs; freed when dropped.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(running: &Arc<AtomicUsize>) -> Option<Self> {
        running
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < MAX_RUNNING_TASKS).then_some(n + 1)
            })
            .ok()
            .map(|_| Self(Arc::clone(running)))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Runs the call as a plain one does, to its whole result: the same layers,
/// limits and admission (guest memory), and the same tool-level errors.
async fn run_call(
    shared: &Shared,
    tool: &dyn Tool,
    cx: &Context,
    arguments: Result<Prepared, CallError>,
    approver: &input::TaskApprover,
) -> Result<CallToolResult, ErrorData> {
    // The task's approver always decides (or fails), so the call never
    // comes back waiting for one; its client polls, so no progress goes out.
    let started = drive(tool, cx, arguments, approver).await;
    tools::answer(shared, &tool.spec().name, started, None).await
}

/// The owner's side of one task: runs the call, beats, and keeps the outcome.
struct Runner {
    shared: Arc<Shared>,
    id: String,
}

impl Runner {
    /// Polls the call and beats every [`BEAT`] until the call ends or the
    /// task does (cancelled, failed by a reader, expired); then keeps the
    /// call's outcome. A call dropped here takes its instance with it: the
    /// guest stops at its next epoch tick.
    async fn drive(
        &self,
        call: impl Future<Output = Result<CallToolResult, ErrorData>>,
        answers: mpsc::Sender<String>,
    ) {
        let store = &self.shared.tasks.store;
        let id = &self.id;
        let mut call = pin!(call);
        let mut beats = tokio::time::interval(BEAT);
        beats.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The record was written (beaten) just now.
        beats.tick().await;
        let outcome = loop {
            tokio::select! {
                outcome = &mut call => break outcome,
                () = self.shared.calls.cut_off() => {
                    tracing::info!(task = %id, "task cut short: the drain deadline passed; guest stopped");
                    break Err(crate::mcp::calls::cut_short());
                }
                _ = beats.tick() => match store.beat(id).await {
                    Ok(Some(beat)) if beat.status.is_terminal() => {
                        tracing::info!(task = %id, status = %beat.status, "task ended while running; call dropped, guest stopped");
                        return;
                    }
                    Ok(Some(beat)) => {
                        if let Some(responses) = beat.responses {
                            // Only an approval or a question waits for these
                            // (one at a time); one pending is enough.
                            let _ = answers.try_send(responses);
                        }
                    }
                    Ok(None) => {
                        tracing::warn!(task = %id, "task record gone (expired?); call dropped, guest stopped");
                        return;
                    }
                    Err(err) => {
                        // Missed beats make the task look stale to readers after
                        // a while, which is the truth if the store stays away.
                        tracing::warn!(task = %id, %err, "task beat failed");
                    }
                },
            }
        };
        self.keep(outcome).await;
    }

    /// Records the call's outcome: `completed` with its result (a tool's
    /// failure is a result with `isError`, as SEP-2663 says), `failed` with
    /// a JSON-RPC error otherwise. A task that ended meanwhile (cancelled)
    /// stays as it is.
    async fn keep(&self, outcome: Result<CallToolResult, ErrorData>) {
        let (status, message, payload) = match &outcome {
            Ok(result) => match serde_json::to_string(result) {
                Ok(json) => (TaskStatus::Completed, None, json),
                Err(err) => failure(&format!("the result could not be kept: {err}")),
            },
            Err(error) => {
                let json = serde_json::to_string(error)
                    .unwrap_or_else(|_| error_object(-32603, &error.message));
                (TaskStatus::Failed, Some(error.message.to_string()), json)
            }
        };
        let mut kept = self.transition(status, message.as_deref(), &payload).await;
        if let Err(err @ (StateError::TaskPayload { .. } | StateError::TaskBytes { .. })) = &kept {
            let (status, message, payload) =
                failure(&format!("the result could not be kept: {err}"));
            kept = self.transition(status, message.as_deref(), &payload).await;
        }
        match kept {
            Ok(Transition::Applied(_)) => {
                tracing::info!(task = %self.id, %status, "task ended");
            }
            Ok(Transition::Final(record)) => {
                tracing::info!(task = %self.id, status = %record.status, "task had ended already; outcome dropped");
            }
            Ok(_) => tracing::warn!(task = %self.id, "task record gone; outcome dropped"),
            Err(err) => tracing::warn!(task = %self.id, %err, "task outcome not kept"),
        }
    }

    /// A transition, retried a few times while the store is away.
    async fn transition(
        &self,
        to: TaskStatus,
        message: Option<&str>,
        payload: &str,
    ) -> Result<Transition, StateError> {
        let store = &self.shared.tasks.store;
        let mut tries = 0;
        loop {
            match store.transition(&self.id, to, message, Some(payload)).await {
                Err(StateError::Unavailable { .. } | StateError::Timeout { .. }) if tries < 3 => {
                    tries += 1;
                    tokio::time::sleep(BEAT * 2).await;
                }
                kept => return kept,
            }
        }
    }
}

/// `failed` with this message, as a JSON-RPC internal error.
fn failure(message: &str) -> (TaskStatus, Option<String>, String) {
    (
        TaskStatus::Failed,
        Some(message.to_owned()),
        error_object(-32603, message),
    )
}

/// Whether this request declared the Tasks extension.
pub(in crate::mcp) fn declared(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|caps| caps.supports_tasks())
}

fn no_such_task(id: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "unknown task: {id} (no such task was started, it expired, or the state store \
             lost its data)"
        ),
        None,
    )
}

fn store_error(err: StateError) -> ErrorData {
    tracing::warn!(%err, "task store failed");
    ErrorData::internal_error(format!("the task store failed: {err}; retry shortly"), None)
}

/// The busy answer: a tool result, as a plain call's busy error is.
fn busy(tool: &str, why: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(format!(
        "tool `{tool}` could not run now: {why}; retry shortly"
    ))])
}

/// A JSON-RPC error object as JSON text.
fn error_object(code: i64, message: &str) -> String {
    serde_json::json!({ "code": code, "message": message }).to_string()
}

/// The task's wire status.
fn status(status: TaskStatus) -> rmcp::model::TaskStatus {
    match status {
        TaskStatus::InputRequired => rmcp::model::TaskStatus::InputRequired,
        TaskStatus::Completed => rmcp::model::TaskStatus::Completed,
        TaskStatus::Failed => rmcp::model::TaskStatus::Failed,
        TaskStatus::Cancelled => rmcp::model::TaskStatus::Cancelled,
        TaskStatus::Working => rmcp::model::TaskStatus::Working,
    }
}

/// The base task fields of a record.
fn task(record: &TaskRecord) -> Task {
    let mut task = Task::new(
        record.id.clone(),
        status(record.status),
        crate::time::rfc3339(record.created_at_ms),
        crate::time::rfc3339(record.updated_at_ms),
    )
    .with_ttl_ms(record.ttl_ms)
    .with_poll_interval_ms(record.poll_ms);
    task.status_message.clone_from(&record.status_message);
    task
}

/// A record as `tasks/get` reports it, with its status's payload.
fn detailed(record: &TaskRecord) -> DetailedTask {
    let object = || {
        record
            .payload
            .as_deref()
            .and_then(|json| serde_json::from_str::<JsonObject>(json).ok())
    };
    let payload = match record.status {
        TaskStatus::InputRequired => TaskPayload::InputRequired {
            input_requests: record
                .payload
                .as_deref()
                .and_then(|json| serde_json::from_str(json).ok())
                .unwrap_or_default(),
        },
        TaskStatus::Completed => TaskPayload::Completed {
            result: object().unwrap_or_default(),
        },
        TaskStatus::Failed => TaskPayload::Failed {
            error: object().unwrap_or_else(|| {
                let message = record
                    .status_message
                    .as_deref()
                    .unwrap_or("the task failed");
                serde_json::from_str(&error_object(-32603, message)).unwrap_or_default()
            }),
        },
        TaskStatus::Cancelled => TaskPayload::Cancelled,
        TaskStatus::Working => TaskPayload::Working,
    };
    DetailedTask::new(task(record), payload)
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_as_their_status_says() {
        let mut record = TaskRecord::new(
            "t1",
            "me",
            "anonymous",
            "slow_job",
            Duration::from_secs(60),
            Duration::from_millis(500),
        );
        let working = serde_json::to_value(detailed(&record)).unwrap();
        assert_eq!(working["status"], "working");
        assert_eq!(working["taskId"], "t1");
        assert_eq!(working["ttlMs"], 60_000);
        assert_eq!(working["pollIntervalMs"], 500);
        record.status = TaskStatus::Completed;
        record.payload = Some(r#"{"content":[],"isError":false}"#.to_owned());
        let completed = serde_json::to_value(detailed(&record)).unwrap();
        assert_eq!(completed["result"]["isError"], false);
        record.status = TaskStatus::Failed;
        record.payload = None;
        record.status_message = Some("boom".to_owned());
        let failed = serde_json::to_value(detailed(&record)).unwrap();
        assert_eq!(failed["error"]["message"], "boom");
        assert_eq!(failed["statusMessage"], "boom");
    }
}
