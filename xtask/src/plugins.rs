//! `cargo xtask plugins [--all]`: build the Rust example plugins (every
//! `plugins/*/Cargo.toml`) for wasm32-wasip2 and copy the components into
//! `target/plugins/`; `--all` adds the examples in other languages (built by
//! [`guests`]).

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::guests;
use crate::toolchain::ensure_wasm_target;
use crate::workspace::{cargo, root, run, target_dir};

/// The Rust example plugins: every `plugins/*/Cargo.toml`.
fn rust_plugins() -> Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(root().join("plugins")).context("reading plugins/")? {
        let manifest = entry?.path().join("Cargo.toml");
        if !manifest.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&manifest)?;
        let name = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("name = "))
            .map(|n| n.trim_matches('"').to_owned())
            .with_context(|| format!("no package name in {}", manifest.display()))?;
        names.push(name);
    }
    names.sort();
    Ok(names)
}

/// Builds the Rust example plugins (and with `all`, those in other languages)
/// and copies the components into `target/plugins/`.
pub(crate) fn build(all: bool) -> Result<PathBuf> {
    ensure_wasm_target()?;
    let names = rust_plugins()?;
    let mut cmd = cargo();
    cmd.args(["build", "--profile", "guest", "--target", "wasm32-wasip2"]);
    for name in &names {
        cmd.arg("--package").arg(name);
    }
    run(&mut cmd)?;
    let out = root().join("target/plugins");
    std::fs::create_dir_all(&out)?;
    let mut built = Vec::new();
    for name in &names {
        let file = format!("{}.wasm", name.replace('-', "_"));
        built.push((
            name.clone(),
            target_dir().join("wasm32-wasip2/guest").join(&file),
        ));
    }
    let examples: Vec<String> = guests::list()?
        .into_iter()
        .filter(|guest| all && guest.example)
        .map(|guest| guest.name)
        .collect();
    if !examples.is_empty() {
        built.extend(guests::build(&examples)?);
    }
    for (name, wasm) in built {
        let dest = out.join(format!("{name}.wasm"));
        std::fs::copy(&wasm, &dest)
            .with_context(|| format!("copying {} to {}", wasm.display(), dest.display()))?;
        eprintln!("xtask: {}", dest.display());
    }
    Ok(out)
}
