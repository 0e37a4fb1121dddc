//! One conformance suite, run against every language's build of the same tool
//! set (`tests/plugins/conformance` in Rust, `conformance-py` in Python,
//! `conformance-js` in JavaScript, `conformance-c` in C, `conformance-go` in
//! Go): declarations, nested objects, defaults, enums, tool errors,
//! streams, binary parts, invocation state, call IDs and result wrapping.
//!
//! What the conformance plugins offer besides tools (resources, templates,
//! prompts, completions) is checked in [`catalog`].
//!
//! Every check runs once per language (`conformance::python::streams`, ...), so a
//! difference shows up as a failing test with the language in its name. The one
//! deliberate difference is [`Language::bug`].
//!
//! The non-Rust guests are built by `cargo xtask guests` (which `cargo xtask
//! test` runs first), not by cargo. If one is missing its tests **fail** with the
//! command to run: CI must never pass without having run them.

use std::path::Path;

use serde_json::{Value, json};
use toolhost::tool::{Caller, MediaKind, Part, ToolCall};
use toolhost::{CallError, Plugin, ToolOutput};

use crate::plugin;

mod catalog;

use catalog::{completions, declared, prompts, reads};

/// A 1×1 red RGBA PNG: what every build's `pixel` returns.
const PIXEL_PNG: [u8; 70] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x56, 0xc7, 0x2f, 0x0d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// The language a build is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Language {
    Rust,
    Python,
    /// QuickJS (componentize-qjs).
    Js,
    /// clang for wasm32-wasi, with the WASI reactor adapter.
    C,
    /// Go 1.27 (`GOOS=wasip1`), with the WASI reactor adapter.
    Go,
}

