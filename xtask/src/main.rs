//! `cargo xtask <command>`: project automation in plain Rust.
//!
//! - `plugins`: build the example plugins into `target/plugins/`.
//! - `demo`: build the plugins and the `toolhost` CLI, then list and call tools.
//! - `test`: run every test (installs the wasm32-wasip2 target if missing), then `mcp-test`.
//! - `mcp-test`: the MCP end-to-end tests (`tests/mcp`): the official Python MCP SDK
//!   drives `toolhost serve` over stdio and HTTP. Extra arguments go to pytest.
//! - `ci`: `cargo fmt --check`, clippy with `-D warnings`, docs, then `test`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

fn main() -> Result<()> {
    let task = std::env::args().nth(1).unwrap_or_default();
    match task.as_str() {
        "plugins" => build_plugins().map(drop),
        "demo" => demo(),
        "test" => test(),
        "mcp-test" => mcp_test(std::env::args().skip(2).collect()),
        "ci" => ci(),
        _ => {
            eprintln!("usage: cargo xtask <plugins|demo|test|mcp-test [PYTEST ARGS]|ci>");
            bail!("unknown task `{task}`")
        }
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_owned)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Cargo's target directory: `$CARGO_TARGET_DIR` (relative to the workspace root,
/// where [`cargo`] runs) if set, else `target/`.
fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => root().join(dir),
        _ => root().join("target"),
    }
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("xtask: running {cmd:?}");
    let status = cmd
        .status()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}

/// Installs the wasm32-wasip2 target if rustup does not have it yet.
fn ensure_wasm_target() -> Result<()> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .context("cannot run rustup (it installs the wasm32-wasip2 target)")?;
    if String::from_utf8_lossy(&installed.stdout)
        .lines()
        .any(|l| l.trim() == "wasm32-wasip2")
    {
        return Ok(());
    }
    run(Command::new("rustup").args(["target", "add", "wasm32-wasip2"]))
}

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

/// Builds every example plugin and copies the components into `target/plugins/`.
fn build_plugins() -> Result<PathBuf> {
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
    for name in &names {
        let file = format!("{}.wasm", name.replace('-', "_"));
        let built = root().join("target/wasm32-wasip2/guest").join(&file);
        let dest = out.join(format!("{name}.wasm"));
        std::fs::copy(&built, &dest)
            .with_context(|| format!("copying {} to {}", built.display(), dest.display()))?;
        eprintln!("xtask: {}", dest.display());
    }
    Ok(out)
}

fn demo() -> Result<()> {
    let dir = build_plugins()?;
    run(cargo().args(["build", "--release", "--package", "toolhost"]))?;
    let toolhost = root().join("target/release/toolhost");
    let step = |args: &[&str]| -> Result<()> {
        eprintln!("\n$ toolhost {}", args.join(" "));
        run(Command::new(&toolhost)
            .arg("--plugins")
            .arg(&dir)
            .args(args))
    };
    step(&["list"])?;
    step(&["describe", "evaluate"])?;
    step(&["call", "word_count", r#"{"text": "the quick brown fox"}"#])?;
    step(&["call", "evaluate", r#"{"expression": "2 * (3 + 4) ^ 2"}"#])?;
    step(&[
        "call",
        "convert_units",
        r#"{"value": "5", "from": "km", "to": "mi"}"#,
    ])?;
    step(&[
        "call",
        "hash",
        r#"{"algorithm": "sha256", "input": "hello"}"#,
    ])?;
    step(&[
        "call",
        "split_lines",
        r#"{"text": "one\ntwo\nthree", "numbered": true}"#,
    ])?;
    step(&["call", "qr_code", r#"{"text": "https://example.com"}"#])?;
    eprintln!("\n$ toolhost call evaluate '{{\"expression\": 42}}'   # a bad argument");
    let status = Command::new(&toolhost)
        .arg("--plugins")
        .arg(&dir)
        .args(["call", "evaluate", r#"{"expression": 42}"#])
        .status()?;
    eprintln!("(exit status {status})");
    Ok(())
}

fn test() -> Result<()> {
    ensure_wasm_target()?;
    run(cargo().args(["test", "--workspace"]))?;
    mcp_test(Vec::new())
}

/// Builds `toolhost` and the guests, then runs the MCP end-to-end tests in a
/// Python venv with the pinned `tests/mcp/requirements.txt`.
fn mcp_test(pytest_args: Vec<String>) -> Result<()> {
    ensure_wasm_target()?;
    let python = mcp_venv()?;
    run(cargo().args(["build", "--package", "toolhost", "--bin", "toolhost"]))?;
    // Its build script builds every guest into `<target>/wasm-guests`.
    run(cargo().args(["build", "--package", "toolhost-test-plugins"]))?;
    let target = target_dir();
    run(Command::new(&python)
        .current_dir(root())
        .args(["-m", "pytest", "-q", "tests/mcp"])
        .args(pytest_args)
        .env("TOOLHOST_BIN", target.join("debug/toolhost"))
        .env(
            "TOOLHOST_GUESTS",
            target.join("wasm-guests/wasm32-wasip2/guest"),
        )
        .env("PYTHONDONTWRITEBYTECODE", "1"))
}

/// The venv `<target>/mcp-venv` with the test requirements installed; returns its
/// Python. Installs only when the requirements differ from the last install's
/// (a stamp file holds a copy), so reruns are fast.
fn mcp_venv() -> Result<PathBuf> {
    let venv = target_dir().join("mcp-venv");
    let python = venv.join("bin/python");
    if !python.is_file() {
        run(Command::new("python3").arg("-m").arg("venv").arg(&venv))
            .context("creating the venv for the MCP tests needs python3 with its venv module")?;
    }
    let requirements = root().join("tests/mcp/requirements.txt");
    let wanted = std::fs::read_to_string(&requirements)
        .with_context(|| format!("reading {}", requirements.display()))?;
    let stamp = venv.join("requirements.installed");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) {
        return Ok(python);
    }
    run(Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
        ])
        .arg(&requirements))?;
    std::fs::write(&stamp, wanted).with_context(|| format!("writing {}", stamp.display()))?;
    Ok(python)
}

fn ci() -> Result<()> {
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
    test()
}
