//! The call path against a well-behaved plugin: validation, coercion, result
//! wrapping, streams, parts, call IDs, invocation state, long-running tools.

use serde_json::json;
use toolhost::CallError;
use toolhost::tool::{LONG_RUNNING_NOTE, MediaKind, Part, ToolCall};
use toolhost_test_plugins::ECHO;

use crate::{engine, plugin};

#[tokio::test]
async fn declarations_come_from_the_argument_types() {
    let echo = plugin(ECHO).await;
    let order = echo.tool("order").unwrap();
    let schema = &order.input_schema;
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["quantity"]["maximum"], 99);
    let required: Vec<&str> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(required.contains(&"item") && required.contains(&"quantity"));
    let echo_tool = echo.tool("echo").unwrap();
    let required = echo_tool.input_schema["required"].as_array().unwrap();
    assert_eq!(
        required,
        &[json!("message")],
        "optional fields are not required"
    );
    assert!(!echo_tool.description.is_empty());
}

#[tokio::test]
async fn bad_arguments_list_every_violation() {
    let echo = plugin(ECHO).await;
    let err = echo
        .invoke(ToolCall::new(
            "order",
            json!({"quantity": 120, "size": "huge"}),
        ))
        .await
        .unwrap_err();
    match &err {
        CallError::InvalidArguments { tool, problems } => {
            assert_eq!(tool, "order");
            assert_eq!(problems.len(), 3, "{problems:?}");
            assert!(
                problems
                    .iter()
                    .any(|p| p == "/quantity: 120 is greater than the maximum of 99"),
                "{problems:?}"
            );
            assert!(
                problems.iter().any(|p| p.starts_with("/size:")),
                "{problems:?}"
            );
            assert!(
                problems
                    .iter()
                    .any(|p| p == "/item: required property is missing"),
                "{problems:?}"
            );
        }
        other => panic!("expected InvalidArguments, got {other:?}"),
    }
    assert!(err.is_caller_error());
}

#[tokio::test]
async fn obvious_slips_are_coerced() {
    let echo = plugin(ECHO).await;
    let out = echo
        .invoke(ToolCall::new("add", json!({"a": "40", "b": 2})))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": 42})));
    let out = echo
        .invoke(ToolCall::new("flag", json!({"enabled": "true"})))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"enabled": true})));
    // A string that is not a number stays a string, and is reported.
    let err = echo
        .invoke(ToolCall::new("add", json!({"a": "forty", "b": 2})))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::InvalidArguments { .. }), "{err:?}");
}

#[tokio::test]
async fn a_bare_result_is_wrapped_and_objects_are_not() {
    let echo = plugin(ECHO).await;
    let out = echo
        .invoke(ToolCall::new("add", json!({"a": 1, "b": 2})))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": 3})));
    let out = echo
        .invoke(ToolCall::new("echo", json!({"message": "hi"})))
        .await
        .unwrap();
    assert_eq!(out.result.unwrap()["message"], "hi");
}

#[tokio::test]
async fn unknown_tools_list_what_exists() {
    let echo = plugin(ECHO).await;
    let err = echo
        .invoke(ToolCall::new("nope", json!({})))
        .await
        .unwrap_err();
    match &err {
        CallError::UnknownTool { tool, available } => {
            assert_eq!(tool, "nope");
            assert!(available.contains(&"echo".to_owned()));
        }
        other => panic!("expected UnknownTool, got {other:?}"),
    }
}

#[tokio::test]
async fn tool_failures_are_their_own_error() {
    let echo = plugin(ECHO).await;
    let err = echo
        .invoke(ToolCall::new("fail", json!({})))
        .await
        .unwrap_err();
    match &err {
        CallError::Failed { message, .. } => assert_eq!(message, "this tool always fails"),
        other => panic!("expected Failed, got {other:?}"),
    }
}

