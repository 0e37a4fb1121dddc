use serde_json::{Value, json};

use super::{Dialect, Severity, Verdict, check};

fn verdict(schema: &Value, dialect: Dialect) -> Verdict {
    check(schema)
        .into_iter()
        .find(|v| v.dialect == dialect)
        .expect("every dialect is reported")
}

/// The errors of one dialect, as "path: message".
fn errors(schema: &Value, dialect: Dialect) -> Vec<String> {
    verdict(schema, dialect)
        .problems
        .iter()
        .filter(|p| p.severity == Severity::Error)
        .map(|p| format!("{}: {}", p.path, p.message))
        .collect()
}

fn warnings(schema: &Value, dialect: Dialect) -> Vec<String> {
    verdict(schema, dialect)
        .problems
        .iter()
        .filter(|p| p.severity == Severity::Warning)
        .map(|p| format!("{}: {}", p.path, p.message))
        .collect()
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "additionalProperties": false, "properties": properties, "required": required})
}

#[test]
fn a_portable_schema_passes_every_dialect_without_warnings() {
    let schema = object(
        json!({
            "data": {"type": "string", "description": "The data."},
            "alphabet": {"type": ["string", "null"], "enum": ["standard", "url_safe", null], "description": "d"},
            "limit": {"type": ["integer", "null"], "minimum": 1},
            "headers": {"type": ["array", "null"], "items": object(
                json!({"name": {"type": "string"}, "value": {"type": "string"}}), &["name", "value"])},
            "when": {"type": "string", "format": "date-time"},
        }),
        &["data", "when"],
    );
    for v in check(&schema) {
        assert!(v.accepted, "{v:?}");
        assert_eq!(v.problems, [], "{:?}", v.dialect);
    }
}

#[test]
fn every_dialect_is_reported_in_order() {
    let dialects: Vec<Dialect> = check(&object(json!({}), &[]))
        .iter()
        .map(|v| v.dialect)
        .collect();
    assert_eq!(dialects, Dialect::ALL);
    assert_eq!(Dialect::OpenAiStrict.to_string(), "openai-strict");
}

#[test]
fn an_optional_enum_by_reference_fails_strict_mode_and_loses_gemini_descriptions() {
    let schema = json!({
        "type": "object", "additionalProperties": false,
        "$defs": {"Alphabet": {"type": "string", "enum": ["standard", "url_safe"]}},
        "properties": {
            "alphabet": {"anyOf": [{"$ref": "#/$defs/Alphabet"}, {"type": "null"}], "description": "d"},
            "algorithm": {"$ref": "#/$defs/Alphabet", "default": "standard", "description": "d"},
        },
        "required": [],
    });
    let strict = errors(&schema, Dialect::OpenAiStrict);
    assert_eq!(strict.len(), 1, "{strict:?}");
    assert!(
        strict[0].starts_with("/properties/alphabet/anyOf/0: a bare `$ref`"),
        "{strict:?}"
    );
    let gemini = errors(&schema, Dialect::Gemini);
    assert!(
        gemini
            .iter()
            .any(|e| e.starts_with("/properties/alphabet: the description beside")),
        "{gemini:?}"
    );
    assert!(
        gemini.iter().any(|e| e
            .starts_with("/properties/algorithm: google-genai replaces a `$ref`")
            && e.contains("`default`, `description`")),
        "{gemini:?}"
    );
    assert!(verdict(&schema, Dialect::JsonSchema).accepted);
}

#[test]
fn a_map_fails_strict_mode_and_loses_its_values_in_gemini() {
    let schema = object(
        json!({"headers": {"type": "object", "additionalProperties": {"type": "string"}}}),
        &["headers"],
    );
    let strict = errors(&schema, Dialect::OpenAiStrict);
    assert!(
        strict
            .iter()
            .any(|e| e.starts_with("/properties/headers: an open object")),
        "{strict:?}"
    );
    let gemini = errors(&schema, Dialect::Gemini);
    assert!(
        gemini
            .iter()
            .any(|e| e.starts_with("/properties/headers: a map")),
        "{gemini:?}"
    );
}

#[test]
fn an_untyped_value_has_no_type_in_gemini_and_a_warning_for_openai() {
    let schema = object(
        json!({"document": {"description": "any JSON"}}),
        &["document"],
    );
    assert!(verdict(&schema, Dialect::OpenAiStrict).accepted);
    let warned = warnings(&schema, Dialect::OpenAiStrict);
    assert!(
        warned
            .iter()
            .any(|w| w.starts_with("/properties/document: no `type`")),
        "{warned:?}"
    );
    let gemini = errors(&schema, Dialect::Gemini);
    assert!(
        gemini
            .iter()
            .any(|e| e.starts_with("/properties/document: no `type`")),
        "{gemini:?}"
    );
}

