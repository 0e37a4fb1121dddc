//! `word_count`: words, lines, characters and bytes of a text.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Counts the words, lines, characters and bytes of a text. Words are runs of
/// non-whitespace characters; lines are counted like `str::lines` (a final line
/// break does not start a new, empty line).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WordCountArgs {
    /// The text to count.
    pub text: String,
}

/// The counts of a text.
#[derive(Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Counts {
    /// Runs of non-whitespace characters.
    pub words: usize,
    /// Lines (`\n` or `\r\n` separated; a trailing line break adds no line).
    pub lines: usize,
    /// Lines that are empty or only whitespace.
    pub blank_lines: usize,
    /// Unicode scalar values (what most languages call characters).
    pub characters: usize,
    /// Characters that are not whitespace.
    pub characters_excluding_whitespace: usize,
    /// Bytes of the UTF-8 encoding.
    pub bytes: usize,
}

/// Counts `text`.
pub fn count(text: &str) -> Counts {
    let (mut lines, mut blank_lines) = (0, 0);
    for line in text.lines() {
        lines += 1;
        if line.trim().is_empty() {
            blank_lines += 1;
        }
    }
    let characters = text.chars().count();
    let whitespace = text.chars().filter(|c| c.is_whitespace()).count();
    Counts {
        words: text.split_whitespace().count(),
        lines,
        blank_lines,
        characters,
        characters_excluding_whitespace: characters - whitespace,
        bytes: text.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_text() {
        let c = count("");
        assert_eq!((c.words, c.lines, c.characters, c.bytes), (0, 0, 0, 0));
    }

    #[test]
    fn counts_words_lines_chars_bytes() {
        let c = count("Hello, wörld!\n\n  two  words \r\nlast");
        assert_eq!(c.words, 5);
        assert_eq!(c.lines, 4);
        assert_eq!(c.blank_lines, 1);
        assert_eq!(c.characters, 34);
        assert_eq!(c.bytes, 35);
        assert_eq!(c.characters_excluding_whitespace, 24);
    }

    #[test]
    fn trailing_newline_adds_no_line() {
        assert_eq!(count("a\nb\n").lines, 2);
        assert_eq!(count("a\nb").lines, 2);
        assert_eq!(count("\n").lines, 1);
    }
}
