//! The example plugins, called through the host as an agent would.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use toolhost::catalog::{Body, CompletionRef, MessageContent, Role};
use toolhost::policy::{Access, Grants};
use toolhost::tool::{MediaKind, Part, ToolCall};
use toolhost::{CallError, Context, PluginOptions, PluginSet, Toolset, ToolsetExt};
use toolhost_test_plugins::{
    CALC, CHECKSUM_C, CODEC, DATES_PY, EXAMPLES, FS, JSON, SEMVER_GO, STRINGS_JS, TEXT,
};

use crate::{plugin, plugin_with};

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

/// The text plugin's prompt, through the library: filled in, checked, and
/// its `style` completed.
#[tokio::test]
async fn text_offers_a_summarize_prompt() {
    let set = PluginSet::from_plugins(vec![plugin(TEXT).await]);
    let cx = Context::new();
    let names: Vec<String> = set
        .prompts(&cx)
        .iter()
        .map(|p| p.spec().name.clone())
        .collect();
    assert_eq!(names, ["summarize"]);
    let arguments = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    let got = set
        .get_prompt(
            &cx,
            "summarize",
            arguments(&[("text", "Wasm is portable."), ("style", "bullet")]),
        )
        .await
        .unwrap();
    let [message] = got.messages.as_slice() else {
        panic!("one message: {got:?}");
    };
    assert_eq!(message.role, Role::User);
    let MessageContent::Part(Part::Text(text)) = &message.content else {
        panic!("a text message: {message:?}");
    };
    assert!(text.contains("bullet points"), "{text}");
    assert!(
        text.contains("<text>\nWasm is portable.\n</text>"),
        "{text}"
    );
    let err = set
        .get_prompt(&cx, "summarize", arguments(&[("style", "tldr")]))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::InvalidArguments { .. }), "{err:?}");
    let err = set
        .get_prompt(
            &cx,
            "summarize",
            arguments(&[("text", "x"), ("style", "ode")]),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("paragraph, bullet, tldr"), "{err}");
    let prompt = CompletionRef::Prompt("summarize".into());
    let styles = set
        .complete(&cx, &prompt, "style", "t", &BTreeMap::new())
        .await
        .unwrap();
    assert_eq!(styles.values, ["tldr"]);
}

/// The fs plugin's granted directory as resources, through the library: the
/// template `file:///{+path}`, text and bytes, escapes refused, `path`
/// completed.
#[tokio::test]
async fn fs_serves_its_granted_directory_as_resources() {
    let dir = tempfile::tempdir().unwrap();
    let (grant, outside) = (dir.path().join("grant"), dir.path().join("outside"));
    std::fs::create_dir_all(grant.join("sub")).unwrap();
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(grant.join("notes.md"), "# Notes\n").unwrap();
    std::fs::write(grant.join("pixel.png"), b"\x89PNG\r\n\x1a\n").unwrap();
    std::fs::write(outside.join("secret.txt"), "the host's secret").unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), grant.join("escape")).unwrap();
    let mut grants = Grants::default();
    grants.dir(&grant, "/repo", Access::ReadOnly);
    let mut options = PluginOptions::default();
    options.grants(grants);
    let set = PluginSet::from_plugins(vec![plugin_with(FS, &options).await]);
    let cx = Context::new();
    assert!(set.resources(&cx).is_empty(), "a template, not a listing");
    let templates: Vec<String> = set
        .resource_templates(&cx)
        .iter()
        .map(|t| t.spec().uri_template.clone())
        .collect();
    assert_eq!(templates, ["file:///{+path}"]);

    let notes = set.read(&cx, "file:///repo/notes.md").await.unwrap();
    assert_eq!(notes[0].uri, "file:///repo/notes.md");
    assert_eq!(notes[0].mime_type.as_deref(), Some("text/markdown"));
    assert_eq!(notes[0].body, Body::Text("# Notes\n".into()));
    let png = set
        .read(&cx, "file:///repo/sub/../pixel.png")
        .await
        .unwrap();
    assert_eq!(png[0].mime_type.as_deref(), Some("image/png"));
    assert_eq!(png[0].body, Body::Bytes(b"\x89PNG\r\n\x1a\n".to_vec()));

    for (uri, says) in [
        (
            "file:///repo/../outside/secret.txt",
            "is `/outside/secret.txt`, outside the granted directories (/repo)",
        ),
        (
            "file:///etc/passwd",
            "outside the granted directories (/repo)",
        ),
        ("file:///../etc/passwd", "climbs above `/`"),
        (
            "file:///repo/escape",
            "leads outside the granted directories",
        ),
        ("file:///repo/sub", "is a directory"),
    ] {
        let err = set.read(&cx, uri).await.unwrap_err();
        assert!(
            matches!(err, CallError::InvalidArguments { .. }) && err.to_string().contains(says),
            "{uri}: {err:?}"
        );
        assert!(!err.to_string().contains("host's secret"), "{err}");
    }
    let err = set.read(&cx, "file:///repo/missing.txt").await.unwrap_err();
    assert!(matches!(err, CallError::UnknownResource { .. }), "{err:?}");

    let template = CompletionRef::Template("file:///{+path}".into());
    let none = BTreeMap::new();
    let top = set
        .complete(&cx, &template, "path", "", &none)
        .await
        .unwrap();
    assert_eq!(top.values, ["repo/"]);
    let entries = set
        .complete(&cx, &template, "path", "repo/", &none)
        .await
        .unwrap();
    assert_eq!(
        entries.values,
        [
            "repo/escape",
            "repo/notes.md",
            "repo/pixel.png",
            "repo/sub/"
        ]
    );
    let some = set
        .complete(&cx, &template, "path", "repo/p", &none)
        .await
        .unwrap();
    assert_eq!(some.values, ["repo/pixel.png"]);

    // Its tools work as before.
    let listed = set
        .invoke(&cx, "list_dir", json!({"path": "/repo"}))
        .await
        .unwrap();
    assert_eq!(
        listed.result.unwrap()["result"].as_array().unwrap().len(),
        4
    );
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
    // The document is JSON text: every model provider's schema dialect takes a
    // string, not all take "any JSON".
    let doc = json!({"items": [{"name": "a", "price": 3}, {"name": "b", "price": 5}]}).to_string();
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

