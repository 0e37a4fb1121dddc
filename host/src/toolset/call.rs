//! The call driver: one call from the caller's side, the way the CLI, the MCP
//! server and any other front end (a web page, a queue worker) run it.
//!
//! [`start`] prepares the arguments ([`Tool::prepare`]: aliases, hooks,
//! coercion, the schema check), starts the tool (a stream when it streams),
//! and when a confirmation layer pauses the call
//! ([`CallError::ConfirmationRequired`]) asks an [`Approver`] and resumes once
//! with its [`Decision`]. The human is asked about the prepared arguments, and
//! the resumed call runs exactly those. [`Collector`](crate::tool::Collector)
//! gathers a stream into one output, as [`Started::collect`] does.

use serde_json::Value;

use super::{BoxFuture, ConfirmationRequest, Context, Decision, Tool, Toolset, ToolsetExt};
use crate::error::CallError;
use crate::tool::ToolOutput;
use crate::tool::ToolStream;

/// Who decides a call that needs a human's approval: a terminal prompt, an
/// MCP client's elicitation, a web page.
pub trait Approver: Send + Sync {
    /// The decision about `request`. Approve with the request's arguments
    /// ([`Decision::approve`]); other arguments are refused by the
    /// confirmation layer.
    ///
    /// # Errors
    /// When nobody can be asked ([`CallError::ConfirmationUnavailable`]); the
    /// call is not run.
    fn decide<'a>(
        &'a self,
        cx: &'a Context,
        request: &'a ConfirmationRequest,
    ) -> BoxFuture<'a, Result<Decision, CallError>>;
}

/// Nobody to ask: a call that needs approval ends with
/// [`CallError::ConfirmationRequired`], for the caller to resume later with a
/// [`Decision`] in its [`Context`] (a queue worker, a web page that answers in
/// another request).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoApprover;

impl Approver for NoApprover {
    fn decide<'a>(
        &'a self,
        _cx: &'a Context,
        request: &'a ConfirmationRequest,
    ) -> BoxFuture<'a, Result<Decision, CallError>> {
        let paused = CallError::ConfirmationRequired(Box::new(request.clone()));
        Box::pin(std::future::ready(Err(paused)))
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
    ) -> BoxFuture<'a, Result<Decision, CallError>> {
        Box::pin(std::future::ready(Ok(Decision::approve(request))))
    }
}

/// A call that started: its whole output, or a stream to pull.
#[derive(Debug)]
#[non_exhaustive]
pub enum Started {
    /// A tool that does not stream: its output.
    Output(ToolOutput),
    /// A streaming tool: its parts, as they come.
    Stream(ToolStream),
}

impl Started {
    /// The whole output: a stream is pulled to its end and gathered as
    /// [`ToolStream::collect`] does.
    ///
    /// # Errors
    /// The first error the stream gives.
    pub async fn collect(self) -> Result<ToolOutput, CallError> {
        match self {
            Self::Output(output) => Ok(output),
            Self::Stream(stream) => stream.collect().await,
        }
    }
}

/// Runs one call of `tool`: prepares the arguments, starts it (a stream when
/// it streams), and when it needs confirmation asks `approver` and resumes
/// once with the decision (under the call's own ID, so the approval is
/// single-use).
///
/// # Errors
/// Anything [`Tool::prepare`], [`Tool::invoke`] or [`Tool::stream`] returns;
/// [`CallError::ConfirmationRejected`] when the decision is a rejection; the
/// approver's error when nobody could be asked.
pub async fn start(
    tool: &dyn Tool,
    cx: &Context,
    arguments: Value,
    approver: &dyn Approver,
) -> Result<Started, CallError> {
    let arguments = tool.prepare(cx, arguments)?;
    match run(tool, cx, arguments).await {
        Err(CallError::ConfirmationRequired(request)) => {
            let decision = approver.decide(cx, &request).await?;
            let request = *request;
            let decided = cx.clone().with_decision(request.call_id, decision);
            // The layer asked about prepared arguments: they go as they are.
            run(tool, &decided, request.arguments).await
        }
        other => other,
    }
}

/// Finds `name` in `toolset` and runs it as [`start`] does, to its whole
/// output.
///
/// # Errors
/// As [`ToolsetExt::find`], [`start`] and [`Started::collect`].
pub async fn call(
    toolset: &(impl Toolset + ?Sized),
    cx: &Context,
    name: &str,
    arguments: Value,
    approver: &dyn Approver,
) -> Result<ToolOutput, CallError> {
    let tool = toolset.find(cx, name)?;
    start(&*tool, cx, arguments, approver)
        .await?
        .collect()
        .await
}

async fn run(tool: &dyn Tool, cx: &Context, arguments: Value) -> Result<Started, CallError> {
    if tool.spec().streaming {
        tool.stream(cx, arguments).await.map(Started::Stream)
    } else {
        tool.invoke(cx, arguments).await.map(Started::Output)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use serde_json::json;

    use super::*;
    use crate::toolset::filter::tests::{Native, Probe};
    use crate::toolset::{ArgumentsHook, Confirm, WithMiddleware};

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
        ) -> BoxFuture<'a, Result<Decision, CallError>> {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(request.clone());
            Box::pin(std::future::ready(Ok(Decision::approve(request))))
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
            ) -> BoxFuture<'a, Result<Decision, CallError>> {
                Box::pin(std::future::ready(Ok(Decision::reject("no"))))
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
}
