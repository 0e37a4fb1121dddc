//! Interop with `wkg` (bytecodealliance wasm-pkg-tools), the reference
//! writer of the Wasm OCI artifact layout, on a real `docker-registry`: what
//! `wkg oci push` writes, toolhost pulls and serves; what `toolhost push`
//! writes, `wkg oci pull` reads back byte for byte. `cargo xtask test` builds
//! wkg once into `<target>/tools/wkg` and names it in `$TOOLHOST_WKG`; without
//! it these tests fail, they do not skip.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use toolhost::oci::Digest;
use toolhost_test_plugins::{CALC, TEXT};

use crate::oci::{Registry, field, stderr, stdout, toolhost};

/// The wkg binary: `$TOOLHOST_WKG`, else where `cargo xtask test` installs it
/// (`<target>/tools/wkg/bin/wkg`, beside the `toolhost` binary's profile
/// directory).
fn wkg_binary() -> PathBuf {
    let how = "`cargo xtask test` builds it (or: cargo install --locked --debug --version 0.16.1 \
               wkg --root <target>/tools/wkg), or set TOOLHOST_WKG to a wkg 0.16.1 binary";
    if let Some(path) = std::env::var_os("TOOLHOST_WKG").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "TOOLHOST_WKG names {}, which is not a file; {how}",
            path.display()
        );
        return path;
    }
    let cached = Path::new(env!("CARGO_BIN_EXE_toolhost"))
        .parent()
        .and_then(Path::parent)
        .map(|target| target.join("tools/wkg/bin/wkg"))
        .unwrap();
    assert!(
        cached.is_file(),
        "these tests need wkg, and there is none at {} and TOOLHOST_WKG is unset; {how}",
        cached.display()
    );
    cached
}

/// Runs `wkg oci ARGS` against `registry` over plain HTTP, with no
/// credentials of the developer's (an empty Docker config).
fn wkg_oci(registry: &Registry, args: &[&str]) -> Output {
    let docker = tempfile::tempdir().unwrap();
    let out = Command::new(wkg_binary())
        .arg("oci")
        .args(args)
        .arg("--insecure")
        .arg(registry.address())
        .env("DOCKER_CONFIG", docker.path())
        .env_remove("WKG_OCI_USERNAME")
        .env_remove("WKG_OCI_PASSWORD")
        .env_remove("WKG_OCI_INSECURE")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "wkg oci {args:?} failed: {}{}",
        stdout(&out),
        stderr(&out)
    );
    out
}

#[test]
fn a_component_pushed_by_wkg_is_pulled_and_served_by_toolhost() {
    let registry = Registry::start();
    let bytes = std::fs::read(TEXT).unwrap();
    let tagged = format!("{}/tools/text:1.0", registry.address());
    let out = wkg_oci(&registry, &["push", &tagged, TEXT]);
    let digest = field(&out, "digest");
    assert!(digest.starts_with("sha256:"), "{}", stdout(&out));

    let plugins = tempfile::tempdir().unwrap();
    let dir = plugins.path().to_str().unwrap();
    let out = toolhost(&["pull", &tagged, "--insecure", "--to", dir]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Pinned to the manifest wkg wrote.
    assert_eq!(
        field(&out, "pulled"),
        format!("{}/tools/text@{digest}", registry.address())
    );
    assert!(field(&out, "sha256").starts_with(Digest::of(&bytes).hex()));
    let pulled = std::fs::read(plugins.path().join("text.wasm")).unwrap();
    assert!(pulled == bytes, "the pulled bytes are not the file's");

    // Served: the plugin loads from the directory and answers.
    let out = toolhost(&[
        "--plugins",
        dir,
        "call",
        "word_count",
        r#"{"text": "one two\nthree"}"#,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let counts: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(counts["words"], 3, "{counts}");
    assert_eq!(counts["lines"], 2, "{counts}");
}

#[test]
fn a_component_pushed_by_toolhost_is_pulled_by_wkg() {
    let registry = Registry::start();
    let bytes = std::fs::read(CALC).unwrap();
    let tagged = format!("{}/tools/calc:2.0", registry.address());
    let out = toolhost(&["push", CALC, &tagged, "--insecure"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let pinned = field(&out, "pushed");

    let dir = tempfile::tempdir().unwrap();
    for (reference, file) in [(&tagged, "by-tag.wasm"), (&pinned, "by-digest.wasm")] {
        let output = dir.path().join(file);
        wkg_oci(
            &registry,
            &["pull", reference, "--output", output.to_str().unwrap()],
        );
        let pulled = std::fs::read(&output).unwrap();
        assert!(pulled == bytes, "wkg pulled other bytes from {reference}");
    }
}