/// The Python example (built by `cargo xtask guests`; see `conformance.rs`).
#[tokio::test]
async fn dates_py_tools() {
    assert!(
        std::path::Path::new(DATES_PY).is_file(),
        "{DATES_PY} is missing: run `cargo xtask guests`"
    );
    let dates = plugin(DATES_PY).await;
    let schema = &dates.tool("add_days").unwrap().input_schema;
    assert_eq!(schema["required"], json!(["date", "days"]));
    assert_eq!(schema["properties"]["business_days"]["default"], false);
    assert!(dates.tool("weekdays_in_range").unwrap().streaming);

    let span = result(
        DATES_PY,
        "days_between",
        json!({"start": "2026-11-30", "end": "2026-12-25", "business_days": true}),
    )
    .await;
    assert_eq!(span["days"], 19);
    let back = result(
        DATES_PY,
        "days_between",
        json!({"start": "2024-03-01", "end": "2024-02-01"}),
    )
    .await;
    assert_eq!(back["days"], -29, "2024 is a leap year");
    let monday = result(
        DATES_PY,
        "add_days",
        json!({"date": "2026-11-27", "days": 1, "business_days": true}),
    )
    .await;
    assert_eq!(monday, json!({"date": "2026-11-30", "weekday": "Monday"}));
    let err = call(
        DATES_PY,
        "add_days",
        json!({"date": "30/11/2026", "days": 1}),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, CallError::InvalidArguments { .. }), "{err:?}");

    let month = call(
        DATES_PY,
        "month_calendar",
        json!({"year": 2026, "month": 2, "week_starts": "sunday"}),
    )
    .await
    .unwrap();
    let json = month.result.unwrap();
    assert_eq!(json["days"], 28);
    assert_eq!(json["weeks"][0], json!([1, 2, 3, 4, 5, 6, 7]));
    match month.parts.as_slice() {
        [Part::Text(grid)] => assert!(grid.contains("February 2026\nSu Mo Tu"), "{grid}"),
        other => panic!("one text part, got {other:?}"),
    }

    let mut fridays = dates
        .stream(ToolCall::new(
            "weekdays_in_range",
            json!({"start": "2026-11-01", "end": "2026-11-30", "weekday": "Friday"}),
        ))
        .await
        .unwrap();
    let mut lines = Vec::new();
    while let Some(part) = fridays.next().await {
        match part.unwrap() {
            Part::Text(line) => lines.push(line),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(
        lines,
        [
            "2026-11-06\n",
            "2026-11-13\n",
            "2026-11-20\n",
            "2026-11-27\n"
        ]
    );
}

/// The JavaScript example (built by `cargo xtask guests`; see `conformance.rs`).
#[tokio::test]
async fn strings_js_tools() {
    assert!(
        std::path::Path::new(STRINGS_JS).is_file(),
        "{STRINGS_JS} is missing: run `cargo xtask guests`"
    );
    let strings = plugin(STRINGS_JS).await;
    let schema = &strings.tool("slugify").unwrap().input_schema;
    assert_eq!(schema["required"], json!(["title"]));
    assert_eq!(schema["properties"]["separator"]["default"], "-");

    let converted = result(
        STRINGS_JS,
        "convert_case",
        json!({"text": "parseHTTPResponse body", "to": "snake"}),
    )
    .await;
    assert_eq!(converted["text"], "parse_http_response_body");
    let camel = result(
        STRINGS_JS,
        "convert_case",
        json!({"text": "Crème brûlée_recipe", "to": "camel"}),
    )
    .await;
    assert_eq!(camel["text"], "cremeBruleeRecipe");
    let err = call(
        STRINGS_JS,
        "convert_case",
        json!({"text": "--", "to": "kebab"}),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, CallError::InvalidArguments { .. }), "{err:?}");

    let slug = result(
        STRINGS_JS,
        "slugify",
        json!({"title": "Hello, World! 10 Tips & Tricks", "max_length": 20}),
    )
    .await;
    assert_eq!(slug["slug"], "hello-world-10-tips");

    let mut lines = Vec::new();
    let mut stream = strings
        .stream(ToolCall::new(
            "wrap_text",
            json!({"text": "the quick brown fox jumps over the lazy dog", "width": 15}),
        ))
        .await
        .unwrap();
    while let Some(part) = stream.next().await {
        match part.unwrap() {
            Part::Text(line) => lines.push(line),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(
        lines,
        ["the quick brown\n", "fox jumps over\n", "the lazy dog\n"]
    );
    let err = call(STRINGS_JS, "wrap_text", json!({"text": "x", "width": 3}))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::InvalidArguments { .. }), "{err:?}");
}

