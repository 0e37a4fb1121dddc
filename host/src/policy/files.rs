//! Files: host directories preopened for the guest under a guest path,
//! read-only unless written otherwise (wasmtime-wasi preopens over cap-std:
//! no `..`, absolute path or symlink reaches outside a grant).
//!
//! Config keys: `[[dirs]]` with `host`, `guest` and `write`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use super::kind::Kind;
use super::{CallTag, Capability, ErrorAt, Grants, GrantsConfig, SIDECAR_SUFFIX};
use crate::error::ConfigError;

/// How a plugin may use a granted directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Access {
    /// Read files and list directories; every write is refused.
    #[default]
    ReadOnly,
    /// Read, create, write, rename and remove inside the directory.
    ReadWrite,
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ReadOnly => "ro",
            Self::ReadWrite => "rw",
        })
    }
}

/// A host directory made visible to the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DirGrant {
    /// The directory on the host.
    pub host: PathBuf,
    /// Where the guest sees it (for example `/workspace`).
    pub guest: String,
    /// Read-only or read-write.
    pub access: Access,
}

/// One granted directory as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct DirConfig {
    /// The host directory (relative to the policy file).
    pub host: PathBuf,
    /// Where the guest sees it: an absolute guest path such as `/data`.
    pub guest: String,
    /// Allow writes (default: read-only).
    #[serde(default)]
    pub write: bool,
}

impl Grants {
    /// Grants a host directory, seen by the guest at `guest` (an absolute guest path).
    pub fn dir(
        &mut self,
        host: impl Into<PathBuf>,
        guest: impl Into<String>,
        access: Access,
    ) -> &mut Self {
        self.dirs.push(DirGrant {
            host: host.into(),
            guest: guest.into(),
            access,
        });
        self
    }

    /// The granted directories.
    pub fn dirs(&self) -> &[DirGrant] {
        &self.dirs
    }
}

impl Grants {
    /// A failed call's error `message`, with a sentence added (and a warning
    /// logged) when the message says a file was not found or not permitted
    /// and names an absolute path outside every granted directory: a guest
    /// resolves its paths against its preopened directories itself, so an
    /// open outside all of them fails in the guest ("No such file or
    /// directory") and never reaches the host, which can only tell from the
    /// message. A path inside a grant, or a relative one, adds nothing: the
    /// guest's words stand. `plugin` is the plugin's name, as its
    /// `[plugin.NAME.grants]` spells it.
    pub(crate) fn explain_file_error(
        &self,
        plugin: &str,
        tool: &str,
        call_id: &str,
        mut message: String,
    ) -> String {
        let Some(path) = path_outside(&self.dirs, &message) else {
            return message;
        };
        let granted: Vec<&str> = self.dirs.iter().map(|dir| dir.guest.as_str()).collect();
        let hint = if granted.is_empty() {
            format!("`{path}` is outside this plugin's granted directories (it has none)")
        } else {
            format!(
                "`{path}` is outside this plugin's granted directories ({})",
                granted.join(", ")
            )
        };
        let grant = format!(
            "grant one with `dirs = [{{ host = \"…\", guest = \"/…\" }}]` in \
             `[plugin.{plugin}.grants]` of toolhost.toml or in {plugin}{SIDECAR_SUFFIX}"
        );
        tracing::warn!(
            target: "toolhost::policy",
            plugin, tool, call = call_id, capability = %Capability::Files,
            "refused {path}: outside the plugin's granted directories (to allow it: {grant})"
        );
        message.push_str(&format!("; {hint}: {grant}"));
        message
    }
}

/// The longest path a hint repeats (the rest is the guest's message).
const MAX_SHOWN_PATH: usize = 256;

/// The first absolute path `message` names that lies outside every one of
/// `dirs`, if `message` says a file was not found or not permitted.
fn path_outside(dirs: &[DirGrant], message: &str) -> Option<String> {
    let lower = message.to_ascii_lowercase();
    let says = [
        "no such file or directory",
        "enoent",
        "operation not permitted",
        "capabilities insufficient",
    ];
    if !says.iter().any(|s| lower.contains(s)) {
        return None;
    }
    let inside = |path: &Path| dirs.iter().any(|dir| path.starts_with(&dir.guest));
    message
        .split(|c: char| c.is_whitespace() || "'\"`()[]{}<>,;".contains(c))
        .map(|word| word.trim_end_matches([':', '.', '!', '?']))
        .filter(|word| word.starts_with('/') && !word.starts_with("//"))
        .find_map(|word| {
            let path = normalize(word);
            (!inside(&path)).then(|| {
                crate::error::cut(crate::escape_control(word).into_owned(), MAX_SHOWN_PATH)
            })
        })
}

/// An absolute guest path with `.` and `..` resolved as text (what the path
/// names inside the guest's file system, where `/..` is `/`).
fn normalize(path: &str) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::from("/");
    for part in Path::new(path).components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// Files: `[[dirs]]`, preopened per call.
pub(super) struct Files;