/// How a bug (an unexpected error in the tool's code) reaches the caller.
#[derive(Debug)]
enum Bug {
    /// `CallError::Panicked` whose message contains this.
    Panicked(&'static str),
    /// `CallError::Failed` whose message starts with this.
    Failed(&'static str),
    /// `CallError::Trapped` whose trap contains this.
    Trapped(&'static str),
}

impl Language {
    /// How the conformance tool `crash` reports its bug: the one deliberate
    /// difference between the languages.
    ///
    /// - Rust: a panic; the guest traps and the host reports `Panicked` with the
    ///   message.
    /// - Go: the same: the SDK recovers the Go panic, hands its message to the
    ///   host (`host.panicked`) and lets the guest trap.
    /// - Python and JavaScript: an uncaught exception would trap as
    ///   `unreachable` with its message lost, so the SDKs report it as a tool
    ///   failure (`Failed`, "<type>: <message>") and log the traceback.
    /// - C: nothing to catch; the integer division by zero is a wasm trap, which
    ///   the host reports as `Trapped` with the trap's own wording. (A C tool
    ///   that detects a bug itself calls `th_panic`, which reports `Panicked`.)
    fn bug(self) -> Bug {
        match self {
            Self::Rust => Bug::Panicked("division by zero"),
            Self::Go => Bug::Panicked("runtime error: integer divide by zero"),
            Self::Python => Bug::Failed("ZeroDivisionError: division by zero"),
            // QuickJS's own wording of the bug in `app.js`.
            Self::Js => Bug::Failed("TypeError: "),
            Self::C => Bug::Trapped("integer divide by zero"),
        }
    }
}

/// One build of the conformance tool set.
#[derive(Debug, Clone, Copy)]
struct Build {
    path: &'static str,
    language: Language,
}

impl Build {
    async fn load(self) -> Plugin {
        self.check_exists();
        plugin(self.path).await
    }

    /// Fails with the command that builds the guest if it is missing.
    fn check_exists(self) {
        assert!(
            Path::new(self.path).is_file(),
            "{} is missing: the {:?} conformance guest is built by `cargo xtask guests` \
             (`cargo xtask test` runs it before `cargo test`)",
            self.path,
            self.language,
        );
    }

    async fn call(self, tool: &str, args: Value) -> Result<ToolOutput, CallError> {
        self.load().await.invoke(ToolCall::new(tool, args)).await
    }

    async fn result(self, tool: &str, args: Value) -> Value {
        self.call(tool, args)
            .await
            .unwrap_or_else(|e| panic!("{:?} {tool}: {e}", self.language))
            .result
            .unwrap_or_else(|| panic!("{:?} {tool} returns JSON", self.language))
    }
}

/// A property's schema with `$ref`s followed and a nullable `anyOf` unwrapped:
/// the languages write the same type in different (equivalent) shapes.
fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference.trim_start_matches("#/$defs/");
        return resolve(root, &root["$defs"][name]);
    }
    if let Some(options) = schema.get("anyOf").and_then(Value::as_array) {
        let real: Vec<&Value> = options.iter().filter(|o| o["type"] != "null").collect();
        if let [only] = real.as_slice() {
            return resolve(root, only);
        }
    }
    schema
}

/// True if the schema's `type` is `kind`, or `[kind, "null"]` (a nullable shape).
fn has_type(schema: &Value, kind: &str) -> bool {
    match &schema["type"] {
        Value::String(t) => t == kind,
        Value::Array(types) => types.iter().any(|t| t == kind),
        _ => false,
    }
}

fn sorted_strings(value: &Value) -> Vec<String> {
    let mut items: Vec<String> = value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    items.sort();
    items
}

async fn declarations(build: Build) {
    let plugin = build.load().await;
    let mut names: Vec<&str> = plugin.tools().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "add",
            "countdown",
            "crash",
            "echo",
            "fail",
            "greet",
            "order",
            "pixel",
            "remember",
            "whoami"
        ]
    );
    let required = [
        ("add", vec!["a", "b"]),
        ("countdown", vec!["start"]),
        ("crash", vec![]),
        ("echo", vec!["message"]),
        ("fail", vec!["message"]),
        ("greet", vec!["name"]),
        ("order", vec!["item", "size"]),
        ("pixel", vec![]),
        ("remember", vec!["key"]),
        ("whoami", vec![]),
    ];
    for (name, expected) in required {
        let tool = plugin.tool(name).unwrap();
        assert_eq!(tool.input_schema["type"], "object", "{name}");
        assert_eq!(
            sorted_strings(&tool.input_schema["required"]),
            expected,
            "{:?} {name}: {:#}",
            build.language,
            tool.input_schema
        );
        assert!(!tool.description.is_empty(), "{name} has a description");
        assert_eq!(tool.streaming, name == "countdown", "{name}");
        assert!(!tool.long_running, "{name}");
    }

    // Hints (`toolhost:plugin@0.2.0`): `add` gives four, the others none.
    let add = &plugin.tool("add").unwrap().hints;
    assert_eq!(add.title.as_deref(), Some("Add"), "{:?}", build.language);
    assert_eq!(add.read_only, Some(true), "{:?}", build.language);
    assert_eq!(add.destructive, None, "{:?}", build.language);
    assert_eq!(add.idempotent, Some(true), "{:?}", build.language);
    assert_eq!(add.open_world, Some(false), "{:?}", build.language);
    for tool in plugin.tools().filter(|t| t.name != "add") {
        assert!(tool.hints.is_empty(), "{:?} {}", build.language, tool.name);
    }

    // Descriptions: the tool's from its doc, each argument's from its own doc.
    let echo = plugin.tool("echo").unwrap();
    assert_eq!(
        echo.description,
        "Echoes its arguments back as a JSON object."
    );
    let schema = &echo.input_schema;
    assert_eq!(
        schema["properties"]["message"]["description"],
        "The message to echo."
    );
    // An optional object may carry its description inside `anyOf: [X, null]`
    // (the Rust SDK puts it there, where Gemini's conversion keeps it).
    let nested = &schema["properties"]["nested"];
    let described = nested["description"].as_str().or_else(|| {
        nested["anyOf"]
            .as_array()
            .and_then(|branches| branches.iter().find_map(|b| b["description"].as_str()))
    });
    assert!(
        described.is_some_and(|d| d.starts_with("Optional structured data, echoed as given.")),
        "{schema:#}"
    );
    let nested = resolve(schema, &schema["properties"]["nested"]);
    assert!(has_type(nested, "object"), "{schema:#}");
    assert_eq!(sorted_strings(&nested["required"]), ["label"], "{schema:#}");
    assert_eq!(nested["properties"]["label"]["description"], "A label.");
    assert_eq!(
        resolve(schema, &nested["properties"]["tags"])["items"]["type"],
        "string"
    );
    let inner = resolve(schema, &nested["properties"]["inner"]);
    assert_eq!(sorted_strings(&inner["required"]), ["depth"], "{schema:#}");

    let greet = &plugin.tool("greet").unwrap().input_schema;
    // The SDK may add "Defaults to `Hello`." (optional means nullable).
    let greeting = greet["properties"]["greeting"]["description"].as_str();
    assert!(
        greeting.is_some_and(|d| d.starts_with("The word of greeting.")),
        "{greet:#}"
    );
    // Optional means nullable: `["integer", "null"]` where the SDK says so.
    assert!(
        has_type(&greet["properties"]["times"], "integer"),
        "{greet:#}"
    );

    let order = &plugin.tool("order").unwrap().input_schema;
    let size = resolve(order, &order["properties"]["size"]);
    assert_eq!(
        sorted_strings(&size["enum"]),
        ["large", "medium", "small"],
        "{order:#}"
    );
}

