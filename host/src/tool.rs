//! What a tool is and what crosses a call: specs, calls, outputs and parts.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod ask;
mod caller;
mod log;
mod stream;

pub use ask::{
    ANSWER_TIMEOUT, Answer, AskError, AskFuture, Asker, InputRequired, MAX_ANSWER_BYTES,
    MAX_FIELDS, MAX_MESSAGE_BYTES, MAX_QUESTIONS_PER_CALL, MAX_SCHEMA_BYTES, Question, Replayed,
};
pub use caller::Caller;
pub use log::{LogLevel, LogSink};
pub use stream::ToolStream;
pub(crate) use stream::{NextPart, PartSource};

use crate::error::CallError;
use crate::schema::{Schema, SchemaError};

/// ADK's note for long-running tools, appended to the description the model sees.
pub const LONG_RUNNING_NOTE: &str = "NOTE: This is a long-running operation. Do not call this tool again if it has already returned some intermediate or pending status.";

/// The longest tool name: what many MCP clients accept.
pub(crate) const MAX_TOOL_NAME: usize = 64;

/// The tool-name rule, shared by the loader (a plugin declaring another name
/// does not load) and the MCP name mapping (names of native tools or of
/// layers that break it are mapped): 1 to [`MAX_TOOL_NAME`] ASCII letters,
/// digits, `_` or `-`.
pub(crate) fn is_valid_tool_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A tool's info and declaration: what the model sees.
///
/// # Examples
/// ```
/// use serde_json::json;
/// let mut spec = toolhost::ToolSpec::new(
///     "upper",
///     "Upper-cases a text.",
///     json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
/// );
/// spec.streaming = true;
/// assert!(spec.prepare(json!({"text": "hi"})).is_ok());
/// assert!(spec.prepare(json!({})).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ToolSpec {
    /// The tool's name.
    pub name: String,
    /// The description as the plugin declared it.
    pub description: String,
    /// The tool starts long work and may return a pending status.
    pub long_running: bool,
    /// The tool streams its result.
    pub streaming: bool,
    /// JSON Schema of the arguments object.
    pub input_schema: Value,
    /// JSON Schema of the result, if declared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// For a plugin's tool in a toolset, `plugin.tool`: the name that always
    /// reaches it, whether `name` is bare (unique) or qualified (clashing).
    /// `None` for tools that belong to no plugin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qualified_name: Option<String>,
    /// Calls of this tool may need a human's approval: set by the
    /// [`Confirm`](crate::toolset::Confirm) layer on the tools it gates (a
    /// rule names the tool, covers the whole set, or a provider decides per
    /// call), so a front end can say so up front. Over MCP it is the tool's
    /// `_meta` key `dev.toolhost/confirm`. The layer enforces approval
    /// whatever this says.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub confirm: bool,
    /// The plugin's hints about the tool's behaviour (MCP `annotations`):
    /// declared since `toolhost:plugin@0.2.0`; none for `@0.1.0` plugins.
    #[serde(skip_serializing_if = "ToolHints::is_empty")]
    pub hints: ToolHints,
    /// `input_schema`, compiled on first use; shared by clones.
    #[serde(skip)]
    input: CompiledInput,
}

/// What a plugin says about a tool's behaviour, served over MCP as the tool's
/// `annotations`. Every field is optional (`None`: the plugin said nothing);
/// the host enforces none of them.
///
/// # Examples
/// ```
/// let mut hints = toolhost::ToolHints::default();
/// assert!(hints.is_empty());
/// hints.read_only = Some(true);
/// assert!(!hints.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolHints {
    /// A short human-readable name (MCP `title`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool changes nothing in its environment (MCP `readOnlyHint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// The tool may destroy or overwrite (MCP `destructiveHint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// The same arguments again have no further effect (MCP `idempotentHint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// The tool reaches systems outside the host (MCP `openWorldHint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

