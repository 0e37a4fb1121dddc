//! Loading: every kind of bad file gets its own clear error naming the file,
//! and never stops the other plugins of a directory from loading.

use std::path::{Path, PathBuf};

use serde_json::json;
use toolhost::{CallError, LoadError, Plugin, PluginOptions, PluginSet, ToolCall};
use toolhost_test_plugins::{BAD_SCHEMA, ECHO, OTHER_WORLD, RAW};

use crate::{engine, plugin};

async fn load_bytes(name: &str, bytes: Vec<u8>) -> Result<Plugin, LoadError> {
    Plugin::from_bytes(
        engine(),
        PathBuf::from(name),
        bytes,
        &PluginOptions::default(),
    )
    .await
}

fn mentions(err: &LoadError, file: &str) {
    assert!(
        err.to_string().contains(file),
        "error should name {file}: {err}"
    );
}

#[tokio::test]
async fn truncated_component_is_malformed() {
    let bytes = std::fs::read(ECHO).unwrap();
    let half = bytes[..bytes.len() / 2].to_vec();
    let err = load_bytes("half.wasm", half).await.unwrap_err();
    assert!(matches!(err, LoadError::Malformed { .. }), "{err:?}");
    mentions(&err, "half.wasm");
    let err = load_bytes("header.wasm", bytes[..6].to_vec())
        .await
        .unwrap_err();
    assert!(matches!(err, LoadError::Malformed { .. }), "{err:?}");
}

#[tokio::test]
async fn non_wasm_file_is_refused() {
    let err = load_bytes("notes.wasm", b"hello, I am text".to_vec())
        .await
        .unwrap_err();
    assert!(matches!(err, LoadError::NotWasm { .. }), "{err:?}");
    mentions(&err, "notes.wasm");
    let err = load_bytes("empty.wasm", Vec::new()).await.unwrap_err();
    assert!(matches!(err, LoadError::NotWasm { .. }), "{err:?}");
}

#[tokio::test]
async fn core_module_is_refused() {
    // The smallest valid core module: magic + version 1.
    let err = load_bytes("core.wasm", b"\0asm\x01\0\0\0".to_vec())
        .await
        .unwrap_err();
    assert!(matches!(err, LoadError::CoreModule { .. }), "{err:?}");
    assert!(err.to_string().contains("not a component"), "{err}");
}

#[tokio::test]
async fn component_of_another_world_is_refused() {
    let err = Plugin::load(engine(), OTHER_WORLD, &PluginOptions::default())
        .await
        .unwrap_err();
    match &err {
        LoadError::WrongWorld {
            expected, found, ..
        } => {
            assert_eq!(expected, "toolhost:plugin/tools@0.1.0");
            assert!(found.contains("hello"), "{found}");
        }
        other => panic!("expected WrongWorld, got {other:?}"),
    }
    mentions(&err, "other_world.wasm");
}

#[tokio::test]
async fn invalid_schema_rejects_the_plugin() {
    let err = Plugin::load(engine(), BAD_SCHEMA, &PluginOptions::default())
        .await
        .unwrap_err();
    match &err {
        LoadError::InvalidTool { reason, .. } => {
            assert!(reason.contains("input schema"), "{reason}");
        }
        other => panic!("expected InvalidTool, got {other:?}"),
    }
    mentions(&err, "bad_schema.wasm");
}

#[tokio::test]
async fn result_that_is_not_json_is_an_invalid_output() {
    let raw = plugin(RAW).await;
    let err = raw
        .invoke(ToolCall::new("not_json", json!({})))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::InvalidOutput { .. }), "{err:?}");
    assert!(err.to_string().contains("not valid JSON"), "{err}");
    // A bare string result is wrapped.
    let out = raw
        .invoke(ToolCall::new("bare_string", json!({})))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": "hello"})));
    // A result against its declared schema is refused.
    let err = raw
        .invoke(ToolCall::new("typed_result", json!({})))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::InvalidOutput { .. }), "{err:?}");
    assert!(err.to_string().contains("/n"), "{err}");
}

fn copy(from: &str, dir: &Path, name: &str) {
    std::fs::copy(from, dir.join(name)).unwrap();
}

