//! Argument schemas every model provider takes: derived with [`schemars`], then
//! made portable.
//!
//! A schema schemars writes is valid JSON Schema, but model providers accept a
//! narrower dialect: OpenAI's strict mode refuses a bare `$ref` in an `anyOf`
//! and makes every property required; Gemini's conversion drops a `$ref`'s
//! sibling description and default, and a wrapper's description. So an
//! argument schema is rewritten into the shape both take without loss:
//!
//! - documented enum variants (`oneOf` of `const`s) become a plain `enum`, their
//!   docs listed in the description;
//! - `$ref`s are inlined (recursive types keep theirs), the field's description
//!   first, then the type's;
//! - `Option<T>` of a scalar or an enum is `{"type": [T, "null"]}` rather than
//!   `anyOf: [T, null]`;
//! - **optional means nullable**: every property that is not required also
//!   accepts `null`, and a `null` is taken as absent (the default applies). The
//!   default, dropped by some converters, is also stated in the description;
//! - an object without properties is closed (`"additionalProperties": false`).

use schemars::JsonSchema;
use serde_json::{Map, Value};

/// The draft 2020-12 JSON Schema of a type, for [`Tool::output_schema`](crate::Tool::output_schema):
/// `fn output_schema() -> Option<Value> { Some(toolhost_guest::schema_for::<Counts>()) }`.
///
/// Only the `format`s JSON Schema defines are kept (`date-time`, `email`,
/// `uri`, `uuid`, …): schemars' own (`uint32`, `double`, …) are dropped, and
/// unsigned integers keep `"minimum": 0`.
pub fn schema_for<T: JsonSchema>() -> Value {
    let mut schema = root_schema_for::<T>();
    if let Some(map) = schema.as_object_mut() {
        map.remove("$schema");
    }
    schema
}

/// A draft 2020-12 schema of `T` with only the `format`s the standard defines
/// (`date-time`, `email`, `uri`, `uuid`, …).
///
/// schemars also writes its own (`uint32`, `int64`, `double`, …) to say which
/// Rust type a number has; JSON Schema does not define them, validators ignore
/// them, and MCP clients warn about each one on every `tools/list`. The range
/// they stand for stays where it matters: unsigned integers keep
/// `"minimum": 0`.
fn root_schema_for<T: JsonSchema>() -> Value {
    schemars::generate::SchemaSettings::draft2020_12()
        .with_transform(schemars::transform::RestrictFormats::default())
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// The input schema of an argument type, made portable for a declaration.
pub(crate) struct ArgsSchema {
    schema: Map<String, Value>,
    description: Option<String>,
    /// `()` and unit structs: schemars says `"type": "null"`, the model sends `{}`.
    unit: bool,
}

impl ArgsSchema {
    pub(crate) fn of<A: JsonSchema>() -> Self {
        let schema = root_schema_for::<A>();
        let mut schema = match schema {
            Value::Object(map) => map,
            // `true`/`false` schemas (e.g. `serde_json::Value`): any object.
            _ => Map::new(),
        };
        schema.remove("$schema");
        schema.remove("title");
        let description = match schema.remove("description") {
            Some(Value::String(text)) => Some(text),
            _ => None,
        };
        let unit = schema.get("type").and_then(Value::as_str) == Some("null");
        if unit {
            schema.clear();
        }
        match schema.get("type") {
            Some(_) if !unit => {}
            // Unions (`oneOf` of tagged variants) and unit: arguments are always an object.
            _ => {
                schema.insert("type".to_owned(), "object".into());
            }
        }
        if unit {
            // Closed: OpenAI's strict mode refuses an object without properties
            // that is not, and there is nothing to pass anyway.
            schema.insert("properties".to_owned(), Value::Object(Map::new()));
            schema.insert("additionalProperties".to_owned(), false.into());
        }
        make_portable(&mut schema);
        Self {
            schema,
            description,
            unit,
        }
    }

    pub(crate) fn into_parts(self) -> (Value, Option<String>) {
        (Value::Object(self.schema), self.description)
    }

    pub(crate) fn is_unit(&self) -> bool {
        self.unit
    }

    /// Removes, at every level the schema describes, the `null`s of properties
    /// that are not required: the schema says they may be `null`, and `null`
    /// means absent, so `#[serde(default)]` applies. Returns whether any was
    /// removed.
    pub(crate) fn drop_null_optionals(self, arguments: &mut Value) -> bool {
        let root = Value::Object(self.schema);
        drop_nulls(&root, &root, arguments, 0)
    }
}

/// How deep [`drop_nulls`] follows a schema: recursive types end somewhere.
const MAX_DEPTH: usize = 64;

fn drop_nulls(root: &Value, schema: &Value, value: &mut Value, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let schema = resolve(root, schema);
    let mut changed = false;
    // Every branch of a union may describe the value (`Option<Struct>`).
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(branches)) = schema.get(key) {
            for branch in branches {
                changed |= drop_nulls(root, branch, value, depth + 1);
            }
        }
    }
    match value {
        Value::Object(map) => {
            let Some(Value::Object(properties)) = schema.get("properties") else {
                return changed;
            };
            let required = |key: &str| {
                schema
                    .get("required")
                    .and_then(Value::as_array)
                    .is_some_and(|names| names.iter().any(|name| name == key))
            };
            let before = map.len();
            map.retain(|key, item| {
                !(item.is_null() && properties.contains_key(key) && !required(key))
            });
            changed |= map.len() != before;
            for (key, item) in map.iter_mut() {
                if let Some(property) = properties.get(key) {
                    changed |= drop_nulls(root, property, item, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    changed |= drop_nulls(root, item_schema, item, depth + 1);
                }
            }
        }
        _ => {}
    }
    changed
}

