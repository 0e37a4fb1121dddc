//! [`Context`]: what a tool knows about its call, and what the host offers it.

use crate::bindings::toolhost::plugin::host;

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

/// One call of one tool: its IDs, the invocation's scratch state, and the host log.
///
/// The host creates a fresh instance for every call, so nothing a tool keeps in
/// memory survives to the next call; [`Context::state_set`] is the way to share
/// values between the calls of one agent invocation.
#[derive(Debug, Clone)]
pub struct Context {
    call_id: String,
    invocation_id: String,
    tool: String,
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
        }
    }

    /// The ID of this call (the model's tool-call ID, or one chosen by the host).
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The ID of the agent invocation this call belongs to.
    pub fn invocation_id(&self) -> &str {
        &self.invocation_id
    }

    /// The name of the tool being called.
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
