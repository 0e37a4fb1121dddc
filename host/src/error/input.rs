//! What a call that asks its user carries, as data: the question, the
//! answer, and a call's pause at a question ([`InputRequired`]). The types
//! live here, below the call error that carries them; their checks and the
//! askers are `tool::ask`'s, where they are named
//! (`toolhost::tool::Question`, ...).

use serde_json::{Map, Value};

/// A question a running tool asks its user, checked: a message and a flat
/// form (a JSON Schema object whose properties are strings, numbers,
/// integers, booleans, or arrays of enumerated strings).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Question {
    /// What to ask, for a human.
    pub message: String,
    /// The form: a JSON Schema object.
    pub schema: Map<String, Value>,
    /// The plugin and tool that ask (for the user to see who asks).
    pub asked_by: String,
}

/// The user's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Answer {
    /// The user submitted the form: its content.
    Accept(Map<String, Value>),
    /// The user said no.
    Decline,
    /// The user dismissed the question without choosing.
    Cancel,
}

/// An answer a re-run call replays: the question it answers (its
/// [`Question::digest`]) and what the user answered.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Replayed {
    /// The [`Question::digest`] of the question answered.
    pub question: String,
    /// The user's answer.
    pub answer: Answer,
}

/// A call stopped at a question nobody answered yet
/// ([`AskError::InputRequired`](crate::tool::AskError::InputRequired), then
/// [`CallError::InputRequired`](crate::CallError::InputRequired)): the
/// question, and the answers replayed before it. Put the question to the
/// user, then run the call again with
/// [`Asker::replay`](crate::tool::Asker::replay) of these answers and
/// the user's one added.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InputRequired {
    /// The question, checked.
    pub question: Question,
    /// The answers the call was given before it, in order.
    pub answers: Vec<Replayed>,
}