#[tokio::test]
async fn a_directory_loads_its_good_plugins_and_reports_the_bad() {
    let dir = tempfile::tempdir().unwrap();
    copy(ECHO, dir.path(), "echo.wasm");
    copy(RAW, dir.path(), "raw.wasm");
    copy(BAD_SCHEMA, dir.path(), "bad_schema.wasm");
    copy(OTHER_WORLD, dir.path(), "other_world.wasm");
    let echo = std::fs::read(ECHO).unwrap();
    std::fs::write(dir.path().join("truncated.wasm"), &echo[..echo.len() / 3]).unwrap();
    std::fs::write(dir.path().join("readme.txt"), "not a plugin, not a .wasm").unwrap();
    std::fs::write(dir.path().join("text.wasm"), "just text").unwrap();

    let set = PluginSet::load_dir(engine(), dir.path(), &PluginOptions::default())
        .await
        .unwrap();
    let loaded: Vec<&str> = set.plugins().iter().map(Plugin::name).collect();
    assert_eq!(loaded, ["echo", "raw"]);
    let mut failed: Vec<String> = set
        .failures()
        .iter()
        .map(|f| f.path().file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    failed.sort();
    assert_eq!(
        failed,
        [
            "bad_schema.wasm",
            "other_world.wasm",
            "text.wasm",
            "truncated.wasm"
        ]
    );
    let out = set
        .invoke(ToolCall::new("add", json!({"a": 2, "b": 3})))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": 5})));
}

#[tokio::test]
async fn clashing_tool_names_need_the_plugin_prefix() {
    let dir = tempfile::tempdir().unwrap();
    copy(ECHO, dir.path(), "one.wasm");
    copy(ECHO, dir.path(), "two.wasm");
    let set = PluginSet::load_dir(engine(), dir.path(), &PluginOptions::default())
        .await
        .unwrap();
    let err = set
        .invoke(ToolCall::new("add", json!({"a": 1, "b": 1})))
        .await
        .unwrap_err();
    match &err {
        CallError::UnknownTool { available, .. } => {
            assert!(available.contains(&"one.add".to_owned()), "{available:?}");
            assert!(available.contains(&"two.add".to_owned()), "{available:?}");
        }
        other => panic!("expected UnknownTool, got {other:?}"),
    }
    let out = set
        .invoke(ToolCall::new("two.add", json!({"a": 1, "b": 1})))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": 2})));
}

#[tokio::test]
async fn a_missing_directory_is_an_error() {
    let err = PluginSet::load_dir(engine(), "/no/such/dir", &PluginOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, LoadError::Io { .. }), "{err:?}");
}

#[tokio::test]
async fn compiled_code_is_cached_on_disk() {
    let cache = tempfile::tempdir().unwrap();
    let mut config = toolhost::EngineConfig::default();
    config.cache_dir(Some(cache.path().to_owned()));
    let engine = toolhost::Engine::new(&config).unwrap();
    Plugin::load(&engine, ECHO, &PluginOptions::default())
        .await
        .unwrap();
    let files = walk(cache.path());
    assert!(!files.is_empty(), "the cache directory holds compiled code");
    // A second engine (a restart) loads from the cache and still works.
    let engine = toolhost::Engine::new(&config).unwrap();
    let plugin = Plugin::load(&engine, ECHO, &PluginOptions::default())
        .await
        .unwrap();
    let out = plugin
        .invoke(ToolCall::new("add", json!({"a": 1, "b": 2})))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": 3})));
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// An engine on its own compiled-code cache (a process restarted on it).
fn engine_on(cache: &Path) -> toolhost::Engine {
    let mut config = toolhost::EngineConfig::default();
    config.cache_dir(Some(cache.to_owned()));
    toolhost::Engine::new(&config).unwrap()
}

/// The one manifest a load left in `cache`.
fn manifest_file(cache: &Path) -> PathBuf {
    let manifests: Vec<PathBuf> = walk(&cache.join("manifests"));
    assert_eq!(manifests.len(), 1, "one manifest: {manifests:?}");
    manifests.into_iter().next().unwrap()
}

/// Rewrites the manifest's declaration of `add` with `edit`.
fn edit_manifest(file: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    let add = manifest["tools"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|t| t["name"] == "add")
        .expect("the manifest declares `add`");
    edit(add);
    std::fs::write(file, serde_json::to_vec(&manifest).unwrap()).unwrap();
}

#[tokio::test]
async fn a_warm_start_lists_tools_from_the_manifest_and_loads_code_on_demand() {
    let cache = tempfile::tempdir().unwrap();
    let cold = Plugin::load(&engine_on(cache.path()), ECHO, &PluginOptions::default())
        .await
        .unwrap();
    let real = cold.tool("add").unwrap().description.clone();
    let file = manifest_file(cache.path());
    // Mark the manifest, to tell a listing from it apart from one from the guest.
    edit_manifest(&file, |add| {
        add["description"] = json!("listed from the manifest")
    });

    let warm = Plugin::load(&engine_on(cache.path()), ECHO, &PluginOptions::default())
        .await
        .unwrap();
    assert_eq!(
        warm.tool("add").unwrap().description,
        "listed from the manifest"
    );
    assert_ne!(real, "listed from the manifest");
    assert_eq!(
        warm.tools().map(|t| &t.name).collect::<Vec<_>>(),
        cold.tools().map(|t| &t.name).collect::<Vec<_>>()
    );
    // The first call loads (or waits for) the code.
    let out = warm
        .invoke(ToolCall::new("add", json!({"a": 1, "b": 2})))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": 3})));
    warm.ready().await.unwrap();
    // Arguments are still checked against the listed schema.
    let err = warm
        .invoke(ToolCall::new("add", json!({"a": "one"})))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::InvalidArguments { .. }), "{err:?}");
}

