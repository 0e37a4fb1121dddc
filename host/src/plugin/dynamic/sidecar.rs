//! The operator's sidecar `NAME.tools.toml` next to a component toolset's
//! `NAME.wasm`: per tool, by its name, a description, `hide`, hints and
//! `long_running`, applied when the plugin loads, without rebuilding it.
//!
//! ```toml
//! [shapes__translate]
//! description = "Move a point by a small step."
//! read_only = true
//! idempotent = true
//!
//! [shapes__spin]
//! long_running = true
//!
//! [greet]
//! hide = true
//! ```
//!
//! An unknown key or tool name is an error naming the file and the key
//! (with a did-you-mean), and the plugin does not load: a slip must not
//! silently leave a destructive tool unmarked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tokio::io::AsyncReadExt;

use crate::error::ConfigError;
use crate::tool::ToolHints;

/// The suffix of a tools sidecar: `NAME.tools.toml` next to `NAME.wasm`.
pub(crate) const SUFFIX: &str = ".tools.toml";

/// The largest sidecar read.
pub(crate) const MAX_BYTES: u64 = 256 * 1024;

/// The keys a tool's table may have.
const KEYS: [&str; 8] = [
    "description",
    "hide",
    "long_running",
    "title",
    "read_only",
    "destructive",
    "idempotent",
    "open_world",
];

/// The tools sidecar of a plugin file: `dir/NAME.tools.toml` for `dir/NAME.wasm`.
pub(crate) fn path(wasm: &Path) -> PathBuf {
    let stem = wasm
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    wasm.with_file_name(format!("{stem}{SUFFIX}"))
}

/// What the sidecar says of one tool; `None` leaves the tool's own.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ToolSettings {
    pub(crate) description: Option<String>,
    pub(crate) hide: bool,
    pub(crate) long_running: Option<bool>,
    pub(crate) hints: ToolHints,
}

/// A parsed sidecar: its file and its tools' settings, by tool name.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sidecar {
    pub(crate) path: PathBuf,
    pub(crate) tools: BTreeMap<String, ToolSettings>,
}

impl Sidecar {
    /// Reads the sidecar of the plugin file `wasm`, if it has one.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the sidecar: unreadable, larger than
    /// [`MAX_BYTES`], not TOML, or an unknown key or a value of the wrong type.
    pub(crate) async fn read(wasm: &Path) -> Result<Option<Self>, ConfigError> {
        let path = path(wasm);
        let error = |reason: String| ConfigError {
            path: path.clone(),
            key: None,
            reason,
        };
        let file = match tokio::fs::File::open(&path).await {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(error(format!("cannot read: {e}"))),
        };
        let mut bytes = Vec::new();
        file.take(MAX_BYTES + 1)
            .read_to_end(&mut bytes)
            .await
            .map_err(|e| error(format!("cannot read: {e}")))?;
        if bytes.len() as u64 > MAX_BYTES {
            return Err(error(format!("larger than {MAX_BYTES} bytes")));
        }
        let text = String::from_utf8(bytes).map_err(|_| error("not UTF-8 text".to_owned()))?;
        Self::parse(&text, &path).map(Some)
    }

