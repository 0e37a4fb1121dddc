//! The call driver: one call from the caller's side, the one way the CLI,
//! the MCP server, tasks, the executor and the library run a tool.
//!
//! [`start`] prepares the arguments once ([`Tool::prepare`]: aliases, hooks,
//! coercion, the schema check), runs the tool ([`Tool::run`]), and when a
//! layer pauses the call for a human's approval ([`Started::NeedsApproval`])
//! asks an [`Approver`] and resumes once with its [`Decision`]: the same
//! prepared arguments, so the human is asked about exactly what runs, and
//! the resumed run re-checks only the approval's binding. An approver that
//! cannot decide now ([`NoApprover`]) leaves the pause to the caller, who
//! resumes it later with [`start_prepared`] and the decision in its context.
//! [`Started::collect`] gathers a stream into one output.

use serde_json::Value;
use tracing::{Instrument as _, Span};

use super::observe::Watches;
use super::{BoxFuture, ConfirmationRequest, Context, Decision, Tool};
use crate::error::CallError;
use crate::spans;
use crate::tool::{Prepared, ToolOutput, ToolStream};

/// Who decides a call that needs a human's approval: a terminal prompt, an
/// MCP client's elicitation, a web page.
pub trait Approver: Send + Sync {
    /// The decision about `request`, or `None` when it cannot be decided now
    /// (the call pauses: [`Started::NeedsApproval`]). Approve with the
    /// request's arguments ([`Decision::approve`]); other arguments are
    /// refused by the confirmation layer.
    ///
    /// # Errors
    /// When nobody can be asked ([`CallError::ConfirmationUnavailable`]); the
    /// call is not run.
    fn decide<'a>(
        &'a self,
        cx: &'a Context,
        request: &'a ConfirmationRequest,
    ) -> BoxFuture<'a, Result<Option<Decision>, CallError>>;
}

/// Nobody to ask now: a call that needs approval pauses
/// ([`Started::NeedsApproval`]), for the caller to resume later with a
/// [`Decision`] in its [`Context`] (a queue worker, a web page that answers in
/// another request, an MCP client's retry).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoApprover;

impl Approver for NoApprover {
    fn decide<'a>(
        &'a self,
        _cx: &'a Context,
        _request: &'a ConfirmationRequest,
    ) -> BoxFuture<'a, Result<Option<Decision>, CallError>> {
        Box::pin(std::future::ready(Ok(None)))
    }
}

/// Approves every call as asked (the CLI's `--yes`).
#[derive(Debug, Default, Clone, Copy)]
pub struct ApproveAll;

impl Approver for ApproveAll {
    fn decide<'a>(
        &'a self,
        _cx: &'a Context,
        request: &'a ConfirmationRequest,
    ) -> BoxFuture<'a, Result<Option<Decision>, CallError>> {
        Box::pin(std::future::ready(Ok(Some(Decision::approve(request)))))
    }
}

/// A call that started: its whole output, a stream to pull, or a pause for a
/// human's approval.
#[derive(Debug)]
#[non_exhaustive]
pub enum Started {
    /// A tool that does not stream: its output.
    Output(ToolOutput),
    /// A streaming tool: its parts, as they come.
    Stream(ToolStream),
    /// The call needs a human's approval and nobody could decide it now: the
    /// tool has not run. Resume with the decision in the context
    /// ([`Context::with_decision`], under the request's call ID) and the
    /// request's arguments.
    NeedsApproval(Box<ConfirmationRequest>),
}

impl Started {
    /// The whole output: a stream is pulled to its end and gathered as
    /// [`ToolStream::collect`] does.
    ///
    /// # Errors
    /// The first error the stream gives; [`CallError::ConfirmationRequired`]
    /// for a pause.
    pub async fn collect(self) -> Result<ToolOutput, CallError> {
        match self {
            Self::Output(output) => Ok(output),
            Self::Stream(stream) => stream.collect().await,
            Self::NeedsApproval(request) => Err(CallError::ConfirmationRequired(request)),
        }
    }

