//! Capabilities: nothing is granted by default, grants give exactly what they
//! say, and hostile guests that reach beyond them are refused with a clear
//! error while the host keeps serving. Each test checks that nothing outside
//! the grants was read or changed.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Value, json};
use toolhost::policy::{Access, Grants, Secret};
use toolhost::tool::ToolCall;
use toolhost::{CallError, Plugin, PluginOptions, ToolOutput};
use toolhost_test_plugins::{CAPS, FS};

use crate::{engine, plugin, plugin_with};

mod outside;
mod sidecar;

const SECRET_TEXT: &str = "the host's secret: do not leak";
const INSIDE_TEXT: &str = "inside the grant\nsecond line mentions needle\n";

/// Every log event of the test binary, as text (one global subscriber).
pub(crate) fn logs() -> &'static Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let writer = Arc::clone(&buffer);
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .with_ansi(false)
            .with_writer(move || LogWriter(Arc::clone(&writer)))
            .finish();
        tracing::subscriber::set_global_default(subscriber)
            .expect("only the capability tests install a subscriber");
        buffer
    })
}

struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The log lines that mention `needle` (a call ID or a unique plugin name).
pub(crate) fn log_lines(needle: &str) -> Vec<String> {
    let text = String::from_utf8_lossy(&logs().lock().unwrap()).into_owned();
    text.lines()
        .filter(|l| l.contains(needle))
        .map(str::to_owned)
        .collect()
}

/// A temp tree: `grant/` (handed to the guest) and `outside/` (never), with a
/// symlink inside the grant to each of the outside file and directory.
pub(crate) struct Tree {
    _dir: tempfile::TempDir,
    pub(crate) grant: PathBuf,
    pub(crate) outside: PathBuf,
}

pub(crate) fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let grant = dir.path().join("grant");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(grant.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(grant.join("inside.txt"), INSIDE_TEXT).unwrap();
    std::fs::write(grant.join("sub/deep.txt"), "deep needle here\n").unwrap();
    std::fs::write(outside.join("secret.txt"), SECRET_TEXT).unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), grant.join("escape")).unwrap();
    std::os::unix::fs::symlink(&outside, grant.join("escape_dir")).unwrap();
    Tree {
        _dir: dir,
        grant,
        outside,
    }
}

/// The names and contents of every file under `dir` (symlinks as their target).
fn snapshot(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if meta.file_type().is_symlink() {
            out.push((
                name,
                format!("-> {}", std::fs::read_link(&path).unwrap().display()),
            ));
        } else if meta.is_dir() {
            for (sub, content) in snapshot(&path) {
                out.push((format!("{name}/{sub}"), content));
            }
        } else {
            out.push((name, std::fs::read_to_string(&path).unwrap()));
        }
    }
    out.sort();
    out
}

fn options(grants: Grants) -> PluginOptions {
    let mut options = PluginOptions::default();
    options.grants(grants);
    options
}

fn ro_grant(tree: &Tree) -> Grants {
    let mut grants = Grants::default();
    grants.dir(&tree.grant, "/data", Access::ReadOnly);
    grants
}

async fn call(plugin: &Plugin, tool: &str, args: Value) -> Result<ToolOutput, CallError> {
    plugin.invoke(ToolCall::new(tool, args)).await
}

async fn call_id(
    plugin: &Plugin,
    tool: &str,
    args: Value,
    id: &str,
) -> Result<ToolOutput, CallError> {
    plugin
        .invoke(ToolCall::new(tool, args).with_call_id(id))
        .await
}

/// The tool's own failure message; panics on anything else.
fn failure(result: Result<ToolOutput, CallError>) -> String {
    match result {
        Err(CallError::Failed { message, .. }) => message,
        other => panic!("expected the tool to fail with an error, got {other:?}"),
    }
}

fn result(output: ToolOutput) -> Value {
    output.result.expect("a JSON result")["result"].clone()
}

async fn still_serves(plugin: &Plugin) {
    let out = call(plugin, "ok", json!({}))
        .await
        .expect("a normal call still works");
    assert_eq!(out.result, Some(json!({"ok": true})));
}

