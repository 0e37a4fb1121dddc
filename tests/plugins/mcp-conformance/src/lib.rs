//! Test plugin `mcp-conformance`: the fixture tools, resources, prompts and
//! completions that the server scenarios of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, run by `cargo xtask conformance-test`)
//! call, by the names and with the content the suite expects.
//!
//! | tool | behaviour |
//! | --- | --- |
//! | `test_simple_text` | one text part |
//! | `test_image_content` | a 1×1 PNG image |
//! | `test_audio_content` | a short `audio/wav` sound |
//! | `test_embedded_resource` | a text file as an embedded resource |
//! | `test_multiple_content_types` | text, an image and an embedded resource |
//! | `test_error_handling` | always fails (an `isError` result) |
//! | `test_tool_with_logging` | logs three info messages 50 ms apart (MCP log notifications once the client set a level) |
//! | `test_tool_with_progress` | streams three steps 200 ms apart (progress notifications) |
//! | `test_elicitation` | asks the user for a username and email (`message` is the question) |
//! | `test_elicitation_sep1034_defaults` | asks a form whose fields have defaults |
//! | `test_elicitation_sep1330_enums` | asks a form with the five kinds of enum field |
//! | `test_reconnection` | answers after 1.5 s (a stream that drops meanwhile is resumed) |
//! | `touch_resources` | says the resources it is given changed |
//! | `json_schema_2020_12_tool` | declares its schema as written: `$schema`, `$defs`, `additionalProperties` |
//!
//! Its catalog (`catalog.rs`): the resources `test://static-text`,
//! `test://static-binary` (a PNG) and `test://watched-resource`; the template
//! `test://template/{id}/data` (JSON naming the ID; `id` completes from 1, 2,
//! 3); the prompts `test_simple_prompt`, `test_prompt_with_arguments`
//! (`arg1` and `arg2` complete from paris, park, party),
//! `test_prompt_with_embedded_resource` and `test_prompt_with_image`.

mod catalog;
mod elicitation;

use std::time::Duration;

use elicitation::{Elicitation, Sep1034Defaults, Sep1330Enums};
use test_shared::PIXEL_PNG;
use toolhost_guest::{
    Chunks, Context, Output, Part, StreamingTool, Tool, ToolError, chunks, export_tools,
};

/// A mono 8 kHz, 8-bit WAV file of `samples` bytes of silence.
fn wav(samples: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(44 + samples as usize);
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + samples).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16_u32.to_le_bytes()); // fmt chunk size
    out.extend_from_slice(&1_u16.to_le_bytes()); // PCM
    out.extend_from_slice(&1_u16.to_le_bytes()); // mono
    out.extend_from_slice(&8000_u32.to_le_bytes()); // sample rate
    out.extend_from_slice(&8000_u32.to_le_bytes()); // byte rate
    out.extend_from_slice(&1_u16.to_le_bytes()); // block align
    out.extend_from_slice(&8_u16.to_le_bytes()); // bits per sample
    out.extend_from_slice(b"data");
    out.extend_from_slice(&samples.to_le_bytes());
    out.resize(44 + samples as usize, 0x80);
    out
}

/// An embedded text resource.
fn resource() -> Part {
    Part::file(
        "text/plain",
        Some("resource.txt".to_owned()),
        b"This is an embedded resource content.".to_vec(),
    )
}

struct SimpleText;

impl Tool for SimpleText {
    type Args = ();
    type Output = Output;
    const NAME: &'static str = "test_simple_text";
    const DESCRIPTION: &'static str = "Returns simple text content (conformance fixture).";

    fn call((): (), _cx: &Context) -> Result<Output, ToolError> {
        Ok(Output::text("This is a simple text response for testing."))
    }
}

struct ImageContent;

impl Tool for ImageContent {
    type Args = ();
    type Output = Output;
    const NAME: &'static str = "test_image_content";
    const DESCRIPTION: &'static str = "Returns a PNG image (conformance fixture).";

    fn call((): (), _cx: &Context) -> Result<Output, ToolError> {
        Ok(Output::new().with_part(Part::image("image/png", PIXEL_PNG)))
    }
}

struct AudioContent;

impl Tool for AudioContent {
    type Args = ();
    type Output = Output;
    const NAME: &'static str = "test_audio_content";
    const DESCRIPTION: &'static str = "Returns a WAV sound (conformance fixture).";

    fn call((): (), _cx: &Context) -> Result<Output, ToolError> {
        Ok(Output::new().with_part(Part::audio("audio/wav", wav(800))))
    }
}

struct EmbeddedResource;

impl Tool for EmbeddedResource {
    type Args = ();
    type Output = Output;
    const NAME: &'static str = "test_embedded_resource";
    const DESCRIPTION: &'static str = "Returns an embedded text resource (conformance fixture).";

