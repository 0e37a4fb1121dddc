//! Test plugin `preview-abi`: built against the TEST-ONLY preview of
//! `toolhost:plugin@0.2.0` (`tests/wit/preview-0.2.0`, not a published
//! contract), so the host's tests can load it beside `@0.1.0` plugins.
//!
//! | tool | title | result |
//! | --- | --- | --- |
//! | `shout` | `Shout` | `{"text": <text in upper case>}`; logs through the `@0.2.0` host import |
//! | `count` | none | streams `1`, `2`, `3` as text chunks |

mod bindings {
    wit_bindgen::generate!({
        path: "../../wit/preview-0.2.0",
        world: "toolhost:plugin/plugin",
    });
}

use std::cell::Cell;

use bindings::exports::toolhost::plugin::tools::{Chunks, Guest, GuestChunks};
use bindings::toolhost::plugin::host::{self, Level};
use bindings::toolhost::plugin::types::{Call, Declaration, Output, Part, ToolError, ToolInfo};

struct Preview;

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

fn declaration(name: &str, title: Option<&str>, description: &str, streaming: bool) -> Declaration {
    Declaration {
        info: ToolInfo {
            name: name.to_owned(),
            description: description.to_owned(),
            title: title.map(str::to_owned),
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

impl Guest for Preview {
    type Chunks = Count;

    fn declarations() -> Vec<Declaration> {
        vec![
            declaration("shout", Some("Shout"), "Upper-cases `text`.", false),
            declaration("count", None, "Streams 1, 2, 3.", true),
        ]
    }

    fn invoke(call: Call) -> Result<Output, ToolError> {
        match call.tool.as_str() {
            "shout" => {
                host::log(Level::Info, "shouting through the preview contract");
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
    use super::Preview;
    super::bindings::export!(Preview with_types_in super::bindings);
}