#[tokio::test]
async fn nothing_is_granted_by_default() {
    let caps = plugin(CAPS).await;
    let err = failure(call(&caps, "read", json!({"path": "/etc/passwd"})).await);
    assert!(err.contains("/etc/passwd"), "{err}");
    assert!(!err.contains("root:"), "{err}");
    let err = failure(call(&caps, "list", json!({"path": "/"})).await);
    assert!(err.starts_with("/:"), "{err}");
    let env = call(&caps, "environment", json!({})).await.unwrap();
    let env = env.result.unwrap();
    assert_eq!(env["env"], json!([]), "no environment is inherited");
    assert_eq!(env["args"], json!([]), "no arguments are inherited");
    let err = failure(call(&caps, "env", json!({"name": "PATH"})).await);
    assert!(err.contains("`PATH`") && err.contains("not found"), "{err}");
    still_serves(&caps).await;
}

#[tokio::test]
async fn reads_outside_a_grant_are_refused() {
    let tree = tree();
    let before = snapshot(&tree.outside);
    let caps = plugin_with(CAPS, &options(ro_grant(&tree))).await;
    let inside = call(&caps, "read", json!({"path": "/data/inside.txt"}))
        .await
        .unwrap();
    assert_eq!(result(inside), INSIDE_TEXT);
    let secret_host_path = tree.outside.join("secret.txt").display().to_string();
    for path in [
        "/etc/passwd".to_owned(),
        "/data/../outside/secret.txt".to_owned(),
        "/data/sub/../../outside/secret.txt".to_owned(),
        "../outside/secret.txt".to_owned(),
        secret_host_path,
        "/data/escape".to_owned(),
        "/data/escape_dir/secret.txt".to_owned(),
    ] {
        let err = failure(call(&caps, "read", json!({"path": path})).await);
        assert!(err.starts_with(&format!("{path}: ")), "{path}: {err}");
        assert!(
            !err.contains(SECRET_TEXT) && !err.contains("root:"),
            "{path}: {err}"
        );
    }
    let err = failure(call(&caps, "list", json!({"path": "/data/escape_dir"})).await);
    assert!(err.starts_with("/data/escape_dir: "), "{err}");
    assert_eq!(snapshot(&tree.outside), before, "nothing outside changed");
    still_serves(&caps).await;
}

#[tokio::test]
async fn a_read_only_grant_refuses_every_write() {
    let tree = tree();
    let before = snapshot(&tree.grant);
    let caps = plugin_with(CAPS, &options(ro_grant(&tree))).await;
    for path in ["/data/new.txt", "/data/inside.txt", "/data/sub/deep.txt"] {
        let err = failure(call(&caps, "write", json!({"path": path, "text": "x"})).await);
        assert!(err.starts_with(&format!("{path}: ")), "{err}");
        assert!(
            err.contains("ermission") || err.contains("ot permitted") || err.contains("ead-only"),
            "a permission error: {err}"
        );
    }
    let fs = plugin_with(FS, &options(ro_grant(&tree))).await;
    let err = failure(
        call(
            &fs,
            "write_file",
            json!({"path": "/data/inside.txt", "text": "x", "append": true}),
        )
        .await,
    );
    assert!(err.starts_with("/data/inside.txt: "), "{err}");
    assert_eq!(
        snapshot(&tree.grant),
        before,
        "nothing in the grant changed"
    );
    still_serves(&caps).await;
}

#[tokio::test]
async fn writes_outside_a_read_write_grant_are_refused() {
    let tree = tree();
    let before = snapshot(&tree.outside);
    let mut grants = Grants::default();
    grants.dir(&tree.grant, "/data", Access::ReadWrite);
    let caps = plugin_with(CAPS, &options(grants)).await;
    let out = call(
        &caps,
        "write",
        json!({"path": "/data/new.txt", "text": "made"}),
    )
    .await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(tree.grant.join("new.txt")).unwrap(),
        "made"
    );
    for path in [
        "/data/../outside/evil.txt",
        "/data/escape",
        "/data/escape_dir/secret.txt",
        "/data/escape_dir/evil.txt",
        "/tmp/evil.txt",
    ] {
        let err = failure(call(&caps, "write", json!({"path": path, "text": "evil"})).await);
        assert!(err.starts_with(&format!("{path}: ")), "{err}");
    }
    assert_eq!(snapshot(&tree.outside), before, "nothing outside changed");
    assert!(!Path::new("/tmp/evil.txt").exists());
    still_serves(&caps).await;
}