/// The C example (built by `cargo xtask guests`; see `conformance.rs`).
#[tokio::test]
async fn checksum_c_tools() {
    assert!(
        std::path::Path::new(CHECKSUM_C).is_file(),
        "{CHECKSUM_C} is missing: run `cargo xtask guests`"
    );
    // Reference values: zlib's crc32 and adler32, and FNV-1a's published vectors.
    for (algorithm, text, hex) in [
        ("crc32", "hello", "3610a686"),
        (
            "crc32",
            "The quick brown fox jumps over the lazy dog",
            "414fa339",
        ),
        ("adler32", "Wikipedia", "11e60398"),
        ("fnv1a", "", "811c9dc5"),
        ("fnv1a", "a", "e40c292c"),
    ] {
        let out = result(
            CHECKSUM_C,
            "checksum",
            json!({"text": text, "algorithm": algorithm}),
        )
        .await;
        assert_eq!(out["hex"], hex, "{algorithm}({text:?})");
        assert_eq!(
            out["value"],
            u32::from_str_radix(hex, 16).unwrap(),
            "{algorithm}"
        );
    }
    let out = result(CHECKSUM_C, "checksum", json!({"text": "hello"})).await;
    assert_eq!(out["algorithm"], "crc32", "the default");

    // RFC 4648's test vectors, both ways.
    for (text, encoded) in [
        ("", ""),
        ("f", "MY======"),
        ("fo", "MZXQ===="),
        ("foo", "MZXW6==="),
        ("foob", "MZXW6YQ="),
        ("fooba", "MZXW6YTB"),
        ("foobar", "MZXW6YTBOI======"),
    ] {
        let out = result(CHECKSUM_C, "base32", json!({"text": text})).await;
        assert_eq!(out["text"], encoded, "{text:?}");
        let out = result(
            CHECKSUM_C,
            "base32",
            json!({"text": encoded.to_lowercase(), "mode": "decode"}),
        )
        .await;
        assert_eq!(out["text"], text, "{encoded:?}");
    }
    let out = result(CHECKSUM_C, "base32", json!({"text": "ü ✓"})).await;
    let back = result(
        CHECKSUM_C,
        "base32",
        json!({"text": out["text"], "mode": "decode"}),
    )
    .await;
    assert_eq!(back["text"], "ü ✓");
    let err = call(
        CHECKSUM_C,
        "base32",
        json!({"text": "MZ1W", "mode": "decode"}),
    )
    .await
    .unwrap_err();
    match err {
        CallError::InvalidArguments { problems, .. } => assert_eq!(
            problems,
            ["`text` is not base32: unexpected character at position 2"]
        ),
        other => panic!("expected InvalidArguments, got {other:?}"),
    }
    // 0xff is not UTF-8: a failure, not a broken string.
    let err = call(
        CHECKSUM_C,
        "base32",
        json!({"text": "74======", "mode": "decode"}),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, CallError::Failed { .. }), "{err:?}");
}

