//! cosign signatures on a real registry (the `docker-registry` of `oci.rs`):
//! `toolhost keygen`, `sign` and `pull --key`, and `[[sources]]` with
//! `require_signature`, which serve only versions signed with their keys and
//! keep the previous version serving otherwise.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use toolhost::PluginDir;
use toolhost::oci::{Reference, SigningKey, generate_key_pair};
use toolhost_test_plugins::{ECHO, TEXT};

use crate::oci::{Registry, client};
use crate::reload::names;
use crate::sources::{follow, push, source, status, until};

/// `toolhost ARGS` with `$COSIGN_PASSWORD` set to `password` (unset: `None`).
fn toolhost(args: &[&str], password: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    command
        .arg("--no-cache")
        .args(args)
        .env_remove("COSIGN_PASSWORD");
    if let Some(password) = password {
        command.env("COSIGN_PASSWORD", password);
    }
    command.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A key pair `dir/NAME.key` (encrypted with `password`) and `dir/NAME.pub`.
fn key_pair(dir: &Path, name: &str, password: &str) -> (PathBuf, PathBuf) {
    let (private, public) = generate_key_pair(password.as_bytes()).unwrap();
    let (key, public_key) = (
        dir.join(format!("{name}.key")),
        dir.join(format!("{name}.pub")),
    );
    std::fs::write(&key, private.as_bytes()).unwrap();
    std::fs::write(&public_key, public).unwrap();
    (key, public_key)
}

#[test]
fn the_cli_signs_and_pull_takes_only_what_the_key_signed() {
    let registry = Registry::start();
    let work = tempfile::tempdir().unwrap();
    let path = |name: &str| work.path().join(name).display().to_string();
    let reference = format!("{}/tools/echo:1", registry.address());

    // Key pairs as cosign makes them; never overwritten.
    let out = toolhost(&["keygen", &path("a")], Some("secret"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("a.pub"), "{}", text(&out.stdout));
    let first_key = std::fs::read(path("a.key")).unwrap();
    assert!(first_key.starts_with(b"-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----"));
    let out = toolhost(&["keygen", &path("a")], Some("secret"));
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("not overwritten"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read(path("a.key")).unwrap(), first_key);
    let out = toolhost(&["keygen", &path("b")], None);
    assert!(out.status.success(), "{}", text(&out.stderr));

    let out = toolhost(&["push", ECHO, &reference, "--insecure"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let pulled = work.path().join("pulled");
    let pull = |key: &str| {
        toolhost(
            &[
                "pull",
                &reference,
                "--insecure",
                "--to",
                &pulled.display().to_string(),
                "--key",
                key,
            ],
            None,
        )
    };

    // Unsigned: refused, nothing written.
    let out = pull(&path("a.pub"));
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("is not signed"),
        "{}",
        text(&out.stderr)
    );
    assert!(!pulled.join("echo.wasm").exists());

    // An encrypted key needs its password.
    let out = toolhost(
        &["sign", &reference, "--key", &path("a.key"), "--insecure"],
        None,
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("COSIGN_PASSWORD"),
        "{}",
        text(&out.stderr)
    );
    let out = toolhost(
        &["sign", &reference, "--key", &path("a.key"), "--insecure"],
        Some("wrong"),
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("cannot decrypt"),
        "{}",
        text(&out.stderr)
    );
    let out = toolhost(
        &["sign", &reference, "--key", &path("a.key"), "--insecure"],
        Some("secret"),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("(1 signature(s))"),
        "{}",
        text(&out.stdout)
    );
    assert!(text(&out.stdout).contains(".sig"), "{}", text(&out.stdout));

    // Signed, but not with b's key.
    let out = pull(&path("b.pub"));
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("has 1 signature(s), none made with the key(s)"),
        "{}",
        text(&out.stderr)
    );
    assert!(!pulled.join("echo.wasm").exists());

    // A second signature joins the first.
    let out = toolhost(
        &["sign", &reference, "--key", &path("b.key"), "--insecure"],
        Some(""),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("(2 signature(s))"),
        "{}",
        text(&out.stdout)
    );
    for key in ["a.pub", "b.pub"] {
        let out = pull(&path(key));
        assert!(out.status.success(), "{key}: {}", text(&out.stderr));
        assert!(text(&out.stdout).contains(&format!("signed:  with {}", path(key))));
        assert_eq!(
            std::fs::read(pulled.join("echo.wasm")).unwrap(),
            std::fs::read(ECHO).unwrap()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_requiring_signatures_serves_only_versions_signed_with_its_keys() {
    let mut registry = Registry::start();
    let keys = tempfile::tempdir().unwrap();
    let (a_key, a_pub) = key_pair(keys.path(), "a", "");
    let (b_key, b_pub) = key_pair(keys.path(), "b", "");
    let (a_key, b_key) = (
        SigningKey::read(&a_key, b"").unwrap(),
        SigningKey::read(&b_key, b"").unwrap(),
    );
    let tag: Reference = format!("{}/signed:1", registry.address()).parse().unwrap();
    let signer = client(&registry);
    let unsigned = source(&registry, "signed:1");
    let signed_source = |keys: Vec<PathBuf>| {
        let mut source = unsigned.clone();
        source.public_keys = keys;
        source
    };
    let serving_echo = |plugins: &PluginDir| names(plugins).contains(&"add".to_owned());

    let first = push(&registry, "signed:1", ECHO).await;
    signer.sign(&tag, &a_key).await.unwrap();
    let cache = tempfile::tempdir().unwrap();
    let (dir, plugins, sources) =
        follow(vec![signed_source(vec![a_pub.clone()])], cache.path()).await;
    assert_eq!(
        status(&sources).digest.as_ref(),
        Some(&first.manifest_digest)
    );
    assert_eq!(status(&sources).error, None);
    assert!(serving_echo(&plugins));

    // A new version, unsigned: refused, the first one serving.
    let second = push(&registry, "signed:1", TEXT).await;
    until(&sources, "the unsigned version refused", |s| {
        s.error
            .as_deref()
            .is_some_and(|e| e.contains("is not signed"))
    })
    .await;
    assert_eq!(
        status(&sources).digest.as_ref(),
        Some(&first.manifest_digest)
    );
    assert!(serving_echo(&plugins));

    // A restart meanwhile (a replica sharing the cache) serves the version
    // last verified, as the others do, and says why.
    {
        let source = signed_source(vec![a_pub.clone()]);
        let (_dir, plugins, restarted) = follow(vec![source], cache.path()).await;
        assert_eq!(
            status(&restarted).digest.as_ref(),
            Some(&first.manifest_digest)
        );
        let error = status(&restarted).error.unwrap_or_default();
        assert!(
            error.contains("is not signed") && error.contains("the version last verified here"),
            "{error}"
        );
        assert!(serving_echo(&plugins));
    }

    // Signed with another key: still refused.
    signer.sign(&tag, &b_key).await.unwrap();
    until(&sources, "the wrongly signed version refused", |s| {
        s.error
            .as_deref()
            .is_some_and(|e| e.contains("none made with the key(s)"))
    })
    .await;
    assert_eq!(
        status(&sources).digest.as_ref(),
        Some(&first.manifest_digest)
    );
    assert!(serving_echo(&plugins));

    // Signed with the source's key (after the fact): served.
    signer.sign(&tag, &a_key).await.unwrap();
    until(&sources, "the signed version served", |s| {
        s.digest.as_ref() == Some(&second.manifest_digest) && s.error.is_none()
    })
    .await;
    assert!(names(&plugins).contains(&"word_count".to_owned()));
    drop((sources, plugins, dir));

    // A restart while the registry is down serves the version whose
    // signature verified, but only for the same keys.
    registry.stop();
    let (_dir, plugins, sources) = follow(vec![signed_source(vec![a_pub])], cache.path()).await;
    assert_eq!(
        status(&sources).digest.as_ref(),
        Some(&second.manifest_digest)
    );
    assert!(names(&plugins).contains(&"word_count".to_owned()));
    let (_other, plugins, sources) = follow(vec![signed_source(vec![b_pub])], cache.path()).await;
    assert_eq!(status(&sources).digest, None);
    assert!(
        status(&sources)
            .error
            .as_deref()
            .is_some_and(|e| e.contains("never verified with these keys")),
        "{:?}",
        status(&sources)
    );
    assert!(names(&plugins).is_empty());
}
