//! Any component as a toolset (issue 34): `toolhost inspect` on a component
//! made from a WIT of its own, with no toolhost SDK, shows the tools its
//! exported functions would be, their schemas and dialects, and the refusals.

use std::process::{Command, Output};

use serde_json::{Value, json};
use wit_parser::{LiftLowerAbi, ManglingAndAbi, Resolve};

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
    let mut resolve = Resolve::default();
    let package = resolve.push_str("calc.wit", WIT).unwrap();
    let world = resolve.select_world(&[package], Some("calc")).unwrap();
    let mut module =
        wit_component::dummy_module(&resolve, world, ManglingAndAbi::Legacy(LiftLowerAbi::Sync));
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )
    .unwrap();
    wit_component::ComponentEncoder::default()
        .module(&module)
        .unwrap()
        .validate(true)
        .encode()
        .unwrap()
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
