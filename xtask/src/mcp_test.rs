//! `cargo xtask mcp-test [PYTEST ARGS]`: the MCP end-to-end tests
//! (`tests/mcp`): the official Python MCP SDK drives `toolhost serve` over
//! stdio and HTTP. Extra arguments go to pytest.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

use anyhow::Result;

use crate::guests;
use crate::toolchain::{ensure_redis, ensure_wasm_target, venv};
use crate::workspace::{cargo, root, run, target_dir};

/// Builds `toolhost` and the guests, then runs the MCP end-to-end tests in a
/// Python venv with the pinned `tests/mcp/requirements.txt`. Of the guests in
/// other languages they load the two components of their own WIT
/// (`test_any_component.py`, from `<target>/polyglot`); servers that share
/// approvals share a `redis-server` a test starts.
pub(crate) fn test(pytest_args: Vec<String>) -> Result<()> {
    ensure_redis()?;
    guests::build(&["any-component-js".into(), "any-component-py".into()])?;
    pytest("tests/mcp", pytest_args)
}

/// Builds `toolhost` and the guests, then runs pytest on `dir` (`tests/mcp`,
/// `tests/cluster`) in the MCP tests' venv, with `TOOLHOST_BIN` and
/// `TOOLHOST_GUESTS` pointing at what was built.
pub(crate) fn pytest(dir: &str, pytest_args: Vec<String>) -> Result<()> {
    let python = venv("mcp-venv", &root().join("tests/mcp/requirements.txt"))?;
    pytest_with(&python, dir, pytest_args, &[])
}

/// Runs pytest on `dir` with `python` (a venv's), after building `toolhost`
/// and the Rust guests, with `TOOLHOST_BIN`, `TOOLHOST_GUESTS` and `env`.
pub(crate) fn pytest_with(
    python: &Path,
    dir: &str,
    pytest_args: Vec<String>,
    env: &[(&str, &OsStr)],
) -> Result<()> {
    ensure_wasm_target()?;
    // The binary and the guests (`toolhost-test-plugins`' build script builds
    // them into `<target>/wasm-guests`), with the features unified as in
    // `cargo test --workspace`: right after it this rebuilds nothing, where a
    // `cargo build -p toolhost` would rebuild wasmtime with other features.
    run(cargo().args(["test", "--workspace", "--no-run"]))?;
    let target = target_dir();
    run(Command::new(python)
        .current_dir(root())
        .args(["-m", "pytest", "-q", dir])
        .args(pytest_args)
        .env("TOOLHOST_BIN", target.join("debug/toolhost"))
        .env(
            "TOOLHOST_GUESTS",
            target.join("wasm-guests/wasm32-wasip2/guest"),
        )
        .envs(env.iter().copied())
        .env("PYTHONDONTWRITEBYTECODE", "1"))
}
