//! Files of the cache directory that the host reads back (compiled code,
//! plugin manifests, failure records), sealed so that a damaged one is never
//! used: a bad disk block, a partial copy, a damaged backup, a file copied
//! over another's name.
//!
//! A sealed file is one header line, `toolhost-sealed-1 <sha256>\n`, then its
//! content. The digest covers the entry's key (the name it is stored under)
//! and the content, so an intact file of another entry does not open under
//! this one's name either. Files are written whole (a temporary file, synced,
//! then renamed into place), so a reader never sees half of one.
//!
//! This is a check against accidents, not against tampering: whoever can
//! write to the cache directory can also write a file that opens.

use std::io::{Read as _, Write as _};
use std::path::Path;

use sha2::{Digest as _, Sha256};

use crate::hex::hex;

/// The header line's start.
const MAGIC: &[u8] = b"toolhost-sealed-1 ";
/// The header's length: the magic, 64 hex digits and a newline.
const HEADER: usize = MAGIC.len() + 64 + 1;

/// Why a sealed file was not used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unsealed {
    /// There is no such file.
    #[error("not there")]
    Missing,
    /// It could not be read.
    #[error("cannot read it: {0}")]
    Io(std::io::Error),
    /// It is larger than its reader accepts.
    #[error("larger than {0} bytes, the most accepted here")]
    TooLarge(u64),
    /// Its header or digest does not match its content and key.
    #[error("{0}")]
    Damaged(&'static str),
}

impl Unsealed {
    /// Whether the file was there but is unusable (so worth a warning).
    pub(crate) fn is_damage(&self) -> bool {
        !matches!(self, Self::Missing)
    }
}

/// Whether `bytes` start as a sealed file does (intact or not).
pub(crate) fn is_sealed(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// The seal of `content` stored under `key`.
fn digest(key: &str, content: &[u8]) -> String {
    let mut hash = Sha256::new();
    hash.update((key.len() as u64).to_le_bytes());
    hash.update(key.as_bytes());
    hash.update(content);
    hex(&hash.finalize())
}

/// The content of a sealed file, as read (past its header).
#[derive(Debug)]
pub(crate) struct Content(Vec<u8>);

impl std::ops::Deref for Content {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // `open` made sure the bytes hold a whole header.
        self.0.get(HEADER..).unwrap_or_default()
    }
}

/// Reads the content of `file`, sealed under `key`, of at most `cap` bytes.
/// Blocking: call off the async runtime.
pub(crate) fn read(file: &Path, key: &str, cap: u64) -> Result<Content, Unsealed> {
    let opened = std::fs::File::open(file).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Unsealed::Missing,
        _ => Unsealed::Io(e),
    })?;
    let limit = cap.saturating_add(HEADER as u64);
    // Sized once (compiled code runs to tens of MiB), within the cap.
    let size = opened
        .metadata()
        .map_or(0, |m| m.len())
        .min(limit.saturating_add(1));
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    opened
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(Unsealed::Io)?;
    if bytes.len() as u64 > limit {
        return Err(Unsealed::TooLarge(cap));
    }
    open(bytes, key)
}

/// The content of a sealed file's `bytes`, if they are intact and sealed under `key`.
fn open(bytes: Vec<u8>, key: &str) -> Result<Content, Unsealed> {
    let Some(header) = bytes.get(..HEADER) else {
        return Err(Unsealed::Damaged(
            "it is too short to be a sealed cache file",
        ));
    };
    if !header.starts_with(MAGIC) || header[HEADER - 1] != b'\n' {
        return Err(Unsealed::Damaged(
            "it does not start with the seal of a cache file",
        ));
    }
    let sealed = &header[MAGIC.len()..HEADER - 1];
    if sealed != digest(key, &bytes[HEADER..]).as_bytes() {
        return Err(Unsealed::Damaged(
            "its content does not match its seal (damaged, cut short, or another entry's)",
        ));
    }
    Ok(Content(bytes))
}

/// Writes `content` to `file`, sealed under `key`, atomically (a temporary
/// file beside it, synced, then renamed into place). Blocking: call off the
/// async runtime.
pub(crate) fn write(file: &Path, key: &str, content: &[u8]) -> std::io::Result<()> {
    let mut sealed = Vec::with_capacity(HEADER + content.len());
    sealed.extend_from_slice(MAGIC);
    sealed.extend_from_slice(digest(key, content).as_bytes());
    sealed.push(b'\n');
    sealed.extend_from_slice(content);
    write_atomically(file, &sealed)
}

/// Writes `bytes` to `file` atomically, creating its directory if needed
/// (see [`write_atomically_in`]).
fn write_atomically(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    write_atomically_in(dir, file, bytes)
}

/// Writes `bytes` to `file` in `dir` whole or not at all: a hidden
/// temporary file in `dir` (`.NAME.….partial`, not `*.wasm`, so a plugins
/// directory's watcher ignores it), synced, then renamed over `file`. A
/// reader sees the old file or the new one, never part of it; `dir` must
/// exist. On an error the temporary file is removed.
pub(crate) fn write_atomically_in(dir: &Path, file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temp = dir.join(format!(".{name}.{}.{n}.partial", std::process::id()));
    let written = (|| {
        let mut out = std::fs::File::create(&temp)?;
        out.write_all(bytes)?;
        out.sync_all()?;
        std::fs::rename(&temp, file)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_file_opens_only_intact_and_under_its_own_key() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sub").join("entry");
        write(&file, "key-a", b"the content").unwrap();
        assert_eq!(&read(&file, "key-a", 1 << 10).unwrap()[..], b"the content");
        // Another entry's key: an intact file under the wrong name.
        assert!(matches!(
            read(&file, "key-b", 1 << 10),
            Err(Unsealed::Damaged(_))
        ));
        let whole = std::fs::read(&file).unwrap();
        let damaged = |bytes: &[u8]| {
            std::fs::write(&file, bytes).unwrap();
            read(&file, "key-a", 1 << 10)
        };
        // Cut short, in the content and in the header.
        assert!(matches!(
            damaged(&whole[..whole.len() - 1]),
            Err(Unsealed::Damaged(_))
        ));
        assert!(matches!(damaged(&whole[..10]), Err(Unsealed::Damaged(_))));
        // One byte changed, zeroed, empty.
        let mut flipped = whole.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(matches!(damaged(&flipped), Err(Unsealed::Damaged(_))));
        assert!(matches!(
            damaged(&vec![0; whole.len()]),
            Err(Unsealed::Damaged(_))
        ));
        assert!(matches!(damaged(b""), Err(Unsealed::Damaged(_))));
        // Past the reader's cap.
        std::fs::write(&file, &whole).unwrap();
        assert!(matches!(
            read(&file, "key-a", 4),
            Err(Unsealed::TooLarge(4))
        ));
        assert!(matches!(
            read(&dir.path().join("none"), "key-a", 4),
            Err(Unsealed::Missing)
        ));
        // Nothing but the file is left behind.
        let left: Vec<_> = std::fs::read_dir(dir.path().join("sub")).unwrap().collect();
        assert_eq!(left.len(), 1);
    }
}