#[tokio::test]
async fn only_granted_environment_variables_are_seen() {
    let dir = tempfile::tempdir().unwrap();
    let secret_file = dir.path().join("token");
    std::fs::write(&secret_file, "tok-123\n").unwrap();
    let config = toolhost::policy::GrantsConfig::parse(
        &format!(
            "env = [\"PATH\"]\n[env_vars]\nGREETING = {{ value = \"hello\" }}\nTOKEN = {{ from_file = {:?} }}\n",
            secret_file.display().to_string()
        ),
        &dir.path().join("caps.policy.toml"),
    )
    .unwrap();
    let grants = config
        .resolve(&dir.path().join("caps.policy.toml"), "")
        .unwrap();
    let caps = plugin_with(CAPS, &options(grants)).await;
    let env = call(&caps, "environment", json!({}))
        .await
        .unwrap()
        .result
        .unwrap();
    assert_eq!(env["env"], json!(["GREETING", "PATH", "TOKEN"]));
    let value = |name: &'static str| {
        let caps = caps.clone();
        async move { call(&caps, "env", json!({"name": name})).await }
    };
    assert_eq!(result(value("GREETING").await.unwrap()), "hello");
    assert_eq!(result(value("TOKEN").await.unwrap()), "tok-123");
    assert_eq!(
        result(value("PATH").await.unwrap()),
        std::env::var("PATH").unwrap()
    );
    let err = failure(value("HOME").await);
    assert!(err.contains("`HOME`") && err.contains("not found"), "{err}");
    // The values are never printed: not by Debug, not in the summary `list` shows.
    let shown = format!(
        "{:?} {:?} {}",
        caps,
        caps.grants(),
        caps.grants().summary().join("; ")
    );
    assert!(
        !shown.contains("tok-123") && !shown.contains("hello"),
        "{shown}"
    );
    assert!(shown.contains("TOKEN"), "{shown}");
    still_serves(&caps).await;
}

#[tokio::test]
async fn secrets_from_the_host_environment_are_never_printed() {
    let mut grants = Grants::default();
    let path = std::env::var("PATH").unwrap();
    grants.secret("API_TOKEN", Secret::new(path.clone()));
    assert!(!format!("{grants:?}").contains(&path));
    let config = toolhost::policy::GrantsConfig::parse(
        "[env_vars]\nAPI_TOKEN = { from_env = \"PATH\" }\nMISSING = { from_env = \"TOOLHOST_SURELY_UNSET_VAR\" }\n",
        Path::new("t.policy.toml"),
    )
    .unwrap();
    let grants = config.resolve(Path::new("t.policy.toml"), "").unwrap();
    assert_eq!(
        grants.env_vars().len(),
        1,
        "a missing host variable is left unset"
    );
    let caps = plugin_with(CAPS, &options(grants)).await;
    let out = call(&caps, "env", json!({"name": "API_TOKEN"}))
        .await
        .unwrap();
    assert_eq!(result(out), path);
    assert!(!format!("{:?}", caps.grants()).contains(&path));
}

/// Runtimes import files and sockets whether or not a tool uses them: an
/// ungranted import is shown by `list`, and a call that actually reaches for
/// it is logged then (see `network.rs`); loading says nothing above debug.
#[tokio::test]
async fn an_ungranted_import_loads_quietly() {
    logs();
    let mut options = PluginOptions::default();
    options.name("caps-ungranted-warning");
    let caps = plugin_with(CAPS, &options).await;
    let ungranted = caps.ungranted_imports();
    assert!(
        ungranted.iter().any(|i| i.starts_with("wasi:filesystem/")),
        "{ungranted:?}"
    );
    assert!(
        ungranted.iter().any(|i| i.starts_with("wasi:sockets/tcp")),
        "{ungranted:?}"
    );
    let warnings = log_lines("caps-ungranted-warning");
    assert!(
        !warnings.iter().any(|l| l.contains("not granted")),
        "{warnings:#?}"
    );
    let requested: Vec<String> = caps.requested().iter().map(ToString::to_string).collect();
    assert!(requested.contains(&"files".to_owned()), "{requested:?}");
    // A plugin that does not import the filesystem gets no such warning.
    let echo = plugin(toolhost_test_plugins::ECHO).await;
    assert!(
        echo.ungranted_imports().is_empty(),
        "{:?}",
        echo.ungranted_imports()
    );
    still_serves(&caps).await;
}

