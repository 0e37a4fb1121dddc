//! Running the tool calls of one model turn (Eino's `ToolsNode`), and hooks
//! around every call (Eino's `ToolArgumentsHandler` and tool-call middlewares).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::observe::when_ended;
use super::{BoxFuture, Context, Layer, Outcome, Started, Tool, Toolset, ToolsetExt};
use crate::error::CallError;
use crate::tool::{Prepared, ToolOutput, ToolSpec, Usage};

/// One tool call the model asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchCall {
    /// The model's tool-call ID.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The arguments.
    pub arguments: Value,
}

/// The outcome of one call of a batch.
#[derive(Debug)]
pub struct BatchOutcome {
    /// The call ID it answers.
    pub call_id: String,
    /// The tool that was called.
    pub tool: String,
    /// What the call returned.
    pub result: Result<ToolOutput, CallError>,
}

/// Runs a batch of calls from one model turn: in parallel by default, in order
/// when asked; results always come back in call order, each with its call ID.
///
/// # Examples
/// ```no_run
/// # async fn run(set: toolhost::toolset::SinglePlugin) {
/// use toolhost::Context;
/// use toolhost::toolset::{BatchCall, Executor};
/// let executor = Executor::new(set);
/// let calls = vec![BatchCall { call_id: "c1".into(), tool: "add".into(), arguments: serde_json::json!({"a": 1, "b": 2}) }];
/// for outcome in executor.run(&Context::new(), calls).await {
///     println!("{}: {:?}", outcome.call_id, outcome.result.map(|o| o.result));
/// }
/// # }
/// ```
pub struct Executor<T> {
    set: Arc<T>,
    sequential: bool,
}

impl<T: Toolset + 'static> Executor<T> {
    /// An executor over a toolset; parallel by default.
    pub fn new(set: T) -> Self {
        Self {
            set: Arc::new(set),
            sequential: false,
        }
    }

    /// Run the calls one after another, in order (Eino's `ExecuteSequentially`).
    pub fn sequential(&mut self, sequential: bool) -> &mut Self {
        self.sequential = sequential;
        self
    }

    /// The toolset it runs calls on.
    pub fn toolset(&self) -> &T {
        &self.set
    }

    /// Runs the calls; each gets `cx` with its own call ID (same invocation,
    /// identity and decisions).
    pub async fn run(&self, cx: &Context, calls: Vec<BatchCall>) -> Vec<BatchOutcome> {
        if self.sequential {
            let mut outcomes = Vec::with_capacity(calls.len());
            for call in calls {
                let cx = cx.for_call(call.call_id.clone());
                let result = self.set.invoke(&cx, &call.tool, call.arguments).await;
                outcomes.push(BatchOutcome {
                    call_id: call.call_id,
                    tool: call.tool,
                    result,
                });
            }
            return outcomes;
        }
        let tasks: Vec<_> = calls
            .into_iter()
            .map(|call| {
                let set = Arc::clone(&self.set);
                let cx = cx.for_call(call.call_id.clone());
                let handle = {
                    let (tool, arguments) = (call.tool.clone(), call.arguments);
                    tokio::spawn(async move { set.invoke(&cx, &tool, arguments).await })
                };
                (call.call_id, call.tool, handle)
            })
            .collect();
        let mut outcomes = Vec::with_capacity(tasks.len());
        for (call_id, tool, handle) in tasks {
            let result = handle.await.unwrap_or_else(|e| {
                Err(CallError::Host {
                    tool: tool.clone(),
                    reason: format!("the call's task failed: {e}"),
                })
            });
            outcomes.push(BatchOutcome {
                call_id,
                tool,
                result,
            });
        }
        outcomes
    }
}

/// The rest of the chain: the next middleware, or the tool itself.
pub struct Next<'a> {
    tool: &'a dyn Tool,
    rest: &'a [Arc<dyn Middleware>],
}

impl<'a> Next<'a> {
    /// Runs the rest of the chain with these arguments.
    pub fn run(
        self,
        cx: &'a Context,
        arguments: Prepared,
    ) -> BoxFuture<'a, Result<Started, CallError>> {
        match self.rest.split_first() {
            Some((first, rest)) => first.run(
                cx,
                self.tool.spec(),
                arguments,
                Next {
                    tool: self.tool,
                    rest,
                },
            ),
            None => self.tool.run(cx, arguments),
        }
    }
}

