//! Loading: every kind of bad file gets its own clear error naming the file,
//! and never stops the other plugins of a directory from loading.

use std::path::{Path, PathBuf};

use serde_json::json;
use toolhost::tool::ToolCall;
use toolhost::{CallError, Context, LoadError, Plugin, PluginOptions, PluginSet, ToolsetExt};
use toolhost_test_plugins::{BAD_SCHEMA, BIG_DECLARE, ECHO, OTHER_WORLD, RAW, SLOW_DECLARE};

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
            assert_eq!(expected, "toolhost:plugin/tools@0.4.0");
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
        .invoke(&Context::new(), "add", json!({"a": 2, "b": 3}))
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
        .invoke(&Context::new(), "add", json!({"a": 1, "b": 1}))
        .await
        .unwrap_err();
    match &err {
        CallError::AmbiguousTool { candidates, .. } => {
            assert_eq!(candidates, &["one.add", "two.add"]);
        }
        other => panic!("expected AmbiguousTool, got {other:?}"),
    }
    let out = set
        .invoke(&Context::new(), "two.add", json!({"a": 1, "b": 1}))
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

/// The content of a sealed cache file (`toolhost-sealed-1 <sha256>\n`, then
/// the content; see host/src/sealed.rs).
pub(crate) fn unseal(file: &Path) -> Vec<u8> {
    let bytes = std::fs::read(file).unwrap();
    let header = bytes.iter().position(|b| *b == b'\n').unwrap() + 1;
    assert!(
        bytes.starts_with(b"toolhost-sealed-1 "),
        "{}",
        file.display()
    );
    bytes[header..].to_vec()
}

/// Writes `content` to a cache file sealed as the host seals it: the digest
/// of its key (the file's name without its extension) and its content. What
/// a host whose component declared otherwise would have written.
pub(crate) fn seal(file: &Path, content: &[u8]) {
    use sha2::Digest as _;
    let key = file.file_stem().unwrap().to_str().unwrap();
    let mut hash = sha2::Sha256::new();
    hash.update((key.len() as u64).to_le_bytes());
    hash.update(key.as_bytes());
    hash.update(content);
    let digest: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let mut sealed = format!("toolhost-sealed-1 {digest}\n").into_bytes();
    sealed.extend_from_slice(content);
    std::fs::write(file, sealed).unwrap();
}

/// Rewrites the manifest's declaration of `add` with `edit`, sealed again.
fn edit_manifest(file: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut manifest: serde_json::Value = serde_json::from_slice(&unseal(file)).unwrap();
    let add = manifest["tools"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|t| t["name"] == "add")
        .expect("the manifest declares `add`");
    edit(add);
    seal(file, &serde_json::to_vec(&manifest).unwrap());
}

