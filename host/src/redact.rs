//! Secret-looking keys kept out of what is written down (audit records,
//! exported spans): one rule for both.

use serde_json::{Value, json};

/// Keys whose values an audit record or an exported span never shows
/// (matched case-insensitively, as substrings: `api_key`, `X-Auth-Token`
/// and `db_password` are covered).
pub const REDACTED_KEYS: [&str; 6] = [
    "password",
    "token",
    "secret",
    "key",
    "authorization",
    "credential",
];

/// `value` with the values of every key containing one of `keys` (lower
/// case) replaced by `"<redacted>"`, at any depth; keys compare without case.
pub(crate) fn redact_keys(value: &Value, keys: &[String]) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let lower = k.to_lowercase();
                    let secret = keys.iter().any(|r| lower.contains(r.as_str()));
                    let v = if secret {
                        json!("<redacted>")
                    } else {
                        redact_keys(v, keys)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| redact_keys(v, keys)).collect()),
        other => other.clone(),
    }
}
