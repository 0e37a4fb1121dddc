//! Calling a tool: arguments checked, a fresh (or this invocation's idle)
//! instance armed with the call's budgets, the guest run under its deadline,
//! and its output checked.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use tracing::{Instrument as _, Span};
use wasmtime::component::Instance;
use wasmtime::{Store, UpdateDeadline};

use super::abi::{self, Exports, RawOutput, RawPart};
use super::code::Linked;
use super::runtime::PluginRuntime;
use super::state::{PluginState, Updates};
use super::stream::GuestStream;
use super::{LoadedTool, Plugin, Reuse, reuse};
use crate::engine::Tier;
use crate::engine::limits::Busy;
use crate::error::{CallError, Exhausted};
use crate::policy::CallTag;
use crate::spans;
use crate::tool::{
    Asker, Caller, LogSink, Part, ToolCall, ToolOutput, ToolStream, Usage, wrap_result,
};

/// Every typed export of an instance of `code` (type-checked when it was linked).
pub(super) fn exports(
    code: &Linked,
    store: &mut Store<PluginState>,
    tool: &str,
    instance: &Instance,
) -> Result<Exports, CallError> {
    code.indices(tool)?
        .exports(store, instance)
        .map_err(|e| CallError::Host {
            tool: tool.to_owned(),
            reason: format!("the plugin's exports: {e:#}"),
        })
}

/// Whether a call's arguments are still to be checked against the tool's
/// schema, or were (by the call driver, against the same schema).
#[derive(Debug, Clone, Copy)]
pub(super) enum Check {
    Arguments,
    Done,
}

/// Arguments as JSON text for the guest.
fn encode(tool: &str, arguments: &Value) -> Result<String, CallError> {
    // Straight into a buffer: `Value`'s `Display` goes through `fmt`, and is slower.
    serde_json::to_string(arguments).map_err(|e| CallError::Host {
        tool: tool.to_owned(),
        reason: format!("cannot encode the arguments: {e}"),
    })
}

/// What a call carries besides its name and arguments: who calls, and
/// where its guest's log messages and questions go.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Via<'a> {
    pub(super) caller: Option<&'a Caller>,
    pub(super) log: Option<&'a LogSink>,
    pub(super) ask: Option<&'a Asker>,
}

impl<'a> Via<'a> {
    pub(super) fn of(call: &'a ToolCall) -> Self {
        Self {
            caller: call.caller.as_ref(),
            log: call.log.as_ref(),
            ask: call.ask.as_ref(),
        }
    }
}

/// The most resources (streams, WASI handles) one call may hold at once.
const MAX_RESOURCES: usize = 10_000;

impl Plugin {
    /// Coerces and checks the arguments; returns them as JSON text for the guest.
    fn prepare(&self, tool: &LoadedTool, arguments: Value) -> Result<String, CallError> {
        encode(
            &tool.spec.name,
            &Self::checked(tool, arguments, Check::Arguments)?,
        )
    }

    /// The arguments coerced and checked against the tool's input schema
    /// (unless the call driver did: `check`); `null` as no arguments.
    pub(super) fn checked(
        tool: &LoadedTool,
        mut arguments: Value,
        check: Check,
    ) -> Result<Value, CallError> {
        if let Check::Done = check {
            return Ok(arguments);
        }
        if arguments.is_null() {
            arguments = Value::Object(Default::default());
        }
        tool.input.coerce(&mut arguments);
        let problems = tool.input.problems(&arguments);
        if !problems.is_empty() {
            return Err(CallError::InvalidArguments {
                tool: tool.spec.name.clone(),
                problems,
            });
        }
        Ok(arguments)
    }

    /// Runs a tool to completion in a fresh instance.
    ///
    /// # Errors
    /// A [`CallError`]: unknown tool, invalid arguments (every violation listed),
    /// the tool's own failure, an exhausted budget, a panic or trap, or an invalid result.
    pub async fn invoke(&self, call: ToolCall) -> Result<ToolOutput, CallError> {
        self.invoke_as(call, Check::Arguments).await
    }

    /// As [`Plugin::invoke`], with arguments already checked against the
    /// tool's schema ([`Prepared`](crate::tool::Prepared), by the call driver).
    pub(crate) async fn invoke_prepared(&self, call: ToolCall) -> Result<ToolOutput, CallError> {
        self.invoke_as(call, Check::Done).await
    }

