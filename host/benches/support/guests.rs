//! Where the benches find the guests `cargo xtask guests` builds.

use std::path::PathBuf;

/// A guest `cargo xtask guests` built: at the path the test artifacts name, or
/// in `<target>/polyglot/` next to this binary's target directory.
pub(crate) fn polyglot(path: &str) -> Option<PathBuf> {
    let named = PathBuf::from(path);
    if named.is_file() {
        return Some(named);
    }
    // This binary is `<target>/<profile>/deps/<bench>-<hash>`.
    let exe = std::env::current_exe().ok()?;
    let target = exe.parent()?.parent()?.parent()?;
    let found = target.join("polyglot").join(named.file_name()?);
    found.is_file().then_some(found)
}
