//! Which model providers take a tool's input schema as it is, and why not.
//!
//! An MCP client hands a tool's `inputSchema` to a model provider, and each
//! provider accepts its own part of JSON Schema. The rules here are ported from
//! the converters agent frameworks run (checked against them in
//! `tests/interop`):
//!
//! - [`Dialect::OpenAiStrict`]: OpenAI's structured outputs ("strict mode"), as
//!   the OpenAI Agents SDK converts an MCP schema (`ensure_strict_json_schema`).
//!   A schema it refuses is sent non-strict; one it accepts has every property
//!   made required.
//! - [`Dialect::Gemini`]: Gemini's function declarations, as `google-genai`
//!   (`Schema.from_json_schema`) and ADK convert them. An error here means the
//!   conversion fails or loses part of the schema (a type, a description, a
//!   default, a map's values).
//! - [`Dialect::JsonSchema`]: MCP's own, JSON Schema 2020-12 with an object root.
//!
//! Errors mean refused or lossy; warnings are the providers' documented rules
//! that no converter checks (the OpenAI API wants a `type` everywhere, Gemini
//! enums are strings).

use serde::Serialize;
use serde_json::{Map, Value};

/// A schema dialect a model provider accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[non_exhaustive]
pub enum Dialect {
    /// JSON Schema 2020-12 with an object root: what MCP requires.
    #[serde(rename = "json-schema")]
    JsonSchema,
    /// OpenAI's strict mode (structured outputs).
    #[serde(rename = "openai-strict")]
    OpenAiStrict,
    /// Gemini's function declarations (google-genai, ADK).
    #[serde(rename = "gemini")]
    Gemini,
}

impl Dialect {
    /// Every dialect, in the order reports list them.
    pub const ALL: [Self; 3] = [Self::JsonSchema, Self::OpenAiStrict, Self::Gemini];

    /// The dialect's name in reports: `json-schema`, `openai-strict`, `gemini`.
    pub fn name(self) -> &'static str {
        match self {
            Self::JsonSchema => "json-schema",
            Self::OpenAiStrict => "openai-strict",
            Self::Gemini => "gemini",
        }
    }
}

impl std::fmt::Display for Dialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How much a [`Problem`] matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Severity {
    /// The provider refuses the schema, or its conversion loses part of it.
    Error,
    /// A documented rule of the provider that its converters do not check.
    Warning,
}

/// One reason a dialect does not take a schema as it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// Where: a JSON pointer into the schema (`/properties/headers`); empty for the root.
    pub path: String,
    /// How much it matters.
    pub severity: Severity,
    /// What is wrong and what to write instead.
    pub message: String,
}

/// What one dialect makes of a schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// The dialect.
    pub dialect: Dialect,
    /// Whether it takes the schema without loss: no [`Severity::Error`].
    pub accepted: bool,
    /// Every problem found, errors and warnings.
    pub problems: Vec<Problem>,
}

/// Checks an input schema against every [`Dialect`], in [`Dialect::ALL`]'s order.
pub fn check(schema: &Value) -> Vec<Verdict> {
    let mut found = Found::default();
    if let Err(err) = super::Schema::input_value(schema.clone()) {
        found.add(Dialect::JsonSchema, "", Severity::Error, err.to_string());
    }
    match schema {
        Value::Object(root) => {
            root_rules(root, &mut found);
            visit(root, "", 0, Position::Root, &mut found);
        }
        _ => {
            for dialect in [Dialect::OpenAiStrict, Dialect::Gemini] {
                found.add(dialect, "", Severity::Error, "the schema is not an object");
            }
        }
    }
    Dialect::ALL
        .iter()
        .map(|&dialect| {
            let problems: Vec<Problem> = found
                .problems
                .iter()
                .filter(|(d, _)| *d == dialect)
                .map(|(_, p)| p.clone())
                .collect();
            Verdict {
                dialect,
                accepted: problems.iter().all(|p| p.severity != Severity::Error),
                problems,
            }
        })
        .collect()
}

#[derive(Default)]
struct Found {
    problems: Vec<(Dialect, Problem)>,
}

impl Found {
    fn add(
        &mut self,
        dialect: Dialect,
        path: &str,
        severity: Severity,
        message: impl Into<String>,
    ) {
        self.problems.push((
            dialect,
            Problem {
                path: path.to_owned(),
                severity,
                message: message.into(),
            },
        ));
    }
}

/// How deep strict mode follows a schema (`_MAX_SCHEMA_DEPTH`).
const STRICT_MAX_DEPTH: usize = 100;

/// The keywords google-genai's `JSONSchema` takes; any other fails its conversion.
const GEMINI_KEYWORDS: [&str; 24] = [
    "type",
    "format",
    "title",
    "description",
    "default",
    "items",
    "minItems",
    "maxItems",
    "enum",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "additionalProperties",
    "anyOf",
    "uniqueItems",
    "$ref",
    "$defs",
    "oneOf",
];

/// Siblings of a `$ref` that strict mode merges (`_REF_NON_CONSTRAINING_SIBLINGS`).
const REF_SIBLINGS: [&str; 15] = [
    "$anchor",
    "$comment",
    "$defs",
    "$schema",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "default",
    "definitions",
    "deprecated",
    "description",
    "examples",
    "readOnly",
    "title",
    "writeOnly",
];

