//! What the CLI reports about plugins and tools: `list`, `status`,
//! `describe`'s declaration, and JSON output.

use std::io::Write;
use std::sync::Arc;

use anyhow::{Result, bail};
use serde_json::{Value, json};
use toolhost::toolset::LoadState;
use toolhost::{Config, Context as Cx, Engine, PluginDir, PluginSet, ToolSpec, Toolset};

use super::{Cli, options, unmatched, warn_unmatched};

pub(super) async fn status(
    cli: &Cli,
    config: &Config,
    engine: &Engine,
    as_json: bool,
) -> Result<()> {
    let dir = super::plugins::checked(cli, config, super::Takes::Dir("status"))?;
    let plugins = Arc::new(PluginDir::open_configured(engine, &dir, options(cli, config)).await?);
    let sources = super::sources::open(config, engine)?;
    if let Some(sources) = &sources {
        sources.resolve_into(&plugins).await;
    }
    let sources = sources.map(|s| s.status()).unwrap_or_default();
    let files: Vec<String> = plugins
        .status()
        .into_iter()
        .map(|s| s.plugin)
        .chain(sources.iter().map(|s| s.name.clone()))
        .collect();
    let unmatched = unmatched(config, &files, &*plugins);
    for name in &unmatched {
        warn_unmatched(name);
    }
    let statuses = plugins.status();
    let mut rows: Vec<Value> = statuses
        .iter()
        .map(|status| {
            let file = status
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let mut row = match &status.state {
                LoadState::Loaded { tools } => {
                    json!({"file": file, "plugin": status.plugin, "state": "loaded", "tools": tools})
                }
                LoadState::Failed { error, .. } => {
                    json!({"file": file, "plugin": status.plugin, "state": "failed", "error": error})
                }
                _ => json!({"file": file, "plugin": status.plugin, "state": "unknown"}),
            };
            if let Some(source) = sources.iter().find(|s| s.label == status.path) {
                row["source"] = super::sources::json(source);
            }
            row
        })
        .collect();
    // A source that never served has no file to show: its row says why.
    for source in &sources {
        if !statuses.iter().any(|s| s.path == source.label) {
            rows.push(json!({
                "file": format!("{}.wasm", source.name),
                "plugin": source.name,
                "state": "failed",
                "error": source.error,
                "source": super::sources::json(source),
            }));
        }
    }
    let failed = rows
        .iter()
        .filter(|r| r["state"] != "loaded" || !r["source"]["error"].is_null())
        .count();
    if rows.is_empty()
        && let Some(why) = super::plugins::emptiness(&dir, 0, 0)
    {
        eprintln!("warning: {why}");
    }
    if as_json {
        let unmatched: Vec<Value> = unmatched
            .iter()
            .map(|name| {
                json!({
                    "from": name.place(),
                    "name": name.name,
                    "suggestion": name.suggestion,
                    "candidates": name.candidates,
                    "message": name.to_string(),
                })
            })
            .collect();
        print_json(&json!({"plugins": rows, "unmatched_config_names": unmatched}))?;
    } else {
        let mut out = std::io::stdout().lock();
        for row in &rows {
            let detail = match row["tools"].as_array() {
                Some(tools) => tools
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", "),
                None => row["error"].as_str().unwrap_or("").to_owned(),
            };
            writeln!(
                out,
                "{:24}  {:7}  {detail}",
                row["file"].as_str().unwrap_or(""),
                row["state"].as_str().unwrap_or("")
            )?;
            let label = row["file"].as_str().unwrap_or("");
            if let Some(source) = sources
                .iter()
                .find(|s| row["source"].is_object() && format!("{}.wasm", s.name) == label)
            {
                writeln!(out, "{:24}  {:7}  {}", "", "", super::sources::line(source))?;
            }
        }
        if !unmatched.is_empty() {
            writeln!(out, "\nCONFIG NAMES THAT MATCH NOTHING")?;
            for name in &unmatched {
                writeln!(out, "{name}")?;
            }
        }
    }
    if failed > 0 {
        bail!("{failed} plugin file(s) failed to load");
    }
    Ok(())
}

pub(super) fn declaration(spec: &ToolSpec) -> Value {
    let mut value = json!({
        "name": spec.name,
        "description": spec.model_description(),
        "parameters": spec.input_schema,
        "long_running": spec.long_running,
        "streaming": spec.streaming,
    });
    if let Some(output) = &spec.output_schema {
        value["response"] = output.clone();
    }
    if !spec.hints.is_empty() {
        // Only the hints the plugin gave (`ToolHints` skips the others).
        value["hints"] = json!(spec.hints);
    }
    value
}

/// The hints of a [`declaration`], for a text report: `None` if it has none.
pub(super) fn hints_text(declaration: &Value) -> Option<String> {
    let hints = declaration.get("hints")?.as_object()?;
    let mut words = Vec::new();
    if let Some(title) = hints.get("title").and_then(Value::as_str) {
        words.push(format!("title {title:?}"));
    }
    for (key, word) in [
        ("read_only", "read-only"),
        ("destructive", "destructive"),
        ("idempotent", "idempotent"),
        ("open_world", "open-world"),
    ] {
        match hints.get(key).and_then(Value::as_bool) {
            Some(true) => words.push(word.to_owned()),
            Some(false) => words.push(format!("not {word}")),
            None => {}
        }
    }
    (!words.is_empty()).then(|| words.join(", "))
}

pub(super) fn print_json(value: &Value) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}

