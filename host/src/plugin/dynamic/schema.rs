//! WIT types as JSON Schema (draft 2020-12), in the part of it that OpenAI's
//! strict mode and Gemini both take (`schema::dialect`). The mapping is the
//! table in the parent module's docs; `value` reads and writes JSON by the
//! same rules.

use serde_json::{Map, Value, json};
use wasmtime::component::types::Type;

use super::docs::TypeDoc;

/// How deep WIT types may nest in a tool's argument or result. OpenAI's strict
/// mode follows a schema 100 levels deep, and a WIT level takes up to three.
pub(super) const MAX_DEPTH: usize = 32;

/// The pattern of a base64 string (RFC 4648 §4: standard alphabet, padded).
pub(super) const BASE64_PATTERN: &str =
    "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$";

/// A type with no JSON form, where it sits (a JSON pointer, `*` for any list
/// item) and what it is.
#[derive(Debug)]
pub(super) struct Unsupported {
    pub(super) path: String,
    pub(super) what: &'static str,
}

/// The WIT docs of the named types a schema may meet: the types the
/// component's interfaces export, by wasmtime's identity of each, with their
/// docs. A record's fields, a variant's cases with a payload and the type
/// itself get theirs as `description`; the cases of an enum, a flags type or a
/// variant's bare cases, which have no schema node of their own, are listed in
/// the description of the node that holds them.
#[derive(Default)]
pub(super) struct Named<'a> {
    types: Vec<(Type, &'a TypeDoc)>,
}

impl<'a> Named<'a> {
    pub(super) fn new(types: Vec<(Type, &'a TypeDoc)>) -> Self {
        Self { types }
    }

    fn doc(&self, ty: &Type) -> Option<&'a TypeDoc> {
        self.types
            .iter()
            .find(|(t, _)| t == ty)
            .map(|(_, doc)| *doc)
    }
}

/// The input schema of a function's parameters: a closed object, one
/// required property per parameter.
pub(super) fn input(params: &[(String, Type)], named: &Named<'_>) -> Result<Value, Unsupported> {
    let mut properties = Map::new();
    for (name, ty) in params {
        properties.insert(name.clone(), of(ty, &pointer("", name), 0, named)?);
    }
    Ok(closed_object(properties))
}

/// Whether a result of this type is sent as `{"result": value}`: MCP's
/// structured content is an object, and only a record's JSON always is (a
/// variant's sometimes is, so the type decides, not the value).
pub(super) fn wrapped(ty: &Type) -> bool {
    !matches!(ty, Type::Record(_))
}

/// The output schema of a result's JSON as structured content (see [`wrapped`]).
pub(super) fn output(ty: &Type, path: &str, named: &Named<'_>) -> Result<Value, Unsupported> {
    let schema = of(ty, path, 0, named)?;
    Ok(if wrapped(ty) {
        closed_object(Map::from_iter([("result".to_owned(), schema)]))
    } else {
        schema
    })
}

