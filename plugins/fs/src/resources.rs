//! The granted directories as MCP resources: the template `file:///{+path}`,
//! whose `path` is a guest path without its leading `/` (`file:///repo/README.md`
//! is the file `/repo/README.md`), and completions of `path` from the
//! directories' entries.
//!
//! A template, not a listing of fixed resources: the host asks for the
//! catalog once, when the plugin loads, so a listing would miss every file
//! made since. Each read and each completion runs in a fresh instance with
//! the plugin's grants, and so sees the directories as they are now.

use std::collections::BTreeSet;
use std::fs;
use std::io::{ErrorKind, Read as _};

use toolhost_guest::{
    Catalog, Completion, CompletionRequest, Contents, ResourceRead, ResourceTemplate, ToolError,
};

/// The URI template of a granted file.
pub const TEMPLATE: &str = "file:///{+path}";

/// The most bytes one read returns (the host's default output cap).
pub const MAX_RESOURCE_BYTES: u64 = 4 << 20;

/// The most directory entries one completion looks at.
const MAX_SCANNED_ENTRIES: usize = 10_000;

/// What the plugin offers besides tools.
pub fn catalog() -> Catalog {
    Catalog::new()
        .template(
            ResourceTemplate::new(TEMPLATE, "file")
                .title("A file in a granted directory")
                .description(
                    "A file in a directory the operator granted, by its guest path: \
                     `file:///repo/README.md` is `/repo/README.md`. UTF-8 files are text, \
                     others bytes; the MIME type follows the extension. At most 4 MiB. \
                     Complete `path` to browse the directories: they are not listed as \
                     resources, since a listing taken when the plugin loads would go stale.",
                ),
            |_cx, read: &ResourceRead| read_file(read, &granted()),
        )
        .complete_template(TEMPLATE, |_cx, request: &CompletionRequest| {
            Ok(match request.argument.as_str() {
                "path" => complete(&request.value, &granted()),
                _ => Completion::default(),
            })
        })
}

/// The guest paths of the granted directories (the component's preopens).
fn granted() -> Vec<String> {
    // Natively (unit tests, clippy) there is no host to ask.
    if cfg!(target_family = "wasm") {
        wasip2::filesystem::preopens::get_directories()
            .into_iter()
            .map(|(_, path)| path)
            .collect()
    } else {
        Vec::new()
    }
}

/// Reads the file `read` names, inside one of `grants`.
pub fn read_file(read: &ResourceRead, grants: &[String]) -> Result<Contents, ToolError> {
    let path = resolve(read.variables.require("path")?, grants)?;
    let io = |err: std::io::Error| match err.kind() {
        // A missing file is a resource that does not exist (MCP -32002).
        ErrorKind::NotFound => ToolError::UnknownTool(read.uri.clone()),
        // The host refuses what a symlink reaches outside the grants.
        ErrorKind::PermissionDenied => ToolError::invalid_arguments(format!(
            "`{path}`: {err}: it leads outside the granted directories (a symlink \
             pointing out of them) or may not be read"
        )),
        _ => ToolError::failed(format!("`{path}`: {err}")),
    };
    // Looked at before opening: opening a FIFO would wait for a writer.
    let meta = fs::metadata(&path).map_err(io)?;
    if meta.is_dir() {
        return Err(ToolError::invalid_arguments(format!(
            "`{path}` is a directory: read one of its files (complete the `path` variable, \
             or call the `list_dir` tool)"
        )));
    }
    if !meta.is_file() {
        return Err(ToolError::invalid_arguments(format!(
            "`{path}` is not a regular file (a FIFO, socket or device)"
        )));
    }
    let file = fs::File::open(&path).map_err(io)?;
    let mut bytes = Vec::new();
    file.take(MAX_RESOURCE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_RESOURCE_BYTES {
        return Err(ToolError::failed(format!(
            "`{path}` is {} bytes, more than the {} MiB a read returns: read part of it \
             with the `read_file` tool (`max_bytes`)",
            meta.len().max(bytes.len() as u64),
            MAX_RESOURCE_BYTES >> 20
        )));
    }
    let (mime_type, text) = mime_type(&path);
    let contents = match String::from_utf8(bytes) {
        Ok(utf8) if text != Some(false) => Contents::text(utf8),
        Ok(utf8) => Contents::bytes(utf8.into_bytes()),
        Err(not_utf8) => Contents::bytes(not_utf8.into_bytes()),
    };
    let mime_type = match (mime_type, &contents.body) {
        (Some(mime_type), _) => mime_type,
        (None, toolhost_guest::Body::Text(_)) => "text/plain",
        (None, toolhost_guest::Body::Bytes(_)) => "application/octet-stream",
    };
    Ok(contents.mime_type(mime_type))
}

/// The guest path a `path` variable names: `/` and the path, with `.` and
/// `..` resolved, refused unless it is inside one of `grants`.
///
/// The host's preopens refuse an escape anyway; this says why, and in terms
/// of the URI.
pub fn resolve(path: &str, grants: &[String]) -> Result<String, ToolError> {
    let outside = |why: &str| {
        let grants = if grants.is_empty() {
            "none is granted to this plugin".to_owned()
        } else {
            let mut names: Vec<&str> = grants.iter().map(String::as_str).collect();
            names.sort_unstable();
            names.join(", ")
        };
        ToolError::invalid_arguments(format!(
            "`{path}` {why}, outside the granted directories ({grants}): a resource is \
             `file:///` and the guest path of a file in one, e.g. `file:///repo/README.md`"
        ))
    };
    let Some(resolved) = normalize(path) else {
        return Err(outside("climbs above `/` with `..`"));
    };
    if grants.iter().any(|grant| inside(&resolved, grant)) {
        Ok(resolved)
    } else {
        Err(outside(&format!("is `{resolved}`")))
    }
}

/// `path` as an absolute path without `.`, `..` or empty segments; `None`
/// if `..` climbs above `/`.
fn normalize(path: &str) -> Option<String> {
    let mut segments: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop()?;
            }
            segment => segments.push(segment),
        }
    }
    Some(format!("/{}", segments.join("/")))
}

