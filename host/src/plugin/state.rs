//! What one plugin instance may touch: its WASI context, resource table,
//! limiter, and the host interface it imports (each contract version's
//! `Host` traits, in `abi/`, call the methods here).

use std::sync::Arc;

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtxView, WasiHttpView};

use super::abi::{Answer, AskError, Question};
use super::call::Deadline;
use super::offered::Offered;
use crate::Engine;
use crate::catalog::{MAX_UPDATES_PER_CALL, ResourceUpdated, ResourceUpdates};
use crate::engine::limits::{Limiter, Limits};
use crate::error::CallError;
use crate::policy::{CallCaps, CallState, CallTag, Grants};
use crate::schema::Schema;
use crate::state::Scratch;
use crate::tool::{self, ANSWER_TIMEOUT, LogLevel, MAX_QUESTIONS_PER_CALL};
use serde_json::Value;

/// The longest log message the host keeps from a guest.
const MAX_MESSAGE_BYTES: usize = 8 << 10;

/// Store data of one call.
pub(crate) struct PluginState {
    /// Plugin, tool and call ID, for the log (shared with stdio and HTTP hooks).
    pub(crate) call: Arc<CallTag>,
    /// The invocation's scratch state (its store is the engine's).
    pub(crate) scratch: Scratch,
    /// What the capabilities keep of this call: WASI context, logged stdio,
    /// HTTP context and hooks (rebound per call on a reused instance).
    pub(crate) caps: CallCaps,
    /// What the plugin is granted (each capability's linker additions ask it).
    pub(crate) grants: Arc<Grants>,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: Limiter,
    pub(crate) panic_message: Option<String>,
    /// When the call must be over (checked by the epoch callback and by a host timer).
    pub(crate) deadline: Deadline,
    /// The engine's slot for an instance of baseline code (not pooled), held
    /// as long as the store lives.
    pub(crate) baseline_slot: Option<tokio::sync::OwnedSemaphorePermit>,
    /// Where `host.resource-updated` goes, for a plugin that offers resources.
    pub(crate) updates: Option<Updates>,
    /// How many questions the call asked its user so far.
    pub(crate) asked: u32,
    /// The spans and events the guest added to the call's trace.
    pub(crate) guest_spans: super::guest_spans::GuestSpans,
}

/// A call's way to say its plugin's resources changed.
pub(crate) struct Updates {
    /// What the plugin offers: an update of another URI is ignored.
    pub(crate) offered: Arc<Offered>,
    pub(crate) sink: ResourceUpdates,
    /// Updates sent so far by this call (at most [`MAX_UPDATES_PER_CALL`]).
    pub(crate) sent: u32,
}

impl PluginState {
    /// The store data of one call of `call.tool`: exactly `grants` (each
    /// capability adds its part of the WASI context and its hooks), the
    /// memory limiter of `limits`, and a table of at most `max_resources`.
    /// The deadline is set when the call is armed.
    ///
    /// # Errors
    /// [`CallError::Host`] if a granted directory cannot be opened.
    pub(crate) fn new(
        engine: &Engine,
        grants: &Arc<Grants>,
        limits: &Limits,
        call: Arc<CallTag>,
        invocation_id: &str,
        max_resources: usize,
    ) -> Result<Self, CallError> {
        let mut table = ResourceTable::new();
        table.set_max_capacity(max_resources);
        let caps = CallCaps::new(grants, &call, limits.max_stdio_bytes).map_err(|reason| {
            CallError::Host {
                tool: call.tool.clone(),
                reason,
            }
        })?;
        Ok(Self {
            call,
            scratch: engine.state().scratch(invocation_id),
            caps,
            grants: Arc::clone(grants),
            table,
            limiter: Limiter::new(limits, Arc::clone(engine.memory_budget())),
            panic_message: None,
            deadline: Deadline::new(std::time::Instant::now()),
            baseline_slot: None,
            updates: None,
            asked: 0,
            guest_spans: super::guest_spans::GuestSpans::default(),
        })
    }
}

impl WasiHttpView for PluginState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.caps.http,
            table: &mut self.table,
            hooks: &mut self.caps.http_hooks,
        }
    }
}

impl CallState for PluginState {
    fn grants(&self) -> &Grants {
        &self.grants
    }

    fn call_tag(&self) -> &Arc<CallTag> {
        &self.call
    }
}

impl WasiView for PluginState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.caps.wasi,
            table: &mut self.table,
        }
    }
}

/// The host interface every contract version imports, in host types.
impl PluginState {
    /// Writes a guest's log line, cut to [`MAX_MESSAGE_BYTES`], to the host's
    /// log and to the call's [`LogSink`] if it has one (secrets masked).
    pub(crate) fn host_log(&mut self, level: LogLevel, message: &str) {
        let mut end = message.len().min(MAX_MESSAGE_BYTES);
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        let cut = end < message.len();
        let message = &message[..end];
        let traced = match level {
            LogLevel::Trace => tracing::Level::TRACE,
            LogLevel::Debug => tracing::Level::DEBUG,
            LogLevel::Info => tracing::Level::INFO,
            LogLevel::Warn => tracing::Level::WARN,
            LogLevel::Error => tracing::Level::ERROR,
        };
        self.caps.stdio.log(traced, message, cut);
        if let Some(sink) = &self.call.log {
            sink.emit(level, &self.call.leaks.masked(message.into()));
        }
    }

    /// Keeps why the guest is about to trap.
    pub(crate) fn host_panicked(&mut self, message: String) {
        self.panic_message = Some(crate::error::cut(
            message,
            crate::error::MAX_ERROR_MESSAGE_BYTES,
        ));
    }