/// The string formats OpenAI's structured outputs document.
const OPENAI_FORMATS: [&str; 9] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

fn root_rules(root: &Map<String, Value>, found: &mut Found) {
    let object_root = match root.get("type") {
        Some(Value::String(kind)) => kind == "object",
        Some(Value::Array(kinds)) => kinds.len() == 1 && kinds[0] == "object",
        _ => false,
    };
    if !object_root || root.contains_key("anyOf") || root.contains_key("oneOf") {
        found.add(
            Dialect::OpenAiStrict,
            "",
            Severity::Error,
            "the root must be one plain object (`\"type\": \"object\"`, no union)",
        );
    }
}

/// Where a subschema sits: rules about types apply to values a model writes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Position {
    Root,
    /// A property, an array's items: a value the model writes.
    Value,
    /// A branch of a union, a definition: part of another schema.
    Part,
}

fn visit(
    map: &Map<String, Value>,
    path: &str,
    depth: usize,
    position: Position,
    found: &mut Found,
) {
    if depth == STRICT_MAX_DEPTH + 1 {
        found.add(
            Dialect::OpenAiStrict,
            path,
            Severity::Error,
            format!("nested deeper than {STRICT_MAX_DEPTH} levels"),
        );
    }
    strict_rules(map, path, position, found);
    gemini_rules(map, path, position, found);
    let child = |key: &str| format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"));
    for (key, value) in map {
        match (key.as_str(), value) {
            ("properties" | "$defs" | "patternProperties", Value::Object(named)) => {
                let at = child(key);
                let position = if key == "properties" {
                    Position::Value
                } else {
                    Position::Part
                };
                for (name, schema) in named {
                    if let Value::Object(schema) = schema {
                        let at = format!("{at}/{}", name.replace('~', "~0").replace('/', "~1"));
                        visit(schema, &at, depth + 1, position, found);
                    }
                }
            }
            ("items" | "additionalProperties" | "contains", Value::Object(schema)) => {
                visit(schema, &child(key), depth + 1, Position::Value, found);
            }
            ("not" | "if" | "then" | "else", Value::Object(schema)) => {
                visit(schema, &child(key), depth + 1, Position::Part, found);
            }
            ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(branches)) => {
                let at = child(key);
                for (i, branch) in branches.iter().enumerate() {
                    if let Value::Object(branch) = branch {
                        visit(
                            branch,
                            &format!("{at}/{i}"),
                            depth + 1,
                            Position::Part,
                            found,
                        );
                    }
                }
            }
            _ => {}
        }
    }
}

fn types(map: &Map<String, Value>) -> Vec<&str> {
    match map.get("type") {
        Some(Value::String(kind)) => vec![kind.as_str()],
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Whether a schema says what kind of value it holds, one way or another.
fn typed(map: &Map<String, Value>) -> bool {
    ["type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref"]
        .iter()
        .any(|key| map.contains_key(*key))
}

/// Whether a schema accepts `null`.
fn nullable(map: &Map<String, Value>) -> bool {
    let null_branch = |key: &str| {
        map.get(key)
            .and_then(Value::as_array)
            .is_some_and(|branches| branches.iter().any(|b| b.as_object().is_some_and(nullable)))
    };
    types(map).contains(&"null")
        || map
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|values| values.contains(&Value::Null))
        || map.get("const") == Some(&Value::Null)
        || null_branch("anyOf")
        || null_branch("oneOf")
        || !typed(map)
}

fn open_object(map: &Map<String, Value>) -> bool {
    map.get("additionalProperties")
        .is_some_and(|extra| extra != &Value::Bool(false))
}

fn strict_rules(map: &Map<String, Value>, path: &str, position: Position, found: &mut Found) {
    let mut error =
        |message: String| found.add(Dialect::OpenAiStrict, path, Severity::Error, message);
    if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
        let extra: Vec<&str> = map
            .keys()
            .map(String::as_str)
            .filter(|key| *key != "$ref" && !REF_SIBLINGS.contains(key))
            .collect();
        if !extra.is_empty() {
            error(format!(
                "a `$ref` beside `{}`: strict mode cannot merge them; write the type inline",
                extra.join("`, `")
            ));
        } else if map.len() == 1 {
            error(format!(
                "a bare `$ref` (to `{reference}`): strict mode refuses references it did not inline; \
                 write the type inline (recursive types cannot be)"
            ));
        }
    }
    let kinds = types(map);
    let is_object =
        kinds.contains(&"object") || (kinds.is_empty() && map.contains_key("properties"));
    let no_properties = map
        .get("properties")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty);
    if is_object && open_object(map) {
        error(
            "an open object (a map, `additionalProperties` not false): strict mode refuses it; \
             use a list of `{\"name\", \"value\"}` objects"
                .to_owned(),
        );
    } else if is_object
        && no_properties
        && map.get("additionalProperties") != Some(&Value::Bool(false))
    {
        error(
            "an object without properties: strict mode refuses a free-form object; declare its \
             properties, or say `\"additionalProperties\": false`"
                .to_owned(),
        );
    } else if kinds.is_empty() && !map.contains_key("properties") && open_object(map) {
        error("`additionalProperties` without `\"type\": \"object\"`".to_owned());
    }
    if let (Some(Value::Object(properties)), required) =
        (map.get("properties"), map.get("required"))
    {
        let required: Vec<&str> = required
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for (name, property) in properties {
            if let Value::Object(property) = property
                && !required.contains(&name.as_str())
                && !nullable(property)
            {
                found.add(
                    Dialect::OpenAiStrict,
                    &format!("{path}/properties/{name}"),
                    Severity::Warning,
                    format!(
                        "`{name}` is optional but not nullable: strict mode makes it required, so \
                         the model must always send a value; let it be `null` too"
                    ),
                );
            }
        }
    }
    if position != Position::Part && !typed(map) {
        found.add(
            Dialect::OpenAiStrict,
            path,
            Severity::Warning,
            "no `type`: the OpenAI API wants one on every value; for any JSON, take JSON text in a string",
        );
    }
    if let Some(format) = map.get("format").and_then(Value::as_str)
        && !OPENAI_FORMATS.contains(&format)
    {
        found.add(
            Dialect::OpenAiStrict,
            path,
            Severity::Warning,
            format!("format `{format}` is not one OpenAI's structured outputs document"),
        );
    }
}

