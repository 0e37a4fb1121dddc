//! `cargo xtask docs-test`: the README and `docs/` stay true because this runs
//! them.
//!
//! The README runs first, verbatim, in a scratch copy of the repository (the
//! working tree's tracked and untracked, not ignored, files): its install
//! (`cargo install --locked --path host`, into a scratch install root on
//! `PATH`, built in `<target>/docs-test-target`) and its tour. Then each page under `docs/` runs in its own scratch
//! directory, where `target/plugins` is a copy of the example plugins the
//! README built.
//! Every fenced block of a page becomes part of one bash script (so `cd` and
//! `export` carry over from block to block, as for a reader), run with `-e`:
//!
//! - `sh`: the commands, as written;
//! - `toml`: written to the file its first line names (`# NAME…`, else
//!   `toolhost.toml`), then loaded: `toolhost --config FILE status` for a
//!   configuration, `toolhost --plugins DIR status` for a sidecar policy
//!   (`NAME.policy.toml` in DIR). Both must succeed;
//! - `json` with `mcpServers`: an MCP client configuration, connected to with
//!   the official MCP SDK (`tests/docs/mcp_config.py`, which says how the
//!   `/path/to/…` placeholders are filled) and must list tools;
//! - other blocks (output, code in other languages) are not run here: `rust`
//!   blocks are doc tests of the `toolhost` crate; blocks marked
//!   `<!-- new-test: … -->` (the tool-writing pages) are run by
//!   `cargo xtask new-test`, in a `toolhost new` project; `python` blocks
//!   marked `<!-- interop: … -->` (`docs/frameworks.md`,
//!   `docs/observability.md`) by
//!   `cargo xtask interop-test`.
//!
//! An HTML comment on the line before a fence changes that block:
//! `<!-- docs-test: skip REASON -->` leaves it out (a reason is required),
//! `<!-- docs-test: setup COMMANDS -->` runs COMMANDS first,
//! `<!-- docs-test: except PREFIX (REASON) -->` leaves out the lines starting
//! with PREFIX, `<!-- docs-test: background UNTIL -->` runs an `sh` block in
//! the background until its output shows UNTIL, and stops it when the page is
//! done.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::toolchain::{ensure_debian_packages, ensure_registry, ensure_wasm_target, venv};
use crate::workspace::{copy_dir, root, run, target_dir};

/// One fenced block of a markdown file.
#[derive(Debug)]
pub(crate) struct Block {
    /// The first word of the info string (`sh`, `toml`, `json`, …).
    lang: String,
    /// The block's lines, without the fences.
    pub(crate) text: String,
    /// Line number of the opening fence (1-based), for messages.
    pub(crate) line: usize,
    /// The HTML comment on the line before the fence, without `<!--` and
    /// `-->` (`docs-test: skip …`, `new-test: file python src/app.py`).
    pub(crate) mark: Option<String>,
    /// The `docs-test:` directive of the mark, if any (a `new-test:` mark is
    /// a skip here: `cargo xtask new-test` runs the block).
    directive: Option<String>,
}

/// The fenced blocks of a markdown text (shared with `new-test`).
pub(crate) fn blocks(markdown: &str) -> Result<Vec<Block>> {
    let mut found = Vec::new();
    let mut previous = "";
    let mut lines = markdown.lines().enumerate();
    while let Some((index, line)) = lines.next() {
        let Some(info) = line.trim_start().strip_prefix("```") else {
            if !line.trim().is_empty() {
                previous = line;
            }
            continue;
        };
        let lang = info.split([' ', ',']).next().unwrap_or_default().to_owned();
        let mark = previous
            .trim()
            .strip_prefix("<!--")
            .and_then(|rest| rest.strip_suffix("-->"))
            .map(|m| m.trim().to_owned());
        let directive = mark.as_deref().and_then(|m| {
            if m.starts_with("new-test:") {
                // `cargo xtask new-test` runs it, in a `toolhost new` project.
                Some("skip run by new-test".to_owned())
            } else {
                m.strip_prefix("docs-test:").map(|d| d.trim().to_owned())
            }
        });
        let mut text = String::new();
        let mut closed = false;
        for (_, body) in lines.by_ref() {
            if body.trim_start().starts_with("```") {
                closed = true;
                break;
            }
            text.push_str(body);
            text.push('\n');
        }
        if !closed {
            bail!("line {}: a fenced block is not closed", index + 1);
        }
        found.push(Block {
            lang,
            text,
            line: index + 1,
            mark,
            directive,
        });
        previous = "";
    }
    Ok(found)
}

