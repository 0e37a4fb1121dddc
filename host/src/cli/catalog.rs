//! What plugins offer besides tools, on the command line: `list`'s sections
//! (and `list --json --catalog`) for resources, resource templates and
//! prompts; `read URI`; `prompt NAME KEY=VALUE...`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::Path;

use anyhow::{Result, bail};
use serde_json::{Value, json};
use toolhost::catalog::{Body, MessageContent, PromptSpec, ResourceContents, Role};
use toolhost::tool::Part;
use toolhost::{CallError, Context as Cx, Toolset, ToolsetExt, escape_control};

use super::call::{PartWriter, extension};
use super::print_json;

/// `list`'s sections after the tools: resources, resource templates and
/// prompts, each only when there are any.
pub(super) fn sections(out: &mut impl Write, set: &dyn Toolset) -> Result<()> {
    let cx = Cx::new();
    let resources: Vec<[String; 5]> = set
        .resources(&cx)
        .iter()
        .map(|resource| {
            let spec = resource.spec();
            [
                cell(&spec.uri),
                cell(spec.plugin.as_deref().unwrap_or("-")),
                cell(spec.mime_type.as_deref().unwrap_or("-")),
                cell(&spec.name),
                summary(spec.description.as_deref().unwrap_or("")),
            ]
        })
        .collect();
    let header = ["RESOURCE", "PLUGIN", "MIME TYPE", "NAME", "DESCRIPTION"];
    table(out, header, &resources)?;
    let templates: Vec<[String; 5]> = set
        .resource_templates(&cx)
        .iter()
        .map(|template| {
            let spec = template.spec();
            [
                cell(&spec.uri_template),
                cell(spec.plugin.as_deref().unwrap_or("-")),
                cell(spec.mime_type.as_deref().unwrap_or("-")),
                cell(&spec.name),
                summary(spec.description.as_deref().unwrap_or("")),
            ]
        })
        .collect();
    let header = [
        "RESOURCE TEMPLATE",
        "PLUGIN",
        "MIME TYPE",
        "NAME",
        "DESCRIPTION",
    ];
    table(out, header, &templates)?;
    let prompts: Vec<[String; 4]> = set
        .prompts(&cx)
        .iter()
        .map(|prompt| {
            let spec = prompt.spec();
            [
                cell(&spec.name),
                cell(spec.plugin.as_deref().unwrap_or("-")),
                arguments(spec),
                summary(&spec.description),
            ]
        })
        .collect();
    table(
        out,
        ["PROMPT", "PLUGIN", "ARGUMENTS", "DESCRIPTION"],
        &prompts,
    )?;
    if prompts.iter().any(|row| row[2].contains('?')) {
        writeln!(out, "(`?`: an optional argument.)")?;
    }
    Ok(())
}

