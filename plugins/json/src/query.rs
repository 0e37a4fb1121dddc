//! `json_query`: select values of a JSON document by JSON pointer or dotted path.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Default for `max_results`.
const DEFAULT_MAX_RESULTS: u32 = 100;

/// Selects values from a JSON document. `path` is either a JSON pointer
/// (RFC 6901, starts with `/`: `/items/0/name`) or a dotted path:
/// `items[0].name`, `items.0.name`, `items[-1]` (last), `items[*].name` or
/// `items.*.name` (every element or value), `["key.with.dots"]`; a leading `$`
/// is allowed. An empty path selects the whole document.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryArgs {
    /// The JSON document, as JSON text (`{"items": [1, 2]}`). Text that is not
    /// JSON and does not start with `{` or `[` is taken as one JSON string.
    pub document: String,
    /// The JSON pointer or dotted path to select.
    pub path: String,
    /// Return at most this many results (default 100).
    #[schemars(range(min = 1, max = 10000))]
    pub max_results: Option<u32>,
}

/// What a query selected.
#[derive(Debug, Serialize, JsonSchema)]
pub struct QueryResult {
    /// The path as given.
    pub path: String,
    /// Whether anything was selected.
    pub found: bool,
    /// The value, when the path has no wildcard and selected it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// How many results are returned.
    pub count: usize,
    /// True when more values matched than `max_results`.
    pub truncated: bool,
    /// Every selected value with its JSON pointer.
    pub results: Vec<Selected>,
    /// Why nothing was found: where the path stopped matching.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One selected value.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Selected {
    /// The value's JSON pointer in the document.
    pub pointer: String,
    /// The value.
    pub value: Value,
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// An object key (or an array index written as a key).
    Key(String),
    /// An array index; negative counts from the end.
    Index(i64),
    /// Every element of an array, every value of an object.
    All,
}

/// Why a query is malformed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryError(pub String);

/// Runs `json_query`.
pub fn query(args: QueryArgs) -> Result<QueryResult, QueryError> {
    let max = args.max_results.unwrap_or(DEFAULT_MAX_RESULTS).max(1) as usize;
    let document = match serde_json::from_str(&args.document) {
        Ok(document) => document,
        Err(e) if args.document.trim_start().starts_with(['{', '[']) => {
            return Err(QueryError(format!(
                "document looks like JSON text but does not parse: {e}"
            )));
        }
        Err(_) => Value::String(args.document),
    };
    let steps = parse_path(&args.path)?;
    let wildcard = steps.contains(&Step::All);

    let mut current: Vec<(String, &Value)> = vec![(String::new(), &document)];
    let mut note = None;
    for step in &steps {
        let mut next = Vec::new();
        for (pointer, value) in &current {
            select(step, pointer, value, &mut next, &mut note);
        }
        current = next;
        if current.is_empty() {
            break;
        }
    }
    let found = !current.is_empty();
    let truncated = current.len() > max;
    let results: Vec<Selected> = current
        .into_iter()
        .take(max)
        .map(|(pointer, value)| Selected {
            pointer,
            value: value.clone(),
        })
        .collect();
    Ok(QueryResult {
        path: args.path,
        found,
        value: if wildcard {
            None
        } else {
            results.first().map(|s| s.value.clone())
        },
        count: results.len(),
        truncated,
        results,
        note: if found { None } else { note },
    })
}

