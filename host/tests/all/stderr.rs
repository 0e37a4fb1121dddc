//! What the `toolhost` binary writes to stderr: one plain voice for the
//! commands that run once, tracing's log for `serve`, the clash warning where
//! it helps, and a client's mistakes kept out of the server's warnings.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use toolhost_test_plugins::ECHO;

/// Two copies of the echo plugin, `a` and `b`: every tool clashes.
fn clashing_plugins() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(ECHO, dir.path().join("a.wasm")).unwrap();
    std::fs::copy(ECHO, dir.path().join("b.wasm")).unwrap();
    dir
}

fn toolhost(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--no-cache")
        .args(args)
        .current_dir(dir)
        .env_remove("TOOLHOST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Whether a line starts as tracing's do: a timestamp (`2026-…`).
fn timestamped(line: &str) -> bool {
    line.get(..4)
        .is_some_and(|year| year.bytes().all(|b| b.is_ascii_digit()))
}

#[test]
fn one_shot_commands_warn_in_one_plain_voice() {
    let dir = clashing_plugins();
    std::fs::write(dir.path().join("broken.wasm"), b"not a component").unwrap();
    let config = dir.path().join("toolhost.toml");
    // `nope` names no plugin: a configuration warning.
    std::fs::write(
        &config,
        "plugins = \".\"\n\n[plugin.nope.limits]\nmemory_mib = 16\n",
    )
    .unwrap();
    let out = toolhost(&["list"], dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stderr(&out);
    for line in text.lines() {
        assert!(
            line.starts_with("warning: ") && !timestamped(line),
            "not a plain warning: {line:?}\n{text}"
        );
        assert!(!line.contains("toolhost::"), "a log target: {line:?}");
    }
    // The load failure, the configuration's unknown name and the clash: all there.
    assert!(text.contains("broken.wasm"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("warning: configuration:") && l.contains("nope")),
        "{text}"
    );
    assert!(text.contains("several plugins offer"), "{text}");
}

#[test]
fn a_qualified_call_says_nothing_of_clashes() {
    let dir = clashing_plugins();
    let plugins = dir.path().to_str().unwrap();
    let out = toolhost(
        &[
            "--plugins",
            plugins,
            "call",
            "a.echo",
            r#"{"message": "hi"}"#,
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "",
        "a successful call with nothing to warn about"
    );
    // The bare name fails, and its error (not a warning) names the choices.
    let out = toolhost(
        &["--plugins", plugins, "call", "echo", r#"{"message": "hi"}"#],
        dir.path(),
    );
    assert!(!out.status.success());
    let text = stderr(&out);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.starts_with("error: ") && text.contains("a.echo") && text.contains("b.echo"),
        "{text}"
    );
}

/// A JSON-RPC message on one line.
fn send(stdin: &mut impl std::io::Write, message: serde_json::Value) {
    writeln!(stdin, "{message}").unwrap();
    stdin.flush().unwrap();
}

#[test]
fn serve_logs_with_tracing_and_a_clients_mistake_is_no_warning() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(ECHO, dir.path().join("echo.wasm")).unwrap();
    let mut server = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--no-cache")
        .arg("--plugins")
        .arg(dir.path())
        .args(["serve", "--no-watch"])
        .env_remove("TOOLHOST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    let mut answers = BufReader::new(server.stdout.take().unwrap()).lines();
    let mut answer = |id: u64| loop {
        let line = answers.next().unwrap().unwrap();
        let message: serde_json::Value = serde_json::from_str(&line).unwrap();
        if message["id"] == id {
            return message;
        }
    };
    send(
        &mut stdin,
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "stderr-test", "version": "0"}}}),
    );
    assert!(answer(1)["result"]["protocolVersion"].is_string());
    send(
        &mut stdin,
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    // A tool that does not exist: a protocol error for the client.
    send(
        &mut stdin,
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "nope", "arguments": {}}}),
    );
    let refused = answer(2);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    drop(stdin);
    let out = server.wait_with_output().unwrap();
    let text = stderr(&out);
    assert!(!text.contains("response error"), "{text}");
    assert!(!text.contains("WARN"), "{text}");
    // `serve` keeps a server's log: timestamped lines with their targets.
    let loaded = text
        .lines()
        .find(|l| l.contains("toolhost::load"))
        .unwrap_or_else(|| panic!("no load line: {text}"));
    assert!(timestamped(loaded), "{loaded}");
}