/// The bash script that runs a page's blocks; `None` when nothing in it runs.
fn script(page: &str, markdown: &str) -> Result<Option<String>> {
    let mut out = String::new();
    let mut runs = 0;
    for (n, block) in blocks(markdown)
        .with_context(|| page.to_owned())?
        .into_iter()
        .enumerate()
    {
        let mut text = block.text.clone();
        let mut background = None;
        match block
            .directive
            .as_deref()
            .map(|d| d.split_once(' ').unwrap_or((d, "")))
        {
            None => {}
            Some(("skip", reason)) if !reason.trim().is_empty() => continue,
            Some(("setup", commands)) => {
                let _ = writeln!(out, "{commands}");
            }
            Some(("except", rule)) => {
                let prefix = rule.split(" (").next().unwrap_or(rule).trim();
                text = text
                    .lines()
                    .filter(|l| !l.trim_start().starts_with(prefix))
                    .map(|l| format!("{l}\n"))
                    .collect();
            }
            Some(("background", until)) if block.lang == "sh" && !until.is_empty() => {
                background = Some(until.trim().to_owned());
            }
            Some(_) => bail!(
                "{page}:{}: unknown or incomplete directive `{}`",
                block.line,
                block.directive.as_deref().unwrap_or_default()
            ),
        }
        let here = format!("{page}:{}", block.line);
        let _ = writeln!(out, "echo '--- docs-test: {here}' >&2");
        match (block.lang.as_str(), background) {
            ("sh", None) => out.push_str(&text),
            ("sh", Some(until)) => {
                let log = format!("\"$DOCS_TEST_DIR/background-{n}.log\"");
                // The closing parenthesis on its own line: the block may end in a comment.
                let _ = writeln!(out, "(\n{}\n) >{log} 2>&1 &", text.trim_end());
                let _ = writeln!(out, "DOCS_TEST_JOBS+=($!)");
                let _ = writeln!(out, "docs_test_wait {log} {}", shell_quote(&until));
            }
            ("toml", _) => {
                let file = text
                    .lines()
                    .next()
                    .and_then(|l| l.strip_prefix("# "))
                    .and_then(|l| l.split([':', ' ']).next())
                    .filter(|f| f.ends_with(".toml"))
                    .unwrap_or("toolhost.toml")
                    .to_owned();
                let _ = writeln!(out, "mkdir -p \"$(dirname {file})\"");
                let _ = writeln!(out, "cat > {file} <<'DOCS_TEST_EOF'\n{text}DOCS_TEST_EOF");
                if let Some(dir) = file.strip_suffix(".policy.toml") {
                    let dir = Path::new(dir).parent().unwrap_or(Path::new("."));
                    let _ = writeln!(out, "toolhost --plugins {} status", dir.display());
                } else {
                    let _ = writeln!(out, "toolhost --config {file} status");
                }
            }
            ("json", _) if text.contains("\"mcpServers\"") => {
                let _ = writeln!(
                    out,
                    "\"$DOCS_TEST_PYTHON\" \"$DOCS_TEST_MCP\" <<'DOCS_TEST_EOF'\n{text}DOCS_TEST_EOF"
                );
            }
            _ => continue,
        }
        runs += 1;
    }
    if runs == 0 {
        return Ok(None);
    }
    Ok(Some(format!("{PRELUDE}{out}")))
}

