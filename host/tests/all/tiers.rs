//! Tiered compilation: a plugin whose optimized code is not cached answers on
//! baseline code (Winch) at once and switches to optimized code (Cranelift)
//! compiled in the background; both tiers keep every budget; a restart finds
//! the optimized code cached.

use std::time::Duration;

use serde_json::{Value, json};
use toolhost::engine::{Compilation, Tier};
use toolhost::error::Exhausted;
use toolhost::plugin::Reuse;
use toolhost::tool::ToolCall;
use toolhost::{CallError, Engine, EngineConfig, Plugin, PluginOptions};
use toolhost_test_plugins::{
    BAD_SCHEMA, CONFORMANCE_C, CONFORMANCE_GO, CONFORMANCE_JS, CONFORMANCE_PY, ECHO, HOSTILE,
    OTHER_WORLD,
};

fn engine(compilation: Compilation, cache: Option<&std::path::Path>) -> Engine {
    let mut config = EngineConfig::default();
    config
        .cache_dir(cache.map(ToOwned::to_owned))
        .compilation(compilation);
    Engine::new(&config).unwrap()
}

async fn add(plugin: &Plugin) -> Value {
    plugin
        .invoke(ToolCall::new("add", json!({"a": 2, "b": 3})))
        .await
        .unwrap()
        .result
        .unwrap()
}

/// The kind of budget a call ran out of, or a description of what it did instead.
async fn exhausted(plugin: &Plugin, tool: &str) -> Result<Exhausted, String> {
    match plugin.invoke(ToolCall::new(tool, json!({}))).await {
        Err(CallError::Exhausted { budget, .. }) => Ok(budget),
        other => Err(format!("{tool}: {other:?}")),
    }
}

#[tokio::test]
async fn a_cold_plugin_answers_on_baseline_code_then_switches_to_optimized() {
    let cache = tempfile::tempdir().unwrap();
    let engine = engine(Compilation::Tiered, Some(cache.path()));
    let plugin = Plugin::load(&engine, ECHO, &PluginOptions::default())
        .await
        .unwrap();
    // Loaded, declarations read and a call answered, all on baseline code
    // (the optimized code takes one background compile: it cannot be in yet
    // unless the machine is very fast, so either tier is accepted here).
    assert!(plugin.tier().is_some());
    assert_eq!(add(&plugin).await, json!({"result": 5}));
    assert_eq!(plugin.settled().await.unwrap(), Tier::Optimized);
    assert_eq!(plugin.tier(), Some(Tier::Optimized));
    assert_eq!(add(&plugin).await, json!({"result": 5}));
    // The cache says so: it holds the optimized code alone (the baseline
    // code no start needs now is gone), and a restart (a new engine on the
    // same cache) lists the plugin from its manifest and loads the optimized
    // code at once.
    let compiled = std::fs::read_dir(cache.path().join("compiled"))
        .unwrap()
        .count();
    assert_eq!(compiled, 1);
    let restarted = self::engine(Compilation::Tiered, Some(cache.path()));
    let plugin = Plugin::load(&restarted, ECHO, &PluginOptions::default())
        .await
        .unwrap();
    plugin.ready().await.unwrap();
    assert_eq!(plugin.tier(), Some(Tier::Optimized));
    assert_eq!(add(&plugin).await, json!({"result": 5}));
}

