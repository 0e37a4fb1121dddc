//! `regex_find` and `regex_replace`.

use regex::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Error;

/// How large a compiled pattern may grow, so a pathological pattern fails with
/// a clear error instead of exhausting the plugin's memory.
const PATTERN_SIZE_LIMIT: usize = 8 << 20;

/// Default for `max_matches`.
const DEFAULT_MAX_MATCHES: u32 = 100;

/// Finds the matches of a regular expression (Rust `regex` syntax: no
/// look-around or backreferences) in a text. Returns each match with its byte
/// offsets, 1-based line number and capture groups. Inline flags work:
/// `(?i)` case-insensitive, `(?m)` `^`/`$` at line ends, `(?s)` `.` matches `\n`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegexFindArgs {
    /// The regular expression.
    pub pattern: String,
    /// The text to search.
    pub text: String,
    /// Return at most this many matches (default 100).
    #[schemars(range(min = 1, max = 10000))]
    pub max_matches: Option<u32>,
    /// Match letters regardless of case (default false).
    #[serde(default)]
    pub case_insensitive: bool,
}

/// Replaces the matches of a regular expression in a text. The replacement may
/// refer to capture groups: `$1`, `${1}`, `$name`, `${name}`; `$$` is a literal
/// `$`. Write `${1}x` rather than `$1x` when a letter, digit or `_` follows.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegexReplaceArgs {
    /// The regular expression.
    pub pattern: String,
    /// The replacement, with `$1` / `${name}` group references.
    pub replacement: String,
    /// The text to rewrite.
    pub text: String,
    /// Replace every match (true, the default) or only the first (false).
    #[serde(default = "yes")]
    pub all: bool,
    /// Match letters regardless of case (default false).
    #[serde(default)]
    pub case_insensitive: bool,
}

fn yes() -> bool {
    true
}

/// The matches found by `regex_find`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Found {
    /// How many matches are returned.
    pub count: usize,
    /// True when there are more matches than `max_matches`.
    pub truncated: bool,
    /// The matches, in order.
    pub matches: Vec<Match>,
}

/// One match.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Match {
    /// The matched text.
    pub text: String,
    /// Byte offset of the match's start in the text.
    pub start: usize,
    /// Byte offset just past the match's end.
    pub end: usize,
    /// 1-based line of the match's start.
    pub line: usize,
    /// The capture groups 1, 2, ...; `null` for a group that did not take part.
    pub groups: Vec<Option<Group>>,
}

/// One capture group of a match.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Group {
    /// The group's number (1-based).
    pub index: usize,
    /// The group's name, for `(?P<name>...)` / `(?<name>...)` groups.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The captured text.
    pub text: String,
    /// Byte offset of the capture's start.
    pub start: usize,
    /// Byte offset just past the capture's end.
    pub end: usize,
}

/// The result of `regex_replace`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Replaced {
    /// The rewritten text.
    pub text: String,
    /// How many matches were replaced.
    pub replacements: usize,
}

fn compile(pattern: &str, case_insensitive: bool) -> Result<Regex, Error> {
    RegexBuilder::new(pattern)
        .case_insensitive(case_insensitive)
        .size_limit(PATTERN_SIZE_LIMIT)
        .build()
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(limit) => Error::InvalidArguments(format!(
                "pattern compiles to more than {limit} bytes; simplify it (smaller repetition counts, fewer Unicode classes)"
            )),
            e => Error::InvalidArguments(format!("invalid regex pattern: {e}")),
        })
}

/// Runs `regex_find`.
pub fn find(args: &RegexFindArgs) -> Result<Found, Error> {
    let max = args.max_matches.unwrap_or(DEFAULT_MAX_MATCHES);
    if max == 0 {
        return Err(Error::InvalidArguments(
            "max_matches must be at least 1".into(),
        ));
    }
    let max = max as usize;
    let re = compile(&args.pattern, args.case_insensitive)?;
    let names: Vec<Option<&str>> = re.capture_names().collect();
    let text = args.text.as_str();

    let mut matches = Vec::new();
    let mut truncated = false;
    // Line counting is incremental: matches come in order.
    let (mut line, mut counted_to) = (1, 0);
    for caps in re.captures_iter(text) {
        if matches.len() == max {
            truncated = true;
            break;
        }
        let Some(whole) = caps.get(0) else { continue };
        line += text[counted_to..whole.start()].matches('\n').count();
        counted_to = whole.start();
        let groups = (1..caps.len())
            .map(|index| {
                caps.get(index).map(|g| Group {
                    index,
                    name: names.get(index).copied().flatten().map(str::to_owned),
                    text: g.as_str().to_owned(),
                    start: g.start(),
                    end: g.end(),
                })
            })
            .collect();
        matches.push(Match {
            text: whole.as_str().to_owned(),
            start: whole.start(),
            end: whole.end(),
            line,
            groups,
        });
    }
    Ok(Found {
        count: matches.len(),
        truncated,
        matches,
    })
}