/// A hook around every call of a toolset: rewrite arguments, log, time, retry, audit.
pub trait Middleware: Send + Sync {
    /// Rewrites or refuses the arguments while the call is prepared
    /// ([`Tool::prepare`]): before any confirmation and before the tool's
    /// schema check. By default they go on unchanged.
    ///
    /// # Errors
    /// A refusal, which ends the call before anything runs.
    fn prepare(&self, cx: &Context, spec: &ToolSpec, arguments: Value) -> Result<Value, CallError> {
        let _ = (cx, spec);
        Ok(arguments)
    }

    /// The call was refused while it was prepared (by a middleware, an inner
    /// layer or the tool's schema check), so it never runs: for middlewares
    /// that count or log calls. By default nothing happens.
    fn refused(&self, cx: &Context, spec: &ToolSpec, error: &CallError) {
        let _ = (cx, spec, error);
    }

    /// Around the run: call `next.run(cx, arguments)` to go on (or don't).
    /// What it gives is the whole output, a stream (watch its end with
    /// [`ToolStream::on_end`](crate::tool::ToolStream::on_end)), or a pause for approval (the tool has not
    /// run; the resumed call comes through again). By default it just goes on.
    fn run<'a>(
        &'a self,
        cx: &'a Context,
        spec: &'a ToolSpec,
        arguments: Prepared,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<Started, CallError>> {
        let _ = spec;
        next.run(cx, arguments)
    }
}

/// A toolset whose every call runs through a middleware chain (first added = outermost).
pub struct WithMiddleware<T> {
    inner: T,
    chain: Arc<[Arc<dyn Middleware>]>,
}

impl<T: Toolset> WithMiddleware<T> {
    /// Wraps `inner` with the middlewares, outermost first.
    pub fn new(inner: T, chain: Vec<Arc<dyn Middleware>>) -> Self {
        Self {
            inner,
            chain: chain.into(),
        }
    }
}

struct Chained {
    tool: Arc<dyn Tool>,
    chain: Arc<[Arc<dyn Middleware>]>,
}

impl Tool for Chained {
    fn spec(&self) -> &ToolSpec {
        self.tool.spec()
    }

    fn prepare(&self, cx: &Context, arguments: Value) -> Result<Prepared, CallError> {
        let spec = self.tool.spec();
        let prepared = self
            .chain
            .iter()
            .try_fold(arguments, |arguments, m| m.prepare(cx, spec, arguments))
            .and_then(|arguments| self.tool.prepare(cx, arguments));
        if let Err(error) = &prepared {
            for middleware in self.chain.iter() {
                middleware.refused(cx, spec, error);
            }
        }
        prepared
    }

    fn run<'a>(
        &'a self,
        cx: &'a Context,
        arguments: Prepared,
    ) -> BoxFuture<'a, Result<Started, CallError>> {
        Next {
            tool: &*self.tool,
            rest: &self.chain,
        }
        .run(cx, arguments)
    }
}

impl<T: Toolset> Layer for WithMiddleware<T> {
    type Inner = T;

    fn inner(&self) -> &T {
        &self.inner
    }

    fn wrap(&self, _cx: &Context, tool: Arc<dyn Tool>) -> Arc<dyn Tool> {
        Arc::new(Chained {
            tool,
            chain: Arc::clone(&self.chain),
        })
    }
}

type ArgumentsFn = dyn Fn(&Context, &ToolSpec, Value) -> Result<Value, CallError> + Send + Sync;

/// Rewrites (or refuses) the arguments of every call before the tool sees them
/// (Eino's `ToolArgumentsHandler`). It runs when the call is prepared
/// ([`Tool::prepare`]), so the tool's schema check runs after it and a human
/// asked to confirm sees the rewritten arguments, wherever it is in the
/// stack; it runs once a call (a resumed approval is not prepared again).
pub struct ArgumentsHook {
    hook: Box<ArgumentsFn>,
}

impl ArgumentsHook {
    /// A hook from a closure.
    pub fn new(
        hook: impl Fn(&Context, &ToolSpec, Value) -> Result<Value, CallError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            hook: Box::new(hook),
        }
    }
}

