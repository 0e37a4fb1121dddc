//! JSON arguments as wasmtime [`Val`]s, and [`Val`] results as JSON, by the
//! rules of the parent module's table (the same ones `schema` writes down).
//!
//! Arguments are checked completely before a guest runs: a value out of its
//! type's range, a case the type does not have, a key it does not know are
//! refused with the JSON pointer of the value.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Number, Value};
use wasmtime::component::Val;
use wasmtime::component::types::Type;

use super::schema::{self, pointer};

/// A value that does not fit its WIT type, and where it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {problem}", if .path.is_empty() { "the value" } else { .path.as_str() })]
pub(crate) struct ValueError {
    /// A JSON pointer into the arguments (or the result); empty for the whole.
    pub(crate) path: String,
    /// What is wrong.
    pub(crate) problem: String,
}

fn fail<T>(path: &str, problem: impl Into<String>) -> Result<T, ValueError> {
    Err(ValueError {
        path: path.to_owned(),
        problem: problem.into(),
    })
}

/// A call's arguments, one [`Val`] per parameter in order, from its JSON
/// object.
///
/// # Errors
/// The first value that does not fit, with its path.
pub(crate) fn arguments(params: &[(String, Type)], args: &Value) -> Result<Vec<Val>, ValueError> {
    let Value::Object(args) = args else {
        return fail("", "expected an object of arguments");
    };
    let fields = fields(
        params.iter().map(|(name, ty)| (name.as_str(), ty)),
        args,
        "",
        0,
    )?;
    Ok(fields.into_iter().map(|(_, val)| val).collect())
}

/// What a call returned, in JSON.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Returned {
    /// The output: structured content (an object; see `schema::wrapped`),
    /// `None` when there is none.
    Ok(Option<Value>),
    /// The `err` of a `result`: a tool error with this content, if any.
    Err(Option<Value>),
}

/// A call's result as JSON: a `result`'s `ok` or `err`, any other type's value.
///
/// # Errors
/// A value that does not fit its type, or a float with no JSON form (NaN, an
/// infinity), with its path.
pub(crate) fn returned(ty: Option<&Type>, val: Option<&Val>) -> Result<Returned, ValueError> {
    let output = |ty: &Type, val: &Val, path: &str| -> Result<Value, ValueError> {
        let json = to_json(ty, val, path, 0)?;
        Ok(if schema::wrapped(ty) {
            Value::Object(Map::from_iter([("result".to_owned(), json)]))
        } else {
            json
        })
    };
    match (ty, val) {
        (None, None) => Ok(Returned::Ok(None)),
        (Some(Type::Result(result)), Some(Val::Result(outcome))) => match outcome {
            Ok(ok) => Ok(Returned::Ok(match (result.ok(), ok) {
                (Some(ty), Some(val)) => Some(output(&ty, val, "/ok")?),
                (None, None) => None,
                _ => return fail("/ok", "the payload does not match the type"),
            })),
            Err(err) => Ok(Returned::Err(match (result.err(), err) {
                (Some(ty), Some(val)) => Some(to_json(&ty, val, "/err", 0)?),
                (None, None) => None,
                _ => return fail("/err", "the payload does not match the type"),
            })),
        },
        (Some(ty), Some(val)) => Ok(Returned::Ok(Some(output(ty, val, "")?))),
        _ => fail("", "the result does not match the function's type"),
    }
}

/// The fields of a record (or a parameter list) from a JSON object: every
/// field, no other key.
fn fields<'a>(
    types: impl Iterator<Item = (&'a str, &'a Type)>,
    object: &Map<String, Value>,
    path: &str,
    depth: usize,
) -> Result<Vec<(String, Val)>, ValueError> {
    let mut vals = Vec::new();
    let mut known = Vec::new();
    for (name, ty) in types {
        let at = pointer(path, name);
        let Some(value) = object.get(name) else {
            return fail(&at, "missing");
        };
        vals.push((name.to_owned(), from_json(ty, value, &at, depth + 1)?));
        known.push(name);
    }
    if let Some(extra) = object.keys().find(|key| !known.contains(&key.as_str())) {
        return fail(
            &pointer(path, extra),
            format!("unknown key; the keys are {}", list(&known)),
        );
    }
    Ok(vals)
}

fn list(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    quoted.join(", ")
}

