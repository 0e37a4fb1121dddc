//! Contract versions side by side: a plugin of the TEST-ONLY preview
//! `toolhost:plugin@0.2.0` (`tests/wit/preview-0.2.0`, loaded because these
//! tests turn on the host's `abi-preview` feature) in one directory with
//! `@0.1.0` plugins.

use serde_json::json;
use toolhost::tool::{Part, ToolCall};
use toolhost::{Context, Plugin, PluginOptions, PluginSet, ToolsetExt};
use toolhost_test_plugins::{ECHO, PREVIEW_ABI, RAW};

use crate::engine;

#[tokio::test]
async fn a_preview_0_2_plugin_loads_and_runs_beside_0_1_plugins() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(ECHO, dir.path().join("echo.wasm")).unwrap();
    std::fs::copy(PREVIEW_ABI, dir.path().join("preview.wasm")).unwrap();
    std::fs::copy(RAW, dir.path().join("raw.wasm")).unwrap();

    let set = PluginSet::load_dir(engine(), dir.path(), &PluginOptions::default())
        .await
        .unwrap();
    assert!(set.failures().is_empty(), "{:?}", set.failures());
    let loaded: Vec<&str> = set.plugins().iter().map(Plugin::name).collect();
    assert_eq!(loaded, ["echo", "preview", "raw"]);

    // The version's addition (a title) maps into what the host has.
    let preview = &set.plugins()[1];
    let shout = preview.tool("shout").unwrap();
    assert_eq!(shout.description, "Shout\n\nUpper-cases `text`.");
    assert_eq!(
        preview.tool("count").unwrap().description,
        "Streams 1, 2, 3."
    );

    // Calls of both versions, through one set.
    let out = set
        .invoke(&Context::new(), "shout", json!({"text": "hello"}))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"text": "HELLO"})));
    let out = set
        .invoke(&Context::new(), "add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": 5})));
    let out = set
        .invoke(&Context::new(), "bare_string", json!({}))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": "hello"})));

    // Streams of both versions.
    let mut stream = set
        .stream(&Context::new(), "count", json!({}))
        .await
        .unwrap();
    let mut chunks = Vec::new();
    while let Some(part) = stream.next().await {
        chunks.push(part.unwrap());
    }
    assert_eq!(
        chunks,
        ["1", "2", "3"].map(|n| Part::Text(n.to_owned())).to_vec()
    );
    let out = set
        .invoke(&Context::new(), "countdown", json!({"from": 2}))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": "2\n1\n0\n"})));
}

/// Loading with a cache directory lists the preview plugin from its manifest
/// on a warm start, like any other.
#[tokio::test]
async fn a_preview_0_2_plugin_restarts_warm_from_its_manifest() {
    let cache = tempfile::tempdir().unwrap();
    let mut config = toolhost::EngineConfig::default();
    config.cache_dir(Some(cache.path().to_owned()));
    for _ in 0..2 {
        let engine = toolhost::Engine::new(&config).unwrap();
        let plugin = Plugin::load(&engine, PREVIEW_ABI, &PluginOptions::default())
            .await
            .unwrap();
        plugin.ready().await.unwrap();
        assert_eq!(
            plugin.tool("shout").unwrap().description,
            "Shout\n\nUpper-cases `text`."
        );
        let out = plugin
            .invoke(ToolCall::new("shout", json!({"text": "again"})))
            .await
            .unwrap();
        assert_eq!(out.result, Some(json!({"text": "AGAIN"})));
    }
}