/// The schema of one WIT type's JSON; `path` is where its value sits.
pub(super) fn of(
    ty: &Type,
    path: &str,
    depth: usize,
    named: &Named<'_>,
) -> Result<Value, Unsupported> {
    if depth > MAX_DEPTH {
        return Err(Unsupported {
            path: path.to_owned(),
            what: "a type nested too deep (more than 32 levels)",
        });
    }
    let inner = |ty: &Type, at: &str| of(ty, &pointer(path, at), depth + 1, named);
    let doc = named.doc(ty);
    let item = |name: &str| doc.and_then(|d| d.item(name));
    let mut schema = match ty {
        Type::Bool => json!({ "type": "boolean" }),
        Type::U8 => integer(u8::MIN.into(), u8::MAX.into()),
        Type::U16 => integer(u16::MIN.into(), u16::MAX.into()),
        Type::U32 => integer(u32::MIN.into(), u32::MAX.into()),
        Type::U64 => json!({ "type": "integer", "minimum": 0, "maximum": u64::MAX }),
        Type::S8 => integer(i8::MIN.into(), i8::MAX.into()),
        Type::S16 => integer(i16::MIN.into(), i16::MAX.into()),
        Type::S32 => integer(i32::MIN.into(), i32::MAX.into()),
        Type::S64 => integer(i64::MIN, i64::MAX),
        Type::Float32 => json!({
            "type": "number",
            "minimum": f64::from(f32::MIN),
            "maximum": f64::from(f32::MAX),
        }),
        Type::Float64 => json!({ "type": "number" }),
        Type::Char => json!({
            "type": "string",
            "minLength": 1,
            "maxLength": 1,
            "description": "one Unicode code point",
        }),
        Type::String => json!({ "type": "string" }),
        Type::List(list) if list.ty() == Type::U8 => json!({
            "type": "string",
            "description": "bytes, base64-encoded (RFC 4648 §4: standard alphabet, padded)",
            "pattern": BASE64_PATTERN,
        }),
        Type::List(list) => json!({ "type": "array", "items": inner(&list.ty(), "*")? }),
        Type::Record(record) => {
            let mut properties = Map::new();
            for field in record.fields() {
                let mut schema = inner(&field.ty, field.name)?;
                if let Some(text) = item(field.name) {
                    describe(&mut schema, text);
                }
                properties.insert(field.name.to_owned(), schema);
            }
            closed_object(properties)
        }
        Type::Tuple(tuple) => {
            let items = tuple
                .types()
                .enumerate()
                .map(|(i, ty)| inner(&ty, &i.to_string()))
                .collect::<Result<Vec<_>, _>>()?;
            tuple_schema(items)
        }
        Type::Variant(variant) => cases(
            variant
                .cases()
                .map(|case| {
                    Ok(Case {
                        name: case.name.to_owned(),
                        payload: case.ty.map(|ty| inner(&ty, case.name)).transpose()?,
                        doc: item(case.name),
                    })
                })
                .collect::<Result<_, Unsupported>>()?,
        ),
        Type::Result(result) => cases(vec![
            Case {
                name: "ok".to_owned(),
                payload: result.ok().map(|ty| inner(&ty, "ok")).transpose()?,
                doc: None,
            },
            Case {
                name: "err".to_owned(),
                payload: result.err().map(|ty| inner(&ty, "err")).transpose()?,
                doc: None,
            },
        ]),
        Type::Enum(names) => {
            let mut schema = json!({ "type": "string", "enum": names.names().collect::<Vec<_>>() });
            if let Some(list) = listed(names.names().map(|n| (n, item(n)))) {
                describe(&mut schema, &list);
            }
            schema
        }
        Type::Flags(flags) => {
            let mut items = json!({ "type": "string", "enum": flags.names().collect::<Vec<_>>() });
            if let Some(list) = listed(flags.names().map(|n| (n, item(n)))) {
                describe(&mut items, &list);
            }
            json!({
                "type": "array",
                "items": items,
                "maxItems": flags.names().len(),
            })
        }
        Type::Option(option) => {
            let ty = option.ty();
            if nullable(&ty) {
                // `null` is the inner option's own none: the outer some is
                // spelled out so the two stay apart.
                let some =
                    closed_object(Map::from_iter([("some".to_owned(), inner(&ty, "some")?)]));
                or_null(some)
            } else {
                or_null(inner(&ty, "")?)
            }
        }
        Type::Own(_) | Type::Borrow(_) => return unsupported(path, "a resource handle"),
        Type::Future(_) => return unsupported(path, "a future"),
        Type::Stream(_) => return unsupported(path, "a stream"),
        Type::ErrorContext => return unsupported(path, "an error context"),
        // Proposals wasmtime validates only when enabled, which the engine
        // does not do: such a component does not compile.
        Type::Map(_) => return unsupported(path, "a map"),
        Type::FixedLengthList(_) => return unsupported(path, "a fixed-length list"),
    };
    if let Some(text) = doc.and_then(TypeDoc::own) {
        describe(&mut schema, text);
    }
    Ok(schema)
}

/// `text` as the schema's description, before the one it has (which says
/// how the value is written: a `char`'s, bytes').
fn describe(schema: &mut Value, text: &str) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    let text = match map.get("description").and_then(Value::as_str) {
        Some(before) => format!("{text} ({before})"),
        None => text.to_owned(),
    };
    map.insert("description".to_owned(), Value::String(text));
}

/// The documented ones of some cases, as one description:
/// "`read`: may read; `write`: may write".
fn listed<'a>(items: impl Iterator<Item = (&'a str, Option<&'a str>)>) -> Option<String> {
    let lines: Vec<String> = items
        .filter_map(|(name, doc)| Some(format!("`{name}`: {}", doc?)))
        .collect();
    (!lines.is_empty()).then(|| lines.join("; "))
}

