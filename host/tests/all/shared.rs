//! What calls share: guest memory across the engine, the log, error text that
//! reaches a model, stream chunks, invocation state. The `greedy` guest stays
//! inside each call's own budgets and goes after these; each test shows the
//! bound, the clear error when it is hit, and that the host goes on serving.

use std::time::Duration;

use serde_json::{Value, json};
use toolhost::engine::Compilation;
use toolhost::error::{Busy, Exhausted};
use toolhost::tool::ToolCall;
use toolhost::{CallError, Engine, EngineConfig, Plugin, PluginOptions, ToolOutput};
use toolhost_test_plugins::{ECHO, GREEDY};

use crate::caps::{log_lines, logs};
use crate::{engine, plugin, plugin_with};

const MIB: u64 = 1 << 20;

/// An engine of its own, with a small guest-memory budget.
fn engine_with_budget(budget: u64, wait: Duration) -> Engine {
    let mut config = EngineConfig::default();
    config
        .cache_dir(None)
        .max_concurrent_instances(16)
        .max_guest_memory(Some(budget))
        .memory_wait(wait);
    Engine::new(&config).unwrap()
}

async fn call_with_id(
    plugin: &Plugin,
    tool: &str,
    arguments: Value,
    call_id: &str,
) -> Result<ToolOutput, CallError> {
    plugin
        .invoke(ToolCall::new(tool, arguments).with_call_id(call_id))
        .await
}

async fn call(plugin: &Plugin, tool: &str, arguments: Value) -> Result<ToolOutput, CallError> {
    plugin.invoke(ToolCall::new(tool, arguments)).await
}