#[test]
fn optional_fields_that_are_not_nullable_are_a_strict_mode_warning() {
    let schema = object(
        json!({"a": {"type": "boolean"}, "b": {"type": ["boolean", "null"]}, "c": {"type": "string"}}),
        &["c"],
    );
    assert!(verdict(&schema, Dialect::OpenAiStrict).accepted);
    let warned = warnings(&schema, Dialect::OpenAiStrict);
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(
        warned[0].starts_with("/properties/a: `a` is optional but not nullable"),
        "{warned:?}"
    );
}

#[test]
fn objects_without_properties_must_be_closed_for_strict_mode() {
    let open = json!({"type": "object", "properties": {}});
    let strict = errors(&open, Dialect::OpenAiStrict);
    assert!(
        strict
            .iter()
            .any(|e| e.starts_with(": an object without properties")),
        "{strict:?}"
    );
    let closed = json!({"type": "object", "properties": {}, "additionalProperties": false});
    assert!(verdict(&closed, Dialect::OpenAiStrict).accepted);
}

#[test]
fn unions_consts_and_roots() {
    let tagged = json!({"type": "object", "oneOf": [
        {"type": "object", "properties": {"k": {"const": "a"}}, "required": ["k"]},
        {"type": "object", "properties": {"k": {"const": "b"}}, "required": ["k"]},
    ]});
    let strict = errors(&tagged, Dialect::OpenAiStrict);
    assert!(
        strict
            .iter()
            .any(|e| e.starts_with(": the root must be one plain object")),
        "{strict:?}"
    );
    let gemini = errors(&tagged, Dialect::Gemini);
    assert!(
        gemini.iter().any(|e| e.starts_with(": `oneOf` is dropped")),
        "{gemini:?}"
    );
    assert!(
        gemini
            .iter()
            .any(|e| e.contains("`const` is not in Gemini's schema")),
        "{gemini:?}"
    );
    let not_object = json!({"type": "string"});
    assert!(!verdict(&not_object, Dialect::JsonSchema).accepted);
    assert!(!verdict(&json!(true), Dialect::OpenAiStrict).accepted);
}

#[test]
fn a_recursive_type_is_reported_not_followed() {
    let schema = json!({
        "type": "object", "additionalProperties": false,
        "$defs": {"Tree": {"type": "object", "additionalProperties": false,
            "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}},
            "required": ["children"]}},
        "properties": {"root": {"$ref": "#/$defs/Tree"}},
        "required": ["root"],
    });
    let strict = errors(&schema, Dialect::OpenAiStrict);
    assert!(
        strict.iter().any(|e| e.contains("a bare `$ref`")),
        "{strict:?}"
    );
}

#[test]
fn a_schema_deeper_than_strict_modes_limit_is_refused_without_overflowing() {
    let mut schema = json!({"type": "string"});
    for _ in 0..150 {
        schema = json!({"type": "array", "items": schema});
    }
    let schema = object(json!({"deep": schema}), &["deep"]);
    let strict = errors(&schema, Dialect::OpenAiStrict);
    assert!(
        strict
            .iter()
            .any(|e| e.contains("nested deeper than 100 levels")),
        "{strict:?}"
    );
    assert!(verdict(&schema, Dialect::Gemini).accepted);
}

/// google-genai unwraps `anyOf: [X, null]`, but keeps the `null` branch of a
/// longer `anyOf` as a typeless `nullable`: the null is lost (found by the
/// interop suite's converters on `option<variant>`). A nullable first branch
/// says the same and passes.
#[test]
fn a_null_branch_among_more_than_two_is_lost_in_gemini() {
    let branches = |first: Value| {
        object(
            json!({"shape": {"anyOf": [
                first,
                object(json!({"circle": {"type": "number"}}), &["circle"]),
                {"type": "null"},
            ]}}),
            &["shape"],
        )
    };
    let lost = branches(json!({"type": "string", "enum": ["dot"]}));
    let found = errors(&lost, Dialect::Gemini);
    assert!(
        found
            .iter()
            .any(|e| e.starts_with("/properties/shape: `anyOf` with a `null` branch")),
        "{found:?}"
    );
    let two = object(
        json!({"n": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}),
        &["n"],
    );
    assert!(errors(&two, Dialect::Gemini).is_empty());
    let kept = object(
        json!({"shape": {"anyOf": [
            {"type": ["string", "null"], "enum": ["dot", null]},
            object(json!({"circle": {"type": "number"}}), &["circle"]),
        ]}}),
        &["shape"],
    );
    for dialect in Dialect::ALL {
        assert!(errors(&kept, dialect).is_empty(), "{dialect:?}");
    }
}