#[tokio::test]
async fn a_damaged_manifest_is_ignored_and_written_again() {
    let cache = tempfile::tempdir().unwrap();
    let cold = Plugin::load(&engine_on(cache.path()), ECHO, &PluginOptions::default())
        .await
        .unwrap();
    let file = manifest_file(cache.path());
    let whole = std::fs::read(&file).unwrap();
    // Half a file, as a crash mid-write would leave without the atomic rename.
    std::fs::write(&file, &whole[..whole.len() / 2]).unwrap();
    let warm = Plugin::load(&engine_on(cache.path()), ECHO, &PluginOptions::default())
        .await
        .unwrap();
    assert_eq!(
        warm.tool("add").unwrap().description,
        cold.tool("add").unwrap().description
    );
    assert_eq!(std::fs::read(&file).unwrap(), whole, "written again, whole");
}

#[tokio::test]
async fn a_manifest_that_does_not_check_is_ignored() {
    let cache = tempfile::tempdir().unwrap();
    let cold = Plugin::load(&engine_on(cache.path()), ECHO, &PluginOptions::default())
        .await
        .unwrap();
    let file = manifest_file(cache.path());
    edit_manifest(&file, |add| {
        add["description"] = json!("listed from the manifest");
        add["input_schema"] = json!("{\"type\": \"object\", \"properties\": 7}");
    });
    let warm = Plugin::load(&engine_on(cache.path()), ECHO, &PluginOptions::default())
        .await
        .unwrap();
    let add = warm.tool("add").unwrap();
    assert_eq!(add.description, cold.tool("add").unwrap().description);
    assert_eq!(add.input_schema, cold.tool("add").unwrap().input_schema);
}

#[tokio::test]
async fn a_changed_component_does_not_use_the_old_manifest() {
    let cache = tempfile::tempdir().unwrap();
    let engine = engine_on(cache.path());
    Plugin::load(&engine, ECHO, &PluginOptions::default())
        .await
        .unwrap();
    edit_manifest(&manifest_file(cache.path()), |add| {
        add["description"] = json!("listed from the manifest")
    });
    // The same component with one more custom section: other bytes, another key.
    let mut bytes = std::fs::read(ECHO).unwrap();
    bytes.extend_from_slice(&[0, 4, 3, b'a', b'b', b'c']);
    let changed = Plugin::from_bytes(
        &engine_on(cache.path()),
        PathBuf::from("echo.wasm"),
        bytes,
        &PluginOptions::default(),
    )
    .await
    .unwrap();
    assert_ne!(
        changed.tool("add").unwrap().description,
        "listed from the manifest"
    );
    assert_eq!(walk(&cache.path().join("manifests")).len(), 2);
}

#[tokio::test]
async fn a_plugins_directory_restarts_warm_from_its_manifests() {
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(ECHO, dir.path().join("echo.wasm")).unwrap();
    std::fs::copy(RAW, dir.path().join("raw.wasm")).unwrap();
    let options = PluginOptions::default();
    let cold = toolhost::PluginDir::open(&engine_on(cache.path()), dir.path(), options.clone())
        .await
        .unwrap();
    for status in cold.status() {
        assert!(
            matches!(status.state, toolhost::LoadState::Loaded { .. }),
            "{status:?}"
        );
    }
    let manifests = walk(&cache.path().join("manifests"));
    assert_eq!(manifests.len(), 2, "{manifests:?}");
    let warm = toolhost::PluginDir::open(&engine_on(cache.path()), dir.path(), options)
        .await
        .unwrap();
    let names = |set: &toolhost::PluginDir| {
        let mut names: Vec<String> = set
            .plugins()
            .iter()
            .flat_map(|p| p.tools().map(|t| format!("{}.{}", p.name(), t.name)))
            .collect();
        names.sort();
        names
    };
    assert_eq!(names(&warm), names(&cold));
    let out = toolhost::ToolsetExt::invoke(
        &warm,
        &toolhost::Context::new(),
        "add",
        json!({"a": 2, "b": 3}),
    )
    .await
    .unwrap();
    assert_eq!(out.result, Some(json!({"result": 5})));
    for plugin in warm.plugins() {
        plugin.ready().await.unwrap();
    }
}
