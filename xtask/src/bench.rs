//! `cargo xtask bench [NAME...]`: every performance figure in one run: builds
//! the Python and JavaScript guests, installs the pinned Node MCP server the
//! `mcp` bench compares against (`npm ci` of `host/benches/node/` into
//! `<target>/bench-node`) and the Debian packages the `cluster` bench runs
//! (redis-server, nginx), then runs the cargo benches in sequence (all of
//! them, or those named).

use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::guests;
use crate::toolchain::{ensure_debian_packages, ensure_wasm_target};
use crate::workspace::{cargo, root, run, target_dir};

/// The cargo benches `cargo xtask bench` runs, in order.
const BENCHES: &[&str] = &[
    "call",
    "throughput",
    "startup",
    "mcp",
    "auth",
    "cluster",
    "reload",
    "languages",
    "coldstart",
];

/// Runs the benches (all, or those named) one after another, after building
/// what they compare against. A guest or Node install that fails is reported
/// and the benches that need it say what they skip.
pub(crate) fn measure(names: &[String]) -> Result<()> {
    for name in names {
        if !BENCHES.contains(&name.as_str()) {
            bail!("no bench named `{name}` (benches: {})", BENCHES.join(", "));
        }
    }
    let selected: Vec<&str> = BENCHES
        .iter()
        .copied()
        .filter(|b| names.is_empty() || names.iter().any(|n| n == b))
        .collect();
    ensure_wasm_target()?;
    let mut guests_built = true;
    if selected
        .iter()
        .any(|b| ["startup", "languages", "coldstart"].contains(b))
        && let Err(err) = guests::build(&["conformance-js".into(), "conformance-py".into()])
    {
        eprintln!("xtask: warning: the Python and JavaScript guests did not build: {err:#}");
        guests_built = false;
    }
    if selected.contains(&"coldstart") {
        // The Go and C conformance guests, and every example plugin for `serve`.
        if let Err(err) = guests::build(&["conformance-go".into(), "conformance-c".into()]) {
            eprintln!("xtask: warning: the Go and C guests did not build: {err:#}");
        }
        crate::plugins::build(true)?;
    }
    if selected.contains(&"mcp")
        && let Err(err) = bench_node()
    {
        eprintln!("xtask: warning: the Node MCP server did not install: {err:#}");
    }
    if selected.contains(&"cluster") {
        ensure_debian_packages("the cluster bench", &["redis-server", "nginx"])?;
    }
    run(cargo().args(["bench", "--package", "toolhost", "--no-run"]))?;
    for name in selected {
        if ["languages", "coldstart"].contains(&name) && !guests_built {
            eprintln!(
                "xtask: skipping the languages bench: it needs the Python and JavaScript guests"
            );
            continue;
        }
        println!();
        run(cargo().args(["bench", "--quiet", "--package", "toolhost", "--bench", name]))?;
    }
    Ok(())
}

/// Installs the pinned `@modelcontextprotocol/server-everything` into
/// `<target>/bench-node` (`npm ci`), unless that lockfile is installed already.
fn bench_node() -> Result<()> {
    let src = root().join("host/benches/node");
    let dir = target_dir().join("bench-node");
    let lock = std::fs::read_to_string(src.join("package-lock.json"))
        .context("reading host/benches/node/package-lock.json")?;
    let stamp = dir.join("lock.installed");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(lock.as_str()) {
        return Ok(());
    }
    std::fs::create_dir_all(&dir)?;
    for file in ["package.json", "package-lock.json"] {
        std::fs::copy(src.join(file), dir.join(file))?;
    }
    run(Command::new("npm")
        .current_dir(&dir)
        .args(["ci", "--no-audit", "--no-fund"]))
    .context("installing the Node MCP server needs Node.js and npm")?;
    std::fs::write(&stamp, lock)?;
    Ok(())
}
