//! What a guest writes to the host's log: its stdout and stderr, line by line,
//! and the messages of its `log` import, tagged with plugin, tool and call ID,
//! under one cap per call, with control characters escaped so no guest text
//! can forge a log line. None of it reaches the host's own stdout (which may
//! be an MCP stdio channel).

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use wasmtime_wasi::WasiCtxBuilder;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

use super::CallTag;

/// The longest line logged as one event; longer lines are split.
const MAX_LINE: usize = 4 << 10;
/// How much the guest may write in one go (it is always ready for more).
const WRITE_PERMIT: usize = 64 << 10;

/// Which of the two streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    fn name(self) -> &'static str {
        match self {
            Self::Stdout => "stdout",
            Self::Stderr => "stderr",
        }
    }
}

/// The log output of one call. Bytes past the cap (shared by both streams and
/// the `log` import) are counted and dropped, and the guest is not told: it
/// goes on as if written.
#[derive(Clone)]
pub(crate) struct StdioLog {
    state: Arc<Mutex<State>>,
}

struct State {
    call: Arc<CallTag>,
    limit: u64,
    kept: u64,
    dropped: u64,
    lines: [Vec<u8>; 2],
}

impl StdioLog {
    pub(crate) fn new(call: Arc<CallTag>, limit: u64) -> Self {
        Self {
            state: Arc::new(Mutex::new(State {
                call,
                limit,
                kept: 0,
                dropped: 0,
                lines: [Vec::new(), Vec::new()],
            })),
        }
    }

    /// Starts the next call on the same instance: the last call's partial
    /// lines and cap report are logged under it, then the cap starts over.
    pub(crate) fn rebind(&self, call: Arc<CallTag>) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.finish();
        state.call = call;
        state.kept = 0;
        state.dropped = 0;
    }

    /// A message of the guest's `log` import at `level` (`cut`: the guest's
    /// message was longer); it counts toward the same cap as stdout and
    /// stderr (only if the level is logged at all).
    pub(crate) fn log(&self, level: tracing::Level, message: &str, cut: bool) {
        let enabled = match level {
            tracing::Level::TRACE => {
                tracing::enabled!(target: "toolhost::plugin", tracing::Level::TRACE)
            }
            tracing::Level::DEBUG => {
                tracing::enabled!(target: "toolhost::plugin", tracing::Level::DEBUG)
            }
            tracing::Level::INFO => {
                tracing::enabled!(target: "toolhost::plugin", tracing::Level::INFO)
            }
            tracing::Level::WARN => {
                tracing::enabled!(target: "toolhost::plugin", tracing::Level::WARN)
            }
            tracing::Level::ERROR => {
                tracing::enabled!(target: "toolhost::plugin", tracing::Level::ERROR)
            }
        };
        if !enabled {
            return;
        }
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let take = state.admit(message.len());
        if take == 0 && !message.is_empty() {
            return;
        }
        let mut end = take;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        let text = state
            .call
            .leaks
            .masked(crate::log::escape_control(&message[..end]));
        let cut = if cut || end < message.len() {
            "…"
        } else {
            ""
        };
        let (plugin, tool, call) = (&*state.call.plugin, &state.call.tool, &state.call.call_id);
        match level {
            tracing::Level::TRACE => {
                tracing::trace!(target: "toolhost::plugin", plugin, tool, call, "{text}{cut}")
            }
            tracing::Level::DEBUG => {
                tracing::debug!(target: "toolhost::plugin", plugin, tool, call, "{text}{cut}")
            }
            tracing::Level::INFO => {
                tracing::info!(target: "toolhost::plugin", plugin, tool, call, "{text}{cut}")
            }
            tracing::Level::WARN => {
                tracing::warn!(target: "toolhost::plugin", plugin, tool, call, "{text}{cut}")
            }
            tracing::Level::ERROR => {
                tracing::error!(target: "toolhost::plugin", plugin, tool, call, "{text}{cut}")
            }
        }
    }

    pub(crate) fn sink(&self, stream: Stream) -> Sink {
        Sink {
            state: Arc::clone(&self.state),
            stream,
        }
    }
}

/// Sends a call's stdout and stderr to its log (stdin stays empty).
pub(super) fn add_to_wasi(stdio: &StdioLog, builder: &mut WasiCtxBuilder) {
    builder
        .stdout(stdio.sink(Stream::Stdout))
        .stderr(stdio.sink(Stream::Stderr));
}

impl State {
    /// How many of `len` bytes fit under the cap; the rest are counted as dropped.
    fn admit(&mut self, len: usize) -> usize {
        let room = self.limit.saturating_sub(self.kept);
        let take = usize::try_from(room).unwrap_or(usize::MAX).min(len);
        if take < len {
            if self.dropped == 0 {
                tracing::warn!(
                    target: "toolhost::plugin",
                    plugin = %self.call.plugin, tool = %self.call.tool, call = %self.call.call_id,
                    limit = self.limit,
                    "guest log output reached its cap; further output of this call is dropped"
                );
            }
            self.dropped += (len - take) as u64;
        }
        self.kept += take as u64;
        take
    }

    fn accept(&mut self, stream: Stream, bytes: &[u8]) {
        let take = self.admit(bytes.len());
        let index = stream as usize;
        for &byte in &bytes[..take] {
            if byte == b'\n' {
                self.emit(stream);
            } else {
                self.lines[index].push(byte);
                if self.lines[index].len() >= MAX_LINE {
                    self.emit(stream);
                }
            }
        }
    }

    fn emit(&mut self, stream: Stream) {
        let line = std::mem::take(&mut self.lines[stream as usize]);
        let text = String::from_utf8_lossy(&line);
        let text = self
            .call
            .leaks
            .masked(crate::log::escape_control(text.trim_end_matches('\r')));
        let (plugin, tool, call) = (&*self.call.plugin, &self.call.tool, &self.call.call_id);
        match stream {
            Stream::Stdout => {
                tracing::info!(target: "toolhost::plugin", plugin, tool, call, stream = "stdout", "{text}")
            }
            Stream::Stderr => {
                tracing::warn!(target: "toolhost::plugin", plugin, tool, call, stream = "stderr", "{text}")
            }
        }
    }
}

impl Drop for State {
    fn drop(&mut self) {
        self.finish();
    }
}

impl State {
    /// Logs what is left of a call's output: partial lines, and how much the cap dropped.
    fn finish(&mut self) {
        for stream in [Stream::Stdout, Stream::Stderr] {
            if !self.lines[stream as usize].is_empty() {
                self.emit(stream);
            }
        }
        if self.dropped > 0 {
            tracing::warn!(
                target: "toolhost::plugin",
                plugin = %self.call.plugin, tool = %self.call.tool, call = %self.call.call_id,
                kept = self.kept, dropped = self.dropped,
                "guest log output (stdout, stderr, log) was capped: {} bytes dropped", self.dropped
            );
        }
    }
}

/// One stream of a call's stdio, as handed to the WASI context.
#[derive(Clone)]
pub(crate) struct Sink {
    state: Arc<Mutex<State>>,
    stream: Stream,
}

impl Sink {
    fn write_bytes(&self, bytes: &[u8]) {
        // Logging cannot leave the state half-updated in a way that matters.
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.accept(self.stream, bytes);
    }
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sink")
            .field("stream", &self.stream.name())
            .finish_non_exhaustive()
    }
}

impl IsTerminal for Sink {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for Sink {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl OutputStream for Sink {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.write_bytes(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(WRITE_PERMIT)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for Sink {
    async fn ready(&mut self) {}
}

impl tokio::io::AsyncWrite for Sink {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.write_bytes(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
