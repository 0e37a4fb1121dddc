//! Typed errors of loading plugins and calling tools.

pub(crate) mod input;
mod kind;
mod load;
mod toml_text;

pub use load::LoadError;

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

/// The longest message a plugin may put in an error (`tool-error`, a panic):
/// the rest is cut, and the cut is marked. Error text reaches a model's
/// context, a client's response and the host's log.
pub(crate) const MAX_ERROR_MESSAGE_BYTES: usize = 4 << 10;

/// `text` cut to at most `max` bytes (on a character boundary), marked with
/// how much was cut.
pub(crate) fn cut(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let dropped = text.len() - end;
    text.truncate(end);
    text.push_str(&format!("… [cut: {dropped} more bytes]"));
    text
}

/// A budget a call may run out of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Exhausted {
    /// The call used up its fuel (deterministic CPU budget).
    #[error("fuel (limit {limit} units)")]
    Fuel {
        /// The fuel the call was given.
        limit: u64,
    },
    /// The call tried to grow linear memory past its limit.
    #[error("memory (limit {limit} bytes)")]
    Memory {
        /// The limit in bytes.
        limit: u64,
    },
    /// The call tried to grow a table past its element limit.
    #[error("table elements (limit {limit})")]
    TableElements {
        /// The limit in elements.
        limit: u64,
    },
    /// The call ran past its wall-clock deadline.
    #[error("time (deadline {limit:?})")]
    Deadline {
        /// The deadline the call was given.
        limit: Duration,
    },
    /// The call's output was larger than allowed.
    #[error("output size (limit {limit} bytes)")]
    Output {
        /// The limit in bytes.
        limit: u64,
    },
    /// A streaming call's output was larger than allowed: its chunks' bytes,
    /// and a fixed overhead per chunk (each costs the host a message, even
    /// an empty one).
    #[error(
        "output size (limit {limit} bytes: the stream's {chunks} chunks held {data} bytes, and \
         each chunk, empty or not, counts {per_chunk} bytes more)"
    )]
    StreamOutput {
        /// The limit in bytes.
        limit: u64,
        /// The chunks streamed, the last one included.
        chunks: u64,
        /// The bytes those chunks held.
        data: u64,
        /// What each chunk counts beyond its bytes.
        per_chunk: u64,
    },
    /// The call tried to create more core instances, memories or tables than allowed.
    #[error("instances (limit {limit} core instances, memories or tables)")]
    Instances {
        /// The limit.
        limit: u32,
    },
    /// The guest overflowed its call stack (for example unbounded recursion).
    #[error("stack (limit {limit} bytes)")]
    Stack {
        /// The maximum wasm stack in bytes.
        limit: u64,
    },
}

/// A configuration file could not be used. Names the file, the key and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {reason}", path.display(), key.as_ref().map(|k| format!(": `{k}`")).unwrap_or_default())]
#[non_exhaustive]
pub struct ConfigError {
    /// The file.
    pub path: PathBuf,
    /// The key at fault, when one is.
    pub key: Option<String>,
    /// What is wrong.
    pub reason: String,
}

impl ConfigError {
    /// Parses TOML into `T`; errors name the file and the line.
    pub(crate) fn from_toml<T: serde::de::DeserializeOwned>(
        text: &str,
        path: &std::path::Path,
    ) -> Result<T, Self> {
        toml::from_str(text).map_err(|e| {
            let at = e
                .span()
                .map(|span| {
                    let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
                    format!("line {line}: ")
                })
                .unwrap_or_default();
            Self {
                path: path.to_owned(),
                key: e
                    .span()
                    .and_then(|span| toml_text::key_at(text, span.start)),
                reason: format!("{at}{}", toml_text::plain_types(e.message())),
            }
        })
    }
}

/// A call waiting for a human's decision (carried by
/// [`Started::NeedsApproval`](crate::toolset::Started::NeedsApproval), and by
/// [`CallError::ConfirmationRequired`] for a caller that wanted the output).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ConfirmationRequest {
    /// The call to resume: decide with [`Context::with_decision`](crate::Context::with_decision) under this ID.
    pub call_id: String,
    /// The tool, by its canonical name.
    pub tool: String,
    /// The exact arguments the tool would get; approve these.
    pub arguments: Value,
    /// The question for the human.
    pub hint: String,
    /// Anything else for the UI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
}

/// The host is at an engine-wide limit: the call could not go on now, but may
/// succeed if retried shortly. Traps the guest; becomes
/// [`CallError::Busy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Busy {
    /// All calls together hold the engine's budget of guest memory.
    #[error("the host's guest-memory budget ({limit} bytes) is in use by other calls")]
    Memory {
        /// The engine-wide budget in bytes.
        limit: u64,
    },
    /// All invocations together hold the engine's budget of scratch state.
    #[error("the host's invocation-state budget ({limit} bytes) is in use by other invocations")]
    State {
        /// The engine-wide budget in bytes.
        limit: u64,
    },
    /// Every instance slot of the engine's pool is in use.
    #[error("every instance slot is in use (too many calls in flight)")]
    Instances,
}

