//! Test plugin `bad-schema`: written against the WIT directly (no SDK), it
//! declares a tool whose input schema is not valid JSON Schema, so the host must
//! refuse to load it.

mod bindings {
    wit_bindgen::generate!({
        path: "../../../wit/v0.1.0",
        world: "toolhost:plugin/plugin",
    });
}

use bindings::exports::toolhost::plugin::tools::{Chunks, Guest, GuestChunks};
use bindings::toolhost::plugin::types::{Call, Declaration, Output, Part, ToolError, ToolInfo};

struct BadSchema;

/// Never constructed: `invoke-stream` refuses every tool.
struct NoChunks;

impl GuestChunks for NoChunks {
    fn next(&self) -> Result<Option<Part>, ToolError> {
        Ok(None)
    }
}

impl Guest for BadSchema {
    type Chunks = NoChunks;

    fn declarations() -> Vec<Declaration> {
        vec![Declaration {
            info: ToolInfo {
                name: "broken".to_owned(),
                description: "Declares a property of a type that does not exist.".to_owned(),
                long_running: false,
            },
            input_schema: r#"{"type":"object","properties":{"x":{"type":"no-such-type"}}}"#
                .to_owned(),
            output_schema: None,
            streaming: false,
        }]
    }

    fn invoke(call: Call) -> Result<Output, ToolError> {
        Ok(Output {
            json: Some(format!(r#"{{"called": {:?}}}"#, call.tool)),
            parts: Vec::new(),
        })
    }

    fn invoke_stream(call: Call) -> Result<Chunks, ToolError> {
        Err(ToolError::UnknownTool(call.tool))
    }
}

/// The component's exports. wit-bindgen's `export!` expands to `unsafe` ABI glue in
/// this crate; the `deny(unsafe_code)` of the rest of the crate still holds.
#[allow(unsafe_code, reason = "wit-bindgen's generated export glue")]
mod export {
    use super::BadSchema;
    super::bindings::export!(BadSchema with_types_in super::bindings);
}
