//! TOML errors in a user's words: the key a wrong value belongs to, and the
//! type it should have had in plain terms instead of Rust's (`u64`).

/// The dotted key (`limits.fuel`) whose value starts at byte `offset` of
/// `text`: the key before `=` on its line, under the last `[table]` header
/// above it. `None` when the line is not a plain `key = value` (inside an
/// inline table, say), rather than a guess.
pub(super) fn key_at(text: &str, offset: usize) -> Option<String> {
    let before = text.get(..offset)?;
    let (above, line) = before.rsplit_once('\n').unwrap_or(("", before));
    let key = line.trim_end().strip_suffix('=')?.trim();
    if key.is_empty() || key.contains(['{', '[', ',', '=']) {
        return None;
    }
    let table = above.lines().rev().find_map(|line| {
        let line = line.trim();
        let header = line
            .strip_prefix("[[")
            .and_then(|l| l.split_once("]]"))
            .or_else(|| line.strip_prefix('[').and_then(|l| l.split_once(']')))?;
        Some(header.0.trim().to_owned())
    });
    Some(match table {
        Some(table) => format!("{table}.{key}"),
        None => key.to_owned(),
    })
}

/// `message` with Rust's type names (`expected u64`) in plain words.
pub(super) fn plain_types(message: &str) -> String {
    const EXPECTED: &str = "expected ";
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(EXPECTED) {
        let (head, tail) = rest.split_at(at + EXPECTED.len());
        out.push_str(head);
        let end = tail
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(tail.len());
        let (word, after) = tail.split_at(end);
        out.push_str(plain(word).unwrap_or(word));
        rest = after;
    }
    out.push_str(rest);
    out
}

/// A Rust type's name in plain words.
fn plain(rust: &str) -> Option<&'static str> {
    Some(match rust {
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number ≥ 0",
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number",
        "f32" | "f64" => "a number",
        "bool" => "true or false",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::{key_at, plain_types};

    #[test]
    fn a_values_key_is_found_under_its_table() {
        let text = "plugins = 1\n[limits]\nfuel = \"x\"\n";
        let at = |needle: &str| text.find(needle).unwrap();
        assert_eq!(key_at(text, at("1")).as_deref(), Some("plugins"));
        assert_eq!(key_at(text, at("\"x\"")).as_deref(), Some("limits.fuel"));
        assert_eq!(key_at("a = { b = 1 }", 9), None);
    }

    #[test]
    fn rust_type_names_become_words() {
        assert_eq!(
            plain_types("invalid value: integer `-1`, expected u64"),
            "invalid value: integer `-1`, expected a whole number ≥ 0"
        );
        assert_eq!(
            plain_types("invalid type: string \"x\", expected u32"),
            "invalid type: string \"x\", expected a whole number ≥ 0"
        );
        assert_eq!(plain_types("expected u64s"), "expected u64s");
    }
}
