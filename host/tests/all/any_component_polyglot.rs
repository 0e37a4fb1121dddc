//! Any component as a toolset (issue 34), from toolchains other than Rust's:
//! `any-component-js` (componentize-qjs, QuickJS) and `any-component-py`
//! (componentize-py, CPython), each built by `cargo xtask guests` from a WIT
//! of its own with no toolhost SDK. Every tool is called through the
//! `toolhost` CLI; an `err` result is a failed call with its content; bad
//! arguments are refused with their JSON paths before the guest runs; both
//! load with deny-by-default grants, whatever WASI they import.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use std::sync::OnceLock;

use toolhost::engine::Compilation;
use toolhost::tool::ToolCall;
use toolhost::{CallError, Engine, EngineConfig, Plugin, PluginOptions};
use toolhost_test_plugins::{ANY_COMPONENT_JS, ANY_COMPONENT_PY};

/// A plugins directory holding the component at `wasm` as `NAME.wasm`, and a
/// compile cache of its own (so the calls after the first skip compiling).
struct Plugins {
    dir: tempfile::TempDir,
    cache: tempfile::TempDir,
}

impl Plugins {
    fn with(wasm: &str, name: &str) -> Self {
        assert!(
            Path::new(wasm).is_file(),
            "{wasm} is missing: `cargo xtask guests` builds it"
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(wasm, dir.path().join(format!("{name}.wasm"))).unwrap();
        Self {
            dir,
            cache: tempfile::tempdir().unwrap(),
        }
    }

    fn toolhost(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .arg("--plugins")
            .arg(self.dir.path())
            .arg("--cache-dir")
            .arg(self.cache.path())
            .args(args)
            .output()
            .unwrap()
    }

    /// The (plugin, tool) pairs of `toolhost list`.
    fn list(&self) -> Vec<(String, String)> {
        let out = self.toolhost(&["list"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .skip(1)
            .filter_map(|line| {
                let mut words = line.split_whitespace();
                Some((words.next()?.to_owned(), words.next()?.to_owned()))
            })
            .collect()
    }

    /// A call that succeeds: its JSON result.
    fn ok(&self, tool: &str, args: Value) -> Value {
        let out = self.toolhost(&["call", tool, &args.to_string()]);
        assert!(
            out.status.success(),
            "{tool} {args}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// A call that fails: its stderr.
    fn fails(&self, tool: &str, args: Value) -> String {
        let out = self.toolhost(&["call", tool, &args.to_string()]);
        assert!(!out.status.success(), "{tool} {args} succeeded");
        assert!(out.stdout.is_empty(), "{tool} {args}");
        String::from_utf8(out.stderr).unwrap()
    }
}

/// Asserts that `stderr` is a refusal of `tool`'s arguments naming each of
/// the JSON paths `paths` (`/limit`) and each of the unexpected keys `extra`
/// (`given/precision` is the key `precision` of the object at `/given`).
fn assert_refused(stderr: &str, tool: &str, paths: &[&str], extra: &[&str]) {
    assert!(
        stderr.contains(&format!("invalid arguments for `{tool}`")),
        "{stderr}"
    );
    for path in paths {
        assert!(
            stderr.contains(&format!("{path}: ")),
            "{path} not in {stderr}"
        );
    }
    // By its path, or in jsonschema's own words.
    for key in extra {
        let last = key.rsplit('/').next().unwrap_or(key);
        assert!(
            stderr.contains(&format!("/{key}: "))
                || stderr.contains(&format!("'{last}' was unexpected")),
            "{key} not in {stderr}"
        );
    }
}

#[test]
fn the_cli_calls_every_function_of_a_componentize_qjs_component() {
    let plugins = Plugins::with(ANY_COMPONENT_JS, "inventory");
    let list = plugins.list();
    for tool in ["about", "stock__items", "stock__adjust", "stock__value"] {
        assert!(
            list.contains(&("inventory".into(), tool.into())),
            "{list:?}"
        );
    }
    // Not componentize-qjs's build-time entry point, `init`.
    assert!(!list.iter().any(|(_, tool)| tool == "init"), "{list:?}");

    assert_eq!(
        plugins.ok("about", json!({})),
        json!({"result": "componentize-qjs (QuickJS)"})
    );
    // An enum in an option, a u8; a list of records with flags and an option back.
    assert_eq!(
        plugins.ok("stock__items", json!({"storage": "fridge", "limit": 5})),
        json!({"result": [
            {"sku": "B-2", "name": "milk", "count": 3, "storage": "fridge",
             "hazards": [], "price-cents": 99},
            {"sku": "C-3", "name": "eggs", "count": 30, "storage": "fridge",
             "hazards": ["fragile"], "price-cents": null},
        ]})
    );
    let first = plugins.ok("stock__items", json!({"storage": null, "limit": 1}));
    assert_eq!(first["result"][0]["sku"], "A-1");
    assert_eq!(first["result"][0]["hazards"], json!(["heavy"]));
    assert_eq!(first["result"].as_array().unwrap().len(), 1);
    // Variants: a case with a payload, a case without.
    assert_eq!(
        plugins.ok("stock__adjust", json!({"sku": "A-1", "change": {"add": 3}})),
        json!({"result": 15})
    );
    assert_eq!(
        plugins.ok("stock__adjust", json!({"sku": "D-4", "change": "clear"})),
        json!({"result": 0})
    );
    // Tuples in a list, a u64 back.
    assert_eq!(
        plugins.ok("stock__value", json!({"lines": [[189, 12], [99, 3]]})),
        json!({"result": 2565})
    );

    // `err` results: the variant error, as JSON, is the failure.
    let stderr = plugins.fails(
        "stock__adjust",
        json!({"sku": "B-2", "change": {"remove": 5}}),
    );
    assert!(
        stderr.contains(r#"tool `stock__adjust` failed: {"not-enough":3}"#),
        "{stderr}"
    );
    let stderr = plugins.fails("stock__adjust", json!({"sku": "Z-9", "change": "clear"}));
    assert!(
        stderr.contains(r#"tool `stock__adjust` failed: {"unknown-sku":"Z-9"}"#),
        "{stderr}"
    );

    // Refused before the guest runs, every problem with its path.
    let stderr = plugins.fails(
        "stock__items",
        json!({"storage": "attic", "limit": 256, "colour": "red"}),
    );
    assert_refused(
        &stderr,
        "stock__items",
        &["/limit", "/storage"],
        &["colour"],
    );
    assert!(stderr.contains("256"), "{stderr}");
    let stderr = plugins.fails(
        "stock__adjust",
        json!({"sku": "A-1", "change": {"double": 2}}),
    );
    assert_refused(&stderr, "stock__adjust", &["/change"], &[]);
    let stderr = plugins.fails(
        "stock__adjust",
        json!({"sku": "A-1", "change": {"add": 65536}}),
    );
    assert_refused(&stderr, "stock__adjust", &["/change"], &[]);
    let stderr = plugins.fails("stock__value", json!({"lines": [[-1, 2, 3]]}));
    assert_refused(&stderr, "stock__value", &["/lines/0"], &[]);
    // Each position of a tuple has its own type: the u16 one is checked too.
    let stderr = plugins.fails("stock__value", json!({"lines": [[1, 70000]]}));
    assert_refused(&stderr, "stock__value", &["/lines/0/1"], &[]);
    assert!(stderr.contains("0 to 65535"), "{stderr}");
}

#[test]
fn the_cli_calls_every_function_of_a_componentize_py_component() {
    let plugins = Plugins::with(ANY_COMPONENT_PY, "units");
    let list = plugins.list();
    for tool in [
        "scale",
        "convert__length",
        "convert__to_kelvin",
        "convert__total",
        "convert__show",
    ] {
        assert!(list.contains(&("units".into(), tool.into())), "{list:?}");
    }
    // Not componentize-py's build-time entry point, `exports#init`.
    assert!(
        !list.iter().any(|(_, tool)| tool == "exports__init"),
        "{list:?}"
    );

    // A list of s32 and an option<s16> in, a list of s64 out.
    assert_eq!(
        plugins.ok("scale", json!({"values": [1, -2, 3], "factor": null})),
        json!({"result": [2, -4, 6]})
    );
    assert_eq!(
        plugins.ok("scale", json!({"values": [1, -2, 3], "factor": -3})),
        json!({"result": [-3, 6, -9]})
    );
    // A record with an enum in and out.
    assert_eq!(
        plugins.ok(
            "convert__length",
            json!({"given": {"value": 1.0, "unit": "mile"}, "to": "kilometre"})
        ),
        json!({"value": 1.609344, "unit": "kilometre"})
    );
    // A variant in, a result's `ok` out.
    assert_eq!(
        plugins.ok(
            "convert__to_kelvin",
            json!({"temperature": {"kelvin": 1.5}})
        ),
        json!({"result": 1.5})
    );
    // Four integer widths at their limits.
    assert_eq!(
        plugins.ok(
            "convert__total",
            json!({"a": -128, "b": 32767, "c": 5, "d": -10})
        ),
        json!({"result": 32634})
    );
    // Flags.
    assert_eq!(
        plugins.ok(
            "convert__show",
            json!({"n": 1234567, "style": ["grouped", "signed"]})
        ),
        json!({"result": "+1,234,567"})
    );
    assert_eq!(
        plugins.ok("convert__show", json!({"n": -5, "style": []})),
        json!({"result": "-5"})
    );

    // `err` results: a record, a string.
    let stderr = plugins.fails(
        "convert__to_kelvin",
        json!({"temperature": {"fahrenheit": -500.0}}),
    );
    assert!(
        stderr.contains(
            r#"tool `convert__to_kelvin` failed: {"code":1,"message":"-22.41 K is below absolute zero"}"#
        ),
        "{stderr}"
    );
    let stderr = plugins.fails(
        "convert__total",
        json!({"a": 1, "b": 1, "c": 2147483647, "d": 0}),
    );
    assert!(
        stderr.contains(r#"tool `convert__total` failed: "2147483649 does not fit an s32""#),
        "{stderr}"
    );

    // Refused before the guest runs, every problem with its path.
    let stderr = plugins.fails(
        "convert__total",
        json!({"a": 128, "b": -32769, "c": 0, "d": 9223372036854775808u64, "e": 0}),
    );
    assert_refused(&stderr, "convert__total", &["/a", "/b", "/d"], &["e"]);
    for bound in ["127", "-32768", "9223372036854775807"] {
        assert!(stderr.contains(bound), "{bound} not in {stderr}");
    }
    let stderr = plugins.fails(
        "convert__to_kelvin",
        json!({"temperature": {"rankine": 1.0}}),
    );
    assert_refused(&stderr, "convert__to_kelvin", &["/temperature"], &[]);
    // Flags are a set: a name given twice counts once; an unknown one is refused.
    let stderr = plugins.fails(
        "convert__show",
        json!({"n": 1, "style": ["grouped", "grouped", "bold"]}),
    );
    assert_refused(&stderr, "convert__show", &["/style/2"], &[]);
    let stderr = plugins.fails(
        "convert__length",
        json!({"given": {"value": 1.0, "unit": "metre", "precision": 2}, "to": "inch"}),
    );
    assert_refused(&stderr, "convert__length", &[], &["given/precision"]);
}

/// An engine of baseline code only: these tests are about loading and
/// linking, and Winch compiles CPython or QuickJS in a fraction of the time
/// Cranelift takes (the test binary's shared engine would compile optimized
/// code too, in the background).
fn baseline() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let mut config = EngineConfig::default();
        config.cache_dir(None).compilation(Compilation::Baseline);
        Engine::new(&config).expect("the engine starts")
    })
}

/// Loads `path` with no grants at all.
async fn deny_by_default(path: &str) -> Plugin {
    assert!(
        Path::new(path).is_file(),
        "{path} is missing: `cargo xtask guests` builds it"
    );
    Plugin::load(baseline(), path, &PluginOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{path} loads without grants: {e}"))
}

#[tokio::test]
async fn both_load_and_run_with_deny_by_default_grants() {
    // componentize-py links the whole WASI p2 surface, sockets included;
    // componentize-qjs files and the CLI's. None of it is granted, and the
    // components load and run all the same.
    let units = deny_by_default(ANY_COMPONENT_PY).await;
    let ungranted = units.ungranted_imports();
    for import in ["wasi:sockets/tcp@", "wasi:sockets/udp@", "wasi:filesystem/"] {
        assert!(
            ungranted.iter().any(|i| i.starts_with(import)),
            "{import} not in {ungranted:?}"
        );
    }
    let out = units
        .invoke(ToolCall::new(
            "convert__to_kelvin",
            json!({"temperature": {"celsius": 25.0}}),
        ))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!({"result": 298.15})));
    assert!(out.usage.fuel > 0);

    let inventory = deny_by_default(ANY_COMPONENT_JS).await;
    assert!(
        inventory
            .ungranted_imports()
            .iter()
            .any(|i| i.starts_with("wasi:filesystem/")),
        "{:?}",
        inventory.imports()
    );
    let err = inventory
        .invoke(ToolCall::new(
            "stock__adjust",
            json!({"sku": "B-2", "change": {"remove": 4}}),
        ))
        .await
        .unwrap_err();
    match &err {
        CallError::Failed { message, .. } => assert_eq!(
            serde_json::from_str::<Value>(message).unwrap(),
            json!({"not-enough": 3})
        ),
        other => panic!("expected Failed, got {other:?}"),
    }
    // Typed results: the output schema of a list of records is exact.
    let items = inventory.tool("stock__items").unwrap();
    let item = &items.output_schema.as_ref().unwrap()["properties"]["result"]["items"];
    assert_eq!(
        item["properties"]["hazards"],
        json!({"type": "array", "items": {"type": "string", "enum": ["flammable", "fragile", "heavy"]},
               "maxItems": 3})
    );
    assert_eq!(item["additionalProperties"], false);
}
