//! What the `toolhost` binary tells a user who got something slightly wrong
//! (issue 38): an empty or broken plugins path, a misspelt argument key, a
//! file that is not a plugin, a configuration value of the wrong type.

use std::path::Path;
use std::process::{Command, Stdio};

use toolhost_test_plugins::{CALC, ECHO, FS, OTHER_WORLD, TEXT};

use super::{Lines, on_a_terminal, plugins_dir, stderr, stdout_json, toolhost};

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A plugins directory holding copies of `plugins`.
fn dir_of(plugins: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, path) in plugins {
        std::fs::copy(path, dir.path().join(format!("{name}.wasm"))).unwrap();
    }
    dir
}

#[test]
fn an_empty_plugins_directory_is_named_not_listed_as_an_empty_table() {
    let dir = tempfile::tempdir().unwrap();
    let out = toolhost(dir.path(), &["list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "", "no headers over nothing");
    let warning = format!("warning: no plugins in {}", dir.path().display());
    assert!(stderr(&out).contains(&warning), "{}", stderr(&out));
    // JSON stays JSON; the warning is on stderr.
    let out = toolhost(dir.path(), &["list", "--json"]);
    assert_eq!(stdout_json(&out), serde_json::json!([]));
    assert!(stderr(&out).contains(&warning), "{}", stderr(&out));
    let out = toolhost(dir.path(), &["status"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains(&warning), "{}", stderr(&out));
    let out = toolhost(dir.path(), &["call", "greet"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(&warning) && err.contains("no tools are available"),
        "{err}"
    );
}

#[test]
fn a_set_whose_plugins_all_failed_points_to_status() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("broken.wasm"), b"not wasm").unwrap();
    std::fs::write(dir.path().join("empty.wasm"), b"").unwrap();
    let out = toolhost(dir.path(), &["list"]);
    let err = stderr(&out);
    assert!(
        err.contains("warning: no tools are loaded (2 plugins failed: run `toolhost status`)"),
        "{err}"
    );
    assert_eq!(stdout(&out), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_signed_source_is_counted_among_the_failures() {
    let registry = crate::oci::Registry::start();
    crate::sources::push(&registry, "tools/echo:1", ECHO).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("live")).unwrap();
    let (_, public) = toolhost::oci::generate_key_pair(b"").unwrap();
    std::fs::write(dir.path().join("release.pub"), public).unwrap();
    let config = dir.path().join("signed.toml");
    std::fs::write(
        &config,
        format!(
            "plugins = \"live\"\n\n[[sources]]\nref = \"{}/tools/echo:1\"\ninsecure = true\n\
             require_signature = true\npublic_keys = [\"release.pub\"]\n",
            registry.address()
        ),
    )
    .unwrap();
    let cache = dir.path().join("cache");
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .arg("--config")
            .arg(&config)
            .arg("--cache-dir")
            .arg(&cache)
            .arg("list")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let err = stderr(&out);
    assert!(err.contains("is not signed"), "{err}");
    assert!(
        err.contains("warning: no tools are loaded (1 plugin failed: run `toolhost status`)"),
        "{err}"
    );
    assert_eq!(stdout(&out), "");
}

#[test]
fn serve_on_an_empty_directory_says_so_as_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--plugins")
        .arg(dir.path())
        .args(["--no-cache", "serve"])
        .env_remove("TOOLHOST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = Lines::follow(child.stderr.take().unwrap());
    let line = lines.wait_for("no plugins in");
    assert!(
        line.contains(&dir.path().display().to_string())
            && line.contains("serving no tools until plugins arrive"),
        "{line}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_single_wasm_file_is_a_set_of_one_plugin() {
    let dir = dir_of(&[("echo", ECHO)]);
    let file = dir.path().join("echo.wasm");
    let out = toolhost(&file, &["list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows = stdout_json(&out);
    assert!(
        rows.as_array().unwrap().iter().any(|r| r["tool"] == "add"),
        "{rows:#}"
    );
    let out = toolhost(&file, &["call", "add", r#"{"a": 40, "b": 2}"#]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout_json(&out), serde_json::json!({"result": 42}));
    // `serve` follows a directory, and says so.
    let out = toolhost(&file, &["serve"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("is a file") && err.contains("`toolhost serve` needs a directory"),
        "{err}"
    );
    assert!(!err.contains("does not exist"), "{err}");
    let out = toolhost(&dir.path().join("gone.wasm"), &["list"]);
    let err = stderr(&out);
    assert!(
        err.contains("plugin file") && err.contains("gone.wasm does not exist"),
        "{err}"
    );
}

#[test]
fn cargo_xtask_is_advised_only_for_the_default_directory_of_a_checkout() {
    let out = toolhost(Path::new("/no/such/plugins"), &["list"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("/no/such/plugins does not exist"), "{err}");
    assert!(!err.contains("cargo xtask"), "{err}");

    let checkout = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(checkout.path().join("xtask/src")).unwrap();
    std::fs::write(checkout.path().join("Cargo.toml"), "").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["--no-cache", "list"])
        .current_dir(checkout.path())
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("TOOLHOST_CONFIG")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            "target/plugins does not exist (build the examples with `cargo xtask plugins`"
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_misspelt_argument_key_gets_its_path_and_the_key_it_meant() {
    let dir = dir_of(&[("calc", CALC), ("fs", FS)]);
    let out = toolhost(dir.path(), &["call", "evaluate", r#"{"expresion": "1+1"}"#]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("/expresion: unexpected property; did you mean \"expression\"?"),
        "{err}"
    );
    assert!(!err.contains("Additional properties"), "{err}");
    // Types in words, several as a list.
    let out = toolhost(
        dir.path(),
        &["call", "read_file", r#"{"path": 42, "max_bytes": "lots"}"#],
    );
    let err = stderr(&out);
    assert!(err.contains("/path: 42 is not a string"), "{err}");
    assert!(
        err.contains("/max_bytes: \"lots\" is not an integer or null"),
        "{err}"
    );
}

#[test]
fn inspect_of_a_file_that_is_not_a_plugin_fails() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["inspect", OTHER_WORLD][..],
        &["inspect", "--json", OTHER_WORLD],
    ] {
        let out = toolhost(dir.path(), args);
        assert!(!out.status.success(), "{}", stdout(&out));
        assert!(
            stderr(&out).contains("is not a toolhost plugin"),
            "{}",
            stderr(&out)
        );
    }
    // The report is still printed.
    let out = toolhost(dir.path(), &["inspect", OTHER_WORLD]);
    assert!(
        stdout(&out).contains("not a toolhost plugin"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn list_shows_a_streaming_tools_name_alone() {
    let dir = dir_of(&[("text", TEXT)]);
    let out = toolhost(dir.path(), &["list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    assert!(table.lines().next().unwrap().contains("STREAMS"), "{table}");
    let row = table
        .lines()
        .find(|l| l.contains("split_lines"))
        .unwrap_or_else(|| panic!("{table}"));
    let columns: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(columns[..4], ["text", "split_lines", "no", "yes"], "{row}");
    assert!(!table.contains("(stream)"), "{table}");
}

#[test]
fn a_hint_that_asks_is_the_question() {
    let dir = plugins_dir();
    let config = dir.path().join("toolhost.toml");
    std::fs::write(
        &config,
        "plugins = \".\"\n[confirm]\ntools = [\"add\"]\nhint = \"This adds. Run it?\"\n",
    )
    .unwrap();
    let (ok, screen) = on_a_terminal(&config, r#"call add '{"a": 1, "b": 2}'"#, "y\n");
    assert!(ok, "{screen}");
    assert_eq!(screen.matches("Run it?").count(), 1, "{screen}");
    assert!(screen.contains("This adds. Run it? [y/N]"), "{screen}");
}

#[test]
fn a_config_value_of_the_wrong_type_names_its_key_in_plain_words() {
    let dir = plugins_dir();
    let config = dir.path().join("toolhost.toml");
    std::fs::write(&config, "plugins = \".\"\n\n[limits]\nfuel = -5\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--config")
        .arg(&config)
        .arg("list")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("`limits.fuel`: line 4:") && err.contains("a whole number ≥ 0"),
        "{err}"
    );
    assert!(!err.contains("u64"), "{err}");
}