#[tokio::test]
async fn streams_arrive_chunk_by_chunk() {
    let echo = plugin(ECHO).await;
    assert!(echo.tool("countdown").unwrap().streaming);
    let mut stream = echo
        .stream(ToolCall::new("countdown", json!({"from": 3})))
        .await
        .unwrap();
    let mut chunks = Vec::new();
    while let Some(part) = stream.next().await {
        match part.unwrap() {
            Part::Text(text) => chunks.push(text),
            other => panic!("unexpected part {other:?}"),
        }
    }
    assert_eq!(chunks.concat(), "3\n2\n1\n0\n");
    assert_eq!(chunks.len(), 4);
    // Invoking a streaming tool collects it.
    let out = echo
        .invoke(ToolCall::new("countdown", json!({"from": 2})))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": "2\n1\n0\n"})));
}

#[tokio::test]
async fn a_tool_can_return_an_image() {
    let echo = plugin(ECHO).await;
    let out = echo
        .invoke(ToolCall::new("pixel", json!({})))
        .await
        .unwrap();
    let image = out
        .parts
        .iter()
        .find_map(|p| match p {
            Part::Blob {
                kind: MediaKind::Image,
                mime_type,
                data,
                ..
            } => Some((mime_type, data)),
            _ => None,
        })
        .expect("an image part");
    assert_eq!(image.0, "image/png");
    assert!(image.1.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert!(out.parts.iter().any(|p| matches!(p, Part::Text(_))));
}

#[tokio::test]
async fn the_call_id_reaches_the_tool_and_comes_back() {
    let echo = plugin(ECHO).await;
    let call = ToolCall::new("whoami", json!({}))
        .with_call_id("call-xyz")
        .with_invocation_id("inv-1");
    let out = echo.invoke(call).await.unwrap();
    assert_eq!(out.call_id, "call-xyz");
    assert_eq!(
        out.result,
        Some(json!({"call_id": "call-xyz", "invocation_id": "inv-1"}))
    );
}

#[tokio::test]
async fn invocation_state_is_shared_within_an_invocation_only() {
    let echo = plugin(ECHO).await;
    let set = |inv: &str, value: &str| {
        ToolCall::new("remember", json!({"key": "city", "value": value})).with_invocation_id(inv)
    };
    let get = |inv: &str| ToolCall::new("remember", json!({"key": "city"})).with_invocation_id(inv);
    echo.invoke(set("state-a", "Paris")).await.unwrap();
    echo.invoke(set("state-b", "Lima")).await.unwrap();
    let a = echo.invoke(get("state-a")).await.unwrap();
    assert_eq!(a.result, Some(json!({"value": "Paris"})));
    let b = echo.invoke(get("state-b")).await.unwrap();
    assert_eq!(b.result, Some(json!({"value": "Lima"})));
    engine().end_invocation("state-a");
    let a = echo.invoke(get("state-a")).await.unwrap();
    assert_eq!(a.result, Some(json!({"value": null})));
    assert_eq!(
        engine().invocation_state("state-b").await.unwrap()["city"],
        "Lima"
    );
    engine().end_invocation("state-b");
}

#[tokio::test]
async fn long_running_tools_carry_the_note() {
    let echo = plugin(ECHO).await;
    let spec = echo.tool("long_job").unwrap();
    assert!(spec.long_running);
    assert!(spec.model_description().ends_with(LONG_RUNNING_NOTE));
    assert!(
        !echo
            .tool("echo")
            .unwrap()
            .model_description()
            .contains("NOTE")
    );
}

#[tokio::test]
async fn every_call_gets_a_fresh_instance() {
    let echo = plugin(ECHO).await;
    let mut tasks = Vec::new();
    for i in 0..32 {
        let echo = echo.clone();
        tasks.push(tokio::spawn(async move {
            let call = ToolCall::new("whoami", json!({})).with_call_id(format!("c{i}"));
            echo.invoke(call).await
        }));
    }
    for (i, task) in tasks.into_iter().enumerate() {
        let out = task.await.unwrap().unwrap();
        assert_eq!(out.result.unwrap()["call_id"], format!("c{i}"));
    }
}