/// The ports a script's servers listen on (`serve --http HOST:PORT`).
fn listened_ports(script: &str) -> Vec<u16> {
    let mut ports: Vec<u16> = script
        .split("serve --http ")
        .skip(1)
        .filter_map(|rest| {
            let address = rest.split_whitespace().next()?;
            address.rsplit_once(':')?.1.parse().ok()
        })
        .collect();
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// `script` with each port its servers listen on moved to the one `moved`
/// gives: wherever it follows `127.0.0.1:` or `localhost:` (the server's
/// address, and the URLs and settings that name it).
fn on_free_ports(script: &str, mut moved: impl FnMut(u16) -> Result<u16>) -> Result<String> {
    let mut out = script.to_owned();
    for port in listened_ports(script) {
        let free = moved(port)?;
        for host in ["127.0.0.1", "localhost"] {
            out = out.replace(&format!("{host}:{port}"), &format!("{host}:{free}"));
        }
    }
    Ok(out)
}

/// A loopback port nothing listens on now.
fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

/// What every page's script starts with: stop background blocks on exit, and
/// a wait for a background block's output.
const PRELUDE: &str = r#"set -euo pipefail
set -m
DOCS_TEST_JOBS=()
docs_test_stop() {
  [ "${#DOCS_TEST_JOBS[@]}" -eq 0 ] && return 0
  # SIGTERM, not SIGINT: a shell started in the background without job
  # control passes SIGINT on ignored, and Go programs (docker-registry) keep
  # it ignored. Whatever still runs after 10 s is killed.
  for job in "${DOCS_TEST_JOBS[@]}"; do kill -TERM -- "-$job" 2>/dev/null || true; done
  ( sleep 10; for job in "${DOCS_TEST_JOBS[@]}"; do kill -KILL -- "-$job" 2>/dev/null || true; done ) &
  local watchdog=$!
  wait "${DOCS_TEST_JOBS[@]}" 2>/dev/null || true
  kill -- "-$watchdog" 2>/dev/null || kill "$watchdog" 2>/dev/null || true
}
trap docs_test_stop EXIT
docs_test_wait() {
  for _ in $(seq 1200); do
    if grep -qF -- "$2" "$1"; then return 0; fi
    sleep 0.1
  done
  echo "docs-test: \`$2\` never showed up in the output:" >&2; cat "$1" >&2; return 1
}
"#;

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Copies the working tree's tracked and untracked, not ignored, files.
fn copy_tree(to: &Path) -> Result<()> {
    let listed = Command::new("git")
        .current_dir(root())
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .output()
        .context("running git ls-files (docs-test copies the working tree)")?;
    if !listed.status.success() {
        bail!(
            "git ls-files failed: {}",
            String::from_utf8_lossy(&listed.stderr)
        );
    }
    for name in listed.stdout.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let name = String::from_utf8_lossy(name);
        let from = root().join(name.as_ref());
        // Deleted but not yet committed.
        if !from.exists() {
            continue;
        }
        let dest = to.join(name.as_ref());
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(&from, &dest)
            .with_context(|| format!("copying {} to {}", from.display(), dest.display()))?;
    }
    Ok(())
}

