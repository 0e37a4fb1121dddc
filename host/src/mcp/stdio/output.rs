//! The client's end of the stdio transport: answers written at once, the
//! rest queued for a writer task; the answers of calls sent together go out
//! together.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

use tokio::io::AsyncWrite;

/// Bytes queued for a client that does not read before a send waits.
const QUEUE_BYTES: usize = 4 << 20;

/// The client's end: messages are written at once by whoever sends them
/// (rmcp's session loop), straight into the pipe when it has room, which it
/// nearly always has. Only what the pipe does not take is queued, for the
/// writer task, which also writes everything queued meanwhile in one go.
/// (A writer task fed through a channel cost two task wake-ups per answer,
/// the sender waiting for the writer and the writer for the next message:
/// a fifth of a trivial call's round trip.)
///
/// An answer while other calls are in flight ([`Output::send_soon`]) is
/// queued instead, for the writer task to write once the calls ready to run
/// have run: pipelined calls answer in one write, not one each (a system
/// call and a wake-up of the client per answer).
pub(super) struct Output {
    state: Mutex<OutputState>,
}

struct OutputState {
    write: Box<dyn AsyncWrite + Send + Unpin>,
    /// Bytes not yet written: `queue[written..]`, in order.
    queue: Vec<u8>,
    written: usize,
    /// Written but not yet flushed.
    unflushed: bool,
    /// A write failed: the client's end is gone.
    broken: bool,
    /// The transport is closed or dropped: nothing more comes.
    closed: bool,
    /// The writer task, waiting for bytes to write.
    writer: Option<Waker>,
    /// Senders waiting for the queue to shrink.
    waiting: Vec<Waker>,
}

impl OutputState {
    fn queued(&self) -> usize {
        self.queue.len() - self.written
    }

    /// Writes (and flushes) what is queued, as far as the pipe takes it now.
    fn poll_write(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        while self.queued() > 0 && !self.broken {
            let Self {
                write,
                queue,
                written,
                ..
            } = self;
            match Pin::new(write).poll_write(cx, &queue[*written..]) {
                Poll::Ready(Ok(0)) => self.fail(std::io::ErrorKind::WriteZero.into()),
                Poll::Ready(Ok(n)) => {
                    self.written += n;
                    self.unflushed = true;
                }
                Poll::Ready(Err(err)) => self.fail(err),
                Poll::Pending => return Poll::Pending,
            }
        }
        // All written, or nothing more can be.
        self.queue.clear();
        self.written = 0;
        // A burst's buffer is not kept for ever.
        if self.queue.capacity() > QUEUE_BYTES {
            self.queue = Vec::new();
        }
        // `fail` clears `unflushed`: a broken pipe is not flushed.
        if self.unflushed {
            match Pin::new(&mut self.write).poll_flush(cx) {
                Poll::Ready(Ok(())) => self.unflushed = false,
                Poll::Ready(Err(err)) => self.fail(err),
                Poll::Pending => return Poll::Pending,
            }
        }
        for waiting in self.waiting.drain(..) {
            waiting.wake();
        }
        Poll::Ready(())
    }

    fn fail(&mut self, err: std::io::Error) {
        tracing::debug!(%err, "cannot write to the MCP client");
        self.broken = true;
        self.unflushed = false;
    }
}