impl ToolHints {
    /// No hint is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A spec's compiled input schema, with the JSON it was compiled from (so a
/// spec whose `input_schema` was changed after compiling is compiled afresh).
#[derive(Clone, Default)]
struct CompiledInput(Arc<OnceLock<Result<Arc<Schema>, SchemaError>>>);

impl CompiledInput {
    fn of(schema: Arc<Schema>) -> Self {
        Self(Arc::new(OnceLock::from(Ok(schema))))
    }
}

impl std::fmt::Debug for CompiledInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "compiled"
        } else {
            "not compiled"
        })
    }
}

/// A cache: two specs are equal when their declarations are.
impl PartialEq for CompiledInput {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl ToolSpec {
    /// A tool that neither streams nor runs long, with no output schema.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            long_running: false,
            streaming: false,
            input_schema,
            output_schema: None,
            qualified_name: None,
            confirm: false,
            hints: ToolHints::default(),
            input: CompiledInput::default(),
        }
    }

    /// A spec whose input schema is already compiled (a plugin's, at load).
    pub(crate) fn with_compiled_input(mut self, input: Arc<Schema>) -> Self {
        self.input = CompiledInput::of(input);
        self
    }

    /// The arguments a call will run with: `null` becomes `{}`, obvious slips
    /// are coerced where the input schema says what a value must be (`"42"`
    /// for an integer), then the result is checked against the schema. Doing
    /// it twice changes nothing. [`Tool::prepare`](crate::Tool::prepare) runs
    /// this by default, before any confirmation is asked.
    ///
    /// # Errors
    /// [`CallError::InvalidArguments`] listing every violation, or
    /// [`CallError::Host`] if the input schema itself is not a valid schema.
    pub fn prepare(&self, mut arguments: Value) -> Result<Prepared, CallError> {
        if arguments.is_null() {
            arguments = Value::Object(Default::default());
        }
        let fresh;
        let schema = match self
            .input
            .0
            .get_or_init(|| compile_input(&self.input_schema))
        {
            Ok(schema) if schema.raw() == &self.input_schema => schema,
            // `input_schema` was changed after it was compiled.
            Ok(_) => {
                fresh = compile_input(&self.input_schema);
                fresh.as_ref().map_err(|e| self.broken_schema(e))?
            }
            Err(e) => return Err(self.broken_schema(e)),
        };
        schema.coerce(&mut arguments);
        let problems = schema.problems(&arguments);
        if problems.is_empty() {
            Ok(Prepared(arguments))
        } else {
            Err(CallError::InvalidArguments {
                tool: self.name.clone(),
                problems,
            })
        }
    }

    fn broken_schema(&self, error: &SchemaError) -> CallError {
        CallError::Host {
            tool: self.name.clone(),
            reason: format!("the tool's input schema cannot be used: {error}"),
        }
    }

    /// Every name this tool answers to in configuration rules (filters,
    /// confirmation, aliases): the listed name and, for a plugin's tool, its
    /// qualified name `plugin.tool` and its bare name `tool`. Duplicates are
    /// left out.
    ///
    /// # Examples
    /// ```
    /// # use toolhost::ToolSpec;
    /// # let mut spec = ToolSpec::new("", "", serde_json::json!({"type": "object"}));
    /// spec.name = "fs.write_file".into(); // listed qualified: another plugin has `write_file`
    /// spec.qualified_name = Some("fs.write_file".into());
    /// assert_eq!(spec.names().collect::<Vec<_>>(), ["fs.write_file", "write_file"]);
    /// ```
    pub fn names(&self) -> impl Iterator<Item = &str> {
        let qualified = self.qualified_name.as_deref();
        // Tool names never contain `.`; plugin names may.
        let bare = qualified
            .and_then(|q| q.rsplit_once('.'))
            .map(|(_, bare)| bare);
        let listed = self.name.as_str();
        std::iter::once(listed)
            .chain(qualified.filter(|q| *q != listed))
            .chain(bare.filter(|b| *b != listed))
    }

    /// The plugin that offers this tool, when it is a plugin's (from
    /// [`ToolSpec::qualified_name`]).
    pub fn plugin(&self) -> Option<&str> {
        let qualified = self.qualified_name.as_deref()?;
        qualified.rsplit_once('.').map(|(plugin, _)| plugin)
    }

    /// Whether `name` is one of [`ToolSpec::names`].
    pub fn answers_to(&self, name: &str) -> bool {
        self.names().any(|n| n == name)
    }

    /// The description the model sees: the declared one, plus ADK's note for
    /// long-running tools.
    pub fn model_description(&self) -> String {
        if !self.long_running {
            return self.description.clone();
        }
        if self.description.is_empty() {
            LONG_RUNNING_NOTE.to_owned()
        } else {
            format!("{}\n\n{LONG_RUNNING_NOTE}", self.description)
        }
    }
}