fn gemini_rules(map: &Map<String, Value>, path: &str, position: Position, found: &mut Found) {
    let mut error = |message: String| found.add(Dialect::Gemini, path, Severity::Error, message);
    let unknown: Vec<&str> = map
        .keys()
        .map(String::as_str)
        .filter(|key| !GEMINI_KEYWORDS.contains(key))
        .collect();
    if !unknown.is_empty() {
        error(format!(
            "`{}` is not in Gemini's schema: google-genai refuses the whole schema",
            unknown.join("`, `")
        ));
    }
    if map.contains_key("oneOf") {
        error(
            "`oneOf` is dropped by google-genai, and the type with it; use `anyOf` or an `enum`"
                .to_owned(),
        );
    }
    if open_object(map) {
        error(
            "a map (`additionalProperties`): Gemini drops it, so the values lose their schema; \
             use a list of `{\"name\", \"value\"}` objects"
                .to_owned(),
        );
    }
    if map.contains_key("$ref") {
        let lost: Vec<&str> = map
            .keys()
            .map(String::as_str)
            .filter(|key| !matches!(*key, "$ref" | "$defs"))
            .collect();
        if !lost.is_empty() {
            error(format!(
                "google-genai replaces a `$ref` by its target: `{}` here is lost; write the type inline",
                lost.join("`, `")
            ));
        }
    }
    if let Some(Value::Array(branches)) = map.get("anyOf")
        && branches.len() == 2
        && branches
            .iter()
            .any(|b| b.as_object().is_some_and(|b| types(b) == ["null"]))
        && map.contains_key("description")
    {
        error(
            "the description beside `anyOf: [X, null]` is lost when Gemini unwraps it; \
             put it inside X, or write `\"type\": [T, \"null\"]`"
                .to_owned(),
        );
    }
    if let Some(Value::Array(branches)) = map.get("anyOf")
        && branches.len() > 2
        && branches
            .iter()
            .any(|b| b.as_object().is_some_and(|b| types(b) == ["null"]))
    {
        error(
            "`anyOf` with a `null` branch among more than two: Gemini keeps that branch as a \
             typeless `nullable`, so `null` is lost; make another branch nullable \
             (`\"type\": [T, \"null\"]`) instead"
                .to_owned(),
        );
    }
    if position != Position::Part && !typed(map) {
        error("no `type`: Gemini declares it as having none; for any JSON, take JSON text in a string".to_owned());
    }
    let kinds: Vec<&str> = types(map).into_iter().filter(|k| *k != "null").collect();
    if kinds.len() > 1 {
        found.add(
            Dialect::Gemini,
            path,
            Severity::Warning,
            format!(
                "types `{}`: Gemini splits them into a union and drops the default",
                kinds.join("`, `")
            ),
        );
    }
    if let Some(Value::Array(values)) = map.get("enum")
        && values.iter().any(|v| !v.is_string() && !v.is_null())
    {
        found.add(
            Dialect::Gemini,
            path,
            Severity::Warning,
            "an enum of non-strings: Gemini's enums are strings",
        );
    }
    if let Some(format) = map.get("format").and_then(Value::as_str) {
        let kept = match kinds.first().copied() {
            Some("integer" | "number") => matches!(format, "int32" | "int64"),
            Some("string") => matches!(format, "date-time" | "enum"),
            _ => false,
        };
        if !kept {
            found.add(
                Dialect::Gemini,
                path,
                Severity::Warning,
                format!("format `{format}`: ADK's converter drops it"),
            );
        }
    }
    if map.contains_key("uniqueItems") {
        found.add(
            Dialect::Gemini,
            path,
            Severity::Warning,
            "`uniqueItems`: google-genai drops it",
        );
    }
}

#[cfg(test)]
mod tests;
