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

mod answer;
mod artifact;
mod auth;
mod client;
mod reference;
mod signature;
mod sources;

pub use answer::{MAX_TAGS_SHOWN, Tags};
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
    /// The registry could not be reached, or answered with an error other
    /// than the ones the variants below name (a server error, too many
    /// requests, …).
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
    /// The repository has no such tag.
    #[error(
        "{action} {reference}: no tag {tag} in {repository}{}; the registry said: {said}",
        tags_shown(tags.as_deref())
    )]
    NoTag {
        /// What was being done: `pulling`, `resolving`.
        action: &'static str,
        /// The reference.
        reference: String,
        /// The repository, like `tools/text`.
        repository: String,
        /// The tag asked for.
        tag: String,
        /// The repository's tags, or `None` when they could not be listed
        /// (boxed: the error stays small).
        tags: Option<Box<Tags>>,
        /// The registry's own words.
        said: String,
    },
    /// The repository has no manifest of the digest a reference is pinned to.
    #[error(
        "{action} {reference}: no manifest {digest} in {repository}; the registry said: {said}"
    )]
    NoManifest {
        /// What was being done.
        action: &'static str,
        /// The reference.
        reference: String,
        /// The repository.
        repository: String,
        /// The digest asked for.
        digest: String,
        /// The registry's own words.
        said: String,
    },
    /// The registry has no such repository.
    #[error(
        "{action} {reference}: no repository {repository} in {registry}; the registry said: \
         {said}"
    )]
    NoRepository {
        /// What was being done.
        action: &'static str,
        /// The reference.
        reference: String,
        /// The registry (`host:port`).
        registry: String,
        /// The repository.
        repository: String,
        /// The registry's own words.
        said: String,
    },
    /// The registry lacks a blob (the component or its config) that the
    /// manifest names: its storage lost it, or a push did not finish.
    #[error(
        "{action} {reference}: the registry lacks {}that its manifest names (lost from its \
         storage, or pushed incompletely: push the component again); the registry said: {said}",
        blob.as_ref().map(|b| format!("the blob {b} ")).unwrap_or_else(|| "a blob ".to_owned())
    )]
    NoBlob {
        /// What was being done.
        action: &'static str,
        /// The reference.
        reference: String,
        /// The blob, when the registry's answer names it.
        blob: Option<Digest>,
        /// The registry's own words.
        said: String,
    },
    /// The registry wants credentials and none were given.
    #[error(
        "{action} {reference}: {registry} wants credentials and none were given (give a token \
         with `--token-file FILE`, `token_file` in `[[sources]]` or `$TOOLHOST_REGISTRY_TOKEN`, \
         or log in with `docker login {registry}`: docs/oci.md, Authentication); the registry \
         said: {said}"
    )]
    NoCredentials {
        /// What was being done.
        action: &'static str,
        /// The reference.
        reference: String,
        /// The registry (`host:port`).
        registry: String,
        /// The registry's own words.
        said: String,
    },
    /// The registry refused the credentials given (or denied them this
    /// repository).
    #[error(
        "{action} {reference}: {registry} refused the credentials given for {repository} \
         (check the token, or the `docker login` of {registry}, and that it may {verb} \
         {repository}: docs/oci.md, Authentication); the registry said: {said}",
        verb = if action.starts_with("push") { "push to" } else { "pull" }
    )]
    CredentialsRefused {
        /// What was being done.
        action: &'static str,
        /// The reference.
        reference: String,
        /// The registry (`host:port`).
        registry: String,
        /// The repository.
        repository: String,
        /// The registry's own words.
        said: String,
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

/// ` (tags: 1.0, 1.1, …)`, ` (it has no tags)`, or nothing when the tags
/// could not be listed.
fn tags_shown(tags: Option<&Tags>) -> String {
    match tags {
        None => String::new(),
        Some(tags) if tags.shown.is_empty() => " (it has no tags)".to_owned(),
        Some(tags) => format!(
            " (tags: {}{})",
            tags.shown.join(", "),
            if tags.more { ", …" } else { "" }
        ),
    }
}

impl OciError {
    /// Whether the registry could not be reached or answered with an error
    /// (not found, credentials, a server error): worth asking again later,
    /// unlike what it served being wrong (a digest mismatch, not a
    /// component), which stays wrong.
    pub fn is_registry(&self) -> bool {
        matches!(
            self,
            Self::Registry { .. }
                | Self::NoTag { .. }
                | Self::NoManifest { .. }
                | Self::NoRepository { .. }
                | Self::NoBlob { .. }
                | Self::NoCredentials { .. }
                | Self::CredentialsRefused { .. }
        )
    }

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
    fn registry_answers_say_what_is_missing_or_refused() {
        let no_tag = |shown: Option<&[&str]>, more| OciError::NoTag {
            action: "pulling",
            reference: "r.io/tools/text:9.9".into(),
            repository: "tools/text".into(),
            tag: "9.9".into(),
            tags: shown.map(|shown| {
                Box::new(Tags {
                    shown: shown.iter().map(|t| (*t).to_owned()).collect(),
                    more,
                })
            }),
            said: "manifest unknown".into(),
        };
        let tags = Some(&["1.0", "1.1"][..]);
        assert_eq!(
            no_tag(tags, true).to_string(),
            "pulling r.io/tools/text:9.9: no tag 9.9 in tools/text (tags: 1.0, 1.1, …); the \
             registry said: manifest unknown"
        );
        assert!(
            no_tag(tags, false)
                .to_string()
                .contains("(tags: 1.0, 1.1);")
        );
        assert!(
            no_tag(Some(&[]), false)
                .to_string()
                .contains("(it has no tags);")
        );
        assert!(
            no_tag(None, false)
                .to_string()
                .contains("in tools/text; the registry")
        );
        // Credentials that were given and refused (a registry that checks
        // them is not among the test registries: distribution's `silly`
        // controller takes any).
        let refused = OciError::CredentialsRefused {
            action: "pushing to",
            reference: "r.io/tools/text:1.0".into(),
            registry: "r.io".into(),
            repository: "tools/text".into(),
            said: "requested access to the resource is denied".into(),
        };
        let text = refused.to_string();
        assert!(
            text.contains("r.io refused the credentials given for tools/text"),
            "{text}"
        );
        assert!(text.contains("that it may push to tools/text"), "{text}");
        assert!(text.ends_with("the registry said: requested access to the resource is denied"));
        assert!(refused.is_registry());
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