/// The invocation-state, approval or task store failed (see [`crate::state`]).
///
/// A guest whose `state-get`, `state-set` or `state-delete` fails this way is
/// stopped: the call ends with [`CallError::Failed`] for a full invocation,
/// [`CallError::Busy`] for the engine-wide budget, and [`CallError::State`]
/// for a store that cannot be reached or does not answer in time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The invocation holds as many bytes of state as it may (keys, values
    /// and a fixed overhead per key).
    #[error("invocation state is limited to {limit} bytes")]
    Bytes {
        /// The limit in bytes.
        limit: usize,
    },
    /// The invocation holds as many keys as it may.
    #[error("invocation state is limited to {limit} keys")]
    Keys {
        /// The limit in keys.
        limit: usize,
    },
    /// All invocations of the in-process store together hold its budget.
    #[error("the host's invocation-state budget ({limit} bytes) is in use by other invocations")]
    Busy {
        /// The budget in bytes.
        limit: u64,
    },
    /// The shared store could not be reached, or answered with an error.
    #[error("the state store cannot be reached: {reason}")]
    Unavailable {
        /// What the client said.
        reason: String,
    },
    /// The shared store did not answer within the operation timeout
    /// (`[state] timeout_ms`).
    #[error("the state store did not answer within {limit:?}")]
    Timeout {
        /// The timeout.
        limit: Duration,
    },
    /// The nonce was claimed by an attempt that failed (the store did not
    /// answer in time) and that claim is still being undone: nothing used the
    /// nonce, and a claim shortly after can succeed.
    #[error(
        "an earlier attempt of this call could not be recorded (the store did not answer in time) and is still being undone; it did not run"
    )]
    Undoing,
    /// An approval could not be recorded as used, so the approved call did
    /// not run; the approval stays valid (the record is undone if it reached
    /// the store), and a retry of the same approved call runs it once.
    #[error(
        "the approval could not be recorded ({reason}), so the tool did not run and the approval stays valid"
    )]
    Unrecorded {
        /// Why the store could not record it.
        reason: Box<StateError>,
    },
    /// A task with this id exists already (ids must be fresh random values).
    #[error("task `{id}` exists already")]
    TaskExists {
        /// The task's id.
        id: String,
    },
    /// The in-process store holds as many tasks as it may, none of them
    /// finished.
    #[error("the host runs as many tasks as it may ({limit}); try again when one ends")]
    Tasks {
        /// The most tasks held.
        limit: usize,
    },
    /// The in-process store's tasks hold as many bytes as they may
    /// ([`MAX_EMBEDDED_TASK_BYTES`](crate::state::tasks::MAX_EMBEDDED_TASK_BYTES)),
    /// none of them finished.
    #[error("the host's tasks hold as many bytes as they may ({limit}); try again when one ends")]
    TaskBytes {
        /// The budget in bytes.
        limit: usize,
    },
    /// A task's payload or input responses are over the store's limit.
    #[error("a task's payload or input responses are limited to {limit} bytes")]
    TaskPayload {
        /// The limit in bytes.
        limit: usize,
    },
    /// A session's record (its `initialize` params and owner) is over the
    /// store's limit.
    #[error("an MCP session's record is limited to {limit} bytes")]
    SessionRecord {
        /// The limit in bytes.
        limit: usize,
    },
    /// The in-process store holds as many live sessions as it may.
    #[error("the host keeps as many MCP sessions as it may ({limit}); try again when one ends")]
    Sessions {
        /// The most sessions held.
        limit: usize,
    },
    /// The store's settings are invalid (the URL does not parse, a zero TTL).
    /// The message never includes a password.
    #[error("invalid state store settings: {reason}")]
    Settings {
        /// What is wrong.
        reason: String,
    },
}

impl StateError {
    /// True if the store itself failed (unreachable, too slow), not a budget.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Self::Unavailable { .. } | Self::Timeout { .. })
    }
}

