use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::ArgsSchema;
use crate::tool::parse_args;

/// Encodes things.
#[derive(Debug, Deserialize, JsonSchema)]
#[expect(dead_code, reason = "only the schema and parsing are tested")]
struct EncodeArgs {
    /// The data.
    data: String,
    /// The alphabet.
    alphabet: Option<Alphabet>,
    /// The hash function.
    #[serde(default)]
    algorithm: Algorithm,
    /// Add padding.
    #[serde(default = "yes")]
    padding: bool,
    /// At most this many.
    #[serde(default)]
    #[schemars(range(min = 1))]
    limit: Option<u32>,
    /// Where to send it.
    target: Option<Target>,
    /// Extra options.
    #[serde(default)]
    options: Options,
}

fn yes() -> bool {
    true
}

/// A base64 alphabet.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Alphabet {
    /// RFC 4648 §4.
    Standard,
    /// RFC 4648 §5.
    UrlSafe,
}

/// A hash function.
#[derive(Debug, Default, Deserialize, JsonSchema, serde::Serialize)]
#[serde(rename_all = "lowercase")]
enum Algorithm {
    #[default]
    Sha256,
    Sha512,
}

/// A destination.
#[derive(Debug, Deserialize, JsonSchema)]
#[expect(dead_code, reason = "only the schema and parsing are tested")]
struct Target {
    /// The host.
    host: String,
    /// The port.
    #[serde(default)]
    port: u16,
}

/// Options.
#[derive(Debug, Default, Deserialize, JsonSchema)]
struct Options {
    /// Be loud.
    #[serde(default)]
    loud: bool,
}

fn schema() -> Value {
    ArgsSchema::of::<EncodeArgs>().into_parts().0
}

/// Every `$ref` in a schema, by JSON pointer.
fn refs(value: &Value, at: &str, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                if key == "$ref" {
                    found.push(at.to_owned());
                }
                refs(child, &format!("{at}/{key}"), found);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                refs(child, &format!("{at}/{i}"), found);
            }
        }
        _ => {}
    }
}

#[test]
fn non_recursive_types_are_inlined() {
    let schema = schema();
    let mut found = Vec::new();
    refs(&schema, "", &mut found);
    assert_eq!(found, Vec::<String>::new(), "{schema:#}");
    assert!(schema.get("$defs").is_none(), "{schema:#}");
}

#[test]
fn an_optional_enum_is_one_nullable_enum_with_both_descriptions() {
    let schema = schema();
    assert_eq!(
        schema["properties"]["alphabet"],
        json!({
            "type": ["string", "null"],
            "enum": ["standard", "url_safe", null],
            "description": "The alphabet.\n\nA base64 alphabet.\n\n- `standard`: RFC 4648 §4.\n- `url_safe`: RFC 4648 §5.",
        }),
        "{schema:#}"
    );
}

#[test]
fn a_defaulted_field_is_nullable_and_states_its_default() {
    let schema = schema();
    let algorithm = &schema["properties"]["algorithm"];
    assert_eq!(algorithm["type"], json!(["string", "null"]), "{schema:#}");
    assert_eq!(algorithm["enum"], json!(["sha256", "sha512", null]));
    assert_eq!(algorithm["default"], "sha256");
    let description = algorithm["description"].as_str().expect("a description");
    assert!(
        description.starts_with("The hash function."),
        "{description}"
    );
    assert!(
        description.ends_with("Defaults to `sha256`."),
        "{description}"
    );
    let padding = &schema["properties"]["padding"];
    assert_eq!(padding["type"], json!(["boolean", "null"]), "{schema:#}");
    assert_eq!(padding["description"], "Add padding. Defaults to `true`.");
    // Required fields stay as they are.
    assert_eq!(schema["properties"]["data"]["type"], "string");
    assert_eq!(schema["required"], json!(["data"]));
}

#[test]
fn an_optional_number_keeps_its_bounds() {
    let schema = schema();
    let limit = &schema["properties"]["limit"];
    assert_eq!(limit["type"], json!(["integer", "null"]), "{schema:#}");
    assert_eq!(limit["minimum"], 1);
    assert!(limit.get("anyOf").is_none(), "{schema:#}");
    // `#[serde(default)]` on an `Option`: no `"default": null`.
    assert!(limit.get("default").is_none(), "{schema:#}");
}

