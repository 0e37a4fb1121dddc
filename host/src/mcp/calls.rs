//! The one drain tracker: the `tools/call`s running now and the answers
//! still on their way out, counted so that a stop (HTTP) or the client's end
//! closing (stdio) can let them finish before it cancels what is left.

use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::ErrorData;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};
use tokio_util::task::TaskTracker;
use tokio_util::task::task_tracker::TaskTrackerToken;

/// The calls running now and the answers still being sent, and whether a
/// stop is draining the server.
#[derive(Debug, Default)]
pub(super) struct Calls {
    /// Closed when a stop begins: new calls are refused from then on.
    running: TaskTracker,
    /// Answers not yet sent to their end: a call's answer goes out after its
    /// handler returns, so a drain waits for these too (HTTP: POST
    /// responses; stdio: the calls run where they are read).
    answers: TaskTracker,
    /// The calls refused since the drain began.
    refused: AtomicU64,
    /// Cancelled when the drain deadline passes: every call still running
    /// stops its guest and answers [`cut_short`].
    cut: CancellationToken,
}

/// One counted thing; uncounted when dropped.
pub(super) type Counted = TaskTrackerToken;

/// The `reason` in the `data` of the JSON-RPC errors a stop gives calls:
/// refused before they ran while it drains (`"may_have_run": false`), or cut
/// at its drain deadline (`"may_have_run": true`).
pub const STOPPING: &str = "server_stopping";

/// The error of a call refused because a stop drains the server: it did
/// not run, so it may be sent again (another replica may take it).
pub(super) fn refusal() -> ErrorData {
    ErrorData::internal_error(
        "this MCP server is shutting down; retry the call (another replica may take it)",
        Some(serde_json::json!({"reason": STOPPING, "may_have_run": false})),
    )
}

/// The error of a call cut at the drain deadline: its guest was stopped, and
/// it may have partly run, so only its client knows whether sending it
/// again is safe.
pub(super) fn cut_short() -> ErrorData {
    ErrorData::internal_error(
        "the call was cut short: this MCP server is stopping (its drain deadline passed); \
         it may have partly run: send it again if that is safe (another replica may take it)",
        Some(serde_json::json!({"reason": STOPPING, "may_have_run": true})),
    )
}

impl Calls {
    /// Counts a call until the guard drops (it finished or was cancelled).
    ///
    /// # Errors
    /// Refuses the call once a stop is draining the server.
    pub(super) fn enter(&self) -> Result<Counted, ErrorData> {
        // Counted before the check, both on the tracker's one atomic word: a
        // drain that has begun either sees this call running or this call
        // sees the drain.
        let running = self.running.token();
        if self.is_draining() {
            self.refuse();
            return Err(refusal());
        }
        Ok(running)
    }

    /// Counts an answer until it is sent or dropped.
    pub(super) fn answer(&self) -> Counted {
        self.answers.token()
    }

    /// How many calls run now.
    pub(super) fn running(&self) -> usize {
        self.running.len()
    }

    /// True once [`Calls::drain`] was called.
    pub(super) fn is_draining(&self) -> bool {
        self.running.is_closed()
    }

    /// Counts a call refused because the server drains.
    pub(super) fn refuse(&self) {
        self.refused.fetch_add(1, Ordering::Relaxed);
    }

    /// How many calls were refused since the drain began.
    pub(super) fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Refuses calls from now on; returns how many run.
    pub(super) fn drain(&self) -> usize {
        self.running.close();
        self.running()
    }

    /// Cuts every call still running (the drain deadline passed): each
    /// stops its guest and answers [`cut_short`].
    pub(super) fn cut(&self) {
        self.cut.cancel();
    }

    /// Completes when the calls are cut (see [`Calls::cut`]).
    pub(super) fn cut_off(&self) -> WaitForCancellationFuture<'_> {
        self.cut.cancelled()
    }

    /// Waits until no call runs (once draining).
    pub(super) async fn idle(&self) {
        self.running.wait().await;
    }

    /// Waits until every answer counted has been sent.
    pub(super) async fn answered(&self) {
        self.answers.close();
        self.answers.wait().await;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_drain_waits_for_running_calls_and_refuses_new_ones() {
        let calls = Calls::default();
        let first = calls.enter().unwrap();
        let second = calls.enter().unwrap();
        assert_eq!(calls.drain(), 2);
        assert!(calls.enter().is_err());
        assert_eq!(calls.running(), 2, "a refused call is not counted");
        assert_eq!(calls.refused(), 1);
        let waiting = tokio::time::timeout(Duration::from_millis(50), calls.idle()).await;
        assert!(waiting.is_err(), "two calls still run");
        drop(first);
        let idle = async {
            calls.idle().await;
        };
        let release = async {
            tokio::task::yield_now().await;
            drop(second);
        };
        tokio::time::timeout(Duration::from_secs(5), async {
            tokio::join!(idle, release)
        })
        .await
        .expect("the drain ends when the last call does");
        assert_eq!(calls.running(), 0);
    }
}
