//! SHA-256 of canonical JSON: what a sealed state binds (an approval the
//! arguments it was asked about, a tool's question the message and form the
//! user answered), independent of the order a client or guest wrote object
//! keys in.

use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::hex::hex;

/// SHA-256 (hex) of the canonical JSON of `value`: object keys sorted at every
/// level, so the digest does not depend on the order they were sent in.
pub(crate) fn json_digest(value: &Value) -> String {
    let mut hasher = Sha256::new();
    canonical(value, &mut hasher);
    hex(&hasher.finalize())
}

fn canonical(value: &Value, out: &mut Sha256) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.update(b"{");
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.update(b",");
                }
                out.update(Value::String(key.clone()).to_string().as_bytes());
                out.update(b":");
                canonical(&map[key], out);
            }
            out.update(b"}");
        }
        Value::Array(items) => {
            out.update(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.update(b",");
                }
                canonical(item, out);
            }
            out.update(b"]");
        }
        scalar => out.update(scalar.to_string().as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn key_order_does_not_matter_and_values_do() {
        let one = json!({"b": 1, "a": [true, {"y": null, "x": "s"}]});
        let two = json!({"a": [true, {"x": "s", "y": null}], "b": 1});
        assert_eq!(json_digest(&one), json_digest(&two));
        assert_ne!(
            json_digest(&one),
            json_digest(&json!({"a": [true], "b": 1}))
        );
        // A string that looks like an object is not that object.
        assert_ne!(
            json_digest(&json!({"a": 1})),
            json_digest(&json!("{\"a\":1}"))
        );
    }
}
