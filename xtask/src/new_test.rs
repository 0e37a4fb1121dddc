//! `cargo xtask new-test [LANG...]`: `toolhost new` end to end: a project in
//! each language, built by its own `build.sh`, then called through the
//! `toolhost` binary; then every snippet of `docs/writing-tools.md` and
//! `docs/languages/*.md` is applied to it, built and called as the page shows.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::docs;
use crate::toolchain::{ensure_c_toolchain, ensure_wasm_target, venv};
use crate::workspace::{cargo, root, run, target_dir};

/// `toolhost new` end to end: for each language, a project `hello` in
/// `<target>/new-test/LANG/`, built by its own `build.sh`, then called through
/// the `toolhost` binary (a greeting, a misspelt key and an argument the tool
/// refuses). Then the docs: every fenced block of `docs/writing-tools.md` and
/// `docs/languages/LANG.md` is marked with what to do with it (see
/// [`Snippet`]): its files replace the project's, the project is rebuilt, and
/// its calls must print what the page shows. Reuses the toolchains `guests`
/// installed (Python, C and Go venvs, npm cache, Go build cache, Debian C
/// packages), one cargo target dir and one compiled-code cache, so a rerun is
/// quick.
pub(crate) fn test(only: &[String]) -> Result<()> {
    for lang in only {
        if !LANGS.contains(&lang.as_str()) {
            bail!("no language `{lang}` (languages: {})", LANGS.join(", "));
        }
    }
    ensure_wasm_target()?;
    ensure_c_toolchain()?;
    // Same feature unification as `cargo test --workspace`: nothing to rebuild after it.
    run(cargo().args(["test", "--workspace", "--no-run"]))?;
    let target = target_dir();
    let toolhost = target.join("debug/toolhost");
    let scratch = target.join("new-test");
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch)
            .with_context(|| format!("removing {}", scratch.display()))?;
    }
    let venv_dir = |name: &str, requirements: &str| -> Result<PathBuf> {
        let python = venv(name, &root().join(requirements))?;
        python
            .parent()
            .and_then(Path::parent)
            .map(Path::to_owned)
            .with_context(|| format!("the {name} python has no venv directory"))
    };
    let py_venv = venv_dir("guest-venv", "guest-sdk/python/requirements-build.txt")?;
    let c_venv = venv_dir("c-venv", "guest-sdk/c/requirements-build.txt")?;
    let go_venv = venv_dir("go-venv", "guest-sdk/go/requirements-build.txt")?;
    let overview = snippets(&root().join("docs/writing-tools.md"))?;
    for lang in LANGS
        .into_iter()
        .filter(|lang| only.is_empty() || only.iter().any(|o| o == lang))
    {
        let started = std::time::Instant::now();
        let dir = scratch.join(lang);
        run(Command::new(&toolhost)
            .args(["new", "hello", "--lang", lang, "--dir"])
            .arg(&dir))?;
        let project = NewProject {
            lang,
            dir: dir.join("hello"),
            toolhost: &toolhost,
            cache: target.join("new-test-cache"),
        };
        let build_sh = || -> Command {
            let mut cmd = Command::new("sh");
            cmd.arg(project.dir.join("build.sh"))
                .env("CARGO_TARGET_DIR", target.join("new-test-cargo"))
                .env("TOOLHOST_PY_VENV", &py_venv)
                .env("TOOLHOST_C_VENV", &c_venv)
                .env("TOOLHOST_GO_VENV", &go_venv)
                .env("GOCACHE", target.join("go-cache"));
            cmd
        };
        let build = || run(&mut build_sh());
        build()?;
        let built = started.elapsed();
        project.expect(
            "greet",
            r#"{"name": "Ada", "excited": true}"#,
            &Expected::Values(vec![serde_json::json!({"greeting": "Hello, Ada!"})]),
        )?;
        project.expect(
            "greet",
            r#"{"name": " "}"#,
            &Expected::Error("invalid arguments for `greet`: `name` must not be empty".to_owned()),
        )?;
        // A misspelt key is refused by the schema, and named.
        project.expect(
            "greet",
            r#"{"name": "Ada", "excitd": true}"#,
            &Expected::Error("/excitd: unexpected property; did you mean \"excited\"?".to_owned()),
        )?;
        if lang == "python" {
            python_build_error(&project.dir, build_sh())?;
        }
        let page = snippets(&root().join(format!("docs/languages/{lang}.md")))?;
        let mut changed = false;
        let mut checked = 0;
        for snippet in overview.iter().chain(&page) {
            if snippet.lang != lang {
                continue;
            }
            checked += 1;
            match &snippet.kind {
                SnippetKind::File(path) => {
                    let file = project.dir.join(path);
                    if !file.is_file() {
                        bail!(
                            "{}: `{path}` is not a file of a new {lang} project",
                            snippet.origin
                        );
                    }
                    std::fs::write(&file, &snippet.body)
                        .with_context(|| format!("writing {}", file.display()))?;
                    changed = true;
                }
                SnippetKind::Commands | SnippetKind::Calls => {
                    if changed {
                        build().with_context(|| format!("building {}", snippet.origin))?;
                        changed = false;
                    }
                    project
                        .run_shell(snippet)
                        .with_context(|| snippet.origin.clone())?;
                }
            }
        }
        if checked == 0 {
            bail!("docs/languages/{lang}.md has no `<!-- new-test: ... {lang} -->` snippet");
        }
        eprintln!(
            "xtask: toolhost new --lang {lang}: built in {:.1} s; {checked} doc snippets checked, all in {:.1} s",
            built.as_secs_f64(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// A Python project whose module fails at build time (a parameter without a
/// JSON Schema): `build.sh` must fail and say first what and where, in the
/// project's own terms (`src/app.py:LINE`, not componentize-py's `/0/app.py`).
/// Leaves `src/app.py` as it found it.
fn python_build_error(project: &Path, mut build: Command) -> Result<()> {
    let app = project.join("src/app.py");
    let good =
        std::fs::read_to_string(&app).with_context(|| format!("reading {}", app.display()))?;
    let (head, tail) = good
        .rsplit_once("\nfrom toolhost_guest.component import")
        .context("the Python template ends by importing toolhost_guest.component")?;
    let bad = format!(
        "{head}\n\n@tool\ndef broken(callback: type) -> None:\n    \"\"\"Takes what JSON cannot say.\"\"\"\n\n\
         from toolhost_guest.component import{tail}"
    );
    let decorator = bad
        .lines()
        .enumerate()
        .filter(|(_, l)| *l == "@tool")
        .map(|(i, _)| i + 1)
        .last()
        .context("no @tool line")?;
    std::fs::write(&app, bad)?;
    let output = build.output().context("running build.sh")?;
    std::fs::write(&app, good)?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let first = stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_default();
    let expected = format!(
        "error: src/app.py:{decorator}: SchemaError: broken, parameter callback: cannot express"
    );
    if output.status.success() || !first.starts_with(&expected) {
        bail!(
            "python: a build error should come first as `{expected} …`; build.sh gave {}:\n{stderr}",
            output.status
        );
    }
    if stderr.contains("\"/0/") {
        bail!("python: build.sh shows componentize-py's internal paths:\n{stderr}");
    }
    Ok(())
}

/// The languages of `toolhost new --lang`.
const LANGS: [&str; 5] = ["rust", "python", "js", "go", "c"];

/// A project `new-test` made, and how to call its tools.
struct NewProject<'a> {
    lang: &'a str,
    dir: PathBuf,
    toolhost: &'a Path,
    cache: PathBuf,
}

/// What a call must print.
enum Expected {
    /// These JSON values on stdout (one, or one a chunk for a stream).
    Values(Vec<serde_json::Value>),
    /// A failure whose stderr contains this text.
    Error(String),
}

impl NewProject<'_> {
    /// `toolhost call TOOL ARGUMENTS` on this project, with its cache.
    fn call(&self, tool: &str, arguments: &str) -> Command {
        let mut cmd = Command::new(self.toolhost);
        cmd.arg("--cache-dir")
            .arg(&self.cache)
            .arg("--plugins")
            .arg(&self.dir)
            .args(["call", tool, arguments]);
        cmd
    }

    /// Calls `tool` with `arguments` and checks the outcome.
    fn expect(&self, tool: &str, arguments: &str, expected: &Expected) -> Result<()> {
        let output = self
            .call(tool, arguments)
            .output()
            .context("running toolhost call")?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let ok = match expected {
            Expected::Values(values) => {
                let printed: Result<Vec<serde_json::Value>, _> =
                    serde_json::Deserializer::from_slice(&output.stdout)
                        .into_iter()
                        .collect();
                output.status.success() && printed.ok().as_ref() == Some(values)
            }
            Expected::Error(text) => !output.status.success() && stderr.contains(text.as_str()),
        };
        if !ok {
            let wanted = match expected {
                Expected::Values(values) => format!("{values:?}"),
                Expected::Error(text) => format!("an error saying {text:?}"),
            };
            bail!(
                "{}: `toolhost call {tool} '{arguments}'` gave {}, not {wanted}:\n{stdout}\n{stderr}",
                self.lang,
                output.status
            );
        }
        Ok(())
    }

    /// `toolhost read URI` or `toolhost prompt NAME KEY=VALUE...` on this
    /// project: it must succeed and print exactly the `shown` lines.
    fn expect_text(&self, words: &[&str], shown: &[String]) -> Result<()> {
        let output = Command::new(self.toolhost)
            .arg("--cache-dir")
            .arg(&self.cache)
            .arg("--plugins")
            .arg(&self.dir)
            .args(words)
            .output()
            .context("running toolhost")?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let printed: Vec<&str> = stdout.lines().collect();
        if !output.status.success() || printed != shown {
            bail!(
                "{}: `toolhost {}` gave {}, not {shown:?}:\n{stdout}\n{}",
                self.lang,
                words.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(())
    }

    /// Runs a shell snippet: the commands that make and build a project must be
    /// the ones `new-test` ran; each `toolhost --plugins . call TOOL 'ARGS'`
    /// runs, and the `# ` lines after it say what it must print (`# error: TEXT`
    /// for a failure).
    fn run_shell(&self, snippet: &Snippet) -> Result<()> {
        let setup = [
            format!("toolhost new hello --lang {}", self.lang),
            "cd hello".to_owned(),
            "./build.sh".to_owned(),
        ];
        let mut lines = snippet.body.lines().map(str::trim).peekable();
        while let Some(line) = lines.next() {
            // A trailing `  # comment` explains a command; it is not part of it.
            let line = line.split("  #").next().unwrap_or(line).trim_end();
            if line.is_empty() || setup.iter().any(|s| s == line) {
                continue;
            }
            let mut shown_text = || {
                let mut shown = Vec::new();
                while let Some(comment) = lines.peek().and_then(|l| l.strip_prefix("# ")) {
                    shown.push(comment.to_owned());
                    lines.next();
                }
                shown
            };
            if let Some(words) = line
                .strip_prefix("toolhost --plugins . read ")
                .map(|uri| vec!["read", uri])
                .or_else(|| {
                    line.strip_prefix("toolhost --plugins . prompt ")
                        .map(|rest| {
                            std::iter::once("prompt")
                                .chain(rest.split_whitespace())
                                .collect()
                        })
                })
            {
                let shown = shown_text();
                self.expect_text(&words, &shown)?;
                continue;
            }
            let Some(call) = line.strip_prefix("toolhost --plugins . call ") else {
                bail!("`{line}` is not a command new-test runs");
            };
            let (tool, arguments) = call
                .split_once(' ')
                .map(|(tool, args)| (tool, args.trim().trim_matches('\'')))
                .with_context(|| format!("`{line}`: no arguments"))?;
            let mut shown = Vec::new();
            while let Some(comment) = lines.peek().and_then(|l| l.strip_prefix("# ")) {
                shown.push(comment.to_owned());
                lines.next();
            }
            let expected = match shown.first().and_then(|s| s.strip_prefix("error: ")) {
                Some(text) => Expected::Error(text.to_owned()),
                None => Expected::Values(
                    shown
                        .iter()
                        .map(|s| serde_json::from_str(s))
                        .collect::<Result<_, _>>()
                        .with_context(|| format!("`{line}`: its output is not JSON"))?,
                ),
            };
            if let Expected::Values(values) = &expected
                && values.is_empty()
            {
                // Shown without its output: it must succeed.
                let output = self.call(tool, arguments).output()?;
                if !output.status.success() {
                    bail!(
                        "`{line}` failed: {}",
                        String::from_utf8_lossy(&output.stderr)
                    );
                }
                continue;
            }
            self.expect(tool, arguments, &expected)?;
        }
        Ok(())
    }
}

/// A fenced block of a doc page that `new-test` exercises, marked by an HTML
/// comment on the line before it:
///
/// - `<!-- new-test: file LANG PATH -->`: the block is the file PATH of a new
///   LANG project (it replaces it; the project is rebuilt before the next call);
/// - `<!-- new-test: commands LANG -->` / `<!-- new-test: calls LANG -->`: shell
///   lines, run by [`NewProject::run_shell`].
///
/// A fenced block without a mark is an error: every snippet is tested.
struct Snippet {
    lang: String,
    kind: SnippetKind,
    body: String,
    /// `page:line`, for messages.
    origin: String,
}

enum SnippetKind {
    File(String),
    Commands,
    Calls,
}

fn snippets(page: &Path) -> Result<Vec<Snippet>> {
    let text =
        std::fs::read_to_string(page).with_context(|| format!("reading {}", page.display()))?;
    let name = page
        .strip_prefix(root())
        .unwrap_or(page)
        .display()
        .to_string();
    let mut found = Vec::new();
    for block in docs::blocks(&text).with_context(|| name.clone())? {
        let origin = format!("{name}:{}", block.line);
        let Some(words) = block
            .mark
            .as_deref()
            .and_then(|mark| mark.strip_prefix("new-test:"))
            .map(|words| {
                words
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
        else {
            bail!(
                "{origin}: a code block without a `<!-- new-test: ... -->` mark (every snippet is tested)"
            );
        };
        let kind = match words.as_slice() {
            [kind, lang, path] if kind == "file" => (SnippetKind::File(path.clone()), lang),
            [kind, lang] if kind == "commands" => (SnippetKind::Commands, lang),
            [kind, lang] if kind == "calls" => (SnippetKind::Calls, lang),
            _ => bail!("{origin}: unknown mark `new-test: {}`", words.join(" ")),
        };
        if !LANGS.contains(&kind.1.as_str()) {
            bail!("{origin}: unknown language `{}`", kind.1);
        }
        found.push(Snippet {
            lang: kind.1.clone(),
            kind: kind.0,
            body: block.text,
            origin,
        });
    }
    Ok(found)
}
