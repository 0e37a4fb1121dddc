//! Test plugin `slow-declare`: written against the WIT directly (no SDK), its
//! `declarations` blocks in a WASI host call (a sleep of an hour) before it
//! declares its one tool, `slow`. Loading it must run into the load deadline
//! without delaying any other plugin.

mod bindings {
    wit_bindgen::generate!({
        path: "../../../wit/v0.1.0",
        world: "toolhost:plugin/plugin",
    });
}

use bindings::exports::toolhost::plugin::tools::{Chunks, Guest, GuestChunks};
use bindings::toolhost::plugin::types::{Call, Declaration, Output, Part, ToolError, ToolInfo};

struct Slow;

/// Never constructed: `invoke-stream` refuses every tool.
struct NoChunks;

impl GuestChunks for NoChunks {
    fn next(&self) -> Result<Option<Part>, ToolError> {
        Ok(None)
    }
}

impl Guest for Slow {
    type Chunks = NoChunks;

    fn declarations() -> Vec<Declaration> {
        // A WASI `poll` on a monotonic-clock pollable: the guest is blocked in
        // the host, where no epoch check reaches it.
        std::thread::sleep(std::time::Duration::from_secs(3600));
        vec![Declaration {
            info: ToolInfo {
                name: "slow".to_owned(),
                description: "Declared after an hour.".to_owned(),
                long_running: false,
            },
            input_schema: r#"{"type":"object"}"#.to_owned(),
            output_schema: None,
            streaming: false,
        }]
    }

    fn invoke(call: Call) -> Result<Output, ToolError> {
        Err(ToolError::UnknownTool(call.tool))
    }

    fn invoke_stream(call: Call) -> Result<Chunks, ToolError> {
        Err(ToolError::UnknownTool(call.tool))
    }
}

/// The component's exports. wit-bindgen's `export!` expands to `unsafe` ABI glue in
/// this crate; the `deny(unsafe_code)` of the rest of the crate still holds.
#[allow(unsafe_code, reason = "wit-bindgen's generated export glue")]
mod export {
    use super::Slow;
    super::bindings::export!(Slow with_types_in super::bindings);
}
