//! `cargo xtask <command>`: project automation in plain Rust.
//!
//! - `plugins`: build the example plugins into `target/plugins/`.
//! - `demo`: build the plugins and the `toolhost` CLI, then list and call tools.
//! - `test`: run every test (installs the wasm32-wasip2 target if missing).
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
        "ci" => ci(),
        _ => {
            eprintln!("usage: cargo xtask <plugins|demo|test|ci>");
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
    run(cargo().args(["test", "--workspace"]))
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