#[test]
fn an_optional_object_keeps_its_union_with_the_description_inside() {
    let schema = schema();
    let target = &schema["properties"]["target"];
    assert!(target.get("description").is_none(), "{schema:#}");
    let branches = target["anyOf"].as_array().expect("a union");
    assert_eq!(branches.len(), 2, "{schema:#}");
    assert_eq!(branches[1], json!({"type": "null"}));
    let object = &branches[0];
    assert_eq!(object["type"], "object");
    assert!(
        object["description"]
            .as_str()
            .is_some_and(|d| d.starts_with("Where to send it.")),
        "{schema:#}"
    );
    // Nested optionals are nullable too.
    assert_eq!(
        object["properties"]["port"]["type"],
        json!(["integer", "null"]),
        "{schema:#}"
    );
    assert_eq!(object["properties"]["host"]["type"], "string");
    assert_eq!(
        schema["properties"]["options"]["properties"]["loud"]["type"],
        json!(["boolean", "null"]),
        "{schema:#}"
    );
}

#[test]
fn null_means_absent_for_optional_properties() {
    let args: EncodeArgs = parse_args(
        r#"{"data": "x", "alphabet": null, "algorithm": null, "padding": null,
            "limit": null, "target": {"host": "h", "port": null},
            "options": {"loud": null}}"#,
    )
    .expect("nulls are defaults");
    assert!(args.alphabet.is_none() && args.limit.is_none());
    assert!(matches!(args.algorithm, Algorithm::Sha256));
    assert!(args.padding, "the field's own default, not bool's");
    assert!(args.target.is_some_and(|t| t.port == 0));
    assert!(!args.options.loud);
    // A required field is still required.
    let err = parse_args::<EncodeArgs>(r#"{"data": null}"#).expect_err("data is required");
    assert!(
        matches!(&err, crate::ToolError::InvalidArguments(m) if m.contains("invalid type: null")),
        "{err:?}"
    );
    let err = parse_args::<EncodeArgs>(r#"{"data": "x", "target": {"host": null}}"#)
        .expect_err("host is required");
    assert!(
        matches!(&err, crate::ToolError::InvalidArguments(m) if m.contains("null")),
        "{err:?}"
    );
}

/// A tree of names.
#[derive(Debug, Deserialize, JsonSchema)]
#[expect(dead_code, reason = "only the schema and parsing are tested")]
struct Tree {
    /// The name.
    name: String,
    /// The children.
    #[serde(default)]
    children: Vec<Tree>,
    /// The first child.
    first: Option<Box<Tree>>,
}

#[test]
fn a_recursive_type_keeps_its_reference() {
    let schema = ArgsSchema::of::<Tree>().into_parts().0;
    let mut found = Vec::new();
    refs(&schema, "", &mut found);
    assert!(!found.is_empty(), "{schema:#}");
    for at in &found {
        let pointer = at.clone() + "/$ref";
        let reference = schema
            .pointer(&pointer)
            .and_then(Value::as_str)
            .expect("a ref");
        let target = reference.trim_start_matches('#');
        assert!(
            schema.pointer(target).is_some(),
            "{reference} dangles: {schema:#}"
        );
    }
    assert_eq!(
        schema["properties"]["children"]["type"],
        json!(["array", "null"])
    );
    let args: Tree = parse_args(
        r#"{"name": "a", "children": [{"name": "b", "children": null}], "first": null}"#,
    )
    .expect("nulls inside the recursion");
    assert_eq!(args.children.len(), 1);
}

/// Nothing to pass.
#[derive(Debug, Deserialize, JsonSchema)]
struct NoArgs {}

#[test]
fn an_object_without_properties_is_closed() {
    let schema = ArgsSchema::of::<NoArgs>().into_parts().0;
    assert_eq!(
        schema,
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    );
    let _: NoArgs = parse_args("{}").expect("no arguments");
}