fn select<'v>(
    step: &Step,
    pointer: &str,
    value: &'v Value,
    out: &mut Vec<(String, &'v Value)>,
    note: &mut Option<String>,
) {
    let at = if pointer.is_empty() {
        "the document root"
    } else {
        pointer
    };
    let mut miss = |msg: String| {
        note.get_or_insert(msg);
    };
    match (step, value) {
        (Step::All, Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                out.push((format!("{pointer}/{i}"), item));
            }
        }
        (Step::All, Value::Object(map)) => {
            for (key, item) in map {
                out.push((format!("{pointer}/{}", escape(key)), item));
            }
        }
        (Step::Key(key), Value::Object(map)) => match map.get(key) {
            Some(item) => out.push((format!("{pointer}/{}", escape(key)), item)),
            None => {
                let mut keys: Vec<&str> = map.keys().map(String::as_str).take(20).collect();
                if map.len() > 20 {
                    keys.push("...");
                }
                miss(format!(
                    "no key `{key}` at {at}; its keys are: {}",
                    if keys.is_empty() {
                        "(none, the object is empty)".to_owned()
                    } else {
                        keys.join(", ")
                    }
                ));
            }
        },
        (Step::Key(key), Value::Array(items)) => match key.parse::<i64>() {
            Ok(index) => index_into(index, pointer, at, items, out, &mut miss),
            Err(_) => miss(format!(
                "{at} is an array of {} items; select an element with [index] or [*], not the key `{key}`",
                items.len()
            )),
        },
        (Step::Index(index), Value::Array(items)) => {
            index_into(*index, pointer, at, items, out, &mut miss)
        }
        (Step::Index(index), Value::Object(map)) => match map.get(&index.to_string()) {
            Some(item) => out.push((format!("{pointer}/{index}"), item)),
            None => miss(format!(
                "{at} is an object, not an array; it has no key `{index}`"
            )),
        },
        (_, other) => miss(format!(
            "{at} is {}, which has no members to select",
            kind(other)
        )),
    }
}