    async fn invoke_as(&self, call: ToolCall, check: Check) -> Result<ToolOutput, CallError> {
        let tool = self
            .find(&call.tool)
            .ok_or_else(|| self.unknown(&call.tool))?;
        if let Some(function) = &tool.function {
            return self.call_function(tool, function, call, check).await;
        }
        if tool.spec.streaming {
            return self.stream_as(call, check).await?.collect().await;
        }
        let name = tool.spec.name.as_str();
        let (mut store, instance, code, call) = self.begin(tool, call, check).await?;
        let deadline = store.data().deadline.clone();
        let invoke = code
            .indices(name)?
            .invoke(&mut store, &instance)
            .map_err(|e| CallError::Host {
                tool: name.to_owned(),
                reason: format!("the `invoke` export: {e:#}"),
            })?;
        let call_id = call.call_id.clone();
        // Only a reused instance is filed under its invocation.
        let invocation_id =
            (self.inner.reuse == Reuse::PerInvocation).then(|| call.invocation_id.clone());
        let guest = spans::guest(name);
        let result = timeout(deadline, invoke.call(&mut store, call))
            .instrument(guest.clone())
            .await;
        store.data().guest_spans.close(guest);
        let output = self.settle(&mut store, name, result)?;
        let usage = self.usage(&store);
        // The guest returned (a trap or an exhausted budget returned early
        // above and dropped the instance): it may serve the invocation again.
        if let Some(invocation_id) = invocation_id {
            let idle = reuse::Idle {
                store,
                instance,
                code,
            };
            if let Some(runtime) = PluginRuntime::of(&self.inner.engine) {
                runtime.idle().put(self.inner.id, &invocation_id, idle);
            }
        }
        let output = output.map_err(|e| self.tool_error(name, &call_id, e))?;
        let mut output = self.finish(tool, output, call_id)?;
        output.usage = usage;
        Ok(output)
    }

    /// Checks a call's arguments, then gives it a fresh instance.
    async fn begin(
        &self,
        tool: &LoadedTool,
        mut call: ToolCall,
        check: Check,
    ) -> Result<(Store<PluginState>, Instance, Arc<Linked>, abi::Call), CallError> {
        let arguments = match check {
            Check::Arguments => self.prepare(tool, std::mem::take(&mut call.arguments))?,
            Check::Done => encode(&tool.spec.name, &call.arguments)?,
        };
        // A stream keeps its instance to the end and does not return it, so it
        // never takes the invocation's idle one.
        let idle = match self.inner.reuse {
            Reuse::PerInvocation if !tool.spec.streaming => PluginRuntime::of(&self.inner.engine)
                .and_then(|runtime| runtime.idle().take(self.inner.id, &call.invocation_id)),
            _ => None,
        };
        let (store, instance, code) = match idle {
            Some(mut idle) => {
                self.rearm(
                    &mut idle.store,
                    &tool.spec.name,
                    &call.call_id,
                    Via::of(&call),
                )?;
                (idle.store, idle.instance, idle.code)
            }
            None => {
                self.instantiate(
                    &tool.spec.name,
                    &call.call_id,
                    &call.invocation_id,
                    Via::of(&call),
                )
                .await?
            }
        };
        let caller = call.caller.map(|caller| abi::Caller {
            claims: caller.granted_claims(self.inner.grants.caller_claims()),
            issuer: caller.issuer().to_owned(),
            subject: caller.subject().to_owned(),
            scopes: caller.scopes().to_vec(),
        });
        let call = abi::Call {
            call_id: call.call_id,
            invocation_id: call.invocation_id,
            tool: tool.spec.name.clone(),
            arguments,
            caller,
        };
        Ok((store, instance, code, call))
    }

    /// Starts a tool and returns its output as a stream of parts. A tool that
    /// does not stream gives its whole output as the stream's parts (its JSON
    /// result first).
    ///
    /// # Errors
    /// As [`Plugin::invoke`]; errors while streaming come from [`ToolStream::next`].
    pub async fn stream(&self, call: ToolCall) -> Result<ToolStream, CallError> {
        self.stream_as(call, Check::Arguments).await
    }

    /// As [`Plugin::stream`], with arguments already checked (see
    /// [`Plugin::invoke_prepared`]).
    pub(crate) async fn stream_prepared(&self, call: ToolCall) -> Result<ToolStream, CallError> {
        self.stream_as(call, Check::Done).await
    }

