//! A path outside every grant reads as a missing file to the guest (its libc
//! resolves paths against its preopened directories and fails the open
//! itself); the call's error adds that the path is outside the grants and
//! which key grants one, and the host logs it. A missing file inside a grant
//! stays a plain "not found".

use serde_json::json;
use toolhost::policy::{Access, Grants};
use toolhost_test_plugins::FS;

use super::{call_id, failure, log_lines, logs, options, tree};
use crate::plugin_with;

const NOT_FOUND: &str = "No such file or directory";
const OUTSIDE: &str = "is outside this plugin's granted directories";

#[tokio::test]
async fn a_path_outside_every_grant_is_named_in_the_error_and_the_log() {
    logs(); // Installed before the calls whose lines are read.
    let tree = tree();
    let fs = plugin_with(FS, &options(Grants::default())).await;
    let err = failure(
        call_id(
            &fs,
            "read_file",
            json!({"path": "/etc/passwd"}),
            "outside-1",
        )
        .await,
    );
    assert!(
        err.starts_with(&format!("/etc/passwd: {NOT_FOUND}")),
        "{err}"
    );
    assert!(
        err.contains(&format!("`/etc/passwd` {OUTSIDE} (it has none)")),
        "{err}"
    );
    assert!(
        err.contains("dirs = [") && err.contains(".grants]` of toolhost.toml"),
        "{err}"
    );
    let lines = log_lines("outside-1");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("WARN") && l.contains("refused /etc/passwd")),
        "{lines:#?}"
    );

    let mut grants = Grants::default();
    grants.dir(&tree.grant, "/data", Access::ReadOnly);
    let fs = plugin_with(FS, &options(grants)).await;
    let err = failure(
        call_id(
            &fs,
            "read_file",
            json!({"path": "/data/missing.txt"}),
            "outside-2",
        )
        .await,
    );
    assert_eq!(err, format!("/data/missing.txt: {NOT_FOUND} (os error 44)"));
    assert!(
        log_lines("outside-2").is_empty(),
        "{:#?}",
        log_lines("outside-2")
    );
    let err = failure(call_id(&fs, "list_dir", json!({"path": "/srv"}), "outside-3").await);
    assert!(err.contains(&format!("`/srv` {OUTSIDE} (/data)")), "{err}");
}

#[test]
fn cli_a_refused_file_says_how_to_grant_it_and_a_missing_one_does_not() {
    let tree = tree();
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(FS, dir.path().join("fs.wasm")).unwrap();
    let config = dir.path().join("toolhost.toml");
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .arg("--config")
            .arg(&config)
            .arg("--no-cache")
            .args(args)
            .output()
            .unwrap();
        assert!(
            !out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let read = |path: &str| run(&["call", "read_file", &json!({ "path": path }).to_string()]);

    std::fs::write(&config, "plugins = \".\"\n").unwrap();
    let err = read("/etc/passwd");
    assert!(err.contains(&format!("/etc/passwd: {NOT_FOUND}")), "{err}");
    assert!(
        err.contains(&format!("`/etc/passwd` {OUTSIDE} (it has none)")),
        "{err}"
    );
    assert!(
        err.contains("`[plugin.fs.grants]` of toolhost.toml"),
        "{err}"
    );
    assert!(!err.contains("root:"), "{err}");

    std::fs::write(
        &config,
        format!(
            "plugins = \".\"\n[plugin.fs.grants]\ndirs = [{{ host = {:?}, guest = \"/repo\" }}]\n",
            tree.grant.display().to_string()
        ),
    )
    .unwrap();
    let err = read("/repo/missing.txt");
    assert!(
        err.contains(&format!("/repo/missing.txt: {NOT_FOUND}")),
        "{err}"
    );
    assert!(!err.contains(OUTSIDE) && !err.contains("grants]"), "{err}");
    let err = read("/etc/passwd");
    assert!(
        err.contains(&format!("`/etc/passwd` {OUTSIDE} (/repo)")),
        "{err}"
    );
}
