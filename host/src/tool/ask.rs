//! A tool that asks its user: a running tool's question (a message and a
//! flat form, what MCP elicitation allows), checked by the host, and the
//! [`Asker`] a front end gives a call to put it to the user (an MCP client's
//! `elicitation/create`, a terminal prompt). A call without one hears that
//! asking is unavailable, and the tool decides.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

mod replay;

pub use crate::error::input::{Answer, InputRequired, Question, Replayed};

/// The most bytes of a question's message.
pub const MAX_MESSAGE_BYTES: usize = 4 << 10;

/// The most bytes of a question's form (its JSON Schema text).
pub const MAX_SCHEMA_BYTES: usize = 16 << 10;

/// The most properties of a form.
pub const MAX_FIELDS: usize = 32;

/// The most questions one call may ask.
pub const MAX_QUESTIONS_PER_CALL: u32 = 8;

/// How long a user has to answer, unless the call's deadline comes first.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(300);

/// The most bytes of an answer's content (its JSON text) that a re-run call
/// replays ([`Asker::replay`]): every answer it replays travels with each
/// later request, so each is bounded.
pub const MAX_ANSWER_BYTES: usize = 8 << 10;

impl Question {
    /// Checks a guest's question: the message and form within their bounds,
    /// the form a flat JSON Schema object.
    ///
    /// # Errors
    /// [`AskError::Invalid`] saying what is wrong.
    pub fn check(asked_by: &str, message: String, schema: &str) -> Result<Self, AskError> {
        let invalid = |why: String| Err(AskError::Invalid(why));
        if message.len() > MAX_MESSAGE_BYTES {
            return invalid(format!(
                "the message is {} bytes, more than {MAX_MESSAGE_BYTES}",
                message.len()
            ));
        }
        if schema.len() > MAX_SCHEMA_BYTES {
            return invalid(format!(
                "the form is {} bytes, more than {MAX_SCHEMA_BYTES}",
                schema.len()
            ));
        }
        let Ok(Value::Object(form)) = serde_json::from_str::<Value>(schema) else {
            return invalid("the form is not a JSON object".into());
        };
        if form.get("type").and_then(Value::as_str) != Some("object") {
            return invalid("the form's `type` must be \"object\"".into());
        }
        let Some(Value::Object(properties)) = form.get("properties") else {
            return invalid("the form has no `properties` object".into());
        };
        if properties.len() > MAX_FIELDS {
            return invalid(format!(
                "the form has {} fields, more than {MAX_FIELDS}",
                properties.len()
            ));
        }
        for (name, property) in properties {
            check_field(property)
                .map_err(|why| AskError::Invalid(format!("field `{name}`: {why}")))?;
        }
        Ok(Self {
            message,
            schema: form,
            asked_by: asked_by.to_owned(),
        })
    }

    /// SHA-256 (hex) of the message and the form (object keys in any
    /// order): what an answer replayed to a re-run call is bound to, so it
    /// answers only the question it was given for.
    pub fn digest(&self) -> String {
        let asked = serde_json::json!({
            "message": self.message,
            "schema": self.schema,
        });
        crate::digest::json_digest(&asked)
    }
}

/// A form's field: one primitive value, or a list of enumerated strings.
fn check_field(property: &Value) -> Result<(), String> {
    let Value::Object(property) = property else {
        return Err("not a JSON Schema object".into());
    };
    match property.get("type").and_then(Value::as_str) {
        Some("string" | "number" | "integer" | "boolean") => Ok(()),
        Some("array") => {
            let items = property.get("items").and_then(Value::as_object);
            let enumerated = items.is_some_and(|items| {
                items.contains_key("enum")
                    || items.contains_key("anyOf")
                    || items.contains_key("oneOf")
            });
            if enumerated {
                Ok(())
            } else {
                Err(
                    "an array field must enumerate its items (`items.enum` or `items.anyOf`)"
                        .into(),
                )
            }
        }
        Some(other) => Err(format!(
            "type `{other}` is not a flat field (string, number, integer, boolean, or an array of enumerated strings)"
        )),
        None => Err("it has no `type`".into()),
    }
}