    async fn stream_as(&self, call: ToolCall, check: Check) -> Result<ToolStream, CallError> {
        let tool = self
            .find(&call.tool)
            .ok_or_else(|| self.unknown(&call.tool))?;
        if !tool.spec.streaming {
            let output = Box::pin(self.invoke_as(call, check)).await?;
            return Ok(ToolStream::from_output(output));
        }
        let name = tool.spec.name.as_str();
        let (mut store, instance, code, call) = self.begin(tool, call, check).await?;
        let exports = exports(&code, &mut store, name, &instance)?;
        let deadline = store.data().deadline.clone();
        let call_id = call.call_id.clone();
        let guest = spans::guest(name);
        let result = timeout(deadline, exports.invoke_stream(&mut store, call))
            .instrument(guest.clone())
            .await;
        store.data().guest_spans.close(guest);
        let handle = self
            .settle(&mut store, name, result)?
            .map_err(|e| self.tool_error(name, &call_id, e))?;
        let guest = GuestStream {
            plugin: self.clone(),
            tool: tool.spec.name.clone(),
            store,
            exports,
            handle,
            chunks: 0,
            data: 0,
            done: false,
        };
        Ok(ToolStream::from_source(call_id, Box::new(guest)))
    }

    /// A fresh store under this plugin's limits, and a fresh instance in it
    /// of the plugin's current code (which it returns: its exports are that
    /// code's, and a store keeps its code to the end).
    pub(super) async fn instantiate(
        &self,
        tool: &str,
        call_id: &str,
        invocation_id: &str,
        via: Via<'_>,
    ) -> Result<(Store<PluginState>, Instance, Arc<Linked>), CallError> {
        let span = spans::instantiate(tool, &self.inner.name);
        self.instantiate_in(&span, tool, call_id, invocation_id, via)
            .instrument(span.clone())
            .await
    }

    /// [`Plugin::instantiate`], in its span.
    async fn instantiate_in(
        &self,
        span: &Span,
        tool: &str,
        call_id: &str,
        invocation_id: &str,
        via: Via<'_>,
    ) -> Result<(Store<PluginState>, Instance, Arc<Linked>), CallError> {
        let code = self.code_for(tool).await?.current();
        spans::tier(span, code.tier.as_str());
        let engine = &self.inner.engine;
        let state = PluginState::new(
            engine,
            &self.inner.grants,
            &self.inner.limits,
            self.call_tag(tool, call_id, via),
            invocation_id,
            MAX_RESOURCES,
        )?;
        let mut store = Store::new(code.pre.engine(), state);
        if !self.inner.offered.is_empty() {
            store.data_mut().updates = Some(Updates {
                offered: Arc::clone(&self.inner.offered),
                sink: engine.updates().clone(),
                sent: 0,
            });
        }
        if code.tier == Tier::Baseline {
            // Baseline instances are not pooled: bound them as the pool bounds its own.
            let slot = engine.baseline_slot().ok_or_else(|| CallError::Busy {
                plugin: self.inner.name.to_string(),
                tool: tool.to_owned(),
                reason: Busy::Instances,
            })?;
            store.data_mut().baseline_slot = Some(slot);
        }
        store.limiter_async(|state| &mut state.limiter);
        self.arm(&mut store, tool)?;
        let deadline = store.data().deadline.clone();
        let instantiated = timeout(deadline, code.pre.instantiate_async(&mut store)).await;
        let instance = self.settle(&mut store, tool, instantiated)?;
        Ok((store, instance, code))
    }

    /// Which call a log line or a refusal belongs to, and its caller if the
    /// plugin's secrets may depend on it.
    fn call_tag(&self, tool: &str, call_id: &str, via: Via<'_>) -> Arc<CallTag> {
        let secrets = !self.inner.grants.header_secrets().is_empty();
        Arc::new(CallTag {
            plugin: self.inner.name.clone(),
            tool: tool.to_owned(),
            call_id: call_id.to_owned(),
            caller: via.caller.filter(|_| secrets).cloned(),
            log: via.log.cloned(),
            ask: via.ask.cloned(),
            leaks: self.inner.grants.leak_check().clone(),
            refused: Default::default(),
        })
    }

    /// Gives a store the budgets of one call: fuel, and a deadline from now.
    fn arm(&self, store: &mut Store<PluginState>, tool: &str) -> Result<(), CallError> {
        let limits = &self.inner.limits;
        let limit = limits.timeout;
        let deadline = Deadline::new(Instant::now() + limit);
        store.data_mut().deadline = deadline.clone();
        store.data_mut().limiter.deadline = deadline.at();
        store.data_mut().scratch.begin_call();
        store.set_fuel(limits.fuel).map_err(|e| CallError::Host {
            tool: tool.to_owned(),
            reason: e.to_string(),
        })?;
        store.set_epoch_deadline(1);
        // Yield at every tick so a runaway guest cannot starve the executor, and
        // stop it once its deadline has passed.
        store.epoch_deadline_callback(move |_| {
            if Instant::now() < deadline.at() {
                Ok(UpdateDeadline::Yield(1))
            } else {
                Err(Exhausted::Deadline { limit }.into())
            }
        });
        Ok(())
    }

