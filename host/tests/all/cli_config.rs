//! The configuration file as the `toolhost` commands apply it: filters,
//! aliases, confirmation and limits; a bad file named with its key; the names
//! in it that match nothing, warned about once.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::{plugins_dir, stderr, stdout_json, toolhost_config};

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
