//! The fallback layer for names no tool has (Eino's `UnknownToolsHandler`).

use std::sync::Arc;

use serde_json::{Value, json};

use super::{BoxFuture, Context, Prompt, Resource, ResourceTemplate, Started, Tool, Toolset};
use crate::catalog::Kinds;
use crate::error::CallError;
use crate::tool::{Prepared, ToolOutput, ToolSpec};

/// What an unknown-tool handler returns: a call it answers, owning what it needs.
pub type UnknownFuture = BoxFuture<'static, Result<ToolOutput, CallError>>;

type UnknownFn = dyn Fn(&Context, &str, Value) -> Option<UnknownFuture> + Send + Sync;

/// A toolset that sends calls of names no tool has to a handler (Eino's
/// `UnknownToolsHandler`), for the names models hallucinate.
///
/// The handler gets the context, the called name and the arguments; it answers
/// with `Some(future)`, or `None` to decline, and then the call fails with
/// [`CallError::UnknownTool`] listing the tools that exist. Without this layer,
/// that error is what an unknown name gets.
///
/// Any name resolves ([`Toolset::lookup`] returns a fallback tool named as
/// called, with an open schema), but nothing extra is listed. Names hidden by
/// an inner [`Filter`](super::Filter) count as unknown here, so the handler
/// cannot reach a hidden tool. Put it outermost, outside [`Aliases`](super::Aliases) so aliases
/// resolve first.
///
/// # Examples
/// ```
/// use serde_json::json;
/// use toolhost::ToolOutput;
/// use toolhost::toolset::{OnUnknown, SinglePlugin};
/// # fn build(plugin: toolhost::Plugin) {
/// let set = OnUnknown::new(SinglePlugin::new(plugin), |cx, name, _args| {
///     let call_id = cx.call_id().to_owned();
///     let note = format!("There is no tool `{name}`; check the tool list.");
///     Some(Box::pin(async move {
///         Ok(ToolOutput { result: Some(json!({"error": note})), call_id, ..Default::default() })
///     }))
/// });
/// # let _ = set;
/// # }
/// ```
#[derive(Clone)]
pub struct OnUnknown<T> {
    inner: T,
    handler: Arc<UnknownFn>,
}

impl<T: std::fmt::Debug> std::fmt::Debug for OnUnknown<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnUnknown")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl<T: Toolset> OnUnknown<T> {
    /// Wraps `inner` with a handler for unknown names.
    pub fn new(
        inner: T,
        handler: impl Fn(&Context, &str, Value) -> Option<UnknownFuture> + Send + Sync + 'static,
    ) -> Self {
        Self {
            inner,
            handler: Arc::new(handler),
        }
    }

    /// The wrapped set.
    pub fn inner(&self) -> &T {
        &self.inner
    }
}

impl<T: Toolset> Toolset for OnUnknown<T> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn tools(&self, cx: &Context) -> Vec<Arc<dyn Tool>> {
        self.inner.tools(cx)
    }

    fn lookup(&self, cx: &Context, name: &str) -> Option<Arc<dyn Tool>> {
        if let Some(tool) = self.inner.lookup(cx, name) {
            return Some(tool);
        }
        let available = self
            .inner
            .tools(cx)
            .iter()
            .map(|t| t.spec().name.clone())
            .collect();
        Some(Arc::new(Fallback {
            spec: ToolSpec::new(
                name,
                "No tool has this name; calls go to the unknown-tool handler.",
                json!({"type": "object"}),
            ),
            available,
            handler: Arc::clone(&self.handler),
        }))
    }

    // Unknown tool names only: the rest of the catalog is the inner set's.
    fn kinds(&self) -> Kinds {
        self.inner.kinds()
    }

    fn resources(&self, cx: &Context) -> Vec<Arc<dyn Resource>> {
        self.inner.resources(cx)
    }

    fn resource_templates(&self, cx: &Context) -> Vec<Arc<dyn ResourceTemplate>> {
        self.inner.resource_templates(cx)
    }

    fn prompts(&self, cx: &Context) -> Vec<Arc<dyn Prompt>> {
        self.inner.prompts(cx)
    }

    fn resource(&self, cx: &Context, uri: &str) -> Option<Arc<dyn Resource>> {
        self.inner.resource(cx, uri)
    }

    fn prompt(&self, cx: &Context, name: &str) -> Option<Arc<dyn Prompt>> {
        self.inner.prompt(cx, name)
    }
}

