//! File tools for agents: `read_file`, `list_dir`, `write_file` and
//! `search_files`, inside the directories the operator grants (and nowhere else:
//! the host refuses every path outside a grant, and every write to a read-only one).
//!
//! Paths are guest paths: a grant of `/srv/repo` as `/repo` is read as
//! `/repo/src/main.rs`. Errors carry the operating system's reason
//! ("Permission denied", "No such file or directory", ...).
//!
//! The same files are MCP resources ([`resources`]): the template
//! `file:///{+path}` reads `/repo/README.md` as `file:///repo/README.md`
//! (text for UTF-8, bytes otherwise, the MIME type from the extension), and
//! its `path` variable completes from the granted directories' entries.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_guest::{Context, Tool, ToolError, ToolHints, export_tools};

pub mod resources;

/// The most bytes `read_file` returns by default.
const DEFAULT_MAX_BYTES: u64 = 1 << 20;
/// The most matches `search_files` returns by default.
const DEFAULT_MAX_MATCHES: u32 = 100;
/// Files larger than this are skipped by `search_files`.
const MAX_SEARCHED_FILE: u64 = 4 << 20;

fn failed(path: &str, err: std::io::Error) -> ToolError {
    ToolError::failed(format!("{path}: {err}"))
}

/// Reads a text file (invalid UTF-8 is replaced).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// The file, as a guest path (e.g. `/workspace/README.md`).
    pub path: String,
    /// Return at most this many bytes (default 1 MiB).
    pub max_bytes: Option<u64>,
}

/// The content of a file.
#[derive(Serialize, JsonSchema)]
pub struct FileText {
    /// The file.
    pub path: String,
    /// Its text (up to `max_bytes`).
    pub text: String,
    /// The file's size in bytes.
    pub size: u64,
    /// Whether `text` stops before the end of the file.
    pub truncated: bool,
}

/// `read_file`.
pub struct ReadFile;

impl Tool for ReadFile {
    type Args = ReadFileArgs;
    type Output = FileText;
    const NAME: &'static str = "read_file";
    const HINTS: ToolHints = ToolHints::NONE
        .read_only(true)
        .idempotent(true)
        .open_world(false);

    fn call(args: ReadFileArgs, _cx: &Context) -> Result<FileText, ToolError> {
        use std::io::Read as _;
        let file = fs::File::open(&args.path).map_err(|e| failed(&args.path, e))?;
        let size = file.metadata().map_err(|e| failed(&args.path, e))?.len();
        let max = args.max_bytes.unwrap_or(DEFAULT_MAX_BYTES);
        let mut bytes = Vec::new();
        file.take(max)
            .read_to_end(&mut bytes)
            .map_err(|e| failed(&args.path, e))?;
        Ok(FileText {
            truncated: (bytes.len() as u64) < size,
            text: String::from_utf8_lossy(&bytes).into_owned(),
            path: args.path,
            size,
        })
    }

    fn output_schema() -> Option<serde_json::Value> {
        Some(toolhost_guest::schema_for::<FileText>())
    }
}

/// Lists a directory's entries.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDirArgs {
    /// The directory, as a guest path.
    pub path: String,
}

/// One directory entry.
#[derive(Serialize, JsonSchema)]
pub struct Entry {
    /// Its name.
    pub name: String,
    /// `file`, `dir`, `symlink` or `other`.
    pub kind: String,
    /// Its size in bytes (files only).
    pub size: Option<u64>,
}

/// `list_dir`.
pub struct ListDir;

impl Tool for ListDir {
    type Args = ListDirArgs;
    type Output = Vec<Entry>;
    const NAME: &'static str = "list_dir";
    const HINTS: ToolHints = ToolHints::NONE
        .read_only(true)
        .idempotent(true)
        .open_world(false);

    fn call(args: ListDirArgs, _cx: &Context) -> Result<Vec<Entry>, ToolError> {
        let mut entries = Vec::new();
        for entry in fs::read_dir(&args.path).map_err(|e| failed(&args.path, e))? {
            let entry = entry.map_err(|e| failed(&args.path, e))?;
            let kind = entry.file_type().map_err(|e| failed(&args.path, e))?;
            let (kind, size) = if kind.is_symlink() {
                ("symlink", None)
            } else if kind.is_dir() {
                ("dir", None)
            } else if kind.is_file() {
                ("file", entry.metadata().ok().map(|m| m.len()))
            } else {
                ("other", None)
            };
            entries.push(Entry {
                name: entry.file_name().to_string_lossy().into_owned(),
                kind: kind.to_owned(),
                size,
            });
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }
}

/// Writes a text file (creating it, or replacing its content unless `append`).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    /// The file, as a guest path inside a read-write grant.
    pub path: String,
    /// The text to write.
    pub text: String,
    /// Append to the file instead of replacing its content.
    #[serde(default)]
    pub append: bool,
}

