//! A tool that asks its user, over MCP 2025-11-25: the call's
//! [`Asker`](crate::tool::Asker) sends `elicitation/create` to a client that
//! declared form elicitation, and waits for its answer. Other clients, and
//! 2026-07-28 (no server-to-client requests), give the call no asker: the
//! tool hears that asking is unavailable.

use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::{ElicitationMode, RequestContext};
use serde_json::Value;

use crate::tool::{Answer, AskError, Asker};
use crate::toolset::Context;

/// `cx`, with an asker that elicits from the client of `request` when it
/// can be asked (it declared form elicitation when it initialized).
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
            let requested_schema: ElicitationSchema =
                serde_json::from_value(Value::Object(question.schema)).map_err(|e| {
                    AskError::Invalid(format!("the form is not one MCP elicitation allows: {e}"))
                })?;
            let params = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: question.message,
                requested_schema,
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