fn compile_input(schema: &Value) -> Result<Arc<Schema>, SchemaError> {
    Schema::input_value(schema.clone()).map(Arc::new)
}

/// A process-unique call ID, for calls whose caller gave none.
pub(crate) fn next_call_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    // `process::id` is a system call each time: ask once.
    static PREFIX: OnceLock<String> = OnceLock::new();
    let prefix = PREFIX.get_or_init(|| format!("call-{}-", std::process::id()));
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut id = String::with_capacity(prefix.len() + 20);
    id.push_str(prefix);
    // Writing into a String cannot fail.
    let _ = write!(id, "{n}");
    id
}

/// A call's arguments, ready to run: rewritten by the layers that rewrite
/// arguments, coerced and checked against the tool's input schema
/// ([`ToolSpec::prepare`] is the only way to make one). A tool runs only
/// with these ([`Tool::run`](crate::Tool::run)), so no call skips the check,
/// and a call is prepared once however many layers it passes.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared(Value);

impl Prepared {
    /// Arguments taken as prepared without a check here: the unknown-tool
    /// handler's (it has no schema, and gets them as sent), and an approval
    /// request's (the confirmation layer copied them from a `Prepared`).
    pub(crate) fn unchecked(arguments: Value) -> Self {
        Self(arguments)
    }

    /// The arguments.
    pub fn arguments(&self) -> &Value {
        &self.0
    }

    /// The arguments, taken.
    pub fn into_arguments(self) -> Value {
        self.0
    }
}

/// One call of one tool.
///
/// # Examples
/// ```
/// let call = toolhost::tool::ToolCall::new("add", serde_json::json!({"a": 1, "b": 2}))
///     .with_call_id("call-7")
///     .with_invocation_id("turn-3");
/// assert_eq!(call.call_id(), "call-7");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub(crate) tool: String,
    pub(crate) arguments: Value,
    pub(crate) call_id: String,
    pub(crate) invocation_id: String,
    pub(crate) caller: Option<Caller>,
    pub(crate) log: Option<LogSink>,
    pub(crate) ask: Option<Asker>,
}

impl ToolCall {
    /// A call of `tool` with these arguments, a fresh call ID and its own invocation.
    pub fn new(tool: impl Into<String>, arguments: Value) -> Self {
        let call_id = next_call_id();
        Self {
            tool: tool.into(),
            arguments,
            invocation_id: call_id.clone(),
            call_id,
            caller: None,
            log: None,
            ask: None,
        }
    }

    /// Sets the call ID (for example the model's tool-call ID).
    pub(crate) fn with_arguments(mut self, arguments: Value) -> Self {
        self.arguments = arguments;
        self
    }

    /// The same call with this call ID.
    pub fn with_call_id(mut self, id: impl Into<String>) -> Self {
        self.call_id = id.into();
        self
    }

    /// Sets the invocation this call belongs to; calls of one invocation share scratch state.
    pub fn with_invocation_id(mut self, id: impl Into<String>) -> Self {
        self.invocation_id = id.into();
        self
    }

    /// Says who calls: the tool sees it (contract `@0.3.0` on), with only the
    /// claims its plugin's grants name.
    pub fn with_caller(mut self, caller: Caller) -> Self {
        self.caller = Some(caller);
        self
    }

    /// Who calls, if the call says.
    pub fn caller(&self) -> Option<&Caller> {
        self.caller.as_ref()
    }

    /// Also hands the messages the guest logs to `sink` (they always reach
    /// the host's log).
    pub fn with_log_sink(mut self, sink: LogSink) -> Self {
        self.log = Some(sink);
        self
    }

