//! Guest and client text on its way into the host's log.

use std::borrow::Cow;
use std::fmt::Write as _;

/// The log target of plugin loads, reloads and removals: the CLI shows it
/// at info for `serve` and leaves it to its own output in one-shot commands.
pub(crate) const LOAD_TARGET: &str = "toolhost::load";

/// The log target of "several plugins offer this tool" (tools, prompts,
/// resources): the CLI shows it where names are the point (`serve`, `list`,
/// `status`) and not in commands that name one tool.
pub(crate) const CLASH_TARGET: &str = "toolhost::clash";

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

/// A name a plugin or a client chose (a tool's, a plugin's), as errors and
/// logs show it: every character that is not printable ASCII is escaped
/// (`echo\u{ad}` for a soft hyphen, `add\u{200b}` for a zero-width space),
/// so a name that only looks like another (invisible or look-alike
/// characters) reads as what it is. Borrows when there is nothing to escape.
pub(crate) fn escape_name(name: &str) -> Cow<'_, str> {
    if name.chars().all(|c| c == ' ' || c.is_ascii_graphic()) {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 8);
    for c in name.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == ' ' || c.is_ascii_graphic() => out.push(c),
            c => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::escape_control as escape;
    use super::escape_name;

    #[test]
    fn names_show_every_character_that_is_not_printable_ascii() {
        assert_eq!(escape_name("echo_2-x.y"), "echo_2-x.y");
        assert_eq!(escape_name("echo\u{ad}"), "echo\\u{ad}");
        assert_eq!(escape_name("a\u{200b}dd"), "a\\u{200b}dd");
        assert_eq!(escape_name("ünï\n"), "\\u{fc}n\\u{ef}\\n");
    }

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert_eq!(escape("plain text, ünïcode"), "plain text, ünïcode");
        assert_eq!(
            escape("one\n2026-11-30T00:00:00Z  INFO forged\r\t\u{1b}[31m\u{7f}"),
            "one\\n2026-11-30T00:00:00Z  INFO forged\\r\\t\\u{1b}[31m\\u{7f}"
        );
    }
}

#[cfg(test)]
mod shown_names {
    use std::path::PathBuf;

    use crate::error::{CallError, LoadError};

    /// A declared name with an invisible character is refused, and the
    /// refusal shows the character, so it does not read as `echo`.
    #[test]
    fn refusals_show_invisible_characters_in_names() {
        let refused = LoadError::InvalidTool {
            path: PathBuf::from("p.wasm"),
            tool: "echo\u{ad}".to_owned(),
            reason: "bad name".to_owned(),
        };
        assert_eq!(refused.to_string(), "p.wasm: tool `echo\\u{ad}`: bad name");
        let unknown = CallError::UnknownTool {
            tool: "add\u{200b}".to_owned(),
            available: vec!["add".to_owned()],
        };
        assert_eq!(
            unknown.to_string(),
            "no tool named `add\\u{200b}`; did you mean `add`?"
        );
    }
}