/// Why a tool call did not produce a result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No tool of that name exists (or it is hidden from the caller).
    #[error("{}", unknown_tool(tool, available))]
    UnknownTool {
        /// The name that was called.
        tool: String,
        /// The names that do exist.
        available: Vec<String>,
    },
    /// A bare tool name that several plugins offer: call one of the qualified
    /// names (`plugin.tool`) instead.
    #[error("`{tool}` is ambiguous: several plugins offer it; call it as one of: {}", candidates.join(", "))]
    AmbiguousTool {
        /// The name that was called.
        tool: String,
        /// The qualified names of the tools it could mean.
        candidates: Vec<String>,
    },
    /// An alias whose tool is not there now (removed, renamed, hidden from the
    /// caller, or ambiguous); `problem` says why its tool's name did not resolve.
    #[error("`{alias}` is an alias of `{tool}`, which does not resolve now: {problem}")]
    AliasUnresolved {
        /// The alias that was called.
        alias: String,
        /// The tool it stands for, as configured.
        tool: String,
        /// Why calling `tool` itself fails ([`CallError::UnknownTool`] or
        /// [`CallError::AmbiguousTool`]).
        problem: Box<CallError>,
    },
    /// No resource is at that URI (or it is hidden from the caller).
    #[error("no resource at `{uri}`")]
    UnknownResource {
        /// The URI that was read.
        uri: String,
    },
    /// No prompt of that name exists (or it is hidden from the caller).
    #[error(
        "no prompt named `{}`; {}",
        crate::log::escape_name(prompt),
        available_prompts(available)
    )]
    UnknownPrompt {
        /// The name that was asked for.
        prompt: String,
        /// The names that do exist.
        available: Vec<String>,
    },
    /// The caller may not call this tool: no access rule grants it
    /// ([`Access`](crate::toolset::Access)). Nothing ran; the arguments were
    /// not looked at.
    #[error("`{tool}` is not permitted for {caller}: no access rule grants it")]
    Forbidden {
        /// The tool.
        tool: String,
        /// Who asked, as the refusal names them.
        caller: String,
    },
    /// The arguments do not match the tool's (or prompt's) declaration.
    /// Every problem is listed.
    #[error("invalid arguments for `{tool}`: {}", problems.join("; "))]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// Each violation, prefixed with its JSON path.
        problems: Vec<String>,
    },
    /// The tool ran and reported a failure.
    #[error("tool `{tool}` failed: {message}")]
    Failed {
        /// The plugin.
        plugin: String,
        /// The tool.
        tool: String,
        /// The tool's message.
        message: String,
    },
    /// The call ran out of a budget.
    #[error("tool `{tool}` (plugin `{plugin}`) ran out of {budget}")]
    Exhausted {
        /// The plugin.
        plugin: String,
        /// The tool.
        tool: String,
        /// Which limit was hit, and its value.
        budget: Exhausted,
    },
    /// The guest panicked.
    #[error("tool `{tool}` (plugin `{plugin}`) panicked: {message}")]
    Panicked {
        /// The plugin.
        plugin: String,
        /// The tool.
        tool: String,
        /// The panic message the guest reported.
        message: String,
    },
    /// The guest trapped (a bug in the plugin).
    #[error("tool `{tool}` (plugin `{plugin}`) crashed: {trap}")]
    Trapped {
        /// The plugin.
        plugin: String,
        /// The tool.
        tool: String,
        /// A one-line description of the trap.
        trap: String,
        /// The full error with its backtrace.
        #[source]
        source: wasmtime::Error,
    },
    /// The tool returned something that breaks the contract (not JSON, against its schema).
    #[error("tool `{tool}` (plugin `{plugin}`) returned an invalid result: {reason}")]
    InvalidOutput {
        /// The plugin.
        plugin: String,
        /// The tool.
        tool: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The host is at an engine-wide limit (guest memory, instance slots): the
    /// call stopped or never started, through no fault of its own. Retryable:
    /// see [`CallError::is_retryable`].
    #[error("tool `{tool}` (plugin `{plugin}`) could not run now: {reason}; retry shortly")]
    Busy {
        /// The plugin.
        plugin: String,
        /// The tool.
        tool: String,
        /// Which engine-wide limit.
        reason: Busy,
    },
    /// The state store (invocation state, used approvals) failed: the shared
    /// store is down or too slow. A guest that needed it was stopped; a call
    /// that needs no state is not affected. Retryable: see
    /// [`CallError::is_retryable`].
    #[error("tool `{tool}` could not use the state store: {reason}; retry shortly")]
    State {
        /// The tool.
        tool: String,
        /// What failed.
        reason: StateError,
    },
    /// The host could not set up the call (not the plugin's or the caller's fault).
    #[error("tool `{tool}`: host error: {reason}")]
    Host {
        /// The tool.
        tool: String,
        /// What failed.
        reason: String,
    },
    /// The call needs a human's approval before it runs (ADK's
    /// `ErrConfirmationRequired`): not a failure but a pause, the call
    /// driver's [`Started::NeedsApproval`](crate::toolset::Started::NeedsApproval)
    /// for a caller that wanted the whole output ([`ToolsetExt::invoke`](crate::ToolsetExt::invoke)).
    /// Resume by calling again with the same call ID and a
    /// [`Decision`](crate::toolset::Decision) for it.
    /// Boxed to keep `Result<_, CallError>` small.
    #[error("tool `{}` needs confirmation for call `{}`: {}", .0.tool, .0.call_id, .0.hint)]
    ConfirmationRequired(Box<ConfirmationRequest>),
    /// The call needs a human's approval and nobody can be asked (no terminal,
    /// an MCP client without elicitation): it was not run. `reason` says why
    /// nobody can be asked, and what to do instead.
    #[error("`{tool}` needs confirmation ({hint}), and {reason}")]
    ConfirmationUnavailable {
        /// The tool.
        tool: String,
        /// The question that could not be asked.
        hint: String,
        /// Why nobody can be asked, and what to do instead.
        reason: String,
    },
    /// The call stopped at a question for its user that is asked outside
    /// this run ([`Asker::replay`](crate::tool::Asker::replay): a front end
    /// that keeps no call between requests): not a failure but a pause. The
    /// guest ran up to the question and no further. Put the question to the
    /// user, then run the call again from its start with the answers (those
    /// replayed, and the user's one). Boxed to keep `Result<_, CallError>` small.
    #[error("tool `{tool}` stopped to ask its user: {}", .input.question.message)]
    InputRequired {
        /// The tool.
        tool: String,
        /// The question and the answers replayed before it.
        input: Box<input::InputRequired>,
    },
    /// An answer replayed to a re-run call does not belong to it (the tool
    /// asked another question this time, or the answer does not fit the
    /// form): the call stopped at that question; `reason` says which.
    #[error("`{tool}` stopped at its question: {reason}")]
    AnswerRefused {
        /// The tool.
        tool: String,
        /// Which answer, and why.
        reason: String,
    },
    /// The call was not run: a human rejected it, or the confirmation layer
    /// refused the decision (already used, or the arguments changed since
    /// approval); `reason` says which (ADK's `ErrConfirmationRejected`).
    /// The message reads as the decision it is, for the model and the user:
    /// "`tool` was not run: reason", without the call ID (an internal name).
    #[error("`{tool}` was not run: {}", reason.as_deref().unwrap_or("the call was rejected"))]
    ConfirmationRejected {
        /// The tool.
        tool: String,
        /// The call.
        call_id: String,
        /// Why, if known.
        reason: Option<String>,
    },
}

