//! What a plugin declared the last time it loaded, kept in the cache directory
//! next to its compiled code, so that a warm start lists a plugin's tools
//! without loading its code first.
//!
//! A manifest is keyed by a SHA-256 of the component's bytes, this host's
//! version, its WIT contract and the engine's compatibility hash (wasmtime's
//! version and settings): the same bytes loaded by the same host link and
//! declare the same way. The same key names the component's compiled code
//! (see `engine/cache.rs`). Only plugins that loaded cleanly get one. Like
//! every cache file the host reads back, a manifest is sealed (see
//! [`crate::sealed`]): one that is damaged, edited, or another component's
//! is never listed. A manifest that cannot be read, opened, parsed or checked
//! is ignored (the plugin then loads in full, and its manifest is written
//! again): it is only a shortcut.
//! A manifest is held to the load limits when read, and once the plugin's code
//! loads, what the component declares is compared with it (see
//! `Plugin::reconcile`). It is not a security boundary: whoever can write to
//! the cache directory can also replace the compiled code beside it.
//!
//! A plugin that failed to load for a reason of its own (see `lasting` in
//! `plugin/load.rs`) leaves a failure record, keyed by the same hash plus its
//! settings (limits, grants, load limits), so that a restart reports the
//! failure without compiling or running the plugin again.

use crate::hex::hex;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::abi::catalog::Described;
use super::abi::{self, Declaration};
use crate::sealed::{self, Unsealed};
use crate::tool::ToolHints;

/// Bumped when the manifest's format or meaning changes.
const FORMAT: &str = "toolhost-manifest-4";

/// The versions of the contract this host reads declarations through, and
/// their WIT: a host that supports other versions, or reads them otherwise,
/// has other manifests.
fn contracts() -> impl Iterator<Item = &'static str> {
    abi::VERSIONS
        .iter()
        .flat_map(|version| [version.tools_interface(), version.wit()])
}

/// The manifest of one component's bytes, in one cache directory.
#[derive(Debug, Clone)]
pub(crate) struct ManifestKey {
    file: PathBuf,
    /// The hash, in hex.
    hash: String,
    cache_dir: PathBuf,
}

/// Why one component failed to load with one set of settings, remembered.
#[derive(Debug, Clone)]
pub(crate) struct FailureRecord {
    file: PathBuf,
    /// The key it is sealed under (its name).
    key: String,
}

/// The most bytes of a failure record worth reading.
const MAX_RECORD_BYTES: u64 = 64 << 10;

#[derive(Debug, Serialize, Deserialize)]
struct Failure {
    format: String,
    error: String,
}

impl ManifestKey {
    /// The key of `bytes` in `cache_dir`, for an engine whose compiled code
    /// is compatible with `engine` (the same wasmtime version and settings).
    /// Hashes the bytes: call off the async runtime.
    pub(crate) fn new(cache_dir: &Path, engine: &wasmtime::Engine, bytes: &[u8]) -> Self {
        let mut hash = Sha256::new();
        let parts = [FORMAT, env!("CARGO_PKG_VERSION")]
            .into_iter()
            .chain(contracts());
        for part in parts {
            hash.update((part.len() as u64).to_le_bytes());
            hash.update(part.as_bytes());
        }
        crate::engine::hash_compatibility(&mut hash, engine);
        hash.update(bytes);
        let hash = hex(&hash.finalize());
        Self {
            file: cache_dir.join("manifests").join(format!("{hash}.json")),
            hash,
            cache_dir: cache_dir.to_owned(),
        }
    }

    /// The failure record of this component loaded with `settings`.
    pub(crate) fn failure(&self, settings: &str) -> FailureRecord {
        let mut hash = Sha256::new();
        hash.update(self.hash.as_bytes());
        hash.update(settings.as_bytes());
        let key = hex(&hash.finalize());
        FailureRecord {
            file: self.cache_dir.join("failures").join(format!("{key}.json")),
            key,
        }
    }

    /// The component's content key, in hex: what its compiled code is
    /// cached under too.
    pub(crate) fn hash(&self) -> &str {
        &self.hash
    }

    /// The manifest's file.
    pub(crate) fn path(&self) -> &Path {
        &self.file
    }

    /// The stored manifest of `plugin`, if there is an intact one of at most
    /// `cap` bytes; a damaged one is a warning.
    pub(crate) async fn read(&self, plugin: &str, cap: u64) -> Option<Manifest> {
        let text = match read_sealed(&self.file, &self.hash, cap).await {
            Ok(text) => text,
            Err(Unsealed::Missing) => return None,
            Err(e) => {
                tracing::warn!(
                    plugin, manifest = %self.file.display(), error = %e,
                    "{plugin}: ignoring a damaged plugin manifest in the cache ({e}); loading the plugin in full"
                );
                return None;
            }
        };
        match serde_json::from_slice(&text) {
            Ok(manifest) => Some(manifest),
            Err(e) => {
                tracing::warn!(
                    plugin, manifest = %self.file.display(), error = %e,
                    "{plugin}: ignoring a plugin manifest that does not parse ({e}); loading the plugin in full"
                );
                None
            }
        }
    }

