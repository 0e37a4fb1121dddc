//! `toolhost call`: arguments in, the call driven to its end (asking on the
//! terminal when it needs confirmation), the output printed, binary parts
//! written to files.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use super::print_json;
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use toolhost::tool::{MediaKind, Part};
use toolhost::toolset::Decision;
use toolhost::{CallError, Context as Cx, Toolset, ToolsetExt};

pub(super) fn read_arguments(args: &str) -> Result<Value> {
    let text = if args == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading arguments from stdin")?;
        text
    } else {
        args.to_owned()
    };
    let value: Value = serde_json::from_str(&text).context("the arguments are not valid JSON")?;
    if !value.is_object() {
        bail!("the arguments must be a JSON object, like {{\"text\": \"hello\"}}");
    }
    Ok(value)
}

/// Writes binary parts to files and describes every part as JSON (shared
/// with `read` and `prompt`).
pub(super) struct PartWriter {
    dir: Option<PathBuf>,
    requested: Option<PathBuf>,
    count: usize,
}

impl PartWriter {
    /// Writes into `out_dir`, else into a new temp dir made at the first write.
    pub(super) fn new(out_dir: Option<&Path>) -> Self {
        Self {
            dir: None,
            requested: out_dir.map(Path::to_owned),
            count: 0,
        }
    }

    pub(super) fn describe(&mut self, part: Part) -> Result<Value> {
        Ok(match part {
            Part::Text(text) => json!({"type": "text", "text": text}),
            Part::Json(value) => json!({"type": "json", "json": value}),
            Part::Blob {
                kind,
                mime_type,
                name,
                data,
            } => {
                let path = self.write(name.as_deref(), &mime_type, &data)?;
                json!({"type": kind_name(kind), "mime_type": mime_type, "bytes": data.len(), "file": path})
            }
            _ => json!({"type": "unknown"}),
        })
    }

    /// Writes `data` to a new file (see [`create_new_file`]) and returns its path.
    pub(super) fn write(
        &mut self,
        name: Option<&str>,
        mime_type: &str,
        data: &[u8],
    ) -> Result<PathBuf> {
        let dir = self.dir()?;
        self.count += 1;
        create_new_file(&dir, name, self.count, mime_type, data)
    }

    fn dir(&mut self) -> Result<PathBuf> {
        if let Some(dir) = &self.dir {
            return Ok(dir.clone());
        }
        let dir = match &self.requested {
            Some(dir) => dir.clone(),
            None => std::env::temp_dir().join(format!(
                "toolhost-{}-{}",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or_default()
            )),
        };
        match &self.requested {
            Some(_) => std::fs::create_dir_all(&dir),
            // A fresh directory of our own: fail rather than use one that
            // someone else made at that name first.
            None => std::fs::create_dir(&dir),
        }
        .with_context(|| format!("creating {}", dir.display()))?;
        self.dir = Some(dir.clone());
        Ok(dir)
    }
}

/// Writes a blob into `dir` as a new file: under its own name's last
/// component if it has a usable one (else `part-N.EXT`), with `-2`, `-3`, ...
/// before the extension while that name is taken. Never overwrites a file and
/// never follows a link already in the directory (`O_CREAT | O_EXCL`).
fn create_new_file(
    dir: &Path,
    name: Option<&str>,
    count: usize,
    mime_type: &str,
    data: &[u8],
) -> Result<PathBuf> {
    let name = name
        .and_then(|n| Path::new(n).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .unwrap_or_else(|| format!("part-{count}.{}", extension(mime_type)));
    let (stem, ext) = match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => (stem.to_owned(), format!(".{ext}")),
        _ => (name.clone(), String::new()),
    };
    for n in 1..=1000 {
        let candidate = if n == 1 {
            name.clone()
        } else {
            format!("{stem}-{n}{ext}")
        };
        let path = dir.join(&candidate);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut file) => {
                file.write_all(data)
                    .with_context(|| format!("writing {}", path.display()))?;
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
        }
    }
    bail!(
        "cannot write `{name}` into {}: that name and 999 numbered variants are taken",
        dir.display()
    )
}

/// What JSON output calls a blob of this kind.
pub(super) fn kind_name(kind: MediaKind) -> &'static str {
    match kind {
        MediaKind::Image => "image",
        MediaKind::Audio => "audio",
        MediaKind::Video => "video",
        _ => "file",
    }
}