impl Middleware for ArgumentsHook {
    fn prepare(&self, cx: &Context, spec: &ToolSpec, arguments: Value) -> Result<Value, CallError> {
        (self.hook)(cx, spec, arguments)
    }
}

/// Logs every call with `tracing`: tool, call ID, duration, and outcome.
#[derive(Debug, Default, Clone, Copy)]
pub struct Logging;

impl Middleware for Logging {
    fn refused(&self, cx: &Context, spec: &ToolSpec, error: &CallError) {
        tracing::warn!(tool = %spec.name, call = cx.call_id(), %error, "tool call refused");
    }

    fn run<'a>(
        &'a self,
        cx: &'a Context,
        spec: &'a ToolSpec,
        arguments: Prepared,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<Started, CallError>> {
        Box::pin(async move {
            let start = Instant::now();
            let result = next.run(cx, arguments).await;
            let (tool, call) = (spec.name.clone(), cx.call_id().to_owned());
            when_ended(result, move |outcome| {
                let elapsed = start.elapsed();
                match outcome {
                    Outcome::Succeeded(usage) => tracing::info!(
                        %tool,
                        %call,
                        ?elapsed,
                        fuel = usage.fuel,
                        peak_memory = usage.peak_memory_bytes,
                        "tool call succeeded"
                    ),
                    Outcome::Failed(err) => tracing::warn!(
                        %tool,
                        %call,
                        ?elapsed,
                        error = %err,
                        "tool call failed"
                    ),
                    // Not run yet: the resumed call is logged.
                    Outcome::Paused(_) => {}
                }
            })
        })
    }
}

/// What the calls of one tool cost so far.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ToolMetrics {
    /// Calls made.
    pub calls: u64,
    /// Calls that failed.
    pub errors: u64,
    /// Wall-clock time of all calls.
    pub total_time: Duration,
    /// The slowest call.
    pub max_time: Duration,
    /// Fuel used by the successful calls.
    pub total_fuel: u64,
    /// The largest linear memory any call reached, in bytes.
    pub max_memory_bytes: u64,
}

/// Per-tool call metrics: count, errors, duration, fuel used, peak memory.
/// Cheap to clone; clones share the figures.
#[derive(Debug, Default, Clone)]
pub struct Metrics {
    tools: Arc<Mutex<BTreeMap<String, ToolMetrics>>>,
}

impl Metrics {
    /// A fresh collector.
    pub fn new() -> Self {
        Self::default()
    }

    /// The figures so far, by tool name.
    pub fn snapshot(&self) -> BTreeMap<String, ToolMetrics> {
        self.tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn record(&self, tool: &str, elapsed: Duration, result: Result<&Usage, &CallError>) {
        let mut tools = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = tools.entry(tool.to_owned()).or_default();
        entry.calls += 1;
        entry.total_time += elapsed;
        entry.max_time = entry.max_time.max(elapsed);
        match result {
            Ok(usage) => {
                entry.total_fuel += usage.fuel;
                entry.max_memory_bytes = entry.max_memory_bytes.max(usage.peak_memory_bytes);
            }
            Err(_) => entry.errors += 1,
        }
    }
}

impl Middleware for Metrics {
    /// A refused call counts as a call that failed, in no time.
    fn refused(&self, _cx: &Context, spec: &ToolSpec, _error: &CallError) {
        let mut tools = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = tools.entry(spec.name.clone()).or_default();
        entry.calls += 1;
        entry.errors += 1;
    }

    fn run<'a>(
        &'a self,
        cx: &'a Context,
        spec: &'a ToolSpec,
        arguments: Prepared,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<Started, CallError>> {
        Box::pin(async move {
            let start = Instant::now();
            let result = next.run(cx, arguments).await;
            let (metrics, tool) = (self.clone(), spec.name.clone());
            when_ended(result, move |outcome| match outcome {
                Outcome::Succeeded(usage) => metrics.record(&tool, start.elapsed(), Ok(usage)),
                Outcome::Failed(error) => metrics.record(&tool, start.elapsed(), Err(error)),
                // Not run yet: the resumed call is counted.
                Outcome::Paused(_) => {}
            })
        })
    }
}
