//! Real components, made from WIT text with no toolhost SDK: a dummy core
//! module (as `wasm-tools component embed --dummy` makes), encoded as a
//! component. Their functions are never called here: their types are enough.

use serde_json::json;
use wasmtime::component::Component;
use wasmtime::component::types::Type;

use super::{ExportedTool, Refusal, Signature, exported_tools, exports};
use crate::schema::Schema;
use crate::schema::dialect;

mod values;

/// Every WIT type a tool's argument or result may have.
const ALL_TYPES: &str = r#"
package example:all@0.1.0;

interface types {
  record point { x: s32, y: s32 }
  enum color { red, green, blue }
  flags perms { read, write, exec }
  variant shape { circle(f64), rect(tuple<f32, f32>), dot }

  integers: func(a: u8, b: u16, c: u32, d: u64, e: s8, f: s16, g: s32, h: s64) -> u64;
  floats: func(a: f32, b: f64) -> f64;
  text: func(c: char, s: string, on: bool) -> string;
  bytes: func(data: list<u8>) -> list<u8>;
  points: func(items: list<point>) -> point;
  tuples: func(same: tuple<u32, u32>, mixed: tuple<u32, string>) -> tuple<string, bool>;
  options: func(a: option<string>, b: option<option<u32>>, c: option<color>, d: option<shape>)
    -> option<point>;
  choose: func(hue: color, access: perms, form: shape) -> shape;
  results: func(r: result<u32, string>, unit: result) -> result<point, string>;
  fallible: func() -> result<_, color>;
  nothing: func();
}

world all {
  export types;
  export say-hello: func() -> string;
}
"#;

/// Functions no tool can be, and a name two interfaces map to.
const REFUSED: &str = r#"
package example:res@0.1.0;

interface files {
  resource file {
    constructor();
    size: func() -> u64;
  }
  open: func(path: string) -> file;
  close-all: func(files: list<file>);
  peek: func(files: list<tuple<string, borrow<file>>>) -> u32;
  add: func(a: u32) -> u32;
}

world refused {
  export files;
  export other:pkg/files@0.1.0;
}
"#;

/// The other package `REFUSED` exports an interface of.
const OTHER: &str = r#"
package other:pkg@0.1.0;

interface files {
  add: func(a: u32) -> u32;
}
"#;

/// A component of the world `world` in `wit` (after the packages in `deps`).
fn component(deps: &[&str], wit: &str, world: &str) -> Component {
    let engine = wasmtime::Engine::default();
    let bytes = toolhost_test_plugins::wit::component(deps, wit, Some(world));
    Component::new(&engine, bytes).unwrap()
}

fn all_types() -> Component {
    component(&[], ALL_TYPES, "all")
}

fn tool<'a>(tools: &'a [ExportedTool], name: &str) -> &'a ExportedTool {
    tools
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

/// A function's signature, by its export name's function part.
fn signature(component: &Component, function: &str) -> Signature {
    let export = exports(component)
        .into_iter()
        .find(|e| e.name == function)
        .unwrap();
    Signature::of(&export.qualified(), &export.func).unwrap()
}

fn param(signature: &Signature, name: &str) -> Type {
    signature
        .params
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, ty)| ty.clone())
        .unwrap()
}

#[test]
fn tools_are_named_from_interface_and_function() {
    let exported = exported_tools(&all_types(), &Default::default());
    assert!(exported.refused.is_empty(), "{:?}", exported.refused);
    let names: Vec<(&str, &str)> = exported
        .tools
        .iter()
        .map(|t| (t.name.as_str(), t.export.as_str()))
        .collect();
    assert!(
        names.contains(&("types__integers", "example:all/types@0.1.0#integers")),
        "{names:?}"
    );
    assert!(names.contains(&("say_hello", "say-hello")), "{names:?}");
    assert_eq!(names.len(), 12);
    for tool in &exported.tools {
        assert!(crate::tool::is_valid_tool_name(&tool.name), "{}", tool.name);
    }
}

