//! A tool's questions on MCP 2026-07-28: a Multi Round-Trip Request
//! (SEP-2322) whose call is re-run.
//!
//! A sessionless server keeps nothing of a call between two requests, so a
//! call cannot wait for its user's answer the way it waits on 2025-11-25's
//! `elicitation/create`. It stops at the first question nobody answered yet
//! (the guest runs no further) and answers `InputRequiredResult`: the form
//! under `inputRequests.question` and a sealed `requestState`. The client
//! asks its user and retries the same call with the answer and the state;
//! the server runs the call again from its start, replaying every answer so
//! far in order, each to the question it was given for.
//!
//! The state is sealed with the approvals' keys ([`ApprovalKeys`]) under a
//! purpose of its own, so a question's state never opens as an approval's
//! nor the other way round. It binds the tool, a digest of the checked and
//! coerced arguments, the caller, an expiry (the approvals' lifetime), the
//! answers so far (at most [`MAX_QUESTIONS_PER_CALL`], each checked against
//! its form and at most [`MAX_ANSWER_BYTES`](crate::tool::MAX_ANSWER_BYTES))
//! and a digest of the question asked, so an answer is replayed only to
//! that question.
//!
//! With an approval: a gated call's approval is asked first (the call does
//! not run before it) and used once, under its call ID. Its question rounds
//! keep it: the state says the call runs on an approval, and each retry
//! runs under a call ID of its own (`CALL-qN`, N answers) with an approval
//! for exactly the arguments sealed, which the confirmation layer acts on
//! once too; so the approval is not asked again, and no state, replayed,
//! runs the call twice.

use std::time::Duration;

use rmcp::model::{
    InputRequiredResult, InputResponses, RequestStateCodec, RequestStateError, SealOptions,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{QUESTION, input_requests, read_answer};
use crate::digest::json_digest;
use crate::error::CallError;
use crate::mcp::approval::{ApprovalKeys, Approvals};
use crate::tool::{Answer, InputRequired, MAX_QUESTIONS_PER_CALL, Replayed};

/// Mixed into every seal: a state sealed for anything else (an approval)
/// never opens as a question's.
const PURPOSE: &[u8] = b"toolhost/question/v1";

/// What a sealed question state holds.
#[derive(Debug, Serialize, Deserialize)]
struct Sealed {
    /// The tool's canonical name.
    tool: String,
    /// SHA-256 of the canonical JSON of the checked, coerced arguments.
    args: String,
    /// The key of the principal that was asked: only it may answer.
    owner: String,
    /// The call ID the call's rounds descend from.
    call: String,
    /// Whether the call runs on an approval.
    approved: bool,
    /// The answers so far, in order.
    answers: Vec<SealedAnswer>,
    /// The digest of the question asked.
    asked: String,
    /// The asking request's span (a `traceparent`), with telemetry on: the
    /// retry's span links to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    asked_in: Option<String>,
    /// The state store's epoch when it was asked, for a round that runs on
    /// an approval (see [`Approvals::check_epoch`]); empty otherwise.
    #[serde(default)]
    epoch: String,
}

/// One answer as a state keeps it.
#[derive(Debug, Serialize, Deserialize)]
struct SealedAnswer {
    /// The digest of the question it answers.
    question: String,
    /// `accept`, `decline` or `cancel`.
    action: Action,
    /// The form's content, when accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    content: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Action {
    Accept,
    Decline,
    Cancel,
}

impl SealedAnswer {
    fn of(replayed: &Replayed) -> Self {
        let (action, content) = match &replayed.answer {
            Answer::Accept(content) => (Action::Accept, Some(content.clone())),
            Answer::Decline => (Action::Decline, None),
            // A future answer kind counts as a dismissal.
            _ => (Action::Cancel, None),
        };
        Self {
            question: replayed.question.clone(),
            action,
            content,
        }
    }

    fn replayed(self) -> Replayed {
        let answer = match self.action {
            Action::Accept => Answer::Accept(self.content.unwrap_or_default()),
            Action::Decline => Answer::Decline,
            Action::Cancel => Answer::Cancel,
        };
        Replayed::new(self.question, answer)
    }
}

/// Where a 2026-07-28 call stands among its rounds: what its next
/// question's state carries on.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::mcp) struct Round {
    /// The call ID its rounds descend from (an approval's, when one was asked).
    pub(in crate::mcp) call: String,
    /// Whether the call runs on an approval.
    pub(in crate::mcp) approved: bool,
    /// The answers to replay, in order.
    pub(in crate::mcp) answers: Vec<Replayed>,
    /// The state store's epoch the retry's state was sealed in (`None` on
    /// a call's first run): a round that runs on an approval runs only in
    /// that epoch.
    pub(in crate::mcp) epoch: Option<String>,
}