    /// The output as a stream of parts (a whole output's JSON result first).
    ///
    /// # Errors
    /// [`CallError::ConfirmationRequired`] for a pause.
    pub fn into_stream(self) -> Result<ToolStream, CallError> {
        match self {
            Self::Output(output) => Ok(ToolStream::from_output(output)),
            Self::Stream(stream) => Ok(stream),
            Self::NeedsApproval(request) => Err(CallError::ConfirmationRequired(request)),
        }
    }
}

/// Runs one call of `tool`: prepares the arguments, runs it, and when it
/// needs approval asks `approver` and resumes once with the decision (under
/// the call's own ID, so the approval is single-use).
///
/// # Errors
/// Anything [`Tool::prepare`] or [`Tool::run`] returns;
/// [`CallError::ConfirmationRejected`] when the decision is a rejection; the
/// approver's error when nobody could be asked.
pub async fn start(
    tool: &dyn Tool,
    cx: &Context,
    arguments: Value,
    approver: &dyn Approver,
) -> Result<Started, CallError> {
    let span = spans::call(tool.spec(), cx.call_id(), cx.invocation_id());
    let prepared = span.in_scope(|| validate(tool, cx, arguments));
    drive_in(span, tool, cx, prepared, approver).await
}

/// As [`start`], with arguments already prepared by `tool` (a front end
/// that needed them first, to check a resumed approval against them).
///
/// # Errors
/// As [`start`].
pub async fn start_prepared(
    tool: &dyn Tool,
    cx: &Context,
    arguments: Prepared,
    approver: &dyn Approver,
) -> Result<Started, CallError> {
    drive(tool, cx, Ok(arguments), approver).await
}

/// The driver itself: runs a call whose arguments were prepared (or could
/// not be, which ends it), watched by the context's observers.
pub(crate) async fn drive(
    tool: &dyn Tool,
    cx: &Context,
    arguments: Result<Prepared, CallError>,
    approver: &dyn Approver,
) -> Result<Started, CallError> {
    drive_in(
        spans::call(tool.spec(), cx.call_id(), cx.invocation_id()),
        tool,
        cx,
        arguments,
        approver,
    )
    .await
}

/// [`Tool::prepare`] in its span (`toolhost.validate`), for a front end that
/// needs the prepared arguments before it drives the call.
pub(crate) fn validate(
    tool: &dyn Tool,
    cx: &Context,
    arguments: Value,
) -> Result<Prepared, CallError> {
    let span = spans::validate();
    let _entered = span.enter();
    let prepared = tool.prepare(cx, arguments);
    if let Err(error) = &prepared {
        span.record("error.type", error.kind());
    }
    prepared
}

/// [`drive`] in the call's span (`span`), which ends with the call.
async fn drive_in(
    span: Span,
    tool: &dyn Tool,
    cx: &Context,
    arguments: Result<Prepared, CallError>,
    approver: &dyn Approver,
) -> Result<Started, CallError> {
    if let Ok(arguments) = &arguments {
        spans::arguments(&span, arguments.arguments());
    }
    let watches = Watches::begin(
        cx,
        tool.spec(),
        arguments.as_ref().ok().map(Prepared::arguments),
    )
    .with_span(&span);
    let result = match arguments {
        Ok(arguments) => {
            run(tool, cx, arguments, approver)
                .instrument(span.clone())
                .await
        }
        Err(error) => Err(error),
    };
    watches.finish(content(&span, result))
}

/// Records a whole output's result on the call's span, and a stream's parts
/// as its events, when the span is enabled.
fn content(span: &Span, result: Result<Started, CallError>) -> Result<Started, CallError> {
    if span.is_disabled() {
        return result;
    }
    match result {
        Ok(Started::Output(output)) => {
            spans::output(span, &output);
            Ok(Started::Output(output))
        }
        Ok(Started::Stream(stream)) => {
            let chunks = span.clone();
            Ok(Started::Stream(
                stream.on_each(move |part| spans::chunk(&chunks, part)),
            ))
        }
        other => other,
    }
}

