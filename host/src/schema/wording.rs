//! How a schema violation is worded: one style for every problem, `PATH:
//! what is wrong`, where PATH is a JSON pointer to the value at fault (or to
//! the key that is missing or should not be there), and an unexpected key gets
//! a did-you-mean from the keys the schema allows ([`crate::suggest`]).

use jsonschema::ValidationError;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::Value;

/// The most allowed keys named after an unexpected one that is close to none
/// of them.
const MAX_KEYS_SHOWN: usize = 12;

/// The problems one validation error stands for: one per unexpected key,
/// else one.
pub(super) fn problems(error: &ValidationError<'_>, schema: &Value) -> Vec<String> {
    let path = error.instance_path().to_string();
    match error.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            let allowed = allowed_keys(schema, &error.schema_path().to_string());
            unexpected
                .iter()
                .map(|key| {
                    format!(
                        "{path}/{}: unexpected property{}",
                        escape(key),
                        hint(key, &allowed)
                    )
                })
                .collect()
        }
        ValidationErrorKind::Required { property } => {
            let key = property
                .as_str()
                .map_or_else(|| property.to_string(), escape);
            vec![format!("{path}/{key}: required property is missing")]
        }
        ValidationErrorKind::Type { kind } => {
            let names: Vec<String> = match kind {
                TypeKind::Single(one) => vec![one.to_string()],
                TypeKind::Multiple(set) => set.iter().map(|t| t.to_string()).collect(),
            };
            vec![located(
                &path,
                &format!("{} is not {}", error.instance(), types(names)),
            )]
        }
        _ => vec![located(&path, &error.to_string())],
    }
}

/// `path: message`, or the message alone at the root (whose path is empty).
fn located(path: &str, message: &str) -> String {
    if path.is_empty() {
        message.to_owned()
    } else {
        format!("{path}: {message}")
    }
}

/// A key as one JSON pointer segment (RFC 6901).
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The keys of `properties` beside the `additionalProperties` (or
/// `unevaluatedProperties`) keyword at `keyword` (a JSON pointer into the
/// schema, `$ref`s already followed).
fn allowed_keys<'a>(schema: &'a Value, keyword: &str) -> Vec<&'a str> {
    let Some((object, _)) = keyword.rsplit_once('/') else {
        return Vec::new();
    };
    schema
        .pointer(object)
        .and_then(|object| object.get("properties"))
        .and_then(Value::as_object)
        .map(|properties| properties.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

/// What follows "unexpected property": the allowed key it is a slip of, else
/// the allowed keys (when few enough to list).
fn hint(key: &str, allowed: &[&str]) -> String {
    if let Some(closest) = crate::suggest::closest(key, allowed.iter().copied()) {
        return format!("; did you mean \"{closest}\"?");
    }
    match allowed {
        [] => String::new(),
        keys if keys.len() <= MAX_KEYS_SHOWN => {
            let keys: Vec<String> = keys.iter().map(|k| format!("\"{k}\"")).collect();
            format!(" (allowed: {})", keys.join(", "))
        }
        _ => String::new(),
    }
}

/// `a string`, `an integer or null`, `an array, an object or null`: `null`
/// last, every other type with its article.
fn types(mut names: Vec<String>) -> String {
    names.sort_by_key(|name| name == "null");
    let worded: Vec<String> = names
        .iter()
        .map(|name| match name.as_str() {
            "null" => "null".to_owned(),
            "integer" | "array" | "object" => format!("an {name}"),
            other => format!("a {other}"),
        })
        .collect();
    match worded.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => "of the allowed types".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::types;

    #[test]
    fn type_lists_read_as_english() {
        let names = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect();
        assert_eq!(types(names(&["string"])), "a string");
        assert_eq!(types(names(&["null", "integer"])), "an integer or null");
        assert_eq!(
            types(names(&["array", "null", "object"])),
            "an array, an object or null"
        );
    }
}