    fn call((): (), _cx: &Context) -> Result<Output, ToolError> {
        Ok(Output::new().with_part(resource()))
    }
}

struct MultipleContentTypes;

impl Tool for MultipleContentTypes {
    type Args = ();
    type Output = Output;
    const NAME: &'static str = "test_multiple_content_types";
    const DESCRIPTION: &'static str =
        "Returns text, an image and an embedded resource (conformance fixture).";

    fn call((): (), _cx: &Context) -> Result<Output, ToolError> {
        Ok(Output::text("Multiple content types test:")
            .with_part(Part::image("image/png", PIXEL_PNG))
            .with_part(resource()))
    }
}

struct ErrorHandling;

impl Tool for ErrorHandling {
    type Args = ();
    type Output = ();
    const NAME: &'static str = "test_error_handling";
    const DESCRIPTION: &'static str = "Always fails (conformance fixture).";

    fn call((): (), _cx: &Context) -> Result<(), ToolError> {
        Err(ToolError::failed(
            "This tool intentionally returns an error for testing",
        ))
    }
}

struct WithLogging;

impl Tool for WithLogging {
    type Args = ();
    type Output = Output;
    const NAME: &'static str = "test_tool_with_logging";
    const DESCRIPTION: &'static str =
        "Logs three messages 50 ms apart while it runs (conformance fixture).";

    fn call((): (), cx: &Context) -> Result<Output, ToolError> {
        cx.info("Tool execution started");
        std::thread::sleep(Duration::from_millis(50));
        cx.info("Tool processing data");
        std::thread::sleep(Duration::from_millis(50));
        cx.info("Tool execution completed");
        Ok(Output::text("Tool with logging executed successfully"))
    }
}

/// What `touch_resources` takes.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct TouchArgs {
    /// The URIs to say have changed, in order.
    uris: Vec<String>,
}

struct TouchResources;

impl Tool for TouchResources {
    type Args = TouchArgs;
    type Output = Output;
    const NAME: &'static str = "touch_resources";
    const DESCRIPTION: &'static str =
        "Says each of the given resources changed (host.resource-updated; not a suite fixture).";

    fn call(args: TouchArgs, cx: &Context) -> Result<Output, ToolError> {
        for uri in &args.uris {
            cx.resource_updated(uri);
        }
        Ok(Output::text(format!("touched {}", args.uris.len())))
    }
}

struct Reconnection;

impl Tool for Reconnection {
    type Args = ();
    type Output = Output;
    const NAME: &'static str = "test_reconnection";
    const DESCRIPTION: &'static str = "Takes 1.5 s, then answers: a client may drop its stream meanwhile, or the server end it (`cargo xtask conformance-test` serves with --stream-close-after-ms 1000), and the client resume it (SEP-1699; conformance fixture).";

    fn call((): (), _cx: &Context) -> Result<Output, ToolError> {
        std::thread::sleep(Duration::from_millis(1500));
        Ok(Output::text("Reconnection test completed"))
    }
}

struct JsonSchema202012;

impl Tool for JsonSchema202012 {
    type Args = serde_json::Value;
    type Output = Output;
    const NAME: &'static str = "json_schema_2020_12_tool";
    const DESCRIPTION: &'static str = "Declares its argument schema as written, with `$schema`, `$defs` and `additionalProperties` (SEP-1613; conformance fixture).";

    fn call(args: serde_json::Value, _cx: &Context) -> Result<Output, ToolError> {
        Ok(Output::text(format!("received {args}")))
    }

    fn input_schema() -> Option<serde_json::Value> {
        Some(serde_json::json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "type": "object",
                    "properties": {
                        "street": {"type": "string"},
                        "city": {"type": "string"}
                    }
                }
            },
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"}
            },
            "additionalProperties": false
        }))
    }
}

struct WithProgress;

impl StreamingTool for WithProgress {
    type Args = ();
    const NAME: &'static str = "test_tool_with_progress";
    const DESCRIPTION: &'static str =
        "Reports three steps 200 ms apart, as progress when asked (conformance fixture).";

    fn stream((): (), _cx: &Context) -> Result<Chunks, ToolError> {
        Ok(chunks((0..3_u32).map(|step| {
            if step > 0 {
                // A WASI sleep: the host's progress interval is 100 ms, so each
                // step is a notification of its own.
                std::thread::sleep(Duration::from_millis(200));
            }
            Part::text(format!("step {} of 3\n", step + 1))
        })))
    }
}

export_tools! {
    tools: [
        SimpleText,
        ImageContent,
        AudioContent,
        EmbeddedResource,
        MultipleContentTypes,
        ErrorHandling,
        WithLogging,
        Elicitation,
        Sep1034Defaults,
        Sep1330Enums,
        TouchResources,
        Reconnection,
        JsonSchema202012,
    ],
    streams: [WithProgress],
    catalog: catalog::catalog,
}
