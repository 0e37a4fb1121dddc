//! Test plugin `abi-v0-3`: built with wit-bindgen against the frozen
//! `toolhost:plugin@0.3.0` (`wit/v0.3.0`), so the host's tests can load it
//! beside `@0.4.0` plugins. Its one tool has hints (`@0.2.0` added them) and
//! sees the caller (`@0.3.0` added that); it imports neither
//! `host.resource-updated` nor `host.ask` and exports no catalog (`@0.4.0`
//! added those).
//!
//! | tool | result |
//! | --- | --- |
//! | `whoami3` | `{"call_id": …, "invocation_id": …, "caller": {"issuer": …, "subject": …, "scopes": […], "claims": {…}}}`, `caller` left out when there is none; read-only |

mod bindings {
    wit_bindgen::generate!({
        path: "../../../wit/v0.3.0",
        world: "toolhost:plugin/plugin",
    });
}

use bindings::exports::toolhost::plugin::tools::{Chunks, Guest, GuestChunks};
use bindings::toolhost::plugin::host::{self, Level};
use bindings::toolhost::plugin::types::{
    Call, Caller, Declaration, Output, Part, ToolError, ToolHints, ToolInfo,
};
use serde_json::{Map, Value, json};

struct V0_3;

/// No tool of this plugin streams.
struct NoChunks;

impl GuestChunks for NoChunks {
    fn next(&self) -> Result<Option<Part>, ToolError> {
        Ok(None)
    }
}

/// The caller as the tool sees it: the claims are JSON object text on the
/// wire, reported as the object itself (`{}` if the text is not an object).
fn caller_json(caller: &Caller) -> Value {
    let claims = match serde_json::from_str(&caller.claims) {
        Ok(Value::Object(claims)) => claims,
        _ => Map::new(),
    };
    json!({
        "issuer": caller.issuer,
        "subject": caller.subject,
        "scopes": caller.scopes,
        "claims": claims,
    })
}

impl Guest for V0_3 {
    type Chunks = NoChunks;

    fn declarations() -> Vec<Declaration> {
        vec![Declaration {
            info: ToolInfo {
                name: "whoami3".to_owned(),
                description:
                    "Reports the call's IDs and who calls, as the 0.3.0 contract sees them."
                        .to_owned(),
                long_running: false,
                hints: ToolHints {
                    title: Some("Who am I (0.3.0)".to_owned()),
                    read_only: Some(true),
                    destructive: None,
                    idempotent: Some(true),
                    open_world: Some(false),
                },
            },
            input_schema: r#"{"type":"object","properties":{}}"#.to_owned(),
            output_schema: None,
            streaming: false,
        }]
    }

    fn invoke(call: Call) -> Result<Output, ToolError> {
        match call.tool.as_str() {
            "whoami3" => {
                host::log(Level::Info, "whoami3 through the 0.3.0 contract");
                let mut result = json!({
                    "call_id": call.call_id,
                    "invocation_id": call.invocation_id,
                });
                if let Some(caller) = &call.caller {
                    result["caller"] = caller_json(caller);
                }
                Ok(Output {
                    json: Some(result.to_string()),
                    parts: Vec::new(),
                })
            }
            _ => Err(ToolError::UnknownTool(call.tool)),
        }
    }

    fn invoke_stream(call: Call) -> Result<Chunks, ToolError> {
        Err(ToolError::UnknownTool(call.tool))
    }
}

/// The component's exports. wit-bindgen's `export!` expands to `unsafe` ABI glue in
/// this crate; the `deny(unsafe_code)` of the rest of the crate still holds.
#[allow(unsafe_code, reason = "wit-bindgen's generated export glue")]
mod export {
    use super::V0_3;
    super::bindings::export!(V0_3 with_types_in super::bindings);
}
