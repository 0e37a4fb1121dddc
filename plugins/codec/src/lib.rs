//! Encoding tools for agents: `hash`, `base64`, `qr_code` (returns a PNG image)
//! and the long-running `batch_digest`.

use base64::Engine as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolhost_guest::{Context, Output, Part, Tool, ToolError, ToolHints};

pub mod b64;
pub mod hash;
pub mod qr;

use b64::{Base64Args, Base64Result};
use hash::{BatchDigest, BatchDigestArgs, HashArgs, Hashed};
use qr::{QrArgs, QrInfo};

/// A tool failure, before it becomes a `ToolError`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The arguments are wrong; the message says how to fix them.
    InvalidArguments(String),
    /// The tool ran and failed.
    Failed(String),
}

impl From<Error> for ToolError {
    fn from(err: Error) -> Self {
        match err {
            Error::InvalidArguments(m) => ToolError::invalid_arguments(m),
            Error::Failed(m) => ToolError::failed(m),
        }
    }
}

/// `hash`.
pub struct Hash;

impl Tool for Hash {
    type Args = HashArgs;
    type Output = Hashed;
    const NAME: &'static str = "hash";
    const HINTS: ToolHints = ToolHints::NONE
        .read_only(true)
        .idempotent(true)
        .open_world(false);

    fn call(args: HashArgs, _cx: &Context) -> Result<Hashed, ToolError> {
        Ok(hash::hash(&args)?)
    }

    fn output_schema() -> Option<Value> {
        Some(toolhost_guest::schema_for::<Hashed>())
    }
}

/// `base64`.
pub struct Base64;

impl Tool for Base64 {
    type Args = Base64Args;
    type Output = Base64Result;
    const NAME: &'static str = "base64";
    const HINTS: ToolHints = ToolHints::NONE
        .read_only(true)
        .idempotent(true)
        .open_world(false);

    fn call(args: Base64Args, _cx: &Context) -> Result<Base64Result, ToolError> {
        Ok(b64::run(&args)?)
    }

    fn output_schema() -> Option<Value> {
        Some(toolhost_guest::schema_for::<Base64Result>())
    }
}

/// `qr_code`: returns the PNG as an image part.
pub struct QrCode;

impl Tool for QrCode {
    type Args = QrArgs;
    type Output = Output;
    const NAME: &'static str = "qr_code";
    const HINTS: ToolHints = ToolHints::NONE
        .read_only(true)
        .idempotent(true)
        .open_world(false);

    fn call(args: QrArgs, _cx: &Context) -> Result<Output, ToolError> {
        let rendered = qr::render(&args)?;
        let info = &rendered.info;
        let summary = format!(
            "QR code (version {}, {} error correction, {}x{} modules) of a {}-byte text, as a {}x{} pixel PNG.",
            info.version,
            serde_json::to_value(info.error_correction)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            info.modules,
            info.modules,
            args.text.len(),
            info.size_px,
            info.size_px,
        );
        Ok(Output::json(&rendered.info)
            .with_part(Part::text(summary))
            .with_part(Part::image("image/png", rendered.png)))
    }

    fn output_schema() -> Option<Value> {
        Some(toolhost_guest::schema_for::<QrInfo>())
    }
}

/// `batch_digest`: the long-running tool.
pub struct BatchDigestTool;

impl Tool for BatchDigestTool {
    type Args = BatchDigestArgs;
    type Output = BatchDigest;
    const NAME: &'static str = "batch_digest";
    const HINTS: ToolHints = ToolHints::NONE
        .read_only(true)
        .idempotent(true)
        .open_world(false);
    const LONG_RUNNING: bool = true;

    fn call(args: BatchDigestArgs, cx: &Context) -> Result<BatchDigest, ToolError> {
        cx.info(&format!("hashing {} inputs", args.inputs.len()));
        let out = hash::batch_digest(&args, |done, total| {
            cx.debug(&format!("hashed {done} of {total} inputs"));
        })?;
        cx.info(&format!(
            "hashed {} inputs, {} bytes",
            out.count, out.total_bytes
        ));
        Ok(out)
    }

    fn output_schema() -> Option<Value> {
        Some(toolhost_guest::schema_for::<BatchDigest>())
    }
}

toolhost_guest::export_tools! {
    tools: [Hash, Base64, QrCode, BatchDigestTool],
}

/// How a string argument carries bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InputEncoding {
    /// The UTF-8 bytes of the text itself (the default).
    #[default]
    Text,
    /// Base64, standard or URL-safe alphabet, padding optional.
    Base64,
    /// Hexadecimal, two digits per byte.
    Hex,
}

/// The bytes of `input`; `what` names the argument in errors.
pub fn decode_input(input: &str, encoding: InputEncoding, what: &str) -> Result<Vec<u8>, Error> {
    match encoding {
        InputEncoding::Text => Ok(input.as_bytes().to_vec()),
        InputEncoding::Base64 => {
            let alphabet = b64::detect_alphabet(input);
            b64::decode(input, alphabet)
                .map_err(|e| Error::InvalidArguments(format!("{what} is not valid base64: {e}")))
        }
        InputEncoding::Hex => unhex(input)
            .map_err(|e| Error::InvalidArguments(format!("{what} is not valid hex: {e}"))),
    }
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

/// The bytes of a hex string (either case; whitespace and an `0x` prefix are ignored).
pub fn unhex(text: &str) -> Result<Vec<u8>, String> {
    let trimmed = text.trim();
    let trimmed = trimmed
        .strip_prefix("0x")
        .or_else(|| trimmed.strip_prefix("0X"))
        .unwrap_or(trimmed);
    let digits: Vec<(usize, char)> = trimmed
        .char_indices()
        .filter(|(_, c)| !c.is_whitespace())
        .collect();
    if !digits.len().is_multiple_of(2) {
        return Err(format!("it has an odd number of digits ({})", digits.len()));
    }
    let value = |(at, c): (usize, char)| {
        c.to_digit(16)
            .ok_or_else(|| format!("'{c}' at offset {at} is not a hex digit"))
    };
    digits
        .chunks_exact(2)
        .map(|pair| Ok(u8::try_from(value(pair[0])? * 16 + value(pair[1])?).unwrap_or(0)))
        .collect()
}

/// Standard base64 of `bytes`, for results.
pub fn base64_std(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use toolhost_guest::Declaration;

    use super::*;

    #[test]
    fn declarations() {
        let decls = [
            Declaration::of_tool::<Hash>(),
            Declaration::of_tool::<Base64>(),
            Declaration::of_tool::<QrCode>(),
            Declaration::of_tool::<BatchDigestTool>(),
        ];
        for d in &decls {
            assert!(d.description.len() > 40, "{}: {}", d.name, d.description);
            assert!(d.output_schema.is_some());
        }
        assert_eq!(
            decls.each_ref().map(|d| d.long_running),
            [false, false, false, true]
        );
        assert_eq!(
            decls[0].input_schema["required"],
            serde_json::json!(["input"])
        );
        assert_eq!(
            decls[3].input_schema["properties"]["inputs"]["maxItems"],
            10000
        );
    }

    #[test]
    fn hex_round_trip() {
        let bytes = [0u8, 1, 0x7f, 0x80, 0xff];
        assert_eq!(hex(&bytes), "00017f80ff");
        assert_eq!(unhex("00017F80ff").unwrap(), bytes);
        assert_eq!(unhex(" 0x00 01 7f 80 ff\n").unwrap(), bytes);
        assert!(unhex("abc").unwrap_err().contains("odd number"));
        assert!(unhex("zz").unwrap_err().contains("'z' at offset 0"));
    }
}