impl Output {
    /// The client's end over `write`, with nothing queued, and its writer
    /// task: it ends once the output is closed and all queued is written
    /// (or the client's end is gone).
    pub(super) fn start(
        write: Box<dyn AsyncWrite + Send + Unpin>,
    ) -> (Arc<Self>, tokio::task::JoinHandle<()>) {
        let out = Arc::new(Self {
            state: Mutex::new(OutputState {
                write,
                queue: Vec::new(),
                written: 0,
                unflushed: false,
                broken: false,
                closed: false,
                writer: None,
                waiting: Vec::new(),
            }),
        });
        let writer = tokio::spawn(drain(Arc::clone(&out)));
        (out, writer)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, OutputState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes `bytes` after what is queued: at once (`at_once`) when nothing
    /// is queued and the pipe takes them, else through the writer task.
    fn push(&self, bytes: &[u8], at_once: bool) -> std::io::Result<()> {
        let mut state = self.lock();
        if state.broken {
            return Err(broken_pipe("the client's end is closed"));
        }
        let idle = at_once && state.queued() == 0 && !state.unflushed;
        state.queue.extend_from_slice(bytes);
        if idle {
            let mut cx = Context::from_waker(Waker::noop());
            if state.poll_write(&mut cx).is_ready() {
                return if state.broken {
                    Err(broken_pipe("the client's end is closed"))
                } else {
                    Ok(())
                };
            }
        }
        if let Some(writer) = state.writer.take() {
            writer.wake();
        }
        Ok(())
    }

    /// Writes one message, as a line of JSON.
    pub(super) fn send(&self, message: &impl serde::Serialize) -> std::io::Result<()> {
        self.push(&line(message)?, true)
    }

    /// Queues one message, as a line of JSON, for the writer task: it writes
    /// it with whatever else is queued once the tasks ready to run have run
    /// (others answering meanwhile join the same write).
    pub(super) fn send_soon(&self, message: &impl serde::Serialize) -> std::io::Result<()> {
        self.push(&line(message)?, false)
    }

    /// Waits while more than [`QUEUE_BYTES`] are queued (a client that does
    /// not read holds the server back).
    pub(super) async fn room(&self) {
        std::future::poll_fn(|cx| {
            let mut state = self.lock();
            if state.queued() <= QUEUE_BYTES || state.broken {
                Poll::Ready(())
            } else {
                state.waiting.push(cx.waker().clone());
                Poll::Pending
            }
        })
        .await;
    }

    /// Nothing more comes: the writer task ends once the queue is written.
    pub(super) fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        if let Some(writer) = state.writer.take() {
            writer.wake();
        }
    }
}

/// `message` as a line of JSON.
fn line(message: &impl serde::Serialize) -> std::io::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec(message).map_err(std::io::Error::from)?;
    bytes.push(b'\n');
    Ok(bytes)
}

pub(super) fn broken_pipe(why: &'static str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::BrokenPipe, why)
}

/// The writer task: writes what the pipe did not take at once, and what was
/// queued to go out together, until the transport is closed and all is
/// written (or the client's end is gone).
async fn drain(out: Arc<Output>) {
    loop {
        // Something to write, or the end.
        std::future::poll_fn(|cx| {
            let mut state = out.lock();
            if state.queued() > 0 || state.unflushed || state.closed || state.broken {
                Poll::Ready(())
            } else {
                state.writer = Some(cx.waker().clone());
                Poll::Pending
            }
        })
        .await;
        // The tasks ready to run (the other calls in flight) run first, and
        // their answers join this write: tokio wakes a yielding task once
        // its worker has no other task ready (or at its next maintenance).
        tokio::task::yield_now().await;
        let done = std::future::poll_fn(|cx| {
            let mut state = out.lock();
            match state.poll_write(cx) {
                Poll::Ready(()) => Poll::Ready(state.closed || state.broken),
                Poll::Pending => Poll::Pending,
            }
        })
        .await;
        if done {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client's end that records each write it is given.
    #[derive(Clone, Default)]
    struct Recorder(Arc<Mutex<Vec<Vec<u8>>>>);

    impl AsyncWrite for Recorder {
        fn poll_write(
            self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<std::io::Result<usize>> {
            self.0.lock().unwrap().push(buf.to_vec());
            Poll::Ready(Ok(buf.len()))
        }
        fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn answers_sent_together_go_out_in_one_write_and_in_order() {
        let writes = Recorder::default();
        let (out, writer) = Output::start(Box::new(writes.clone()));
        // Alone: written at once, by the sender.
        out.send(&1).unwrap();
        assert_eq!(*writes.0.lock().unwrap(), [b"1\n".to_vec()]);
        // Calls in flight: their answers wait for the writer, together; one
        // sent at once meanwhile does not overtake them.
        out.send_soon(&2).unwrap();
        out.send_soon(&3).unwrap();
        out.send(&4).unwrap();
        assert_eq!(
            writes.0.lock().unwrap().len(),
            1,
            "written before the writer ran"
        );
        out.close();
        writer.await.unwrap();
        assert_eq!(
            *writes.0.lock().unwrap(),
            [b"1\n".to_vec(), b"2\n3\n4\n".to_vec()]
        );
    }
}
