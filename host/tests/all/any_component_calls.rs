//! Any component as a toolset (issue 34): `any-component`, built from a WIT
//! of its own with plain `wit-bindgen` and no toolhost SDK, loads as a
//! toolset of its exported functions, and they are called through the CLI
//! and the library, under the same checks and limits as any tool.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use toolhost::engine::Limits;
use toolhost::error::Exhausted;
use toolhost::tool::ToolCall;
use toolhost::{CallError, LoadError, Plugin, PluginOptions};
use toolhost_test_plugins::ANY_COMPONENT;

use crate::{engine, plugin, plugin_with};

fn toolhost(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--plugins")
        .arg(dir)
        .arg("--no-cache")
        .args(args)
        .output()
        .unwrap()
}

fn geometry_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(ANY_COMPONENT, dir.path().join("geometry.wasm")).unwrap();
    dir
}

fn stdout_json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every WIT type `shapes` does not use, through the CLI and back: bool, char,
/// `list<u8>` (base64), enum, flags (a name twice counts once), option of a
/// variant, a mixed tuple, f32, `option<option<u16>>`, s64/u64 at their
/// limits, s16, a list of strings.
#[test]
fn the_cli_takes_and_gives_back_every_wit_type() {
    let dir = geometry_dir();
    let sample = json!({
        "on": true, "letter": "λ", "data": "AAEC/w==", "color": "green",
        "access": ["read", "exec"], "shape": {"rect": [2.5, 4.0]}, "pair": [7, "seven"],
        "ratio": 0.5, "maybe": {"some": null}, "big": i64::MIN, "huge": u64::MAX,
        "small": -32768, "tags": ["a", "b"],
    });
    let echoed = toolhost(
        dir.path(),
        &["call", "kinds__echo", &json!({"s": sample}).to_string()],
    );
    assert_eq!(stdout_json(&echoed), sample);
    let mut twice = sample.clone();
    twice["access"] = json!(["read", "read", "exec"]);
    let echoed = toolhost(
        dir.path(),
        &["call", "kinds__echo", &json!({"s": twice}).to_string()],
    );
    assert_eq!(stdout_json(&echoed), sample);
    for (shape, named) in [
        (json!(null), "none"),
        (json!("dot"), "a dot"),
        (json!({"circle": 1.5}), "a circle of radius 1.5"),
    ] {
        let out = toolhost(
            dir.path(),
            &[
                "call",
                "kinds__name_shape",
                &json!({"shape": shape}).to_string(),
            ],
        );
        assert_eq!(stdout_json(&out), json!({"result": named}));
    }
    let mut bad = sample.clone();
    bad["letter"] = json!("ab");
    bad["color"] = json!("pink");
    let refused = toolhost(
        dir.path(),
        &["call", "kinds__echo", &json!({"s": bad}).to_string()],
    );
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    for path in ["/s/letter: ", "/s/color: "] {
        assert!(stderr.contains(path), "{path} in {stderr}");
    }
}