/// Waits (hang guard: 60 s) until the engine's calls hold at least `bytes`.
async fn until_held(engine: &Engine, bytes: u64) {
    for _ in 0..6000 {
        if engine.guest_memory().in_use >= bytes {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "the engine never held {bytes} bytes: {:?}",
        engine.guest_memory()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guest_memory_past_the_engine_budget_is_refused_as_busy_and_given_back() {
    let engine = engine_with_budget(64 * MIB, Duration::from_millis(50));
    let greedy = Plugin::load(&engine, GREEDY, &PluginOptions::default())
        .await
        .unwrap();
    assert_eq!(engine.guest_memory().in_use, 0, "loading holds nothing");
    // One call holds 40 MiB (under its own 256 MiB limit) for a while...
    let holder = {
        let greedy = greedy.clone();
        tokio::spawn(async move { call(&greedy, "hold", json!({"mib": 40, "ms": 3000})).await })
    };
    until_held(&engine, 40 * MIB).await;
    // ...so a second one that wants as much would pass the engine's budget.
    let err = call(&greedy, "hold", json!({"mib": 40})).await.unwrap_err();
    assert!(
        matches!(
            err,
            CallError::Busy {
                reason: Busy::Memory { limit },
                ..
            } if limit == 64 * MIB
        ),
        "{err:?}"
    );
    assert!(err.is_retryable(), "{err}");
    assert!(err.to_string().contains("retry"), "{err}");
    // Small calls still run beside the holder.
    call(&greedy, "hold", json!({"mib": 1})).await.unwrap();
    holder.await.unwrap().unwrap();
    let memory = engine.guest_memory();
    assert_eq!(memory.in_use, 0, "every store gave its memory back");
    assert!(memory.peak <= 64 * MIB, "{memory:?}");
    assert!(memory.peak >= 40 * MIB, "{memory:?}");
    // With the memory back, the same call runs.
    let out = call(&greedy, "hold", json!({"mib": 40})).await.unwrap();
    assert_eq!(out.result.unwrap()["held_mib"], 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waits_for_memory_another_call_gives_back() {
    // A generous wait: the second call waits for the first instead of failing.
    let engine = engine_with_budget(64 * MIB, Duration::from_secs(60));
    let greedy = Plugin::load(&engine, GREEDY, &PluginOptions::default())
        .await
        .unwrap();
    let holder = {
        let greedy = greedy.clone();
        tokio::spawn(async move { call(&greedy, "hold", json!({"mib": 40, "ms": 300})).await })
    };
    until_held(&engine, 40 * MIB).await;
    let out = call(&greedy, "hold", json!({"mib": 40})).await.unwrap();
    assert_eq!(out.result.unwrap()["held_mib"], 40);
    holder.await.unwrap().unwrap();
    assert!(engine.guest_memory().peak <= 64 * MIB);
}

#[tokio::test]
async fn a_call_larger_than_the_whole_budget_is_busy_at_once() {
    let engine = engine_with_budget(16 * MIB, Duration::from_secs(60));
    let greedy = Plugin::load(&engine, GREEDY, &PluginOptions::default())
        .await
        .unwrap();
    let err = call(&greedy, "hold", json!({"mib": 32})).await.unwrap_err();
    assert!(matches!(err, CallError::Busy { .. }), "{err:?}");
    call(&greedy, "hold", json!({"mib": 1})).await.unwrap();
}

#[tokio::test]
async fn log_messages_share_the_stdio_cap_and_the_rest_is_counted() {
    logs();
    let mut options = PluginOptions::default();
    options.limits.max_stdio_bytes(4096);
    let greedy = plugin_with(GREEDY, &options).await;
    let out = call_with_id(
        &greedy,
        "chatty",
        json!({"count": 20000, "bytes": 100}),
        "chatty-call-1",
    )
    .await
    .unwrap();
    assert_eq!(out.result.unwrap()["sent"], 20000);
    let lines = log_lines("chatty-call-1");
    let logged = lines
        .iter()
        .filter(|l| l.contains("chatty message"))
        .count();
    // Each message is 124 bytes: 4096 bytes hold 33 of them, and one cut.
    assert!((30..=34).contains(&logged), "{logged} messages logged");
    let text = lines.join("\n");
    assert!(
        !text.contains("chatty message 00000100"),
        "nothing past the cap is logged"
    );
    assert!(text.contains("reached its cap"), "{text}");
    assert!(text.contains("bytes dropped"), "{text}");
}

#[tokio::test]
async fn guest_text_cannot_forge_log_lines() {
    logs();
    let greedy = plugin(GREEDY).await;
    let err = call_with_id(&greedy, "forge", json!({}), "forge-call-1")
        .await
        .unwrap_err();
    // The error keeps its text (a model may read a multi-line message)...
    assert!(err.to_string().contains("failing\n"), "{err}");
    // ...but in the log, guest text stays on the line tagged with its call.
    let text = String::from_utf8_lossy(&logs().lock().unwrap()).into_owned();
    let forged: Vec<&str> = text.lines().filter(|l| l.contains("FORGED-BY")).collect();
    assert_eq!(forged.len(), 2, "the log and the stderr line: {forged:#?}");
    for line in &forged {
        assert!(line.contains("forge-call-1"), "a forged line: {line}");
        assert!(!line.contains('\u{1b}') && !line.contains('\r'), "{line:?}");
    }
    assert!(
        forged.iter().any(|l| l.contains("honest start\\n2026")),
        "{forged:#?}"
    );
}

#[tokio::test]
async fn long_error_messages_are_cut_and_marked() {
    let greedy = plugin(GREEDY).await;
    let err = call(&greedy, "loud_error", json!({"bytes": 10_000_000}))
        .await
        .unwrap_err();
    let CallError::Failed { message, .. } = &err else {
        panic!("{err:?}");
    };
    assert!(message.starts_with("loud start zzz"), "{message:.40}");
    assert!(message.len() <= 4200, "{} bytes", message.len());
    assert!(message.contains("[cut: "), "{}", &message[4000..]);
    let err = call(
        &greedy,
        "loud_error",
        json!({"bytes": 10_000_000, "kind": "invalid"}),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().len() <= 4300, "{}", err.to_string().len());
    // Problems the host finds quote the value: a huge argument is cut too.
    let err = call(&greedy, "hold", json!({"mib": "a".repeat(1 << 20)}))
        .await
        .unwrap_err();
    let CallError::InvalidArguments { problems, .. } = &err else {
        panic!("{err:.200}");
    };
    assert!(
        problems.iter().all(|p| p.len() <= 600),
        "{}",
        err.to_string().len()
    );
    assert!(problems[0].contains("[cut: "), "{:.200}", problems[0]);
}

#[tokio::test]
async fn empty_chunks_count_toward_the_output_cap() {
    let mut options = PluginOptions::default();
    options.limits.max_output_bytes(1 << 20);
    let greedy = plugin_with(GREEDY, &options).await;
    // 100,000 chunks of nothing: zero bytes, but each costs the host a message.
    let err = call(&greedy, "empty_chunks", json!({"count": 100_000}))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            CallError::Exhausted {
                budget: Exhausted::StreamOutput {
                    data: 0,
                    chunks: 4097,
                    per_chunk: 256,
                    ..
                },
                ..
            }
        ),
        "{err:?}"
    );
    // In words: the chunks count, empty ones too.
    let text = err.to_string();
    assert!(
        text.contains("the stream's 4097 chunks held 0 bytes")
            && text.contains("each chunk, empty or not, counts 256 bytes more"),
        "{text}"
    );
    // A few are fine.
    let out = call(&greedy, "empty_chunks", json!({"count": 100}))
        .await
        .unwrap();
    assert_eq!(out.result.unwrap()["result"], "");
}

#[tokio::test]
async fn invocation_state_caps_its_keys_and_frees_them_at_the_end() {
    let greedy = plugin(GREEDY).await;
    let invocation = "many-keys-invocation";
    let out = greedy
        .invoke(ToolCall::new("many_keys", json!({"count": 4000})).with_invocation_id(invocation))
        .await
        .unwrap();
    assert_eq!(out.result.unwrap()["set"], 4000);
    assert!(engine().invocation_state_bytes() >= 4000 * 64);
    // Tiny keys add up: past 4096 keys the guest is stopped with a clear error.
    let err = greedy
        .invoke(ToolCall::new("many_keys", json!({"count": 5000})).with_invocation_id(invocation))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("limited to 4096 keys"), "{err:?}");
    assert_eq!(
        engine().invocation_state(invocation).await.unwrap().len(),
        4096
    );
    engine().end_invocation(invocation);
    assert!(
        engine()
            .invocation_state(invocation)
            .await
            .unwrap()
            .is_empty()
    );
    // Another invocation starts with nothing held for it.
    let out = greedy
        .invoke(ToolCall::new("many_keys", json!({"count": 10})).with_invocation_id("other"))
        .await
        .unwrap();
    assert_eq!(out.result.unwrap()["set"], 10);
    engine().end_invocation("other");
}

#[tokio::test]
async fn instance_slots_are_sized_from_the_memory_budget() {
    // Each used slot may keep 1 MiB of its memory, table and stack resident
    // (`keep_resident`), outside the budget: a 60 MiB budget gets the slots
    // that keep at most a quarter of it, 60 / 4 / 3 = 5, on either tier.
    for compilation in [Compilation::Optimized, Compilation::Baseline] {
        let mut config = EngineConfig::default();
        config
            .cache_dir(None)
            .compilation(compilation)
            .keep_resident(1 << 20)
            .max_guest_memory(Some(60 * MIB));
        let engine = Engine::new(&config).unwrap();
        assert_eq!(engine.max_concurrent_instances(), 5);
        let echo = Plugin::load(&engine, ECHO, &PluginOptions::default())
            .await
            .unwrap();
        // A stream holds its instance until it ends.
        let mut streams = Vec::new();
        for _ in 0..5 {
            let countdown = ToolCall::new("countdown", json!({"from": 3}));
            streams.push(echo.stream(countdown).await.unwrap());
        }
        let err = call(&echo, "add", json!({"a": 1, "b": 1}))
            .await
            .unwrap_err();
        assert!(crate::is_busy_instances(&err), "{compilation:?}: {err:?}");
        drop(streams.pop());
        let out = call(&echo, "add", json!({"a": 2, "b": 3})).await.unwrap();
        assert_eq!(out.result, Some(json!({"result": 5})), "{compilation:?}");
    }
    // Set, the pool's size is the operator's.
    let mut config = EngineConfig::default();
    config
        .cache_dir(None)
        .max_guest_memory(Some(60 * MIB))
        .max_concurrent_instances(7);
    assert_eq!(Engine::new(&config).unwrap().max_concurrent_instances(), 7);
}
