//! What the transports that run `tools/call`s themselves (stdio's inline
//! calls, HTTP's direct calls) share: reading one straight into rmcp's typed
//! request, and running it through rmcp's handler.

use std::pin::Pin;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, Extensions, GetExtensions, GetMeta,
    JsonRpcMessage, NumberOrString, RequestId, RequestMetaObject, ServerJsonRpcMessage,
};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer, Service as _};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::session::Session;

/// A `tools/call` request read straight into rmcp's typed request, as rmcp's
/// own reading makes it (`params._meta` into the request's extensions, the
/// rest into [`CallToolRequestParams`]) without its untagged enums: those
/// copy the message into a buffer and try each of the twenty-odd request
/// types in turn, which cost more than the rest of the line's reading.
/// `None` (the message untouched) when `_meta` is neither an object nor
/// `null`: rmcp's reading decides then. `Some(Err)` says why the `params`
/// do not fit, as rmcp's reading would answer (−32602).
pub(super) fn call_request(
    id: &Value,
    map: &mut Map<String, Value>,
) -> Option<Result<(RequestId, CallToolRequest), String>> {
    let id = match id {
        Value::Number(n) => NumberOrString::Number(n.as_i64()?),
        Value::String(s) => NumberOrString::String(s.as_str().into()),
        _ => return None,
    };
    let mut params = match map.get_mut("params") {
        Some(Value::Object(params)) => {
            if !matches!(
                params.get("_meta"),
                None | Some(Value::Null | Value::Object(_))
            ) {
                return None;
            }
            std::mem::take(params)
        }
        None => Map::new(),
        Some(_) => return None,
    };
    let meta = match params.remove("_meta") {
        Some(Value::Object(meta)) => Some(meta),
        _ => None,
    };
    let typed = match serde_json::from_value::<CallToolRequestParams>(Value::Object(params)) {
        Ok(typed) => typed,
        Err(err) => return Some(Err(err.to_string())),
    };
    let mut request = CallToolRequest::new(typed);
    if let Some(meta) = meta {
        request.extensions.insert(RequestMetaObject::from(meta));
    }
    Some(Ok((id, request)))
}

/// Runs a `tools/call` (request `id`) of `session` through rmcp's handler
/// (`handle_request`, its checks kept), as rmcp's session loop would: `_meta`
/// and the request's extensions move into the handler's context, and
/// `extensions` (what the transport attached) join them. Gives the context's
/// cancellation token and the answer to send; `None` when the token was
/// cancelled (the client no longer wants it, and rmcp sends none then).
///
/// The answer comes boxed: the handler's future holds the whole call's state
/// (several kilobytes), and each move of it unboxed (into a task, into the
/// future that awaits it) was a copy of all of it, 5 % of a trivial call's
/// CPU over stdio.
pub(super) fn answer(
    session: Session,
    peer: Peer<RoleServer>,
    id: RequestId,
    call: CallToolRequest,
    extensions: Extensions,
) -> (
    CancellationToken,
    Pin<Box<dyn Future<Output = Option<ServerJsonRpcMessage>> + Send + 'static>>,
) {
    let mut request = ClientRequest::CallToolRequest(call);
    let mut context = RequestContext::new(id.clone(), peer);
    context.meta = std::mem::take(request.get_meta_mut());
    context.extensions = std::mem::take(request.extensions_mut());
    context.extensions.extend(extensions);
    let token = context.ct.clone();
    let cancelled = token.clone();
    let answer = Box::pin(async move {
        let result = session.handle_request(request, context).await;
        if cancelled.is_cancelled() {
            return None;
        }
        Some(match result {
            Ok(result) => JsonRpcMessage::response(result, id),
            Err(error) => {
                tracing::debug!(%id, ?error, "response error");
                JsonRpcMessage::error(error, Some(id))
            }
        })
    });
    (token, answer)
}
