//! Reading requests beside rmcp: a `tools/call` read straight into rmcp's
//! typed request and run through rmcp's handler (for the transports that run
//! calls themselves: stdio's inline calls, HTTP's direct calls), and the
//! methods rmcp serves, so that a request whose params do not fit one is
//! answered as invalid params (by stdio's line check and the session's
//! handler alike).

use std::collections::HashSet;
use std::pin::Pin;
use std::sync::LazyLock;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, Extensions, GetExtensions, GetMeta,
    InitializeRequestParams, JsonRpcMessage, NumberOrString, PaginatedRequestParams, RequestId,
    RequestMetaObject, ServerJsonRpcMessage,
};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer, Service as _};
use serde_json::{Map, Value, json};
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

/// Whether rmcp serves `method` as a client request. A request of a known
/// method whose `params` do not fit falls through rmcp's untagged enum to a
/// custom request (answered "method not found"); it is answered −32602 here.
/// The methods are read (once, on the first such request) from rmcp's own
/// schema of its request enum, so they follow rmcp's version.
pub(super) fn is_known_method(method: &str) -> bool {
    static KNOWN: LazyLock<HashSet<String>> = LazyLock::new(|| {
        let schema = schemars::schema_for!(ClientRequest);
        let schema = schema.as_value();
        let mut known = HashSet::new();
        request_methods(schema, schema.get("$defs"), &mut known);
        known
    });
    KNOWN.contains(method)
}

/// Every `method` constant in a schema (inline or a reference into `defs`):
/// the typed requests' (a custom request's method is any string, so it adds
/// none).
fn request_methods(schema: &Value, defs: Option<&Value>, known: &mut HashSet<String>) {
    match schema {
        Value::Object(map) => {
            let method = map
                .get("properties")
                .and_then(|properties| properties.get("method"));
            let method = match method.and_then(|m| m.get("$ref")).and_then(Value::as_str) {
                Some(reference) => reference
                    .strip_prefix("#/$defs/")
                    .and_then(|name| defs?.get(name)),
                None => method,
            };
            if let Some(method) = method.and_then(|m| m.get("const")).and_then(Value::as_str) {
                known.insert(method.to_owned());
            }
            map.values()
                .for_each(|value| request_methods(value, defs, known));
        }
        Value::Array(items) => items
            .iter()
            .for_each(|item| request_methods(item, defs, known)),
        _ => {}
    }
}

/// The message of a −32602 answer: `method`'s params do not fit, `why`.
pub(super) fn invalid_params_message(method: &str, why: &str) -> String {
    format!("Invalid params for `{method}`: {why}")
}

/// Why `params` do not fit a known method, as precisely as can be said.
pub(super) fn params_problem(method: &str, params: Option<Value>) -> String {
    let params = params.unwrap_or_else(|| json!({}));
    let typed = match method {
        "tools/call" => serde_json::from_value::<CallToolRequestParams>(params).err(),
        "initialize" => serde_json::from_value::<InitializeRequestParams>(params).err(),
        "tools/list" => serde_json::from_value::<PaginatedRequestParams>(params).err(),
        _ => None,
    };
    match typed {
        Some(err) => err.to_string(),
        None => "they do not match the method's parameters".to_owned(),
    }
}