    /// Where the guest's log messages also go, if anywhere.
    pub fn log_sink(&self) -> Option<&LogSink> {
        self.log.as_ref()
    }

    /// Lets the tool ask its user questions through `asker` (`host.ask`).
    pub fn with_asker(mut self, asker: Asker) -> Self {
        self.ask = Some(asker);
        self
    }

    /// Who the tool's questions go to, if anyone.
    pub fn asker(&self) -> Option<&Asker> {
        self.ask.as_ref()
    }

    /// The tool's name.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The arguments.
    pub fn arguments(&self) -> &Value {
        &self.arguments
    }

    /// The call ID.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The invocation ID.
    pub fn invocation_id(&self) -> &str {
        &self.invocation_id
    }
}

/// The broad kind of a binary part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum MediaKind {
    /// An image.
    Image,
    /// Sound.
    Audio,
    /// Video.
    Video,
    /// Any other file.
    File,
}

/// One part of a multimodal result, or one chunk of a stream.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Part {
    /// Plain text.
    Text(String),
    /// A JSON value.
    Json(Value),
    /// Bytes with a MIME type.
    Blob {
        /// The broad kind.
        kind: MediaKind,
        /// The MIME type.
        mime_type: String,
        /// A suggested file name.
        name: Option<String>,
        /// The bytes.
        data: Vec<u8>,
    },
}

/// What a call returned.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    /// The JSON result, always an object (a bare value is wrapped as `{"result": value}`).
    pub result: Option<Value>,
    /// Multimodal parts, in order.
    pub parts: Vec<Part>,
    /// The call ID this output answers.
    pub call_id: String,
    /// What the call cost (zero for tools that are not plugins).
    pub usage: Usage,
}

/// Gathers the parts of a stream into one output, as they arrive: adjacent
/// text chunks are joined; when every chunk is text, the JSON result is
/// `{"result": "<all the text>"}` and no part is kept.
///
/// # Examples
/// ```
/// use toolhost::tool::{Collector, Part};
/// let mut parts = Collector::new();
/// parts.push(Part::Text("Hello, ".into()));
/// parts.push(Part::Text("world".into()));
/// let output = parts.finish("call-1", Default::default());
/// assert_eq!(output.result, Some(serde_json::json!({"result": "Hello, world"})));
/// assert!(output.parts.is_empty());
/// ```
#[derive(Debug, Default, Clone)]
pub struct Collector {
    parts: Vec<Part>,
}

impl Collector {
    /// Nothing gathered yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the next part.
    pub fn push(&mut self, part: Part) {
        match (part, self.parts.last_mut()) {
            (Part::Text(text), Some(Part::Text(last))) => last.push_str(&text),
            (part, _) => self.parts.push(part),
        }
    }

    /// The output of the call `call_id`, which cost `usage`.
    pub fn finish(mut self, call_id: impl Into<String>, usage: Usage) -> ToolOutput {
        let result = match self.parts.as_mut_slice() {
            [] => Some(wrap_result(Value::String(String::new()))),
            [Part::Text(text)] => Some(wrap_result(Value::String(std::mem::take(text)))),
            _ => None,
        };
        if result.is_some() {
            self.parts.clear();
        }
        ToolOutput {
            result,
            parts: self.parts,
            call_id: call_id.into(),
            usage,
        }
    }
}

/// What one call cost in the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// Fuel consumed (≈ wasm instructions), including instantiation.
    pub fuel: u64,
    /// The largest size any linear memory of the call reached, in bytes.
    pub peak_memory_bytes: u64,
    /// Whether the call set scratch state (`temp:` keys) of its invocation.
    /// A call that is its own invocation and set none leaves nothing to
    /// delete when it ends (no Redis round trip).
    pub wrote_state: bool,
}

/// Wraps a JSON value that is not an object as `{"result": value}`.
pub fn wrap_result(value: Value) -> Value {
    match value {
        Value::Object(_) => value,
        other => serde_json::json!({ "result": other }),
    }
}