/// Runs `regex_replace`.
pub fn replace(args: &RegexReplaceArgs) -> Result<Replaced, Error> {
    let re = compile(&args.pattern, args.case_insensitive)?;
    check_replacement(&re, &args.replacement)?;
    let text = args.text.as_str();
    let mut out = String::with_capacity(text.len());
    let (mut last, mut replacements) = (0, 0);
    for caps in re.captures_iter(text) {
        let Some(whole) = caps.get(0) else { continue };
        out.push_str(&text[last..whole.start()]);
        caps.expand(&args.replacement, &mut out);
        last = whole.end();
        replacements += 1;
        if !args.all {
            break;
        }
    }
    out.push_str(&text[last..]);
    Ok(Replaced {
        text: out,
        replacements,
    })
}

/// Rejects a replacement that refers to a group the pattern does not have
/// (the `regex` crate would silently substitute an empty string).
fn check_replacement(re: &Regex, replacement: &str) -> Result<(), Error> {
    for reference in group_references(replacement) {
        let known = match reference.parse::<usize>() {
            Ok(index) => index < re.captures_len(),
            Err(_) => re.capture_names().flatten().any(|n| n == reference),
        };
        if !known {
            let named: Vec<&str> = re.capture_names().flatten().collect();
            let mut msg = format!(
                "replacement refers to group `{reference}`, which the pattern does not define; it has groups 0..={}",
                re.captures_len() - 1
            );
            if !named.is_empty() {
                msg.push_str(&format!(" and named groups {}", named.join(", ")));
            }
            let digits = reference.chars().take_while(char::is_ascii_digit).count();
            if digits > 0 && digits < reference.len() {
                msg.push_str(&format!(
                    "; to put text right after group {}, write ${{{}}}{}",
                    &reference[..digits],
                    &reference[..digits],
                    &reference[digits..]
                ));
            }
            msg.push_str("; write $$ for a literal $");
            return Err(Error::InvalidArguments(msg));
        }
    }
    Ok(())
}

