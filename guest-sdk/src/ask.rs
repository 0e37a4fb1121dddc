//! Asking the user in the middle of a call ([`Context::ask`](crate::Context::ask),
//! MCP elicitation): the [`Answer`] and why there may be none ([`AskError`]).

use std::fmt;

use serde_json::{Map, Value};

use crate::ToolError;
use crate::bindings::toolhost::plugin::types as wit;

/// The user's answer to a question.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The user submitted the form: its content, checked by the host against
    /// the question's schema.
    Accept(Map<String, Value>),
    /// The user said no.
    Decline,
    /// The user dismissed the question without choosing.
    Cancel,
}

impl Answer {
    /// The form's content, if the user submitted it.
    pub fn content(&self) -> Option<&Map<String, Value>> {
        match self {
            Self::Accept(content) => Some(content),
            Self::Decline | Self::Cancel => None,
        }
    }

    /// What the user did, in a word: `accept`, `decline` or `cancel` (MCP's
    /// elicitation actions).
    pub fn action(&self) -> &'static str {
        match self {
            Self::Accept(_) => "accept",
            Self::Decline => "decline",
            Self::Cancel => "cancel",
        }
    }

    /// The answer the host sent.
    ///
    /// # Errors
    ///
    /// [`AskError::Invalid`] if an accepted answer is not a JSON object.
    pub(crate) fn from_wit(answer: wit::Answer) -> Result<Self, AskError> {
        Ok(match answer {
            wit::Answer::Accept(content) => {
                Self::Accept(serde_json::from_str(&content).map_err(|err| {
                    AskError::Invalid(format!("the answer is not a JSON object: {err}"))
                })?)
            }
            wit::Answer::Decline => Self::Decline,
            wit::Answer::Cancel => Self::Cancel,
        })
    }
}

/// Why a question got no [`Answer`].
///
/// Converts into [`ToolError::Failed`], so a tool that cannot go on without
/// an answer writes `cx.ask(..)?`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AskError {
    /// Nobody can be asked here (no client that supports it, no terminal):
    /// the tool decides what to do without an answer.
    Unavailable(String),
    /// The question breaks the rules: its form is not a flat JSON Schema
    /// object, or it is too large.
    Invalid(String),
    /// This call asked as many questions as it may.
    TooMany(String),
    /// The user did not answer in time.
    Timeout,
}

impl fmt::Display for AskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unavailable(m) => write!(f, "nobody can be asked: {m}"),
            Self::Invalid(m) => write!(f, "invalid question: {m}"),
            Self::TooMany(m) => write!(f, "too many questions: {m}"),
            Self::Timeout => f.write_str("the user did not answer in time"),
        }
    }
}

impl std::error::Error for AskError {}

impl From<wit::AskError> for AskError {
    fn from(err: wit::AskError) -> Self {
        match err {
            wit::AskError::Unavailable(m) => Self::Unavailable(m),
            wit::AskError::Invalid(m) => Self::Invalid(m),
            wit::AskError::TooMany(m) => Self::TooMany(m),
            wit::AskError::Timeout => Self::Timeout,
        }
    }
}

impl From<AskError> for ToolError {
    /// An unanswered question is a [`ToolError::Failed`] saying why.
    fn from(err: AskError) -> Self {
        Self::failed(err)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Answer, AskError};
    use crate::ToolError;
    use crate::bindings::toolhost::plugin::types as wit;

    #[test]
    fn answers_convert() {
        let accepted = Answer::from_wit(wit::Answer::Accept(r#"{"name":"Ada"}"#.into()));
        let accepted = accepted.expect("an object");
        assert_eq!(accepted.action(), "accept");
        assert_eq!(accepted.content().map(|c| &c["name"]), Some(&json!("Ada")));
        assert_eq!(Answer::from_wit(wit::Answer::Decline), Ok(Answer::Decline));
        assert_eq!(Answer::Cancel.action(), "cancel");
        assert_eq!(Answer::Decline.content(), None);
        assert!(matches!(
            Answer::from_wit(wit::Answer::Accept("[1]".into())),
            Err(AskError::Invalid(m)) if m.contains("not a JSON object")
        ));
    }

    #[test]
    fn errors_convert_and_say_why() {
        let err = AskError::from(wit::AskError::Unavailable("no client".into()));
        assert_eq!(err, AskError::Unavailable("no client".into()));
        assert_eq!(
            ToolError::from(err),
            ToolError::Failed("nobody can be asked: no client".into())
        );
        assert_eq!(AskError::from(wit::AskError::Timeout), AskError::Timeout);
        assert!(
            AskError::from(wit::AskError::TooMany("3".into()))
                .to_string()
                .contains('3')
        );
        assert!(
            AskError::from(wit::AskError::Invalid("x".into()))
                .to_string()
                .contains('x')
        );
    }
}
