//! [`ToolError`]: the expected failures of a tool.

use std::fmt;

/// An expected failure of a tool call; crosses the boundary as the WIT `tool-error`.
///
/// Bugs are panics (the guest traps and the host reports the panic message);
/// exhausted budgets are traps too. Everything a model can act on is a `ToolError`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolError {
    /// The arguments were wrong in a way the schema could not express; the
    /// message tells the model how to fix them.
    InvalidArguments(String),
    /// The tool ran and failed; the message says why.
    Failed(String),
    /// The plugin has no tool of that name (the SDK reports this itself).
    UnknownTool(String),
}

impl ToolError {
    /// The tool ran and failed; `message` says why.
    ///
    /// Accepts anything printable, including errors: `ToolError::failed(err)`.
    pub fn failed(message: impl fmt::Display) -> Self {
        Self::Failed(message.to_string())
    }

    /// The arguments were wrong; `message` tells the model how to fix them.
    pub fn invalid_arguments(message: impl fmt::Display) -> Self {
        Self::InvalidArguments(message.to_string())
    }

    /// The message, without the kind of error.
    pub fn message(&self) -> &str {
        match self {
            Self::InvalidArguments(m) | Self::Failed(m) | Self::UnknownTool(m) => m,
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidArguments(m) => write!(f, "invalid arguments: {m}"),
            Self::Failed(m) => f.write_str(m),
            Self::UnknownTool(m) => write!(f, "unknown tool: {m}"),
        }
    }
}

impl std::error::Error for ToolError {}

// A blanket `From<E: Error>` would overlap with `From<ToolError> for ToolError`,
// so the common error types get their own impls; others use `ToolError::failed`.

impl From<String> for ToolError {
    /// A plain message is a [`ToolError::Failed`].
    fn from(message: String) -> Self {
        Self::Failed(message)
    }
}

impl From<&str> for ToolError {
    /// A plain message is a [`ToolError::Failed`].
    fn from(message: &str) -> Self {
        Self::Failed(message.to_owned())
    }
}

impl From<std::io::Error> for ToolError {
    /// An I/O error is a [`ToolError::Failed`].
    fn from(err: std::io::Error) -> Self {
        Self::failed(err)
    }
}

impl From<serde_json::Error> for ToolError {
    /// A JSON error is a [`ToolError::Failed`].
    fn from(err: serde_json::Error) -> Self {
        Self::failed(err)
    }
}

impl From<std::fmt::Error> for ToolError {
    /// A formatting error is a [`ToolError::Failed`].
    fn from(err: std::fmt::Error) -> Self {
        Self::failed(err)
    }
}
