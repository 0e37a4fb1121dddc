//! The example plugins, called through the host as an agent would.

use serde_json::{Value, json};
use toolhost::{CallError, MediaKind, Part, ToolCall};
use toolhost_test_plugins::{CALC, CODEC, JSON, TEXT};

use crate::plugin;

async fn call(
    path: &'static str,
    tool: &str,
    args: Value,
) -> Result<toolhost::ToolOutput, CallError> {
    plugin(path).await.invoke(ToolCall::new(tool, args)).await
}

async fn result(path: &'static str, tool: &str, args: Value) -> Value {
    call(path, tool, args)
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
        .result
        .unwrap_or_else(|| panic!("{tool} returns JSON"))
}

#[tokio::test]
async fn text_tools() {
    let counts = result(TEXT, "word_count", json!({"text": "one two\nthree"})).await;
    assert_eq!(counts["words"], 3);
    assert_eq!(counts["lines"], 2);
    let found = result(
        TEXT,
        "regex_find",
        json!({"pattern": r"(\w+)@(\w+)\.com", "text": "mail ann@example.com or bob@test.com"}),
    )
    .await;
    assert_eq!(found["count"], 2);
    assert_eq!(found["matches"][0]["text"], "ann@example.com");
    assert_eq!(found["matches"][1]["groups"][0]["text"], "bob");
    assert_eq!(found["matches"][1]["groups"][1]["text"], "test");
    let replaced = result(
        TEXT,
        "regex_replace",
        json!({"pattern": r"(\d+)", "replacement": "<$1>", "text": "a1 b22"}),
    )
    .await;
    assert_eq!(replaced["text"], "a<1> b<22>");
    let err = call(TEXT, "regex_find", json!({"pattern": "(", "text": "x"}))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::InvalidArguments { .. }), "{err:?}");
}

#[tokio::test]
async fn text_streams_lines() {
    let text = plugin(TEXT).await;
    let mut stream = text
        .stream(ToolCall::new("split_lines", json!({"text": "a\nb\nc"})))
        .await
        .unwrap();
    let mut lines = Vec::new();
    while let Some(part) = stream.next().await {
        match part.unwrap() {
            Part::Text(line) => lines.push(line),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(lines, ["a\n", "b\n", "c\n"]);
}

#[tokio::test]
async fn calc_tools() {
    let value = result(CALC, "evaluate", json!({"expression": "2 * (3 + 4) ^ 2"})).await;
    assert_eq!(value["result"], 98.0);
    let value = result(
        CALC,
        "evaluate",
        json!({"expression": "-2^2 + sqrt(16) + max(1, 5)"}),
    )
    .await;
    assert_eq!(value["result"], 5.0);
    let err = call(CALC, "evaluate", json!({"expression": "1 / 0"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("division by zero"), "{err}");
    let miles = result(
        CALC,
        "convert_units",
        json!({"value": "5", "from": "km", "to": "mi"}),
    )
    .await;
    let miles = miles["result"].as_f64().unwrap();
    assert!((miles - 3.106_855).abs() < 1e-5, "{miles}");
    let boiling = result(
        CALC,
        "convert_units",
        json!({"value": 100, "from": "celsius", "to": "fahrenheit"}),
    )
    .await;
    assert!((boiling["result"].as_f64().unwrap() - 212.0).abs() < 1e-9);
    let err = call(
        CALC,
        "convert_units",
        json!({"value": 1, "from": "km", "to": "kg"}),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, CallError::InvalidArguments { .. }), "{err:?}");
}

#[tokio::test]
async fn codec_tools() {
    let digest = result(
        CODEC,
        "hash",
        json!({"input": "hello", "algorithm": "sha256"}),
    )
    .await;
    assert_eq!(
        digest["hex"],
        "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    );
    let encoded = result(
        CODEC,
        "base64",
        json!({"operation": "encode", "data": "hi there"}),
    )
    .await;
    assert_eq!(encoded["result"], "aGkgdGhlcmU=");
    let decoded = result(
        CODEC,
        "base64",
        json!({"operation": "decode", "data": "aGkgdGhlcmU="}),
    )
    .await;
    assert_eq!(decoded["result"], "hi there");
    let batch = plugin(CODEC).await;
    assert!(batch.tool("batch_digest").unwrap().long_running);
    let done = result(CODEC, "batch_digest", json!({"inputs": ["a", "b", "a"]})).await;
    assert_eq!(done["status"], "done");
    assert_eq!(done["count"], 3);
}

#[tokio::test]
async fn codec_draws_a_qr_code() {
    let out = call(CODEC, "qr_code", json!({"text": "https://example.com"}))
        .await
        .unwrap();
    let png = out
        .parts
        .iter()
        .find_map(|p| match p {
            Part::Blob {
                kind: MediaKind::Image,
                mime_type,
                data,
                ..
            } if mime_type == "image/png" => Some(data),
            _ => None,
        })
        .expect("a PNG part");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
    // The IHDR chunk: width and height are equal (a QR code is square).
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!(width, height);
    assert!(width > 21);
}

#[tokio::test]
async fn json_queries_documents() {
    let doc = json!({"items": [{"name": "a", "price": 3}, {"name": "b", "price": 5}]});
    let found = result(
        JSON,
        "json_query",
        json!({"document": doc, "path": "items[1].name"}),
    )
    .await;
    assert_eq!(found["found"], true);
    assert_eq!(found["value"], "b");
    let all = result(
        JSON,
        "json_query",
        json!({"document": doc, "path": "items[*].price"}),
    )
    .await;
    assert_eq!(all["count"], 2);
    let missing = result(JSON, "json_query", json!({"document": doc, "path": "nope"})).await;
    assert_eq!(missing["found"], false);
}

#[tokio::test]
async fn every_example_declares_valid_tools() {
    let mut total = 0;
    for path in toolhost_test_plugins::EXAMPLES {
        let plugin = toolhost::Plugin::load(crate::engine(), path, &Default::default())
            .await
            .unwrap();
        for tool in plugin.tools() {
            assert!(
                !tool.description.is_empty(),
                "{} has a description",
                tool.name
            );
            assert_eq!(tool.input_schema["type"], "object");
            total += 1;
        }
    }
    assert!(total >= 8, "at least 8 example tools, found {total}");
}