/// One value of a WIT type from its JSON.
pub(super) fn from_json(
    ty: &Type,
    value: &Value,
    path: &str,
    depth: usize,
) -> Result<Val, ValueError> {
    if depth > schema::MAX_DEPTH {
        return fail(path, "nested too deep");
    }
    let expected = |what: &str| fail(path, format!("expected {what}, got {}", kind(value)));
    Ok(match ty {
        Type::Bool => match value {
            Value::Bool(b) => Val::Bool(*b),
            _ => return expected("a boolean"),
        },
        Type::U8 => Val::U8(int(value, path)?),
        Type::U16 => Val::U16(int(value, path)?),
        Type::U32 => Val::U32(int(value, path)?),
        Type::U64 => Val::U64(int(value, path)?),
        Type::S8 => Val::S8(int(value, path)?),
        Type::S16 => Val::S16(int(value, path)?),
        Type::S32 => Val::S32(int(value, path)?),
        Type::S64 => Val::S64(int(value, path)?),
        Type::Float32 => {
            let x = float(value, path)?;
            if x.abs() > f64::from(f32::MAX) {
                return fail(path, format!("{x} is out of range for an f32"));
            }
            #[expect(
                clippy::cast_possible_truncation,
                reason = "in f32's range: the nearest f32 is the value"
            )]
            Val::Float32(x as f32)
        }
        Type::Float64 => Val::Float64(float(value, path)?),
        Type::Char => {
            let Value::String(text) = value else {
                return expected("a one-character string");
            };
            let mut chars = text.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Val::Char(c),
                _ => {
                    return fail(
                        path,
                        "expected exactly one character (one Unicode code point)",
                    );
                }
            }
        }
        Type::String => match value {
            Value::String(text) => Val::String(text.clone()),
            _ => return expected("a string"),
        },
        Type::List(list) if list.ty() == Type::U8 => {
            let Value::String(text) = value else {
                return expected("a base64 string");
            };
            match BASE64.decode(text) {
                Ok(bytes) => Val::List(bytes.into_iter().map(Val::U8).collect()),
                Err(e) => {
                    return fail(path, format!("not base64 (standard alphabet, padded): {e}"));
                }
            }
        }
        Type::List(list) => {
            let Value::Array(items) = value else {
                return expected("an array");
            };
            let ty = list.ty();
            Val::List(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| {
                        from_json(&ty, item, &pointer(path, &i.to_string()), depth + 1)
                    })
                    .collect::<Result<_, _>>()?,
            )
        }
        Type::Record(record) => {
            let Value::Object(object) = value else {
                return expected("an object");
            };
            let types: Vec<(&str, Type)> = record.fields().map(|f| (f.name, f.ty)).collect();
            Val::Record(fields(
                types.iter().map(|(n, t)| (*n, t)),
                object,
                path,
                depth,
            )?)
        }
        Type::Tuple(tuple) => {
            let Value::Array(items) = value else {
                return expected("an array");
            };
            if items.len() != tuple.types().len() {
                return fail(
                    path,
                    format!(
                        "expected {} items, got {}",
                        tuple.types().len(),
                        items.len()
                    ),
                );
            }
            Val::Tuple(
                tuple
                    .types()
                    .zip(items)
                    .enumerate()
                    .map(|(i, (ty, item))| {
                        from_json(&ty, item, &pointer(path, &i.to_string()), depth + 1)
                    })
                    .collect::<Result<_, _>>()?,
            )
        }
        Type::Variant(variant) => {
            let cases: Vec<(&str, Option<Type>)> =
                variant.cases().map(|c| (c.name, c.ty)).collect();
            let (name, payload) = case(&cases, value, path, depth)?;
            Val::Variant(name, payload)
        }
        Type::Result(result) => {
            let cases = [("ok", result.ok()), ("err", result.err())];
            let (name, payload) = case(&cases, value, path, depth)?;
            Val::Result(if name == "ok" {
                Ok(payload)
            } else {
                Err(payload)
            })
        }
        Type::Enum(cases) => {
            let Value::String(name) = value else {
                return expected("a string");
            };
            let names: Vec<&str> = cases.names().collect();
            if !names.contains(&name.as_str()) {
                return fail(path, format!("`{name}` is not one of {}", list(&names)));
            }
            Val::Enum(name.clone())
        }
        Type::Flags(flags) => {
            let Value::Array(items) = value else {
                return expected("an array of flag names");
            };
            let names: Vec<&str> = flags.names().collect();
            let mut set: Vec<String> = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let at = pointer(path, &i.to_string());
                // A set: a name given twice counts once (no `uniqueItems` in
                // the schema, which Gemini's converters drop).
                match item.as_str() {
                    Some(name) if set.iter().any(|s| s == name) => {}
                    Some(name) if names.contains(&name) => set.push(name.to_owned()),
                    _ => return fail(&at, format!("expected one of {}", list(&names))),
                }
            }
            Val::Flags(set)
        }
        Type::Option(option) => {
            let ty = option.ty();
            match value {
                Value::Null => Val::Option(None),
                _ if schema::nullable(&ty) => {
                    let Some(inner) = value.as_object().and_then(|o| some(o)) else {
                        return fail(path, "expected null or {\"some\": value}");
                    };
                    let at = pointer(path, "some");
                    Val::Option(Some(Box::new(from_json(&ty, inner, &at, depth + 1)?)))
                }
                _ => Val::Option(Some(Box::new(from_json(&ty, value, path, depth + 1)?))),
            }
        }
        // Refused when the tool was made (`schema::of`).
        _ => return fail(path, "this type has no JSON form"),
    })
}

