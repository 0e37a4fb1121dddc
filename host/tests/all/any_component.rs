//! Any component as a toolset (issue 34): `toolhost inspect` on a component
//! made from a WIT of its own, with no toolhost SDK, shows the tools its
//! exported functions would be, their schemas and dialects, and the refusals;
//! descriptions come from the component's WIT docs, and an operator's sidecar
//! `NAME.tools.toml` describes, hides and marks its tools (and reloads them).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use toolhost::{Context, PluginDir, PluginOptions, Toolset};
use toolhost_test_plugins::wit::with_docs;
use toolhost_test_plugins::{ANY_COMPONENT, ECHO};

use crate::engine;

const WIT: &str = r#"
package example:calc@0.1.0;

interface math {
  record point { x: s32, y: s32 }
  variant shape { circle(f64), dot }

  add-numbers: func(a: u8, b: s64) -> u64;
  area: func(shape: shape, at: option<point>) -> result<f64, string>;
  resource counter { get: func() -> u32; }
  start: func() -> counter;
}

world calc {
  export math;
  export greet: func(name: string) -> string;
}
"#;

/// The component, as `wasm-tools component embed --dummy` and `component new` make it.
fn component() -> Vec<u8> {
    toolhost_test_plugins::wit::component(&[], WIT, Some("calc"))
}

fn inspect(args: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calc.wasm");
    std::fs::write(&file, component()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--no-cache")
        .arg("inspect")
        .arg(&file)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn inspect_shows_a_components_functions_as_tools() {
    let text = String::from_utf8(inspect(&[]).stdout).unwrap();
    assert!(text.contains("not a toolhost plugin"), "{text}");
    assert!(text.contains("exported functions as tools"), "{text}");
    assert!(
        text.contains("  math__add_numbers  example:calc/math@0.1.0#add-numbers\n"),
        "{text}"
    );
    assert!(text.contains("  greet  greet\n"), "{text}");
    assert!(
        text.contains("dialects: json-schema ok, openai-strict ok, gemini ok"),
        "{text}"
    );
    assert!(
        text.contains(
            "refused: `example:calc/math@0.1.0#start`: its result is a resource handle, \
             which a tool result cannot be"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "refused: `example:calc/math@0.1.0#[method]counter.get` belongs to a resource"
        ),
        "{text}"
    );

    let json: Value = serde_json::from_slice(&inspect(&["--json"]).stdout).unwrap();
    let exported = &json["exported"];
    let tools = exported["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    for name in ["math__add_numbers", "math__area", "greet"] {
        assert!(names.contains(&name), "{names:?}");
    }
    let add = tools
        .iter()
        .find(|t| t["name"] == "math__add_numbers")
        .unwrap();
    assert_eq!(
        add["input_schema"]["properties"]["a"],
        json!({"type": "integer", "minimum": 0, "maximum": 255})
    );
    let area = tools.iter().find(|t| t["name"] == "math__area").unwrap();
    assert_eq!(
        area["output_schema"]["properties"]["result"],
        json!({"type": "number"})
    );
    assert_eq!(area["error_schema"], json!({"type": "string"}));
    for tool in tools {
        for dialect in ["json-schema", "openai-strict", "gemini"] {
            assert_eq!(tool["dialects"][dialect]["accepted"], true, "{tool}");
        }
    }
    assert_eq!(
        exported["refused"].as_array().unwrap().len(),
        2,
        "{exported}"
    );
}

/// The `any-component` test plugin with the WIT docs of its own WIT as a
/// `package-docs` section (the Rust toolchain drops them: wit-bindgen and
/// wasm-component-ld do not keep WIT docs yet).
fn documented_geometry() -> Vec<u8> {
    let wit = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/plugins/any-component/wit/geometry.wit"
    ))
    .unwrap();
    with_docs(&std::fs::read(ANY_COMPONENT).unwrap(), &wit)
}

fn toolhost(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--plugins")
        .arg(dir)
        .arg("--no-cache")
        .args(args)
        .output()
        .unwrap()
}

