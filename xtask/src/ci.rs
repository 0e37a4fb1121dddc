//! `cargo xtask ci`: what CI runs: `cargo fmt --check`, clippy with
//! `-D warnings`, the docs with `-D warnings`, then [`test::all`].

use anyhow::Result;

use crate::test;
use crate::toolchain::ensure_wasm_target;
use crate::workspace::{cargo, run};

/// Runs the CI checks, then every test.
pub(crate) fn check() -> Result<()> {
    ensure_wasm_target()?;
    run(cargo().args(["fmt", "--all", "--", "--check"]))?;
    run(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    run(cargo()
        .args(["doc", "--no-deps", "--workspace"])
        .env("RUSTDOCFLAGS", "-D warnings"))?;
    test::all()
}
