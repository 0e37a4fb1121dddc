//! Live sources (`[[sources]]`) against a real registry (the `docker-registry`
//! of `oci.rs`): a tag pulled and served, a tag moved under a running set or
//! server, and failures that keep the previous version serving.
//!
//! Polls are sub-second (`poll_secs` takes fractions); waits are bounded
//! only to stop a hang, nothing is timed.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use toolhost::oci::{ClientOptions, Digest, Pushed, Reference, Source, SourceStatus, Sources};
use toolhost::tool::Part;
use toolhost::{CallError, Context, PluginDir, PluginOptions, ToolsetExt};
use toolhost_test_plugins::{BAD_SCHEMA, ECHO, TEXT};

use crate::engine;
use crate::oci::{Registry, client, push_raw, raw_client};
use crate::reload::names;

/// Bounds a wait that would otherwise hang (no timing is asserted).
const PATIENCE: Duration = Duration::from_secs(60);

pub(crate) async fn push(registry: &Registry, reference: &str, file: &str) -> Pushed {
    let reference: Reference = format!("{}/{reference}", registry.address())
        .parse()
        .unwrap();
    client(registry)
        .push(&reference, &std::fs::read(file).unwrap())
        .await
        .unwrap()
}

/// A source of `reference` on `registry`, over plain HTTP, checked every 100 ms.
pub(crate) fn source(registry: &Registry, reference: &str) -> Source {
    let mut source = Source::new(
        format!("{}/{reference}", registry.address())
            .parse()
            .unwrap(),
    );
    source.insecure = true;
    source.poll = Duration::from_millis(100);
    source
}

/// An empty plugins directory as a set, and `sources` following into it.
pub(crate) async fn follow(
    sources: Vec<Source>,
    cache: &Path,
) -> (tempfile::TempDir, Arc<PluginDir>, Sources) {
    let dir = tempfile::tempdir().unwrap();
    let plugins = Arc::new(
        PluginDir::open(engine(), dir.path(), PluginOptions::default())
            .await
            .unwrap(),
    );
    let sources = Sources::new(sources, &ClientOptions::default(), Some(cache)).unwrap();
    tokio::time::timeout(PATIENCE, sources.follow(&plugins))
        .await
        .expect("the first checks end");
    (dir, plugins, sources)
}

pub(crate) fn status(sources: &Sources) -> SourceStatus {
    sources.status().remove(0)
}

