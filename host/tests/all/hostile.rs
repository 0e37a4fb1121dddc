//! Hostile guests: each misbehaves in one way, gets its own typed error, and the
//! same plugin then still answers a normal call.

use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::error::Exhausted;
use toolhost::tool::ToolCall;
use toolhost::{CallError, Plugin, PluginOptions};
use toolhost_test_plugins::HOSTILE;

use crate::{plugin, plugin_with};

async fn still_serves(plugin: &Plugin) {
    let out = plugin
        .invoke(ToolCall::new("ok", json!({})))
        .await
        .expect("a normal call after a hostile one succeeds");
    assert_eq!(out.result, Some(json!({"ok": true})));
}

#[tokio::test]
async fn infinite_loop_runs_out_of_fuel() {
    let mut options = PluginOptions::default();
    options
        .limits
        .fuel(20_000_000)
        .timeout(Duration::from_secs(30));
    let plugin = plugin_with(HOSTILE, &options).await;
    let err = plugin
        .invoke(ToolCall::new("spin", json!({})))
        .await
        .unwrap_err();
    match err {
        CallError::Exhausted {
            budget: Exhausted::Fuel { limit },
            ref tool,
            ref plugin,
        } => {
            assert_eq!(limit, 20_000_000);
            assert_eq!(tool, "spin");
            assert_eq!(plugin, "hostile");
        }
        other => panic!("expected fuel exhaustion, got {other:?}"),
    }
    assert!(err.to_string().contains("ran out of fuel"), "{err}");
    still_serves(&plugin).await;
}

#[tokio::test]
async fn infinite_loop_hits_the_deadline() {
    let mut options = PluginOptions::default();
    options
        .limits
        .fuel(u64::MAX / 2)
        .timeout(Duration::from_millis(300));
    let plugin = plugin_with(HOSTILE, &options).await;
    let start = Instant::now();
    let err = plugin
        .invoke(ToolCall::new("spin", json!({})))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            CallError::Exhausted {
                budget: Exhausted::Deadline { limit },
                ..
            } if limit == Duration::from_millis(300)
        ),
        "expected a deadline error, got {err:?}"
    );
    // Not a timing assertion on speed: only that the deadline did stop it (a
    // missing deadline would hang until fuel ran out, hours away).
    assert!(start.elapsed() < Duration::from_secs(60));
    still_serves(&plugin).await;
}

#[tokio::test]
async fn guests_waiting_on_the_clock_hit_the_deadline() {
    let mut options = PluginOptions::default();
    options
        .limits
        .fuel(u64::MAX / 2)
        .timeout(Duration::from_millis(300));
    let plugin = plugin_with(HOSTILE, &options).await;
    // One polls the clock in a loop; the other sleeps in WASI (blocked in a host
    // call, where no epoch check runs).
    for tool in ["busy_wait", "sleep_forever"] {
        let err = plugin
            .invoke(ToolCall::new(tool, json!({})))
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                CallError::Exhausted {
                    budget: Exhausted::Deadline { .. },
                    ..
                }
            ),
            "{tool}: expected a deadline error, got {err:?}"
        );
    }
    still_serves(&plugin).await;
}

#[tokio::test]
async fn memory_hog_hits_the_memory_limit() {
    let mut options = PluginOptions::default();
    options.limits.memory_bytes(32 << 20);
    let plugin = plugin_with(HOSTILE, &options).await;
    let err = plugin
        .invoke(ToolCall::new("hog", json!({})))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            CallError::Exhausted {
                budget: Exhausted::Memory { limit },
                ..
            } if limit == 32 << 20
        ),
        "expected a memory-limit error, got {err:?}"
    );
    still_serves(&plugin).await;
}

#[tokio::test]
async fn unbounded_recursion_overflows_the_stack() {
    let plugin = plugin(HOSTILE).await;
    let err = plugin
        .invoke(ToolCall::new("recurse", json!({})))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            CallError::Exhausted {
                budget: Exhausted::Stack { .. },
                ..
            }
        ),
        "expected a stack overflow, got {err:?}"
    );
    still_serves(&plugin).await;
}

#[tokio::test]
async fn panic_is_reported_with_its_message() {
    let plugin = plugin(HOSTILE).await;
    let err = plugin
        .invoke(ToolCall::new("panic", json!({})))
        .await
        .unwrap_err();
    match &err {
        CallError::Panicked { message, tool, .. } => {
            assert!(message.contains("panicked on purpose"), "{message}");
            assert_eq!(tool, "panic");
        }
        other => panic!("expected a panic, got {other:?}"),
    }
    still_serves(&plugin).await;
}

#[tokio::test]
async fn huge_output_hits_the_output_limit() {
    let mut options = PluginOptions::default();
    options.limits.max_output_bytes(1 << 20);
    let plugin = plugin_with(HOSTILE, &options).await;
    let err = plugin
        .invoke(ToolCall::new("huge", json!({"bytes": 2 << 20})))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            CallError::Exhausted {
                budget: Exhausted::Output { limit },
                ..
            } if limit == 1 << 20
        ),
        "expected an output-limit error, got {err:?}"
    );
    // Just under the limit is fine.
    let out = plugin
        .invoke(ToolCall::new("huge", json!({"bytes": 1000})))
        .await
        .unwrap();
    assert_eq!(out.result.unwrap()["result"].as_str().unwrap().len(), 1000);
    still_serves(&plugin).await;
}

#[tokio::test]
async fn many_hostile_calls_at_once_leave_the_host_serving() {
    let mut options = PluginOptions::default();
    options.limits.fuel(5_000_000).memory_bytes(16 << 20);
    let plugin = plugin_with(HOSTILE, &options).await;
    let mut tasks = Vec::new();
    for i in 0..24 {
        let plugin = plugin.clone();
        let tool = ["spin", "hog", "recurse", "panic", "ok", "ok"][i % 6];
        tasks.push(tokio::spawn(async move {
            (tool, plugin.invoke(ToolCall::new(tool, json!({}))).await)
        }));
    }
    for task in tasks {
        let (tool, result) = task.await.unwrap();
        assert_eq!(result.is_ok(), tool == "ok", "{tool}: {result:?}");
    }
    still_serves(&plugin).await;
}

#[tokio::test]
async fn too_few_instances_is_a_named_limit() {
    let mut options = PluginOptions::default();
    options.limits.instances(1);
    let err = Plugin::load(crate::engine(), HOSTILE, &options)
        .await
        .unwrap_err();
    assert!(
        matches!(err, toolhost::LoadError::Declarations { .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("ran out of instances (limit 1"),
        "{err}"
    );
}

#[tokio::test]
async fn no_call_finds_what_an_earlier_call_left_in_memory() {
    // Pool slots keep pages resident between calls (the default engine): each
    // call must still start from the component's initial memory.
    let plugin = plugin(HOSTILE).await;
    let snoop = |plugin: Plugin| async move {
        let out = plugin
            .invoke(ToolCall::new("snoop", json!({})))
            .await
            .unwrap();
        assert_eq!(
            out.result,
            Some(json!({"earlier_calls": 0, "dirty_heap_bytes": 0}))
        );
    };
    for _ in 0..20 {
        snoop(plugin.clone()).await;
    }
    let concurrent: Vec<_> = (0..8)
        .map(|_| tokio::spawn(snoop(plugin.clone())))
        .collect();
    for call in concurrent {
        call.await.unwrap();
    }
}