async fn run(
    tool: &dyn Tool,
    cx: &Context,
    arguments: Prepared,
    approver: &dyn Approver,
) -> Result<Started, CallError> {
    match tool.run(cx, arguments).await? {
        Started::NeedsApproval(request) => {
            let span = spans::approval();
            let decision = approver.decide(cx, &request).instrument(span.clone()).await;
            spans::approval_answered(
                &span,
                match &decision {
                    Ok(Some(Decision::Approve { .. })) => "approved",
                    Ok(Some(Decision::Reject { .. })) => "rejected",
                    Ok(None) => "deferred",
                    Err(_) => "unavailable",
                },
            );
            drop(span);
            let Some(decision) = decision? else {
                return Ok(Started::NeedsApproval(request));
            };
            // Only the confirmation layer makes a request (it cannot be built
            // outside this crate), from the prepared arguments: they resume
            // as they are, not prepared again.
            let ConfirmationRequest {
                call_id, arguments, ..
            } = *request;
            let decided = cx.clone().with_decision(call_id, decision);
            tool.run(&decided, Prepared::unchecked(arguments)).await
        }
        started => Ok(started),
    }
}

/// Finds `name` in `toolset` and runs it as [`start`] does, to its whole
/// output.
///
/// # Errors
/// As [`ToolsetExt::find`](super::ToolsetExt::find), [`start`] and [`Started::collect`].
pub async fn call(
    toolset: &(impl super::Toolset + ?Sized),
    cx: &Context,
    name: &str,
    arguments: Value,
    approver: &dyn Approver,
) -> Result<ToolOutput, CallError> {
    let tool = super::ToolsetExt::find(toolset, cx, name)?;
    start(&*tool, cx, arguments, approver)
        .await?
        .collect()
        .await
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use serde_json::json;

    use super::*;
    use crate::toolset::filter::tests::{Native, Probe};
    use crate::toolset::{ArgumentsHook, Confirm, ToolsetExt, WithMiddleware};

    /// A probe taking `{"count": integer}` (required), under a confirmation rule.
    fn guarded() -> (Arc<Probe>, Confirm<Native>) {
        let probe = Probe::with_schema(
            "order",
            json!({
                "type": "object",
                "properties": {"count": {"type": "integer"}},
                "required": ["count"],
                "additionalProperties": false
            }),
        );
        let set = Confirm::new(Native(vec![probe.clone() as Arc<dyn Tool>])).require("order");
        (probe, set)
    }

    /// Approves, and remembers what it was asked.
    #[derive(Default)]
    struct Recorder(Mutex<Vec<ConfirmationRequest>>);

    impl Approver for Recorder {
        fn decide<'a>(
            &'a self,
            _cx: &'a Context,
            request: &'a ConfirmationRequest,
        ) -> BoxFuture<'a, Result<Option<Decision>, CallError>> {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(request.clone());
            Box::pin(std::future::ready(Ok(Some(Decision::approve(request)))))
        }
    }

    #[tokio::test]
    async fn the_human_approves_the_coerced_arguments_and_they_run() {
        let (probe, set) = guarded();
        let asked = Recorder::default();
        let output = call(
            &set,
            &Context::new(),
            "order",
            json!({"count": "3"}),
            &asked,
        )
        .await
        .unwrap();
        let asked = asked.0.into_inner().unwrap();
        assert_eq!(asked.len(), 1);
        assert_eq!(
            asked[0].arguments,
            json!({"count": 3}),
            "asked after coercion"
        );
        assert_eq!(output.result.unwrap()["arguments"], json!({"count": 3}));
        assert_eq!(probe.runs(), 1);
    }

    #[tokio::test]
    async fn invalid_arguments_are_refused_before_anyone_is_asked() {
        let (probe, set) = guarded();
        let asked = Recorder::default();
        let err = call(&set, &Context::new(), "order", json!({"cuont": 3}), &asked)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, CallError::InvalidArguments { problems, .. } if problems.len() == 2),
            "{err:?}"
        );
        assert!(asked.0.into_inner().unwrap().is_empty(), "nobody was asked");
        assert_eq!(probe.runs(), 0);
        // Without a driver too: the confirmation layer checks before it pauses.
        let err = set
            .invoke(&Context::new(), "order", json!({}))
            .await
            .unwrap_err();
        assert!(matches!(err, CallError::InvalidArguments { .. }), "{err:?}");
    }

    #[tokio::test]
    async fn nobody_to_ask_pauses_and_a_rejection_does_not_run() {
        let (probe, set) = guarded();
        let cx = Context::new().with_call_id("c-1");
        let err = call(&set, &cx, "order", json!({"count": 1}), &NoApprover)
            .await
            .unwrap_err();
        let CallError::ConfirmationRequired(request) = err else {
            panic!("expected a pause, got {err:?}");
        };
        assert_eq!(request.call_id, "c-1");

        struct Reject;
        impl Approver for Reject {
            fn decide<'a>(
                &'a self,
                _cx: &'a Context,
                _request: &'a ConfirmationRequest,
            ) -> BoxFuture<'a, Result<Option<Decision>, CallError>> {
                Box::pin(std::future::ready(Ok(Some(Decision::reject("no")))))
            }
        }
        let err = call(&set, &Context::new(), "order", json!({"count": 1}), &Reject)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, CallError::ConfirmationRejected { reason: Some(r), .. } if r == "no"),
            "{err:?}"
        );
        assert_eq!(probe.runs(), 0);
        // Approving everything runs it, once.
        call(
            &set,
            &Context::new(),
            "order",
            json!({"count": 1}),
            &ApproveAll,
        )
        .await
        .unwrap();
        assert_eq!(probe.runs(), 1);
    }

    #[tokio::test]
    async fn an_argument_hook_runs_before_the_question_and_once() {
        let (probe, set) = guarded();
        let hooked = WithMiddleware::new(
            set,
            vec![Arc::new(ArgumentsHook::new(|_, _, mut arguments| {
                // Not idempotent: it would show if the hook ran twice.
                if let Some(count) = arguments.get("count").and_then(Value::as_i64) {
                    arguments["count"] = json!(count * 10);
                }
                Ok(arguments)
            }))],
        );
        let asked = Recorder::default();
        let output = call(
            &hooked,
            &Context::new(),
            "order",
            json!({"count": 2}),
            &asked,
        )
        .await
        .unwrap();
        assert_eq!(
            asked.0.into_inner().unwrap()[0].arguments,
            json!({"count": 20})
        );
        assert_eq!(output.result.unwrap()["arguments"], json!({"count": 20}));
        assert_eq!(probe.runs(), 1);
    }

    #[tokio::test]
    async fn a_hook_inside_the_confirmation_layer_runs_once_too() {
        let probe = Probe::with_schema(
            "order",
            json!({"type": "object", "properties": {"count": {"type": "integer"}}}),
        );
        // Middleware inside `Confirm`: the resumed run is not prepared again.
        let hooked = WithMiddleware::new(
            Native(vec![probe.clone() as Arc<dyn Tool>]),
            vec![Arc::new(ArgumentsHook::new(|_, _, mut arguments| {
                if let Some(count) = arguments.get("count").and_then(Value::as_i64) {
                    arguments["count"] = json!(count * 10);
                }
                Ok(arguments)
            }))],
        );
        let set = Confirm::new(hooked).require("order");
        let output = call(
            &set,
            &Context::new(),
            "order",
            json!({"count": 2}),
            &ApproveAll,
        )
        .await
        .unwrap();
        assert_eq!(output.result.unwrap()["arguments"], json!({"count": 20}));
        assert_eq!(probe.runs(), 1);
    }

    #[tokio::test]
    async fn a_pause_is_a_start_not_an_error_and_resumes_with_the_decision() {
        let (probe, set) = guarded();
        let cx = Context::new().with_call_id("c-9");
        let tool = set.find(&cx, "order").unwrap();
        let started = start(&*tool, &cx, json!({"count": "4"}), &NoApprover)
            .await
            .unwrap();
        let Started::NeedsApproval(request) = started else {
            panic!("expected a pause, got {started:?}");
        };
        assert_eq!(request.arguments, json!({"count": 4}));
        assert_eq!(probe.runs(), 0);
        // The caller decides later, in another request: the same call ID.
        let decided = cx.with_decision("c-9", Decision::approve(&request));
        let output = start(&*tool, &decided, json!({"count": 4}), &NoApprover)
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        assert_eq!(output.result.unwrap()["arguments"], json!({"count": 4}));
        assert_eq!(probe.runs(), 1);
    }

    /// A native tool that streams three text parts.
    struct Lines(crate::tool::ToolSpec);

    impl Tool for Lines {
        fn spec(&self) -> &crate::tool::ToolSpec {
            &self.0
        }

        fn run<'a>(
            &'a self,
            cx: &'a Context,
            _arguments: Prepared,
        ) -> BoxFuture<'a, Result<Started, CallError>> {
            let (parts, stream) = ToolStream::channel(cx.call_id(), 4);
            Box::pin(async move {
                for line in ["a", "b", "c"] {
                    let _ = parts.send(Ok(crate::tool::Part::Text(line.into()))).await;
                }
                Ok(Started::Stream(stream))
            })
        }
    }

    #[tokio::test]
    async fn metrics_count_a_stream_when_it_ends() {
        let mut spec =
            crate::tool::ToolSpec::new("lines", "three lines", json!({"type": "object"}));
        spec.streaming = true;
        let metrics = crate::toolset::Metrics::new();
        let set = WithMiddleware::new(
            Native(vec![Arc::new(Lines(spec)) as Arc<dyn Tool>]),
            vec![Arc::new(metrics.clone())],
        );
        let mut stream = set
            .stream(&Context::new(), "lines", json!({}))
            .await
            .unwrap();
        assert!(stream.next().await.is_some());
        assert!(metrics.snapshot().is_empty(), "not ended yet");
        while stream.next().await.is_some() {}
        let figures = metrics.snapshot();
        assert_eq!(figures["lines"].calls, 1);
        assert_eq!(figures["lines"].errors, 0);
    }

    /// Notes how every call it watches ends.
    #[derive(Default)]
    struct Journal(Arc<Mutex<Vec<String>>>);

    struct Entry(Arc<Mutex<Vec<String>>>, String);

    impl crate::toolset::CallObserver for Journal {
        fn begin(
            &self,
            cx: &Context,
            spec: &crate::tool::ToolSpec,
        ) -> Box<dyn crate::toolset::CallWatch> {
            let name = format!("{}/{}", spec.name, cx.call_id());
            Box::new(Entry(Arc::clone(&self.0), name))
        }
    }

    impl crate::toolset::CallWatch for Entry {
        fn ended(self: Box<Self>, outcome: crate::toolset::Outcome<'_>) {
            let how = match outcome {
                crate::toolset::Outcome::Succeeded(_) => "succeeded",
                crate::toolset::Outcome::Failed(_) => "failed",
                crate::toolset::Outcome::Paused(_) => "paused",
            };
            self.0.lock().unwrap().push(format!("{} {how}", self.1));
        }
    }

    #[tokio::test]
    async fn an_observer_is_told_how_every_call_ends() {
        let (_probe, set) = guarded();
        let journal = Journal::default();
        let seen = Arc::clone(&journal.0);
        let cx = Context::new().with_observer(Arc::new(journal));
        let mut lines = crate::tool::ToolSpec::new("lines", "", json!({"type": "object"}));
        lines.streaming = true;
        let streams = Native(vec![Arc::new(Lines(lines)) as Arc<dyn Tool>]);
        // Refused while prepared, paused, approved and run, streamed.
        let _ = call(&set, &cx.for_call("a"), "order", json!({}), &NoApprover).await;
        let _ = call(
            &set,
            &cx.for_call("b"),
            "order",
            json!({"count": 1}),
            &NoApprover,
        )
        .await;
        call(
            &set,
            &cx.for_call("c"),
            "order",
            json!({"count": 1}),
            &ApproveAll,
        )
        .await
        .unwrap();
        let mut stream = streams
            .stream(&cx.for_call("d"), "lines", json!({}))
            .await
            .unwrap();
        assert_eq!(seen.lock().unwrap().len(), 3, "a stream ends when it ends");
        while stream.next().await.is_some() {}
        // A cancelled call (a stream dropped before its end) is told nothing.
        drop(
            streams
                .stream(&cx.for_call("e"), "lines", json!({}))
                .await
                .unwrap(),
        );
        assert_eq!(
            *seen.lock().unwrap(),
            [
                "order/a failed",
                "order/b paused",
                "order/c succeeded",
                "lines/d succeeded"
            ]
        );
    }
}