#[tokio::test]
async fn a_warm_start_lists_tools_from_the_manifest_and_loads_code_on_demand() {
    let cache = tempfile::tempdir().unwrap();
    let cold = Plugin::load(&engine_on(cache.path()), ECHO, &PluginOptions::default())
        .await
        .unwrap();
    manifest_file(cache.path());

    let warm = Plugin::load(&engine_on(cache.path()), ECHO, &PluginOptions::default())
        .await
        .unwrap();
    assert_eq!(
        warm.tools().collect::<Vec<_>>(),
        cold.tools().collect::<Vec<_>>()
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
async fn an_edited_manifest_that_is_not_sealed_again_is_never_listed() {
    let cache = tempfile::tempdir().unwrap();
    let cold = Plugin::load(&engine_on(cache.path()), ECHO, &PluginOptions::default())
        .await
        .unwrap();
    let file = manifest_file(cache.path());
    // Valid JSON, a phantom tool and another description, the seal left as
    // it was: what an edit by hand or a damaged block that still parses does.
    let mut manifest: serde_json::Value = serde_json::from_slice(&unseal(&file)).unwrap();
    manifest["tools"][0]["description"] = json!("altered");
    manifest["tools"].as_array_mut().unwrap().push(json!({
        "name": "phantom", "description": "Not a tool of this component.",
        "long_running": false, "streaming": false,
        "input_schema": "{\"type\": \"object\"}", "output_schema": null,
    }));
    let header_end = std::fs::read(&file)
        .unwrap()
        .iter()
        .position(|b| *b == b'\n')
        .unwrap()
        + 1;
    let mut edited = std::fs::read(&file).unwrap()[..header_end].to_vec();
    edited.extend_from_slice(&serde_json::to_vec(&manifest).unwrap());
    std::fs::write(&file, edited).unwrap();

    // Not listed, not even for a moment: the plugin loads in full.
    let warm = Plugin::load(&engine_on(cache.path()), ECHO, &PluginOptions::default())
        .await
        .unwrap();
    assert!(warm.tool("phantom").is_none());
    assert_eq!(
        warm.tools().collect::<Vec<_>>(),
        cold.tools().collect::<Vec<_>>()
    );
    let out = warm
        .invoke(ToolCall::new("add", json!({"a": 1, "b": 2})))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": 3})));
    let manifest: serde_json::Value = serde_json::from_slice(&unseal(&file)).unwrap();
    assert!(
        !manifest.to_string().contains("phantom"),
        "written again from the component"
    );
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
            matches!(status.state, toolhost::toolset::LoadState::Loaded { .. }),
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

/// Adds a tool the component does not have to a manifest, sealed again.
fn add_phantom(file: &Path) {
    let mut manifest: serde_json::Value = serde_json::from_slice(&unseal(file)).unwrap();
    manifest["tools"].as_array_mut().unwrap().push(json!({
        "name": "phantom",
        "description": "Not a tool of this component.",
        "long_running": false,
        "streaming": false,
        "input_schema": "{\"type\": \"object\"}",
        "output_schema": null,
    }));
    seal(file, &serde_json::to_vec(&manifest).unwrap());
}

#[tokio::test]
async fn an_edited_manifest_is_reconciled_once_the_code_loads() {
    let cache = tempfile::tempdir().unwrap();
    let cold = Plugin::load(&engine_on(cache.path()), ECHO, &PluginOptions::default())
        .await
        .unwrap();
    let file = manifest_file(cache.path());
    let truth = unseal(&file);
    edit_manifest(&file, |add| add["description"] = json!("altered"));
    add_phantom(&file);

    // Listed from the manifest, before any code runs: as edited.
    let warm = Plugin::load(&engine_on(cache.path()), ECHO, &PluginOptions::default())
        .await
        .unwrap();
    assert_eq!(warm.tool("add").unwrap().description, "altered");
    assert!(warm.tool("phantom").is_some());
    // Once the code loads, the component's own declarations tell.
    let err = warm.ready().await.unwrap_err();
    let LoadError::StaleManifest {
        manifest, reason, ..
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(manifest, &file);
    assert!(
        reason.contains("add") || reason.contains("phantom"),
        "{err}"
    );
    // This version's calls are refused, naming why, rather than run under
    // declarations the component never made.
    let err = warm
        .invoke(ToolCall::new("add", json!({"a": 1, "b": 2})))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("manifest"), "{err}");
    // The manifest was rewritten from the component: the next load lists the truth.
    let manifest: serde_json::Value = serde_json::from_slice(&unseal(&file)).unwrap();
    let truth: serde_json::Value = serde_json::from_slice(&truth).unwrap();
    assert_eq!(manifest, truth);
    let again = Plugin::load(&engine_on(cache.path()), ECHO, &PluginOptions::default())
        .await
        .unwrap();
    assert_eq!(
        again.tools().collect::<Vec<_>>(),
        cold.tools().collect::<Vec<_>>()
    );
    again.ready().await.unwrap();
    let out = again
        .invoke(ToolCall::new("add", json!({"a": 1, "b": 2})))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": 3})));
}

#[tokio::test]
async fn a_plugins_directory_reloads_a_plugin_listed_from_an_edited_manifest() {
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(ECHO, dir.path().join("echo.wasm")).unwrap();
    let cold = toolhost::PluginDir::open(
        &engine_on(cache.path()),
        dir.path(),
        PluginOptions::default(),
    )
    .await
    .unwrap();
    let real = cold.plugins()[0].tool("add").unwrap().description.clone();
    let file = manifest_file(cache.path());
    edit_manifest(&file, |add| add["description"] = json!("altered"));
    add_phantom(&file);

    let warm = toolhost::PluginDir::open(
        &engine_on(cache.path()),
        dir.path(),
        PluginOptions::default(),
    )
    .await
    .unwrap();
    let cx = toolhost::Context::new();
    let listed = |name: &str| {
        toolhost::Toolset::lookup(&warm, &cx, name).map(|tool| tool.spec().description.clone())
    };
    // Hang guard only: the code loads in the background, then the plugin reloads.
    tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while listed("add").as_deref() != Some(real.as_str()) || listed("phantom").is_some() {
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
    })
    .await
    .expect("the plugin is listed as its component declares it");
    let out = toolhost::ToolsetExt::invoke(&warm, &cx, "add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": 5})));
    for plugin in warm.plugins() {
        plugin.ready().await.unwrap();
    }
}