/// The names of the files in a cache's compiled code.
fn compiled(cache: &std::path::Path) -> std::collections::BTreeSet<String> {
    std::fs::read_dir(cache.join("compiled"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('.'))
        .collect()
}

/// Loads two plugins whose code links but that fail after: a bad schema,
/// and a component with no function that can be a tool.
async fn load_the_failing(engine: &Engine) {
    for failing in [BAD_SCHEMA, OTHER_WORLD] {
        Plugin::load(engine, failing, &PluginOptions::default())
            .await
            .unwrap_err();
    }
}

#[tokio::test]
async fn a_plugin_that_fails_after_its_code_links_is_never_optimized() {
    // Its baseline code, as an engine that compiles nothing else caches it.
    let baseline = tempfile::tempdir().unwrap();
    let only = engine(Compilation::Baseline, Some(baseline.path()));
    load_the_failing(&only).await;
    let expected = compiled(baseline.path());
    assert_eq!(expected.len(), 2, "{expected:?}");
    // A tiered engine: the failing plugins' code links (a bad schema, or no
    // function that can be a tool, is found after), then a good plugin is
    // optimized; optimizing is one plugin at a time, in turn, so once its
    // code settled nothing else is compiling. The failing plugins kept
    // their baseline code: nothing optimized them, nor dropped it.
    let cache = tempfile::tempdir().unwrap();
    let tiered = engine(Compilation::Tiered, Some(cache.path()));
    load_the_failing(&tiered).await;
    let echo = Plugin::load(&tiered, ECHO, &PluginOptions::default())
        .await
        .unwrap();
    assert_eq!(echo.settled().await.unwrap(), Tier::Optimized);
    let cached = compiled(cache.path());
    assert_eq!(cached.len(), 3, "{cached:?}");
    assert!(cached.is_superset(&expected), "{cached:?}, {expected:?}");
}

#[tokio::test]
async fn the_first_tier_is_what_the_engine_compiles() {
    for (compilation, first) in [
        (Compilation::Baseline, Tier::Baseline),
        (Compilation::Optimized, Tier::Optimized),
    ] {
        let engine = engine(compilation, None);
        let plugin = Plugin::load(&engine, ECHO, &PluginOptions::default())
            .await
            .unwrap();
        assert_eq!(plugin.tier(), Some(first), "{compilation:?}");
        // Nothing is coming in the background: it is settled as it is.
        assert_eq!(plugin.settled().await.unwrap(), first, "{compilation:?}");
        assert_eq!(add(&plugin).await, json!({"result": 5}));
    }
}

#[tokio::test]
async fn baseline_code_keeps_every_budget() {
    for compilation in [Compilation::Baseline, Compilation::Optimized] {
        let engine = engine(compilation, None);
        let load = |options: PluginOptions| {
            let engine = engine.clone();
            async move { Plugin::load(&engine, HOSTILE, &options).await.unwrap() }
        };
        let mut options = PluginOptions::default();
        options
            .limits
            .fuel(20_000_000)
            .timeout(Duration::from_secs(30));
        let plugin = load(options).await;
        let tier = plugin.tier();
        let budget = exhausted(&plugin, "spin").await;
        assert!(
            matches!(budget, Ok(Exhausted::Fuel { limit: 20_000_000 })),
            "{tier:?}: {budget:?}"
        );
        let mut options = PluginOptions::default();
        options.limits.memory_bytes(32 << 20);
        let plugin = load(options).await;
        let budget = exhausted(&plugin, "hog").await;
        assert!(
            matches!(budget, Ok(Exhausted::Memory { limit }) if limit == 32 << 20),
            "{tier:?}: {budget:?}"
        );
        let budget = exhausted(&plugin, "recurse").await;
        assert!(
            matches!(budget, Ok(Exhausted::Stack { .. })),
            "{tier:?}: {budget:?}"
        );
        // The deadline: epoch interruption in a loop, and a guest blocked in WASI.
        let mut options = PluginOptions::default();
        options
            .limits
            .fuel(u64::MAX / 2)
            .timeout(Duration::from_millis(300));
        let plugin = load(options).await;
        for tool in ["spin", "busy_wait", "sleep_forever"] {
            let budget = exhausted(&plugin, tool).await;
            assert!(
                matches!(budget, Ok(Exhausted::Deadline { .. })),
                "{tier:?}: {budget:?}"
            );
        }
        let ok = plugin.invoke(ToolCall::new("ok", json!({}))).await.unwrap();
        assert_eq!(ok.result, Some(json!({"ok": true})), "{tier:?}");
    }
}

#[tokio::test]
async fn every_guest_language_runs_on_baseline_code() {
    let engine = engine(Compilation::Baseline, None);
    for path in [
        CONFORMANCE_PY,
        CONFORMANCE_JS,
        CONFORMANCE_GO,
        CONFORMANCE_C,
    ] {
        assert!(
            std::path::Path::new(path).is_file(),
            "{path} is missing: `cargo xtask guests` builds it"
        );
        let plugin = Plugin::load(&engine, path, &PluginOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        // Winch compiles every guest language this project ships: none falls
        // back to optimized code.
        assert_eq!(plugin.tier(), Some(Tier::Baseline), "{path}");
        let out = plugin
            .invoke(ToolCall::new("greet", json!({"name": "Ada"})))
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(out.result.unwrap().to_string().contains("Ada"), "{path}");
    }
}

#[tokio::test]
async fn an_idle_instance_of_baseline_code_serves_its_invocation_after_the_switch() {
    let engine = engine(Compilation::Tiered, None);
    let mut options = PluginOptions::default();
    options.reuse(Reuse::PerInvocation);
    let plugin = Plugin::load(&engine, HOSTILE, &options).await.unwrap();
    let snoop = |invocation: &'static str| {
        let plugin = plugin.clone();
        async move {
            plugin
                .invoke(ToolCall::new("snoop", json!({})).with_invocation_id(invocation))
                .await
                .unwrap()
                .result
                .unwrap()["earlier_calls"]
                .clone()
        }
    };
    let first = plugin.tier();
    assert_eq!(snoop("turn").await, 0);
    assert_eq!(plugin.settled().await.unwrap(), Tier::Optimized);
    // The invocation's idle instance is still the code it started on (when
    // that was baseline code), and still serves it; a new invocation gets an
    // instance of the optimized code.
    assert_eq!(snoop("turn").await, 1, "first tier {first:?}");
    assert_eq!(snoop("other").await, 0);
}

#[tokio::test]
async fn baseline_instances_are_bounded_like_pooled_ones() {
    let mut config = EngineConfig::default();
    config
        .cache_dir(None)
        .compilation(Compilation::Baseline)
        .max_concurrent_instances(1);
    let engine = Engine::new(&config).unwrap();
    let plugin = Plugin::load(&engine, ECHO, &PluginOptions::default())
        .await
        .unwrap();
    assert_eq!(plugin.tier(), Some(Tier::Baseline));
    // A stream holds its instance until it ends: the only slot is taken.
    let mut stream = plugin
        .stream(ToolCall::new("countdown", json!({"from": 3})))
        .await
        .unwrap();
    let err = plugin
        .invoke(ToolCall::new("add", json!({"a": 1, "b": 1})))
        .await
        .unwrap_err();
    assert!(crate::is_busy_instances(&err), "{err:?}");
    while stream.next().await.is_some() {}
    drop(stream);
    assert_eq!(add(&plugin).await, json!({"result": 5}));
}