/// The schema a local `$ref` points at, or the schema itself.
fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => reference
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer))
            .unwrap_or(schema),
        None => schema,
    }
}

/// The rewrites the module doc lists, in order.
fn make_portable(schema: &mut Map<String, Value>) {
    for value in schema.values_mut() {
        fold_const_unions(value);
    }
    inline_refs(schema);
    for value in schema.values_mut() {
        fold_nullable_unions(value);
    }
    nullable_optionals(schema);
}

/// Rewrites every `oneOf` of plain `const`s as an `enum`, everywhere in a schema.
///
/// schemars writes an enum whose variants have doc comments as `oneOf` of
/// `{"const": …, "description": …}`. Models handle a plain `enum` better, and a
/// validator's message for it ("is not one of …") is one a model can act on, so
/// the variant docs move into the description as a list instead.
fn fold_const_unions(value: &mut Value) {
    bottom_up(value, &mut fold_const_union);
}

/// Calls `rewrite` on every object in `value`, children before parents.
fn bottom_up(value: &mut Value, rewrite: &mut impl FnMut(&mut Map<String, Value>)) {
    match value {
        Value::Object(map) => {
            for child in map.values_mut() {
                bottom_up(child, rewrite);
            }
            rewrite(map);
        }
        Value::Array(items) => {
            for item in items {
                bottom_up(item, rewrite);
            }
        }
        _ => {}
    }
}

fn fold_const_union(map: &mut Map<String, Value>) {
    let Some(Value::Array(branches)) = map.get("oneOf") else {
        return;
    };
    let mut values = Vec::new();
    let mut types = Vec::new();
    let mut docs = Vec::new();
    for branch in branches {
        let Value::Object(branch) = branch else {
            return;
        };
        let plain = branch
            .keys()
            .all(|key| matches!(key.as_str(), "const" | "enum" | "type" | "description"));
        // Undocumented variants come grouped as one `{"enum": [...]}` branch.
        let constants = match (branch.get("const"), branch.get("enum")) {
            (Some(constant), None) => std::slice::from_ref(constant),
            (None, Some(Value::Array(constants))) => constants.as_slice(),
            _ => return,
        };
        if !plain {
            return;
        }
        values.extend(constants.iter().cloned());
        types.push(branch.get("type").cloned());
        if let (Some(doc), [constant]) =
            (branch.get("description").and_then(Value::as_str), constants)
        {
            let name = constant
                .as_str()
                .map_or_else(|| constant.to_string(), str::to_owned);
            docs.push(format!("- `{name}`: {doc}"));
        }
    }
    map.remove("oneOf");
    map.insert("enum".to_owned(), Value::Array(values));
    if let Some(Some(first)) = types.first()
        && types.iter().all(|t| t.as_ref() == Some(first))
    {
        map.entry("type").or_insert_with(|| first.clone());
    }
    if !docs.is_empty() {
        let docs = docs.join("\n");
        let description = match map.get("description").and_then(Value::as_str) {
            Some(text) => format!("{text}\n\n{docs}"),
            None => docs,
        };
        map.insert("description".to_owned(), description.into());
    }
}