#[tokio::test]
async fn a_stdout_flood_is_capped_and_logged_with_plugin_and_call() {
    logs();
    let mut options = PluginOptions::default();
    options.limits.max_stdio_bytes(4096);
    let caps = plugin_with(CAPS, &options).await;
    let out = call_id(&caps, "flood", json!({"bytes": 4 << 20}), "flood-call-7")
        .await
        .unwrap();
    assert!(out.result.unwrap()["written"].as_u64().unwrap() >= 4 << 20);
    let lines = log_lines("flood-call-7");
    let text = lines.join("\n");
    assert!(text.contains("flood line 00000000"), "{text}");
    assert!(
        text.contains("plugin=caps") || text.contains("plugin=\"caps\""),
        "{text}"
    );
    assert!(
        text.contains("flood: starting"),
        "stderr is logged too: {text}"
    );
    assert!(text.contains("bytes dropped"), "{text}");
    assert!(
        !text.contains("flood line 00001000"),
        "nothing past the cap is logged"
    );
    let logged: usize = lines.iter().filter(|l| l.contains("flood line")).count();
    assert!(logged <= 4096 / 20 + 1, "{logged} lines logged");
    still_serves(&caps).await;
}

#[tokio::test]
async fn fs_plugin_reads_lists_writes_and_searches_inside_its_grant() {
    let tree = tree();
    let work = tempfile::tempdir().unwrap();
    let mut grants = Grants::default();
    grants
        .dir(&tree.grant, "/repo", Access::ReadOnly)
        .dir(work.path(), "/out", Access::ReadWrite);
    let fs = plugin_with(FS, &options(grants)).await;
    let read = call(&fs, "read_file", json!({"path": "/repo/inside.txt"}))
        .await
        .unwrap();
    let read = read.result.unwrap();
    assert_eq!(read["text"], INSIDE_TEXT);
    assert_eq!(read["truncated"], false);
    let head = call(
        &fs,
        "read_file",
        json!({"path": "/repo/inside.txt", "max_bytes": 6}),
    )
    .await
    .unwrap()
    .result
    .unwrap();
    assert_eq!(head["text"], "inside");
    assert_eq!(head["truncated"], true);
    let listed = result(
        call(&fs, "list_dir", json!({"path": "/repo"}))
            .await
            .unwrap(),
    );
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["escape", "escape_dir", "inside.txt", "sub"]);
    assert_eq!(listed[0]["kind"], "symlink");
    let written = call(
        &fs,
        "write_file",
        json!({"path": "/out/report.md", "text": "# Report\n"}),
    )
    .await
    .unwrap();
    assert_eq!(written.result.unwrap()["bytes"], 9);
    call(
        &fs,
        "write_file",
        json!({"path": "/out/report.md", "text": "more\n", "append": true}),
    )
    .await
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(work.path().join("report.md")).unwrap(),
        "# Report\nmore\n"
    );
    let found = call(
        &fs,
        "search_files",
        json!({"path": "/repo", "text": "NEEDLE", "ignore_case": true}),
    )
    .await
    .unwrap()
    .result
    .unwrap();
    let matches = found["matches"].as_array().unwrap();
    assert_eq!(matches.len(), 2, "{found}");
    assert_eq!(matches[0]["path"], "/repo/inside.txt");
    assert_eq!(matches[0]["line"], 2);
    assert_eq!(matches[1]["path"], "/repo/sub/deep.txt");
    assert!(
        !found.to_string().contains(SECRET_TEXT),
        "symlinks are not followed out"
    );
    let err = failure(call(&fs, "read_file", json!({"path": "/repo/escape"})).await);
    assert!(err.starts_with("/repo/escape: "), "{err}");
    let err = failure(call(&fs, "read_file", json!({"path": "/repo/missing.txt"})).await);
    assert!(err.contains("No such file"), "{err}");
}

