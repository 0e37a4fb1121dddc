//! What a task asks its client while it runs: an approval before its call
//! runs, and the tool's own questions while it runs. Either way the task
//! goes `input_required` with the input requests, the client answers with
//! `tasks/update`, the owner's beat hands the responses over ([`Inbox`]),
//! and the task goes back to `working`. The call waits meanwhile: a task
//! keeps its call, so unlike a 2026-07-28 plain call nothing is re-run.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::InputResponses;
use tokio::sync::mpsc;

use crate::error::CallError;
use crate::mcp::approval;
use crate::mcp::features::elicitation::{self, QUESTION};
use crate::state::StateError;
use crate::state::tasks::{TaskStatus, TaskStore, Transition};
use crate::tool::{ANSWER_TIMEOUT, Answer, AskError, Asker, Question};
use crate::toolset::{Approver, BoxFuture, ConfirmationRequest, Context, Decision};

/// Where the owner's beats hand a task's input responses (JSON text of
/// `inputResponses`). The approver and the asker take turns on it: an
/// approval is asked before the call runs, questions one at a time while it
/// runs.
pub(super) type Inbox = Arc<tokio::sync::Mutex<mpsc::Receiver<String>>>;

/// Asks for an approval through the task: the task goes `input_required`
/// with the approval form as its input request, and the answer comes back
/// through `tasks/update` and the owner's beat. The decision then resumes
/// the call as [`start`](crate::toolset::start) resumes any: under the same call ID, so the
/// confirmation layer acts on it once.
pub(super) struct TaskApprover {
    store: TaskStore,
    id: String,
    inbox: Inbox,
}

impl TaskApprover {
    pub(super) fn new(store: TaskStore, id: String, inbox: Inbox) -> Self {
        Self { store, id, inbox }
    }
}

impl Approver for TaskApprover {
    fn decide<'a>(
        &'a self,
        _cx: &'a Context,
        ask: &'a ConfirmationRequest,
    ) -> BoxFuture<'a, Result<Option<Decision>, CallError>> {
        Box::pin(async move {
            let requests = approval::input_requests(ask)?;
            let requests = serde_json::to_string(&requests).map_err(|e| {
                tracing::error!(task = %self.id, error = %e, "cannot write an approval request");
                approval::unavailable(ask)
            })?;
            let message = approval::question(ask);
            let asked = self
                .store
                .transition(
                    &self.id,
                    TaskStatus::InputRequired,
                    Some(&message),
                    Some(&requests),
                )
                .await;
            if !matches!(asked, Ok(Transition::Applied(_))) {
                // Cancelled or gone (the next beat stops the call), or the
                // store failed: nobody can answer, so the call must not run.
                return Err(unasked(ask, asked.err()));
            }
            tracing::info!(task = %self.id, tool = %ask.tool, "task asks for approval (input required)");
            let mut inbox = self.inbox.lock().await;
            let decision = loop {
                let Some(responses) = inbox.recv().await else {
                    return Err(unasked(ask, None));
                };
                let answer = serde_json::from_str::<InputResponses>(&responses)
                    .ok()
                    .and_then(|mut responses| responses.remove(approval::QUESTION));
                // Responses without the answer leave the question open.
                if let Some(answer) = answer {
                    break approval::decide(&answer, &ask.arguments);
                }
            };
            let resumed = self
                .store
                .transition(&self.id, TaskStatus::Working, None, None)
                .await;
            if !matches!(resumed, Ok(Transition::Applied(_))) {
                return Err(unasked(ask, resumed.err()));
            }
            Ok(Some(decision))
        })
    }
}

/// The call was not run: its approval could not be asked or answered.
fn unasked(ask: &ConfirmationRequest, err: Option<StateError>) -> CallError {
    match err {
        Some(reason) => CallError::State {
            tool: ask.tool.clone(),
            reason,
        },
        None => CallError::ConfirmationUnavailable {
            tool: ask.tool.clone(),
            hint: ask.hint.clone(),
            reason: "the task ended before its approval was answered".to_owned(),
        },
    }
}

/// An asker that puts the tool's questions to the task's client: the task
/// goes `input_required` with the question's form under [`QUESTION`], and
/// the call waits for the answer `tasks/update` brings (as long as the host
/// lets a user take: the answer timeout, not the call's deadline).
pub(super) fn asker(store: TaskStore, id: String, inbox: Inbox) -> Asker {
    Asker::new(move |question| {
        let (store, id, inbox) = (store.clone(), id.clone(), Arc::clone(&inbox));
        Box::pin(async move { ask(&store, &id, &inbox, question).await })
    })
}

async fn ask(
    store: &TaskStore,
    id: &str,
    inbox: &Inbox,
    question: Question,
) -> Result<Answer, AskError> {
    let requests = elicitation::input_requests(&question)?;
    let requests = serde_json::to_string(&requests)
        .map_err(|e| AskError::Invalid(format!("the question cannot be written: {e}")))?;
    let mut inbox = inbox.lock().await;
    // Responses left from an earlier question (answered after it stopped
    // waiting) must not answer this one.
    while inbox.try_recv().is_ok() {}
    let asked = store
        .transition(
            id,
            TaskStatus::InputRequired,
            Some(&question.message),
            Some(&requests),
        )
        .await;
    if !matches!(asked, Ok(Transition::Applied(_))) {
        return Err(AskError::Unavailable(
            "the task could not ask (it ended, or its store failed)".into(),
        ));
    }
    tracing::info!(task = %id, asked_by = %question.asked_by, "task asks the tool's question (input required)");
    // The wait ends here, a little before the host's own answer timeout
    // would drop it, so the task is back to `working` (below) before the
    // tool runs on and perhaps asks again.
    let wait = ANSWER_TIMEOUT.saturating_sub(Duration::from_secs(1));
    let answer = match tokio::time::timeout(wait, answer(&mut inbox)).await {
        Ok(answer) => answer,
        Err(_elapsed) => Err(AskError::Timeout),
    };
    working(store, id).await;
    answer
}

/// The answer the next responses carry; responses without it leave the
/// question open.
async fn answer(inbox: &mut mpsc::Receiver<String>) -> Result<Answer, AskError> {
    loop {
        let Some(responses) = inbox.recv().await else {
            return Err(AskError::Unavailable(
                "the task ended before its question was answered".into(),
            ));
        };
        let response = serde_json::from_str::<InputResponses>(&responses)
            .ok()
            .and_then(|mut responses| responses.remove(QUESTION));
        if let Some(response) = response {
            return elicitation::read_answer(&response).map_err(AskError::Invalid);
        }
    }
}

/// The task works again after its question (one that ended meanwhile
/// stays as it is).
async fn working(store: &TaskStore, id: &str) {
    if let Err(err) = store.transition(id, TaskStatus::Working, None, None).await {
        tracing::warn!(task = %id, %err, "task could not go back to working");
    }
}
