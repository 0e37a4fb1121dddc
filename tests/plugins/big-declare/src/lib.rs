//! Test plugin `big-declare`: written against the WIT directly (no SDK), it
//! declares 300 tools (`t0` to `t299`), the first with an input schema of
//! 50 MB (a valid one: an object schema with a long description). Loading it
//! must stop at the load limits before any schema is parsed.

mod bindings {
    wit_bindgen::generate!({
        path: "../../../wit/v0.1.0",
        world: "toolhost:plugin/plugin",
    });
}

use bindings::exports::toolhost::plugin::tools::{Chunks, Guest, GuestChunks};
use bindings::toolhost::plugin::types::{Call, Declaration, Output, Part, ToolError, ToolInfo};

/// How many tools it declares.
const TOOLS: usize = 300;
/// The size of the first tool's input schema, in bytes.
const SCHEMA_BYTES: usize = 50 << 20;

struct Big;

/// Never constructed: `invoke-stream` refuses every tool.
struct NoChunks;

impl GuestChunks for NoChunks {
    fn next(&self) -> Result<Option<Part>, ToolError> {
        Ok(None)
    }
}

fn huge_schema() -> String {
    let head = r#"{"type":"object","description":""#;
    let tail = r#""}"#;
    let mut schema = String::with_capacity(SCHEMA_BYTES);
    schema.push_str(head);
    schema.extend(std::iter::repeat_n(
        'x',
        SCHEMA_BYTES - head.len() - tail.len(),
    ));
    schema.push_str(tail);
    schema
}

impl Guest for Big {
    type Chunks = NoChunks;

    fn declarations() -> Vec<Declaration> {
        (0..TOOLS)
            .map(|i| Declaration {
                info: ToolInfo {
                    name: format!("t{i}"),
                    description: format!("Tool number {i}."),
                    long_running: false,
                },
                input_schema: if i == 0 {
                    huge_schema()
                } else {
                    r#"{"type":"object"}"#.to_owned()
                },
                output_schema: None,
                streaming: false,
            })
            .collect()
    }

    fn invoke(call: Call) -> Result<Output, ToolError> {
        Ok(Output {
            json: Some(format!("{:?}", call.tool)),
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
    use super::Big;
    super::bindings::export!(Big with_types_in super::bindings);
}
