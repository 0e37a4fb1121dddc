//! The `toolhost` binary, run as a user would.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use toolhost_test_plugins::{ECHO, HOSTILE, OTHER_WORLD};

// `read`, `prompt`, `list`'s catalog sections and questions on the terminal:
// a child module (it shares these helpers) in a file of its own.
#[path = "cli_catalog.rs"]
mod catalog;
// What a user who got something slightly wrong is told (issue 38).
#[path = "cli_messages.rs"]
mod messages;

fn plugins_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(ECHO, dir.path().join("echo.wasm")).unwrap();
    std::fs::copy(HOSTILE, dir.path().join("hostile.wasm")).unwrap();
    dir
}

fn toolhost(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--plugins")
        .arg(dir)
        .arg("--no-cache")
        .args(args)
        .output()
        .unwrap()
}

fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn list_shows_every_tool() {
    let dir = plugins_dir();
    let out = toolhost(dir.path(), &["list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.starts_with("PLUGIN"), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.split_whitespace().nth(1) == Some("countdown")),
        "{table}"
    );
    let out = toolhost(dir.path(), &["list", "--json"]);
    let rows = stdout_json(&out);
    let long_job = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["tool"] == "long_job")
        .unwrap();
    assert_eq!(long_job["long_running"], true);
    assert_eq!(long_job["plugin"], "echo");
}