/// `{"some": value}`'s value, and nothing else.
fn some(object: &Map<String, Value>) -> Option<&Value> {
    match object.len() {
        1 => object.get("some"),
        _ => None,
    }
}

/// A variant's case and payload from its JSON: a bare case's name, or
/// `{"case": payload}`.
fn case(
    cases: &[(&str, Option<Type>)],
    value: &Value,
    path: &str,
    depth: usize,
) -> Result<(String, Option<Box<Val>>), ValueError> {
    let names: Vec<&str> = cases.iter().map(|(name, _)| *name).collect();
    let unknown =
        |name: &str, at: &str| fail(at, format!("`{name}` is not one of {}", list(&names)));
    match value {
        Value::String(name) => match cases.iter().find(|(n, _)| n == name) {
            Some((_, None)) => Ok((name.clone(), None)),
            Some((_, Some(_))) => fail(
                path,
                format!("`{name}` takes a value: write {{\"{name}\": …}}"),
            ),
            None => unknown(name, path),
        },
        Value::Object(object) if object.len() == 1 => {
            let Some((name, payload)) = object.iter().next() else {
                return fail(path, "expected one case");
            };
            let at = pointer(path, name);
            match cases.iter().find(|(n, _)| n == name) {
                Some((_, Some(ty))) => Ok((
                    name.clone(),
                    Some(Box::new(from_json(ty, payload, &at, depth + 1)?)),
                )),
                Some((_, None)) => fail(&at, format!("`{name}` takes no value: write \"{name}\"")),
                None => unknown(name, &at),
            }
        }
        _ => fail(
            path,
            format!(
                "expected one of {} as a string, or {{\"case\": value}}",
                list(&names)
            ),
        ),
    }
}

/// An integer of type `T` from a JSON number, exactly or not at all.
fn int<T: TryFrom<i64> + TryFrom<u64> + Bounded>(
    value: &Value,
    path: &str,
) -> Result<T, ValueError> {
    let Value::Number(n) = value else {
        return fail(path, format!("expected an integer, got {}", kind(value)));
    };
    let out_of_range = || {
        fail(
            path,
            format!("{n} is out of range: {} to {}", T::MIN, T::MAX),
        )
    };
    if let Some(i) = n.as_i64() {
        return T::try_from(i).or_else(|_| out_of_range());
    }
    if let Some(u) = n.as_u64() {
        return T::try_from(u).or_else(|_| out_of_range());
    }
    // Written with a fraction or an exponent: an integer only if the double
    // is one and every integer near it is a double too.
    const SAFE: f64 = 9_007_199_254_740_991.0;
    match n.as_f64() {
        Some(x) if x.fract() == 0.0 && x.abs() <= SAFE => {
            #[expect(clippy::cast_possible_truncation, reason = "an integer within ±2^53")]
            let i = x as i64;
            T::try_from(i).or_else(|_| out_of_range())
        }
        Some(x) if x.fract() == 0.0 => fail(
            path,
            format!(
                "{n} is past ±2^53 with a fraction or an exponent, so not exact; write its digits"
            ),
        ),
        _ => fail(path, format!("{n} is not an integer")),
    }
}

/// The range of an integer type, for messages.
trait Bounded {
    const MIN: i128;
    const MAX: i128;
}

macro_rules! bounded {
    ($($t:ty),*) => {$(
        impl Bounded for $t {
            const MIN: i128 = <$t>::MIN as i128;
            const MAX: i128 = <$t>::MAX as i128;
        }
    )*};
}
bounded!(u8, u16, u32, u64, i8, i16, i32, i64);