/// The tool an unknown name resolves to.
struct Fallback {
    spec: ToolSpec,
    available: Vec<String>,
    handler: Arc<UnknownFn>,
}

impl Tool for Fallback {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// The handler gets the arguments as the model sent them.
    fn prepare(&self, _cx: &Context, arguments: Value) -> Result<Prepared, CallError> {
        Ok(Prepared::unchecked(arguments))
    }

    fn run<'a>(
        &'a self,
        cx: &'a Context,
        arguments: Prepared,
    ) -> BoxFuture<'a, Result<Started, CallError>> {
        match (self.handler)(cx, &self.spec.name, arguments.into_arguments()) {
            Some(answer) => Box::pin(async move { answer.await.map(Started::Output) }),
            None => Box::pin(std::future::ready(Err(CallError::UnknownTool {
                tool: self.spec.name.clone(),
                available: self.available.clone(),
            }))),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::toolset::filter::tests::{Native, Probe, native};
    use crate::toolset::{Filter, Predicate, ToolsetExt};

    #[tokio::test]
    async fn unknown_names_go_to_the_handler() {
        let asked = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&asked);
        let set = OnUnknown::new(native(&["a", "b"]), move |cx, name, args| {
            seen.fetch_add(1, Ordering::SeqCst);
            if name == "decline" {
                return None;
            }
            let call_id = cx.call_id().to_owned();
            let answer = json!({"unknown": name, "arguments": args});
            Some(Box::pin(async move {
                Ok(ToolOutput {
                    result: Some(answer),
                    call_id,
                    ..ToolOutput::default()
                })
            }))
        });
        let cx = Context::new().with_call_id("u1");
        // Known names never reach the handler; nothing extra is listed.
        set.invoke(&cx, "a", json!({})).await.unwrap();
        assert_eq!(set.tools(&cx).len(), 2);
        assert_eq!(asked.load(Ordering::SeqCst), 0);
        let out = set.invoke(&cx, "serch", json!({"q": 1})).await.unwrap();
        assert_eq!(
            out.result,
            Some(json!({"unknown": "serch", "arguments": {"q": 1}}))
        );
        assert_eq!(out.call_id, "u1");
        // Streams too (the handler's output as one JSON part).
        let mut stream = set.stream(&cx, "other", json!({})).await.unwrap();
        match stream.next().await {
            Some(Ok(crate::tool::Part::Json(v))) => assert_eq!(v["unknown"], "other"),
            other => panic!("unexpected {other:?}"),
        }
        // Declined: the usual error, listing what exists.
        match set.invoke(&cx, "decline", json!({})).await {
            Err(CallError::UnknownTool { tool, available }) => {
                assert_eq!(tool, "decline");
                assert_eq!(available, ["a", "b"]);
            }
            other => panic!("expected unknown tool, got {other:?}"),
        }
        assert_eq!(asked.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn hidden_tools_are_unknown_to_the_handler_too() {
        let hidden = Probe::new("secret", &[]);
        let inner = Filter::new(
            Native(vec![hidden.clone() as Arc<dyn Tool>]),
            Predicate::deny(["secret"]),
        );
        let set = OnUnknown::new(inner, |_, _, _| None);
        assert!(matches!(
            set.invoke(&Context::new(), "secret", json!({})).await,
            Err(CallError::UnknownTool { .. })
        ));
        assert_eq!(hidden.runs(), 0);
    }
}