fn index_into<'v>(
    index: i64,
    pointer: &str,
    at: &str,
    items: &'v [Value],
    out: &mut Vec<(String, &'v Value)>,
    miss: &mut impl FnMut(String),
) {
    let len = items.len();
    let resolved = if index < 0 {
        usize::try_from(index.unsigned_abs())
            .ok()
            .and_then(|back| len.checked_sub(back))
    } else {
        usize::try_from(index).ok().filter(|&i| i < len)
    };
    match resolved.and_then(|i| items.get(i).map(|item| (i, item))) {
        Some((i, item)) => out.push((format!("{pointer}/{i}"), item)),
        None => miss(format!(
            "index {index} is out of range at {at}: the array has {len} items (valid: 0 to {}, or -1 to -{len})",
            len.saturating_sub(1)
        )),
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

/// Escapes a key for a JSON pointer (`~` → `~0`, `/` → `~1`).
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Parses a JSON pointer or a dotted path.
fn parse_path(path: &str) -> Result<Vec<Step>, QueryError> {
    let trimmed = path.trim();
    if trimmed.is_empty() || trimmed == "$" {
        return Ok(Vec::new());
    }
    if let Some(rest) = trimmed.strip_prefix('/') {
        return Ok(rest
            .split('/')
            .map(|token| Step::Key(token.replace("~1", "/").replace("~0", "~")))
            .collect());
    }
    let chars: Vec<char> = trimmed
        .strip_prefix('$')
        .unwrap_or(trimmed)
        .chars()
        .collect();
    let err =
        |at: usize, msg: &str| QueryError(format!("path `{path}`: {msg} at character {}", at + 1));
    let mut steps = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '.' => {
                i += 1;
                if i < chars.len() && chars[i] == '[' {
                    continue;
                }
                let start = i;
                while i < chars.len() && chars[i] != '.' && chars[i] != '[' {
                    i += 1;
                }
                let key: String = chars[start..i].iter().collect();
                if key.is_empty() {
                    // A leading '.' (".a") is fine; "a..b" is not.
                    if start == 1 && steps.is_empty() {
                        continue;
                    }
                    return Err(err(start, "empty key"));
                }
                steps.push(if key == "*" {
                    Step::All
                } else {
                    Step::Key(key)
                });
            }
            '[' => {
                let close = chars[i..]
                    .iter()
                    .position(|&c| c == ']')
                    .map(|p| p + i)
                    .ok_or_else(|| err(i, "'[' without a closing ']'"))?;
                let inner: String = chars[i + 1..close].iter().collect();
                let inner = inner.trim();
                let step = if inner == "*" {
                    Step::All
                } else if inner.starts_with('"') {
                    let key: String = serde_json::from_str(inner).map_err(|_| {
                        err(i, "a quoted key must be a JSON string, like [\"a.b\"]")
                    })?;
                    Step::Key(key)
                } else if let Ok(index) = inner.parse::<i64>() {
                    Step::Index(index)
                } else {
                    return Err(err(i, "expected an index, * or a quoted key inside [ ]"));
                };
                steps.push(step);
                i = close + 1;
            }
            _ => {
                let start = i;
                while i < chars.len() && chars[i] != '.' && chars[i] != '[' {
                    i += 1;
                }
                let key: String = chars[start..i].iter().collect();
                steps.push(if key == "*" {
                    Step::All
                } else {
                    Step::Key(key)
                });
            }
        }
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn doc() -> Value {
        json!({
            "items": [
                {"name": "a", "tags": ["x"]},
                {"name": "b", "tags": []},
                {"name": "c"}
            ],
            "meta": {"count": 3, "a.b": true, "x/y": 1}
        })
    }

    fn q(path: &str) -> QueryResult {
        query(QueryArgs {
            document: doc().to_string(),
            path: path.into(),
            max_results: None,
        })
        .unwrap()
    }

    #[test]
    fn dotted_paths() {
        assert_eq!(q("items[1].name").value, Some(json!("b")));
        assert_eq!(q("items.1.name").value, Some(json!("b")));
        assert_eq!(q("$.items[-1].name").value, Some(json!("c")));
        assert_eq!(q(".meta.count").value, Some(json!(3)));
        assert_eq!(q("meta[\"a.b\"]").value, Some(json!(true)));
        let r = q("items[0].tags[0]");
        assert_eq!(r.results[0].pointer, "/items/0/tags/0");
        assert_eq!(q("").value, Some(doc()));
    }

    #[test]
    fn json_pointers() {
        assert_eq!(q("/items/0/name").value, Some(json!("a")));
        let r = q("/meta/x~1y");
        assert_eq!(r.value, Some(json!(1)));
        assert_eq!(r.results[0].pointer, "/meta/x~1y");
    }

    #[test]
    fn wildcards() {
        let r = q("items[*].name");
        assert_eq!(r.count, 3);
        assert!(r.value.is_none());
        let names: Vec<_> = r.results.iter().map(|s| s.value.clone()).collect();
        assert_eq!(names, [json!("a"), json!("b"), json!("c")]);
        // Branches without the key drop out.
        let r = q("items.*.tags[0]");
        assert_eq!(
            (r.count, r.results[0].pointer.as_str()),
            (1, "/items/0/tags/0")
        );
    }

    #[test]
    fn misses_explain_themselves() {
        let r = q("meta.cnt");
        assert!(!r.found);
        let note = r.note.unwrap();
        assert!(note.contains("no key `cnt` at /meta"), "{note}");
        assert!(note.contains("count"), "{note}");
        assert!(
            q("items[5]")
                .note
                .unwrap()
                .contains("the array has 3 items")
        );
        assert!(q("items.name").note.unwrap().contains("[index] or [*]"));
        assert!(q("meta.count.x").note.unwrap().contains("is a number"));
        assert!(q("items[-4]").note.is_some());
    }

    #[test]
    fn truncation_and_text_documents() {
        let r = query(QueryArgs {
            document: "[1, 2, 3]".into(),
            path: "[*]".into(),
            max_results: Some(2),
        })
        .unwrap();
        assert_eq!((r.count, r.truncated), (2, true));
        let err = query(QueryArgs {
            document: "{oops".into(),
            path: "a".into(),
            max_results: None,
        })
        .unwrap_err();
        assert!(err.0.contains("does not parse"));
        // Text that is not JSON is a JSON string.
        let r = query(QueryArgs {
            document: "hello".into(),
            path: "".into(),
            max_results: None,
        })
        .unwrap();
        assert_eq!(r.value, Some(json!("hello")));
    }

    #[test]
    fn malformed_paths() {
        for bad in ["items[0", "items[abc]", "a..b", "a[\"x]"] {
            let err = parse_path(bad).unwrap_err();
            assert!(err.0.starts_with(&format!("path `{bad}`")), "{}", err.0);
        }
    }
}
