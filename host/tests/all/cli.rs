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
// The configuration file as the commands apply it, and its stale names.
#[path = "cli_config.rs"]
mod config;
// What goes to stderr: said once, plainly, never forged by a guest.
#[path = "cli_logs.rs"]
mod logs;

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