/// `toolhost list --json`: the tools, by name.
fn listed(dir: &Path) -> BTreeMap<String, Value> {
    let out = toolhost(dir, &["list", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tools: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    tools
        .into_iter()
        .map(|t| (t["call_name"].as_str().unwrap().to_owned(), t))
        .collect()
}

#[test]
fn descriptions_come_from_the_wit_docs_else_say_what_the_function_is() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(ANY_COMPONENT, dir.path().join("geometry.wasm")).unwrap();
    let plain = listed(dir.path());
    assert_eq!(
        plain["shapes__spin"]["description"],
        "`example:geometry/shapes@0.1.0#spin`, a function the component exports."
    );
    assert_eq!(
        plain["greet"]["description"],
        "`greet`, a function the component exports."
    );

    std::fs::write(dir.path().join("geometry.wasm"), documented_geometry()).unwrap();
    let tools = listed(dir.path());
    assert_eq!(
        tools["shapes__translate"]["description"],
        "Moves a point by a small step."
    );
    assert_eq!(
        tools["shapes__spin"]["description"],
        "Counts to `rounds` the slow way (burns fuel)."
    );
    assert_eq!(tools["greet"]["description"], "Greets someone by name.");

    let out = toolhost(
        dir.path(),
        &[
            "inspect",
            dir.path().join("geometry.wasm").to_str().unwrap(),
            "--json",
        ],
    );
    let inspected: Value = serde_json::from_slice(&out.stdout).unwrap();
    let greet = inspected["exported"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "greet")
        .unwrap();
    assert_eq!(greet["description"], "Greets someone by name.");
    let translate = inspected["exported"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "shapes__translate")
        .unwrap();
    let point = &translate["input_schema"]["properties"]["p"];
    assert_eq!(point["description"], "A point of the plane.", "{point}");
    assert_eq!(
        point["properties"]["x"]["description"],
        "Distance to the right of the origin."
    );
    let checked = toolhost(dir.path(), &["list", "--check"]);
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stdout)
    );
}

/// The sidecar example of docs/any-component.md: its `toml` block that
/// starts `# geometry.tools.toml`, parsed and applied here.
fn documented_sidecar() -> String {
    let page = include_str!("../../../docs/any-component.md");
    let start = page
        .find("```toml\n# geometry.tools.toml")
        .expect("the page shows the sidecar")
        + "```toml\n".len();
    let len = page[start..].find("```").expect("the block ends");
    page[start..start + len].to_owned()
}

#[test]
fn the_sidecar_describes_hides_and_marks_tools() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("geometry.wasm"), documented_geometry()).unwrap();
    std::fs::write(dir.path().join("geometry.tools.toml"), documented_sidecar()).unwrap();
    let tools = listed(dir.path());
    assert!(!tools.contains_key("greet"), "hidden: {tools:?}");
    let spin = &tools["shapes__spin"];
    assert_eq!(spin["long_running"], true, "{spin}");
    assert!(
        spin["description"]
            .as_str()
            .unwrap()
            .starts_with("Burn CPU for a while: counts to `rounds`."),
        "{spin}"
    );
    let translate = &tools["shapes__translate"];
    assert_eq!(
        translate["description"], "Moves a point by a small step.",
        "the WIT doc stays where the sidecar gives none"
    );
    // Over MCP: the hints are the tools' annotations.
    let listed = mcp_tools_list(dir.path());
    let tools = listed["result"]["tools"].as_array().unwrap();
    assert!(!tools.iter().any(|t| t["name"] == "greet"), "{listed}");
    let translate = tools
        .iter()
        .find(|t| t["name"] == "shapes__translate")
        .unwrap();
    assert_eq!(translate["description"], "Moves a point by a small step.");
    assert_eq!(
        translate["annotations"]["readOnlyHint"], true,
        "{translate}"
    );
    assert_eq!(
        translate["annotations"]["idempotentHint"], true,
        "{translate}"
    );
    assert_eq!(
        translate["annotations"]["openWorldHint"], false,
        "{translate}"
    );
}

