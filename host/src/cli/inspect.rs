//! `toolhost inspect`: what a component file is (world, version, tools and
//! their schema dialects, imported interfaces), without a plugins directory;
//! for a component of another world, its exported functions as the tools
//! they would be (issue 34).

use std::io::{IsTerminal, Write};
use std::path::Path;

use anyhow::Result;
use serde_json::{Value, json};
use toolhost::Engine;
use toolhost::plugin::ExportedTools;
use toolhost::schema::dialect;

use super::dialects;
use super::report::{self, declaration, print_json};

pub(super) async fn inspect(engine: &Engine, file: &Path, as_json: bool) -> Result<()> {
    let toolhost::plugin::Inspection {
        info,
        plugin,
        exported,
        ..
    } = toolhost::plugin::inspect(engine, file).await?;
    let wasi: Vec<&String> = info
        .imports
        .iter()
        .filter(|i| i.starts_with("wasi:"))
        .collect();
    // Each tool's declaration and what each schema dialect makes of it.
    let tools = plugin.as_ref().map(|p| {
        p.tools()
            .map(|spec| {
                (
                    declaration(spec),
                    toolhost::schema::dialect::check(&spec.input_schema),
                )
            })
            .collect::<Vec<_>>()
    });
    // A file the host can serve no tool from is not a plugin: the report is
    // printed, and the command fails.
    let unusable = plugin
        .as_ref()
        .err()
        .filter(|_| exported.as_ref().is_none_or(|e| e.tools.is_empty()))
        .map(|err| anyhow::anyhow!("{} is not a toolhost plugin: {err}", file.display()));
    if as_json {
        let tools = tools.as_ref().ok().map(|tools| {
            tools
                .iter()
                .map(|(tool, verdicts)| {
                    let mut tool = tool.clone();
                    tool["dialects"] = dialects::to_json(verdicts);
                    tool
                })
                .collect::<Vec<_>>()
        });
        print_json(&json!({
            "file": file,
            "toolhost_version": info.toolhost_version(),
            "imports": info.imports,
            "exports": info.exports,
            "tools": tools,
            "resources": plugin.as_ref().ok().map(|p| p.resources()),
            "resource_templates": plugin.as_ref().ok().map(|p| p.resource_templates().collect::<Vec<_>>()),
            "prompts": plugin.as_ref().ok().map(|p| p.prompts()),
            "exported": exported.as_ref().map(exported_json),
            "error": plugin.as_ref().err().map(ToString::to_string),
        }))?;
        return unusable.map_or(Ok(()), Err);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "file:     {}", file.display())?;
    match info.toolhost_version() {
        Some(version) => {
            // A plugin that offers more than tools exports `catalog` too.
            let world = if info
                .exports
                .iter()
                .any(|e| e.starts_with("toolhost:plugin/catalog@"))
            {
                "catalog-plugin"
            } else {
                "plugin"
            };
            writeln!(out, "world:    toolhost:plugin/{world}@{version}")?
        }
        None => writeln!(
            out,
            "world:    not a toolhost plugin (exports: {})",
            info.exports.join(", ")
        )?,
    }
    writeln!(
        out,
        "wasi:     {}",
        if wasi.is_empty() {
            "none".to_owned()
        } else {
            wasi.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        }
    )?;
    // The loaded plugin's own answer; from the imports alone if it did not load.
    let caps = match &plugin {
        Ok(plugin) => plugin.requested(),
        Err(_) => toolhost::policy::Capability::of_imports(&info.imports),
    };
    let asks: Vec<String> = caps.iter().map(ToString::to_string).collect();
    writeln!(
        out,
        "asks:     {}",
        if asks.is_empty() {
            "nothing".to_owned()
        } else {
            asks.join(", ")
        }
    )?;
    match &tools {
        Ok(tools) => {
            writeln!(out, "tools:")?;
            for (tool, verdicts) in tools {
                let name = tool["name"].as_str().unwrap_or("");
                writeln!(
                    out,
                    "  {name}  {}",
                    tool["description"]
                        .as_str()
                        .unwrap_or("")
                        .lines()
                        .next()
                        .unwrap_or("")
                )?;
                // Which model providers take its schema as it is.
                let words: Vec<String> = verdicts
                    .iter()
                    .map(|v| format!("{} {}", v.dialect, dialects::word(v)))
                    .collect();
                if let Some(hints) = report::hints_text(tool) {
                    writeln!(out, "    hints: {hints}")?;
                }
                writeln!(out, "    dialects: {}", words.join(", "))?;
                dialects::problems(&mut out, "    ", name, verdicts)?;
            }
            if let Some(exported) = &exported {
                exported_text(&mut out, exported)?;
            }
        }
        Err(err) => {
            if let Some(exported) = &exported {
                exported_text(&mut out, exported)?;
            }
            if unusable.is_none() {
                writeln!(out, "error:    {err}")?;
            }
        }
    }
    if let Ok(plugin) = &plugin {
        catalog(&mut out, plugin)?;
    }
    if std::io::stdout().is_terminal() {
        out.flush()?;
    }
    unusable.map_or(Ok(()), Err)
}