/// The group references of a replacement string, with the `regex` crate's
/// rules: `$$` is an escape, `${...}` takes anything up to `}`, `$name` takes
/// the longest run of `[_0-9A-Za-z]`. A `$` that starts neither is literal.
fn group_references(replacement: &str) -> Vec<&str> {
    let mut refs = Vec::new();
    let mut rest = replacement;
    while let Some(at) = rest.find('$') {
        rest = &rest[at + 1..];
        if let Some(after) = rest.strip_prefix('$') {
            rest = after;
        } else if let Some(braced) = rest.strip_prefix('{') {
            if let Some(close) = braced.find('}') {
                if close > 0 {
                    refs.push(&braced[..close]);
                }
                rest = &braced[close + 1..];
            }
        } else {
            let len = rest
                .find(|c: char| !(c == '_' || c.is_ascii_alphanumeric()))
                .unwrap_or(rest.len());
            if len > 0 {
                refs.push(&rest[..len]);
            }
            rest = &rest[len..];
        }
    }
    refs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find_args(pattern: &str, text: &str) -> RegexFindArgs {
        RegexFindArgs {
            pattern: pattern.into(),
            text: text.into(),
            max_matches: None,
            case_insensitive: false,
        }
    }

    fn replace_args(pattern: &str, replacement: &str, text: &str) -> RegexReplaceArgs {
        RegexReplaceArgs {
            pattern: pattern.into(),
            replacement: replacement.into(),
            text: text.into(),
            all: true,
            case_insensitive: false,
        }
    }

    #[test]
    fn finds_matches_with_offsets_lines_and_groups() {
        let found = find(&find_args(r"(?<key>\w+)=(\d+)?", "a=1 é=\nzz=42")).unwrap();
        assert_eq!(found.count, 3);
        assert!(!found.truncated);
        let m = &found.matches[0];
        assert_eq!((m.text.as_str(), m.start, m.end, m.line), ("a=1", 0, 3, 1));
        let g = m.groups[0].as_ref().unwrap();
        assert_eq!(
            (g.index, g.name.as_deref(), g.text.as_str()),
            (1, Some("key"), "a")
        );
        assert_eq!(m.groups[1].as_ref().unwrap().text, "1");
        // "é" is two bytes; the optional second group did not take part.
        let m = &found.matches[1];
        assert_eq!((m.start, m.end, m.line), (4, 7, 1));
        assert!(m.groups[1].is_none());
        let m = &found.matches[2];
        assert_eq!((m.text.as_str(), m.start, m.line), ("zz=42", 8, 2));
    }

    #[test]
    fn max_matches_truncates() {
        let mut args = find_args(r"\d", "1 2 3 4");
        args.max_matches = Some(2);
        let found = find(&args).unwrap();
        assert_eq!(found.count, 2);
        assert!(found.truncated);
        args.max_matches = Some(4);
        assert!(!find(&args).unwrap().truncated);
    }

    #[test]
    fn case_insensitive_flag() {
        let mut args = find_args("hello", "Hello HELLO");
        assert_eq!(find(&args).unwrap().count, 0);
        args.case_insensitive = true;
        assert_eq!(find(&args).unwrap().count, 2);
    }

    #[test]
    fn invalid_regex_is_invalid_arguments() {
        let err = find(&find_args("(unclosed", "x")).unwrap_err();
        let Error::InvalidArguments(msg) = err else {
            panic!("wrong kind: {err:?}")
        };
        assert!(msg.starts_with("invalid regex pattern"), "{msg}");
        assert!(msg.contains("unclosed group"), "{msg}");
        // Look-around is not supported by the engine: a clear error, not a panic.
        assert!(find(&find_args("a(?=b)", "ab")).is_err());
    }

    #[test]
    fn huge_pattern_is_rejected() {
        let err = find(&find_args(r"\w{1000}\w{1000}\w{1000}", "x")).unwrap_err();
        assert!(matches!(err, Error::InvalidArguments(m) if m.contains("simplify")));
    }

    #[test]
    fn replaces_all_or_first_with_groups() {
        let mut args = replace_args(r"(\w+)@(\w+)", "$2 at ${1}_x", "ann@home bob@work");
        let out = replace(&args).unwrap();
        assert_eq!(out.text, "home at ann_x work at bob_x");
        assert_eq!(out.replacements, 2);
        args.all = false;
        let out = replace(&args).unwrap();
        assert_eq!(out.text, "home at ann_x bob@work");
        assert_eq!(out.replacements, 1);
    }

    #[test]
    fn replacement_with_named_groups_and_escapes() {
        let args = replace_args(r"(?<n>\d+)", "$$${n}", "cost 5 and 10");
        let out = replace(&args).unwrap();
        assert_eq!(out.text, "cost $5 and $10");
    }

    #[test]
    fn no_match_leaves_text() {
        let out = replace(&replace_args("z", "y", "abc")).unwrap();
        assert_eq!((out.text.as_str(), out.replacements), ("abc", 0));
    }

    #[test]
    fn unknown_group_reference_is_rejected_with_a_hint() {
        let err = replace(&replace_args(r"(\w)", "$1x", "a")).unwrap_err();
        let Error::InvalidArguments(msg) = err else {
            panic!("wrong kind")
        };
        assert!(msg.contains("`1x`"), "{msg}");
        assert!(msg.contains("${1}x"), "{msg}");
        let err = replace(&replace_args(r"(\w)", "$2", "a")).unwrap_err();
        assert!(matches!(err, Error::InvalidArguments(m) if m.contains("0..=1")));
        assert!(replace(&replace_args(r"(\w)", "${nope}", "a")).is_err());
    }

    #[test]
    fn group_reference_parsing() {
        assert_eq!(
            group_references("$1 ${a b} $$x $name-$ ${}"),
            vec!["1", "a b", "name"]
        );
        assert_eq!(group_references("cost: $"), Vec::<&str>::new());
    }
}