async fn nested_objects(build: Build) {
    let out = build
        .result(
            "echo",
            json!({"message": "hi", "nested": {"label": "x", "inner": {"depth": 2}}}),
        )
        .await;
    assert_eq!(
        out,
        json!({"message": "hi", "nested": {"label": "x", "tags": [], "inner": {"depth": 2}}})
    );
    let out = build
        .result(
            "echo",
            json!({"message": "ü ✓", "nested": {"label": "y", "tags": ["a", "b"]}}),
        )
        .await;
    assert_eq!(
        out,
        json!({"message": "ü ✓", "nested": {"label": "y", "tags": ["a", "b"], "inner": null}})
    );
    let out = build.result("echo", json!({"message": "alone"})).await;
    assert_eq!(out, json!({"message": "alone", "nested": null}));
}

async fn defaults(build: Build) {
    let out = build.result("greet", json!({"name": "Ann"})).await;
    assert_eq!(out, json!({"text": "Hello, Ann!"}));
    let out = build
        .result("greet", json!({"name": "Bo", "greeting": "Hi", "times": 2}))
        .await;
    assert_eq!(out, json!({"text": "Hi, Bo! Hi, Bo!"}));
    // A rule the schema does not state: the tool's own invalid-arguments error.
    let err = build
        .call("greet", json!({"name": "Cy", "times": 9}))
        .await
        .unwrap_err();
    match err {
        CallError::InvalidArguments { problems, .. } => {
            assert_eq!(problems, ["`times` must be from 1 to 5"]);
        }
        other => panic!(
            "{:?}: expected InvalidArguments, got {other:?}",
            build.language
        ),
    }
}

async fn enums(build: Build) {
    let out = build
        .result("order", json!({"item": "tea", "size": "large"}))
        .await;
    assert_eq!(out, json!({"item": "tea", "size": "large", "ml": 500}));
    let err = build
        .call("order", json!({"item": "tea", "size": "huge"}))
        .await
        .unwrap_err();
    match err {
        CallError::InvalidArguments { problems, .. } => {
            assert!(
                problems.iter().any(|p| p.starts_with("/size")),
                "{problems:?}"
            );
        }
        other => panic!("expected InvalidArguments, got {other:?}"),
    }
}

async fn tool_errors(build: Build) {
    let err = build
        .call("fail", json!({"message": "it broke"}))
        .await
        .unwrap_err();
    match err {
        CallError::Failed { message, tool, .. } => {
            assert_eq!(message, "it broke");
            assert_eq!(tool, "fail");
        }
        other => panic!("{:?}: expected Failed, got {other:?}", build.language),
    }
    let err = build
        .call("fail", json!({"message": "wrong", "invalid": true}))
        .await
        .unwrap_err();
    match err {
        CallError::InvalidArguments { problems, .. } => assert_eq!(problems, ["wrong"]),
        other => panic!(
            "{:?}: expected InvalidArguments, got {other:?}",
            build.language
        ),
    }
}

async fn bugs(build: Build) {
    let err = build
        .call("crash", json!({"divisor": 0}))
        .await
        .unwrap_err();
    match (build.language.bug(), &err) {
        (Bug::Panicked(expected), CallError::Panicked { message, .. }) => {
            assert!(message.contains(expected), "{message}");
        }
        (Bug::Failed(expected), CallError::Failed { message, .. }) => {
            assert!(message.starts_with(expected), "{message}");
        }
        (Bug::Trapped(expected), CallError::Trapped { trap, .. }) => {
            assert!(trap.contains(expected), "{trap}");
        }
        (bug, _) => panic!("{:?}: expected {bug:?}, got {err:?}", build.language),
    }
    // The plugin goes on serving after a bug.
    let out = build.result("crash", json!({"divisor": 4})).await;
    assert_eq!(out, json!({"result": 0.25}));
}

async fn streams(build: Build) {
    let plugin = build.load().await;
    let mut stream = plugin
        .stream(ToolCall::new("countdown", json!({"start": 4})))
        .await
        .unwrap();
    let mut chunks = Vec::new();
    while let Some(part) = stream.next().await {
        match part.unwrap() {
            Part::Text(text) => chunks.push(text),
            other => panic!("{:?}: unexpected chunk {other:?}", build.language),
        }
    }
    assert_eq!(chunks, ["4\n", "3\n", "2\n", "1\n", "0\n"]);
    // Invoked, a stream is collected into one result.
    let out = build.result("countdown", json!({"start": 2})).await;
    assert_eq!(out, json!({"result": "2\n1\n0\n"}));
    let out = build.result("countdown", json!({"start": 0})).await;
    assert_eq!(out, json!({"result": "0\n"}));
}