#[test]
fn the_cli_calls_a_components_functions() {
    let dir = geometry_dir();
    let list = String::from_utf8(toolhost(dir.path(), &["list"]).stdout).unwrap();
    for tool in [
        "greet",
        "shapes__translate",
        "shapes__divide",
        "shapes__spin",
        "kinds__echo",
        "kinds__name_shape",
    ] {
        assert!(list.contains(&format!("geometry  {tool} ")), "{list}");
    }

    let moved = toolhost(
        dir.path(),
        &[
            "call",
            "shapes__translate",
            r#"{"p": {"x": 1, "y": 2}, "dx": 3, "dy": -4}"#,
        ],
    );
    assert_eq!(stdout_json(&moved), json!({"x": 4, "y": -2}));
    let greeted = toolhost(dir.path(), &["call", "greet", r#"{"name": "Ada"}"#]);
    assert_eq!(stdout_json(&greeted), json!({"result": "hello, Ada"}));

    let failed = toolhost(
        dir.path(),
        &["call", "shapes__divide", r#"{"a": 7, "b": 0}"#],
    );
    assert!(!failed.status.success());
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(
        stderr.contains(
            r#"tool `shapes__divide` failed: {"dividend":7,"reason":"division by zero"}"#
        ),
        "{stderr}"
    );

    let refused = toolhost(
        dir.path(),
        &[
            "call",
            "shapes__translate",
            r#"{"p": {"x": 1, "y": 2, "z": 3}, "dx": 300, "dy": 0}"#,
        ],
    );
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("invalid arguments"), "{stderr}");
    assert!(
        stderr.contains("/dx: 300 is greater than the maximum of 127"),
        "{stderr}"
    );
    assert!(stderr.contains("/p/z: unexpected property"), "{stderr}");
}

#[tokio::test]
async fn results_errors_and_refusals_are_typed() {
    let geometry = plugin(ANY_COMPONENT).await;
    let translate = geometry.tool("shapes__translate").unwrap();
    assert_eq!(
        translate.output_schema.as_ref().unwrap()["required"],
        json!(["x", "y"])
    );
    let out = geometry
        .invoke(ToolCall::new(
            "shapes__translate",
            json!({"p": {"x": 2147483647, "y": 0}, "dx": 1, "dy": -1}),
        ))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"x": 2147483647, "y": -1})));
    assert!(out.usage.fuel > 0);

    let quotient = geometry
        .invoke(ToolCall::new("shapes__divide", json!({"a": 7, "b": 2})))
        .await
        .unwrap();
    assert_eq!(quotient.result, Some(json!({"result": 3})));

    let err = geometry
        .invoke(ToolCall::new("shapes__divide", json!({"a": 7, "b": 0})))
        .await
        .unwrap_err();
    match &err {
        CallError::Failed { message, .. } => assert_eq!(
            serde_json::from_str::<Value>(message).unwrap(),
            json!({"dividend": 7, "reason": "division by zero"})
        ),
        other => panic!("expected Failed, got {other:?}"),
    }

    // Out of range and an extra key: refused with their paths, no guest run.
    let err = geometry
        .invoke(ToolCall::new(
            "shapes__divide",
            json!({"a": -1, "b": 4294967296u64, "c": 0}),
        ))
        .await
        .unwrap_err();
    let CallError::InvalidArguments { problems, .. } = &err else {
        panic!("expected InvalidArguments, got {err:?}");
    };
    let problems = problems.join("\n");
    for path in ["/a", "/b", "/c: unexpected property"] {
        assert!(problems.contains(path), "{problems}");
    }
}

#[tokio::test]
async fn a_components_calls_run_under_the_plugins_limits() {
    let mut limits = Limits::default();
    limits.fuel(2_000_000);
    let mut options = PluginOptions::default();
    options.limits(limits);
    let geometry = plugin_with(ANY_COMPONENT, &options).await;
    let counted = geometry
        .invoke(ToolCall::new("shapes__spin", json!({"rounds": 1000})))
        .await
        .unwrap();
    assert_eq!(counted.result, Some(json!({"result": 1000})));
    let err = geometry
        .invoke(ToolCall::new(
            "shapes__spin",
            json!({"rounds": "18446744073709551615"}),
        ))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            CallError::Exhausted {
                budget: Exhausted::Fuel { .. },
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn functions_that_cannot_be_tools_are_left_out_and_the_rest_load() {
    let bytes = toolhost_test_plugins::wit::component(
        &[],
        "package example:mixed@0.1.0;
         interface api { resource counter { get: func() -> u32; } start: func() -> counter; }
         world mixed { export api; export ping: func(n: u32) -> u32; }",
        None,
    );
    let plugin = Plugin::from_bytes(
        engine(),
        "mixed.wasm".into(),
        bytes,
        &PluginOptions::default(),
    )
    .await
    .unwrap();
    let names: Vec<&str> = plugin.tools().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["ping"]);
}

#[tokio::test]
async fn imports_the_host_does_not_provide_are_named() {
    let bytes = toolhost_test_plugins::wit::component(
        &[],
        "package example:needy@0.1.0;
         interface clock { now: func() -> u64; }
         world needy { import clock; export ping: func() -> u64; }",
        None,
    );
    let err = Plugin::from_bytes(
        engine(),
        "needy.wasm".into(),
        bytes,
        &PluginOptions::default(),
    )
    .await
    .unwrap_err();
    match &err {
        LoadError::Link { reason, .. } => assert!(
            reason.contains("does not provide: example:needy/clock@0.1.0"),
            "{reason}"
        ),
        other => panic!("expected Link, got {other:?}"),
    }
}
