//! Test plugin `raw`: written against the WIT directly (no SDK), it returns
//! results that break the contract, so the host's checks can be tested.
//!
//! | tool | result |
//! | --- | --- |
//! | `not_json` | `json: some("{not json")` |
//! | `bare_string` | `json: some("\"hello\"")` (valid; the host wraps it) |
//! | `typed_result` | `{"n": "not a number"}`, violating its declared output schema |
//!
//! `invoke-stream` always answers `unknown-tool`.

mod bindings {
    wit_bindgen::generate!({
        path: "../../../wit/v0.1.0",
        world: "toolhost:plugin/plugin",
    });
}

use bindings::exports::toolhost::plugin::tools::{Chunks, Guest, GuestChunks};
use bindings::toolhost::plugin::types::{Call, Declaration, Output, Part, ToolError, ToolInfo};

struct Raw;

/// Never constructed: `invoke-stream` refuses every tool.
struct NoChunks;

impl GuestChunks for NoChunks {
    fn next(&self) -> Result<Option<Part>, ToolError> {
        Ok(None)
    }
}

fn declaration(name: &str, description: &str, output_schema: Option<&str>) -> Declaration {
    Declaration {
        info: ToolInfo {
            name: name.to_owned(),
            description: description.to_owned(),
            long_running: false,
        },
        input_schema: r#"{"type":"object"}"#.to_owned(),
        output_schema: output_schema.map(str::to_owned),
        streaming: false,
    }
}

fn json(text: &str) -> Result<Output, ToolError> {
    Ok(Output {
        json: Some(text.to_owned()),
        parts: Vec::new(),
    })
}

impl Guest for Raw {
    type Chunks = NoChunks;

    fn declarations() -> Vec<Declaration> {
        vec![
            declaration("not_json", "Returns text that is not JSON.", None),
            declaration("bare_string", "Returns a bare JSON string.", None),
            declaration(
                "typed_result",
                "Returns a result that violates its declared schema.",
                Some(r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}"#),
            ),
        ]
    }

    fn invoke(call: Call) -> Result<Output, ToolError> {
        match call.tool.as_str() {
            "not_json" => json("{not json"),
            "bare_string" => json(r#""hello""#),
            "typed_result" => json(r#"{"n": "not a number"}"#),
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
    use super::Raw;
    super::bindings::export!(Raw with_types_in super::bindings);
}