async fn binary_parts(build: Build) {
    let out = build.call("pixel", json!({})).await.unwrap();
    assert_eq!(out.result, None);
    assert_eq!(
        out.parts,
        [
            Part::Text("a 1x1 red pixel".to_owned()),
            Part::Blob {
                kind: MediaKind::Image,
                mime_type: "image/png".to_owned(),
                name: None,
                data: PIXEL_PNG.to_vec(),
            }
        ]
    );
}

async fn invocation_state(build: Build) {
    let plugin = build.load().await;
    let invocation = format!("conformance-{:?}", build.language);
    let stored = plugin
        .invoke(
            ToolCall::new("remember", json!({"key": "city", "value": "Lyon"}))
                .with_invocation_id(&invocation),
        )
        .await
        .unwrap();
    assert_eq!(stored.result, Some(json!({"stored": "city"})));
    let read = plugin
        .invoke(ToolCall::new("remember", json!({"key": "city"})).with_invocation_id(&invocation))
        .await
        .unwrap();
    assert_eq!(read.result, Some(json!({"value": "Lyon"})));
    let other = plugin
        .invoke(ToolCall::new("remember", json!({"key": "city"})).with_invocation_id("elsewhere"))
        .await
        .unwrap();
    assert_eq!(other.result, Some(json!({"value": null})));
    crate::engine().end_invocation(&invocation);
}

async fn call_ids(build: Build) {
    let out = build
        .load()
        .await
        .invoke(
            ToolCall::new("whoami", json!({}))
                .with_call_id("call-42")
                .with_invocation_id("turn-7"),
        )
        .await
        .unwrap();
    assert_eq!(out.call_id, "call-42");
    assert_eq!(
        out.result,
        Some(json!({"call_id": "call-42", "invocation_id": "turn-7"}))
    );
}

/// The caller (`toolhost:plugin@0.3.0`): `whoami` reports it as the SDK
/// gives it, with only the claims the plugin is granted; without one, it
/// reports none (`call_ids` sees exactly the IDs).
async fn caller(build: Build) {
    let mut grants = toolhost::policy::Grants::default();
    grants.caller_claim("email");
    let mut options = toolhost::PluginOptions::default();
    options.grants(grants);
    build.check_exists();
    let plugin = crate::plugin_with(build.path, &options).await;
    let caller = Caller::new("https://id.example.com/realms/acme", "ana")
        .with_scopes(["tools:read", "mcp:tools"])
        .with_claim("email", "ana@example.com")
        .with_claim("groups", json!(["staff"]));
    let out = plugin
        .invoke(ToolCall::new("whoami", json!({})).with_caller(caller))
        .await
        .unwrap_or_else(|e| panic!("{:?} whoami: {e}", build.language));
    assert_eq!(
        out.result.unwrap()["caller"],
        json!({
            "issuer": "https://id.example.com/realms/acme",
            "subject": "ana",
            "scopes": ["tools:read", "mcp:tools"],
            "claims": {"email": "ana@example.com"},
        }),
        "{:?}",
        build.language
    );
}

async fn bare_results_are_wrapped(build: Build) {
    assert_eq!(
        build.result("add", json!({"a": 40, "b": 2})).await,
        json!({"result": 42})
    );
    // Coerced by the host before the guest runs: the same in every language.
    assert_eq!(
        build.result("add", json!({"a": "-5", "b": 2})).await,
        json!({"result": -3})
    );
}

/// One `#[tokio::test]` per check and language.
macro_rules! suite {
    ($($module:ident: $path:expr, $language:ident;)*) => {$(
        mod $module {
            const BUILD: super::Build = super::Build {
                path: $path,
                language: super::Language::$language,
            };
            suite!(@checks declarations, nested_objects, defaults, enums, tool_errors, bugs,
                streams, binary_parts, invocation_state, call_ids, caller, bare_results_are_wrapped,
                declared, reads, prompts, completions);
        }
    )*};
    (@checks $($check:ident),*) => {$(
        #[tokio::test]
        async fn $check() {
            super::$check(BUILD).await;
        }
    )*};
}

suite! {
    rust: toolhost_test_plugins::CONFORMANCE, Rust;
    python: toolhost_test_plugins::CONFORMANCE_PY, Python;
    js: toolhost_test_plugins::CONFORMANCE_JS, Js;
    c: toolhost_test_plugins::CONFORMANCE_C, C;
    go: toolhost_test_plugins::CONFORMANCE_GO, Go;
}
