//! What the `toolhost` commands write to stderr: each thing said once and
//! plainly, a closed stdout ended quietly, guest text that cannot forge a log
//! line.

use std::path::Path;
use std::process::{Command, Output};

use toolhost_test_plugins::{ECHO, HOSTILE};

use super::{Lines, plugins_dir, stderr, stdout_json, toolhost, toolhost_config};

fn greedy_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        toolhost_test_plugins::GREEDY,
        dir.path().join("greedy.wasm"),
    )
    .unwrap();
    dir
}

#[test]
fn guest_and_error_text_cannot_forge_log_lines() {
    let dir = greedy_dir();
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--plugins")
        .arg(dir.path())
        .args(["--no-cache", "call", "forge"])
        .env("TOOLHOST_LOG", "info")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    let forged: Vec<&str> = err.lines().filter(|l| l.contains("FORGED-BY")).collect();
    assert!(forged.len() >= 3, "log, stderr and the error: {err}");
    for line in &forged {
        assert!(
            line.contains("honest start")
                || line.contains("stderr start")
                || line.contains("failing"),
            "a forged line: {line:?}"
        );
        assert!(!line.contains('\u{1b}') && !line.contains('\r'), "{line:?}");
    }
}

#[test]
fn a_huge_error_message_is_cut() {
    let dir = greedy_dir();
    let out = toolhost(
        dir.path(),
        &["call", "loud_error", r#"{"bytes": 10000000}"#],
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("loud start zzz"), "{err:.200}");
    assert!(err.contains("[cut: "), "{err:.200}");
    assert!(err.len() < 6000, "{} bytes on stderr", err.len());
}

/// `toolhost` with a cache directory of the test's own and no `TOOLHOST_LOG`.
fn toolhost_cached(dir: &Path, cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--plugins")
        .arg(dir)
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .env_remove("TOOLHOST_LOG")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn call_prints_only_its_result_with_a_cold_and_a_warm_cache() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(ECHO, dir.path().join("echo.wasm")).unwrap();
    // The caps plugin imports files and sockets it is not granted (as
    // runtimes do): that is no reason to say anything either.
    std::fs::copy(toolhost_test_plugins::CAPS, dir.path().join("caps.wasm")).unwrap();
    let cache = tempfile::tempdir().unwrap();
    for run in ["cold", "warm"] {
        let out = toolhost_cached(
            dir.path(),
            cache.path(),
            &["call", "add", r#"{"a": 1, "b": 2}"#],
        );
        assert!(out.status.success(), "{run}: {}", stderr(&out));
        assert_eq!(stdout_json(&out), serde_json::json!({"result": 3}), "{run}");
        assert_eq!(stderr(&out), "", "{run}: stderr is empty");
    }
    for args in [&["list"][..], &["describe", "add"], &["status"]] {
        let out = toolhost_cached(dir.path(), cache.path(), args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?}: stderr is empty");
    }
}

#[test]
fn help_documents_toolhost_log() {
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("TOOLHOST_LOG")
            && help.contains("EnvFilter")
            && help.contains("TOOLHOST_LOG=debug"),
        "{help}"
    );
}

#[test]
fn a_load_failure_is_reported_once() {
    let dir = plugins_dir();
    std::fs::write(dir.path().join("broken.wasm"), b"not wasm").unwrap();
    let mentions = |out: &Output| {
        let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(out));
        all.matches("broken.wasm").count()
    };
    let out = toolhost(dir.path(), &["list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(mentions(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).starts_with("warning: "), "{}", stderr(&out));
    let out = toolhost(dir.path(), &["call", "add", r#"{"a": 1, "b": 2}"#]);
    assert_eq!(mentions(&out), 1, "{}", stderr(&out));
    // status reports it in its table (the file, then the error naming it
    // again), and nowhere else.
    let out = toolhost(dir.path(), &["status"]);
    assert!(!out.status.success());
    assert!(!stderr(&out).contains("broken.wasm"), "{}", stderr(&out));
    let table = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        table.lines().filter(|l| l.contains("broken.wasm")).count(),
        1,
        "{table}"
    );
}

#[test]
fn an_unset_granted_variable_is_warned_about_once() {
    let dir = plugins_dir();
    let config = dir.path().join("toolhost.toml");
    std::fs::write(
        &config,
        "plugins = \".\"\n[plugin.echo.grants.env_vars]\nTOKEN = { from_env = \"TOOLHOST_TEST_SURELY_UNSET\" }\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--config")
        .arg(&config)
        .args(["--no-cache", "call", "add", r#"{"a": 1, "b": 2}"#])
        .env_remove("TOOLHOST_LOG")
        .env_remove("TOOLHOST_TEST_SURELY_UNSET")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stderr(&out).matches("TOOLHOST_TEST_SURELY_UNSET").count(),
        1,
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_io_error_is_said_once() {
    let dir = plugins_dir();
    let missing = dir.path().join("missing.wasm");
    let out = toolhost(dir.path(), &["inspect", missing.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert_eq!(err.matches("os error 2").count(), 1, "{err}");
    let config = dir.path().join("absent.toml");
    let out = toolhost_config(&config, &["list"]);
    assert!(!out.status.success());
    assert_eq!(
        stderr(&out).matches("os error 2").count(),
        1,
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let dir = plugins_dir();
    for args in [
        &["describe", "add"][..],
        &["list"],
        &["list", "--json"],
        &["status"],
        &["call", "add", r#"{"a": 1, "b": 2}"#],
        &["call", "countdown", r#"{"from": 3}"#],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .arg("--plugins")
            .arg(dir.path())
            .arg("--no-cache")
            .args(args)
            .env_remove("TOOLHOST_LOG")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes away before anything is written (as `| head -0`).
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?}");
    }
}

#[test]
fn serve_logs_each_load_reload_and_removal_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(ECHO, dir.path().join("echo.wasm")).unwrap();
    std::fs::copy(HOSTILE, dir.path().join("hostile.wasm")).unwrap();
    std::fs::write(dir.path().join("broken.wasm"), b"not wasm").unwrap();
    // caps and hostile both offer `ok`: a clash, warned about once however
    // many plugins load after both.
    std::fs::copy(toolhost_test_plugins::CAPS, dir.path().join("caps.wasm")).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--plugins")
        .arg(dir.path())
        .arg("--cache-dir")
        .arg(cache.path())
        .arg("serve")
        .env_remove("TOOLHOST_LOG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut log = Lines::follow(child.stderr.take().unwrap());
    // Nothing is cached yet: each plugin says it compiles, then that it loaded.
    log.wait_for("compiling echo");
    log.wait_for("compiling hostile");
    let echo = log.wait_for("load: loaded echo (");
    assert!(echo.contains(" INFO ") && echo.contains(" s "), "{echo}");
    log.wait_for("load: loaded hostile (");
    let broken = log.wait_for("not loaded: ");
    assert!(
        broken.contains(" WARN ") && broken.contains("broken.wasm"),
        "{broken}"
    );
    // A replaced file is loaded again, a removed one leaves.
    let next = dir.path().join("echo.wasm.new");
    std::fs::copy(toolhost_test_plugins::CHATTY, &next).unwrap();
    std::fs::rename(&next, dir.path().join("echo.wasm")).unwrap();
    log.wait_for("reloaded echo (");
    std::fs::remove_file(dir.path().join("hostile.wasm")).unwrap();
    log.wait_for("removed hostile");
    drop(child.stdin.take());
    let _ = child.wait();
    log.drain();
    for (needle, times) in [
        ("load: loaded echo (", 1),
        ("load: loaded hostile (", 1),
        ("load: reloaded echo (", 1),
        ("removed hostile", 1),
        ("broken.wasm", 1),
        ("compiling echo", 2),
        ("several plugins offer this tool", 1),
    ] {
        assert_eq!(log.count(needle), times, "{needle}: {:#?}", log.seen);
    }
    // Ungranted imports (caps's files and sockets) are no warning.
    assert_eq!(log.count("not granted"), 0, "{:#?}", log.seen);
}
