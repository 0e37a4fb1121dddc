//! `split_lines`: streams a text line by line.

use schemars::JsonSchema;
use serde::Deserialize;

/// Streams a text line by line: each chunk is one line ending in `\n` (a `\r\n`
/// line break becomes `\n`), so the chunks concatenate back into the text.
/// Useful to walk a long text incrementally, numbered or from a given line.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SplitLinesArgs {
    /// The text to split.
    pub text: String,
    /// Prefix each line with its 1-based line number and a tab, like `cat -n`
    /// (default false).
    #[serde(default)]
    pub numbered: bool,
    /// Leave out lines that are empty or only whitespace (default false). Line
    /// numbers still count them.
    #[serde(default)]
    pub skip_blank: bool,
    /// Start at this 1-based line (default 1).
    #[schemars(range(min = 1))]
    pub start_line: Option<u64>,
    /// Stream at most this many lines.
    #[schemars(range(min = 1))]
    pub max_lines: Option<u64>,
}

/// The lines of an owned text, as an iterator that owns its state (a stream
/// outlives the call that starts it).
#[derive(Debug)]
pub struct Lines {
    text: String,
    /// Byte offset of the next line's start.
    pos: usize,
    /// 1-based number of the next line.
    number: u64,
    numbered: bool,
    skip_blank: bool,
    start_line: u64,
    remaining: u64,
}

impl Lines {
    /// Prepares the stream of `args`.
    pub fn new(args: SplitLinesArgs) -> Self {
        Lines {
            text: args.text,
            pos: 0,
            number: 1,
            numbered: args.numbered,
            skip_blank: args.skip_blank,
            start_line: args.start_line.unwrap_or(1).max(1),
            remaining: args.max_lines.unwrap_or(u64::MAX),
        }
    }

    /// The next raw line's number and byte range, or `None` at the end of the text.
    fn next_raw(&mut self) -> Option<(u64, usize, usize)> {
        if self.pos >= self.text.len() {
            return None;
        }
        let start = self.pos;
        let rest = &self.text[start..];
        let (len, advance) = match rest.find('\n') {
            Some(nl) => (nl, nl + 1),
            None => (rest.len(), rest.len()),
        };
        let len = if rest[..len].ends_with('\r') {
            len - 1
        } else {
            len
        };
        self.pos += advance;
        let number = self.number;
        self.number += 1;
        Some((number, start, start + len))
    }
}

impl Iterator for Lines {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        if self.remaining == 0 {
            return None;
        }
        loop {
            let (number, start, end) = self.next_raw()?;
            let line = &self.text[start..end];
            if number < self.start_line || (self.skip_blank && line.trim().is_empty()) {
                continue;
            }
            let line = if self.numbered {
                format!("{number}\t{line}\n")
            } else {
                format!("{line}\n")
            };
            self.remaining -= 1;
            return Some(line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> SplitLinesArgs {
        SplitLinesArgs {
            text: text.into(),
            numbered: false,
            skip_blank: false,
            start_line: None,
            max_lines: None,
        }
    }

    fn lines(a: SplitLinesArgs) -> Vec<String> {
        Lines::new(a).collect()
    }

    #[test]
    fn splits_on_lf_and_crlf() {
        assert_eq!(lines(args("a\r\nb\n\nc\n")), ["a\n", "b\n", "\n", "c\n"]);
        assert_eq!(lines(args("")), Vec::<String>::new());
        assert_eq!(lines(args("one")), ["one\n"]);
    }

    #[test]
    fn numbered_and_skip_blank_keep_real_numbers() {
        let mut a = args("a\n  \nb");
        a.numbered = true;
        a.skip_blank = true;
        assert_eq!(lines(a), ["1\ta\n", "3\tb\n"]);
    }

    #[test]
    fn start_and_max() {
        let mut a = args("1\n2\n3\n4\n5");
        a.start_line = Some(2);
        a.max_lines = Some(3);
        assert_eq!(lines(a), ["2\n", "3\n", "4\n"]);
        let mut a = args("1\n2");
        a.start_line = Some(9);
        assert!(lines(a).is_empty());
    }
}