impl Kind for Files {
    fn capabilities(&self) -> &'static [Capability] {
        &[Capability::Files]
    }

    fn of_import(&self, interface: &str) -> Option<Capability> {
        interface
            .starts_with("wasi:filesystem/")
            .then_some(Capability::Files)
    }

    fn covers(&self, grants: &Grants, _capability: Capability) -> bool {
        !grants.dirs.is_empty()
    }

    fn grant_for(&self, _capability: Capability) -> &'static str {
        "`[[dirs]]` in its grants"
    }

    fn check(&self, config: &GrantsConfig, at: &ErrorAt<'_>) -> Result<(), ConfigError> {
        check(&config.dirs, at)
    }

    fn resolve(
        &self,
        config: &GrantsConfig,
        base: &Path,
        at: &ErrorAt<'_>,
        grants: &mut Grants,
    ) -> Result<(), ConfigError> {
        resolve(&config.dirs, base, at, grants)
    }

    fn summary(&self, grants: &Grants, out: &mut Vec<String>) {
        for dir in &grants.dirs {
            out.push(format!(
                "files {} → {} ({})",
                dir.host.display(),
                dir.guest,
                dir.access
            ));
        }
    }

    /// Preopens the granted directories.
    fn add_to_wasi(
        &self,
        grants: &Grants,
        builder: &mut WasiCtxBuilder,
        _call: &Arc<CallTag>,
    ) -> Result<(), String> {
        for dir in &grants.dirs {
            let perms = match dir.access {
                Access::ReadOnly => FsPerms::ReadOnly,
                Access::ReadWrite => FsPerms::ReadWrite,
            };
            builder
                .preopened_dir(&dir.host, &dir.guest, perms)
                .map_err(|e| {
                    format!(
                        "the granted directory {} cannot be opened: {e}",
                        dir.host.display()
                    )
                })?;
        }
        Ok(())
    }
}

/// Checks `[[dirs]]` without touching the file system.
fn check(dirs: &[DirConfig], at: &ErrorAt<'_>) -> Result<(), ConfigError> {
    for (i, dir) in dirs.iter().enumerate() {
        if !dir.guest.starts_with('/') {
            return Err(at.key(
                format!("dirs[{i}].guest"),
                format!(
                    "`{}` must be an absolute guest path such as `/data`",
                    dir.guest
                ),
            ));
        }
        if dir.host.as_os_str().is_empty() {
            return Err(at.key(format!("dirs[{i}].host"), "must not be empty".into()));
        }
    }
    Ok(())
}

/// Grants `[[dirs]]`, resolved against `base` (the policy file's directory);
/// each must be a directory.
fn resolve(
    dirs: &[DirConfig],
    base: &Path,
    at: &ErrorAt<'_>,
    grants: &mut Grants,
) -> Result<(), ConfigError> {
    for (i, dir) in dirs.iter().enumerate() {
        let host = base.join(&dir.host);
        if !host.is_dir() {
            return Err(at.key(
                format!("dirs[{i}].host"),
                format!("{} is not a directory", host.display()),
            ));
        }
        let access = if dir.write {
            Access::ReadWrite
        } else {
            Access::ReadOnly
        };
        grants.dir(host, dir.guest.clone(), access);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs(guests: &[&str]) -> Vec<DirGrant> {
        guests
            .iter()
            .map(|guest| DirGrant {
                host: PathBuf::from("/srv"),
                guest: (*guest).to_owned(),
                access: Access::ReadOnly,
            })
            .collect()
    }

    #[test]
    fn only_a_not_found_path_outside_every_grant_is_named() {
        let data = dirs(&["/data"]);
        let outside = |message: &str| path_outside(&data, message);
        let enoent = "No such file or directory (os error 44)";
        assert_eq!(
            outside(&format!("/etc/passwd: {enoent}")).as_deref(),
            Some("/etc/passwd")
        );
        // Python, JavaScript: quoted paths.
        assert_eq!(
            outside("[Errno 44] No such file or directory: '/etc/hosts'").as_deref(),
            Some("/etc/hosts")
        );
        assert_eq!(
            outside("ENOENT: no such file or directory, open '/x/y'").as_deref(),
            Some("/x/y")
        );
        // `..` is resolved: this is /outside, not /data.
        assert_eq!(
            outside("/data/../outside/s.txt: Operation not permitted (os error 63)").as_deref(),
            Some("/data/../outside/s.txt")
        );
        // Inside a grant, relative, or not a file error: nothing to add.
        assert_eq!(outside(&format!("/data/missing.txt: {enoent}")), None);
        assert_eq!(outside(&format!("/data: {enoent}")), None);
        assert_eq!(outside(&format!("notes/a.txt: {enoent}")), None);
        assert_eq!(outside("cannot divide 4 /0: invalid"), None);
        assert_eq!(
            outside(&format!("/database/x: {enoent}")).as_deref(),
            Some("/database/x")
        );
        // A grant of `/` holds every path.
        assert_eq!(
            path_outside(&dirs(&["/"]), &format!("/etc/passwd: {enoent}")),
            None
        );
        assert_eq!(
            path_outside(&[], &format!("/etc/passwd: {enoent}")).as_deref(),
            Some("/etc/passwd")
        );
    }

    #[test]
    fn the_hint_names_the_path_the_grants_and_the_config_key() {
        let mut grants = Grants::default();
        let message = "/etc/passwd: No such file or directory (os error 44)".to_owned();
        let hinted = grants.explain_file_error("fs", "read_file", "c1", message.clone());
        assert_eq!(
            hinted,
            format!(
                "{message}; `/etc/passwd` is outside this plugin's granted directories (it has \
                 none): grant one with `dirs = [{{ host = \"…\", guest = \"/…\" }}]` in \
                 `[plugin.fs.grants]` of toolhost.toml or in fs.policy.toml"
            )
        );
        grants.dir("/srv", "/repo", Access::ReadOnly);
        let hinted = grants.explain_file_error("fs", "read_file", "c1", message.clone());
        assert!(
            hinted.contains("granted directories (/repo): grant one"),
            "{hinted}"
        );
        let inside = "/repo/nope: No such file or directory (os error 44)".to_owned();
        assert_eq!(
            grants.explain_file_error("fs", "read_file", "c1", inside.clone()),
            inside
        );
    }
}