/// What was written.
#[derive(Serialize, JsonSchema)]
pub struct Written {
    /// The file.
    pub path: String,
    /// Bytes written.
    pub bytes: u64,
}

/// `write_file`.
pub struct WriteFile;

impl Tool for WriteFile {
    type Args = WriteFileArgs;
    type Output = Written;
    const NAME: &'static str = "write_file";
    const HINTS: ToolHints = ToolHints::NONE
        .read_only(false)
        .destructive(true)
        .open_world(false);

    fn call(args: WriteFileArgs, _cx: &Context) -> Result<Written, ToolError> {
        let mut options = fs::OpenOptions::new();
        options.create(true);
        if args.append {
            options.append(true);
        } else {
            options.write(true).truncate(true);
        }
        let mut file = options
            .open(&args.path)
            .map_err(|e| failed(&args.path, e))?;
        file.write_all(args.text.as_bytes())
            .map_err(|e| failed(&args.path, e))?;
        Ok(Written {
            bytes: args.text.len() as u64,
            path: args.path,
        })
    }
}

/// Finds the lines that contain a text, in a file or in every file under a directory.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// A file or directory, as a guest path.
    pub path: String,
    /// The text to find (plain text, not a pattern).
    pub text: String,
    /// Ignore upper/lower case.
    #[serde(default)]
    pub ignore_case: bool,
    /// Return at most this many matches (default 100).
    #[schemars(range(min = 1))]
    pub max_matches: Option<u32>,
}

/// One matching line.
#[derive(Serialize, JsonSchema, Debug, PartialEq, Eq)]
pub struct Match {
    /// The file.
    pub path: String,
    /// The line number, from 1.
    pub line: u64,
    /// The line.
    pub text: String,
}

/// What a search found.
#[derive(Serialize, JsonSchema)]
pub struct Found {
    /// The matches, in path order.
    pub matches: Vec<Match>,
    /// Whether the search stopped at `max_matches`.
    pub truncated: bool,
    /// Files that could not be read (path and reason).
    pub skipped: Vec<String>,
}

/// `search_files`.
pub struct SearchFiles;

impl Tool for SearchFiles {
    type Args = SearchArgs;
    type Output = Found;
    const NAME: &'static str = "search_files";
    const HINTS: ToolHints = ToolHints::NONE
        .read_only(true)
        .idempotent(true)
        .open_world(false);

    fn call(args: SearchArgs, _cx: &Context) -> Result<Found, ToolError> {
        if args.text.is_empty() {
            return Err(ToolError::invalid_arguments("`text` must not be empty"));
        }
        let root = PathBuf::from(&args.path);
        let meta = fs::metadata(&root).map_err(|e| failed(&args.path, e))?;
        let mut files = Vec::new();
        let mut skipped = Vec::new();
        if meta.is_dir() {
            walk(&root, &mut files, &mut skipped);
        } else {
            files.push(root);
        }
        files.sort();
        let needle = if args.ignore_case {
            args.text.to_lowercase()
        } else {
            args.text.clone()
        };
        let max = args.max_matches.unwrap_or(DEFAULT_MAX_MATCHES) as usize;
        let mut found = Found {
            matches: Vec::new(),
            truncated: false,
            skipped,
        };
        for file in files {
            let name = file.display().to_string();
            match fs::metadata(&file) {
                Ok(m) if m.len() > MAX_SEARCHED_FILE => {
                    found.skipped.push(format!("{name}: larger than 4 MiB"));
                    continue;
                }
                Err(e) => {
                    found.skipped.push(format!("{name}: {e}"));
                    continue;
                }
                Ok(_) => {}
            }
            let bytes = match fs::read(&file) {
                Ok(bytes) => bytes,
                Err(e) => {
                    found.skipped.push(format!("{name}: {e}"));
                    continue;
                }
            };
            let text = String::from_utf8_lossy(&bytes);
            for (i, line) in text.lines().enumerate() {
                let hit = if args.ignore_case {
                    line.to_lowercase().contains(&needle)
                } else {
                    line.contains(&needle)
                };
                if hit {
                    if found.matches.len() == max {
                        found.truncated = true;
                        return Ok(found);
                    }
                    found.matches.push(Match {
                        path: name.clone(),
                        line: i as u64 + 1,
                        text: line.to_owned(),
                    });
                }
            }
        }
        Ok(found)
    }
}

/// Every regular file under `dir`; symlinks are not followed.
fn walk(dir: &Path, files: &mut Vec<PathBuf>, skipped: &mut Vec<String>) {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            skipped.push(format!("{}: {e}", dir.display()));
            return;
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => walk(&path, files, skipped),
            Ok(kind) if kind.is_file() => files.push(path),
            _ => {}
        }
    }
}

export_tools!(ReadFile, ListDir, WriteFile, SearchFiles; catalog: resources::catalog);
