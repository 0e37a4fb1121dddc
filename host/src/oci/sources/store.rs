//! Where pulled components live: `<cache>/oci/sha256-<manifest hex>.wasm`,
//! beside a record of the component's own digest
//! (`sha256-<manifest hex>.layer`) that every use checks the file against.
//! The files are content-addressed and written whole (a temporary file, then
//! a rename), so processes sharing a cache directory can share them. The
//! records (a component's digest, the digest a tag last resolved to) are
//! sealed under their names (see [`crate::sealed`]): a damaged record, or
//! another component's under this name, is not used. Records an older
//! toolhost wrote (a bare digest) are still read.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::SourceError;
use crate::oci::{Digest, Pulled, Reference, write_atomically};
use crate::sealed::{self, Unsealed};

/// The directory of pulled components.
#[derive(Debug, Clone)]
pub(super) struct Store {
    dir: PathBuf,
    /// Without a cache directory: a directory of this process alone,
    /// removed when the last handle goes.
    _private: Option<Arc<PrivateDir>>,
}

impl Store {
    /// `<cache_dir>/oci`, or without a cache directory a private temporary
    /// directory (removed when the store is dropped).
    pub(super) fn open(cache_dir: Option<&Path>) -> Result<Self, SourceError> {
        match cache_dir {
            Some(cache) => {
                let dir = cache.join("oci");
                std::fs::create_dir_all(dir.join("refs")).map_err(|error| SourceError::Store {
                    path: dir.clone(),
                    error,
                })?;
                Ok(Self {
                    dir,
                    _private: None,
                })
            }
            None => {
                let private = PrivateDir::create()?;
                Ok(Self {
                    dir: private.0.clone(),
                    _private: Some(Arc::new(private)),
                })
            }
        }
    }

    /// The directory.
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    fn wasm(&self, manifest: &Digest) -> PathBuf {
        self.dir.join(format!("sha256-{}.wasm", manifest.hex()))
    }

    fn record(&self, manifest: &Digest) -> PathBuf {
        self.dir.join(format!("sha256-{}.layer", manifest.hex()))
    }

    fn remembered_path(&self, reference: &Reference) -> PathBuf {
        let key = Digest::of(reference.to_string().as_bytes());
        self.dir.join("refs").join(key.hex())
    }

    /// The file of the component `manifest` names, if it is on disk and
    /// hashes to the digest recorded when it was pulled (and verified).
    pub(super) async fn verified(&self, manifest: &Digest) -> Option<PathBuf> {
        let (file, record) = (self.wasm(manifest), self.record(manifest));
        tokio::task::spawn_blocking(move || {
            let layer = read_record(&record)?;
            let bytes = std::fs::read(&file).ok()?;
            if Digest::of(&bytes) == layer {
                Some(file)
            } else {
                tracing::warn!(file = %file.display(), "a pulled component changed on disk; pulling it again");
                None
            }
        })
        .await
        .ok()
        .flatten()
    }

    /// Writes a pulled (verified) component, and then its record.
    pub(super) async fn put(&self, pulled: &Pulled) -> Result<PathBuf, SourceError> {
        let (dir, file, record) = (
            self.dir.clone(),
            self.wasm(&pulled.manifest_digest),
            self.record(&pulled.manifest_digest),
        );
        let (bytes, layer) = (pulled.bytes.clone(), pulled.layer_digest.to_string());
        let written = tokio::task::spawn_blocking(move || {
            write_atomically(&dir, &file, &bytes)?;
            write_record(&record, &layer)?;
            Ok::<_, std::io::Error>(file)
        })
        .await;
        match written {
            Ok(Ok(file)) => Ok(file),
            Ok(Err(error)) => Err(SourceError::Store {
                path: self.dir.clone(),
                error,
            }),
            Err(join) => Err(SourceError::Store {
                path: self.dir.clone(),
                error: std::io::Error::other(join.to_string()),
            }),
        }
    }

    /// Records that `reference` (a tag) last resolved to `manifest`.
    /// The record that the signature of `manifest` verified with the keys
    /// whose fingerprint is `keys`.
    fn signed_record(&self, manifest: &Digest, keys: &Digest) -> PathBuf {
        self.dir
            .join(format!("sha256-{}.signed-{}", manifest.hex(), keys.hex()))
    }

    /// Whether the signature of `manifest` was verified with the keys of
    /// fingerprint `keys` (by this process or an earlier one): what lets a
    /// version be served while the registry cannot be asked.
    pub(super) async fn signed(&self, manifest: &Digest, keys: &Digest) -> bool {
        tokio::fs::try_exists(self.signed_record(manifest, keys))
            .await
            .unwrap_or(false)
    }

    /// Records that the signature of `manifest` verified with the keys of
    /// fingerprint `keys` (best effort: without the record, only serving
    /// while the registry is down is lost).
    pub(super) async fn record_signed(&self, manifest: &Digest, keys: &Digest) {
        let (dir, path) = (self.dir.clone(), self.signed_record(manifest, keys));
        let _ = tokio::task::spawn_blocking(move || {
            if let Err(error) = write_atomically(&dir, &path, b"") {
                tracing::debug!(%error, path = %path.display(), "cannot record a verified signature");
            }
        })
        .await;
    }

