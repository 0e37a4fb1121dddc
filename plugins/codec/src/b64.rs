//! `base64`: encode and decode, standard or URL-safe alphabet.

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Error, hex};

/// What to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    /// Text to base64.
    Encode,
    /// Base64 to text (or hex, for bytes that are not UTF-8).
    Decode,
}

/// A base64 alphabet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Alphabet {
    /// `A-Z a-z 0-9 + /` (RFC 4648 §4).
    Standard,
    /// `A-Z a-z 0-9 - _` (RFC 4648 §5), for URLs and file names.
    UrlSafe,
}

/// Encodes a text as base64, or decodes base64. Decoding ignores whitespace
/// and accepts input with or without `=` padding; it returns the text when
/// the bytes are UTF-8, else their hex.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Base64Args {
    /// `encode` or `decode`.
    pub operation: Operation,
    /// The text to encode, or the base64 to decode.
    pub data: String,
    /// The alphabet. Encoding defaults to `standard`; decoding detects it.
    pub alphabet: Option<Alphabet>,
    /// Add `=` padding when encoding (default true).
    #[serde(default = "yes")]
    pub padding: bool,
}

fn yes() -> bool {
    true
}

/// What a string in a result holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResultEncoding {
    /// Base64 (an encode result).
    Base64,
    /// UTF-8 text (decoded bytes that are valid UTF-8).
    Text,
    /// Hex (decoded bytes that are not UTF-8).
    Hex,
}

/// The result of `base64`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Base64Result {
    /// The operation done.
    pub operation: Operation,
    /// The alphabet used.
    pub alphabet: Alphabet,
    /// The encoded base64, or the decoded data.
    pub result: String,
    /// What `result` holds: `base64`, `text` or `hex`.
    pub result_encoding: ResultEncoding,
    /// How many raw (unencoded) bytes there are.
    pub bytes: usize,
}

fn engine(alphabet: Alphabet, pad: bool) -> GeneralPurpose {
    let config = GeneralPurposeConfig::new()
        .with_encode_padding(pad)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent);
    match alphabet {
        Alphabet::Standard => GeneralPurpose::new(&alphabet::STANDARD, config),
        Alphabet::UrlSafe => GeneralPurpose::new(&alphabet::URL_SAFE, config),
    }
}

/// The alphabet `data` seems to use: URL-safe when it has `-` or `_`.
pub fn detect_alphabet(data: &str) -> Alphabet {
    if data.contains(['-', '_']) {
        Alphabet::UrlSafe
    } else {
        Alphabet::Standard
    }
}

/// Decodes `data` (whitespace ignored, padding optional).
pub fn decode(data: &str, alphabet: Alphabet) -> Result<Vec<u8>, String> {
    let compact: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    engine(alphabet, true)
        .decode(compact.as_bytes())
        .map_err(|e| {
            let mut msg = e.to_string();
            let other = match alphabet {
                Alphabet::Standard if compact.contains(['-', '_']) => Some("url_safe"),
                Alphabet::UrlSafe if compact.contains(['+', '/']) => Some("standard"),
                _ => None,
            };
            if let Some(other) = other {
                msg.push_str(&format!(" (the data looks like the {other} alphabet)"));
            }
            msg
        })
}

/// Runs `base64`.
pub fn run(args: &Base64Args) -> Result<Base64Result, Error> {
    match args.operation {
        Operation::Encode => {
            let alphabet = args.alphabet.unwrap_or(Alphabet::Standard);
            Ok(Base64Result {
                operation: Operation::Encode,
                alphabet,
                result: engine(alphabet, args.padding).encode(args.data.as_bytes()),
                result_encoding: ResultEncoding::Base64,
                bytes: args.data.len(),
            })
        }
        Operation::Decode => {
            let alphabet = args.alphabet.unwrap_or_else(|| detect_alphabet(&args.data));
            let bytes = decode(&args.data, alphabet)
                .map_err(|e| Error::InvalidArguments(format!("data is not valid base64: {e}")))?;
            let len = bytes.len();
            let (result, result_encoding) = match String::from_utf8(bytes) {
                Ok(text) => (text, ResultEncoding::Text),
                Err(e) => (hex(e.as_bytes()), ResultEncoding::Hex),
            };
            Ok(Base64Result {
                operation: Operation::Decode,
                alphabet,
                result,
                result_encoding,
                bytes: len,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(operation: Operation, data: &str, alphabet: Option<Alphabet>) -> Base64Args {
        Base64Args {
            operation,
            data: data.into(),
            alphabet,
            padding: true,
        }
    }

    #[test]
    fn rfc4648_vectors() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(
                run(&args(Operation::Encode, plain, None)).unwrap().result,
                encoded
            );
            let out = run(&args(Operation::Decode, encoded, None)).unwrap();
            assert_eq!(
                (out.result.as_str(), out.result_encoding),
                (plain, ResultEncoding::Text)
            );
        }
    }

    #[test]
    fn url_safe_and_padding() {
        let text = "subjects?_d>>";
        let mut a = args(Operation::Encode, text, Some(Alphabet::UrlSafe));
        a.padding = false;
        let encoded = run(&a).unwrap().result;
        assert_eq!(encoded, "c3ViamVjdHM_X2Q-Pg");
        let std = run(&args(Operation::Encode, text, None)).unwrap().result;
        assert_eq!(std, "c3ViamVjdHM/X2Q+Pg==");
        // Decoding detects the alphabet and does not care about padding.
        for e in [&encoded, &std] {
            let out = run(&args(Operation::Decode, e, None)).unwrap();
            assert_eq!(out.result, text);
        }
    }

    #[test]
    fn decode_ignores_whitespace_and_reports_binary_as_hex() {
        let out = run(&args(Operation::Decode, "Zm9v\nYmFy\n", None)).unwrap();
        assert_eq!(out.result, "foobar");
        let out = run(&args(Operation::Decode, "AP+A", None)).unwrap();
        assert_eq!(
            (out.result.as_str(), out.result_encoding, out.bytes),
            ("00ff80", ResultEncoding::Hex, 3)
        );
    }

    #[test]
    fn bad_base64_is_invalid_arguments() {
        let err = run(&args(Operation::Decode, "Zm9v!", None)).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArguments(m) if m.starts_with("data is not valid base64")),
            "{err:?}"
        );
        let err = run(&args(
            Operation::Decode,
            "c3ViamVjdHM_X2Q-Pg",
            Some(Alphabet::Standard),
        ))
        .unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArguments(m) if m.contains("url_safe alphabet")),
            "{err:?}"
        );
    }
}
