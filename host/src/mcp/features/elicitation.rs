//! A tool that asks its user ([`Asker`](crate::tool::Asker)), over MCP.
//!
//! - 2025-11-25: the call's asker sends `elicitation/create` to a client
//!   that declared form elicitation, and waits for its answer ([`attach`]).
//! - 2026-07-28 (sessionless; the server sends no request of its own): the
//!   call is re-run. Its asker replays the answers the request carries
//!   ([`replay`]); the first question without one stops the call, and the
//!   server answers `InputRequiredResult` with the form and a sealed state
//!   holding the answers so far (`elicitation/retry.rs`); the client's retry
//!   runs the call again from its start with one answer more.
//! - A task of the 2026-07-28 Tasks extension asks through the task instead
//!   (`input_required`, answered with `tasks/update`): its call waits
//!   (`tasks/input.rs`).
//!
//! A client that cannot be asked gives the call no asker: the tool hears
//! that asking is unavailable, and decides.

use rmcp::RoleServer;
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitationAction, ElicitationSchema, InputRequest,
    InputRequests,
};
use rmcp::service::{ElicitationMode, RequestContext};
use serde_json::Value;

use crate::tool::{Answer, AskError, Asker, Question, Replayed};
use crate::toolset::Context;

mod retry;

pub(in crate::mcp) use retry::{Questions, Round, Unopened};

/// The key of the one input request a tool's question is asked under (in
/// an `InputRequiredResult`, or a task's `inputRequests`).
pub(in crate::mcp) const QUESTION: &str = "question";

/// `cx`, with an asker that elicits from the client of `request` when it
/// can be asked (it declared form elicitation when it initialized): 2025-11-25.
pub(in crate::mcp) fn attach(request: &RequestContext<RoleServer>, cx: Context) -> Context {
    let peer = request.peer.clone();
    if !peer
        .supported_elicitation_modes()
        .contains(&ElicitationMode::Form)
    {
        return cx;
    }
    let asker = Asker::new(move |question| {
        let peer = peer.clone();
        Box::pin(async move {
            let params = ElicitRequestParams::FormElicitationParams {
                meta: None,
                requested_schema: form(&question)?,
                message: question.message,
            };
            // The host bounds the wait (the call's deadline, the answer timeout).
            let result = peer
                .create_elicitation_with_timeout(params, None)
                .await
                .map_err(|e| AskError::Unavailable(format!("the client did not answer: {e}")))?;
            Ok(match result.action {
                ElicitationAction::Accept => match result.content {
                    Some(Value::Object(content)) => Answer::Accept(content),
                    None => Answer::Accept(Default::default()),
                    Some(_) => {
                        return Err(AskError::Invalid(
                            "the client's answer is not a JSON object".into(),
                        ));
                    }
                },
                ElicitationAction::Decline => Answer::Decline,
                _ => Answer::Cancel,
            })
        })
    });
    cx.with_asker(asker)
}

/// `cx`, with an asker that replays `answers` and stops the call at the
/// first question past them (2026-07-28: the call is re-run to ask). A
/// form that MCP elicitation cannot carry is the tool's to hear, as on
/// 2025-11-25, not a stop.
pub(in crate::mcp) fn replay(cx: Context, answers: Vec<Replayed>) -> Context {
    let replay = Asker::replay(answers);
    cx.with_asker(Asker::new(move |question| match form(&question) {
        Ok(_) => replay.ask(question),
        Err(invalid) => Box::pin(std::future::ready(Err(invalid))),
    }))
}

/// Whether the client of this 2026-07-28 request can be asked: it declared
/// form elicitation in the request's capabilities.
pub(in crate::mcp) fn can_ask(request: &RequestContext<RoleServer>) -> bool {
    request
        .client_capabilities()
        .and_then(|caps| caps.elicitation)
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// The question's form as MCP elicitation carries it.
///
/// # Errors
/// [`AskError::Invalid`] for a form elicitation does not allow.
pub(in crate::mcp) fn form(question: &Question) -> Result<ElicitationSchema, AskError> {
    serde_json::from_value(Value::Object(question.schema.clone()))
        .map_err(|e| AskError::Invalid(format!("the form is not one MCP elicitation allows: {e}")))
}

/// The input requests that put `question` to the user: one form
/// elicitation, at [`QUESTION`].
///
/// # Errors
/// [`AskError::Invalid`] for a form elicitation does not allow.
pub(in crate::mcp) fn input_requests(question: &Question) -> Result<InputRequests, AskError> {
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: question.message.clone(),
        requested_schema: form(question)?,
    };
    let mut requests = InputRequests::new();
    requests.insert(
        QUESTION.to_owned(),
        InputRequest::Elicitation(ElicitRequest::new(params)),
    );
    Ok(requests)
}

/// The answer an input response (an elicitation result: `action`, and
/// `content` when accepted) holds; why not, said for the user.
pub(in crate::mcp) fn read_answer(response: &Value) -> Result<Answer, String> {
    let not_one = || {
        "the answer to the tool's question is not an elicitation result \
         (`action`: accept, decline or cancel; `content`: an object when accepted)"
            .to_owned()
    };
    let action = response
        .get("action")
        .and_then(|a| serde_json::from_value::<ElicitationAction>(a.clone()).ok())
        .ok_or_else(not_one)?;
    Ok(match action {
        ElicitationAction::Accept => match response.get("content") {
            Some(Value::Object(content)) => Answer::Accept(content.clone()),
            None | Some(Value::Null) => Answer::Accept(Default::default()),
            Some(_) => return Err(not_one()),
        },
        ElicitationAction::Decline => Answer::Decline,
        _ => Answer::Cancel,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn input_responses_read_as_answers() {
        let accepted = read_answer(&json!({"action": "accept", "content": {"name": "Ada"}}));
        let Ok(Answer::Accept(content)) = accepted else {
            panic!("{accepted:?}");
        };
        assert_eq!(content.get("name"), Some(&json!("Ada")));
        assert_eq!(
            read_answer(&json!({"action": "decline"})),
            Ok(Answer::Decline)
        );
        assert_eq!(
            read_answer(&json!({"action": "cancel"})),
            Ok(Answer::Cancel)
        );
        for bad in [
            json!("yes"),
            json!({"action": "maybe"}),
            json!({"action": "accept", "content": [1]}),
        ] {
            let err = read_answer(&bad).unwrap_err();
            assert!(err.contains("not an elicitation result"), "{bad}: {err}");
        }
    }
}