/// "No tool named …": with the closest name when the call looks like a slip
/// of one, else with every name there is.
fn unknown_tool(tool: &str, available: &[String]) -> String {
    let shown = crate::log::escape_name(tool);
    match crate::suggest::closest(tool, available.iter().map(String::as_str)) {
        Some(closest) => format!("no tool named `{shown}`; did you mean `{closest}`?"),
        None if available.is_empty() => format!("no tool named `{shown}`; no tools are available"),
        None => format!(
            "no tool named `{shown}`; available tools: {}",
            available.join(", ")
        ),
    }
}

impl CallError {
    /// Why a name reaches no tool, under any alias that stood for it: the
    /// innermost error of a chain of [`CallError::AliasUnresolved`] (for
    /// layers that rewrite the names an unknown or ambiguous name offers).
    pub(crate) fn unresolved_mut(&mut self) -> &mut Self {
        match self {
            Self::AliasUnresolved { problem, .. } => problem.unresolved_mut(),
            other => other,
        }
    }

    /// True if the caller (the model) can fix this by changing the call.
    pub fn is_caller_error(&self) -> bool {
        matches!(
            self,
            Self::UnknownTool { .. }
                | Self::AmbiguousTool { .. }
                | Self::AliasUnresolved { .. }
                | Self::UnknownResource { .. }
                | Self::UnknownPrompt { .. }
                | Self::InvalidArguments { .. }
        )
    }

    /// True if no tool was found for the called name ([`CallError::UnknownTool`],
    /// [`CallError::AmbiguousTool`], [`CallError::AliasUnresolved`]): nothing ran.
    pub fn is_unresolved_name(&self) -> bool {
        matches!(
            self,
            Self::UnknownTool { .. } | Self::AmbiguousTool { .. } | Self::AliasUnresolved { .. }
        )
    }

    /// True if the same call may succeed when retried shortly, unchanged
    /// ([`CallError::Busy`], [`CallError::State`]).
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Busy { .. } | Self::State { .. })
    }
}

/// The prompts an unknown prompt's error lists, or that there are none.
fn available_prompts(available: &[String]) -> String {
    if available.is_empty() {
        "no prompts are available".to_owned()
    } else {
        format!("available prompts: {}", available.join(", "))
    }
}
