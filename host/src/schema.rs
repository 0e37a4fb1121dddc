//! JSON Schemas of tool arguments and results: compiled once at load time,
//! checked on every call, with ADK-style coercion of obvious type slips.

use serde_json::{Map, Number, Value};

pub mod dialect;
mod wording;

/// A schema could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The schema is not JSON.
    #[error("schema is not valid JSON: {0}")]
    NotJson(String),
    /// An input schema's root is not `{"type": "object"}`.
    #[error("the root of an input schema must have \"type\": \"object\"")]
    RootNotObject,
    /// The schema is not a valid draft 2020-12 JSON Schema (or refers to a remote document).
    #[error("invalid JSON Schema: {0}")]
    Invalid(String),
}

/// A compiled JSON Schema (draft 2020-12). Remote `$ref`s are never fetched.
#[derive(Debug)]
pub struct Schema {
    raw: Value,
    validator: jsonschema::Validator,
}

impl Schema {
    /// Compiles a schema for a tool's arguments: its root must be an object.
    ///
    /// # Errors
    /// Fails if `raw` is not JSON, its root is not an object, or it is not a valid schema.
    pub fn input(raw: &str) -> Result<Self, SchemaError> {
        let schema: Value =
            serde_json::from_str(raw).map_err(|e| SchemaError::NotJson(e.to_string()))?;
        Self::input_value(schema)
    }

    /// As [`Schema::input`], from parsed JSON.
    ///
    /// # Errors
    /// Fails if the root is not an object, or it is not a valid schema.
    pub fn input_value(schema: Value) -> Result<Self, SchemaError> {
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(SchemaError::RootNotObject);
        }
        Self::compile(schema)
    }

    /// Compiles a schema for a tool's result.
    ///
    /// # Errors
    /// Fails if `raw` is not JSON or not a valid schema.
    pub fn output(raw: &str) -> Result<Self, SchemaError> {
        let schema: Value =
            serde_json::from_str(raw).map_err(|e| SchemaError::NotJson(e.to_string()))?;
        Self::compile(schema)
    }

    fn compile(schema: Value) -> Result<Self, SchemaError> {
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&schema)
            .map_err(|e| SchemaError::Invalid(e.to_string()))?;
        Ok(Self {
            raw: schema,
            validator,
        })
    }

    /// The schema as JSON.
    pub fn raw(&self) -> &Value {
        &self.raw
    }

    /// Every violation of `value`, each as `path: message`, worded for a model
    /// to fix: the path is a JSON pointer to the offending value (or missing or
    /// unexpected key), and an unexpected key gets the closest allowed one.
    pub fn problems(&self, value: &Value) -> Vec<String> {
        // The common case first: `is_valid` stops at the first failure and
        // builds no error values.
        if self.validator.is_valid(value) {
            return Vec::new();
        }
        let mut problems: Vec<String> = Vec::new();
        let mut more = 0_usize;
        for e in self.validator.iter_errors(value) {
            for problem in wording::problems(&e, &self.raw) {
                if problems.len() == MAX_PROBLEMS {
                    more += 1;
                    continue;
                }
                // A message quotes the value, which may be huge.
                problems.push(crate::error::cut(problem, MAX_PROBLEM_BYTES));
            }
        }
        if more > 0 {
            problems.push(format!("and {more} more problems"));
        }
        problems
    }

    /// Coerces obvious slips where the schema says what the value must be, as
    /// ADK's `ConvertToWithJSONSchema` does: a string holding an integer, a
    /// number or a boolean becomes that value when the schema asks for that type
    /// and does not also allow a string. Nothing else is changed.
    pub fn coerce(&self, value: &mut Value) {
        coerce(&self.raw, &self.raw, value, 0);
    }
}

/// The most problems listed for one value (the rest are counted), so an error
/// stays small enough for a model's context.
const MAX_PROBLEMS: usize = 16;
/// The longest one problem's text.
const MAX_PROBLEM_BYTES: usize = 512;

/// How deep coercion follows nested schemas (and `$ref` cycles).
const MAX_DEPTH: usize = 32;

fn coerce(root: &Value, schema: &Value, value: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let Some(schema) = resolve(root, schema) else {
        return;
    };
    match value {
        Value::String(text) => {
            if let Some(replacement) = coerce_scalar(schema, text) {
                *value = replacement;
            }
        }
        Value::Object(object) => coerce_object(root, schema, object, depth),
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    coerce(root, item_schema, item, depth + 1);
                }
            }
        }
        _ => {}
    }
}

fn coerce_object(
    root: &Value,
    schema: &Map<String, Value>,
    object: &mut Map<String, Value>,
    depth: usize,
) {
    if let Some(Value::Object(properties)) = schema.get("properties") {
        for (key, property) in properties {
            if let Some(value) = object.get_mut(key) {
                coerce(root, property, value, depth + 1);
            }
        }
    }
}

/// Follows a local `$ref` (`#/$defs/...`), and `allOf` with one member, to the schema object.
fn resolve<'a>(root: &'a Value, schema: &'a Value) -> Option<&'a Map<String, Value>> {
    let mut current = schema;
    for _ in 0..MAX_DEPTH {
        let object = current.as_object()?;
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            let pointer = reference.strip_prefix('#')?;
            current = root.pointer(pointer)?;
            continue;
        }
        return Some(object);
    }
    None
}

