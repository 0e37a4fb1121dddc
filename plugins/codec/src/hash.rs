//! `hash` and the long-running `batch_digest`.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha224, Sha256, Sha384, Sha512};

use crate::{Error, InputEncoding, decode_input, hex};

/// Most inputs `batch_digest` accepts in one call.
pub const MAX_BATCH: usize = 10_000;

/// A SHA-2 hash function.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    /// SHA-224.
    Sha224,
    /// SHA-256 (the default).
    #[default]
    Sha256,
    /// SHA-384.
    Sha384,
    /// SHA-512.
    Sha512,
}

impl Algorithm {
    /// The digest of `data`.
    pub fn digest(self, data: &[u8]) -> Vec<u8> {
        match self {
            Algorithm::Sha224 => Sha224::digest(data).to_vec(),
            Algorithm::Sha256 => Sha256::digest(data).to_vec(),
            Algorithm::Sha384 => Sha384::digest(data).to_vec(),
            Algorithm::Sha512 => Sha512::digest(data).to_vec(),
        }
    }
}

/// Computes a SHA-2 digest (SHA-256 by default) of a text or of bytes given
/// as base64 or hex. Returns the digest in hex.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HashArgs {
    /// The data to hash.
    pub input: String,
    /// How `input` is encoded (default `text`: its UTF-8 bytes are hashed).
    #[serde(default)]
    pub input_encoding: InputEncoding,
    /// The hash function (default `sha256`).
    #[serde(default)]
    pub algorithm: Algorithm,
}

/// A digest.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Hashed {
    /// The hash function used.
    pub algorithm: Algorithm,
    /// The digest, lowercase hex.
    pub hex: String,
    /// How many bytes were hashed.
    pub input_bytes: usize,
}

/// Runs `hash`.
pub fn hash(args: &HashArgs) -> Result<Hashed, Error> {
    let data = decode_input(&args.input, args.input_encoding, "input")?;
    Ok(Hashed {
        algorithm: args.algorithm,
        hex: hex(&args.algorithm.digest(&data)),
        input_bytes: data.len(),
    })
}

/// Hashes a list of inputs (texts, or bytes as base64 or hex) in one job and
/// reports each digest, the inputs that are identical, and one digest over
/// the whole list. Large batches may take a long time.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchDigestArgs {
    /// The inputs to hash, 1 to 10000 of them.
    #[schemars(length(min = 1, max = 10000))]
    pub inputs: Vec<String>,
    /// How every input is encoded (default `text`).
    #[serde(default)]
    pub input_encoding: InputEncoding,
    /// The hash function (default `sha256`).
    #[serde(default)]
    pub algorithm: Algorithm,
}

/// The finished job of `batch_digest`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BatchDigest {
    /// Always `done`: the job finishes within the call.
    pub status: &'static str,
    /// The hash function used.
    pub algorithm: Algorithm,
    /// How many inputs were hashed.
    pub count: usize,
    /// Bytes hashed in all.
    pub total_bytes: usize,
    /// One digest per input, in input order.
    pub digests: Vec<ItemDigest>,
    /// Groups of input indices (0-based) whose contents are identical; empty
    /// when all inputs differ.
    pub duplicates: Vec<Vec<usize>>,
    /// The digest of the concatenated raw digests, in order: one fingerprint
    /// for the whole list.
    pub combined: String,
}

/// The digest of one input.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ItemDigest {
    /// The input's 0-based position.
    pub index: usize,
    /// The digest, lowercase hex.
    pub hex: String,
    /// How many bytes the input had.
    pub bytes: usize,
}

