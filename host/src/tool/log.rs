//! Where a call's guest log messages go besides the host's log: to a client
//! that asked for them (MCP `logging/setLevel`), through a [`LogSink`] the
//! call carries.

use std::fmt;
use std::sync::Arc;

/// How severe a guest's log message is (the contract's levels).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum LogLevel {
    /// Tracing detail.
    Trace,
    /// Debugging detail.
    Debug,
    /// Normal operation.
    Info,
    /// Something unexpected the tool went on from.
    Warn,
    /// A failure.
    Error,
}

/// Receives the messages a call's guest logs (through the contract's `log`
/// import), each already cut to the host's bound and with every configured
/// secret masked. It is called from inside the guest's call, so it must not
/// block: hand the message on (e.g. `try_send` to a bounded queue) or drop it.
///
/// # Examples
/// ```
/// use std::sync::{Arc, Mutex};
/// use toolhost::tool::{LogLevel, LogSink, ToolCall};
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let into = Arc::clone(&seen);
/// let sink = LogSink::new(move |level, message| {
///     into.lock().unwrap().push((level, message.to_owned()));
/// });
/// let call = ToolCall::new("whoami", serde_json::json!({})).with_log_sink(sink);
/// assert!(call.log_sink().is_some());
/// ```
#[derive(Clone)]
pub struct LogSink(Arc<Emit>);

/// What a [`LogSink`] calls with each message.
type Emit = dyn Fn(LogLevel, &str) + Send + Sync;

impl LogSink {
    /// A sink calling `emit` with each message.
    pub fn new(emit: impl Fn(LogLevel, &str) + Send + Sync + 'static) -> Self {
        Self(Arc::new(emit))
    }

    /// Hands a message on.
    pub(crate) fn emit(&self, level: LogLevel, message: &str) {
        (self.0)(level, message);
    }
}

impl fmt::Debug for LogSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LogSink")
    }
}

/// Two sinks are equal when they are the same sink.
impl PartialEq for LogSink {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
