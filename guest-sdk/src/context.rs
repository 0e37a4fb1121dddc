//! [`Context`]: what a tool knows about its call, and what the host offers it.

use serde_json::{Map, Value};

use crate::bindings::toolhost::plugin::{host, types};
use crate::{Answer, AskError};

/// Log severity for [`Context::log`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Very detailed tracing.
    Trace,
    /// Debugging detail.
    Debug,
    /// Normal operation.
    Info,
    /// Something looks wrong.
    Warn,
    /// Something failed.
    Error,
}

impl From<Level> for host::Level {
    fn from(level: Level) -> Self {
        match level {
            Level::Trace => Self::Trace,
            Level::Debug => Self::Debug,
            Level::Info => Self::Info,
            Level::Warn => Self::Warn,
            Level::Error => Self::Error,
        }
    }
}

/// One call of one tool, or one catalog request (a resource read, a prompt get,
/// a completion): its IDs and caller, the invocation's scratch state, the host
/// log, questions to the user and resource-change notices.
///
/// The host creates a fresh instance for every call, so nothing a tool keeps in
/// memory survives to the next call; [`Context::state_set`] is the way to share
/// values between the calls of one agent invocation.
#[derive(Debug, Clone)]
pub struct Context {
    call_id: String,
    invocation_id: String,
    tool: String,
    caller: Option<Caller>,
}

/// Who calls the tool, as the host authenticated them (MCP over HTTP with
/// OAuth or a static token): never their credentials.
///
/// A tool acting on its caller's behalf keys what it does by
/// [`Caller::issuer`] and [`Caller::subject`] together. It sees the caller's
/// token claims only where the operator granted them (`caller_claims`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Caller {
    /// Who vouches for the subject: the OAuth issuer URL, or
    /// `toolhost:static-token` for the host's shared token.
    pub issuer: String,
    /// The caller, unique under its issuer (a token's `sub`).
    pub subject: String,
    /// The scopes the caller's credentials grant.
    pub scopes: Vec<String>,
    /// The token claims the operator lets this plugin see.
    pub claims: Map<String, Value>,
}

impl Caller {
    /// Whether the caller's credentials grant `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }

    /// A granted claim of the caller's token, if it has it.
    pub fn claim(&self, name: &str) -> Option<&Value> {
        self.claims.get(name)
    }
}

impl From<types::Caller> for Caller {
    fn from(caller: types::Caller) -> Self {
        Self {
            issuer: caller.issuer,
            subject: caller.subject,
            scopes: caller.scopes,
            // The host sends a JSON object; anything else is no claims.
            claims: serde_json::from_str(&caller.claims).unwrap_or_default(),
        }
    }
}

impl Context {
    /// A context for a call; the SDK builds it, tests of tool functions may too.
    pub fn new(
        call_id: impl Into<String>,
        invocation_id: impl Into<String>,
        tool: impl Into<String>,
    ) -> Self {
        Self {
            call_id: call_id.into(),
            invocation_id: invocation_id.into(),
            tool: tool.into(),
            caller: None,
        }
    }

    /// The same context, called by `caller` (tests of tool functions use it).
    pub fn with_caller(mut self, caller: Caller) -> Self {
        self.caller = Some(caller);
        self
    }

    /// Who calls, when the host knows (an authenticated MCP client); `None`
    /// for stdio, an anonymous HTTP client or a library call naming nobody.
    pub fn caller(&self) -> Option<&Caller> {
        self.caller.as_ref()
    }

    /// The ID of this call (the model's tool-call ID, or one chosen by the host).
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The ID of the agent invocation this call belongs to.
    pub fn invocation_id(&self) -> &str {
        &self.invocation_id
    }

    /// The name of the tool being called. In a catalog handler: the URI read,
    /// the prompt's name, or the prompt or URI template being completed.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// Reads a key of this invocation's scratch state (ADK's `temp:` state).
    pub fn state_get(&self, key: &str) -> Option<String> {
        host::state_get(key)
    }

    /// Sets a key of this invocation's scratch state; later calls of the same
    /// invocation see it.
    pub fn state_set(&self, key: &str, value: &str) {
        host::state_set(key, value);
    }

    /// Deletes a key of this invocation's scratch state.
    pub fn state_delete(&self, key: &str) {
        host::state_delete(key);
    }

    /// Asks the user a question and waits for the answer (MCP elicitation, or
    /// a terminal prompt on the CLI).
    ///
    /// `schema` is the form: a JSON Schema object whose properties are flat —
    /// strings (with `enum`, `oneOf` of `const`/`title`, `format`), numbers,
    /// integers, booleans, or arrays of enum strings; defaults allowed.
    ///
    /// ```no_run
    /// # use toolhost_guest::{Answer, Context, ToolError};
    /// # fn call(cx: &Context) -> Result<String, ToolError> {
    /// let schema = serde_json::json!({
    ///     "type": "object",
    ///     "properties": {"name": {"type": "string", "description": "Your name"}},
    ///     "required": ["name"],
    /// });
    /// Ok(match cx.ask("Who are you?", &schema)? {
    ///     Answer::Accept(form) => {
    ///         let name = form.get("name").and_then(|name| name.as_str()).unwrap_or("you");
    ///         format!("Hello, {name}!")
    ///     }
    ///     Answer::Decline | Answer::Cancel => "Hello, stranger.".to_owned(),
    /// })
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// An [`AskError`] when there is no answer: nobody can be asked, the
    /// question breaks the host's rules, the call asked too many, or the
    /// user took too long. It converts into [`ToolError`](crate::ToolError) with `?`.
    pub fn ask(&self, message: &str, schema: &Value) -> Result<Answer, AskError> {
        let question = types::Question {
            message: message.to_owned(),
            schema: schema.to_string(),
        };
        Answer::from_wit(host::ask(&question)?)
    }

    /// Tells the host that the resource at `uri`, which this plugin offers,
    /// has changed: clients that subscribed to it are told. A URI the plugin
    /// does not offer is ignored (and logged by the host).
    pub fn resource_updated(&self, uri: &str) {
        host::resource_updated(uri);
    }

    /// Writes a line to the host's log, tagged with the plugin, tool and call ID.
    pub fn log(&self, level: Level, message: &str) {
        host::log(level.into(), message);
    }

    /// Logs at [`Level::Trace`].
    pub fn trace(&self, message: &str) {
        self.log(Level::Trace, message);
    }

    /// Logs at [`Level::Debug`].
    pub fn debug(&self, message: &str) {
        self.log(Level::Debug, message);
    }

    /// Logs at [`Level::Info`].
    pub fn info(&self, message: &str) {
        self.log(Level::Info, message);
    }

    /// Logs at [`Level::Warn`].
    pub fn warn(&self, message: &str) {
        self.log(Level::Warn, message);
    }

    /// Logs at [`Level::Error`].
    pub fn error(&self, message: &str) {
        self.log(Level::Error, message);
    }
}
