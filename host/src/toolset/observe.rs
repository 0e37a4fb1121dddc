//! The call observer: one seam where metrics, spans and audit records watch
//! every call the driver runs, whichever front end started it.
//!
//! An observer is added to a [`Context`] ([`Context::with_observer`]); the
//! call driver ([`start`](super::start)) asks it to [`begin`](CallObserver::begin)
//! watching each call and tells the watch how the call ended: succeeded (at
//! the end of its stream, for a stream), failed (refused while prepared
//! too), or paused for an approval. A watch dropped without being told
//! belongs to a call that was cancelled.

use tracing::Span;

use super::{ConfirmationRequest, Context, Started};
use crate::Engine;
use crate::error::CallError;
use crate::spans;
use crate::tool::{ToolSpec, Usage};

/// How a call ended, as an observer is told.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Outcome<'a> {
    /// The call ran to its end at this cost.
    Succeeded(&'a Usage),
    /// The call failed or was refused.
    Failed(&'a CallError),
    /// The call paused for a human's approval; the tool did not run. Its
    /// resumption is a call of its own.
    Paused(&'a ConfirmationRequest),
}

/// Watches calls: a metrics registry, a tracer, an audit log.
pub trait CallObserver: Send + Sync {
    /// A call of `spec` begins in `cx`: the watch returned is told how it
    /// ends ([`CallWatch::ended`]), or dropped untold if it is cancelled.
    fn begin(&self, cx: &Context, spec: &ToolSpec) -> Box<dyn CallWatch>;

    /// As [`CallObserver::begin`], with the call's checked arguments when
    /// they could be prepared (an audit log digests them). By default the
    /// arguments are ignored.
    fn begin_call(
        &self,
        cx: &Context,
        spec: &ToolSpec,
        arguments: Option<&serde_json::Value>,
    ) -> Box<dyn CallWatch> {
        let _ = arguments;
        self.begin(cx, spec)
    }
}

/// One call being watched (see [`CallObserver::begin`]).
pub trait CallWatch: Send {
    /// The call ended so.
    fn ended(self: Box<Self>, outcome: Outcome<'_>);
}

/// The watches of one call, from the context's observers.
pub(super) struct Watches(Vec<Box<dyn CallWatch>>);

impl Watches {
    pub(super) fn begin(
        cx: &Context,
        spec: &ToolSpec,
        arguments: Option<&serde_json::Value>,
    ) -> Self {
        Self(
            cx.observers()
                .iter()
                .map(|observer| observer.begin_call(cx, spec, arguments))
                .collect(),
        )
    }

    /// Adds the call's span ([`crate::spans::call`]), told how the call ends
    /// like the observers' watches, unless it is disabled (telemetry off).
    pub(super) fn with_span(mut self, span: &Span) -> Self {
        if !span.is_disabled() {
            self.0.push(Box::new(SpanWatch(span.clone())));
        }
        self
    }

    fn ended(self, outcome: Outcome<'_>) {
        for watch in self.0 {
            watch.ended(outcome);
        }
    }

    /// Tells the watches how `result` ended: now, or at the end of its stream.
    pub(super) fn finish(self, result: Result<Started, CallError>) -> Result<Started, CallError> {
        if self.0.is_empty() {
            return result;
        }
        when_ended(result, move |outcome| self.ended(outcome))
    }
}

/// The call's span, which records how the call ended and closes then.
struct SpanWatch(Span);

impl CallWatch for SpanWatch {
    fn ended(self: Box<Self>, outcome: Outcome<'_>) {
        match outcome {
            Outcome::Succeeded(usage) => spans::succeeded(&self.0, usage),
            Outcome::Failed(error) => spans::failed(&self.0, error),
            Outcome::Paused(_) => spans::paused(&self.0),
        }
    }
}

/// Calls `on_end` once the call `result` ends: now for a whole output, an
/// error or a pause; for a stream at its end (never if it is dropped first).
pub(super) fn when_ended(
    result: Result<Started, CallError>,
    on_end: impl FnOnce(Outcome<'_>) + Send + 'static,
) -> Result<Started, CallError> {
    match result {
        Ok(Started::Stream(stream)) => Ok(Started::Stream(stream.on_end(move |end| {
            on_end(match end {
                Ok(usage) => Outcome::Succeeded(usage),
                Err(error) => Outcome::Failed(error),
            });
        }))),
        Ok(Started::Output(output)) => {
            on_end(Outcome::Succeeded(&output.usage));
            Ok(Started::Output(output))
        }
        Ok(Started::NeedsApproval(request)) => {
            on_end(Outcome::Paused(&request));
            Ok(Started::NeedsApproval(request))
        }
        Err(error) => {
            on_end(Outcome::Failed(&error));
            Err(error)
        }
    }
}

/// Ends the invocation of every call that is its own (its invocation ID is
/// its call ID: nothing else will share its scratch state) when the call
/// ends: its state is dropped (without a round trip to Redis when the call
/// set none, or never ran because it paused), and so are idle instances kept
/// for it. A cancelled call's state is dropped too. The MCP server watches
/// its calls with one.
#[derive(Clone)]
pub struct OwnInvocations {
    engine: Engine,
}

impl OwnInvocations {
    /// An observer ending own invocations in `engine`.
    pub fn new(engine: &Engine) -> Self {
        Self {
            engine: engine.clone(),
        }
    }
}

impl CallObserver for OwnInvocations {
    fn begin(&self, cx: &Context, _spec: &ToolSpec) -> Box<dyn CallWatch> {
        let own = cx.invocation_id() == cx.call_id();
        Box::new(own.then(|| InvocationEnd {
            engine: self.engine.clone(),
            invocation: cx.invocation_id().to_owned(),
            // Until the call says it set none (a call cut short may have).
            wrote_state: true,
        }))
    }
}

/// Ends a call's own invocation when dropped (also when the call is
/// cancelled); its state is deleted unless the call is known to have set none.
struct InvocationEnd {
    engine: Engine,
    invocation: String,
    wrote_state: bool,
}

impl CallWatch for Option<InvocationEnd> {
    fn ended(mut self: Box<Self>, outcome: Outcome<'_>) {
        if let Some(end) = self.as_mut() {
            end.wrote_state = match outcome {
                Outcome::Succeeded(usage) => usage.wrote_state,
                Outcome::Paused(_) => false,
                Outcome::Failed(_) => true,
            };
        }
    }
}

impl Drop for InvocationEnd {
    fn drop(&mut self) {
        self.engine
            .end_call_invocation(&self.invocation, self.wrote_state);
    }
}
