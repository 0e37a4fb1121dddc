//! `toolhost list --check` and the dialect lines of `inspect`: which model
//! providers take each tool's input schema as it is, and why not.

use std::io::Write;

use anyhow::{Result, bail};
use serde_json::{Value, json};
use toolhost::schema::dialect::{self, Dialect, Severity, Verdict};

/// One tool to check: who it belongs to, its name, its input schema.
pub(super) struct Checked<'a> {
    pub(super) plugin: &'a str,
    pub(super) tool: String,
    pub(super) verdicts: Vec<Verdict>,
}

impl<'a> Checked<'a> {
    pub(super) fn new(plugin: &'a str, tool: String, input_schema: &Value) -> Self {
        Self {
            plugin,
            tool,
            verdicts: dialect::check(input_schema),
        }
    }

    fn refused(&self) -> bool {
        self.verdicts.iter().any(|v| !v.accepted)
    }
}

/// A verdict in one word or three: `ok`, `ok (2 warnings)`, `no`.
pub(super) fn word(verdict: &Verdict) -> String {
    let warnings = verdict
        .problems
        .iter()
        .filter(|p| p.severity == Severity::Warning)
        .count();
    match (verdict.accepted, warnings) {
        (false, _) => "no".to_owned(),
        (true, 0) => "ok".to_owned(),
        (true, 1) => "ok (1 warning)".to_owned(),
        (true, n) => format!("ok ({n} warnings)"),
    }
}

/// The verdicts as JSON: `{"openai-strict": {"accepted": …, "problems": […]}, …}`.
pub(super) fn to_json(verdicts: &[Verdict]) -> Value {
    let map = verdicts
        .iter()
        .map(|v| {
            (
                v.dialect.name().to_owned(),
                json!({"accepted": v.accepted, "problems": v.problems}),
            )
        })
        .collect();
    Value::Object(map)
}

/// Each problem on a line of its own, under `indent`.
pub(super) fn problems(
    out: &mut impl Write,
    indent: &str,
    tool: &str,
    verdicts: &[Verdict],
) -> Result<()> {
    for verdict in verdicts {
        for problem in &verdict.problems {
            let kind = match problem.severity {
                Severity::Error => "",
                _ => " (warning)",
            };
            let at = if problem.path.is_empty() {
                "the root".to_owned()
            } else {
                problem.path.clone()
            };
            writeln!(
                out,
                "{indent}{tool}: {}{kind}: {at}: {}",
                verdict.dialect, problem.message
            )?;
        }
    }
    Ok(())
}

/// Prints the check of every tool (a table, then the problems; or JSON), and
/// fails when any dialect refuses a tool or loses part of its schema.
pub(super) fn report(tools: &[Checked<'_>], as_json: bool) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if as_json {
        let rows: Vec<Value> = tools
            .iter()
            .map(|t| json!({"plugin": t.plugin, "tool": t.tool, "dialects": to_json(&t.verdicts)}))
            .collect();
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
    } else {
        let mut rows = vec![
            ["PLUGIN", "TOOL"]
                .into_iter()
                .map(str::to_owned)
                .chain(Dialect::ALL.iter().map(|d| d.name().to_uppercase()))
                .collect::<Vec<String>>(),
        ];
        for t in tools {
            rows.push(
                [t.plugin.to_owned(), t.tool.clone()]
                    .into_iter()
                    .chain(t.verdicts.iter().map(word))
                    .collect(),
            );
        }
        let columns = rows[0].len();
        let widths: Vec<usize> = (0..columns)
            .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
            .collect();
        for row in &rows {
            let line: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, width)| format!("{cell:width$}"))
                .collect();
            writeln!(out, "{}", line.join("  ").trim_end())?;
        }
        if tools
            .iter()
            .any(|t| !t.verdicts.iter().all(|v| v.problems.is_empty()))
        {
            writeln!(out)?;
        }
        for t in tools {
            problems(&mut out, "", &t.tool, &t.verdicts)?;
        }
    }
    out.flush()?;
    let refused = tools.iter().filter(|t| t.refused()).count();
    if refused > 0 {
        bail!(
            "{refused} of {} tool(s) are refused or changed by a dialect (see above; docs/frameworks.md says how to write portable schemas)",
            tools.len()
        );
    }
    Ok(())
}