/// Whether the normalized `path` is `grant` or below it.
fn inside(path: &str, grant: &str) -> bool {
    let Some(grant) = normalize(grant) else {
        return false;
    };
    grant == "/"
        || path == grant
        || path
            .strip_prefix(&grant)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Suggested values of `path` for what the user typed: the entries of the
/// directory typed so far whose names start with the rest (a directory's
/// with a trailing `/`, hidden ones only once a `.` is typed), and the
/// granted directories below it.
pub fn complete(value: &str, grants: &[String]) -> Completion {
    let (dir, prefix) = match value.rfind('/') {
        Some(slash) => value.split_at(slash + 1),
        None => ("", value),
    };
    let mut values = BTreeSet::new();
    // The granted directories are the way in: `/` itself is rarely one.
    for grant in grants {
        let grant = format!("{}/", grant.trim_matches('/'));
        if let Some(rest) = grant.strip_prefix(dir)
            && let Some((next, _)) = rest.split_once('/')
            && !next.is_empty()
        {
            values.insert(format!("{dir}{next}/"));
        }
    }
    let mut more = false;
    if let Ok(path) = resolve(dir, grants)
        && let Ok(entries) = fs::read_dir(&path)
    {
        for (scanned, entry) in entries.flatten().enumerate() {
            if scanned == MAX_SCANNED_ENTRIES {
                more = true;
                break;
            }
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if !name.starts_with(prefix) || (name.starts_with('.') && !prefix.starts_with('.')) {
                continue;
            }
            // Not followed: a symlink is offered as a file.
            let slash = if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                "/"
            } else {
                ""
            };
            values.insert(format!("{dir}{name}{slash}"));
        }
    }
    let completion = Completion::matching(values, value);
    if more {
        completion.has_more(true)
    } else {
        completion
    }
}