#[test]
fn describe_prints_the_declaration() {
    let dir = plugins_dir();
    let out = toolhost(dir.path(), &["describe", "order"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let declaration = stdout_json(&out);
    assert_eq!(declaration["name"], "order");
    assert_eq!(declaration["parameters"]["type"], "object");
}

#[test]
fn call_prints_the_result() {
    let dir = plugins_dir();
    let out = toolhost(dir.path(), &["call", "add", r#"{"a": "42", "b": 1}"#]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout_json(&out), serde_json::json!({"result": 43}));
}

#[test]
fn call_reads_arguments_from_stdin() {
    use std::io::Write;
    let dir = plugins_dir();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--plugins")
        .arg(dir.path())
        .args(["--no-cache", "call", "add", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"a": 2, "b": 2}"#)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout_json(&out), serde_json::json!({"result": 4}));
}

#[test]
fn call_streams_chunks_as_json_lines() {
    let dir = plugins_dir();
    let out = toolhost(dir.path(), &["call", "countdown", r#"{"from": 2}"#]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["text"], "2\n");
}

/// Calls `pixel` with `--out-dir`; returns the file its image was written to.
fn write_pixel(out_dir: &Path) -> std::path::PathBuf {
    let dir = plugins_dir();
    let out = toolhost(
        dir.path(),
        &[
            "call",
            "pixel",
            "{}",
            "--out-dir",
            out_dir.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = stdout_json(&out);
    let image = printed["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["type"] == "image")
        .unwrap();
    let file = std::path::PathBuf::from(image["file"].as_str().unwrap());
    assert!(std::fs::read(&file).unwrap().starts_with(b"\x89PNG"));
    file
}

#[test]
fn call_writes_binary_parts_to_files() {
    let out_dir = tempfile::tempdir().unwrap();
    let file = write_pixel(out_dir.path());
    assert!(file.starts_with(out_dir.path()));
}

#[test]
fn a_looping_tool_fails_within_its_deadline() {
    let dir = plugins_dir();
    let out = toolhost(
        dir.path(),
        &[
            "--timeout-ms",
            "500",
            "--fuel",
            "1000000000000",
            "call",
            "spin",
        ],
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("ran out of time"), "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "one error line: {err}");
}

#[test]
fn the_output_cap_has_one_name_and_the_old_flag_still_works() {
    let dir = plugins_dir();
    for flag in ["--max-output-bytes", "--max-output"] {
        let out = toolhost(
            dir.path(),
            &[
                flag,
                "8",
                "call",
                "echo",
                r#"{"message": "more than eight bytes"}"#,
            ],
        );
        assert!(!out.status.success(), "{flag}");
        let err = stderr(&out);
        assert!(err.contains("ran out of output size"), "{flag}: {err}");
    }
}

#[test]
fn a_memory_hog_fails_with_a_memory_error() {
    let dir = plugins_dir();
    let out = toolhost(dir.path(), &["--memory-mib", "16", "call", "hog"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("ran out of memory"), "{err}");
}

#[test]
fn bad_arguments_exit_non_zero_with_every_problem() {
    let dir = plugins_dir();
    let out = toolhost(dir.path(), &["call", "order", r#"{"quantity": 120}"#]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("/quantity: 120 is greater than the maximum of 99"),
        "{err}"
    );
    assert!(err.contains("/item: required property is missing"), "{err}");
    let out = toolhost(dir.path(), &["call", "add", "not json"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("not valid JSON"));
    let out = toolhost(dir.path(), &["call", "no_such_tool"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("available tools"));
    // A slip gets the closest name instead of every name.
    let out = toolhost(dir.path(), &["call", "whomai"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("no tool named `whomai`; did you mean `whoami`?"),
        "{err}"
    );
    assert!(!err.contains("available tools"), "{err}");
}

#[test]
fn inspect_tells_what_a_file_is() {
    let dir = plugins_dir();
    let out = toolhost(dir.path(), &["inspect", ECHO, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let info = stdout_json(&out);
    assert_eq!(info["toolhost_version"], "0.4.0");
    assert!(
        info["imports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i.as_str().unwrap().starts_with("toolhost:plugin/host"))
    );
    assert!(info["tools"].as_array().unwrap().len() >= 5);
    // A file that offers no tool is not a plugin: reported, and a failure.
    let out = toolhost(dir.path(), &["inspect", OTHER_WORLD]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("not a toolhost plugin"));
}

#[test]
fn a_missing_plugins_directory_is_explained() {
    let out = toolhost(Path::new("/no/such/plugins"), &["list"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("does not exist"));
}

fn toolhost_config(config: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--config")
        .arg(config)
        .arg("--no-cache")
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn the_config_file_filters_aliases_confirms_and_limits() {
    let dir = plugins_dir();
    let config = dir.path().join("toolhost.toml");
    std::fs::write(
        &config,
        r#"
plugins = "."

[plugin.hostile.limits]
memory_mib = 16

[filter]
deny = ["fail", "busy_*"]

[confirm]
tools = ["long_job"]
hint = "Start the long job?"

[aliases.tools]
plus = "add"

[aliases.arguments.add]
x = "a"
"#,
    )
    .unwrap();
    let out = toolhost_config(&config, &["list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let names: Vec<String> = stdout_json(&out)
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["tool"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.contains(&"add".to_owned()), "{names:?}");
    assert!(!names.contains(&"fail".to_owned()), "{names:?}");
    assert!(!names.contains(&"busy_wait".to_owned()), "{names:?}");

    let out = toolhost_config(&config, &["call", "plus", r#"{"x": 2, "b": 3}"#]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout_json(&out), serde_json::json!({"result": 5}));

    let out = toolhost_config(&config, &["call", "fail"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no tool named `fail`"),
        "{}",
        stderr(&out)
    );

    let out = toolhost_config(&config, &["call", "long_job"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("needs confirmation") && err.contains("Start the long job?"),
        "{err}"
    );
    let out = toolhost_config(&config, &["call", "long_job", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout_json(&out)["status"], "pending");

    let out = toolhost_config(&config, &["call", "hog"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("ran out of memory (limit 16777216 bytes)"),
        "{err}"
    );
}

#[test]
fn a_bad_config_file_names_the_file_and_the_key() {
    let dir = plugins_dir();
    let config = dir.path().join("toolhost.toml");
    std::fs::write(&config, "[limits]\nfule = 3\n").unwrap();
    let out = toolhost_config(&config, &["list"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("toolhost.toml") && err.contains("fule") && err.contains("line 2"),
        "{err}"
    );
    std::fs::write(&config, "[aliases.tools]\nadd = \"echo\"\n").unwrap();
    let out = toolhost_config(
        &config,
        &["--plugins", dir.path().to_str().unwrap(), "list"],
    );
    assert!(!out.status.success());
    assert!(stderr(&out).contains("aliases"), "{}", stderr(&out));
}

#[test]
fn status_shows_loaded_and_failed_plugins() {
    let dir = plugins_dir();
    let out = toolhost(dir.path(), &["status"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("echo.wasm"));
    std::fs::write(dir.path().join("broken.wasm"), b"\0asm\x0d\0\x01\0\x01").unwrap();
    let out = toolhost(dir.path(), &["status", "--json"]);
    assert!(!out.status.success());
    let rows = stdout_json(&out)["plugins"].clone();
    let broken = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["file"] == "broken.wasm")
        .unwrap();
    assert_eq!(broken["state"], "failed");
    assert!(broken["error"].as_str().unwrap().contains("broken.wasm"));
    let echo = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["file"] == "echo.wasm")
        .unwrap();
    assert_eq!(echo["state"], "loaded");
    assert!(stderr(&out).contains("1 plugin file(s) failed"));
}

#[test]
fn out_dir_never_overwrites_a_file_or_follows_a_link() {
    let out_dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("precious.txt");
    std::fs::write(&target, "outside the out dir").unwrap();
    // `pixel`'s image has no name: it is written as part-1.png, unless taken.
    std::os::unix::fs::symlink(&target, out_dir.path().join("part-1.png")).unwrap();
    std::fs::write(out_dir.path().join("part-1-2.png"), "already here").unwrap();
    let file = write_pixel(out_dir.path());
    assert_eq!(file, out_dir.path().join("part-1-3.png"));
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "outside the out dir"
    );
    assert_eq!(
        std::fs::read_to_string(out_dir.path().join("part-1-2.png")).unwrap(),
        "already here"
    );
}

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

#[test]
fn a_qualified_name_works_without_a_clash() {
    let dir = plugins_dir();
    let out = toolhost(dir.path(), &["call", "echo.add", r#"{"a": 1, "b": 2}"#]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout_json(&out), serde_json::json!({"result": 3}));
    let out = toolhost(dir.path(), &["describe", "echo.add"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout_json(&out)["name"], "add");
}

#[test]
fn an_ambiguous_bare_name_lists_the_candidates() {
    let dir = plugins_dir();
    std::fs::copy(ECHO, dir.path().join("echo2.wasm")).unwrap();
    let out = toolhost(dir.path(), &["call", "add", r#"{"a": 1, "b": 2}"#]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("`add` is ambiguous") && err.contains("echo.add, echo2.add"),
        "{err}"
    );
    let out = toolhost(dir.path(), &["call", "echo2.add", r#"{"a": 1, "b": 2}"#]);
    assert!(out.status.success(), "{}", stderr(&out));
    // A tool of the other plugin that clashes with nothing keeps its bare name.
    let out = toolhost(dir.path(), &["describe", "hog"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// A config whose names partly match nothing: a typo in `[confirm]`, a
/// `[filter]` name, a `[plugin.NAME]` table and an alias of missing tools.
fn config_with_stale_names(dir: &Path) -> std::path::PathBuf {
    let config = dir.join("toolhost.toml");
    std::fs::write(
        &config,
        r#"
plugins = "."

[plugin.ecoh.grants]

[filter]
deny = ["nosuchtool"]

[confirm]
tools = ["long-job"]

[aliases.tools]
wc = "word_count"
plus = "add"
"#,
    )
    .unwrap();
    config
}

/// The warnings about config names that match nothing, one line each.
const STALE_WARNINGS: &[&str] = &[
    "[confirm] tools: `long-job` matches no tool, so this safeguard is off: no call asks for confirmation because of it; did you mean `long_job`?",
    "[filter] deny: `nosuchtool` matches no tool, so it hides nothing",
    "[aliases.tools] wc: `word_count` matches no tool, so the alias does not resolve",
    "[plugin.ecoh]: `ecoh` matches no plugin, so its settings apply to nothing; did you mean `echo`?",
];

fn assert_warned_once(err: &str) {
    for warning in STALE_WARNINGS {
        let lines = err.lines().filter(|l| l.ends_with(warning)).count();
        assert_eq!(lines, 1, "warned once: {warning}\n{err}");
    }
}

#[test]
fn config_names_that_match_nothing_are_warned_and_stop_nothing() {
    let dir = plugins_dir();
    let config = config_with_stale_names(dir.path());
    let out = toolhost_config(&config, &["list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_warned_once(&stderr(&out));
    // The alias of a missing tool is not listed; calling it says what it points at.
    let listed = stdout_json(&out).to_string();
    assert!(!listed.contains("\"wc\""), "{listed}");
    let out = toolhost_config(&config, &["call", "wc", r#"{"text": "a"}"#]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("`wc` is an alias of `word_count`, which does not resolve now"),
        "{err}"
    );
    assert_warned_once(&err);
    // Everything else works.
    let out = toolhost_config(&config, &["call", "plus", r#"{"a": 1, "b": 2}"#]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout_json(&out), serde_json::json!({"result": 3}));
}

#[test]
fn status_lists_config_names_that_match_nothing() {
    let dir = plugins_dir();
    let config = config_with_stale_names(dir.path());
    let out = toolhost_config(&config, &["status"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = String::from_utf8_lossy(&out.stdout);
    let section = table
        .split_once("CONFIG NAMES THAT MATCH NOTHING\n")
        .map(|(_, rest)| rest)
        .unwrap_or_else(|| panic!("no section: {table}"));
    assert_eq!(section.lines().collect::<Vec<_>>(), STALE_WARNINGS);
    let out = toolhost_config(&config, &["status", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let status = stdout_json(&out);
    let names: Vec<(String, String)> = status["unmatched_config_names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["from"].as_str().unwrap().to_owned(),
                n["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("[confirm] tools", "long-job"),
        ("[filter] deny", "nosuchtool"),
        ("[aliases.tools] wc", "word_count"),
        ("[plugin.ecoh]", "ecoh"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect();
    assert_eq!(names, expected);
    assert_eq!(
        status["unmatched_config_names"][0]["suggestion"],
        "long_job"
    );
    assert!(status["plugins"].as_array().unwrap().len() == 2);
}

#[test]
fn confirmation_holds_however_a_tool_is_called() {
    let dir = plugins_dir();
    let config = dir.path().join("toolhost.toml");
    std::fs::write(
        &config,
        "plugins = \".\"\n[confirm]\ntools = [\"add\"]\n[aliases.tools]\nplus = \"add\"\n",
    )
    .unwrap();
    for name in ["add", "echo.add", "plus"] {
        let out = toolhost_config(&config, &["call", name, r#"{"a": 1, "b": 2}"#]);
        assert!(!out.status.success(), "{name} ran without confirmation");
        assert!(
            stderr(&out).contains("needs confirmation"),
            "{name}: {}",
            stderr(&out)
        );
    }
    let out = toolhost_config(
        &config,
        &["call", "echo.add", r#"{"a": 1, "b": 2}"#, "--yes"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn serve_starts_with_stale_names_and_warns_once() {
    use std::io::{BufRead, Write};
    let dir = plugins_dir();
    let config = config_with_stale_names(dir.path());
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--config")
        .arg(&config)
        .args(["--no-cache", "serve", "--no-watch"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (lines, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if lines.send(line).is_err() {
                return;
            }
        }
    });
    let mut requests = vec![
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "cli-test", "version": "0"}}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ];
    for id in 3..6 {
        requests.push(
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "echo.add", "arguments": {"a": id, "b": 1}}}),
        );
    }
    requests.push(
        serde_json::json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
        "params": {"name": "wc", "arguments": {"text": "a"}}}),
    );
    for request in &requests {
        writeln!(stdin, "{request}").unwrap();
    }
    stdin.flush().unwrap();
    let mut answers = std::collections::BTreeMap::new();
    while answers.len() < 6 {
        // Bounds a hang only; no timing is asserted.
        let line = received
            .recv_timeout(std::time::Duration::from_secs(120))
            .expect("the server answers");
        let message: Value = serde_json::from_str(&line).unwrap();
        if let Some(id) = message["id"].as_u64() {
            answers.insert(id, message);
        }
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    let tools: Vec<&str> = answers[&2]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"add") && !tools.contains(&"wc"),
        "{tools:?}"
    );
    for id in 3..6 {
        let text = answers[&id]["result"]["content"][0]["text"]
            .as_str()
            .unwrap();
        let result: Value = serde_json::from_str(text).unwrap();
        assert_eq!(result, serde_json::json!({"result": id + 1}), "{err}");
    }
    let refused = answers[&6]["error"]["message"].as_str().unwrap();
    assert!(
        refused.contains("`wc` is an alias of `word_count`"),
        "{refused}"
    );
    // Warned once at start, not per list or call.
    assert_warned_once(&err);
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

/// Runs `toolhost ARGS` on a pseudo-terminal (with `script`, which `cargo
/// xtask test` installs), typing `typed`: whether it succeeded, and the screen.
fn on_a_terminal(config: &Path, args: &str, typed: &str) -> (bool, String) {
    use std::io::Write as _;
    let command = format!(
        "{} --config {} --no-cache {args}",
        env!("CARGO_BIN_EXE_toolhost"),
        config.display()
    );
    let mut child = match Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env_remove("TOOLHOST_LOG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => panic!(
            "cannot run `script` ({e}); these tests need it: `cargo xtask test` installs it \
             (Debian: apt-get install bsdutils)"
        ),
    };
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(typed.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn the_confirmation_prompt_asks_once_and_a_no_declines() {
    let dir = plugins_dir();
    let config = dir.path().join("toolhost.toml");
    std::fs::write(&config, "plugins = \".\"\n[confirm]\ntools = [\"add\"]\n").unwrap();
    let call = r#"call add '{"a": 40, "b": 2}'"#;
    let (ok, screen) = on_a_terminal(&config, call, "y\n");
    assert!(ok, "{screen}");
    assert_eq!(screen.matches("Run it?").count(), 1, "{screen}");
    assert!(screen.contains("\"result\": 42"), "{screen}");
    let (ok, screen) = on_a_terminal(&config, call, "n\n");
    assert!(!ok, "{screen}");
    assert_eq!(screen.matches("Run it?").count(), 1, "{screen}");
    assert!(screen.contains("declined: `add` was not run"), "{screen}");
    assert!(
        !screen.contains("--yes") && !screen.contains("result"),
        "{screen}"
    );
    // Without a terminal there is nobody to ask: the error says how to approve.
    let out = toolhost_config(&config, &["call", "add", r#"{"a": 40, "b": 2}"#]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("no terminal") && err.contains("--yes") && !err.contains("Run it?"),
        "{err}"
    );
}

/// Follows a child's stderr line by line, on a thread of its own.
struct Lines {
    lines: std::sync::mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Lines {
    fn follow(stderr: std::process::ChildStderr) -> Self {
        use std::io::BufRead as _;
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits for a line that contains `needle` (giving up after two minutes).
    fn wait_for(&mut self, needle: &str) -> String {
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(120);
        loop {
            if let Some(line) = self.seen.iter().find(|l| l.contains(needle)) {
                return line.clone();
            }
            let left = give_up.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(_) => panic!("no line with `{needle}` in: {:#?}", self.seen),
            }
        }
    }

    /// Takes every line left, until the stream ends.
    fn drain(&mut self) {
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while let Ok(line) = self
            .lines
            .recv_timeout(give_up.saturating_duration_since(std::time::Instant::now()))
        {
            self.seen.push(line);
        }
    }

    fn count(&self, needle: &str) -> usize {
        self.seen.iter().filter(|l| l.contains(needle)).count()
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

#[test]
fn list_check_reports_each_dialect_and_fails_on_a_refused_schema() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(ECHO, dir.path().join("echo.wasm")).unwrap();
    // Schemas the SDK derives pass every dialect.
    let out = toolhost(dir.path(), &["list", "--check"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout
            .lines()
            .next()
            .is_some_and(|l| l.split_whitespace().eq([
                "PLUGIN",
                "TOOL",
                "JSON-SCHEMA",
                "OPENAI-STRICT",
                "GEMINI"
            ])),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.split_whitespace().eq(["echo", "add", "ok", "ok", "ok"])),
        "{stdout}"
    );

    // A hand-written `{"type": "object"}` is a free-form object: strict mode refuses it.
    std::fs::copy(toolhost_test_plugins::RAW, dir.path().join("raw.wasm")).unwrap();
    let out = toolhost(dir.path(), &["list", "--check"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.lines().any(|l| l
            .split_whitespace()
            .eq(["raw", "not_json", "ok", "no", "ok"])),
        "{stdout}"
    );
    assert!(
        stdout.contains("not_json: openai-strict: the root: an object without properties"),
        "{stdout}"
    );
    assert!(stderr.contains("3 of "), "{stderr}");
    assert!(
        stderr.contains("refused or changed by a dialect"),
        "{stderr}"
    );

    let out = toolhost(dir.path(), &["list", "--check", "--json"]);
    assert!(!out.status.success());
    let rows = stdout_json(&out);
    let raw = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["tool"] == "bare_string")
        .unwrap_or_else(|| panic!("{rows:#}"));
    assert_eq!(
        raw["dialects"]["openai-strict"]["accepted"], false,
        "{raw:#}"
    );
    assert_eq!(raw["dialects"]["gemini"]["accepted"], true, "{raw:#}");
    assert_eq!(
        raw["dialects"]["openai-strict"]["problems"][0]["severity"],
        "error"
    );

    // `inspect` says the same per tool.
    let out = toolhost(
        dir.path(),
        &["inspect", &dir.path().join("raw.wasm").to_string_lossy()],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("    dialects: json-schema ok, openai-strict no, gemini ok"),
        "{stdout}"
    );
}