/// The exported functions as tools, each with its dialects' verdicts, and
/// the refusals.
fn exported_json(exported: &ExportedTools) -> Value {
    let tools: Vec<Value> = exported
        .tools
        .iter()
        .map(|tool| {
            let mut json = json!(tool);
            json["dialects"] = dialects::to_json(&dialect::check(&tool.input_schema));
            json
        })
        .collect();
    json!({ "tools": tools, "refused": exported.refused.iter().map(ToString::to_string).collect::<Vec<_>>() })
}

/// The exported functions as tools: name, function, schemas (one line each),
/// dialects; then the refusals.
fn exported_text(out: &mut impl Write, exported: &ExportedTools) -> Result<()> {
    let show = |text: &str| toolhost::escape_control(text).into_owned();
    writeln!(out, "exported functions as tools (a component toolset):")?;
    if exported.tools.is_empty() && exported.refused.is_empty() {
        writeln!(out, "  none")?;
    }
    for tool in &exported.tools {
        writeln!(out, "  {}  {}", tool.name, show(&tool.export))?;
        writeln!(out, "    input:    {}", tool.input_schema)?;
        if let Some(schema) = &tool.output_schema {
            writeln!(out, "    output:   {schema}")?;
        }
        if let Some(schema) = &tool.error_schema {
            writeln!(out, "    error:    {schema}")?;
        }
        let verdicts = dialect::check(&tool.input_schema);
        let words: Vec<String> = verdicts
            .iter()
            .map(|v| format!("{} {}", v.dialect, dialects::word(v)))
            .collect();
        writeln!(out, "    dialects: {}", words.join(", "))?;
        dialects::problems(out, "    ", &tool.name, &verdicts)?;
    }
    for refusal in &exported.refused {
        writeln!(out, "  refused: {}", show(&refusal.to_string()))?;
    }
    Ok(())
}

/// What the plugin offers besides tools, one line each; nothing when it
/// offers nothing else.
fn catalog(out: &mut impl Write, plugin: &toolhost::Plugin) -> Result<()> {
    let show = |text: &str| toolhost::escape_control(text).into_owned();
    let resources: Vec<String> = plugin.resources().iter().map(|r| show(&r.uri)).collect();
    let templates: Vec<String> = plugin
        .resource_templates()
        .map(|t| show(&t.uri_template))
        .collect();
    let prompts: Vec<String> = plugin.prompts().iter().map(|p| show(&p.name)).collect();
    for (label, items) in [
        ("resources:", resources),
        ("templates:", templates),
        ("prompts:  ", prompts),
    ] {
        if !items.is_empty() {
            writeln!(out, "{label} {}", items.join(", "))?;
        }
    }
    Ok(())
}