/// Whether a type's JSON may be `null`: only an option's is.
pub(super) fn nullable(ty: &Type) -> bool {
    matches!(ty, Type::Option(_))
}

fn unsupported(path: &str, what: &'static str) -> Result<Value, Unsupported> {
    Err(Unsupported {
        path: path.to_owned(),
        what,
    })
}

/// `path` extended by one step, escaped as RFC 6901 says (an empty step is
/// the same place: an option's value sits where the option does).
pub(super) fn pointer(path: &str, step: &str) -> String {
    if step.is_empty() {
        return path.to_owned();
    }
    format!("{path}/{}", step.replace('~', "~0").replace('/', "~1"))
}

fn integer(min: i64, max: i64) -> Value {
    json!({ "type": "integer", "minimum": min, "maximum": max })
}

/// An object with exactly these properties, each required: what strict
/// mode wants, and a WIT record or parameter list is.
fn closed_object(properties: Map<String, Value>) -> Value {
    let required: Vec<&String> = properties.keys().collect();
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// A tuple: an array of exactly its length. Neither dialect takes
/// `prefixItems` (Gemini refuses the schema), so each position's type is
/// exact only when all are the same; otherwise items may be any of them, and
/// the argument's conversion refuses one in the wrong place, with its path.
fn tuple_schema(items: Vec<Value>) -> Value {
    let len = items.len();
    let mut distinct: Vec<Value> = Vec::with_capacity(len);
    for item in items {
        if !distinct.contains(&item) {
            distinct.push(item);
        }
    }
    let items = match distinct.len() {
        0 => json!({ "type": "null" }),
        1 => distinct.remove(0),
        _ => json!({ "anyOf": distinct }),
    };
    json!({ "type": "array", "items": items, "minItems": len, "maxItems": len })
}

/// One case of a variant (or a result), with its doc comment.
struct Case<'a> {
    name: String,
    payload: Option<Value>,
    doc: Option<&'a str>,
}

/// A variant (or a result): a case without a payload is its name as a string,
/// a case with one is `{"case": payload}`. The shape serde calls externally
/// tagged, as an `anyOf` of closed objects strict mode and Gemini take.
fn cases(cases: Vec<Case<'_>>) -> Value {
    let bare: Vec<&Case<'_>> = cases.iter().filter(|c| c.payload.is_none()).collect();
    let mut branches = Vec::new();
    if !bare.is_empty() {
        let mut branch =
            json!({ "type": "string", "enum": bare.iter().map(|c| &c.name).collect::<Vec<_>>() });
        if let Some(list) = listed(bare.iter().map(|c| (c.name.as_str(), c.doc))) {
            describe(&mut branch, &list);
        }
        branches.push(branch);
    }
    for case in &cases {
        if let Some(payload) = &case.payload {
            let mut branch = closed_object(Map::from_iter([(case.name.clone(), payload.clone())]));
            if let Some(doc) = case.doc {
                describe(&mut branch, doc);
            }
            branches.push(branch);
        }
    }
    if branches.len() == 1 {
        branches.remove(0)
    } else {
        json!({ "anyOf": branches })
    }
}

/// The schema that also takes `null`: in `type` (and `enum`) where it can
/// be said there, which every dialect reads as nullable; an `anyOf`'s first
/// branch so; else (no `type`) as a branch.
fn or_null(mut schema: Value) -> Value {
    let Some(map) = schema.as_object_mut() else {
        return schema;
    };
    // A variant (or a result): its first branch made nullable in place. A
    // `{"type": "null"}` branch of its own would reach Gemini's converters
    // as a typeless `{"nullable": true}`, losing the null.
    if let Some(Value::Array(branches)) = map.get_mut("anyOf")
        && let Some(first) = branches.first_mut()
    {
        *first = or_null(first.take());
        return schema;
    }
    if let Some(Value::String(kind)) = map.get("type") {
        let kind = kind.clone();
        map.insert("type".to_owned(), json!([kind, "null"]));
        if let Some(Value::Array(values)) = map.get_mut("enum") {
            values.push(Value::Null);
        }
        return schema;
    }
    json!({ "anyOf": [schema, { "type": "null" }] })
}
