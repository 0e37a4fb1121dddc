//! A client's view of a kept stream ([`Reader`]).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_util::Stream;
use rmcp::transport::streamable_http_server::session::ServerSseMessage;

use super::{Replay, Streams};

/// A client's view of a request's stream: the events after the one it last
/// saw, then those to come, to the end. A newer reader of the same stream
/// (a resume) ends it.
pub(in crate::mcp) struct Reader {
    replay: Arc<Replay>,
    streams: Arc<Streams>,
    /// This reader's number.
    number: u64,
    /// The index of the next event to give.
    next: usize,
    /// Ends the reader early, so its client polls.
    close_at: Option<Pin<Box<tokio::time::Sleep>>>,
    /// Gave the stream's end: the stream is read.
    ended: bool,
    /// Gave its last event (the end, or an early close).
    stopped: bool,
}

impl Reader {
    /// Attaches a reader that starts at event `next`; the previous one ends.
    pub(super) fn attach(
        replay: Arc<Replay>,
        streams: Arc<Streams>,
        next: usize,
        close_after: Option<Duration>,
    ) -> Self {
        let number = {
            let mut state = replay.lock();
            state.readers += 1;
            state.reader = state.readers;
            state.detached_at = None;
            if let Some(waker) = state.waker.take() {
                waker.wake();
            }
            if let Some((oldest, _, _)) = state.events.front()
                && *oldest > next
            {
                tracing::warn!(
                    missed = oldest - next,
                    "a resumed stream misses events: more were sent than a stream keeps"
                );
            }
            state.reader
        };
        replay.changed.notify_one();
        Self {
            replay,
            streams,
            number,
            next,
            close_at: close_after.map(|after| Box::pin(tokio::time::sleep(after))),
            ended: false,
            stopped: false,
        }
    }
}

impl Stream for Reader {
    type Item = ServerSseMessage;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ServerSseMessage>> {
        let this = self.get_mut();
        if this.stopped {
            return Poll::Ready(None);
        }
        let mut state = this.replay.lock();
        if state.reader != this.number || (state.gone && !state.done) {
            this.stopped = true;
            return Poll::Ready(None);
        }
        let next = this.next;
        if let Some((index, event, _)) = state.events.iter().find(|(index, _, _)| *index >= next) {
            this.next = index + 1;
            return Poll::Ready(Some(event.clone()));
        }
        if state.done {
            this.ended = true;
            this.stopped = true;
            return Poll::Ready(None);
        }
        if let Some(close_at) = &mut this.close_at
            && close_at.as_mut().poll(cx).is_ready()
        {
            // The client resumes after the stream's retry interval.
            this.stopped = true;
            return Poll::Ready(None);
        }
        state.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        {
            let mut state = self.replay.lock();
            if state.reader != self.number {
                return;
            }
            state.reader = 0;
            state.waker = None;
            if self.ended {
                state.gone = true;
            } else {
                state.detached_at = Some(Instant::now());
            }
        }
        self.replay.changed.notify_one();
        if self.ended {
            // Read to its end: nothing more to keep. The forwarder ends.
            self.replay.forget(&self.streams);
        } else {
            self.streams.trim();
        }
    }
}
