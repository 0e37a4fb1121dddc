//! `cargo xtask bench [NAME...]`: every performance figure in one run: builds
//! the Python and JavaScript guests, installs the pinned Node MCP server the
//! `mcp` bench compares against (`npm ci` of `host/benches/node/` into
//! `<target>/bench-node`) and the Debian packages the `cluster` bench runs
//! (redis-server, nginx), then runs the cargo benches in sequence (all of
//! them, or those named).

use anyhow::{Context, Result, bail};

use crate::guests;
use crate::toolchain::{ensure_debian_packages, ensure_wasm_target, npm_ci};
use crate::workspace::{cargo, run};

/// The cargo benches `cargo xtask bench` runs, in order.
const BENCHES: &[&str] = &[
    "call",
    "dynamic",
    "telemetry",
    "throughput",
    "startup",
    "mcp",
    "mcp-http",
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
    if selected.iter().any(|b| ["mcp", "mcp-http"].contains(b))
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
/// `<target>/bench-node`.
fn bench_node() -> Result<()> {
    npm_ci("host/benches/node", "bench-node")
        .context("installing the Node MCP server needs Node.js and npm")
        .map(drop)
}