/// Runs the README and every page of `docs/`.
pub(crate) fn test() -> Result<()> {
    ensure_wasm_target()?;
    // docs/oci.md runs a registry of its own.
    ensure_registry()?;
    // docs/security.md asks a running server with curl.
    ensure_debian_packages("the docs tests", &["curl"])?;
    let target = target_dir();
    let scratch = target.join("docs-test");
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch)
            .with_context(|| format!("removing {}", scratch.display()))?;
    }
    let repo = scratch.join("repo");
    copy_tree(&repo)?;
    let install = scratch.join("install");
    // The copy builds in a target directory of its own, kept between runs:
    // sharing the repository's would overwrite its `debug/xtask` and
    // `release/toolhost` with the copy's (cargo links the newest build there).
    let cargo_target = target.join("docs-test-target");
    let python = venv("mcp-venv", &root().join("tests/mcp/requirements.txt"))?;
    let path = std::env::join_paths(std::iter::once(install.join("bin")).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))?;
    let mut pages: Vec<PathBuf> = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .context("reading docs/")?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    let mut ran = Vec::new();
    for page in pages {
        let name = page
            .strip_prefix(root())
            .unwrap_or(&page)
            .display()
            .to_string();
        let markdown = std::fs::read_to_string(&page).with_context(|| format!("reading {name}"))?;
        let Some(script) = script(&name, &markdown)? else {
            continue;
        };
        // The ports the page's servers listen on, as a reader sees them, are
        // free ones here: something else on the machine may hold them.
        let script = on_free_ports(&script, |port| {
            let free = free_port()?;
            eprintln!("xtask: docs-test: {name}: port {port} (as shown) is {free} here");
            Ok(free)
        })?;
        let slug = name.replace(['/', '.'], "-");
        let dir = scratch.join(&slug);
        std::fs::create_dir_all(&dir)?;
        let workdir = if name == "README.md" {
            repo.clone()
        } else {
            // A page runs beside a copy of the example plugins the README
            // built (a page may add sidecar policies to them).
            let work = dir.join("work");
            copy_dir(&repo.join("target/plugins"), &work.join("target/plugins"))
                .context("copying the example plugins the README built")?;
            work
        };
        let file = dir.join("script.sh");
        std::fs::write(&file, &script)?;
        eprintln!("xtask: docs-test: {name} (script: {})", file.display());
        run(Command::new("bash")
            .arg(&file)
            .current_dir(&workdir)
            .env("PATH", &path)
            .env("CARGO_TARGET_DIR", &cargo_target)
            .env("CARGO_INSTALL_ROOT", &install)
            .env("TOOLHOST_CACHE_DIR", scratch.join("cache"))
            .env_remove("TOOLHOST_CONFIG")
            .env_remove("TOOLHOST_PLUGINS")
            .env("DOCS_TEST_DIR", &dir)
            .env("DOCS_TEST_PYTHON", &python)
            .env("DOCS_TEST_MCP", root().join("tests/docs/mcp_config.py")))
        .with_context(|| format!("{name}: a command or snippet failed"))?;
        ran.push(name);
    }
    eprintln!("xtask: docs-test: ran {}", ran.join(", "));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_carry_their_directive_and_language() {
        let md = "text\n<!-- docs-test: skip shown only -->\n```sh\nls\n```\n\n```toml\n# a.toml\nx = 1\n```\n";
        let found = blocks(md).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].directive.as_deref(), Some("skip shown only"));
        assert_eq!(found[1].lang, "toml");
        assert_eq!(found[1].directive, None);
        assert_eq!(found[1].text, "# a.toml\nx = 1\n");
    }

    #[test]
    fn blocks_new_test_runs_are_left_to_it() {
        let md = "<!-- new-test: commands rust -->\n```sh\ntoolhost new hello\n```\n";
        assert!(script("p.md", md).unwrap().is_none());
    }

    #[test]
    fn a_skip_needs_a_reason_and_unknown_directives_fail() {
        let md = "<!-- docs-test: skip -->\n```sh\nls\n```\n";
        assert!(script("p.md", md).is_err());
        let md = "<!-- docs-test: frobnicate -->\n```sh\nls\n```\n";
        assert!(script("p.md", md).is_err());
    }

    #[test]
    fn toml_blocks_are_written_and_loaded() {
        let md = "```toml\n# target/plugins/http.policy.toml: keys\n[network]\n```\n\n```toml\n[limits]\n```\n";
        let s = script("p.md", md).unwrap().unwrap();
        assert!(s.contains("cat > target/plugins/http.policy.toml"), "{s}");
        assert!(
            s.contains("toolhost --plugins target/plugins status"),
            "{s}"
        );
        assert!(s.contains("cat > toolhost.toml"), "{s}");
        assert!(s.contains("toolhost --config toolhost.toml status"), "{s}");
    }

    #[test]
    fn except_leaves_out_lines_and_output_blocks_do_not_run() {
        let md = "<!-- docs-test: except cargo xtask test (CI) -->\n```sh\ncargo xtask demo\ncargo xtask test\n```\n\n```\nPLUGIN TOOL\n```\n";
        let s = script("p.md", md).unwrap().unwrap();
        assert!(s.contains("cargo xtask demo"), "{s}");
        assert!(!s.contains("cargo xtask test"), "{s}");
        assert!(!s.contains("PLUGIN TOOL"), "{s}");
        assert!(script("p.md", "```\nout\n```\n").unwrap().is_none());
    }

    /// A page's server ports move to free ones, in every block that names
    /// them; other numbers and hosts stay.
    #[test]
    fn a_pages_server_ports_move_to_free_ones() {
        let script = "toolhost serve --http 127.0.0.1:8383 &\n\
                      curl http://127.0.0.1:8383/mcp http://localhost:8383/x\n\
                      echo 8383 tools.internal:8383 127.0.0.1:4318\n";
        assert_eq!(listened_ports(script), [8383]);
        let moved = on_free_ports(script, |port| Ok(port + 1)).unwrap();
        assert_eq!(
            moved,
            "toolhost serve --http 127.0.0.1:8384 &\n\
             curl http://127.0.0.1:8384/mcp http://localhost:8384/x\n\
             echo 8383 tools.internal:8383 127.0.0.1:4318\n"
        );
    }

    /// A background block is stopped when its page ends even if it ignores
    /// SIGINT and SIGTERM (a registry started from a shell that was itself
    /// started in the background ignores SIGINT).
    #[test]
    fn background_blocks_are_stopped_even_when_they_ignore_signals() {
        let dir = std::env::temp_dir().join(format!("docs-test-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pid_file = dir.join("pid");
        let md = format!(
            "<!-- docs-test: background listening on -->\n```sh\n\
             trap '' INT TERM; echo $BASHPID > {}; echo listening on; sleep 100000\n```\n\n\
             ```sh\necho done\n```\n",
            pid_file.display()
        );
        let s = script("p.md", &md).unwrap().unwrap();
        // Bounded: a stop that waits for the block would hang for a day.
        let status = Command::new("timeout")
            .args(["60", "bash", "-c"])
            .arg(&s)
            .env("DOCS_TEST_DIR", &dir)
            .status()
            .unwrap();
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        let alive = Command::new("kill")
            .args(["-0", pid.trim()])
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap()
            .success();
        if alive {
            let _ = Command::new("kill").args(["-KILL", pid.trim()]).status();
        }
        let _ = std::fs::remove_dir_all(&dir);
        assert!(status.success(), "the page did not end: {status}");
        assert!(!alive, "the background block {} still runs", pid.trim());
    }
}
