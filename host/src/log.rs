//! Guest and client text on its way into the host's log.

use std::borrow::Cow;
use std::fmt::Write as _;

/// The log target of plugin loads, reloads and removals: the CLI shows it
/// at info for `serve` and leaves it to its own output in one-shot commands.
pub(crate) const LOAD_TARGET: &str = "toolhost::load";

/// `text` with every control character (newline, carriage return, escape,
/// ...) written as a Rust-style escape (`\n`, `\r`, `\u{1b}`), so guest text
/// stays on its own log line and cannot forge another or drive a terminal.
/// Borrows when there is nothing to escape.
///
/// The host escapes what guests log and print; an embedder that logs other
/// plugin- or client-chosen text (error messages, names) can do the same.
///
/// ```
/// assert_eq!(toolhost::escape_control("a\nb"), "a\\nb");
/// ```
pub fn escape_control(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::escape_control as escape;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert_eq!(escape("plain text, ünïcode"), "plain text, ünïcode");
        assert_eq!(
            escape("one\n2026-11-30T00:00:00Z  INFO forged\r\t\u{1b}[31m\u{7f}"),
            "one\\n2026-11-30T00:00:00Z  INFO forged\\r\\t\\u{1b}[31m\\u{7f}"
        );
    }
}
