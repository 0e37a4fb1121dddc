//! The short names of call failures: one per cause, stable (metrics labels,
//! audit records).

use super::{CallError, Exhausted};

impl CallError {
    /// A short name for the kind of failure (`invalid_arguments`, `fuel`,
    /// `timeout`, `forbidden`, ...): the `kind` label of the MCP server's
    /// metrics and the `outcome` of an audit record.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::UnknownTool { .. } => "unknown_tool",
            Self::AmbiguousTool { .. } => "ambiguous_tool",
            Self::AliasUnresolved { .. } => "alias_unresolved",
            Self::UnknownResource { .. } => "unknown_resource",
            Self::UnknownPrompt { .. } => "unknown_prompt",
            Self::InvalidArguments { .. } => "invalid_arguments",
            Self::Forbidden { .. } => "forbidden",
            Self::Failed { .. } => "failed",
            Self::Exhausted { budget, .. } => match budget {
                Exhausted::Fuel { .. } => "fuel",
                Exhausted::Memory { .. } => "memory",
                Exhausted::TableElements { .. } => "table_elements",
                Exhausted::Deadline { .. } => "timeout",
                Exhausted::Output { .. } | Exhausted::StreamOutput { .. } => "output",
                Exhausted::Instances { .. } => "instances",
                Exhausted::Stack { .. } => "stack",
            },
            Self::Panicked { .. } => "panicked",
            Self::Trapped { .. } => "trapped",
            Self::InvalidOutput { .. } => "invalid_output",
            Self::Busy { .. } => "busy",
            Self::Host { .. } => "host",
            Self::State { .. } => "state",
            Self::ConfirmationRequired(_) => "confirmation_required",
            Self::ConfirmationUnavailable { .. } => "confirmation_unavailable",
            Self::ConfirmationRejected { .. } => "rejected",
            Self::InputRequired { .. } => "input_required",
            Self::AnswerRefused { .. } => "answer_refused",
        }
    }
}
