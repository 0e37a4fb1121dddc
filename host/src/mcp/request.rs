//! Reading a `tools/call` request straight into rmcp's typed request, for
//! the transports that run calls themselves (stdio's inline calls, HTTP's
//! direct calls).

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, NumberOrString, RequestId, RequestMetaObject,
};
use serde_json::{Map, Value};

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