/// The MIME type of `path` by its extension, and whether that type is text
/// (`None`: not known).
pub fn mime_type(path: &str) -> (Option<&'static str>, Option<bool>) {
    let name = path.rsplit('/').next().unwrap_or(path);
    let Some((_, extension)) = name.rsplit_once('.') else {
        return (None, None);
    };
    let (mime_type, text) = match extension.to_ascii_lowercase().as_str() {
        "txt" | "text" | "log" => ("text/plain", true),
        "md" | "markdown" => ("text/markdown", true),
        "html" | "htm" => ("text/html", true),
        "css" => ("text/css", true),
        "csv" => ("text/csv", true),
        "tsv" => ("text/tab-separated-values", true),
        "js" | "mjs" | "cjs" => ("text/javascript", true),
        "ts" => ("text/x-typescript", true),
        "py" => ("text/x-python", true),
        "rs" => ("text/x-rust", true),
        "go" => ("text/x-go", true),
        "c" | "h" => ("text/x-c", true),
        "cc" | "cpp" | "hpp" => ("text/x-c++", true),
        "java" => ("text/x-java", true),
        "sh" => ("text/x-shellscript", true),
        "json" => ("application/json", true),
        "toml" => ("application/toml", true),
        "yaml" | "yml" => ("application/yaml", true),
        "xml" => ("application/xml", true),
        "svg" => ("image/svg+xml", true),
        "wit" => ("text/plain", true),
        "png" => ("image/png", false),
        "jpg" | "jpeg" => ("image/jpeg", false),
        "gif" => ("image/gif", false),
        "webp" => ("image/webp", false),
        "ico" => ("image/vnd.microsoft.icon", false),
        "pdf" => ("application/pdf", false),
        "zip" => ("application/zip", false),
        "gz" => ("application/gzip", false),
        "tar" => ("application/x-tar", false),
        "wasm" => ("application/wasm", false),
        "mp3" => ("audio/mpeg", false),
        "wav" => ("audio/wav", false),
        "ogg" => ("audio/ogg", false),
        "mp4" => ("video/mp4", false),
        "webm" => ("video/webm", false),
        _ => return (None, None),
    };
    (Some(mime_type), Some(text))
}

#[cfg(test)]
mod tests {
    use toolhost_guest::{Arguments, Body};

    use super::*;

