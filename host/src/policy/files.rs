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
use super::{CallTag, Capability, ErrorAt, Grants, GrantsConfig};
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