/// Every input schema is taken by every dialect without an error or a
/// warning. Output schemas are objects that compile too.
#[test]
fn every_schema_passes_every_dialect() {
    let exported = exported_tools(&all_types(), &Default::default());
    for tool in &exported.tools {
        for verdict in dialect::check(&tool.input_schema) {
            assert!(verdict.accepted, "{}: {verdict:?}", tool.name);
            assert!(verdict.problems.is_empty(), "{}: {verdict:?}", tool.name);
        }
        if let Some(output) = &tool.output_schema {
            assert_eq!(output["type"], "object", "{}", tool.name);
            Schema::output(&output.to_string()).unwrap();
            for verdict in dialect::check(output) {
                assert!(verdict.accepted, "{} output: {verdict:?}", tool.name);
            }
        }
        if let Some(error) = &tool.error_schema {
            Schema::output(&error.to_string()).unwrap();
        }
    }
}

#[test]
fn schemas_are_exact() {
    let exported = exported_tools(&all_types(), &Default::default());
    let tools = &exported.tools;
    let integers = &tool(tools, "types__integers").input_schema;
    assert_eq!(integers["additionalProperties"], false);
    assert_eq!(integers["required"].as_array().unwrap().len(), 8);
    let p = &integers["properties"];
    assert_eq!(
        p["a"],
        json!({"type": "integer", "minimum": 0, "maximum": 255})
    );
    assert_eq!(p["d"]["maximum"], json!(u64::MAX));
    assert_eq!(
        p["e"],
        json!({"type": "integer", "minimum": -128, "maximum": 127})
    );
    assert_eq!(p["h"]["minimum"], json!(i64::MIN));
    assert_eq!(
        tool(tools, "types__integers").output_schema,
        Some(json!({
            "type": "object",
            "properties": {"result": {"type": "integer", "minimum": 0, "maximum": u64::MAX}},
            "required": ["result"],
            "additionalProperties": false,
        }))
    );
    let floats = &tool(tools, "types__floats").input_schema["properties"];
    assert_eq!(floats["a"]["maximum"], json!(f64::from(f32::MAX)));
    assert_eq!(floats["b"], json!({"type": "number"}));
    let text = &tool(tools, "types__text").input_schema["properties"];
    assert_eq!(text["c"]["maxLength"], 1);
    assert_eq!(text["on"], json!({"type": "boolean"}));
    let bytes = &tool(tools, "types__bytes").input_schema["properties"]["data"];
    assert_eq!(bytes["type"], "string");
    assert!(bytes["description"].as_str().unwrap().contains("base64"));
    let point = json!({
        "type": "object",
        "properties": {"x": {"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX},
                       "y": {"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX}},
        "required": ["x", "y"],
        "additionalProperties": false,
    });
    let points = tool(tools, "types__points");
    assert_eq!(
        points.input_schema["properties"]["items"],
        json!({"type": "array", "items": point})
    );
    // A record is its own structured content.
    assert_eq!(points.output_schema, Some(point.clone()));
    let tuples = &tool(tools, "types__tuples").input_schema["properties"];
    let u32_schema = json!({"type": "integer", "minimum": 0, "maximum": u32::MAX});
    assert_eq!(
        tuples["same"],
        json!({"type": "array", "items": u32_schema, "minItems": 2, "maxItems": 2})
    );
    assert_eq!(
        tuples["mixed"]["items"],
        json!({"anyOf": [u32_schema, {"type": "string"}]})
    );
    let options = &tool(tools, "types__options").input_schema["properties"];
    assert_eq!(options["a"], json!({"type": ["string", "null"]}));
    // option<option<T>>: the outer none is `null`, the inner `{"some": null}`.
    assert_eq!(options["b"]["type"], json!(["object", "null"]));
    assert_eq!(
        options["b"]["properties"]["some"]["type"],
        json!(["integer", "null"])
    );
    assert_eq!(
        options["c"],
        json!({"type": ["string", "null"], "enum": ["red", "green", "blue", null]})
    );
    // option<variant>: its first branch takes `null` (no `{"type": "null"}`
    // branch of its own, which Gemini's converters would lose).
    let d = options["d"]["anyOf"].as_array().unwrap();
    assert_eq!(
        d[0],
        json!({"type": ["string", "null"], "enum": ["dot", null]})
    );
    assert!(!d.contains(&json!({"type": "null"})), "{d:?}");
    let choose = &tool(tools, "types__choose").input_schema["properties"];
    assert_eq!(
        choose["hue"],
        json!({"type": "string", "enum": ["red", "green", "blue"]})
    );
    assert_eq!(
        choose["access"]["items"]["enum"],
        json!(["read", "write", "exec"])
    );
    // A set, but no `uniqueItems` (Gemini drops it): duplicates count once.
    assert_eq!(choose["access"].get("uniqueItems"), None);
    assert_eq!(choose["access"]["maxItems"], 3);
    let shape = &choose["form"]["anyOf"];
    assert_eq!(shape[0], json!({"type": "string", "enum": ["dot"]}));
    assert_eq!(shape[1]["properties"]["circle"], json!({"type": "number"}));
    assert_eq!(shape[2]["required"], json!(["rect"]));
    let results = tool(tools, "types__results");
    let r = &results.input_schema["properties"];
    assert_eq!(r["r"]["anyOf"][0]["properties"]["ok"], u32_schema);
    assert_eq!(r["unit"], json!({"type": "string", "enum": ["ok", "err"]}));
    // `result<point, string>`: the point is the output, the string the error.
    assert_eq!(results.output_schema, Some(point));
    assert_eq!(results.error_schema, Some(json!({"type": "string"})));
    let fallible = tool(tools, "types__fallible");
    assert_eq!(fallible.output_schema, None);
    assert_eq!(
        fallible.error_schema.as_ref().unwrap()["enum"],
        json!(["red", "green", "blue"])
    );
    let nothing = tool(tools, "types__nothing");
    assert_eq!(
        nothing.input_schema,
        json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
    );
    assert_eq!(nothing.output_schema, None);
}

#[test]
fn functions_that_cannot_be_tools_are_refused_by_name_and_path() {
    let exported = exported_tools(
        &component(&[OTHER], REFUSED, "refused"),
        &Default::default(),
    );
    let names: Vec<&str> = exported.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["files__add"]);
    let function = |refusal: &Refusal| match refusal {
        Refusal::Argument { function, .. }
        | Refusal::Result { function, .. }
        | Refusal::ResourceFunction { function }
        | Refusal::Name { function, .. }
        | Refusal::Clash { function, .. }
        | Refusal::Toolchain { function, .. } => function.clone(),
    };
    let find = |name: &str| {
        exported
            .refused
            .iter()
            .find(|r| function(r).ends_with(name))
            .unwrap_or_else(|| panic!("{name} not refused: {:?}", exported.refused))
    };
    assert_eq!(
        find("#[constructor]file"),
        &Refusal::ResourceFunction {
            function: "example:res/files@0.1.0#[constructor]file".into()
        }
    );
    assert!(matches!(
        find("#[method]file.size"),
        Refusal::ResourceFunction { .. }
    ));
    assert_eq!(
        find("#open"),
        &Refusal::Result {
            function: "example:res/files@0.1.0#open".into(),
            path: String::new(),
            what: "a resource handle".into(),
        }
    );
    assert_eq!(
        find("#close-all").to_string(),
        "`example:res/files@0.1.0#close-all`: the argument at `/files/*` is a resource handle, \
         which a tool argument cannot be"
    );
    assert!(matches!(find("#peek"), Refusal::Argument { path, .. } if path == "/files/*/1"));
    assert_eq!(
        find("other:pkg/files@0.1.0#add"),
        &Refusal::Clash {
            function: "other:pkg/files@0.1.0#add".into(),
            tool: "files__add".into(),
            other: "example:res/files@0.1.0#add".into(),
        }
    );
    assert_eq!(exported.refused.len(), 6);
}

/// A WIT with doc comments on functions, a record's fields, enum, flags
/// and variant cases, and types.
const DOCUMENTED: &str = r#"
package example:doc@0.1.0;

interface shop {
  /// A place on the map.
  record spot {
    /// East of the origin.
    x: s32,
    y: s32,
    /// Its letter.
    tag: char,
  }
  enum pay {
    /// With coins.
    cash,
    card,
  }
  flags opts {
    /// Wrap it.
    gift,
    fast,
  }
  variant how {
    /// Sent by post.
    post(spot),
    /// Picked up.
    pickup,
    later,
  }

  /// Orders something.
  order: func(at: spot, pay: pay, opts: opts, how: how) -> spot;
  undocumented: func() -> u32;
}

world doc {
  export shop;
  /// Says hi.
  export hi: func() -> string;
}
"#;

/// The WIT docs a component carries (the section wit-component writes)
/// describe its tools, and its named types' schema nodes; every dialect
/// still takes the schemas.
#[test]
fn wit_docs_describe_tools_and_schema_nodes() {
    let plain = toolhost_test_plugins::wit::component(&[], DOCUMENTED, Some("doc"));
    let bytes = toolhost_test_plugins::wit::with_docs(&plain, DOCUMENTED);
    let (docs, warnings) = super::Docs::read(&bytes);
    assert!(warnings.is_empty(), "{warnings:?}");
    let component = Component::new(&wasmtime::Engine::default(), &bytes).unwrap();
    let exported = exported_tools(&component, &docs);
    let tools = &exported.tools;
    assert_eq!(tool(tools, "hi").description, "Says hi.");
    assert_eq!(tool(tools, "shop__order").description, "Orders something.");
    assert_eq!(
        tool(tools, "shop__undocumented").description,
        "`example:doc/shop@0.1.0#undocumented`, a function the component exports."
    );

    let order = &tool(tools, "shop__order").input_schema["properties"];
    assert_eq!(order["at"]["description"], "A place on the map.");
    let spot = &order["at"]["properties"];
    assert_eq!(spot["x"]["description"], "East of the origin.");
    assert!(spot["y"].get("description").is_none(), "{spot}");
    assert_eq!(
        spot["tag"]["description"],
        "Its letter. (one Unicode code point)"
    );
    assert_eq!(order["pay"]["description"], "`cash`: With coins.");
    assert_eq!(order["opts"]["items"]["description"], "`gift`: Wrap it.");
    let how = order["how"]["anyOf"].as_array().unwrap();
    assert_eq!(how[0]["enum"], json!(["pickup", "later"]));
    assert_eq!(how[0]["description"], "`pickup`: Picked up.");
    assert_eq!(how[1]["description"], "Sent by post.");
    assert_eq!(
        how[1]["properties"]["post"]["properties"]["x"]["description"],
        "East of the origin."
    );
    let output = tool(tools, "shop__order").output_schema.as_ref().unwrap();
    assert_eq!(output["description"], "A place on the map.");

    for tool in tools {
        for verdict in dialect::check(&tool.input_schema) {
            assert!(verdict.accepted, "{}: {verdict:?}", tool.name);
            assert!(verdict.problems.is_empty(), "{}: {verdict:?}", tool.name);
        }
    }
    // Without the section: the same schemas, without descriptions.
    let component = Component::new(&wasmtime::Engine::default(), &plain).unwrap();
    let exported = exported_tools(&component, &Default::default());
    let order = &tool(&exported.tools, "shop__order").input_schema["properties"];
    assert!(order["at"].get("description").is_none(), "{order}");
}

/// The build-time entry points componentize-qjs and componentize-py add are
/// left out (as refusals, named); a function of the user's own WIT called
/// `init` stays a tool.
#[test]
fn toolchain_entry_points_are_left_out_and_an_own_init_is_not() {
    const WIT: &str = r#"
package example:boot@0.1.0;

interface setup {
  init: func(app-name: string) -> u32;
}

world boot {
  export init: func(shim: string, script: string, entry-path: option<string>, disable-gc: bool) -> result<_, string>;
  export exports: interface {
    init: func(app-name: string, symbols: list<string>, stub-wasi: bool);
  }
  export setup;
}
"#;
    let exported = exported_tools(&component(&[], WIT, "boot"), &Default::default());
    let names: Vec<&str> = exported.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["setup__init"]);
    let refused: Vec<_> = exported
        .refused
        .iter()
        .map(|r| match r {
            Refusal::Toolchain {
                function,
                toolchain,
            } => (function.as_str(), *toolchain),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        refused,
        [
            ("init", "componentize-qjs"),
            ("exports#init", "componentize-py")
        ]
    );
}
