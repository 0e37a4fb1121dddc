//! Test plugin `abi-v0-2`: built with wit-bindgen against the frozen
//! `toolhost:plugin@0.2.0` (`wit/v0.2.0`), so the host's tests can load it
//! beside `@0.3.0` plugins. Its one tool has hints (`@0.2.0` added them) and
//! sees no caller (`@0.3.0` added that).
//!
//! | tool | result |
//! | --- | --- |
//! | `whisper` | `{"text": <text in lower case>, "call_id": <the call's ID>}`; read-only |

mod bindings {
    wit_bindgen::generate!({
        path: "../../../wit/v0.2.0",
        world: "toolhost:plugin/plugin",
    });
}

use bindings::exports::toolhost::plugin::tools::{Chunks, Guest, GuestChunks};
use bindings::toolhost::plugin::host::{self, Level};
use bindings::toolhost::plugin::types::{
    Call, Declaration, Output, Part, ToolError, ToolHints, ToolInfo,
};

struct V0_2;

/// No tool of this plugin streams.
struct NoChunks;

impl GuestChunks for NoChunks {
    fn next(&self) -> Result<Option<Part>, ToolError> {
        Ok(None)
    }
}

/// The `text` argument, found without a JSON parser (the tests pass plain words).
fn text_argument(arguments: &str) -> Option<&str> {
    let rest = arguments.split_once(r#""text":"#)?.1.trim_start();
    let rest = rest.strip_prefix('"')?;
    rest.split_once('"').map(|(text, _)| text)
}

impl Guest for V0_2 {
    type Chunks = NoChunks;

    fn declarations() -> Vec<Declaration> {
        vec![Declaration {
            info: ToolInfo {
                name: "whisper".to_owned(),
                description: "Lower-cases `text`.".to_owned(),
                long_running: false,
                hints: ToolHints {
                    title: Some("Whisper".to_owned()),
                    read_only: Some(true),
                    destructive: None,
                    idempotent: Some(true),
                    open_world: Some(false),
                },
            },
            input_schema: r#"{"type":"object","properties":{"text":{"type":"string"}}}"#.to_owned(),
            output_schema: None,
            streaming: false,
        }]
    }

    fn invoke(call: Call) -> Result<Output, ToolError> {
        match call.tool.as_str() {
            "whisper" => {
                host::log(Level::Info, "whispering through the 0.2.0 contract");
                let text = text_argument(&call.arguments).unwrap_or_default();
                Ok(Output {
                    json: Some(format!(
                        r#"{{"text":"{}","call_id":"{}"}}"#,
                        text.to_lowercase(),
                        call.call_id
                    )),
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
    use super::V0_2;
    super::bindings::export!(V0_2 with_types_in super::bindings);
}
