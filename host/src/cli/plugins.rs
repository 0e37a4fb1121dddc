//! Where the plugins are (`--plugins`, the config's `plugins`, else
//! `target/plugins`), and what a user is told when that holds none: a missing
//! path, a file where a directory is needed, an empty set.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use toolhost::Config;

use super::Cli;

/// The plugins path: `--plugins`, else the config's `plugins`, else `target/plugins`.
pub(super) fn plugins_dir(cli: &Cli, config: &Config) -> PathBuf {
    cli.plugins
        .clone()
        .or_else(|| config.plugins.clone())
        .unwrap_or_else(|| PathBuf::from(DEFAULT))
}

/// The plugins path when nothing names one.
const DEFAULT: &str = "target/plugins";

/// What a command takes as its plugins path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Takes {
    /// A directory, or one `.wasm` file (a set of one plugin): the commands
    /// that load once.
    DirOrFile,
    /// A directory only, named in errors: the commands that follow one
    /// (`serve`) or report on its files (`status`).
    Dir(&'static str),
}

/// The plugins path, checked: it exists, and is a directory unless `takes`
/// accepts a file.
///
/// # Errors
/// The path does not exist (with `cargo xtask plugins` as the advice only for
/// the default path inside a checkout of toolhost), or is a file where a
/// directory is needed.
pub(super) fn checked(cli: &Cli, config: &Config, takes: Takes) -> Result<PathBuf> {
    let dir = plugins_dir(cli, config);
    if dir.is_dir() {
        return Ok(dir);
    }
    if dir.is_file() {
        match takes {
            Takes::DirOrFile if dir.extension().is_some_and(|e| e == "wasm") => return Ok(dir),
            Takes::DirOrFile => bail!(
                "--plugins {} is a file, not a directory or a `.wasm` component",
                dir.display()
            ),
            Takes::Dir(command) => bail!(
                "--plugins {} is a file; `toolhost {command}` needs a directory of plugins: put \
                 the file in one and pass --plugins DIR",
                dir.display()
            ),
        }
    }
    if dir.extension().is_some_and(|e| e == "wasm") {
        bail!("plugin file {} does not exist", dir.display());
    }
    if in_checkout(cli, config) {
        bail!(
            "plugins directory {} does not exist (build the examples with `cargo xtask plugins`, \
             or pass --plugins DIR)",
            dir.display()
        );
    }
    bail!(
        "plugins directory {} does not exist (create it and put plugin `.wasm` files in it, or \
         pass --plugins DIR)",
        dir.display()
    )
}

/// Whether the plugins path is the default one and the current directory is
/// a checkout of toolhost, where `cargo xtask plugins` builds the examples.
fn in_checkout(cli: &Cli, config: &Config) -> bool {
    cli.plugins.is_none()
        && config.plugins.is_none()
        && Path::new("xtask/src").is_dir()
        && Path::new("Cargo.toml").is_file()
}

/// Why a set of plugins offers nothing, when it does not: `None` when some
/// of them loaded. `failed` counts the plugin files and sources (refused
/// signature, registry error…) that did not load, each reported on its own.
pub(super) fn emptiness(dir: &Path, loaded: usize, failed: usize) -> Option<String> {
    if loaded > 0 {
        return None;
    }
    Some(match failed {
        0 => format!("no plugins in {}", dir.display()),
        1 => "no tools are loaded (1 plugin failed: run `toolhost status`)".to_owned(),
        n => format!("no tools are loaded ({n} plugins failed: run `toolhost status`)"),
    })
}