    /// Readies an idle instance of this invocation for its next call: the
    /// call's tag in logs and hooks, a fresh output cap, fresh budgets.
    fn rearm(
        &self,
        store: &mut Store<PluginState>,
        tool: &str,
        call_id: &str,
        via: Via<'_>,
    ) -> Result<(), CallError> {
        let call = self.call_tag(tool, call_id, via);
        let state = store.data_mut();
        state.caps.rebind(&call);
        state.call = call;
        state.panic_message = None;
        state.asked = 0;
        state.guest_spans.reset();
        self.arm(store, tool)
    }

    /// What a store's call has cost so far.
    pub(super) fn usage(&self, store: &Store<PluginState>) -> Usage {
        let left = store.get_fuel().unwrap_or(0);
        Usage {
            fuel: self.inner.limits.fuel.saturating_sub(left),
            peak_memory_bytes: store.data().limiter.peak_memory,
            wrote_state: store.data().scratch.wrote(),
        }
    }

    /// The tool's own error, its message cut to a size a model's context (and
    /// the host's log) can take.
    /// A secret's value in the message is masked (the leak check).
    pub(super) fn tool_error(&self, tool: &str, call_id: &str, err: abi::ToolError) -> CallError {
        let cut = |mut message: String| {
            if self.inner.grants.mask_text(&mut message) {
                self.warn_leak(tool, call_id, "its error message");
            }
            crate::error::cut(message, crate::error::MAX_ERROR_MESSAGE_BYTES)
        };
        match err {
            abi::ToolError::InvalidArguments(message) => CallError::InvalidArguments {
                tool: tool.to_owned(),
                problems: vec![cut(message)],
            },
            abi::ToolError::Failed(message) => CallError::Failed {
                plugin: self.inner.name.to_string(),
                tool: tool.to_owned(),
                // A path outside every grant reads as a missing file: say so.
                message: self.inner.grants.explain_file_error(
                    &self.inner.name,
                    tool,
                    call_id,
                    cut(message),
                ),
            },
            abi::ToolError::UnknownTool(message) => CallError::InvalidOutput {
                plugin: self.inner.name.to_string(),
                tool: tool.to_owned(),
                reason: format!(
                    "the plugin declared this tool but does not know it: {}",
                    cut(message)
                ),
            },
        }
    }

    pub(super) fn invalid_output(&self, tool: &str, reason: String) -> CallError {
        CallError::InvalidOutput {
            plugin: self.inner.name.to_string(),
            tool: tool.to_owned(),
            reason,
        }
    }

    pub(super) fn check_output_size(&self, tool: &str, size: u64) -> Result<(), CallError> {
        let limit = self.inner.limits.max_output_bytes;
        if size > limit {
            return Err(CallError::Exhausted {
                plugin: self.inner.name.to_string(),
                tool: tool.to_owned(),
                budget: Exhausted::Output { limit },
            });
        }
        Ok(())
    }

    pub(super) fn convert_part(
        &self,
        tool: &str,
        call_id: &str,
        part: RawPart,
    ) -> Result<Part, CallError> {
        let mut part = self.part_of(tool, part)?;
        if self.inner.grants.mask_part(&mut part) {
            self.warn_leak(tool, call_id, "a part of its output");
        }
        Ok(part)
    }

    /// The warning that a tool's output held a secret's value, now masked.
    pub(super) fn warn_leak(&self, tool: &str, call_id: &str, what: &str) {
        tracing::warn!(
            target: "toolhost::policy",
            plugin = %self.inner.name, %tool, call = %call_id,
            "masked a configured secret's value in {what} (leak check)"
        );
    }

    fn part_of(&self, tool: &str, part: RawPart) -> Result<Part, CallError> {
        Ok(match part {
            RawPart::Text(text) => Part::Text(text),
            RawPart::Json(text) => Part::Json(serde_json::from_str(&text).map_err(|e| {
                self.invalid_output(tool, format!("a JSON part is not valid JSON: {e}"))
            })?),
            RawPart::Blob {
                kind,
                mime_type,
                name,
                data,
            } => Part::Blob {
                kind,
                mime_type,
                name,
                data,
            },
        })
    }