#[test]
fn a_sidecar_mistake_fails_the_plugin_with_the_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(ANY_COMPONENT, dir.path().join("geometry.wasm")).unwrap();
    let sidecar = dir.path().join("geometry.tools.toml");
    let cases = [
        (
            "[shapes__spin]\nhid = true\n",
            "`shapes__spin.hid`: unknown key; did you mean `hide`?",
        ),
        (
            "[shapes__spinn]\nhide = true\n",
            "`shapes__spinn`: the component has no tool of that name; did you mean `shapes__spin`?",
        ),
        ("[shapes__spin\n", "line 1"),
    ];
    for (text, wanted) in cases {
        std::fs::write(&sidecar, text).unwrap();
        let out = toolhost(dir.path(), &["status"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let all = format!("{stdout}{stderr}");
        assert!(all.contains("invalid tools sidecar"), "{all}");
        assert!(all.contains(&sidecar.display().to_string()), "{all}");
        assert!(all.contains(wanted), "{text}: {all}");
    }
}

/// With a cache directory (compiled code cached, load failures remembered),
/// a sidecar edit is still seen: it is read on every load, and its mistakes
/// are not remembered as the component's.
#[test]
fn a_sidecar_edit_is_seen_with_a_warm_cache() {
    let (dir, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::copy(ANY_COMPONENT, dir.path().join("geometry.wasm")).unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .arg("--plugins")
            .arg(dir.path())
            .arg("--cache-dir")
            .arg(cache.path())
            .args(args)
            .output()
            .unwrap()
    };
    let greet = |out: Output| {
        let tools: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap_or_default();
        tools
            .into_iter()
            .find(|t| t["call_name"] == "greet")
            .map(|t| t["description"].as_str().unwrap().to_owned())
    };
    let fallback = "`greet`, a function the component exports.";
    assert_eq!(greet(run(&["list", "--json"])).as_deref(), Some(fallback));
    let sidecar = dir.path().join("geometry.tools.toml");
    std::fs::write(&sidecar, "[greet]\ndescription = \"Say hello.\"\n").unwrap();
    assert_eq!(
        greet(run(&["list", "--json"])).as_deref(),
        Some("Say hello.")
    );
    std::fs::write(&sidecar, "[greet]\ndescriptio = \"x\"\n").unwrap();
    let out = run(&["status"]);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(all.contains("did you mean `description`?"), "{all}");
    std::fs::remove_file(&sidecar).unwrap();
    assert_eq!(greet(run(&["list", "--json"])).as_deref(), Some(fallback));
}

/// A contract plugin's tools are its own: a sidecar beside it changes nothing.
#[test]
fn a_sidecar_beside_a_contract_plugin_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(ECHO, dir.path().join("echo.wasm")).unwrap();
    std::fs::write(dir.path().join("echo.tools.toml"), "[echo]\nhide = true\n").unwrap();
    let out = toolhost(dir.path(), &["list", "--json"]);
    assert!(out.status.success());
    let tools: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(tools.iter().any(|t| t["call_name"] == "echo"));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("applies to component toolsets only"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Hot reload: a sidecar added, edited (badly, then well) and removed
/// reloads its plugin; a bad edit keeps the version serving.
#[tokio::test]
async fn a_sidecar_edit_reloads_its_plugin() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("geometry.wasm"), documented_geometry()).unwrap();
    let set = PluginDir::open(engine(), dir.path(), PluginOptions::default())
        .await
        .unwrap();
    let description = |set: &PluginDir, tool: &str| {
        set.tools(&Context::new())
            .iter()
            .find(|t| t.spec().name == tool)
            .map(|t| t.spec().description.clone())
    };
    assert_eq!(
        description(&set, "greet").as_deref(),
        Some("Greets someone by name.")
    );
    let sidecar = dir.path().join("geometry.tools.toml");

    // Added.
    std::fs::write(&sidecar, "[greet]\ndescription = \"Say hello.\"\n").unwrap();
    let change = set.reload_now().await.unwrap();
    assert_eq!(change.changed, ["greet"], "{change:?}");
    assert_eq!(description(&set, "greet").as_deref(), Some("Say hello."));

    // Broken: the version serving stays, the status says why.
    std::fs::write(&sidecar, "[greet]\nhide = 1\n").unwrap();
    let change = set.reload_now().await.unwrap();
    assert_eq!(change.failed.len(), 1, "{change:?}");
    assert_eq!(description(&set, "greet").as_deref(), Some("Say hello."));
    let status = format!("{:?}", set.status());
    assert!(
        status.contains("`greet.hide`: must be `true` or `false`"),
        "{status}"
    );

    // Hidden.
    std::fs::write(&sidecar, "[greet]\nhide = true\n").unwrap();
    let change = set.reload_now().await.unwrap();
    assert_eq!(change.removed, ["greet"], "{change:?}");

    // Removed, seen by the watcher: the WIT doc again.
    set.watch().unwrap();
    std::fs::remove_file(&sidecar).unwrap();
    let start = std::time::Instant::now();
    while description(&set, "greet").as_deref() != Some("Greets someone by name.") {
        assert!(start.elapsed() < Duration::from_secs(20), "no reload");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// `tools/list` over stdio from `toolhost serve` on `dir`.
fn mcp_tools_list(dir: &Path) -> Value {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--plugins")
        .arg(dir)
        .args(["--no-cache", "serve", "--no-watch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |message: Value| {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    };
    let mut response = |id: u64| loop {
        let line = lines.next().expect("the server answers").unwrap();
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == id {
            return message;
        }
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "any-component-test", "version": "0"}}}),
    );
    assert!(response(1).get("result").is_some());
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let listed = response(2);
    drop(stdin);
    child.wait().unwrap();
    listed
}
