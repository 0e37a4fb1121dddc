//! The cache of compiled code: `<cache>/compiled/<key>.cwasm`, one file per
//! component and compiler (baseline or optimized), each compressed and
//! sealed (see [`crate::sealed`]).
//!
//! Compiled code is native code the host maps and runs unchecked, so a file
//! is used only when its seal matches: a damaged entry (a bad block, a cut or
//! zeroed file, another entry's file under this name) is a warning naming the
//! plugin and the file, is removed, and the plugin is compiled again. The key
//! covers the component's content hash and the compiler's compatibility hash
//! (wasmtime's version and settings), so code of another engine is never
//! looked up. The directory is trimmed to [`TOTAL_LIMIT`], least recently
//! used entries first.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sha2::{Digest as _, Sha256};
use wasmtime::component::Component;

use super::EngineError;
use crate::hex::hex;
use crate::sealed;

/// Bumped when the entries' format or meaning changes.
const FORMAT: &str = "toolhost-code-1";
/// The most bytes the compiled entries may take together; past it, the least
/// recently used are removed until they take [`TRIM_TO`] of it.
pub(crate) const TOTAL_LIMIT: u64 = 512 << 20;
/// What a trim leaves, as a fraction of [`TOTAL_LIMIT`].
const TRIM_TO: f64 = 0.75;
/// The largest entry worth reading (compressed): no component's code comes near.
const MAX_ENTRY: u64 = 2 << 30;
/// A temporary file older than this was left by a writer that died.
const STALE_PARTIAL: Duration = Duration::from_secs(3600);
/// The zstd level entries are compressed with (zstd's default: fast, and
/// about a third of the size).
const LEVEL: i32 = 3;
/// The directories an older toolhost kept compiled code in (wasmtime's cache,
/// and markers of its optimized code): removed, as nothing reads them now.
const LEGACY: [&str; 2] = ["code", "optimized"];

/// The compiled-code cache of one cache directory.
#[derive(Debug)]
pub(crate) struct CodeCache {
    dir: PathBuf,
}

/// One component's code from one compiler: where it is cached, under which key.
#[derive(Debug, Clone)]
pub(crate) struct CodeEntry {
    file: PathBuf,
    key: String,
}

impl CodeCache {
    /// The cache in `<cache_dir>/compiled`, created if needed.
    pub(super) fn open(cache_dir: &Path) -> Result<Self, EngineError> {
        let failed = |e: &dyn std::fmt::Display| EngineError::Cache {
            dir: cache_dir.to_owned(),
            reason: e.to_string(),
        };
        let dir = std::path::absolute(cache_dir.join("compiled")).map_err(|e| failed(&e))?;
        std::fs::create_dir_all(&dir).map_err(|e| failed(&e))?;
        for legacy in LEGACY.map(|name| cache_dir.join(name)) {
            if legacy.is_dir() {
                match std::fs::remove_dir_all(&legacy) {
                    Ok(()) => tracing::info!(
                        dir = %legacy.display(),
                        "removed compiled code an older toolhost cached (nothing reads it now)"
                    ),
                    Err(e) => {
                        tracing::debug!(dir = %legacy.display(), error = %e, "cannot remove an older toolhost's compiled code")
                    }
                }
            }
        }
        Ok(Self { dir })
    }

    /// The entry of the component whose content key is `component` (see
    /// `ManifestKey`), compiled by `wasm`.
    pub(crate) fn entry(&self, wasm: &wasmtime::Engine, component: &str) -> CodeEntry {
        let mut hash = Sha256::new();
        for part in [FORMAT, component] {
            hash.update((part.len() as u64).to_le_bytes());
            hash.update(part.as_bytes());
        }
        hash_compatibility(&mut hash, wasm);
        let key = hex(&hash.finalize());
        CodeEntry {
            file: self.dir.join(format!("{key}.cwasm")),
            key,
        }
    }