/// Replaces every `$ref` to `#/$defs/…` by the definition, except where a type
/// refers to itself: those definitions stay in `$defs`.
fn inline_refs(schema: &mut Map<String, Value>) {
    let Some(Value::Object(defs)) = schema.remove("$defs") else {
        return;
    };
    let mut kept = Map::new();
    for value in schema.values_mut() {
        inline_in(value, &defs, &mut Vec::new(), &mut kept);
    }
    if !kept.is_empty() {
        schema.insert("$defs".to_owned(), Value::Object(kept));
    }
}

fn inline_in(
    value: &mut Value,
    defs: &Map<String, Value>,
    inlining: &mut Vec<String>,
    kept: &mut Map<String, Value>,
) {
    let map = match value {
        Value::Object(map) => map,
        Value::Array(items) => {
            for item in items {
                inline_in(item, defs, inlining, kept);
            }
            return;
        }
        _ => return,
    };
    // The siblings first: the definition, once merged, is already done.
    for (key, child) in map.iter_mut() {
        if key != "$ref" {
            inline_in(child, defs, inlining, kept);
        }
    }
    let Some(name) = map
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|reference| reference.strip_prefix("#/$defs/"))
        .map(str::to_owned)
    else {
        return;
    };
    let Some(definition) = defs.get(&name) else {
        return;
    };
    if inlining.contains(&name) {
        // Recursive: the reference stays, and so does its definition.
        if !kept.contains_key(&name) {
            kept.insert(name.clone(), Value::Null);
            let mut definition = definition.clone();
            inline_in(&mut definition, defs, &mut vec![name.clone()], kept);
            kept.insert(name, definition);
        }
        return;
    }
    let mut definition = definition.clone();
    inlining.push(name);
    inline_in(&mut definition, defs, inlining, kept);
    inlining.pop();
    map.remove("$ref");
    if let Value::Object(definition) = definition {
        merge_into(map, definition);
    }
}

/// Merges `definition` into `map`: `map`'s keys win, descriptions are joined
/// (the field's first, then the type's).
fn merge_into(map: &mut Map<String, Value>, definition: Map<String, Value>) {
    for (key, value) in definition {
        if key == "description"
            && let (Some(Value::String(own)), Value::String(theirs)) = (map.get(&key), &value)
        {
            let joined = join_descriptions(own, theirs);
            map.insert(key, joined.into());
            continue;
        }
        map.entry(key).or_insert(value);
    }
}

fn join_descriptions(first: &str, second: &str) -> String {
    match (first.trim(), second.trim()) {
        ("", other) | (other, "") => other.to_owned(),
        (a, b) if a == b => a.to_owned(),
        (a, b) => format!("{a}\n\n{b}"),
    }
}

/// Rewrites `anyOf: [X, {"type": "null"}]` everywhere: as X with `"null"` in
/// its type (and enum) when X is a scalar or an enum; otherwise the wrapper's
/// description moves into X, where converters that unwrap the union keep it.
fn fold_nullable_unions(value: &mut Value) {
    bottom_up(value, &mut fold_nullable_union);
}

fn fold_nullable_union(map: &mut Map<String, Value>) {
    let Some(Value::Array(branches)) = map.get("anyOf") else {
        return;
    };
    let is_null = |branch: &Value| branch.get("type").and_then(Value::as_str) == Some("null");
    let (Some(index), 2) = (branches.iter().position(|b| !is_null(b)), branches.len()) else {
        return;
    };
    if !branches.iter().any(is_null) {
        return;
    }
    let Some(Value::Object(inner)) = branches.get(index).cloned() else {
        return;
    };
    let scalar = match inner.get("type") {
        Some(Value::String(kind)) => kind != "object",
        None => inner.contains_key("enum") || inner.contains_key("const"),
        _ => false,
    } && !["anyOf", "oneOf", "allOf", "$ref"]
        .iter()
        .any(|key| inner.contains_key(*key));
    map.remove("anyOf");
    if scalar {
        merge_into(map, inner);
        add_null(map);
    } else {
        let mut inner = inner;
        if let Some(Value::String(own)) = map.remove("description") {
            let theirs = inner.remove("description");
            let theirs = theirs.as_ref().and_then(Value::as_str).unwrap_or("");
            inner.insert(
                "description".to_owned(),
                join_descriptions(&own, theirs).into(),
            );
        }
        map.insert(
            "anyOf".to_owned(),
            Value::Array(vec![
                Value::Object(inner),
                serde_json::json!({"type": "null"}),
            ]),
        );
    }
}