#[tokio::test]
async fn a_granted_directory_that_vanished_is_a_host_error_for_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone");
    std::fs::create_dir(&gone).unwrap();
    let mut grants = Grants::default();
    grants.dir(&gone, "/gone", Access::ReadOnly);
    let caps = plugin_with(CAPS, &options(grants)).await;
    std::fs::remove_dir(&gone).unwrap();
    let err = call(&caps, "ok", json!({})).await.unwrap_err();
    assert!(matches!(err, CallError::Host { .. }), "{err:?}");
    assert!(err.to_string().contains("cannot be opened"), "{err}");
    std::fs::create_dir(&gone).unwrap();
    still_serves(&caps).await;
}

#[test]
fn cli_list_shows_what_each_plugin_asks_for_and_is_granted() {
    let tree = tree();
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(CAPS, dir.path().join("caps.wasm")).unwrap();
    std::fs::copy(FS, dir.path().join("fs.wasm")).unwrap();
    std::fs::copy(toolhost_test_plugins::ECHO, dir.path().join("echo.wasm")).unwrap();
    std::fs::write(dir.path().join("token.txt"), "tok-secret-value\n").unwrap();
    let config = dir.path().join("toolhost.toml");
    std::fs::write(
        &config,
        format!(
            r#"
plugins = "."
[plugin.fs.grants]
dirs = [{{ host = {:?}, guest = "/repo" }}]
[plugin.fs.grants.env_vars]
TOKEN = {{ from_file = "token.txt" }}
"#,
            tree.grant.display().to_string()
        ),
    )
    .unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .arg("--config")
            .arg(&config)
            .arg("--no-cache")
            .args(args)
            .env("TOOLHOST_LOG", "warn")
            .output()
            .unwrap()
    };
    let out = run(&["list"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{stderr}");
    let row = |name: &str| {
        stdout
            .lines()
            .skip_while(|l| !l.contains("ASKS FOR"))
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("a capabilities row for {name}: {stdout}"))
            .to_owned()
    };
    let fs = row("fs");
    assert!(
        fs.contains("files") && fs.contains("/repo (ro)") && fs.contains("env TOKEN"),
        "{fs}"
    );
    let caps = row("caps");
    assert!(
        caps.contains("files!") && caps.contains("tcp!") && caps.contains("nothing"),
        "{caps}"
    );
    assert!(!row("echo").contains('!'), "{}", row("echo"));
    // The footnote says what `!` means, and that a runtime's imports a tool
    // does not use need no grant.
    assert!(
        stdout.contains("one that does not runs as usual") && stdout.contains("Language runtimes"),
        "{stdout}"
    );
    assert!(!stdout.contains("tok-secret-value") && !stderr.contains("tok-secret-value"));
    assert!(
        !stderr.contains("not granted"),
        "ungranted imports are in the table, not in the log: {stderr}"
    );
    let out = run(&["list", "--json"]);
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let read_file = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["tool"] == "read_file")
        .unwrap();
    assert!(
        read_file["asks"]
            .as_array()
            .unwrap()
            .contains(&json!("files"))
    );
    assert!(
        read_file["granted"][0]
            .as_str()
            .unwrap()
            .contains("/repo (ro)")
    );
    // The grant works through the CLI too.
    let out = run(&["call", "read_file", r#"{"path": "/repo/inside.txt"}"#]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["text"], INSIDE_TEXT);
    // inspect lists the WASI imports and the capabilities they ask for.
    let out = run(&["inspect", dir.path().join("caps.wasm").to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("wasi:filesystem/preopens"), "{text}");
    assert!(text.contains("asks:") && text.contains("files"), "{text}");
    // A bad grant in the config names the file and the key.
    std::fs::write(
        &config,
        "[plugin.fs.grants]\ndirs = [{ host = \"missing\", guest = \"/x\" }]\n",
    )
    .unwrap();
    let out = run(&["list"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("toolhost.toml") && err.contains("plugin.fs.grants.dirs[0].host"),
        "{err}"
    );
}