pub(super) fn extension(mime: &str) -> &str {
    match mime {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/svg+xml" => "svg",
        "audio/wav" | "audio/x-wav" => "wav",
        "application/json" => "json",
        "text/plain" => "txt",
        _ => "bin",
    }
}

/// What the human said to a call that needs confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Yes,
    No,
    /// Nobody to ask: stdin is not a terminal.
    NoTerminal,
}

/// Asks the human on the terminal (stdin, when it is one) whether to run a
/// call that needs confirmation; the question goes to stderr.
fn ask(request: &toolhost::toolset::ConfirmationRequest) -> Result<Answer> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Ok(Answer::NoTerminal);
    }
    ask_on(request, &mut stdin.lock(), &mut std::io::stderr())
}

/// Asks once on `output` and reads one line of `input`: `y` or `yes` (any
/// case) runs the call; anything else, or the end of input, declines. A hint
/// that is a question ("… Run it?") is the question asked; any other is
/// followed by `Run it?`.
fn ask_on(
    request: &toolhost::toolset::ConfirmationRequest,
    input: &mut impl std::io::BufRead,
    output: &mut impl Write,
) -> Result<Answer> {
    let hint = request.hint.trim();
    if hint.ends_with('?') {
        write!(
            output,
            "toolhost: `{}` needs confirmation\n  arguments: {}\n{hint} [y/N] ",
            request.tool, request.arguments
        )?;
    } else {
        write!(
            output,
            "toolhost: `{}` needs confirmation: {hint}\n  arguments: {}\nRun it? [y/N] ",
            request.tool, request.arguments
        )?;
    }
    output.flush()?;
    let mut answer = String::new();
    input.read_line(&mut answer)?;
    let yes = matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes");
    Ok(if yes { Answer::Yes } else { Answer::No })
}

/// Asks on the terminal, or approves every call (`--yes`).
struct Terminal {
    yes: bool,
}

impl toolhost::toolset::Approver for Terminal {
    fn decide<'a>(
        &'a self,
        _cx: &'a Cx,
        request: &'a toolhost::toolset::ConfirmationRequest,
    ) -> toolhost::toolset::BoxFuture<'a, Result<Option<Decision>, CallError>> {
        let unavailable = |reason: String| CallError::ConfirmationUnavailable {
            tool: request.tool.clone(),
            hint: request.hint.clone(),
            reason,
        };
        let decision = match if self.yes {
            Ok(Answer::Yes)
        } else {
            ask(request)
        } {
            Ok(Answer::Yes) => Ok(Some(Decision::approve(request))),
            Ok(Answer::No) => Ok(Some(Decision::reject("declined"))),
            Ok(Answer::NoTerminal) => Err(unavailable(
                "there is no terminal to ask on; run again with --yes to approve it".to_owned(),
            )),
            Err(err) => Err(unavailable(format!(
                "the terminal could not be read: {err:#}"
            ))),
        };
        Box::pin(std::future::ready(decision))
    }
}

pub(super) async fn call_tool(
    tools: &dyn Toolset,
    cx: Cx,
    name: &str,
    arguments: Value,
    yes: bool,
    out_dir: Option<&Path>,
) -> Result<()> {
    let tool = tools.find(&cx, name)?;
    let started = match toolhost::toolset::start(&*tool, &cx, arguments, &Terminal { yes }).await {
        Err(CallError::ConfirmationRejected { tool, reason, .. }) => bail!(
            "{}: `{tool}` was not run",
            reason.as_deref().unwrap_or("rejected")
        ),
        other => other?,
    };
    let mut writer = PartWriter::new(out_dir);
    let output = match started {
        toolhost::toolset::Started::Stream(mut stream) => {
            // Print each chunk as a JSON line the moment it arrives.
            while let Some(part) = stream.next().await {
                let line = writer.describe(part?)?;
                let mut out = std::io::stdout().lock();
                serde_json::to_writer(&mut out, &line)?;
                writeln!(out)?;
                out.flush()?;
            }
            return Ok(());
        }
        started => started.collect().await?,
    };
    if output.parts.is_empty() {
        return print_json(&output.result.unwrap_or(Value::Null));
    }
    let parts = output
        .parts
        .into_iter()
        .map(|p| writer.describe(p))
        .collect::<Result<Vec<_>>>()?;
    print_json(&json!({"result": output.result, "parts": parts}))
}
