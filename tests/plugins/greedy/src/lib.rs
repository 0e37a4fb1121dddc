//! Test plugin `greedy`: each tool stays inside its own call's budgets but goes
//! after what the host shares between calls, so the host can show that those
//! shared resources are bounded too.
//!
//! | tool | goes after | the host should |
//! | --- | --- | --- |
//! | `hold` | guest memory: allocates `mib` MiB, then sleeps `ms` ms holding it | count it against the engine's memory budget, and refuse past it (`Busy`) |
//! | `chatty` | the log: `count` messages of `bytes` bytes through the `log` import | cap the call's log volume, saying how much it dropped |
//! | `forge` | the log's lines: messages and stderr with newlines and escape codes | escape control characters, so no line is forged |
//! | `loud_error` | the model's context: fails with a `bytes`-byte message (`kind`: `failed` or `invalid`) | cut the message, marked |
//! | `empty_chunks` | the client: streams `count` empty text chunks | count each chunk toward the output cap |
//! | `many_keys` | invocation state: sets `count` one-byte keys | cap keys and bytes with running totals |

use std::hint::black_box;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolhost_guest::{Chunks, Context, Part, StreamingTool, Tool, ToolError, chunks, export_tools};

/// Allocates and touches `mib` MiB, then sleeps `ms` milliseconds holding it.
#[derive(Deserialize, JsonSchema)]
struct HoldArgs {
    /// How many MiB to allocate.
    mib: u32,
    /// How long to hold them, in milliseconds.
    #[serde(default)]
    ms: u64,
}

struct Hold;

impl Tool for Hold {
    type Args = HoldArgs;
    type Output = Value;
    const NAME: &'static str = "hold";

    fn call(args: HoldArgs, _cx: &Context) -> Result<Value, ToolError> {
        let bytes = usize::try_from(args.mib).unwrap_or(usize::MAX) << 20;
        let block = vec![1_u8; bytes];
        black_box(&block);
        std::thread::sleep(Duration::from_millis(args.ms));
        Ok(json!({ "held_mib": args.mib }))
    }
}

/// Logs `count` messages of `bytes` bytes each.
#[derive(Deserialize, JsonSchema)]
struct ChattyArgs {
    /// How many messages.
    count: u64,
    /// How long each is.
    bytes: u32,
}

struct Chatty;

impl Tool for Chatty {
    type Args = ChattyArgs;
    type Output = Value;
    const NAME: &'static str = "chatty";

    fn call(args: ChattyArgs, cx: &Context) -> Result<Value, ToolError> {
        let filler = "y".repeat(usize::try_from(args.bytes).unwrap_or(0));
        for i in 0..args.count {
            cx.warn(&format!("chatty message {i:08} {filler}"));
        }
        Ok(json!({ "sent": args.count }))
    }
}

/// Logs and prints text that tries to start forged log lines.
#[derive(Deserialize, JsonSchema)]
struct ForgeArgs {}

struct Forge;

impl Tool for Forge {
    type Args = ForgeArgs;
    type Output = Value;
    const NAME: &'static str = "forge";

    fn call(_args: ForgeArgs, cx: &Context) -> Result<Value, ToolError> {
        cx.warn(
            "honest start\n2026-01-01T00:00:00.000000Z ERROR toolhost: FORGED-BY-LOG \u{1b}[31mred",
        );
        eprintln!("stderr start\rFORGED-BY-STDERR \u{1b}[2J");
        Err(ToolError::failed(
            "failing\n2026-01-01T00:00:00.000000Z ERROR toolhost: FORGED-BY-ERROR",
        ))
    }
}

/// Fails with a message of `bytes` bytes.
#[derive(Deserialize, JsonSchema)]
struct LoudErrorArgs {
    /// How long the message is.
    bytes: u32,
    /// `failed` (the default) or `invalid` (invalid arguments).
    #[serde(default)]
    kind: Option<String>,
}

struct LoudError;

impl Tool for LoudError {
    type Args = LoudErrorArgs;
    type Output = ();
    const NAME: &'static str = "loud_error";

    fn call(args: LoudErrorArgs, _cx: &Context) -> Result<(), ToolError> {
        let message = format!(
            "loud start {}",
            "z".repeat(usize::try_from(args.bytes).unwrap_or(0))
        );
        Err(match args.kind.as_deref() {
            Some("invalid") => ToolError::invalid_arguments(message),
            _ => ToolError::failed(message),
        })
    }
}

/// Streams `count` empty text chunks.
#[derive(Deserialize, JsonSchema)]
struct EmptyChunksArgs {
    /// How many chunks.
    count: u64,
}

struct EmptyChunks;

impl StreamingTool for EmptyChunks {
    type Args = EmptyChunksArgs;
    const NAME: &'static str = "empty_chunks";

    fn stream(args: EmptyChunksArgs, _cx: &Context) -> Result<Chunks, ToolError> {
        Ok(chunks((0..args.count).map(|_| Part::text(""))))
    }
}

/// Sets `count` keys of one byte each (`k0`, `k1`, ...), with one-byte values.
#[derive(Deserialize, JsonSchema)]
struct ManyKeysArgs {
    /// How many keys.
    count: u64,
}

struct ManyKeys;

impl Tool for ManyKeys {
    type Args = ManyKeysArgs;
    type Output = Value;
    const NAME: &'static str = "many_keys";

    fn call(args: ManyKeysArgs, cx: &Context) -> Result<Value, ToolError> {
        for i in 0..args.count {
            cx.state_set(&format!("k{i}"), "v");
        }
        Ok(json!({ "set": args.count }))
    }
}

export_tools! {
    tools: [Hold, Chatty, Forge, LoudError, ManyKeys],
    streams: [EmptyChunks],
}
