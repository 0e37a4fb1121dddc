//! Lower-case hex text of bytes: digests in cache file names, Redis keys and
//! approval states, random IDs.

use std::fmt::Write as _;

/// `bytes` as lower-case hex, two characters per byte.
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(text, "{byte:02x}");
    }
    text
}