    /// A temp directory granted under its host path (natively the guest
    /// path is the host path), with a text file, a PNG, a hidden file and a
    /// subdirectory.
    fn grant() -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("notes.md"), "# Notes\nüber\n").unwrap();
        fs::write(dir.path().join("pixel.png"), b"\x89PNG\r\n\x1a\n").unwrap();
        fs::write(dir.path().join("blob"), [0xff, 0x00, 0xfe]).unwrap();
        fs::write(dir.path().join(".hidden"), "h").unwrap();
        fs::create_dir(dir.path().join("sub")).unwrap();
        fs::write(dir.path().join("sub/deep.txt"), "deep").unwrap();
        let path = dir.path().to_str().unwrap().to_owned();
        (dir, path)
    }

    fn read(path: &str, grants: &[String]) -> Result<Contents, ToolError> {
        let variables: Arguments = [("path", path)].into_iter().collect();
        read_file(
            &ResourceRead::new(format!("file:///{path}"), variables),
            grants,
        )
    }

    #[test]
    fn normalizes_and_keeps_inside_the_grants() {
        let grants = ["/repo".to_owned(), "/out/".to_owned()];
        assert_eq!(resolve("repo/a/../b.txt", &grants).unwrap(), "/repo/b.txt");
        assert_eq!(resolve("repo//./x", &grants).unwrap(), "/repo/x");
        assert_eq!(resolve("out/r.md", &grants).unwrap(), "/out/r.md");
        assert_eq!(resolve("repo", &grants).unwrap(), "/repo");
        for (path, why) in [
            ("repo/../../etc/passwd", "climbs above `/`"),
            ("etc/passwd", "is `/etc/passwd`, outside"),
            ("repository/x", "is `/repository/x`, outside"),
            ("repo/../secret", "is `/secret`, outside"),
        ] {
            let Err(ToolError::InvalidArguments(message)) = resolve(path, &grants) else {
                panic!("{path} is refused");
            };
            assert!(message.contains(why), "{path}: {message}");
            assert!(message.contains("(/out/, /repo)"), "{message}");
        }
        let Err(ToolError::InvalidArguments(message)) = resolve("x", &[]) else {
            panic!("nothing is granted");
        };
        assert!(message.contains("none is granted"), "{message}");
        assert!(resolve("anything", &["/".to_owned()]).is_ok());
    }

    #[test]
    fn reads_text_and_bytes_with_their_mime_types() {
        let (_dir, root) = grant();
        let grants = [root.clone()];
        let root = root.trim_start_matches('/');
        let notes = read(&format!("{root}/notes.md"), &grants).unwrap();
        assert_eq!(notes.body, Body::Text("# Notes\nüber\n".into()));
        assert_eq!(notes.mime_type.as_deref(), Some("text/markdown"));
        let png = read(&format!("{root}/pixel.png"), &grants).unwrap();
        assert_eq!(png.body, Body::Bytes(b"\x89PNG\r\n\x1a\n".to_vec()));
        assert_eq!(png.mime_type.as_deref(), Some("image/png"));
        let blob = read(&format!("{root}/blob"), &grants).unwrap();
        assert_eq!(blob.body, Body::Bytes(vec![0xff, 0x00, 0xfe]));
        assert_eq!(blob.mime_type.as_deref(), Some("application/octet-stream"));
        let deep = read(&format!("{root}/sub/../sub/deep.txt"), &grants).unwrap();
        assert_eq!(deep.mime_type.as_deref(), Some("text/plain"));
    }

    #[test]
    fn missing_files_directories_and_escapes_are_refused() {
        let (_dir, root) = grant();
        let grants = [root.clone()];
        let root = root.trim_start_matches('/');
        let missing = format!("{root}/missing.txt");
        assert_eq!(
            read(&missing, &grants).unwrap_err(),
            ToolError::UnknownTool(format!("file:///{missing}"))
        );
        let Err(ToolError::InvalidArguments(message)) = read(&format!("{root}/sub"), &grants)
        else {
            panic!("a directory is refused");
        };
        assert!(message.contains("is a directory"), "{message}");
        let Err(ToolError::InvalidArguments(message)) =
            read(&format!("{root}/../outside.txt"), &grants)
        else {
            panic!("an escape is refused");
        };
        assert!(
            message.contains("outside the granted directories"),
            "{message}"
        );
    }

    #[test]
    fn completes_granted_directories_then_entries() {
        let (_dir, root) = grant();
        let grants = [root.clone(), "/other/place".to_owned()];
        let root = root.trim_start_matches('/');
        let mut top = vec![
            format!("{}/", root.split('/').next().unwrap()),
            "other/".into(),
        ];
        top.sort();
        assert_eq!(complete("", &grants).values, top, "sorted");
        assert_eq!(complete("oth", &grants).values, ["other/"]);
        assert_eq!(complete("other/", &grants).values, ["other/place/"]);
        let entries = complete(&format!("{root}/"), &grants);
        let names: Vec<&str> = entries
            .values
            .iter()
            .map(|v| v.strip_prefix(root).unwrap())
            .collect();
        assert_eq!(names, ["/blob", "/notes.md", "/pixel.png", "/sub/"]);
        assert_eq!(entries.total, Some(4));
        assert!(!entries.has_more);
        assert_eq!(
            complete(&format!("{root}/n"), &grants).values,
            [format!("{root}/notes.md")]
        );
        assert_eq!(
            complete(&format!("{root}/."), &grants).values,
            [format!("{root}/.hidden")]
        );
        assert_eq!(
            complete(&format!("{root}/sub/"), &grants).values,
            [format!("{root}/sub/deep.txt")]
        );
        // Outside the grants: nothing, not an error.
        assert!(complete("etc/", &grants).values.is_empty());
        assert!(complete(&format!("{root}/../"), &grants).values.is_empty());
    }

    #[test]
    fn mime_types_follow_the_extension() {
        assert_eq!(
            mime_type("/a/b.JSON"),
            (Some("application/json"), Some(true))
        );
        assert_eq!(
            mime_type("/a/photo.jpeg"),
            (Some("image/jpeg"), Some(false))
        );
        assert_eq!(mime_type("/a.d/Makefile"), (None, None));
        assert_eq!(
            mime_type("/a/archive.tar.gz"),
            (Some("application/gzip"), Some(false))
        );
    }

    #[test]
    fn the_catalog_offers_the_template_and_its_completions() {
        let catalog = catalog();
        let templates: Vec<_> = catalog
            .templates()
            .map(|t| t.uri_template.as_str())
            .collect();
        assert_eq!(templates, [TEMPLATE]);
        assert_eq!(catalog.resources().count(), 0, "a listing would go stale");
    }
}