pub(super) fn list(
    set: &PluginSet,
    layered: &dyn Toolset,
    as_json: bool,
    catalog: bool,
    check: bool,
) -> Result<()> {
    let visible: std::collections::HashSet<String> = layered
        .tools(&Cx::new())
        .iter()
        .map(|t| t.spec().name.clone())
        .collect();
    let mut tools = set.listed();
    tools.retain(|t| visible.contains(&t.call_name()));
    if check {
        let checked: Vec<super::dialects::Checked<'_>> = tools
            .iter()
            .map(|t| {
                super::dialects::Checked::new(t.plugin.name(), t.call_name(), &t.spec.input_schema)
            })
            .collect();
        return super::dialects::report(&checked, as_json);
    }
    if as_json {
        let rows: Vec<Value> = tools
            .iter()
            .map(|t| {
                json!({
                    "plugin": t.plugin.name(),
                    "tool": t.spec.name,
                    "call_name": t.call_name(),
                    "description": t.spec.description,
                    "long_running": t.spec.long_running,
                    "streaming": t.spec.streaming,
                    "asks": asks(t.plugin),
                    "granted": t.plugin.grants().summary(),
                })
            })
            .collect();
        // The array alone, as it always was; the whole catalog on request.
        if catalog {
            let mut all = super::catalog::json(layered)?;
            all["tools"] = Value::Array(rows);
            return print_json(&all);
        }
        return print_json(&Value::Array(rows));
    }
    let mut rows = vec![[
        "PLUGIN".to_owned(),
        "TOOL".to_owned(),
        "LONG-RUNNING".to_owned(),
        "STREAMS".to_owned(),
        "DESCRIPTION".to_owned(),
    ]];
    let yes_no = |yes: bool| if yes { "yes" } else { "no" }.to_owned();
    for t in &tools {
        rows.push([
            t.plugin.name().to_owned(),
            // The name alone, so it can be copied into `call`.
            t.call_name(),
            yes_no(t.spec.long_running),
            yes_no(t.spec.streaming),
            summary(&t.spec.description),
        ]);
    }
    let widths: Vec<usize> = (0..4)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = std::io::stdout().lock();
    // No plugins, no table: the warning `load` printed says why.
    for row in rows.iter().filter(|_| !set.plugins().is_empty()) {
        writeln!(
            out,
            "{:w0$}  {:w1$}  {:w2$}  {:w3$}  {}",
            row[0],
            row[1],
            row[2],
            row[3],
            row[4],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3]
        )?;
    }
    super::catalog::sections(&mut out, layered)?;
    if set.plugins().is_empty() {
        return Ok(());
    }
    capabilities(&mut out, set)
}

/// The longest description `list` shows, in characters.
const SUMMARY_CHARS: usize = 70;

/// A description's first line, at most [`SUMMARY_CHARS`] long; `…` marks
/// whatever was left out (a cut line or the lines after it).
pub(super) fn summary(description: &str) -> String {
    let mut lines = description.trim().lines();
    let first = lines.next().unwrap_or("").trim_end();
    let more = lines.any(|line| !line.trim().is_empty());
    if first.chars().count() > SUMMARY_CHARS {
        first.chars().take(SUMMARY_CHARS - 1).collect::<String>() + "…"
    } else if more {
        format!("{first} …")
    } else {
        first.to_owned()
    }
}

/// What a plugin's imports ask for: capability names, `!` marking those not granted.
fn asks(plugin: &toolhost::Plugin) -> Vec<String> {
    plugin
        .requested()
        .into_iter()
        .map(|cap| {
            if cap.needs_grant() && !plugin.grants().covers(cap) {
                format!("{cap}!")
            } else {
                cap.to_string()
            }
        })
        .collect()
}

/// Per plugin: what its WASI imports ask for and what it is granted.
fn capabilities(out: &mut impl Write, set: &PluginSet) -> Result<()> {
    writeln!(out)?;
    let rows: Vec<[String; 3]> = set
        .plugins()
        .iter()
        .map(|p| {
            let granted = p.grants().summary();
            [
                p.name().to_owned(),
                asks(p).join(", "),
                if granted.is_empty() {
                    "nothing".to_owned()
                } else {
                    granted.join("; ")
                },
            ]
        })
        .collect();
    let width = |i: usize, title: &str| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([title.len()])
            .max()
            .unwrap_or(0)
    };
    let (w0, w1) = (width(0, "PLUGIN"), width(1, "ASKS FOR"));
    writeln!(out, "{:w0$}  {:w1$}  GRANTED", "PLUGIN", "ASKS FOR")?;
    for [plugin, asks, granted] in &rows {
        writeln!(out, "{plugin:w0$}  {asks:w1$}  {granted}")?;
    }
    if rows.iter().any(|r| r[1].contains('!')) {
        writeln!(
            out,
            "(`!`: imported but not granted: a call that uses it is refused, one that does not runs as usual. \
             Language runtimes import more than their tools use (files in every language but Rust; \
             sockets in componentize-py's Python). Grant it in toolhost.toml or NAME{}.)",
            toolhost::policy::SIDECAR_SUFFIX
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::summary;

    #[test]
    fn a_summary_marks_what_it_leaves_out() {
        assert_eq!(summary("Adds two numbers."), "Adds two numbers.");
        assert_eq!(summary("Adds.\n\nMore detail."), "Adds. …");
        assert_eq!(summary("Adds.\n  \n"), "Adds.");
        let long = "x".repeat(80);
        let cut = summary(&long);
        assert_eq!(cut.chars().count(), 70);
        assert!(cut.ends_with('…'), "{cut}");
    }
}
