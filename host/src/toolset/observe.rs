//! The call observer: one seam where metrics, spans and audit records watch
//! every call the driver runs, whichever front end started it.
//!
//! An observer is added to a [`Context`] ([`Context::with_observer`]); the
//! call driver ([`start`](super::start)) asks it to [`begin`](CallObserver::begin)
//! watching each call and tells the watch how the call ended: succeeded (at
//! the end of its stream, for a stream), failed (refused while prepared
//! too), or paused for an approval. A watch dropped without being told
//! belongs to a call that was cancelled.

use super::{ConfirmationRequest, Context, Started};
use crate::error::CallError;
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
}

/// One call being watched (see [`CallObserver::begin`]).
pub trait CallWatch: Send {
    /// The call ended so.
    fn ended(self: Box<Self>, outcome: Outcome<'_>);
}

/// The watches of one call, from the context's observers.
pub(super) struct Watches(Vec<Box<dyn CallWatch>>);

impl Watches {
    pub(super) fn begin(cx: &Context, spec: &ToolSpec) -> Self {
        Self(
            cx.observers()
                .iter()
                .map(|observer| observer.begin(cx, spec))
                .collect(),
        )
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
        match result {
            Ok(Started::Stream(stream)) => Ok(Started::Stream(stream.on_end(move |end| {
                self.ended(match end {
                    Ok(usage) => Outcome::Succeeded(usage),
                    Err(error) => Outcome::Failed(error),
                });
            }))),
            Ok(Started::Output(output)) => {
                self.ended(Outcome::Succeeded(&output.usage));
                Ok(Started::Output(output))
            }
            Ok(Started::NeedsApproval(request)) => {
                self.ended(Outcome::Paused(&request));
                Ok(Started::NeedsApproval(request))
            }
            Err(error) => {
                self.ended(Outcome::Failed(&error));
                Err(error)
            }
        }
    }
}
