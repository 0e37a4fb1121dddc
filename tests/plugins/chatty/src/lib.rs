//! Test plugin `chatty`: streams as many tiny chunks as it is asked for, as
//! fast as it can, so the host can show it coalesces progress notifications.
//!
//! | tool | behaviour |
//! | --- | --- |
//! | `chatter` | streams `chunks` chunks, each the text `x` |

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_guest::{Chunks, Context, Part, StreamingTool, ToolError, chunks, export_tools};

/// How many chunks to stream.
#[derive(Deserialize, JsonSchema)]
struct ChatterArgs {
    /// The number of one-character chunks.
    #[schemars(range(max = 1000000))]
    chunks: u32,
}

struct Chatter;

impl StreamingTool for Chatter {
    type Args = ChatterArgs;
    const NAME: &'static str = "chatter";

    fn stream(args: ChatterArgs, _cx: &Context) -> Result<Chunks, ToolError> {
        Ok(chunks((0..args.chunks).map(|_| Part::text("x"))))
    }
}

export_tools! {
    tools: [],
    streams: [Chatter],
}