/// The Go example (built by `cargo xtask guests`; see `conformance.rs`).
#[tokio::test]
async fn semver_go_tools() {
    assert!(
        std::path::Path::new(SEMVER_GO).is_file(),
        "{SEMVER_GO} is missing: run `cargo xtask guests`"
    );
    let out = result(
        SEMVER_GO,
        "semver_compare",
        json!({"a": "1.0.0-alpha", "b": "1.0.0"}),
    )
    .await;
    assert_eq!(out, json!({"order": -1, "a_is": "older"}));
    let out = result(
        SEMVER_GO,
        "semver_compare",
        json!({"a": "v2.1.0+build.5", "b": "2.1.0"}),
    )
    .await;
    assert_eq!(out, json!({"order": 0, "a_is": "equal"}));

    // semver.org's own example of precedence, shuffled.
    let ordered = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
    ];
    let mut shuffled = ordered.to_vec();
    shuffled.reverse();
    shuffled.swap(1, 5);
    let out = result(SEMVER_GO, "semver_sort", json!({"versions": shuffled})).await;
    assert_eq!(out["sorted"], json!(ordered));
    let out = result(
        SEMVER_GO,
        "semver_sort",
        json!({"versions": ["0.9.0", "0.10.0", "0.2.0"], "descending": true}),
    )
    .await;
    assert_eq!(out["sorted"], json!(["0.10.0", "0.9.0", "0.2.0"]));

    for (version, part, next) in [
        ("1.4.2", "major", "2.0.0"),
        ("1.4.2", "minor", "1.5.0"),
        ("1.4.2+b7", "patch", "1.4.3"),
        ("2.0.0-rc.1", "major", "2.0.0"),
        ("2.1.0-rc.1", "major", "3.0.0"),
        ("1.5.0-beta", "minor", "1.5.0"),
        ("1.5.1-beta", "patch", "1.5.1"),
    ] {
        let out = result(
            SEMVER_GO,
            "semver_bump",
            json!({"version": version, "part": part}),
        )
        .await;
        assert_eq!(out["version"], next, "{version} {part}");
    }
    let err = call(SEMVER_GO, "semver_sort", json!({"versions": ["1.2"]}))
        .await
        .unwrap_err();
    match err {
        CallError::InvalidArguments { problems, .. } => {
            assert!(
                problems[0].starts_with("\"1.2\" is not a semantic version"),
                "{problems:?}"
            );
        }
        other => panic!("expected InvalidArguments, got {other:?}"),
    }
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

