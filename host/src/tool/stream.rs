//! [`ToolStream`]: a tool's output, pulled part by part.

use std::future::Future;
use std::pin::Pin;

use super::{Collector, Part, ToolOutput, Usage};
use crate::error::CallError;

/// A part to come: what [`PartSource::next`] returns.
pub(crate) type NextPart<'a> =
    Pin<Box<dyn Future<Output = Option<Result<Part, CallError>>> + Send + 'a>>;

/// Where a stream's parts come from when they are produced as it is pulled
/// (a guest's stream of chunks). Implemented by the plugin module.
pub(crate) trait PartSource: Send {
    /// The next part; `None` once the source has ended or failed.
    fn next(&mut self) -> NextPart<'_>;

    /// What producing the parts has cost so far.
    fn usage(&self) -> Usage;
}

/// The output of a running tool, pulled part by part.
pub struct ToolStream {
    call_id: String,
    inner: StreamInner,
}

enum StreamInner {
    Ready(std::vec::IntoIter<Part>),
    Source(Box<dyn PartSource>),
    Channel(tokio::sync::mpsc::Receiver<Result<Part, CallError>>),
}

impl std::fmt::Debug for ToolStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolStream")
            .field("call_id", &self.call_id)
            .finish_non_exhaustive()
    }
}

impl ToolStream {
    /// A stream over a finished output: its JSON result first, then its parts.
    pub fn from_output(output: ToolOutput) -> Self {
        let call_id = output.call_id;
        let mut parts: Vec<Part> = output.result.into_iter().map(Part::Json).collect();
        parts.extend(output.parts);
        Self {
            call_id,
            inner: StreamInner::Ready(parts.into_iter()),
        }
    }

    /// A stream fed through a channel, for tools written natively in Rust: send
    /// parts (or an error) on the sender; the stream ends when it is dropped.
    pub fn channel(
        call_id: impl Into<String>,
        capacity: usize,
    ) -> (tokio::sync::mpsc::Sender<Result<Part, CallError>>, Self) {
        let (sender, receiver) = tokio::sync::mpsc::channel(capacity.max(1));
        let stream = Self {
            call_id: call_id.into(),
            inner: StreamInner::Channel(receiver),
        };
        (sender, stream)
    }

    /// A stream whose parts a source produces as it is pulled.
    pub(crate) fn from_source(call_id: String, source: Box<dyn PartSource>) -> Self {
        Self {
            call_id,
            inner: StreamInner::Source(source),
        }
    }

    /// The call ID this stream answers.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// What producing the parts has cost so far (zero unless a guest
    /// produces them).
    pub(crate) fn usage(&self) -> Usage {
        match &self.inner {
            StreamInner::Source(source) => source.usage(),
            _ => Usage::default(),
        }
    }

    /// The same stream, which calls `on_end` once when it ends: with what
    /// producing it cost, or with the error it ended with. A stream dropped
    /// before its end (a cancelled call) never calls it.
    #[must_use]
    pub fn on_end(self, on_end: impl FnOnce(Result<&Usage, &CallError>) + Send + 'static) -> Self {
        let call_id = self.call_id.clone();
        Self::from_source(
            call_id,
            Box::new(Watched {
                stream: self,
                on_part: None,
                on_end: Some(Box::new(on_end)),
            }),
        )
    }

    /// Calls `on_part` with each part as it is pulled (a span's chunk events).
    pub(crate) fn on_each(self, on_part: impl FnMut(&Part) + Send + 'static) -> Self {
        let call_id = self.call_id.clone();
        Self::from_source(
            call_id,
            Box::new(Watched {
                stream: self,
                on_part: Some(Box::new(on_part)),
                on_end: None,
            }),
        )
    }

    /// The next part; `None` once the stream has ended or failed.
    ///
    /// # Errors
    /// The tool's failure, an exhausted budget (the deadline and fuel cover the
    /// whole stream; the output limit covers all chunks together), or a trap.
    pub async fn next(&mut self) -> Option<Result<Part, CallError>> {
        match &mut self.inner {
            StreamInner::Ready(parts) => parts.next().map(Ok),
            StreamInner::Source(source) => source.next().await,
            StreamInner::Channel(receiver) => receiver.recv().await,
        }
    }

    /// Pulls the stream to its end and gathers it into one output: adjacent
    /// text chunks are joined; when every chunk is text, the JSON result is
    /// `{"result": "<all the text>"}`.
    ///
    /// # Errors
    /// The first error the stream gives.
    pub async fn collect(mut self) -> Result<ToolOutput, CallError> {
        let mut parts = Collector::new();
        while let Some(part) = self.next().await {
            parts.push(part?);
        }
        let usage = self.usage();
        Ok(parts.finish(self.call_id, usage))
    }
}

/// What [`ToolStream::on_end`] calls.
type OnEnd = Box<dyn FnOnce(Result<&Usage, &CallError>) + Send>;

/// What [`ToolStream::on_each`] calls.
type OnPart = Box<dyn FnMut(&Part) + Send>;

/// A stream watched part by part, or for its end.
struct Watched {
    stream: ToolStream,
    on_part: Option<OnPart>,
    on_end: Option<OnEnd>,
}

impl PartSource for Watched {
    fn next(&mut self) -> NextPart<'_> {
        Box::pin(async move {
            let part = self.stream.next().await;
            let ended = match &part {
                None => Some(Ok(self.stream.usage())),
                Some(Err(error)) => Some(Err(error)),
                Some(Ok(part)) => {
                    if let Some(on_part) = &mut self.on_part {
                        on_part(part);
                    }
                    None
                }
            };
            if let Some(outcome) = ended
                && let Some(on_end) = self.on_end.take()
            {
                match &outcome {
                    Ok(usage) => on_end(Ok(usage)),
                    Err(error) => on_end(Err(error)),
                }
            }
            part
        })
    }

    fn usage(&self) -> Usage {
        self.stream.usage()
    }
}
