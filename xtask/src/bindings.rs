//! `cargo xtask bindings [--check]`: regenerate the C and Go bindings of
//! `wit/` that the guest SDKs commit (`guest-sdk/c/gen`,
//! `guest-sdk/go/bindings`) and the Go bindings' runtime package
//! (`guest-sdk/go/witpkg`), with wit-bindgen built from `xtask/bindgen`;
//! `--check` fails if they differ from fresh ones instead.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::workspace::{cargo, copy_dir, root, run, target_dir};

/// Writes generated files into a directory (the second argument), with the
/// `xtask/bindgen` binary (the first) if it needs it.
type Generate = fn(&Path, &Path) -> Result<()>;

/// The generated files the guest SDKs commit, so that their builds (and the
/// projects `toolhost new` writes) need no bindings generator: where each
/// lives, and how to make it afresh into a directory.
const GENERATED: [(&str, Generate); 3] = [
    // The C and Go SDKs implement the `catalog` exports too (an empty catalog
    // unless the plugin declares one), so every C or Go plugin is a catalog
    // plugin.
    ("guest-sdk/c/gen", |bindgen, out| {
        bindgen_run(bindgen, "c", "catalog-plugin", out)
    }),
    ("guest-sdk/go/bindings", |bindgen, out| {
        bindgen_run(bindgen, "go", "catalog-plugin", out)
    }),
    // Only what the bindings import (wit/...), its go.mod and its license.
    ("guest-sdk/go/witpkg", |_, out| {
        let source = go_runtime_source()?;
        std::fs::create_dir_all(out)?;
        for file in ["go.mod", "LICENSE"] {
            std::fs::copy(source.join(file), out.join(file))
                .with_context(|| format!("copying {}", source.join(file).display()))?;
        }
        copy_dir(&source.join("wit"), &out.join("wit"))
    }),
];

/// `bindings`: rewrites the [`GENERATED`] files (after a change to `wit/` or a
/// wit-bindgen update in `xtask/bindgen`); with `check`, fails if any differs
/// from what they would be instead (`cargo xtask test` runs that, so they
/// never drift).
pub(crate) fn generate(check: bool) -> Result<()> {
    let bindgen = bindgen()?;
    let fresh = target_dir().join("bindings-fresh");
    if fresh.exists() {
        std::fs::remove_dir_all(&fresh).with_context(|| format!("removing {}", fresh.display()))?;
    }
    let mut stale = Vec::new();
    for (dir, generate) in GENERATED {
        let made = fresh.join(dir);
        generate(&bindgen, &made)?;
        let committed = root().join(dir);
        if check {
            if tree(&made)? != tree(&committed)? {
                stale.push(dir);
            }
        } else {
            if committed.exists() {
                std::fs::remove_dir_all(&committed)
                    .with_context(|| format!("removing {}", committed.display()))?;
            }
            copy_dir(&made, &committed)?;
            eprintln!("xtask: wrote {dir}");
        }
    }
    if !stale.is_empty() {
        bail!(
            "stale generated files in {} (fresh ones are in {}): \
             run `cargo xtask bindings` and commit the result",
            stale.join(", "),
            fresh.display()
        );
    }
    Ok(())
}

/// Every file under `dir` (relative path → contents); empty if `dir` is missing.
fn tree(dir: &Path) -> Result<std::collections::BTreeMap<PathBuf, Vec<u8>>> {
    let mut files = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(path) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&path) else {
            continue;
        };
        for entry in entries {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let relative = path.strip_prefix(dir).unwrap_or(&path).to_owned();
                let contents =
                    std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
                files.insert(relative, contents);
            }
        }
    }
    Ok(files)
}

/// Generates `lang`'s bindings of `world` into `out`.
fn bindgen_run(bindgen: &Path, lang: &str, world: &str, out: &Path) -> Result<()> {
    run(Command::new(bindgen)
        .arg(lang)
        .arg(root().join("wit"))
        .arg(world)
        .arg(out))
}

/// The manifest of `xtask/bindgen` (see [`bindgen`]).
fn bindgen_manifest() -> PathBuf {
    root().join("xtask/bindgen/Cargo.toml")
}

/// `xtask/bindgen`: wit-bindgen's C and Go generators (0.63.0, pinned by its
/// `Cargo.lock`) in a small binary, for [`generate`]. Built into
/// `<target>/tools/bindgen` on first use (about a CPU-minute; `cargo install wit-bindgen-cli` with only
/// those two generators takes about seven, as it also builds its test harness),
/// then a no-op. Returns the binary's path.
fn bindgen() -> Result<PathBuf> {
    let build = target_dir().join("tools/bindgen");
    run(cargo()
        .args(["build", "--locked", "--manifest-path"])
        .arg(bindgen_manifest())
        .arg("--target-dir")
        .arg(&build))
    .context("building xtask/bindgen (the C and Go bindings generator)")?;
    Ok(build.join("debug/toolhost-bindgen"))
}

/// `go.bytecodealliance.org/pkg`, the runtime package of the `wit-bindgen go`
/// bindings: `src/pkg` of the crates.io crate `wit-bindgen-go`, which cargo
/// has fetched for `xtask/bindgen`.
fn go_runtime_source() -> Result<PathBuf> {
    let metadata = cargo()
        .args([
            "metadata",
            "--locked",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(bindgen_manifest())
        .output()
        .context("running cargo metadata")?;
    if !metadata.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&metadata.stderr)
        );
    }
    let metadata: serde_json::Value = serde_json::from_slice(&metadata.stdout)?;
    let package = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|package| package["name"] == "wit-bindgen-go")
        .context("xtask/bindgen does not depend on wit-bindgen-go")?;
    package["manifest_path"]
        .as_str()
        .and_then(|manifest| Path::new(manifest).parent())
        .map(|crate_dir| crate_dir.join("src/pkg"))
        .context("cargo metadata gives wit-bindgen-go's manifest path")
}