/// The `format`s JSON Schema (draft 2020-12) defines; MCP clients warn about
/// any other (schemars writes `uint32`, `double`… unless the SDK strips them).
const STANDARD_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Every subschema of `schema` with its JSON pointer (keywords that hold
/// values, such as `default`, `const`, `enum` and `examples`, are skipped).
fn subschemas<'a>(schema: &'a Value, at: String, found: &mut Vec<(String, &'a Value)>) {
    let Value::Object(map) = schema else {
        return;
    };
    found.push((at.clone(), schema));
    for (key, value) in map {
        let at = format!("{at}/{key}");
        match (key.as_str(), value) {
            ("properties" | "$defs" | "patternProperties", Value::Object(children)) => {
                for (name, child) in children {
                    subschemas(child, format!("{at}/{name}"), found);
                }
            }
            ("allOf" | "anyOf" | "oneOf" | "prefixItems", Value::Array(children)) => {
                for (i, child) in children.iter().enumerate() {
                    subschemas(child, format!("{at}/{i}"), found);
                }
            }
            (
                "items" | "additionalProperties" | "not" | "if" | "then" | "else" | "contains",
                child,
            ) => subschemas(child, at, found),
            _ => {}
        }
    }
}

/// What every example plugin declares, in any language: standard formats only
/// (inputs and outputs), and closed argument objects, so that a misspelt key
/// is an error the model can fix. A tool opts out by saying
/// `"additionalProperties": true` at the root of its input schema.
#[tokio::test]
async fn example_schemas_are_standard_and_closed() {
    let mut problems = Vec::new();
    let mut plugins: Vec<&str> = EXAMPLES.to_vec();
    plugins.extend([CHECKSUM_C, DATES_PY, SEMVER_GO, STRINGS_JS]);
    let mut tools = 0;
    for path in plugins {
        for tool in plugin(path).await.tools() {
            tools += 1;
            let mut found = Vec::new();
            subschemas(&tool.input_schema, "input".into(), &mut found);
            let opted_out = tool.input_schema["additionalProperties"] == true;
            if let Some(output) = &tool.output_schema {
                subschemas(output, "output".into(), &mut found);
            }
            for (at, schema) in found {
                if let Some(format) = schema.get("format").and_then(Value::as_str)
                    && !STANDARD_FORMATS.contains(&format)
                {
                    problems.push(format!("{}: {at}: format `{format}`", tool.name));
                }
                let arguments_object = at.starts_with("input")
                    && schema.get("properties").is_some()
                    && !at.contains("/allOf/")
                    && !at.contains("/anyOf/")
                    && !at.contains("/oneOf/");
                if arguments_object && !opted_out && schema.get("additionalProperties").is_none() {
                    problems.push(format!(
                        "{}: {at}: an object without `additionalProperties`",
                        tool.name
                    ));
                }
            }
        }
    }
    assert!(tools >= 19, "only {tools} example tools were checked");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A misspelt key is refused by the host's schema check, before the guest
/// runs, with a message that names it, in every language.
#[tokio::test]
async fn a_misspelt_argument_is_invalid_and_named() {
    for (path, tool, args) in [
        (TEXT, "word_count", json!({"text": "a b", "seperator": "_"})),
        (
            DATES_PY,
            "add_days",
            json!({"date": "2024-01-01", "days": 1, "seperator": "_"}),
        ),
        (
            STRINGS_JS,
            "slugify",
            json!({"title": "A b", "seperator": "_"}),
        ),
        (
            SEMVER_GO,
            "semver_compare",
            json!({"a": "1.0.0", "b": "1.0.1", "seperator": "_"}),
        ),
        (
            CHECKSUM_C,
            "checksum",
            json!({"text": "abc", "seperator": "_"}),
        ),
    ] {
        let err = call(path, tool, args).await.unwrap_err();
        let CallError::InvalidArguments { problems, .. } = &err else {
            panic!("{tool}: {err:?}");
        };
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("/seperator: unexpected property")),
            "{tool}: {problems:?}"
        );
    }
}

/// Optional means nullable: every non-Rust example accepts `null` for an
/// optional argument (as a model in OpenAI strict mode sends it) and uses the
/// default, exactly as if the argument were missing.
#[tokio::test]
async fn null_means_the_default() {
    for (path, tool, given, with_null) in [
        (
            DATES_PY,
            "add_days",
            json!({"date": "2024-01-05", "days": 1}),
            "business_days",
        ),
        (
            DATES_PY,
            "month_calendar",
            json!({"year": 2024, "month": 2}),
            "week_starts",
        ),
        (
            STRINGS_JS,
            "slugify",
            json!({"title": "A long title here"}),
            "separator",
        ),
        (
            STRINGS_JS,
            "slugify",
            json!({"title": "A long title here"}),
            "max_length",
        ),
        (
            SEMVER_GO,
            "semver_bump",
            json!({"version": "1.4.2"}),
            "part",
        ),
        (
            SEMVER_GO,
            "semver_sort",
            json!({"versions": ["2.0.0", "1.0.0"]}),
            "descending",
        ),
        (CHECKSUM_C, "checksum", json!({"text": "abc"}), "algorithm"),
        (CHECKSUM_C, "base32", json!({"text": "abc"}), "mode"),
    ] {
        let mut nulled = given.clone();
        nulled[with_null] = Value::Null;
        let expected = result(path, tool, given).await;
        assert_eq!(
            result(path, tool, nulled).await,
            expected,
            "{tool}: `{with_null}: null`"
        );
    }
}

/// Every example tool's input schema is taken as it is, without a warning, by
/// every dialect: MCP's JSON Schema, OpenAI's strict mode and Gemini
/// (`tests/interop` checks the same with the providers' own converters).
#[tokio::test]
async fn every_example_schema_is_portable() {
    let mut checked = 0;
    let polyglot = [CHECKSUM_C, DATES_PY, SEMVER_GO, STRINGS_JS];
    for path in EXAMPLES.iter().chain(&polyglot) {
        let plugin = plugin(path).await;
        for spec in plugin.tools() {
            for verdict in toolhost::schema::dialect::check(&spec.input_schema) {
                assert!(
                    verdict.problems.is_empty(),
                    "{path}: {}: {}: {:#?}\n{:#}",
                    spec.name,
                    verdict.dialect,
                    verdict.problems,
                    spec.input_schema
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 28, "only {checked} example tools");
}