    /// Parses a sidecar's text; `path` names it in errors.
    ///
    /// # Errors
    /// A [`ConfigError`]: not TOML (with the line), a tool that is not a
    /// table, an unknown key, a value of the wrong type.
    pub(crate) fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let table: toml::Table = ConfigError::from_toml(text, path)?;
        let error = |key: String, reason: String| ConfigError {
            path: path.to_owned(),
            key: Some(key),
            reason,
        };
        let mut tools = BTreeMap::new();
        for (tool, value) in table {
            let toml::Value::Table(keys) = value else {
                return Err(error(
                    tool,
                    "must be a table of the tool's settings (`[tool_name]`)".to_owned(),
                ));
            };
            let mut settings = ToolSettings::default();
            for (key, value) in keys {
                let at = format!("{tool}.{key}");
                let flag = || {
                    value
                        .as_bool()
                        .ok_or_else(|| error(at.clone(), "must be `true` or `false`".to_owned()))
                };
                match key.as_str() {
                    "description" | "title" => {
                        let text = value
                            .as_str()
                            .ok_or_else(|| error(at.clone(), "must be a string".to_owned()))?
                            .to_owned();
                        if key == "title" {
                            settings.hints.title = Some(text);
                        } else {
                            settings.description = Some(text);
                        }
                    }
                    "hide" => settings.hide = flag()?,
                    "long_running" => settings.long_running = Some(flag()?),
                    "read_only" => settings.hints.read_only = Some(flag()?),
                    "destructive" => settings.hints.destructive = Some(flag()?),
                    "idempotent" => settings.hints.idempotent = Some(flag()?),
                    "open_world" => settings.hints.open_world = Some(flag()?),
                    _ => {
                        let hint = match crate::suggest::closest(&key, KEYS) {
                            Some(close) => format!("did you mean `{close}`?"),
                            None => format!("the keys are {}", KEYS.join(", ")),
                        };
                        return Err(error(at, format!("unknown key; {hint}")));
                    }
                }
            }
            tools.insert(tool, settings);
        }
        Ok(Self {
            path: path.to_owned(),
            tools,
        })
    }

    /// Checks that every tool the sidecar names is one of `tools`.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first unknown tool, with a did-you-mean.
    pub(crate) fn check_names<'a>(
        &self,
        tools: impl IntoIterator<Item = &'a str> + Clone,
    ) -> Result<(), ConfigError> {
        for name in self.tools.keys() {
            if tools.clone().into_iter().any(|t| t == name) {
                continue;
            }
            let hint = match crate::suggest::closest(name, tools.clone()) {
                Some(close) => format!("did you mean `{close}`?"),
                None => format!(
                    "its tools are {}",
                    tools.clone().into_iter().collect::<Vec<_>>().join(", ")
                ),
            };
            return Err(ConfigError {
                path: self.path.clone(),
                key: Some(name.clone()),
                reason: format!("the component has no tool of that name; {hint}"),
            });
        }
        Ok(())
    }

    /// What the sidecar says of `tool`, if anything.
    pub(crate) fn tool(&self, tool: &str) -> Option<&ToolSettings> {
        self.tools.get(tool)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Sidecar, String> {
        Sidecar::parse(text, Path::new("/p/geometry.tools.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn settings_are_read_per_tool() {
        let sidecar = parse(
            "[a]\ndescription = \"Does a.\"\nhide = false\nlong_running = true\n\
             read_only = true\ndestructive = false\nidempotent = true\nopen_world = false\n\
             title = \"A\"\n[b]\nhide = true\n",
        )
        .unwrap();
        let a = sidecar.tool("a").unwrap();
        assert_eq!(a.description.as_deref(), Some("Does a."));
        assert_eq!(a.long_running, Some(true));
        assert_eq!(a.hints.read_only, Some(true));
        assert_eq!(a.hints.destructive, Some(false));
        assert_eq!(a.hints.idempotent, Some(true));
        assert_eq!(a.hints.open_world, Some(false));
        assert_eq!(a.hints.title.as_deref(), Some("A"));
        assert!(!a.hide);
        assert!(sidecar.tool("b").unwrap().hide);
        assert_eq!(path(Path::new("/p/geometry.wasm")), sidecar.path);
    }

    #[test]
    fn mistakes_name_the_file_and_key() {
        assert_eq!(
            parse("[a]\nhid = true\n").unwrap_err(),
            "/p/geometry.tools.toml: `a.hid`: unknown key; did you mean `hide`?"
        );
        assert!(
            parse("[a]\ncolour = 1\n")
                .unwrap_err()
                .contains("the keys are description")
        );
        assert_eq!(
            parse("[a]\nhide = \"yes\"\n").unwrap_err(),
            "/p/geometry.tools.toml: `a.hide`: must be `true` or `false`"
        );
        assert!(
            parse("a = 1\n")
                .unwrap_err()
                .contains("`a`: must be a table")
        );
        assert!(parse("[a\n").unwrap_err().contains("line 1"));
        let sidecar = parse("[shapes__transalte]\nhide = true\n").unwrap();
        let err = sidecar
            .check_names(["shapes__translate", "greet"])
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "/p/geometry.tools.toml: `shapes__transalte`: the component has no tool of that name; did you mean `shapes__translate`?"
        );
        let sidecar = parse("[zzz]\n").unwrap();
        assert!(
            sidecar
                .check_names(["greet"])
                .unwrap_err()
                .to_string()
                .contains("its tools are greet")
        );
    }
}
