//! Asking by re-running, for a front end that keeps no call between requests
//! (MCP 2026-07-28, whose server sends no request of its own): a call that
//! asks stops at the first question nobody answered yet, the front end puts
//! it to the user in its answer to the request, and the retry runs the call
//! again from its start with every answer so far replayed, in order.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use super::{Answer, AskError, Asker, InputRequired, MAX_ANSWER_BYTES, Question, Replayed};
use crate::schema::Schema;

impl Replayed {
    /// `answer`, given to the question whose digest is `question`.
    pub fn new(question: impl Into<String>, answer: Answer) -> Self {
        Self {
            question: question.into(),
            answer,
        }
    }
}

impl Asker {
    /// An asker that answers from `answers` (the re-run model): the k-th
    /// question the call asks gets the k-th answer, if that answer was given
    /// to the same question (message and form: [`Question::digest`]) and an
    /// accepted one fits the form and [`MAX_ANSWER_BYTES`]; otherwise the call
    /// stops with [`AskError::Refused`]. The first question past them stops
    /// the call with [`AskError::InputRequired`]. The tool hears neither: its
    /// guest runs no further.
    ///
    /// It counts the questions it is asked, so it serves one call: give each
    /// call its own.
    ///
    /// # Examples
    /// ```
    /// use toolhost::tool::{Answer, Asker, Replayed, ToolCall};
    /// // A retry that carries the answer to the call's first question.
    /// let answers = vec![Replayed::new("…digest of the question…", Answer::Decline)];
    /// let call = ToolCall::new("deploy", serde_json::json!({})).with_asker(Asker::replay(answers));
    /// assert!(call.asker().is_some());
    /// ```
    pub fn replay(answers: Vec<Replayed>) -> Self {
        let answers: Arc<[Replayed]> = answers.into();
        let asked = AtomicUsize::new(0);
        Self::new(move |question| {
            let index = asked.fetch_add(1, Ordering::Relaxed);
            Box::pin(std::future::ready(replayed(&answers, index, question)))
        })
    }
}

/// The answer to the call's question number `index` (from 0), or why the
/// call stops there.
fn replayed(answers: &[Replayed], index: usize, question: Question) -> Result<Answer, AskError> {
    let Some(known) = answers.get(index) else {
        return Err(AskError::InputRequired(Box::new(InputRequired {
            question,
            answers: answers.to_vec(),
        })));
    };
    let number = index + 1;
    if known.question != question.digest() {
        return Err(AskError::Refused(format!(
            "the tool's question {number} is not the one that was answered: it asked \
             something else this time"
        )));
    }
    if let Answer::Accept(content) = &known.answer {
        let bytes = serde_json::to_vec(content).map_or(usize::MAX, |text| text.len());
        if bytes > MAX_ANSWER_BYTES {
            return Err(AskError::Refused(format!(
                "the answer to the tool's question {number} is {bytes} bytes, more than \
                 {MAX_ANSWER_BYTES}"
            )));
        }
        let form = Schema::input_value(Value::Object(question.schema.clone()))
            .map_err(|e| AskError::Invalid(format!("the form is not a valid schema: {e}")))?;
        let problems = form.problems(&Value::Object(content.clone()));
        if !problems.is_empty() {
            return Err(AskError::Refused(format!(
                "the answer to the tool's question {number} does not fit its form: {}",
                problems.join("; ")
            )));
        }
    }
    Ok(known.answer.clone())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

    use serde_json::{Map, json};

    use super::*;

    fn question(message: &str) -> Question {
        let form =
            r#"{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}"#;
        Question::check("p.t", message.into(), form).unwrap()
    }

    fn accept(value: Value) -> Answer {
        let Value::Object(content) = value else {
            panic!("not an object: {value}")
        };
        Answer::Accept(content)
    }

    #[tokio::test]
    async fn answers_are_replayed_in_order_and_the_first_unknown_stops_the_call() {
        let first = question("Name?");
        let second = question("Really?");
        let answers = vec![
            Replayed::new(first.digest(), accept(json!({"name": "Ada"}))),
            Replayed::new(second.digest(), Answer::Decline),
        ];
        let asker = Asker::replay(answers.clone());
        assert_eq!(
            asker.ask(first.clone()).await.unwrap(),
            accept(json!({"name": "Ada"}))
        );
        assert_eq!(asker.ask(second).await.unwrap(), Answer::Decline);
        let third = question("And?");
        let Err(AskError::InputRequired(stopped)) = asker.ask(third.clone()).await else {
            panic!("the third question must stop the call");
        };
        assert!(AskError::InputRequired(stopped.clone()).stops_the_call());
        assert_eq!(stopped.question, third);
        assert_eq!(stopped.answers, answers);
        // Key order is not part of a question's identity; its words are.
        assert_eq!(
            first.digest(),
            Question::check(
                "p.t",
                "Name?".into(),
                r#"{"required":["name"],"properties":{"name":{"type":"string"}},"type":"object"}"#
            )
            .unwrap()
            .digest()
        );
        assert_ne!(first.digest(), question("Name? ").digest());
    }

    #[tokio::test]
    async fn another_question_or_an_answer_that_does_not_fit_stops_the_call() {
        let asked = question("Name?");
        let other = Asker::replay(vec![Replayed::new(
            question("Age?").digest(),
            Answer::Cancel,
        )]);
        let err = other.ask(asked.clone()).await.unwrap_err();
        assert!(
            matches!(&err, AskError::Refused(why) if why.contains("question 1 is not the one")),
            "{err}"
        );
        let misfit = Asker::replay(vec![Replayed::new(
            asked.digest(),
            accept(json!({"name": 7})),
        )]);
        let err = misfit.ask(asked.clone()).await.unwrap_err();
        assert!(
            matches!(&err, AskError::Refused(why) if why.contains("does not fit its form")),
            "{err}"
        );
        let mut huge = Map::new();
        huge.insert("name".into(), json!("x".repeat(MAX_ANSWER_BYTES)));
        let big = Asker::replay(vec![Replayed::new(asked.digest(), Answer::Accept(huge))]);
        let err = big.ask(asked).await.unwrap_err();
        assert!(
            matches!(&err, AskError::Refused(why) if why.contains("bytes, more than")),
            "{err}"
        );
    }
}
