//! Tools that several test plugins (`echo`, `conformance`) export alike, so
//! their behaviour cannot drift apart. A library: it builds no component.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolhost_guest::{Context, Output, Part, Tool, ToolError};

/// A 1×1 red RGBA PNG, hand-encoded (IHDR, one zlib-compressed IDAT row, IEND).
pub const PIXEL_PNG: [u8; 70] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x56, 0xc7, 0x2f, 0x0d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// `pixel`: a text part and a 1×1 PNG image part.
pub struct Pixel;

impl Tool for Pixel {
    type Args = ();
    type Output = Output;
    const NAME: &'static str = "pixel";
    const DESCRIPTION: &'static str = "Returns a caption and a 1x1 red PNG image.";

    fn call((): (), _cx: &Context) -> Result<Output, ToolError> {
        Ok(Output::text("a 1x1 red pixel").with_part(Part::image("image/png", PIXEL_PNG)))
    }
}

/// Stores a value in the invocation's scratch state, or reads it back.
#[derive(Deserialize, JsonSchema)]
pub struct RememberArgs {
    /// The key.
    key: String,
    /// The value to store; omit it to read the key instead.
    value: Option<String>,
}

/// `remember`: invocation state; stores or reads a key.
pub struct Remember;

impl Tool for Remember {
    type Args = RememberArgs;
    type Output = Value;
    const NAME: &'static str = "remember";

    fn call(args: RememberArgs, cx: &Context) -> Result<Value, ToolError> {
        Ok(match args.value {
            Some(value) => {
                cx.state_set(&args.key, &value);
                json!({ "stored": args.key })
            }
            None => json!({ "value": cx.state_get(&args.key) }),
        })
    }
}