fn float(value: &Value, path: &str) -> Result<f64, ValueError> {
    match value.as_f64() {
        Some(x) if value.is_number() => Ok(x),
        _ => fail(path, format!("expected a number, got {}", kind(value))),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// One value of a WIT type as JSON (a result's, from the guest).
pub(super) fn to_json(ty: &Type, val: &Val, path: &str, depth: usize) -> Result<Value, ValueError> {
    if depth > schema::MAX_DEPTH {
        return fail(path, "nested too deep");
    }
    let inner =
        |ty: &Type, val: &Val, step: &str| to_json(ty, val, &pointer(path, step), depth + 1);
    Ok(match (ty, val) {
        (Type::Bool, Val::Bool(b)) => Value::Bool(*b),
        (Type::U8, Val::U8(n)) => (*n).into(),
        (Type::U16, Val::U16(n)) => (*n).into(),
        (Type::U32, Val::U32(n)) => (*n).into(),
        (Type::U64, Val::U64(n)) => (*n).into(),
        (Type::S8, Val::S8(n)) => (*n).into(),
        (Type::S16, Val::S16(n)) => (*n).into(),
        (Type::S32, Val::S32(n)) => (*n).into(),
        (Type::S64, Val::S64(n)) => (*n).into(),
        (Type::Float32, Val::Float32(x)) => finite(f64::from(*x), path)?,
        (Type::Float64, Val::Float64(x)) => finite(*x, path)?,
        (Type::Char, Val::Char(c)) => Value::String(c.to_string()),
        (Type::String, Val::String(s)) => Value::String(s.clone()),
        (Type::List(list), Val::List(items)) if list.ty() == Type::U8 => {
            let mut bytes = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Val::U8(b) => bytes.push(*b),
                    _ => return fail(path, "a list<u8> holds another type"),
                }
            }
            Value::String(BASE64.encode(bytes))
        }
        (Type::List(list), Val::List(items)) => {
            let ty = list.ty();
            Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| inner(&ty, item, &i.to_string()))
                    .collect::<Result<_, _>>()?,
            )
        }
        (Type::Record(record), Val::Record(vals)) => {
            let mut object = Map::new();
            for (field, (name, val)) in record.fields().zip(vals) {
                if field.name != name {
                    return fail(
                        path,
                        format!("field `{name}` where the type has `{}`", field.name),
                    );
                }
                object.insert(name.clone(), inner(&field.ty, val, name)?);
            }
            Value::Object(object)
        }
        (Type::Tuple(tuple), Val::Tuple(vals)) if tuple.types().len() == vals.len() => {
            Value::Array(
                tuple
                    .types()
                    .zip(vals)
                    .enumerate()
                    .map(|(i, (ty, val))| inner(&ty, val, &i.to_string()))
                    .collect::<Result<_, _>>()?,
            )
        }
        (Type::Variant(variant), Val::Variant(name, payload)) => {
            let ty = variant.cases().find(|c| c.name == name).map(|c| c.ty);
            match ty {
                Some(ty) => case_json(name, ty.as_ref(), payload.as_deref(), path, depth)?,
                None => return fail(path, format!("no case `{name}`")),
            }
        }
        (Type::Result(result), Val::Result(outcome)) => match outcome {
            Ok(payload) => case_json("ok", result.ok().as_ref(), payload.as_deref(), path, depth)?,
            Err(payload) => case_json(
                "err",
                result.err().as_ref(),
                payload.as_deref(),
                path,
                depth,
            )?,
        },
        (Type::Enum(_), Val::Enum(name)) => Value::String(name.clone()),
        (Type::Flags(_), Val::Flags(names)) => {
            Value::Array(names.iter().cloned().map(Value::String).collect())
        }
        (Type::Option(_), Val::Option(None)) => Value::Null,
        (Type::Option(option), Val::Option(Some(val))) => {
            let ty = option.ty();
            if schema::nullable(&ty) {
                Value::Object(Map::from_iter([(
                    "some".to_owned(),
                    inner(&ty, val, "some")?,
                )]))
            } else {
                to_json(&ty, val, path, depth + 1)?
            }
        }
        _ => return fail(path, "the value does not match its type"),
    })
}

fn case_json(
    name: &str,
    ty: Option<&Type>,
    payload: Option<&Val>,
    path: &str,
    depth: usize,
) -> Result<Value, ValueError> {
    match (ty, payload) {
        (None, None) => Ok(Value::String(name.to_owned())),
        (Some(ty), Some(val)) => Ok(Value::Object(Map::from_iter([(
            name.to_owned(),
            to_json(ty, val, &pointer(path, name), depth + 1)?,
        )]))),
        _ => fail(
            path,
            format!("case `{name}`'s payload does not match its type"),
        ),
    }
}

fn finite(x: f64, path: &str) -> Result<Value, ValueError> {
    match Number::from_f64(x) {
        Some(n) => Ok(Value::Number(n)),
        None => fail(path, format!("{x} has no JSON form")),
    }
}