fn types(schema: &Map<String, Value>) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn coerce_scalar(schema: &Map<String, Value>, text: &str) -> Option<Value> {
    let types = types(schema);
    if types.is_empty() || types.contains(&"string") {
        return None;
    }
    let text = text.trim();
    if types.contains(&"integer") {
        if let Ok(n) = text.parse::<i64>() {
            return Some(Value::Number(n.into()));
        }
        if let Ok(n) = text.parse::<u64>() {
            return Some(Value::Number(n.into()));
        }
    }
    if types.contains(&"number")
        && let Ok(n) = text.parse::<f64>()
        && let Some(n) = Number::from_f64(n)
    {
        return Some(Value::Number(n));
    }
    if types.contains(&"boolean") {
        match text {
            "true" => return Some(Value::Bool(true)),
            "false" => return Some(Value::Bool(false)),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn input_root_must_be_object() {
        assert_eq!(
            Schema::input(r#"{"type":"array"}"#).unwrap_err(),
            SchemaError::RootNotObject
        );
        assert!(matches!(
            Schema::input("{nope").unwrap_err(),
            SchemaError::NotJson(_)
        ));
        assert!(matches!(
            Schema::input(r#"{"type":"object","properties":{"x":{"type":"no-such-type"}}}"#)
                .unwrap_err(),
            SchemaError::Invalid(_)
        ));
    }

    #[test]
    fn remote_refs_are_not_fetched() {
        let err = Schema::input(
            r#"{"type":"object","properties":{"x":{"$ref":"http://127.0.0.1:9/schema.json"}}}"#,
        )
        .unwrap_err();
        assert!(matches!(err, SchemaError::Invalid(_)), "{err:?}");
        let err =
            Schema::input(r#"{"type":"object","properties":{"x":{"$ref":"file:///etc/passwd"}}}"#)
                .unwrap_err();
        assert!(matches!(err, SchemaError::Invalid(_)), "{err:?}");
    }

    #[test]
    fn lists_every_violation_with_its_path() {
        let schema = Schema::input(
            r#"{"type":"object","properties":{
                "quantity":{"type":"integer","maximum":99},
                "size":{"enum":["small","large"]}
            },"required":["quantity","size","item"]}"#,
        )
        .unwrap();
        let problems = schema.problems(&json!({"quantity": 120, "size": "huge"}));
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(
            problems
                .iter()
                .any(|p| p == "/quantity: 120 is greater than the maximum of 99"),
            "{problems:?}"
        );
        assert!(
            problems.iter().any(|p| p.starts_with("/size: ")),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p == "/item: required property is missing"),
            "{problems:?}"
        );
    }

    #[test]
    fn an_unexpected_key_is_named_by_its_path_with_the_closest_allowed_key() {
        let schema = Schema::input(
            r##"{"type":"object","properties":{
                "expression":{"type":"string"},
                "point":{"$ref":"#/$defs/Point"}
            },"additionalProperties":false,
            "$defs":{"Point":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}},
                "additionalProperties":false}}}"##,
        )
        .unwrap();
        let mut problems =
            schema.problems(&json!({"expresion": "1+1", "point": {"x": 1, "zz": 2}}));
        problems.sort();
        assert_eq!(
            problems,
            [
                "/expresion: unexpected property; did you mean \"expression\"?",
                "/point/zz: unexpected property (allowed: \"x\", \"y\")",
            ],
            "{problems:?}"
        );
    }

    #[test]
    fn type_errors_name_the_types_in_words() {
        let schema = Schema::input(
            r#"{"type":"object","properties":{
                "n":{"type":["null","integer"]},
                "s":{"type":"string"}
            }}"#,
        )
        .unwrap();
        let problems = schema.problems(&json!({"n": "x", "s": 42}));
        assert_eq!(
            problems,
            [
                "/n: \"x\" is not an integer or null",
                "/s: 42 is not a string"
            ],
            "{problems:?}"
        );
    }

    #[test]
    fn coerces_obvious_slips_only() {
        let schema = Schema::input(
            r##"{"type":"object","properties":{
                "n":{"type":"integer"},
                "x":{"type":["number","null"]},
                "b":{"type":"boolean"},
                "s":{"type":"string"},
                "either":{"type":["string","integer"]},
                "nested":{"$ref":"#/$defs/Nested"},
                "list":{"type":"array","items":{"type":"integer"}}
            },"$defs":{"Nested":{"type":"object","properties":{"m":{"type":"integer"}}}}}"##,
        )
        .unwrap();
        let mut args = json!({
            "n": "42", "x": "2.5", "b": "true", "s": "7", "either": "8",
            "nested": {"m": " 9 "}, "list": ["1", "two"]
        });
        schema.coerce(&mut args);
        assert_eq!(
            args,
            json!({
                "n": 42, "x": 2.5, "b": true, "s": "7", "either": "8",
                "nested": {"m": 9}, "list": [1, "two"]
            })
        );
        let mut bad = json!({"n": "forty-two", "b": "yes"});
        schema.coerce(&mut bad);
        assert_eq!(bad, json!({"n": "forty-two", "b": "yes"}));
    }
}
