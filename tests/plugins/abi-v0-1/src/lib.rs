//! Test plugin `abi-v0-1`: built with wit-bindgen against the frozen
//! `toolhost:plugin@0.1.0` (`wit/v0.1.0`), so the host's tests can load it
//! beside `@0.2.0` plugins. Its tools have no hints (`@0.1.0` has none).
//!
//! | tool | result |
//! | --- | --- |
//! | `shout` | `{"text": <text in upper case>}`; logs through the `@0.1.0` host import |
//! | `count` | streams `1`, `2`, `3` as text chunks |

mod bindings {
    wit_bindgen::generate!({
        path: "../../../wit/v0.1.0",
        world: "toolhost:plugin/plugin",
    });
}

use std::cell::Cell;

use bindings::exports::toolhost::plugin::tools::{Chunks, Guest, GuestChunks};
use bindings::toolhost::plugin::host::{self, Level};
use bindings::toolhost::plugin::types::{Call, Declaration, Output, Part, ToolError, ToolInfo};

struct V0_1;

/// The chunks of `count`.
struct Count {
    next: Cell<u32>,
}

impl GuestChunks for Count {
    fn next(&self) -> Result<Option<Part>, ToolError> {
        let n = self.next.get();
        if n > 3 {
            return Ok(None);
        }
        self.next.set(n + 1);
        Ok(Some(Part::Text(n.to_string())))
    }
}

fn declaration(name: &str, description: &str, streaming: bool) -> Declaration {
    Declaration {
        info: ToolInfo {
            name: name.to_owned(),
            description: description.to_owned(),
            long_running: false,
        },
        input_schema: r#"{"type":"object","properties":{"text":{"type":"string"}}}"#.to_owned(),
        output_schema: None,
        streaming,
    }
}

/// The `text` argument, found without a JSON parser (the tests pass plain words).
fn text_argument(arguments: &str) -> Option<&str> {
    let rest = arguments.split_once(r#""text":"#)?.1.trim_start();
    let rest = rest.strip_prefix('"')?;
    rest.split_once('"').map(|(text, _)| text)
}

impl Guest for V0_1 {
    type Chunks = Count;

    fn declarations() -> Vec<Declaration> {
        vec![
            declaration("shout", "Upper-cases `text`.", false),
            declaration("count", "Streams 1, 2, 3.", true),
        ]
    }

    fn invoke(call: Call) -> Result<Output, ToolError> {
        match call.tool.as_str() {
            "shout" => {
                host::log(Level::Info, "shouting through the 0.1.0 contract");
                let text = text_argument(&call.arguments).unwrap_or_default();
                Ok(Output {
                    json: Some(format!(r#"{{"text":"{}"}}"#, text.to_uppercase())),
                    parts: Vec::new(),
                })
            }
            _ => Err(ToolError::UnknownTool(call.tool)),
        }
    }

    fn invoke_stream(call: Call) -> Result<Chunks, ToolError> {
        match call.tool.as_str() {
            "count" => Ok(Chunks::new(Count { next: Cell::new(1) })),
            _ => Err(ToolError::UnknownTool(call.tool)),
        }
    }
}

/// The component's exports. wit-bindgen's `export!` expands to `unsafe` ABI glue in
/// this crate; the `deny(unsafe_code)` of the rest of the crate still holds.
#[allow(unsafe_code, reason = "wit-bindgen's generated export glue")]
mod export {
    use super::V0_1;
    super::bindings::export!(V0_1 with_types_in super::bindings);
}