    /// Tells subscribers that one of the plugin's resources changed: a URI
    /// it offers (listed, or one of its templates'), at most
    /// [`MAX_UPDATES_PER_CALL`] per call; anything else is logged and ignored.
    pub(crate) fn host_resource_updated(&mut self, uri: String) {
        let call = &self.call;
        let Some(updates) = &mut self.updates else {
            tracing::debug!(
                plugin = %call.plugin, tool = %call.tool, call = %call.call_id,
                "ignored a resource update: the plugin offers no resources"
            );
            return;
        };
        if !updates.offered.offers_uri(&uri) {
            tracing::warn!(
                plugin = %call.plugin, tool = %call.tool, call = %call.call_id,
                uri = %crate::log::escape_name(&uri),
                "ignored a resource update of a URI the plugin does not offer"
            );
            return;
        }
        updates.sent += 1;
        if updates.sent > MAX_UPDATES_PER_CALL {
            if updates.sent == MAX_UPDATES_PER_CALL + 1 {
                tracing::warn!(
                    plugin = %call.plugin, tool = %call.tool, call = %call.call_id,
                    "the call sent {MAX_UPDATES_PER_CALL} resource updates; ignoring the rest"
                );
            }
            return;
        }
        updates.sink.send(ResourceUpdated {
            plugin: Arc::clone(&call.plugin),
            uri,
        });
    }

    /// Asks the call's user a question through the call's [`Asker`]: the
    /// question checked, at most [`MAX_QUESTIONS_PER_CALL`] per call, the
    /// user's time bounded by [`ANSWER_TIMEOUT`] (and not counted toward the
    /// call's deadline, which moves back by it),
    /// an accepted answer checked against the form. Without an asker the
    /// tool hears that asking is unavailable, and decides.
    ///
    /// # Errors
    /// An asker that stops the call ([`tool::AskError::stops_the_call`]: the
    /// question is asked outside this run) stops the guest here with that
    /// error, which `classify` turns into the call's
    /// [`CallError::InputRequired`] or [`CallError::AnswerRefused`]: the
    /// guest runs no further.
    pub(crate) async fn host_ask(
        &mut self,
        question: Question,
    ) -> wasmtime::Result<Result<Answer, AskError>> {
        let asked = self.ask(question).await;
        let call = &self.call;
        match &asked {
            Ok(_) => tracing::info!(
                plugin = %call.plugin, tool = %call.tool, call = %call.call_id,
                "the tool asked its user a question and got an answer"
            ),
            Err(tool::AskError::InputRequired(_)) => tracing::info!(
                plugin = %call.plugin, tool = %call.tool, call = %call.call_id,
                "the tool asked its user a question; the call stops to ask it"
            ),
            Err(error) => tracing::info!(
                plugin = %call.plugin, tool = %call.tool, call = %call.call_id, %error,
                "the tool asked its user a question and got no answer"
            ),
        }
        let asked = match asked {
            Err(stop) if stop.stops_the_call() => return Err(wasmtime::Error::new(stop)),
            asked => asked,
        };
        Ok(asked
            .map(|answer| match answer {
                tool::Answer::Accept(content) => Answer::Accept(Value::Object(content).to_string()),
                tool::Answer::Decline => Answer::Decline,
                // A future answer kind counts as a dismissal.
                _ => Answer::Cancel,
            })
            .map_err(|error| match error {
                tool::AskError::Unavailable(why) => AskError::Unavailable(why),
                tool::AskError::Invalid(why) => AskError::Invalid(why),
                tool::AskError::TooMany => AskError::TooMany(error.to_string()),
                _ => AskError::Timeout,
            }))
    }

    async fn ask(&mut self, question: Question) -> Result<tool::Answer, tool::AskError> {
        let Some(asker) = self.call.ask.clone() else {
            return Err(tool::AskError::Unavailable(
                "this call has no user to ask (the client cannot be asked)".into(),
            ));
        };
        if self.asked >= MAX_QUESTIONS_PER_CALL {
            return Err(tool::AskError::TooMany);
        }
        self.asked += 1;
        let asked_by = format!("{}.{}", self.call.plugin, self.call.tool);
        let question = tool::Question::check(&asked_by, question.message, &question.schema)?;
        let form = Schema::input_value(Value::Object(question.schema.clone()))
            .map_err(|e| tool::AskError::Invalid(format!("the form is not a valid schema: {e}")))?;
        // The user's time is not the call's: the deadline moves back by it.
        self.deadline.pause();
        let answer = tokio::time::timeout(ANSWER_TIMEOUT, asker.ask(question)).await;
        self.deadline.resume();
        let answer = answer.map_err(|_| tool::AskError::Timeout)??;
        if let tool::Answer::Accept(content) = &answer {
            let problems = form.problems(&Value::Object(content.clone()));
            if !problems.is_empty() {
                return Err(tool::AskError::Invalid(format!(
                    "the answer does not fit the form: {}",
                    problems.join("; ")
                )));
            }
        }
        Ok(answer)
    }

    // A store that fails stops the guest with the `StateError`, which
    // `classify` turns into the call's error: never a silent `none`.

    pub(crate) async fn host_state_get(&mut self, key: &str) -> wasmtime::Result<Option<String>> {
        Ok(self.scratch.get(key).await?)
    }

    pub(crate) async fn host_state_set(&mut self, key: &str, value: &str) -> wasmtime::Result<()> {
        Ok(self.scratch.set(key, value).await?)
    }

    pub(crate) async fn host_state_delete(&mut self, key: &str) -> wasmtime::Result<()> {
        Ok(self.scratch.delete(key).await?)
    }
}
