//! Text tools for agents: `word_count`, `regex_find`, `regex_replace` and the
//! streaming `split_lines`; and the prompt `summarize` ([`summarize`]), whose
//! `style` completes from paragraph, bullet and tldr.

use serde_json::Value;
use toolhost_guest::{Chunks, Context, Part, StreamingTool, Tool, ToolError, ToolHints, chunks};

pub mod count;
pub mod lines;
pub mod regex_tools;
pub mod summarize;

use count::{Counts, WordCountArgs};
use lines::{Lines, SplitLinesArgs};
use regex_tools::{Found, RegexFindArgs, RegexReplaceArgs, Replaced};

/// A tool failure, before it becomes a `ToolError`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The arguments are wrong; the message says how to fix them.
    InvalidArguments(String),
    /// The tool ran and failed.
    Failed(String),
}

impl From<Error> for ToolError {
    fn from(err: Error) -> Self {
        match err {
            Error::InvalidArguments(m) => ToolError::invalid_arguments(m),
            Error::Failed(m) => ToolError::failed(m),
        }
    }
}

/// `word_count`.
pub struct WordCount;

impl Tool for WordCount {
    type Args = WordCountArgs;
    type Output = Counts;
    const NAME: &'static str = "word_count";
    const HINTS: ToolHints = ToolHints::NONE
        .read_only(true)
        .idempotent(true)
        .open_world(false);

    fn call(args: WordCountArgs, _cx: &Context) -> Result<Counts, ToolError> {
        Ok(count::count(&args.text))
    }

    fn output_schema() -> Option<Value> {
        Some(toolhost_guest::schema_for::<Counts>())
    }
}

/// `regex_find`.
pub struct RegexFind;

impl Tool for RegexFind {
    type Args = RegexFindArgs;
    type Output = Found;
    const NAME: &'static str = "regex_find";
    const HINTS: ToolHints = ToolHints::NONE
        .read_only(true)
        .idempotent(true)
        .open_world(false);

    fn call(args: RegexFindArgs, _cx: &Context) -> Result<Found, ToolError> {
        Ok(regex_tools::find(&args)?)
    }

    fn output_schema() -> Option<Value> {
        Some(toolhost_guest::schema_for::<Found>())
    }
}

/// `regex_replace`.
pub struct RegexReplace;

impl Tool for RegexReplace {
    type Args = RegexReplaceArgs;
    type Output = Replaced;
    const NAME: &'static str = "regex_replace";
    const HINTS: ToolHints = ToolHints::NONE
        .read_only(true)
        .idempotent(true)
        .open_world(false);

    fn call(args: RegexReplaceArgs, _cx: &Context) -> Result<Replaced, ToolError> {
        Ok(regex_tools::replace(&args)?)
    }

    fn output_schema() -> Option<Value> {
        Some(toolhost_guest::schema_for::<Replaced>())
    }
}

/// `split_lines`, a streaming tool.
pub struct SplitLines;

impl StreamingTool for SplitLines {
    type Args = SplitLinesArgs;
    const NAME: &'static str = "split_lines";
    const HINTS: ToolHints = ToolHints::NONE
        .read_only(true)
        .idempotent(true)
        .open_world(false);

    fn stream(args: SplitLinesArgs, _cx: &Context) -> Result<Chunks, ToolError> {
        if args.start_line == Some(0) {
            return Err(ToolError::invalid_arguments(
                "start_line is 1-based: use 1 for the first line",
            ));
        }
        if args.max_lines == Some(0) {
            return Err(ToolError::invalid_arguments(
                "max_lines must be at least 1; leave it out for all lines",
            ));
        }
        Ok(chunks(Lines::new(args).map(Part::text)))
    }
}

toolhost_guest::export_tools! {
    tools: [WordCount, RegexFind, RegexReplace],
    streams: [SplitLines],
    catalog: summarize::catalog,
}

#[cfg(test)]
mod tests {
    use toolhost_guest::Declaration;

    use super::*;

    #[test]
    fn declarations() {
        let decls = [
            Declaration::of_tool::<WordCount>(),
            Declaration::of_tool::<RegexFind>(),
            Declaration::of_tool::<RegexReplace>(),
            Declaration::of_streaming_tool::<SplitLines>(),
        ];
        for d in &decls {
            assert!(d.description.len() > 40, "{}: {}", d.name, d.description);
            assert_eq!(d.input_schema["type"], "object", "{}", d.name);
            assert_eq!(d.input_schema["additionalProperties"], false, "{}", d.name);
            assert!(!d.long_running);
        }
        assert!(decls[3].streaming);
        assert_eq!(
            decls[1].input_schema["required"],
            serde_json::json!(["pattern", "text"])
        );
        let max = &decls[1].input_schema["properties"]["max_matches"];
        assert_eq!(max["maximum"], 10000);
        assert_eq!(
            decls[2].input_schema["required"],
            serde_json::json!(["pattern", "replacement", "text"])
        );
        assert!(decls[1].output_schema.is_some());
    }

    #[test]
    fn stream_rejects_zero_start() {
        let args = SplitLinesArgs {
            text: "a".into(),
            numbered: false,
            skip_blank: false,
            start_line: Some(0),
            max_lines: None,
        };
        let cx = Context::new("c", "i", "split_lines");
        assert!(matches!(
            SplitLines::stream(args, &cx),
            Err(ToolError::InvalidArguments(_))
        ));
    }
}
