//! The `tools/call`s running now, counted so that a stop can let them finish
//! (drain) before it cancels what is left.

use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use rmcp::ErrorData;

/// The calls running now and the answers still being sent, and whether a
/// stop is draining the server.
#[derive(Debug, Default)]
pub(super) struct Calls {
    running: Arc<Count>,
    /// POST responses not yet sent to their end: a call's answer goes out
    /// after its handler returns, so a drain waits for these too.
    answers: Arc<Count>,
    /// Set when a stop begins: new calls are refused from then on.
    draining: AtomicBool,
}

/// A number of things in progress, and a wake-up when it drops to zero.
#[derive(Debug, Default)]
pub(super) struct Count {
    n: AtomicUsize,
    zero: tokio::sync::Notify,
}

/// One counted thing; uncounted when dropped.
#[derive(Debug)]
pub(super) struct Counted(Arc<Count>);

impl Drop for Counted {
    fn drop(&mut self) {
        if self.0.n.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.zero.notify_waiters();
        }
    }
}

impl Count {
    fn enter(self: &Arc<Self>) -> Counted {
        self.n.fetch_add(1, Ordering::SeqCst);
        Counted(self.clone())
    }

    fn get(&self) -> usize {
        self.n.load(Ordering::SeqCst)
    }

    /// Waits until nothing is counted.
    async fn zero(&self) {
        loop {
            let mut notified = pin!(self.zero.notified());
            // Registered before the check: a wake-up in between is not lost.
            notified.as_mut().enable();
            if self.get() == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl Calls {
    /// Counts a call until the guard drops (it finished or was cancelled).
    ///
    /// # Errors
    /// Refuses the call once a stop is draining the server.
    pub(super) fn enter(&self) -> Result<Counted, ErrorData> {
        // Counted before the check: a drain that has begun either sees this
        // call running or this call sees the drain (both are SeqCst).
        let running = self.running.enter();
        if self.is_draining() {
            return Err(ErrorData::internal_error(
                "this MCP server is shutting down; retry the call (another replica may take it)",
                None,
            ));
        }
        Ok(running)
    }

    /// Counts a POST response until its body is sent or dropped.
    pub(super) fn answer(&self) -> Counted {
        self.answers.enter()
    }

    /// How many calls run now.
    pub(super) fn running(&self) -> usize {
        self.running.get()
    }

    /// True once [`Calls::drain`] was called.
    pub(super) fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// Refuses calls from now on; returns how many run.
    pub(super) fn drain(&self) -> usize {
        self.draining.store(true, Ordering::SeqCst);
        self.running()
    }

    /// Waits until no call runs.
    pub(super) async fn idle(&self) {
        self.running.zero().await;
    }

    /// Waits until every POST response has been sent.
    pub(super) async fn answered(&self) {
        self.answers.zero().await;
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
