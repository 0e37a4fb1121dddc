//! Plugins in OCI registries (feature `oci`): push a component, pull one
//! back, verified.
//!
//! The format is the CNCF "Wasm OCI artifact" layout that `wkg oci push`
//! writes, so components pushed by either tool pull with the other: an image
//! manifest whose config has the media type [`WASM_CONFIG_MEDIA_TYPE`] (JSON:
//! `created`, `architecture: "wasm"`, `os: "wasip2"`, `layerDigests` and the
//! component's top-level `imports`/`exports`) and exactly one layer of the
//! media type [`WASM_LAYER_MEDIA_TYPE`], the component's bytes.
//!
//! [`Client::pull`] trusts nothing the registry says:
//!
//! - the manifest's bytes hash to the digest a reference is pinned to;
//! - the manifest is the Wasm artifact layout (config media type, exactly one
//!   `application/wasm` layer);
//! - the layer is no larger than [`ClientOptions::max_bytes`] (256 MiB by
//!   default), both as declared and as received: a hostile registry cannot
//!   make the host read more;
//! - the layer's bytes hash (SHA-256, computed here) to the layer
//!   descriptor's digest;
//! - the bytes are a WebAssembly component: not a core module, not junk.
//!
//! A sidecar policy (`NAME.policy.toml`) is never taken from a registry:
//! grants stay the operator's.
//!
//! [`Sources`] serves components straight from registries (`[[sources]]` in
//! `toolhost.toml`), following tags as they move.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use sha2::{Digest as _, Sha256};

mod artifact;
mod auth;
mod client;
mod reference;
mod signature;
mod sources;

pub use artifact::{ComponentError, ComponentNames, check_component};
pub use auth::{Auth, docker_config_auth, registry_auth};
pub use client::{Client, ClientOptions, Pulled, Pushed};
pub use reference::{Reference, ReferenceError};
pub use signature::{
    PublicKeys, SIGNATURE_ANNOTATION, SIGNATURE_LAYER_MEDIA_TYPE, Signed, SigningKey, Verified,
    generate_key_pair,
};
pub use sources::{DEFAULT_POLL, Source, SourceError, SourceStatus, Sources};

/// The media type of the config blob of a Wasm OCI artifact.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";

/// The media type of the one layer of a Wasm OCI artifact: the component.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";

/// The media type of the artifact's manifest (an OCI image manifest).
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";

/// The largest layer [`Client::pull`] takes by default: 256 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 256 << 20;

/// A SHA-256 content digest, `sha256:` and 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest {
    hex: String,
}

impl Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self {
            hex: crate::hex::hex(&Sha256::digest(bytes)),
        }
    }

    /// The 64 hex digits, without `sha256:`.
    pub fn hex(&self) -> &str {
        &self.hex
    }

    fn from_hasher(hasher: Sha256) -> Self {
        Self {
            hex: crate::hex::hex(&hasher.finalize()),
        }
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.hex)
    }
}

/// The text is not `sha256:` and 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a digest (sha256: and 64 lowercase hex digits)")]
pub struct BadDigest(String);

impl FromStr for Digest {
    type Err = BadDigest;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.strip_prefix("sha256:") {
            Some(hex)
                if hex.len() == 64
                    && hex
                        .bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) =>
            {
                Ok(Self {
                    hex: hex.to_owned(),
                })
            }
            _ => Err(BadDigest(text.to_owned())),
        }
    }
}