/// Polls until `done` holds for the source's status, failing after [`PATIENCE`].
pub(crate) async fn until(sources: &Sources, what: &str, done: impl Fn(&SourceStatus) -> bool) {
    let start = tokio::time::Instant::now();
    while !done(&status(sources)) {
        assert!(
            start.elapsed() < PATIENCE,
            "timed out waiting for {what}: {:?}",
            status(sources)
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_tag_is_swapped_in_while_a_call_in_flight_finishes_on_the_old() {
    let registry = Registry::start();
    let first = push(&registry, "tools/live:1", ECHO).await;
    let cache = tempfile::tempdir().unwrap();
    let (_dir, plugins, sources) =
        follow(vec![source(&registry, "tools/live:1")], cache.path()).await;
    let now = status(&sources);
    assert_eq!(now.digest.as_ref(), Some(&first.manifest_digest), "{now:?}");
    assert_eq!(now.error, None);
    assert_eq!(now.name, "live");
    // Kept in the cache by digest.
    let file = now.file.unwrap();
    assert_eq!(
        file,
        cache
            .path()
            .join(format!("oci/sha256-{}.wasm", first.manifest_digest.hex()))
    );
    assert_eq!(
        Digest::of(&std::fs::read(&file).unwrap()),
        first.layer_digest
    );
    let cx = Context::new();
    let out = plugins
        .invoke(&cx, "add", json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": 42})));
    let listed = plugins.status();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].plugin, "live");
    assert_eq!(listed[0].path, sources.status()[0].label);

    // A call in flight when the tag moves.
    let mut changes = plugins.subscribe();
    let countdown = plugins.find(&cx, "countdown").unwrap();
    let mut stream = crate::stream_tool(&*countdown, &cx, json!({"from": 20}))
        .await
        .unwrap();
    let mut lines = Vec::new();
    for _ in 0..5 {
        match stream.next().await.unwrap().unwrap() {
            Part::Text(line) => lines.push(line),
            other => panic!("unexpected {other:?}"),
        }
    }
    let second = push(&registry, "tools/live:1", TEXT).await;
    let change = tokio::time::timeout(PATIENCE, async {
        loop {
            let change = changes.recv().await.unwrap();
            if change.added.iter().any(|t| t == "word_count") {
                return change;
            }
        }
    })
    .await
    .expect("a change event for the new version");
    assert!(change.removed.iter().any(|t| t == "add"), "{change:?}");
    until(&sources, "the new digest", |s| {
        s.digest.as_ref() == Some(&second.manifest_digest)
    })
    .await;
    assert!(names(&plugins).contains(&"word_count".to_owned()));

    // The stream started on the old version and finishes on it.
    while let Some(part) = stream.next().await {
        match part.unwrap() {
            Part::Text(line) => lines.push(line),
            other => panic!("unexpected {other:?}"),
        }
    }
    let expected: Vec<String> = (0..=20).rev().map(|i| format!("{i}\n")).collect();
    assert_eq!(lines, expected);
    let err = plugins
        .invoke(&cx, "add", json!({"a": 2, "b": 3}))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::UnknownTool { .. }), "{err:?}");
    let out = plugins
        .invoke(&cx, "word_count", json!({"text": "one two"}))
        .await
        .unwrap();
    assert!(out.result.is_some(), "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_keep_the_previous_version_serving_and_say_why() {
    let mut registry = Registry::start();
    let first = push(&registry, "bad:1", ECHO).await;
    let cache = tempfile::tempdir().unwrap();
    let (_dir, plugins, sources) = follow(vec![source(&registry, "bad:1")], cache.path()).await;
    assert_eq!(
        status(&sources).digest.as_ref(),
        Some(&first.manifest_digest)
    );
    let serving_echo = |plugins: &PluginDir| names(plugins).contains(&"add".to_owned());

    // An artifact that is not a component.
    push_raw(&registry, "bad", b"\0asm\x01\0\0\0", "application/wasm").await;
    until(&sources, "the core module refused", |s| {
        s.error
            .as_deref()
            .is_some_and(|e| e.contains("core WebAssembly module"))
    })
    .await;
    assert_eq!(
        status(&sources).digest.as_ref(),
        Some(&first.manifest_digest)
    );
    assert!(serving_echo(&plugins));

    // A component that does not load.
    push(&registry, "bad:1", BAD_SCHEMA).await;
    until(&sources, "the bad component refused", |s| {
        s.error.as_deref().is_some_and(|e| e.contains("schema"))
    })
    .await;
    assert_eq!(
        status(&sources).digest.as_ref(),
        Some(&first.manifest_digest)
    );
    assert!(serving_echo(&plugins));
    let listed = plugins.status();
    assert!(
        matches!(
            &listed[0].state,
            toolhost::toolset::LoadState::Failed {
                serving_previous: true,
                ..
            }
        ),
        "{listed:?}"
    );

    // The tag back on the plugin serving (pushed again, perhaps with another
    // manifest digest: its config holds the time): the error clears.
    let back = push(&registry, "bad:1", ECHO).await;
    until(&sources, "the error cleared", |s| {
        s.error.is_none() && s.digest.as_ref() == Some(&back.manifest_digest)
    })
    .await;
    assert!(matches!(
        plugins.status()[0].state,
        toolhost::toolset::LoadState::Loaded { .. }
    ));

    // The registry stopped.
    registry.stop();
    until(&sources, "the registry unreachable", |s| {
        s.error.as_deref().is_some_and(|e| e.contains("resolving"))
    })
    .await;
    assert_eq!(
        status(&sources).digest.as_ref(),
        Some(&back.manifest_digest)
    );
    let cx = Context::new();
    let out = plugins
        .invoke(&cx, "add", json!({"a": 1, "b": 1}))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": 2})));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tag_that_leaves_its_pin_is_refused() {
    let registry = Registry::start();
    let first = push(&registry, "pinned:1", ECHO).await;
    let cache = tempfile::tempdir().unwrap();

    // A pin the tag never had: nothing is served.
    let mut wrong = source(&registry, "pinned:1");
    wrong.pin = Some(Digest::of(b"something else"));
    let (_dir, plugins, sources) = follow(vec![wrong], cache.path()).await;
    let now = status(&sources);
    assert_eq!(now.digest, None);
    let error = now.error.unwrap();
    assert!(error.contains("not to the pinned"), "{error}");
    assert!(names(&plugins).is_empty());

    // The right pin: served; then the tag moves away from it.
    let mut pinned = source(&registry, "pinned:1");
    pinned.pin = Some(first.manifest_digest.clone());
    let (_dir, plugins, sources) = follow(vec![pinned], cache.path()).await;
    assert_eq!(
        status(&sources).digest.as_ref(),
        Some(&first.manifest_digest)
    );
    push(&registry, "pinned:1", TEXT).await;
    until(&sources, "the moved tag refused", |s| {
        s.error
            .as_deref()
            .is_some_and(|e| e.contains("not to the pinned") && e.contains("refused"))
    })
    .await;
    assert_eq!(
        status(&sources).digest.as_ref(),
        Some(&first.manifest_digest)
    );
    assert!(names(&plugins).contains(&"add".to_owned()));
}

fn toolhost(config: &Path, cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--config")
        .arg(config)
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .env_remove("TOOLHOST_LOG")
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A configuration in `dir` (with an empty plugins directory) of `sources`.
fn write_config(dir: &Path, sources: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    let path = dir.join("toolhost.toml");
    std::fs::write(&path, format!("plugins = \"plugins\"\n{sources}")).unwrap();
    path
}

/// The one source row of `status --json`.
fn source_row(out: &Output) -> Value {
    let report: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(out)));
    report["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["source"].is_object())
        .cloned()
        .unwrap_or_else(|| panic!("no source row in {report}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_serves_a_source_and_status_shows_its_digest_and_errors() {
    let mut registry = Registry::start();
    let pushed = push(&registry, "tools/echo:1", ECHO).await;
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    let reference = format!("{}/tools/echo:1", registry.address());
    let config = write_config(
        work.path(),
        &format!("[[sources]]\nref = \"oci://{reference}\"\ninsecure = true\n"),
    );

    let out = toolhost(&config, &cache, &["call", "add", r#"{"a": 2, "b": 40}"#]);
    assert!(out.status.success(), "{}", stderr(&out));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result, json!({"result": 42}));
    let out = toolhost(&config, &cache, &["list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("add"));

    let out = toolhost(&config, &cache, &["status", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let row = source_row(&out);
    assert_eq!(row["plugin"], "echo");
    assert_eq!(row["state"], "loaded");
    assert_eq!(row["source"]["ref"], reference);
    assert_eq!(row["source"]["digest"], pushed.manifest_digest.to_string());
    assert_eq!(row["source"]["error"], Value::Null);
    let out = toolhost(&config, &cache, &["status"]);
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        table.contains(&format!("from {reference} ({})", pushed.manifest_digest)),
        "{table}"
    );

    // A wrong pin: refused, said in status, which fails.
    let pinned = config_with_pin(work.path(), &reference, &Digest::of(b"other"));
    let out = toolhost(&pinned, &cache, &["status", "--json"]);
    assert!(!out.status.success());
    let row = source_row(&out);
    assert_eq!(row["state"], "failed");
    assert!(
        row["source"]["error"]
            .as_str()
            .unwrap()
            .contains("not to the pinned"),
        "{row}"
    );

    // The registry stopped: the digest the tag last had, from the cache,
    // still serves, and status says why it is not current.
    registry.stop();
    let out = toolhost(&config, &cache, &["call", "add", r#"{"a": 1, "b": 2}"#]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("warning: source `echo`"),
        "{}",
        stderr(&out)
    );
    let out = toolhost(&config, &cache, &["status", "--json"]);
    assert!(!out.status.success());
    let row = source_row(&out);
    assert_eq!(row["state"], "loaded");
    assert_eq!(row["source"]["digest"], pushed.manifest_digest.to_string());
    let error = row["source"]["error"].as_str().unwrap();
    assert!(error.contains("the digest the tag last had"), "{error}");

    // A bad entry is a configuration error naming its key.
    let bad = write_config(work.path(), "[[sources]]\nref = \"acme/echo:1\"\n");
    let out = toolhost(&bad, &cache, &["list"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("sources[0].ref"), "{}", stderr(&out));
}

fn config_with_pin(dir: &Path, reference: &str, pin: &Digest) -> std::path::PathBuf {
    let dir = dir.join("pinned");
    write_config(
        &dir,
        &format!("[[sources]]\nref = \"{reference}\"\ndigest = \"{pin}\"\ninsecure = true\n"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_announces_a_moved_tag_and_serves_the_new_version() {
    use std::io::{BufRead as _, Write as _};
    let registry = Registry::start();
    push(&registry, "tools/live:1", ECHO).await;
    let work = tempfile::tempdir().unwrap();
    let config = write_config(
        work.path(),
        &format!(
            "[[sources]]\nref = \"{}/tools/live:1\"\ninsecure = true\npoll_secs = 0.2\n",
            registry.address()
        ),
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--config")
        .arg(&config)
        .arg("--cache-dir")
        .arg(work.path().join("cache"))
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
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
    let mut send = |message: Value| {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    };
    // Waits for the message that satisfies `wanted` (bounded only against a hang).
    let next = |wanted: &dyn Fn(&Value) -> bool| loop {
        let line = received.recv_timeout(PATIENCE).expect("the server answers");
        let message: Value = serde_json::from_str(&line).unwrap();
        if wanted(&message) {
            return message;
        }
    };
    let tools = |message: &Value| -> Vec<String> {
        message["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "sources-test", "version": "0"}}}),
    );
    next(&|m| m["id"] == 1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let listed = tools(&next(&|m| m["id"] == 2));
    assert!(listed.contains(&"add".to_owned()), "{listed:?}");

    push(&registry, "tools/live:1", TEXT).await;
    next(&|m| m["method"] == "notifications/tools/list_changed");
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}));
    let listed = tools(&next(&|m| m["id"] == 3));
    assert!(listed.contains(&"word_count".to_owned()), "{listed:?}");
    assert!(!listed.contains(&"add".to_owned()), "{listed:?}");
    send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "word_count", "arguments": {"text": "one two three"}}}));
    let answer = next(&|m| m["id"] == 4);
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains('3'), "{answer}");
    drop(stdin);
    let _ = child.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grants_come_from_the_configuration_never_a_sidecar() {
    let registry = Registry::start();
    let pushed = push(&registry, "tools/caps:1", toolhost_test_plugins::CAPS).await;
    let cache = tempfile::tempdir().unwrap();
    // A sidecar beside the pulled file, as if someone put one there.
    let oci = cache.path().join("oci");
    std::fs::create_dir_all(&oci).unwrap();
    std::fs::write(
        oci.join(format!(
            "sha256-{}.policy.toml",
            pushed.manifest_digest.hex()
        )),
        format!(
            "[[dirs]]\nhost = {:?}\nguest = \"/data\"\n",
            cache.path().display().to_string()
        ),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plugins = Arc::new(
        PluginDir::open_configured(engine(), dir.path(), |name: &str| {
            let mut options = PluginOptions::default();
            if name == "caps" {
                let mut grants = toolhost::policy::Grants::default();
                grants.env("ONLY", "this");
                options.grants(grants);
            }
            options
        })
        .await
        .unwrap(),
    );
    let sources = Sources::new(
        vec![source(&registry, "tools/caps:1")],
        &ClientOptions::default(),
        Some(cache.path()),
    )
    .unwrap();
    sources.resolve_into(&plugins).await;
    assert_eq!(status(&sources).error, None);
    let caps = plugins.plugins().remove(0);
    assert_eq!(caps.name(), "caps");
    assert!(caps.grants().dirs().is_empty(), "{:?}", caps.grants());
    assert_eq!(caps.grants().env_vars().len(), 1);

    // Without grants in the configuration: none, the sidecar is not read.
    let (_dir, plugins, sources) =
        follow(vec![source(&registry, "tools/caps:1")], cache.path()).await;
    assert_eq!(status(&sources).error, None);
    let caps = plugins.plugins().remove(0);
    assert!(caps.grants().dirs().is_empty(), "{:?}", caps.grants());
    assert!(caps.grants().env_vars().is_empty(), "{:?}", caps.grants());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_version_is_refused_and_the_previous_one_keeps_serving() {
    let registry = Registry::start();
    let first = push(&registry, "tampered:1", ECHO).await;
    let cache = tempfile::tempdir().unwrap();
    let (_dir, plugins, sources) =
        follow(vec![source(&registry, "tampered:1")], cache.path()).await;
    assert_eq!(
        status(&sources).digest.as_ref(),
        Some(&first.manifest_digest)
    );

    // A new version staged under another tag, its layer tampered with in
    // storage, then tagged as the one followed.
    let staged = push(&registry, "tampered:staging", TEXT).await;
    registry.tamper_blob(&staged.layer_digest);
    let raw = raw_client();
    let at = |tag: &str| {
        oci_client::Reference::with_tag(registry.address(), "tampered".to_owned(), tag.to_owned())
    };
    let (manifest, _) = raw
        .pull_manifest_raw(
            &at("staging"),
            &oci_client::secrets::RegistryAuth::Anonymous,
            &[toolhost::oci::MANIFEST_MEDIA_TYPE],
        )
        .await
        .unwrap();
    raw.push_manifest_raw(
        &at("1"),
        manifest,
        http::HeaderValue::from_static(toolhost::oci::MANIFEST_MEDIA_TYPE),
    )
    .await
    .unwrap();
    until(&sources, "the tampered version refused", |s| {
        s.error
            .as_deref()
            .is_some_and(|e| e.contains(&format!("expected {}: refused", staged.layer_digest)))
    })
    .await;
    assert_eq!(
        status(&sources).digest.as_ref(),
        Some(&first.manifest_digest)
    );
    assert!(names(&plugins).contains(&"add".to_owned()));
}