    /// The cached code of `entry` for `wasm`, if its file is there and
    /// intact. A damaged file is a warning naming `plugin`, and is removed.
    /// Blocking: call off the async runtime.
    pub(crate) fn load(
        &self,
        wasm: &wasmtime::Engine,
        entry: &CodeEntry,
        plugin: &str,
    ) -> Option<Component> {
        let damaged = |reason: &dyn std::fmt::Display| {
            tracing::warn!(
                plugin, file = %entry.file.display(), %reason,
                "{plugin}: ignoring damaged compiled code in the cache ({reason}); removed, compiling the plugin again"
            );
            self.remove(entry);
            None
        };
        let compressed = match sealed::read(&entry.file, &entry.key, MAX_ENTRY) {
            Ok(compressed) => compressed,
            Err(e) if e.is_damage() => return damaged(&e),
            Err(_) => return None,
        };
        let code = match zstd::decode_all(&compressed[..]) {
            Ok(code) => code,
            Err(e) => return damaged(&format_args!("cannot decompress it: {e}")),
        };
        drop(compressed);
        match deserialize(wasm, &code) {
            Ok(component) => {
                touch(&entry.file);
                Some(component)
            }
            Err(e) => damaged(&format_args!("wasmtime refuses it: {e:#}")),
        }
    }

    /// Stores the code of `component` as `entry`, then trims the cache.
    /// Failures are logged, not returned: the cache is only a shortcut.
    /// Blocking: call off the async runtime.
    pub(crate) fn store(&self, entry: &CodeEntry, component: &Component) {
        let stored = component
            .serialize()
            .map_err(|e| std::io::Error::other(format!("{e:#}")))
            .and_then(|code| zstd::encode_all(code.as_slice(), LEVEL))
            .and_then(|compressed| sealed::write(&entry.file, &entry.key, &compressed));
        match stored {
            Ok(()) => self.trim(&entry.file),
            Err(e) => {
                tracing::debug!(file = %entry.file.display(), error = %e, "cannot cache compiled code");
            }
        }
    }

    /// Removes `entry`'s file, if there is one.
    pub(crate) fn remove(&self, entry: &CodeEntry) {
        match std::fs::remove_file(&entry.file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::debug!(file = %entry.file.display(), error = %e, "cannot remove a cache entry")
            }
        }
    }

    /// Keeps the entries within [`TOTAL_LIMIT`]: past it, removes the least
    /// recently used (but `keep`, just written) until they take [`TRIM_TO`]
    /// of it; also removes temporary files a writer that died left.
    fn trim(&self, keep: &Path) {
        let Ok(listing) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        let mut entries = Vec::new();
        let mut total = 0u64;
        for found in listing.flatten() {
            let (path, Ok(meta)) = (found.path(), found.metadata()) else {
                continue;
            };
            let used = meta.modified().unwrap_or(now);
            let partial = path.extension().is_some_and(|e| e == "partial");
            if partial {
                if now.duration_since(used).unwrap_or_default() > STALE_PARTIAL {
                    let _ = std::fs::remove_file(&path);
                }
                continue;
            }
            total = total.saturating_add(meta.len());
            if path != keep {
                entries.push((used, meta.len(), path));
            }
        }
        if total <= TOTAL_LIMIT {
            return;
        }
        entries.sort_by_key(|(used, _, _)| *used);
        let target = (TOTAL_LIMIT as f64 * TRIM_TO) as u64;
        for (_, len, path) in entries {
            if total <= target {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                total = total.saturating_sub(len);
                tracing::debug!(file = %path.display(), "trimmed the compiled-code cache");
            }
        }
    }
}

/// Feeds `wasm`'s compatibility hash (wasmtime's version and the settings
/// compiled code depends on) into `hash`: what keys compiled code and what
/// was read through it.
pub(crate) fn hash_compatibility(hash: &mut Sha256, wasm: &wasmtime::Engine) {
    /// Feeds what `Hash` writes into the SHA-256.
    struct Feed<'a>(&'a mut Sha256);
    impl std::hash::Hasher for Feed<'_> {
        fn write(&mut self, bytes: &[u8]) {
            self.0.update(bytes);
        }
        fn finish(&self) -> u64 {
            0
        }
    }
    std::hash::Hash::hash(&wasm.precompile_compatibility_hash(), &mut Feed(hash));
}

/// Marks an entry as used now, so a trim keeps it longest (best effort).
fn touch(file: &Path) {
    if let Ok(opened) = std::fs::File::options().append(true).open(file) {
        let _ = opened.set_modified(SystemTime::now());
    }
}

/// Compiled code, read back.
#[allow(
    unsafe_code,
    reason = "wasmtime maps compiled code as it is: the one place the host trusts bytes it reads"
)]
fn deserialize(wasm: &wasmtime::Engine, code: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: `code` is what `Component::serialize` wrote for an engine of
    // the same compatibility hash (the entry's key covers it), read back from
    // a file whose seal matched, so not damaged since it was written. The
    // cache directory is trusted like the binary (docs/cli.md): the seal
    // guards against accidents, not against whoever may write there.
    unsafe { Component::deserialize(wasm, code) }
}