/// What went wrong pushing or pulling a component.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OciError {
    /// The reference does not parse.
    #[error(transparent)]
    Reference(#[from] ReferenceError),
    /// Plain HTTP was asked for a registry that is neither on loopback nor
    /// listed in `[oci] insecure_registries`.
    #[error(
        "plain HTTP (--insecure) to `{registry}` is refused: only loopback registries \
         (127.0.0.0/8, ::1, localhost) and those listed in `[oci] insecure_registries` may \
         be reached without TLS"
    )]
    InsecureRefused {
        /// The registry (`host:port`).
        registry: String,
    },
    /// The registry could not be reached, refused the request, or answered
    /// with an error (not found, unauthorized, …).
    #[error("{action} {reference}: {message}")]
    Registry {
        /// What was being done: `pushing to`, `pulling`.
        action: &'static str,
        /// The reference.
        reference: String,
        /// The client's error and its causes, on one line (cut at 4 KiB: a
        /// registry chooses part of it).
        message: String,
    },
    /// What was received does not hash to the digest it should have.
    #[error("{what} of {reference} has digest {actual}, expected {expected}: refused")]
    DigestMismatch {
        /// `the manifest` or `the layer`.
        what: &'static str,
        /// The reference.
        reference: String,
        /// The digest it should have had (the pin, or the descriptor's).
        expected: String,
        /// The digest of what was received.
        actual: String,
    },
    /// The manifest is not a Wasm OCI artifact.
    #[error("{reference} is not a Wasm component artifact: {reason}")]
    NotWasmArtifact {
        /// The reference.
        reference: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The layer is larger than allowed.
    #[error(
        "the component of {reference} is {size} bytes, more than the {max} allowed \
         (ClientOptions::max_bytes; `toolhost pull --max-bytes`): refused"
    )]
    TooLarge {
        /// The reference.
        reference: String,
        /// Its size, as declared or as far as it was read.
        size: u64,
        /// The limit.
        max: u64,
    },
    /// The bytes (pushed or pulled) are not a WebAssembly component.
    #[error("{what}: {source}")]
    NotComponent {
        /// The file or reference.
        what: String,
        /// Why.
        #[source]
        source: ComponentError,
    },
    /// A bearer token file cannot be read, or is empty.
    #[error("the token file {}: {reason}", path.display())]
    TokenFile {
        /// The file.
        path: std::path::PathBuf,
        /// Why it could not be used.
        reason: String,
    },
    /// The Docker credentials file cannot be read or parsed.
    #[error("Docker credentials {path}: {reason}")]
    DockerConfig {
        /// The file.
        path: std::path::PathBuf,
        /// Why it could not be used.
        reason: String,
    },
    /// The component has no signature in the registry (none of its digest).
    #[error(
        "{reference} is not signed: the registry has no cosign signature of this digest \
         (sign it with `toolhost sign`): refused"
    )]
    Unsigned {
        /// The reference, pinned to the digest.
        reference: String,
    },
    /// The component's signatures were made with none of the keys.
    #[error("{reference} has {signatures} signature(s), none made with the key(s) {keys}: refused")]
    BadSignature {
        /// The reference, pinned to the digest.
        reference: String,
        /// How many signatures of the digest there are.
        signatures: usize,
        /// The public key files, comma-separated.
        keys: String,
    },
    /// A key file cannot be read or used.
    #[error("the key {path}: {reason}")]
    Key {
        /// The file (empty when the key was not read from a file).
        path: std::path::PathBuf,
        /// Why.
        reason: String,
    },
    /// The HTTP client could not be built (TLS set-up).
    #[error("cannot set up the registry client: {0}")]
    Client(String),
}

impl OciError {
    /// A registry error, with `error`'s causes on one line.
    fn registry(
        action: &'static str,
        reference: &Reference,
        error: &(dyn std::error::Error + 'static),
    ) -> Self {
        let mut message = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            let text = cause.to_string();
            // reqwest and hyper repeat their cause in their own message.
            if !message.contains(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
            source = cause.source();
        }
        Self::Registry {
            action,
            reference: reference.to_string(),
            message: crate::error::cut(message, crate::error::MAX_ERROR_MESSAGE_BYTES),
        }
    }
}

/// Whether `registry` (`host`, `host:port`) may be reached over plain HTTP:
/// it is on loopback (`localhost`, 127.0.0.0/8, `::1`) or listed in
/// `allowed` (`[oci] insecure_registries`, as `host:port` or `host`).
pub fn insecure_allowed(registry: &str, allowed: &[String]) -> bool {
    let host = reference::host_of(registry);
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    loopback
        || allowed
            .iter()
            .any(|a| a.eq_ignore_ascii_case(registry) || a.eq_ignore_ascii_case(host))
}

/// Writes `bytes` to `file` in `dir` whole or not at all: a hidden
/// temporary file in `dir` (`.NAME.….partial`, not `*.wasm`, so a plugins
/// directory's watcher ignores it), synced, then renamed over `file`. A
/// reader sees the old file or the new one, never part of it; `dir` must
/// exist.
///
/// # Errors
/// The I/O error; the temporary file is removed.
pub fn write_atomically(dir: &Path, file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    crate::sealed::write_atomically_in(dir, file, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_parse_print_and_hash() {
        let d = Digest::of(b"");
        assert_eq!(
            d.to_string(),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(d.to_string().parse::<Digest>().unwrap(), d);
        assert!("sha256:E3B0".parse::<Digest>().is_err());
        assert!("sha512:00".parse::<Digest>().is_err());
    }

    #[test]
    fn plain_http_only_to_loopback_or_listed_registries() {
        let none: &[String] = &[];
        for ok in [
            "localhost:5000",
            "127.0.0.1:5000",
            "127.8.0.1",
            "[::1]:5000",
        ] {
            assert!(insecure_allowed(ok, none), "{ok}");
        }
        for refused in [
            "registry.internal:5000",
            "10.0.0.1:5000",
            "localhost.evil.com",
        ] {
            assert!(!insecure_allowed(refused, none), "{refused}");
        }
        let listed = ["registry.internal:5000".to_owned()];
        assert!(insecure_allowed("registry.internal:5000", &listed));
        assert!(!insecure_allowed("registry.internal:6000", &listed));
    }
}