/// An engine without a cache, with these load limits.
fn engine_with(configure: impl FnOnce(&mut toolhost::EngineConfig)) -> toolhost::Engine {
    let mut config = toolhost::EngineConfig::default();
    config.cache_dir(None);
    configure(&mut config);
    toolhost::Engine::new(&config).unwrap()
}

#[tokio::test]
async fn declarations_past_the_load_limits_are_refused_before_any_schema_is_parsed() {
    let load = |engine: toolhost::Engine| async move {
        Plugin::load(&engine, BIG_DECLARE, &PluginOptions::default())
            .await
            .unwrap_err()
    };
    // 300 tools.
    let err = load(engine_with(|_| {})).await;
    assert!(
        matches!(
            err,
            LoadError::TooManyTools {
                count: 300,
                limit: 256,
                ..
            }
        ),
        "{err:?}"
    );
    mentions(&err, "big_declare.wasm");
    // It says how to serve it.
    mentions(&err, "`[load] max_tools = 300` in toolhost.toml");
    // One schema of 50 MB.
    let err = load(engine_with(|c| {
        c.max_tools(1000);
    }))
    .await;
    assert!(
        matches!(&err, LoadError::SchemaTooLarge { tool, which: "input", bytes, limit, .. }
            if tool == "t0" && *bytes == 50 << 20 && *limit == 256 << 10),
        "{err:?}"
    );
    // All of them together.
    let err = load(engine_with(|c| {
        c.max_tools(1000).max_schema_bytes(64 << 20);
    }))
    .await;
    assert!(
        matches!(err, LoadError::DeclarationsTooLarge { limit, .. } if limit == 4 << 20),
        "{err:?}"
    );
    assert!(err.to_string().contains("max_declaration_bytes"), "{err}");
}

#[tokio::test]
async fn a_manifest_past_the_load_limits_is_not_listed() {
    let cache = tempfile::tempdir().unwrap();
    let cold = Plugin::load(&engine_on(cache.path()), ECHO, &PluginOptions::default())
        .await
        .unwrap();
    // A valid schema, but larger than one may be.
    let big = format!(
        "{{\"type\": \"object\", \"description\": \"{}\"}}",
        "x".repeat(300 << 10)
    );
    edit_manifest(&manifest_file(cache.path()), |add| {
        add["input_schema"] = json!(big)
    });
    let warm = Plugin::load(&engine_on(cache.path()), ECHO, &PluginOptions::default())
        .await
        .unwrap();
    assert_eq!(
        warm.tool("add").unwrap().input_schema,
        cold.tool("add").unwrap().input_schema
    );
}

#[tokio::test]
async fn a_plugin_that_hangs_listing_its_tools_times_out_and_is_remembered() {
    let cache = tempfile::tempdir().unwrap();
    let engine = |deadline_ms: u64| {
        let mut config = toolhost::EngineConfig::default();
        config
            .cache_dir(Some(cache.path().to_owned()))
            .load_timeout(std::time::Duration::from_millis(deadline_ms));
        toolhost::Engine::new(&config).unwrap()
    };
    // Hang guard only: the guest sleeps for an hour.
    let load = |engine: toolhost::Engine| async move {
        tokio::time::timeout(
            std::time::Duration::from_secs(120),
            Plugin::load(&engine, SLOW_DECLARE, &PluginOptions::default()),
        )
        .await
        .expect("loading ends at the load deadline")
        .unwrap_err()
    };
    let err = load(engine(200)).await;
    assert!(
        matches!(err, LoadError::Timeout { limit, .. } if limit.as_millis() == 200),
        "{err:?}"
    );
    mentions(&err, "slow_declare.wasm");

    // A restart on the same cache: the failure is reported without running the plugin.
    let err = load(engine(200)).await;
    let LoadError::Remembered { reason, record, .. } = &err else {
        panic!("{err:?}");
    };
    assert!(reason.contains("load deadline"), "{err}");
    assert!(record.starts_with(cache.path()), "{err}");
    mentions(&err, "slow_declare.wasm");

    // Other settings: it is tried again.
    let err = load(engine(300)).await;
    assert!(matches!(err, LoadError::Timeout { .. }), "{err:?}");
}