/// Runs `batch_digest`; `progress(done, total)` is called now and then.
pub fn batch_digest(
    args: &BatchDigestArgs,
    mut progress: impl FnMut(usize, usize),
) -> Result<BatchDigest, Error> {
    let total = args.inputs.len();
    if total == 0 {
        return Err(Error::InvalidArguments(
            "inputs must hold at least one item".into(),
        ));
    }
    if total > MAX_BATCH {
        return Err(Error::InvalidArguments(format!(
            "inputs holds {total} items; at most {MAX_BATCH} fit in one call, so split the list"
        )));
    }
    let mut digests = Vec::with_capacity(total);
    let mut all = Vec::new();
    let mut total_bytes = 0;
    let mut seen: HashMap<Vec<u8>, Vec<usize>> = HashMap::new();
    let step = (total / 10).max(100);
    for (index, input) in args.inputs.iter().enumerate() {
        let what = format!("inputs[{index}]");
        let data = decode_input(input, args.input_encoding, &what)?;
        let digest = args.algorithm.digest(&data);
        total_bytes += data.len();
        all.extend_from_slice(&digest);
        digests.push(ItemDigest {
            index,
            hex: hex(&digest),
            bytes: data.len(),
        });
        seen.entry(digest).or_default().push(index);
        if (index + 1).is_multiple_of(step) {
            progress(index + 1, total);
        }
    }
    let mut duplicates: Vec<Vec<usize>> = seen.into_values().filter(|v| v.len() > 1).collect();
    duplicates.sort_unstable();
    Ok(BatchDigest {
        status: "done",
        algorithm: args.algorithm,
        count: total,
        total_bytes,
        digests,
        duplicates,
        combined: hex(&args.algorithm.digest(&all)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash_text(input: &str, algorithm: Algorithm) -> String {
        hash(&HashArgs {
            input: input.into(),
            input_encoding: InputEncoding::Text,
            algorithm,
        })
        .unwrap()
        .hex
    }

    #[test]
    fn known_vectors() {
        assert_eq!(
            hash_text("abc", Algorithm::Sha256),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hash_text("", Algorithm::Sha256),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            hash_text("abc", Algorithm::Sha512),
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a\
             2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"
        );
        assert_eq!(
            hash_text("abc", Algorithm::Sha224),
            "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7"
        );
        assert_eq!(
            hash_text("abc", Algorithm::Sha384),
            "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed\
             8086072ba1e7cc2358baeca134c825a7"
        );
    }

    #[test]
    fn base64_and_hex_inputs_hash_their_bytes() {
        for (input, encoding) in [
            ("YWJj", InputEncoding::Base64),
            ("616263", InputEncoding::Hex),
        ] {
            let out = hash(&HashArgs {
                input: input.into(),
                input_encoding: encoding,
                algorithm: Algorithm::Sha256,
            })
            .unwrap();
            assert_eq!(out.input_bytes, 3);
            assert!(out.hex.starts_with("ba7816bf"));
        }
        let err = hash(&HashArgs {
            input: "zz".into(),
            input_encoding: InputEncoding::Hex,
            algorithm: Algorithm::Sha256,
        })
        .unwrap_err();
        assert!(matches!(err, Error::InvalidArguments(m) if m.contains("input is not valid hex")));
    }

    #[test]
    fn args_default_to_text_and_sha256() {
        let args: HashArgs = serde_json::from_str(r#"{"input": "abc"}"#).unwrap();
        assert_eq!(args.algorithm, Algorithm::Sha256);
        assert_eq!(args.input_encoding, InputEncoding::Text);
    }

    #[test]
    fn batch_reports_digests_duplicates_and_progress() {
        let mut inputs: Vec<String> = (0..250).map(|i| format!("item {i}")).collect();
        inputs[7] = "abc".into();
        inputs[200] = "abc".into();
        let args = BatchDigestArgs {
            inputs,
            input_encoding: InputEncoding::Text,
            algorithm: Algorithm::Sha256,
        };
        let mut reports = Vec::new();
        let out = batch_digest(&args, |done, total| reports.push((done, total))).unwrap();
        assert_eq!(out.status, "done");
        assert_eq!(out.count, 250);
        assert_eq!(out.digests.len(), 250);
        assert_eq!(out.digests[7].hex, out.digests[200].hex);
        assert!(out.digests[7].hex.starts_with("ba7816bf"));
        assert_eq!(out.duplicates, vec![vec![7, 200]]);
        assert_eq!(reports, vec![(100, 250), (200, 250)]);
        assert_eq!(out.combined.len(), 64);
    }

    #[test]
    fn batch_names_the_bad_input() {
        let args = BatchDigestArgs {
            inputs: vec!["YWJj".into(), "!!".into()],
            input_encoding: InputEncoding::Base64,
            algorithm: Algorithm::Sha512,
        };
        let err = batch_digest(&args, |_, _| {}).unwrap_err();
        assert!(
            matches!(err, Error::InvalidArguments(m) if m.starts_with("inputs[1] is not valid base64"))
        );
        let empty = BatchDigestArgs {
            inputs: vec![],
            input_encoding: InputEncoding::Text,
            algorithm: Algorithm::Sha256,
        };
        assert!(batch_digest(&empty, |_, _| {}).is_err());
    }
}
