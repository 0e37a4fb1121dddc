//! `tools/call`s run on the task that reads them.
//!
//! rmcp's session loop spawns a task for each request, hands its answer back
//! to the loop through a channel, and spawns another task to send it: three
//! task hand-offs, often across threads, on every call. For a trivial tool
//! they cost more than the sandboxed call itself. Here a `tools/call` of an
//! initialized session goes to the same handler (rmcp's `handle_request`,
//! with its checks) straight from the line it was read from: the call is
//! polled once in place, and one that finishes then (most do) is answered at
//! once into [`Output`]; one that does not is spawned and answers when it
//! ends. Answers go through the same [`Output`] as rmcp's, so messages stay
//! whole and in order.
//!
//! rmcp still gets every other message, and a `tools/call` that names its
//! protocol version in `_meta` (2026-07-28, sessionless): rmcp scopes the
//! handler with that version, which decides whether it may send the client
//! requests. A `notifications/cancelled` for a call running here cancels it,
//! and its answer is not sent, as rmcp does for its own.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Waker};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, ClientJsonRpcMessage, ClientNotification, ClientRequest, Extensions,
    JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, RequestId, RequestMetaObject,
};
use rmcp::{Peer, RoleServer};
use tokio_util::sync::CancellationToken;

use super::output::Output;
use crate::mcp::session::Session;

/// How long the session's end waits for the answers of calls still running.
const FINISH: Duration = Duration::from_secs(5);

/// Runs a session's plain `tools/call`s where they are read.
pub(super) struct Inline {
    session: Session,
    out: Arc<Output>,
    /// Calls still running after their first poll, by request id, for a
    /// `notifications/cancelled` to find (rmcp does not know them). Their
    /// answers are counted in the server's drain tracker, which the
    /// session's end waits on.
    running: Arc<Mutex<HashMap<RequestId, CancellationToken>>>,
}

impl Inline {
    pub(super) fn new(session: Session, out: Arc<Output>) -> Self {
        Self {
            session,
            out,
            running: Arc::default(),
        }
    }

    /// Waits (up to [`FINISH`]) for the calls still running to answer, as
    /// rmcp does for its own when the client's end closes: those calls are
    /// cancelled by then, and answer at once.
    pub(super) async fn finish(&self) {
        let calls = &self.session.shared().calls;
        if tokio::time::timeout(FINISH, calls.answered())
            .await
            .is_err()
        {
            tracing::warn!(
                running = calls.running(),
                "gave up waiting for the answers of running MCP calls"
            );
        }
    }

    /// Runs `message` if it is a call this can run, and gives it back (for
    /// rmcp) if not. A cancellation is seen here and handed on. `more`: more
    /// input is already read; the call then goes to a task of its own at once,
    /// so that calls sent together run in parallel.
    pub(super) fn handle(
        &self,
        message: ClientJsonRpcMessage,
        more: bool,
    ) -> Option<ClientJsonRpcMessage> {
        // Before the client has initialized, nothing runs here.
        let Some(peer) = self.session.peer() else {
            return Some(message);
        };
        match message {
            JsonRpcMessage::Request(JsonRpcRequest {
                id,
                request: ClientRequest::CallToolRequest(call),
                ..
            }) if !names_version(&call) => {
                self.run(id, call, peer.clone(), more);
                None
            }
            JsonRpcMessage::Notification(JsonRpcNotification {
                notification: ClientNotification::CancelledNotification(ref cancelled),
                ..
            }) => {
                if let Some(id) = &cancelled.params.request_id
                    && let Some(token) = lock(&self.running).remove(id)
                {
                    tracing::info!(%id, reason = cancelled.params.reason.as_deref().unwrap_or(""), "cancelled");
                    token.cancel();
                }
                Some(message)
            }
            other => Some(other),
        }
    }

    /// Runs one call: to its end here if it ends in its first poll (and
    /// nothing else waits to be read), else on a task of its own.
    fn run(&self, id: RequestId, call: CallToolRequest, peer: Peer<RoleServer>, more: bool) {
        let (token, answer) = crate::mcp::request::answer(
            self.session.clone(),
            peer,
            id.clone(),
            call,
            Extensions::new(),
        );
        let out = Arc::clone(&self.out);
        let in_flight = Arc::clone(&self.running);
        let mut answer: Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(async move {
            // A cancelled call (the client no longer wants it) has no answer.
            let Some(message) = answer.await else {
                return;
            };
            // Calls sent together answer together: while others run, this
            // answer waits for the writer task (which runs after them).
            let sent = if lock(&in_flight).len() > 1 {
                out.send_soon(&message)
            } else {
                out.send(&message)
            };
            if sent.is_ok() {
                out.room().await;
            }
        });
        // A future polled once may move to a task: it is pinned in its box,
        // and the task's first poll registers its own waker.
        let mut cx = Context::from_waker(Waker::noop());
        if !more && answer.as_mut().poll(&mut cx).is_ready() {
            return;
        }
        lock(&self.running).insert(id.clone(), token);
        let running = Arc::clone(&self.running);
        let answering = self.session.shared().calls.answer();
        tokio::spawn(async move {
            answer.await;
            lock(&running).remove(&id);
            drop(answering);
        });
    }
}

/// Whether a call names its protocol version in `_meta` (read as rmcp reads
/// it to scope the handler).
fn names_version(call: &CallToolRequest) -> bool {
    call.extensions
        .get::<RequestMetaObject>()
        .is_some_and(|meta| meta.protocol_version().is_some())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