    pub(super) async fn remember(&self, reference: &Reference, manifest: &Digest) {
        let path = self.remembered_path(reference);
        let text = manifest.to_string();
        let _ = tokio::task::spawn_blocking(move || {
            if let Err(error) = write_record(&path, &text) {
                tracing::debug!(%error, path = %path.display(), "cannot record a tag's digest");
            }
        })
        .await;
    }

    /// The digest `reference` last resolved to here, if its component is
    /// still on disk and intact.
    pub(super) async fn remembered(&self, reference: &Reference) -> Option<Digest> {
        let path = self.remembered_path(reference);
        let digest = tokio::task::spawn_blocking(move || read_record(&path))
            .await
            .ok()??;
        self.verified(&digest).await.map(|_| digest)
    }
}

/// The key a record is sealed under: its file's name.
fn record_key(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The most bytes a record (one digest) takes, seal included.
const MAX_RECORD: u64 = 1 << 10;

/// Writes a record of one digest, sealed under its name. Blocking.
fn write_record(path: &Path, digest: &str) -> std::io::Result<()> {
    sealed::write(path, &record_key(path), format!("{digest}\n").as_bytes())
}

/// The digest a record holds, if it is intact and sealed under its name (or
/// a bare digest, as an older toolhost wrote). A damaged one is a warning.
/// Blocking.
fn read_record(path: &Path) -> Option<Digest> {
    let text = match sealed::read(path, &record_key(path), MAX_RECORD) {
        Ok(text) => text.to_vec(),
        Err(Unsealed::Missing) => return None,
        Err(Unsealed::Damaged(reason)) => match std::fs::read_to_string(path) {
            Ok(legacy) if !sealed::is_sealed(legacy.as_bytes()) => legacy.into_bytes(),
            _ => {
                tracing::warn!(record = %path.display(), %reason, "ignoring a damaged record of a pulled component ({reason})");
                return None;
            }
        },
        Err(e) => {
            tracing::warn!(record = %path.display(), error = %e, "ignoring an unreadable record of a pulled component");
            return None;
        }
    };
    let parsed = std::str::from_utf8(&text)
        .ok()
        .and_then(|t| t.trim().parse().ok());
    if parsed.is_none() {
        tracing::warn!(record = %path.display(), "ignoring a record of a pulled component that holds no digest");
    }
    parsed
}

/// A directory only this process uses (mode 0700), removed when dropped.
#[derive(Debug)]
struct PrivateDir(PathBuf);

impl PrivateDir {
    fn create() -> Result<Self, SourceError> {
        let base = std::env::temp_dir();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let mut last = None;
        for attempt in 0..100u32 {
            let dir = base.join(format!(
                "toolhost-oci-{}-{nanos}-{attempt}",
                std::process::id()
            ));
            let mut builder = std::fs::DirBuilder::new();
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            // `create`, not `create_all`: a directory someone else made is
            // never used.
            match builder.create(&dir) {
                Ok(()) => {
                    if let Err(error) = std::fs::create_dir(dir.join("refs")) {
                        let _ = std::fs::remove_dir_all(&dir);
                        return Err(SourceError::Store { path: dir, error });
                    }
                    return Ok(Self(dir));
                }
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                    last = Some(error);
                }
                Err(error) => return Err(SourceError::Store { path: dir, error }),
            }
        }
        Err(SourceError::Store {
            path: base,
            error: last.unwrap_or_else(|| std::io::Error::other("no free name")),
        })
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_file_is_used_only_while_it_hashes_to_its_record() {
        let store = Store::open(None).unwrap();
        let manifest = Digest::of(b"manifest");
        assert_eq!(store.verified(&manifest).await, None);
        let bytes = b"\0asm component".to_vec();
        let pulled = Pulled {
            reference: "localhost:5000/echo:1".parse().unwrap(),
            manifest_digest: manifest.clone(),
            layer_digest: Digest::of(&bytes),
            bytes,
        };
        let file = store.put(&pulled).await.unwrap();
        assert_eq!(store.verified(&manifest).await, Some(file.clone()));
        let reference: Reference = "localhost:5000/echo:1".parse().unwrap();
        store.remember(&reference, &manifest).await;
        assert_eq!(store.remembered(&reference).await, Some(manifest.clone()));
        // Another component's intact record under this one's name: not used.
        let other = Digest::of(b"other manifest");
        let pulled_other = Pulled {
            manifest_digest: other.clone(),
            ..pulled
        };
        store.put(&pulled_other).await.unwrap();
        let record = |d: &Digest| store.dir().join(format!("sha256-{}.layer", d.hex()));
        let (mine, theirs) = (
            std::fs::read(record(&manifest)).unwrap(),
            std::fs::read(record(&other)).unwrap(),
        );
        std::fs::write(record(&manifest), &theirs).unwrap();
        assert_eq!(store.verified(&manifest).await, None);
        std::fs::write(record(&manifest), &mine).unwrap();
        // A record an older toolhost wrote (a bare digest) is still read.
        std::fs::write(
            record(&manifest),
            format!("{}\n", Digest::of(b"\0asm component")),
        )
        .unwrap();
        assert_eq!(store.verified(&manifest).await, Some(file.clone()));
        // Changed on disk: not used (and not remembered).
        std::fs::write(&file, b"\0asm tampered").unwrap();
        assert_eq!(store.verified(&manifest).await, None);
        assert_eq!(store.remembered(&reference).await, None);
        let dir = store.dir().to_owned();
        drop(store);
        assert!(!dir.exists(), "the private directory is removed");
    }
}