    /// A result checked against the tool's result schema, when it has one
    /// (declared by the plugin, or a component function's, from its type).
    pub(super) fn check_result(&self, tool: &LoadedTool, value: &Value) -> Result<(), CallError> {
        let Some(schema) = &tool.output else {
            return Ok(());
        };
        let problems = schema.problems(value);
        if problems.is_empty() {
            return Ok(());
        }
        Err(self.invalid_output(
            &tool.spec.name,
            format!(
                "it does not match its declared result schema: {}",
                problems.join("; ")
            ),
        ))
    }

    fn finish(
        &self,
        tool: &LoadedTool,
        output: RawOutput,
        call_id: String,
    ) -> Result<ToolOutput, CallError> {
        let name = tool.spec.name.as_str();
        let size = output.json.as_ref().map_or(0, String::len)
            + output.parts.iter().map(RawPart::size).sum::<usize>();
        self.check_output_size(name, size as u64)?;
        let result = match output.json {
            None => None,
            Some(text) => {
                let value: Value = serde_json::from_str(&text).map_err(|e| {
                    self.invalid_output(name, format!("the JSON result is not valid JSON: {e}"))
                })?;
                self.check_result(tool, &value)?;
                let mut value = wrap_result(value);
                if self.inner.grants.mask_value(&mut value) {
                    self.warn_leak(name, &call_id, "its result");
                }
                Some(value)
            }
        };
        let parts = output
            .parts
            .into_iter()
            .map(|p| self.convert_part(name, &call_id, p))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ToolOutput {
            result,
            parts,
            call_id,
            usage: Usage::default(),
        })
    }
}

/// When a call must be over: an instant, pushed back by the time the call
/// spent waiting for its user (a question asked through `host.ask`), which
/// is no guest work.
#[derive(Debug, Clone)]
pub(crate) struct Deadline {
    at: Instant,
    paused: Arc<Mutex<Paused>>,
}

/// The time a call waited for its user.
#[derive(Debug, Default)]
struct Paused {
    /// Waited so far, in waits that ended.
    waited: Duration,
    /// Since when it waits now, if it does.
    since: Option<Instant>,
}

/// How often a paused call's timer looks again.
const PAUSED_RECHECK: Duration = Duration::from_secs(1);

impl Deadline {
    pub(crate) fn new(at: Instant) -> Self {
        Self {
            at,
            paused: Arc::default(),
        }
    }

    fn paused(&self) -> std::sync::MutexGuard<'_, Paused> {
        self.paused.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The instant the call must be over by, as it stands now; while the
    /// call waits for its user, a moment ahead (its time does not run).
    pub(crate) fn at(&self) -> Instant {
        let paused = self.paused();
        let at = self.at + paused.waited;
        match paused.since {
            None => at,
            Some(since) => {
                let now = Instant::now();
                let left = at.saturating_duration_since(since);
                now + left.max(PAUSED_RECHECK)
            }
        }
    }

    /// The call waits for its user from now on: its time stops.
    pub(crate) fn pause(&self) {
        self.paused().since.get_or_insert_with(Instant::now);
    }

    /// The call's time runs again.
    pub(crate) fn resume(&self) {
        let mut paused = self.paused();
        if let Some(since) = paused.since.take() {
            paused.waited += since.elapsed();
        }
    }
}

/// Runs a guest call under the call's deadline (pushed back while the call
/// waits for its user). The epoch callback stops guest
/// code that computes past it; this timer also stops a guest blocked in an
/// async host call (a WASI sleep or poll), which never reaches an epoch check.
///
/// A call that finishes in its first poll (a trivial tool, most
/// instantiations) never needs the timer, so it is made only for those that
/// wait: making and dropping one per step cost ~0.2 µs of a 11 µs call.
pub(super) async fn timeout<F: Future>(
    deadline: Deadline,
    call: F,
) -> Result<F::Output, tokio::time::error::Elapsed> {
    let mut call = std::pin::pin!(call);
    let first = std::future::poll_fn(|cx| std::task::Poll::Ready(call.as_mut().poll(cx))).await;
    if let std::task::Poll::Ready(output) = first {
        return Ok(output);
    }
    loop {
        let at = deadline.at();
        match tokio::time::timeout_at(tokio::time::Instant::from_std(at), call.as_mut()).await {
            Ok(output) => return Ok(output),
            // The call waits, or waited, for its user: it has longer.
            Err(_) if deadline.at() > at => {}
            Err(elapsed) => return Err(elapsed),
        }
    }
}