impl Round {
    /// A call's first run: no approval yet, no answers.
    pub(in crate::mcp) fn first(call_id: &str) -> Self {
        Self {
            call: call_id.to_owned(),
            approved: false,
            answers: Vec::new(),
            epoch: None,
        }
    }

    /// The call ID this round runs under: the call's own before any answer,
    /// `CALL-qN` with N answers, so a gated call's approval is acted on once
    /// per round.
    pub(in crate::mcp) fn call_id(&self) -> String {
        if self.answers.is_empty() {
            self.call.clone()
        } else {
            format!("{}-q{}", self.call, self.answers.len())
        }
    }
}

/// Why a retry's state did not open as a question's.
#[derive(Debug, PartialEq)]
pub(in crate::mcp) enum Unopened {
    /// Not a question's state (an approval's, or one this server did not
    /// make): for the approvals to open or refuse.
    NotAQuestion,
    /// A question's state that may not be answered: why, for the user.
    Refused(String),
}

/// Seals and opens the states of a server's questions.
pub(in crate::mcp) struct Questions<'a> {
    keys: &'a ApprovalKeys,
    ttl: Duration,
}

impl<'a> Questions<'a> {
    /// With the approvals' keys and lifetime.
    pub(in crate::mcp) fn new(approvals: &'a Approvals) -> Self {
        Self {
            keys: approvals.keys(),
            ttl: approvals.ttl(),
        }
    }

    fn codec(&self) -> &RequestStateCodec {
        self.keys.codec()
    }

    /// The `InputRequiredResult` that asks `input`'s question of `owner` (a
    /// [`Principal::key`](crate::toolset::Principal::key)), for a call of
    /// `tool` with these checked and coerced `arguments`, in `round`;
    /// `epoch` is the state store's now when the round runs on an approval
    /// ([`Approvals::epoch`]), else empty.
    ///
    /// # Errors
    /// [`CallError::Host`] if the question cannot be asked (a form MCP
    /// cannot carry is caught before the call stops, so this is the
    /// server's fault, logged).
    pub(in crate::mcp) fn ask(
        &self,
        input: &InputRequired,
        round: &Round,
        tool: &str,
        arguments: &Value,
        owner: &str,
        epoch: &str,
    ) -> Result<InputRequiredResult, CallError> {
        let failed = |why: String| {
            tracing::error!(tool, "cannot ask a tool's question: {why}");
            CallError::Host {
                tool: tool.to_owned(),
                reason: "the server could not ask the tool's question; try again later".into(),
            }
        };
        // The host lets a call ask at most this many; a state never holds more.
        if input.answers.len() >= MAX_QUESTIONS_PER_CALL as usize {
            return Err(failed(format!("{} answers", input.answers.len())));
        }
        let sealed = Sealed {
            tool: tool.to_owned(),
            args: json_digest(arguments),
            owner: owner.to_owned(),
            call: round.call.clone(),
            approved: round.approved,
            answers: input.answers.iter().map(SealedAnswer::of).collect(),
            asked: input.question.digest(),
            asked_in: crate::mcp::trace::traceparent(),
            epoch: epoch.to_owned(),
        };
        let options = SealOptions::new().associated_data(PURPOSE).ttl(self.ttl);
        let state = self
            .codec()
            .seal_json_with(&sealed, &options)
            .map_err(|e| failed(e.to_string()))?;
        let requests = input_requests(&input.question).map_err(|e| failed(e.to_string()))?;
        Ok(InputRequiredResult::new(Some(requests), Some(state)))
    }