    /// Stores `manifest`, sealed and atomically. Failures are logged, not
    /// returned: the manifest is only a shortcut for the next start.
    pub(crate) async fn write(&self, manifest: &Manifest) {
        let written = match serde_json::to_vec(manifest) {
            Ok(text) => write_sealed(&self.file, &self.hash, text).await,
            Err(e) => Err(std::io::Error::other(e)),
        };
        if let Err(e) = written {
            tracing::debug!(manifest = %self.file.display(), error = %e, "cannot store a plugin manifest");
        }
    }
}

impl FailureRecord {
    /// The record's file.
    pub(crate) fn path(&self) -> &Path {
        &self.file
    }

    /// Why the component failed to load, if that is remembered.
    /// A damaged record is a warning naming `plugin`.
    pub(crate) async fn read(&self, plugin: &str) -> Option<String> {
        let damaged = |reason: &dyn std::fmt::Display| {
            tracing::warn!(
                plugin, record = %self.file.display(), %reason,
                "{plugin}: ignoring a damaged failure record in the cache ({reason}); loading the plugin again"
            );
            None
        };
        let text = match read_sealed(&self.file, &self.key, MAX_RECORD_BYTES).await {
            Ok(text) => text,
            Err(Unsealed::Missing) => return None,
            Err(e) => return damaged(&e),
        };
        match serde_json::from_slice::<Failure>(&text) {
            Ok(failure) if failure.format == FORMAT => Some(failure.error),
            Ok(_) => damaged(&"it is of another format"),
            Err(e) => damaged(&e),
        }
    }

    /// Remembers why the component failed to load (without the path it had
    /// then). Failures are logged, not returned.
    pub(crate) async fn write(&self, error: &crate::LoadError) {
        let prefix = format!("{}: ", error.path().display());
        let text = error.to_string();
        let mut reason = text.strip_prefix(&prefix).unwrap_or(&text).to_owned();
        if reason.len() > 4096 {
            let mut cut = 4096;
            while !reason.is_char_boundary(cut) {
                cut -= 1;
            }
            reason.truncate(cut);
            reason.push_str(" [cut]");
        }
        let failure = Failure {
            format: FORMAT.to_owned(),
            error: reason,
        };
        let written = match serde_json::to_vec(&failure) {
            Ok(text) => write_sealed(&self.file, &self.key, text).await,
            Err(e) => Err(std::io::Error::other(e)),
        };
        if let Err(e) = written {
            tracing::debug!(record = %self.file.display(), error = %e, "cannot store a failure record");
        }
    }
}

/// Reads the content of a sealed cache file (see [`crate::sealed`]) of at
/// most `cap` bytes, off the async runtime.
async fn read_sealed(file: &Path, key: &str, cap: u64) -> Result<sealed::Content, Unsealed> {
    let (file, key) = (file.to_owned(), key.to_owned());
    tokio::task::spawn_blocking(move || sealed::read(&file, &key, cap))
        .await
        .unwrap_or_else(|e| Err(Unsealed::Io(std::io::Error::other(e))))
}

/// Writes a sealed cache file (see [`crate::sealed`]), off the async runtime.
async fn write_sealed(file: &Path, key: &str, content: Vec<u8>) -> std::io::Result<()> {
    let (file, key) = (file.to_owned(), key.to_owned());
    tokio::task::spawn_blocking(move || sealed::write(&file, &key, &content))
        .await
        .map_err(std::io::Error::other)?
}

/// What a plugin declared, and what it imports.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Manifest {
    /// Every interface the component imports.
    pub(crate) imports: Vec<String>,
    /// Its declarations, as the guest returned them.
    pub(crate) tools: Vec<Declared>,
    /// What it offers besides tools, as the guest returned it.
    #[serde(default)]
    pub(crate) catalog: Described,
}

/// One declaration, as the guest returned it (checked again when read).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Declared {
    name: String,
    description: String,
    long_running: bool,
    streaming: bool,
    input_schema: String,
    output_schema: Option<String>,
    #[serde(default)]
    hints: ToolHints,
}

impl Manifest {
    /// The manifest of a plugin that just loaded.
    pub(crate) fn new(
        imports: &[String],
        declarations: &[Declaration],
        catalog: &Described,
    ) -> Self {
        Self {
            catalog: catalog.clone(),
            imports: imports.to_vec(),
            tools: declarations
                .iter()
                .map(|d| Declared {
                    name: d.name.clone(),
                    description: d.description.clone(),
                    long_running: d.long_running,
                    streaming: d.streaming,
                    input_schema: d.input_schema.clone(),
                    output_schema: d.output_schema.clone(),
                    hints: d.hints.clone(),
                })
                .collect(),
        }
    }

    /// The declarations and the catalog, to be checked as if the guest had
    /// just returned them.
    pub(crate) fn declarations(self) -> (Vec<Declaration>, Described) {
        let tools = self
            .tools
            .into_iter()
            .map(|d| Declaration {
                name: d.name,
                description: d.description,
                long_running: d.long_running,
                input_schema: d.input_schema,
                output_schema: d.output_schema,
                streaming: d.streaming,
                hints: d.hints,
            })
            .collect();
        (tools, self.catalog)
    }
}