/// Makes a schema accept `null` too, in the most plain shape it can.
fn add_null(map: &mut Map<String, Value>) {
    let null = Value::String("null".to_owned());
    if let Some(constant) = map.remove("const") {
        map.insert("enum".to_owned(), Value::Array(vec![constant]));
    }
    if let Some(Value::Array(values)) = map.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    match map.get_mut("type") {
        Some(Value::String(kind)) if kind != "null" => {
            let kind = Value::String(std::mem::take(kind));
            map.insert("type".to_owned(), Value::Array(vec![kind, null]));
        }
        Some(Value::Array(kinds)) if !kinds.contains(&null) => kinds.push(null),
        Some(_) => {}
        None => {
            for key in ["anyOf", "oneOf"] {
                if let Some(Value::Array(branches)) = map.get_mut(key) {
                    if !branches.iter().any(|b| b.get("type") == Some(&null)) {
                        branches.push(serde_json::json!({"type": "null"}));
                    }
                    return;
                }
            }
            if let Some(reference) = map.remove("$ref") {
                map.insert(
                    "anyOf".to_owned(),
                    serde_json::json!([{ "$ref": reference }, { "type": "null" }]),
                );
            }
            // No type and no union: it accepts `null` already.
        }
    }
}

/// Every property that is not required accepts `null` too, in the root and in
/// every nested object; a default is also stated in its description. An object
/// without properties (`struct Args {}`) is closed: OpenAI's strict mode refuses
/// a free-form object.
fn nullable_optionals(schema: &mut Map<String, Value>) {
    let empty = schema
        .get("properties")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty);
    if schema.get("type").and_then(Value::as_str) == Some("object")
        && empty
        && !schema.contains_key("additionalProperties")
        && !schema.contains_key("patternProperties")
    {
        schema.insert("properties".to_owned(), Value::Object(Map::new()));
        schema.insert("additionalProperties".to_owned(), false.into());
    }
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            let Value::Object(property) = property else {
                continue;
            };
            // `#[serde(default)]` on an `Option` says `"default": null`, which
            // says nothing a nullable type does not, and converters drop it.
            if property.get("default") == Some(&Value::Null) {
                property.remove("default");
            }
            if !required.contains(name) {
                add_null(property);
                state_default(property);
            }
        }
    }
    for (key, value) in schema.iter_mut() {
        match (key.as_str(), value) {
            // These hold values, not schemas.
            ("enum" | "const" | "default" | "examples", _) => {}
            // These hold schemas by name.
            ("properties" | "patternProperties" | "$defs", Value::Object(named)) => {
                for schema in named.values_mut() {
                    visit_schemas(schema, &mut nullable_optionals);
                }
            }
            (_, value) => visit_schemas(value, &mut nullable_optionals),
        }
    }
}

fn visit_schemas(value: &mut Value, visit: &mut impl FnMut(&mut Map<String, Value>)) {
    match value {
        Value::Object(map) => visit(map),
        Value::Array(items) => {
            for item in items {
                visit_schemas(item, visit);
            }
        }
        _ => {}
    }
}

/// Appends "Defaults to `X`." to a description that does not mention its default.
fn state_default(property: &mut Map<String, Value>) {
    let Some(default) = property.get("default") else {
        return;
    };
    if default.is_null() {
        return;
    }
    let shown = default
        .as_str()
        .map_or_else(|| default.to_string(), str::to_owned);
    let sentence = format!("Defaults to `{shown}`.");
    let description = match property.get("description").and_then(Value::as_str) {
        Some(text) if text.to_lowercase().contains("default") => return,
        Some(text) if text.contains('\n') => format!("{text}\n\n{sentence}"),
        Some(text) => format!("{} {sentence}", text.trim_end()),
        None => sentence,
    };
    property.insert("description".to_owned(), description.into());
}

#[cfg(test)]
mod tests;
