//! `Reuse::PerInvocation`: the calls of one invocation share an instance; no
//! other invocation ever sees it; every call keeps its own budgets.

use serde_json::{Value, json};
use toolhost::plugin::Reuse;
use toolhost::tool::ToolCall;
use toolhost::{CallError, Engine, EngineConfig, Plugin, PluginOptions};
use toolhost_test_plugins::{ECHO, HOSTILE};

/// A private engine (its idle set is counted) and a plugin on it that reuses.
async fn reusing(path: &str, max_idle: usize) -> (Engine, Plugin) {
    let mut config = EngineConfig::default();
    config.cache_dir(None).max_idle_instances(max_idle);
    let engine = Engine::new(&config).unwrap();
    let mut options = PluginOptions::default();
    options.reuse(Reuse::PerInvocation);
    let plugin = Plugin::load(&engine, path, &options).await.unwrap();
    (engine, plugin)
}

async fn snoop(plugin: &Plugin, invocation: &str) -> Value {
    plugin
        .invoke(ToolCall::new("snoop", json!({})).with_invocation_id(invocation))
        .await
        .unwrap()
        .result
        .unwrap()
}

#[tokio::test]
async fn calls_of_one_invocation_share_an_instance_and_no_other_sees_it() {
    let (engine, plugin) = reusing(HOSTILE, 16).await;
    // `snoop` counts earlier calls in a static and reports heap marks.
    assert_eq!(snoop(&plugin, "turn-1").await["earlier_calls"], 0);
    assert_eq!(snoop(&plugin, "turn-1").await["earlier_calls"], 1);
    assert_eq!(snoop(&plugin, "turn-1").await["earlier_calls"], 2);
    // Another invocation starts from a clean instance, and keeps its own.
    assert_eq!(
        snoop(&plugin, "turn-2").await,
        json!({"earlier_calls": 0, "dirty_heap_bytes": 0})
    );
    assert_eq!(snoop(&plugin, "turn-2").await["earlier_calls"], 1);
    assert_eq!(engine.idle_instances(), 2);
    // Ending an invocation drops its instance: its next call starts clean.
    engine.end_invocation("turn-1");
    assert_eq!(engine.idle_instances(), 1);
    assert_eq!(snoop(&plugin, "turn-1").await["earlier_calls"], 0);
}

#[tokio::test]
async fn the_default_never_reuses() {
    let mut config = EngineConfig::default();
    config.cache_dir(None);
    let engine = Engine::new(&config).unwrap();
    let plugin = Plugin::load(&engine, HOSTILE, &PluginOptions::default())
        .await
        .unwrap();
    for _ in 0..3 {
        assert_eq!(snoop(&plugin, "turn").await["earlier_calls"], 0);
    }
    assert_eq!(engine.idle_instances(), 0);
}

#[tokio::test]
async fn an_instance_that_trapped_or_ran_out_is_not_kept() {
    let (engine, plugin) = reusing(HOSTILE, 16).await;
    snoop(&plugin, "turn").await;
    assert_eq!(engine.idle_instances(), 1);
    let err = plugin
        .invoke(ToolCall::new("panic", json!({})).with_invocation_id("turn"))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Panicked { .. }), "{err:?}");
    assert_eq!(
        engine.idle_instances(),
        0,
        "the panicked instance was dropped"
    );
    assert_eq!(snoop(&plugin, "turn").await["earlier_calls"], 0);

    let spin = ToolCall::new("spin", json!({})).with_invocation_id("turn");
    let err = plugin.invoke(spin).await.unwrap_err();
    assert!(matches!(err, CallError::Exhausted { .. }), "{err:?}");
    assert_eq!(
        engine.idle_instances(),
        0,
        "the exhausted instance was dropped"
    );
}

#[tokio::test]
async fn each_call_gets_its_own_fuel_and_the_idle_set_is_bounded() {
    let (engine, plugin) = reusing(ECHO, 2).await;
    let add = |invocation: &str| {
        ToolCall::new("add", json!({"a": 1, "b": 2})).with_invocation_id(invocation)
    };
    let first = plugin.invoke(add("turn")).await.unwrap();
    for _ in 0..5 {
        let again = plugin.invoke(add("turn")).await.unwrap();
        assert_eq!(again.result, Some(json!({"result": 3})));
        // Fuel is per call, not summed over the invocation.
        assert!(
            again.usage.fuel <= first.usage.fuel * 3 / 2,
            "{} then {}",
            first.usage.fuel,
            again.usage.fuel
        );
    }
    for invocation in ["a", "b", "c"] {
        plugin.invoke(add(invocation)).await.unwrap();
    }
    assert_eq!(engine.idle_instances(), 2, "the least recently used went");
    // A tool's own failure leaves the instance healthy: it is kept.
    let err = plugin
        .invoke(ToolCall::new("fail", json!({})).with_invocation_id("c"))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Failed { .. }), "{err:?}");
    assert_eq!(engine.idle_instances(), 2);
}