/// Why a question got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AskError {
    /// Nobody can be asked here.
    #[error("nobody can be asked: {0}")]
    Unavailable(String),
    /// The question breaks the rules, or the answer does not fit its form.
    #[error("the question is invalid: {0}")]
    Invalid(String),
    /// The call asked as many questions as it may.
    #[error("the call asked {MAX_QUESTIONS_PER_CALL} questions, as many as a call may")]
    TooMany,
    /// The user did not answer in time.
    #[error("the user did not answer in time")]
    Timeout,
    /// The question is put to the user outside this run of the call (a front
    /// end that keeps no call between requests: [`Asker::replay`]). The tool
    /// does not hear this: its call stops at the question, the guest runs no
    /// further, and the call ends with
    /// [`CallError::InputRequired`](crate::CallError::InputRequired), to be
    /// re-run with the answer.
    #[error("the call stops to ask its user: {}", .0.question.message)]
    InputRequired(Box<InputRequired>),
    /// An answer replayed to a re-run call does not belong to this run: the
    /// tool asked another question, or the answer does not fit the form. The
    /// tool does not hear this: its call stops, and ends with
    /// [`CallError::AnswerRefused`](crate::CallError::AnswerRefused) saying why.
    #[error("{0}")]
    Refused(String),
}

impl AskError {
    /// Whether the call stops here instead of the tool hearing the error
    /// ([`AskError::InputRequired`], [`AskError::Refused`]).
    pub fn stops_the_call(&self) -> bool {
        matches!(self, Self::InputRequired(_) | Self::Refused(_))
    }
}

/// A future an [`Asker`] returns.
pub type AskFuture = Pin<Box<dyn Future<Output = Result<Answer, AskError>> + Send>>;

/// How a front end puts a call's questions to its user. The host has checked
/// each question ([`Question::check`]), bounds how many a call asks, and
/// checks an accepted answer against the form; the asker only asks.
///
/// # Examples
/// ```
/// use toolhost::tool::{Answer, Asker, ToolCall};
/// let asker = Asker::new(|_question| Box::pin(async { Ok(Answer::Decline) }));
/// let call = ToolCall::new("deploy", serde_json::json!({})).with_asker(asker);
/// assert!(call.asker().is_some());
/// ```
#[derive(Clone)]
pub struct Asker(Arc<dyn Fn(Question) -> AskFuture + Send + Sync>);

impl Asker {
    /// An asker that calls `ask` with each question.
    pub fn new(ask: impl Fn(Question) -> AskFuture + Send + Sync + 'static) -> Self {
        Self(Arc::new(ask))
    }

    /// Puts a question to the user.
    pub(crate) fn ask(&self, question: Question) -> AskFuture {
        (self.0)(question)
    }
}

impl fmt::Debug for Asker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Asker")
    }
}

/// Two askers are equal when they are the same asker.
impl PartialEq for Asker {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

    use super::*;

    #[test]
    fn flat_forms_pass_and_nested_ones_say_why() {
        let form = r#"{"type":"object","properties":{
            "name":{"type":"string","default":"John Doe"},
            "age":{"type":"integer"},
            "tags":{"type":"array","items":{"type":"string","enum":["a","b"]}}},
            "required":["name"]}"#;
        let question = Question::check("p.t", "Who?".into(), form).unwrap();
        assert_eq!(question.asked_by, "p.t");
        for (form, expected) in [
            (r#"[]"#, "not a JSON object"),
            (r#"{"type":"string"}"#, "must be \"object\""),
            (r#"{"type":"object"}"#, "no `properties`"),
            (
                r#"{"type":"object","properties":{"a":{"type":"object"}}}"#,
                "field `a`",
            ),
            (
                r#"{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}"#,
                "enumerate",
            ),
            (r#"{"type":"object","properties":{"a":{}}}"#, "no `type`"),
        ] {
            let err = Question::check("p.t", "?".into(), form)
                .unwrap_err()
                .to_string();
            assert!(err.contains(expected), "{form}: {err}");
        }
        let long = "x".repeat(MAX_MESSAGE_BYTES + 1);
        assert!(Question::check("p.t", long, form).is_err());
    }
}