    /// Opens a retry's state as a question's and reads its answer, for a
    /// call of `tool` by `owner` whose arguments, checked and coerced, are
    /// `arguments`: the round to run, with the answer added.
    ///
    /// # Errors
    /// [`Unopened::NotAQuestion`] for a state that is not a question's;
    /// [`Unopened::Refused`] saying why a question's may not be answered
    /// (expired, another caller's, another tool's, other arguments, too
    /// many answers, no answer or one that is not an elicitation result).
    pub(in crate::mcp) fn open(
        &self,
        owner: &str,
        tool: &str,
        arguments: &Value,
        state: &str,
        responses: Option<&InputResponses>,
    ) -> Result<Round, Unopened> {
        let refused = |why: String| Unopened::Refused(why);
        let sealed: Sealed = match self.codec().open_json_with(state, PURPOSE) {
            Ok(sealed) => sealed,
            Err(RequestStateError::Expired) => {
                return Err(refused(format!(
                    "its question has expired (questions last {} s); call again to be asked again",
                    self.ttl.as_secs()
                )));
            }
            Err(RequestStateError::Deserialization(e)) => {
                return Err(refused(format!(
                    "the question's state is not one this server reads ({e}); call again to be \
                     asked again"
                )));
            }
            Err(_) => return Err(Unopened::NotAQuestion),
        };
        if sealed.owner != owner {
            return Err(refused(
                "the question was asked of another caller; call again to be asked again".into(),
            ));
        }
        if sealed.tool != tool {
            return Err(refused(format!(
                "the question's state is for `{}`, not `{tool}`; call again to be asked again",
                sealed.tool
            )));
        }
        if sealed.args != json_digest(arguments) {
            return Err(refused(format!(
                "the arguments changed since the question was asked (called with {arguments}); \
                 retry with the arguments of the first call, or call again to be asked again"
            )));
        }
        if sealed.answers.len() >= MAX_QUESTIONS_PER_CALL as usize {
            return Err(refused(format!(
                "the question's state holds more answers than the {MAX_QUESTIONS_PER_CALL} \
                 questions a call may ask; call again to be asked again"
            )));
        }
        let Some(response) = responses.and_then(|responses| responses.get(QUESTION)) else {
            return Err(refused(format!(
                "the retry carries no answer to the tool's question \
                 (`inputResponses.{QUESTION}`); answer it, or call again to be asked again"
            )));
        };
        let answer = read_answer(response).map_err(refused)?;
        crate::mcp::trace::link_to_asker(sealed.asked_in.as_deref());
        let mut answers: Vec<Replayed> = sealed
            .answers
            .into_iter()
            .map(SealedAnswer::replayed)
            .collect();
        answers.push(Replayed::new(sealed.asked, answer));
        Ok(Round {
            call: sealed.call,
            approved: sealed.approved,
            answers,
            epoch: Some(sealed.epoch),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

    use rmcp::model::InputRequest;
    use serde_json::json;

    use super::*;
    use crate::state::StateStore;
    use crate::tool::Question;

    const RING: &str = "k1 0123456789abcdef0123456789abcdef01\n";
    const OWNER: &str = "anonymous";

    fn approvals(ttl: Duration) -> Approvals {
        Approvals::new(
            ApprovalKeys::parse(RING).unwrap(),
            ttl,
            StateStore::embedded(),
        )
    }

    fn question(message: &str) -> Question {
        let form = r#"{"type":"object","properties":{"name":{"type":"string"}}}"#;
        Question::check("p.t", message.into(), form).unwrap()
    }

    fn args() -> Value {
        json!({"b": 1, "a": "x"})
    }

    fn respond(answer: Value) -> InputResponses {
        let mut responses = InputResponses::new();
        responses.insert(QUESTION.into(), answer);
        responses
    }

    /// The state asking `message` after `answers`, in `round`.
    fn asked(approvals: &Approvals, message: &str, round: &Round) -> InputRequiredResult {
        let input = InputRequired {
            question: question(message),
            answers: round.answers.clone(),
        };
        Questions::new(approvals)
            .ask(&input, round, "echo", &args(), OWNER, "e1")
            .unwrap()
    }

    #[test]
    fn a_question_round_trips_its_answers_and_the_approval() {
        let approvals = approvals(Duration::from_secs(60));
        let questions = Questions::new(&approvals);
        let mut round = Round::first("call-1");
        round.approved = true;
        let first = asked(&approvals, "Name?", &round);
        let requests = first.input_requests.clone().unwrap();
        let Some(InputRequest::Elicitation(elicit)) = requests.get(QUESTION) else {
            panic!("no elicitation at `{QUESTION}`: {requests:?}");
        };
        let form = serde_json::to_value(&elicit.params).unwrap();
        assert_eq!(form["message"], "Name?", "{form}");
        assert_eq!(
            form["requestedSchema"]["properties"]["name"]["type"],
            "string"
        );

        // Key order of the arguments does not matter.
        let same = json!({"a": "x", "b": 1});
        let accept = respond(json!({"action": "accept", "content": {"name": "Ada"}}));
        let next = questions
            .open(
                OWNER,
                "echo",
                &same,
                &first.request_state.unwrap(),
                Some(&accept),
            )
            .unwrap();
        assert_eq!(next.call, "call-1");
        assert!(next.approved);
        assert_eq!(
            next.epoch.as_deref(),
            Some("e1"),
            "the epoch it was asked in"
        );
        assert_eq!(next.call_id(), "call-1-q1");
        assert_eq!(
            next.answers,
            vec![Replayed::new(
                question("Name?").digest(),
                Answer::Accept(json!({"name": "Ada"}).as_object().cloned().unwrap())
            )]
        );

        // The second question's state carries the first answer on.
        let second = asked(&approvals, "Sure?", &next);
        let decline = respond(json!({"action": "decline"}));
        let last = questions
            .open(
                OWNER,
                "echo",
                &args(),
                &second.request_state.unwrap(),
                Some(&decline),
            )
            .unwrap();
        assert_eq!(last.call_id(), "call-1-q2");
        assert_eq!(last.answers[0], next.answers[0]);
        assert_eq!(
            last.answers[1],
            Replayed::new(question("Sure?").digest(), Answer::Decline)
        );
    }

    #[test]
    fn states_that_may_not_be_answered_say_why() {
        let approvals = approvals(Duration::from_secs(60));
        let questions = Questions::new(&approvals);
        let state = asked(&approvals, "Name?", &Round::first("call-1"))
            .request_state
            .unwrap();
        let cancel = respond(json!({"action": "cancel"}));
        let refused = |owner: &str, tool: &str, args: &Value, answer: Option<&InputResponses>| {
            match questions.open(owner, tool, args, &state, answer) {
                Err(Unopened::Refused(why)) => why,
                other => panic!("not refused: {other:?}"),
            }
        };
        let why = refused("mallory", "echo", &args(), Some(&cancel));
        assert!(why.contains("another caller"), "{why}");
        let why = refused(OWNER, "other", &args(), Some(&cancel));
        assert!(why.contains("is for `echo`"), "{why}");
        let why = refused(OWNER, "echo", &json!({"a": "y", "b": 1}), Some(&cancel));
        assert!(why.contains("arguments changed"), "{why}");
        let why = refused(OWNER, "echo", &args(), None);
        assert!(why.contains("no answer"), "{why}");
        let why = refused(OWNER, "echo", &args(), Some(&respond(json!("yes"))));
        assert!(why.contains("not an elicitation result"), "{why}");
        // The state itself was not used up by those.
        assert!(
            questions
                .open(OWNER, "echo", &args(), &state, Some(&cancel))
                .is_ok()
        );
    }

    #[test]
    fn forged_foreign_approval_and_expired_states_are_not_opened() {
        let approvals = approvals(Duration::from_secs(60));
        let questions = Questions::new(&approvals);
        let state = asked(&approvals, "Name?", &Round::first("call-1"))
            .request_state
            .unwrap();
        let answer = respond(json!({"action": "cancel"}));
        let open = |questions: &Questions<'_>, state: &str| {
            questions.open(OWNER, "echo", &args(), state, Some(&answer))
        };
        let mut forged: Vec<char> = state.chars().collect();
        let middle = forged.len() / 2;
        forged[middle] = if forged[middle] == 'A' { 'B' } else { 'A' };
        let forged: String = forged.into_iter().collect();
        assert_eq!(open(&questions, &forged), Err(Unopened::NotAQuestion));
        assert_eq!(open(&questions, "not a state"), Err(Unopened::NotAQuestion));
        // Another server's keys do not open it.
        let foreign = Approvals::new(
            ApprovalKeys::generate(),
            Duration::from_secs(60),
            StateStore::embedded(),
        );
        assert_eq!(
            open(&Questions::new(&foreign), &state),
            Err(Unopened::NotAQuestion)
        );
        // An approval's state is not a question's, and a question's is not
        // an approval's: the purposes differ.
        let request = crate::toolset::ConfirmationRequest {
            call_id: "call-1".into(),
            tool: "echo".into(),
            arguments: args(),
            hint: "sure?".into(),
            payload: None,
        };
        let approval = approvals
            .ask(&request, OWNER, "e1")
            .unwrap()
            .request_state
            .unwrap();
        assert_eq!(open(&questions, &approval), Err(Unopened::NotAQuestion));
        let mut approve = InputResponses::new();
        approve.insert(
            crate::mcp::approval::QUESTION.into(),
            json!({"action": "accept", "content": {"approve": true}}),
        );
        let err = approvals
            .resume(OWNER, "echo", &args(), &state, Some(&approve))
            .err()
            .unwrap();
        assert!(err.contains("not made by this server"), "{err}");

        let short = self::approvals(Duration::from_millis(1));
        let state = asked(&short, "Name?", &Round::first("call-1"))
            .request_state
            .unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let Err(Unopened::Refused(why)) = open(&Questions::new(&short), &state) else {
            panic!("an expired state must be refused");
        };
        assert!(why.contains("expired"), "{why}");
    }

    #[test]
    fn a_state_never_holds_more_answers_than_a_call_may_ask() {
        let approvals = approvals(Duration::from_secs(60));
        let mut round = Round::first("call-1");
        round.answers = (0..MAX_QUESTIONS_PER_CALL)
            .map(|i| Replayed::new(question(&format!("Q{i}?")).digest(), Answer::Cancel))
            .collect();
        let input = InputRequired {
            question: question("One more?"),
            answers: round.answers.clone(),
        };
        let err = Questions::new(&approvals)
            .ask(&input, &round, "echo", &args(), OWNER, "e1")
            .unwrap_err();
        assert!(matches!(err, CallError::Host { .. }), "{err}");
    }
}
