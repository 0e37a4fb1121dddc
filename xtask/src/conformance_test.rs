//! `cargo xtask conformance-test [SUITE ARGS]`: the official MCP conformance
//! suite (`@modelcontextprotocol/conformance`, pinned with the Node it needs in
//! `tests/conformance/`) runs every server scenario against `toolhost serve
//! --http` with the example plugins and the suite's fixture tools
//! (`tests/plugins/mcp-conformance`). Scenarios listed in
//! `tests/conformance/expected-failures.yml` may fail (each with its reason);
//! any other failure fails, and so does a listed scenario that now passes, so
//! the list only ever shrinks. A check the suite reports as a warning (a
//! SHOULD missed: the priming event, the retry field, a stream resumed)
//! fails too. Without arguments it runs every scenario, the
//! suite's pending ones too (`--suite all`); extra arguments go to the suite's
//! `server` command instead (e.g. `--scenario tools-list --verbose`).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::toolchain::{ensure_wasm_target, npm_ci};
use crate::workspace::{cargo, root, run, target_dir};

/// The plugins served (file stems of the built guests): the Rust example
/// plugins, and the fixture tools the suite calls (`tests/plugins/mcp-conformance`).
const PLUGINS: &[&str] = &["text", "calc", "codec", "json", "mcp_conformance"];

/// How long the server may take to listen (its first start compiles the plugins).
const STARTUP: Duration = Duration::from_secs(120);

/// The line `toolhost serve --http` prints on stderr once it listens.
const SERVING: &str = "toolhost: serving MCP at ";

/// Installs the suite, builds `toolhost` and the guests, serves them and runs
/// the suite against the server.
pub(crate) fn test(mut suite_args: Vec<String>) -> Result<()> {
    if suite_args.is_empty() {
        suite_args = vec!["--suite".into(), "all".into()];
    }
    let suite = npm_ci("tests/conformance", "conformance-suite")
        .context("installing the MCP conformance suite")?;
    ensure_wasm_target()?;
    // As `mcp-test`: the features unified as in `cargo test --workspace`, so
    // right after it nothing is rebuilt.
    run(cargo().args(["test", "--workspace", "--no-run"]))?;
    let target = target_dir();
    let work = target.join("conformance-run");
    if work.exists() {
        std::fs::remove_dir_all(&work).with_context(|| format!("clearing {}", work.display()))?;
    }
    let plugins = work.join("plugins");
    std::fs::create_dir_all(&plugins)?;
    let guests = target.join("wasm-guests/wasm32-wasip2/guest");
    for name in PLUGINS {
        let file = format!("{name}.wasm");
        std::fs::copy(guests.join(&file), plugins.join(&file))
            .with_context(|| format!("copying the {name} guest"))?;
    }
    let server = Server::start(&target.join("debug/toolhost"), &work, &plugins)?;
    let node = suite.join("node_modules/.bin/node");
    let cli = suite.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let outcome = run(Command::new(&node)
        .arg(&cli)
        .arg("server")
        .arg("--url")
        .arg(&server.url)
        .arg("--expected-failures")
        .arg(root().join("tests/conformance/expected-failures.yml"))
        .arg("-o")
        .arg(work.join("results"))
        .args(&suite_args));
    drop(server);
    let context = || {
        format!(
            "the MCP conformance suite failed (the server's log: {}; each scenario's checks: {})",
            work.join("stderr.log").display(),
            work.join("results").display()
        )
    };
    outcome.with_context(context)?;
    let warnings = warnings(&work.join("results"))?;
    if !warnings.is_empty() {
        bail!(
            "the MCP conformance suite warned:\n  {}\n{}",
            warnings.join("\n  "),
            context()
        );
    }
    Ok(())
}

/// The checks the suite reported as warnings, as `scenario: check: why`.
fn warnings(results: &Path) -> Result<Vec<String>> {
    let mut found = Vec::new();
    for entry in
        std::fs::read_dir(results).with_context(|| format!("reading {}", results.display()))?
    {
        let dir = entry?.path();
        let file = dir.join("checks.json");
        if !file.exists() {
            continue;
        }
        let text = std::fs::read_to_string(&file)?;
        let checks: Vec<serde_json::Value> =
            serde_json::from_str(&text).with_context(|| format!("reading {}", file.display()))?;
        let scenario = dir.file_name().unwrap_or_default().to_string_lossy();
        for check in checks.iter().filter(|c| c["status"] == "WARNING") {
            found.push(format!(
                "{scenario}: {}: {}",
                check["name"].as_str().unwrap_or("?"),
                check["errorMessage"].as_str().unwrap_or("")
            ));
        }
    }
    found.sort();
    Ok(found)
}

/// A running `toolhost serve --http`, stopped (and waited for) when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(binary: &Path, work: &Path, plugins: &Path) -> Result<Self> {
        let log = work.join("stderr.log");
        let mut command = Command::new(binary);
        command
            .current_dir(work)
            .arg("--plugins")
            .arg(plugins)
            // The server ends a call's stream after 1 s and the client resumes
            // it (SEP-1699 polling): `test_reconnection` takes 1.5 s.
            .args([
                "serve",
                "--http",
                "127.0.0.1:0",
                "--stream-close-after-ms",
                "1000",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?);
        // None of the caller's settings leak in.
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("TOOLHOST_") {
                command.env_remove(&key);
            }
        }
        command
            .env("TOOLHOST_CACHE_DIR", work.join("cache"))
            .env("TOOLHOST_LOG", "info");
        let child = command
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let mut server = Self {
            child,
            url: String::new(),
        };
        server.url = server.wait_listening(&log)?;
        eprintln!("xtask: toolhost serves MCP at {}", server.url);
        Ok(server)
    }

    /// The URL the server prints once it listens.
    fn wait_listening(&mut self, log: &Path) -> Result<String> {
        let started = Instant::now();
        loop {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            // The whole line: a log read while it is written may hold part of it.
            if let Some(at) = text.find(SERVING)
                && let Some((url, _)) = text[at + SERVING.len()..].split_once('\n')
            {
                return Ok(url.trim().to_owned());
            }
            if let Some(status) = self.child.try_wait()? {
                bail!("toolhost serve --http exited with {status}:\n{text}");
            }
            if started.elapsed() > STARTUP {
                bail!("toolhost serve --http did not listen within {STARTUP:?}:\n{text}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