/// A prompt's arguments in order, `?` after the optional ones; `-` for none.
fn arguments(spec: &PromptSpec) -> String {
    if spec.arguments.is_empty() {
        return "-".to_owned();
    }
    spec.arguments
        .iter()
        .map(|a| format!("{}{}", cell(&a.name), if a.required { "" } else { "?" }))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Plugin text in a table cell: on one line, nothing that drives the terminal.
fn cell(text: &str) -> String {
    escape_control(text).into_owned()
}

/// A description's first line, cut to 70 characters (as the tools table does).
fn summary(description: &str) -> String {
    let line = cell(description.lines().next().unwrap_or(""));
    if line.chars().count() > 70 {
        line.chars().take(69).collect::<String>() + "…"
    } else {
        line
    }
}

/// A blank line, then a table with its header; nothing when there are no rows.
fn table<const N: usize>(
    out: &mut impl Write,
    header: [&str; N],
    rows: &[[String; N]],
) -> Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let header = header.map(str::to_owned);
    let all = || std::iter::once(&header).chain(rows);
    let widths: Vec<usize> = (0..N)
        .map(|i| all().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    writeln!(out)?;
    for row in all() {
        let mut line = String::new();
        for (i, text) in row.iter().enumerate() {
            if i + 1 < N {
                line.push_str(&format!("{text:width$}  ", width = widths[i]));
            } else {
                line.push_str(text);
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// `list --json --catalog`'s other kinds: `resources`, `resource_templates`
/// and `prompts`, each spec as the library serializes it.
pub(super) fn json(set: &dyn Toolset) -> Result<Value> {
    let cx = Cx::new();
    let resources = set
        .resources(&cx)
        .iter()
        .map(|r| serde_json::to_value(r.spec()))
        .collect::<Result<Vec<_>, _>>()?;
    let templates = set
        .resource_templates(&cx)
        .iter()
        .map(|t| serde_json::to_value(t.spec()))
        .collect::<Result<Vec<_>, _>>()?;
    let prompts = set
        .prompts(&cx)
        .iter()
        .map(|p| serde_json::to_value(p.spec()))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(json!({
        "resources": resources,
        "resource_templates": templates,
        "prompts": prompts,
    }))
}

/// `toolhost read`: text printed, binary content written to files.
pub(super) async fn read(
    set: &dyn Toolset,
    cx: &Cx,
    uri: &str,
    out_dir: Option<&Path>,
    as_json: bool,
) -> Result<()> {
    let contents = match set.read(cx, uri).await {
        // Said without listing anything: `list` shows what this caller may read.
        Err(err @ CallError::UnknownResource { .. }) => {
            bail!("{err} (`toolhost list` shows the resources and resource templates)")
        }
        other => other?,
    };
    let mut writer = PartWriter::new(out_dir);
    if as_json {
        let contents = contents
            .into_iter()
            .map(|c| describe_contents(&mut writer, c))
            .collect::<Result<Vec<_>>>()?;
        return print_json(&json!({ "contents": contents }));
    }
    let terminal = std::io::stdout().is_terminal();
    let several = contents.len() > 1;
    let mut out = std::io::stdout().lock();
    for (i, contents) in contents.into_iter().enumerate() {
        // Several contents (a resource and its sub-resources) are headed as
        // `head` heads several files.
        if several {
            if i > 0 {
                writeln!(out)?;
            }
            writeln!(out, "==> {} <==", cell(&contents.uri))?;
        }
        match contents.body {
            Body::Text(text) => print_text(&mut out, &text, terminal)?,
            Body::Bytes(data) => {
                let mime_type = mime_type(&contents.mime_type);
                let name = file_name(&contents.uri, mime_type);
                let path = writer.write(name.as_deref(), mime_type, &data)?;
                writeln!(out, "{}", path.display())?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// Text as it is, with a final newline if it has none; on a terminal, with
/// the control characters that could drive it escaped.
fn print_text(out: &mut impl Write, text: &str, terminal: bool) -> Result<()> {
    let text = if terminal {
        for_terminal(text)
    } else {
        Cow::Borrowed(text)
    };
    out.write_all(text.as_bytes())?;
    if !text.ends_with('\n') {
        writeln!(out)?;
    }
    Ok(())
}

/// `text` with every control character but newlines and tabs escaped.
fn for_terminal(text: &str) -> Cow<'_, str> {
    if !text
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return Cow::Borrowed(text);
    }
    let lines: Vec<String> = text
        .split('\n')
        .map(|line| {
            line.split('\t')
                .map(escape_control)
                .collect::<Vec<_>>()
                .join("\t")
        })
        .collect();
    Cow::Owned(lines.join("\n"))
}

fn mime_type(mime_type: &Option<String>) -> &str {
    mime_type.as_deref().unwrap_or("application/octet-stream")
}

/// A file name for binary content at `uri`: its last path segment, with an
/// extension from the MIME type when it has none (`test://static-binary` →
/// `static-binary.png`); none when the URI ends in `/`.
fn file_name(uri: &str, mime_type: &str) -> Option<String> {
    let path = uri.split(['?', '#']).next().unwrap_or(uri);
    let last = path.rsplit('/').next().unwrap_or(path);
    let last = last.rsplit(':').next().unwrap_or(last);
    if last.is_empty() {
        return None;
    }
    if last.contains('.') {
        Some(last.to_owned())
    } else {
        Some(format!("{last}.{}", extension(mime_type)))
    }
}

/// One content as JSON: its URI, MIME type, and text or file.
fn describe_contents(writer: &mut PartWriter, contents: ResourceContents) -> Result<Value> {
    let mime = mime_type(&contents.mime_type).to_owned();
    Ok(match contents.body {
        Body::Text(text) => {
            json!({"uri": contents.uri, "mime_type": contents.mime_type, "text": text})
        }
        Body::Bytes(data) => {
            let name = file_name(&contents.uri, &mime);
            let path = writer.write(name.as_deref(), &mime, &data)?;
            json!({
                "uri": contents.uri,
                "mime_type": contents.mime_type,
                "bytes": data.len(),
                "file": path,
            })
        }
    })
}

/// `toolhost prompt`: the filled-in messages, `role: text` each.
pub(super) async fn prompt(
    set: &dyn Toolset,
    cx: &Cx,
    name: &str,
    arguments: &[String],
    out_dir: Option<&Path>,
    as_json: bool,
) -> Result<()> {
    let arguments = parse_arguments(arguments)?;
    let filled = set.get_prompt(cx, name, arguments).await?;
    let mut writer = PartWriter::new(out_dir);
    if as_json {
        let messages = filled
            .messages
            .into_iter()
            .map(|message| {
                Ok(json!({
                    "role": role(message.role),
                    "content": describe_content(&mut writer, message.content)?,
                }))
            })
            .collect::<Result<Vec<_>>>()?;
        return print_json(&json!({
            "description": filled.description,
            "messages": messages,
        }));
    }
    let terminal = std::io::stdout().is_terminal();
    let mut out = std::io::stdout().lock();
    for message in filled.messages {
        let role = role(message.role);
        match message.content {
            MessageContent::Part(Part::Text(text)) => {
                write!(out, "{role}: ")?;
                print_text(&mut out, &text, terminal)?;
            }
            MessageContent::Part(Part::Json(value)) => writeln!(out, "{role}: {value}")?,
            MessageContent::Part(part @ Part::Blob { .. }) => {
                let part = writer.describe(part)?;
                writeln!(
                    out,
                    "{role}: [{} {}, {} bytes] {}",
                    part["type"].as_str().unwrap_or("file"),
                    cell(part["mime_type"].as_str().unwrap_or("")),
                    part["bytes"],
                    part["file"].as_str().unwrap_or("")
                )?;
            }
            MessageContent::Resource(contents) => {
                let mime = mime_type(&contents.mime_type).to_owned();
                writeln!(
                    out,
                    "{role}: [resource {}, {}]",
                    cell(&contents.uri),
                    cell(&mime)
                )?;
                match contents.body {
                    Body::Text(text) => {
                        let indented: String =
                            text.lines().map(|line| format!("  {line}\n")).collect();
                        print_text(&mut out, &indented, terminal)?;
                    }
                    Body::Bytes(data) => {
                        let name = file_name(&contents.uri, &mime);
                        let path = writer.write(name.as_deref(), &mime, &data)?;
                        writeln!(out, "  {} bytes: {}", data.len(), path.display())?;
                    }
                }
            }
            _ => writeln!(out, "{role}: [content this toolhost cannot show]")?,
        }
    }
    out.flush()?;
    Ok(())
}

fn role(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

/// A message's content as JSON: a part as `call` prints it, or an embedded
/// resource (`"type": "resource"`).
fn describe_content(writer: &mut PartWriter, content: MessageContent) -> Result<Value> {
    match content {
        MessageContent::Part(part) => writer.describe(part),
        MessageContent::Resource(contents) => {
            let mut value = describe_contents(writer, contents)?;
            value["type"] = json!("resource");
            Ok(value)
        }
        _ => Ok(json!({"type": "unknown"})),
    }
}

/// `KEY=VALUE` arguments (split at the first `=`), each key once.
fn parse_arguments(arguments: &[String]) -> Result<BTreeMap<String, String>> {
    let mut parsed = BTreeMap::new();
    for argument in arguments {
        let Some((key, value)) = argument.split_once('=') else {
            bail!("`{argument}`: a prompt's arguments are KEY=VALUE");
        };
        if key.is_empty() {
            bail!("`{argument}`: the argument has no name (KEY=VALUE)");
        }
        if parsed.insert(key.to_owned(), value.to_owned()).is_some() {
            bail!("the argument `{key}` is given twice");
        }
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

    use super::*;

    #[test]
    fn arguments_are_key_value_pairs_split_at_the_first_equals_sign() {
        let args = |list: &[&str]| {
            parse_arguments(&list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
        };
        let parsed = args(&["a=1", "b=x=y", "c="]).unwrap();
        assert_eq!(parsed["a"], "1");
        assert_eq!(parsed["b"], "x=y");
        assert_eq!(parsed["c"], "");
        for (bad, why) in [
            (&["a"][..], "KEY=VALUE"),
            (&["=1"], "no name"),
            (&["a=1", "a=2"], "twice"),
        ] {
            let err = args(bad).unwrap_err().to_string();
            assert!(err.contains(why), "{bad:?}: {err}");
        }
    }

    #[test]
    fn binary_content_is_named_after_its_uri() {
        assert_eq!(
            file_name("test://static-binary", "image/png").as_deref(),
            Some("static-binary.png")
        );
        assert_eq!(
            file_name("file:///a/b/photo.jpg?size=2", "image/jpeg").as_deref(),
            Some("photo.jpg")
        );
        assert_eq!(
            file_name("urn:blob", "x/unknown").as_deref(),
            Some("blob.bin")
        );
        assert_eq!(file_name("file:///dir/", "image/png"), None);
    }

    #[test]
    fn text_for_a_terminal_keeps_lines_and_tabs_only() {
        assert_eq!(for_terminal("a\n\tb"), "a\n\tb");
        assert_eq!(for_terminal("a\u{1b}[2J\nb\r"), "a\\u{1b}[2J\nb\\r");
    }

    #[test]
    fn tables_pad_every_column_but_the_last() {
        let mut out = Vec::new();
        let rows = [["test://x".to_owned(), "p".to_owned(), "long".to_owned()]];
        table(&mut out, ["URI", "PLUGIN", "WHAT"], &rows).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\nURI       PLUGIN  WHAT\ntest://x  p       long\n"
        );
        let mut out = Vec::new();
        table::<1>(&mut out, ["NONE"], &[]).unwrap();
        assert!(out.is_empty());
    }
}
