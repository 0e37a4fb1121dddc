//! Names in the configuration checked against what is loaded: a name that
//! matches nothing is never an error (plugins come and go with hot reload),
//! but it is reported, since it may mean a safeguard is off.

use std::fmt;

use super::Config;
use crate::tool::ToolSpec;
use crate::toolset::glob_matches;

/// Where in the configuration a name is written.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum NameSource {
    /// `[confirm] tools`: a tool whose calls need a human's yes.
    ConfirmTools,
    /// `[filter] allow`: a visible tool.
    FilterAllow,
    /// `[filter] deny`: a hidden tool.
    FilterDeny,
    /// `[aliases.tools]`: the tool this alias stands for.
    Alias {
        /// The alias.
        alias: String,
    },
    /// `[aliases.arguments.TOOL]`: the tool whose argument keys have aliases.
    ArgumentAliases,
    /// `[plugin.NAME]`: settings (limits, grants, reuse) of a plugin.
    Plugin,
}

impl fmt::Display for NameSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ConfirmTools => f.write_str("[confirm] tools"),
            Self::FilterAllow => f.write_str("[filter] allow"),
            Self::FilterDeny => f.write_str("[filter] deny"),
            Self::Alias { alias } => write!(f, "[aliases.tools] {alias}"),
            Self::ArgumentAliases => f.write_str("[aliases.arguments]"),
            Self::Plugin => f.write_str("[plugin.NAME]"),
        }
    }
}

/// A name in the configuration that matches no tool (or no plugin) loaded
/// now: see [`Config::unmatched_names`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub struct UnmatchedName {
    /// Where it is written.
    pub source: NameSource,
    /// The name (or glob pattern) as written.
    pub name: String,
    /// A loaded name close to it ("did you mean"), if there is one.
    pub suggestion: Option<String>,
    /// The qualified names a bare alias target could mean, when several
    /// plugins offer it (the alias is ambiguous rather than missing).
    pub candidates: Vec<String>,
}

impl UnmatchedName {
    /// Where it is written, with the table's own name: `[confirm] tools`,
    /// `[aliases.tools] wc`, `[plugin.fss]`, `[aliases.arguments.nope]`.
    pub fn place(&self) -> String {
        match self.source {
            NameSource::Plugin => format!("[plugin.{}]", self.name),
            NameSource::ArgumentAliases => format!("[aliases.arguments.{}]", self.name),
            _ => self.source.to_string(),
        }
    }

    /// What the name not matching means, in a few words.
    fn consequence(&self) -> &'static str {
        match self.source {
            NameSource::ConfirmTools => {
                "this safeguard is off: no call asks for confirmation because of it"
            }
            NameSource::FilterAllow => "it shows nothing",
            NameSource::FilterDeny => "it hides nothing",
            NameSource::Alias { .. } => "the alias does not resolve",
            NameSource::ArgumentAliases => "its argument aliases apply to nothing",
            NameSource::Plugin => "its settings apply to nothing",
        }
    }
}

impl fmt::Display for UnmatchedName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = if self.source == NameSource::Plugin {
            "plugin"
        } else {
            "tool"
        };
        let place = self.place();
        match self.candidates.as_slice() {
            [] => write!(f, "{place}: `{}` matches no {what}", self.name)?,
            candidates => write!(
                f,
                "{place}: `{}` is ambiguous ({})",
                self.name,
                candidates.join(", ")
            )?,
        }
        write!(f, ", so {}", self.consequence())?;
        if let Some(suggestion) = &self.suggestion {
            write!(f, "; did you mean `{suggestion}`?")?;
        }
        Ok(())
    }
}

impl Config {
    /// The names this configuration gives that match nothing loaded now, in
    /// the order of the file's sections: `[confirm] tools`, `[filter] allow`
    /// and `deny`, `[aliases.tools]` targets, `[aliases.arguments]` tools
    /// (matched against any name of a tool, see [`ToolSpec::names`]), and
    /// `[plugin.NAME]` tables (against `plugins`, the names of the plugin
    /// files, loaded or not). Each comes with a close loaded name when one
    /// exists.
    ///
    /// A name that matches nothing is not an error (a plugin may come back
    /// on reload) but deserves a warning: a `[confirm]` name that matches
    /// nothing means a safeguard is off.
    pub fn unmatched_names<'a>(
        &self,
        plugins: impl IntoIterator<Item = &'a str>,
        tools: &[&ToolSpec],
    ) -> Vec<UnmatchedName> {
        let plugins: Vec<&str> = plugins.into_iter().collect();
        let mut tool_names: Vec<&str> = tools.iter().flat_map(|spec| spec.names()).collect();
        tool_names.sort_unstable();
        tool_names.dedup();
        let matches_a_tool =
            |pattern: &str| tool_names.iter().any(|name| glob_matches(pattern, name));
        let unmatched = |source: NameSource, name: &str, pool: &[&str]| UnmatchedName {
            source,
            name: name.to_owned(),
            suggestion: suggest(name, pool),
            candidates: Vec::new(),
        };
        let mut found = Vec::new();
        let patterns = [
            (NameSource::ConfirmTools, &self.confirm.tools),
            (NameSource::FilterAllow, &self.filter.allow),
            (NameSource::FilterDeny, &self.filter.deny),
        ];
        for (source, names) in patterns {
            for name in names.iter().filter(|name| !matches_a_tool(name)) {
                found.push(unmatched(source.clone(), name, &tool_names));
            }
        }
        for (alias, tool) in &self.aliases.tools {
            // As a call resolves it: a listed or qualified name, else ambiguous.
            let resolves = tools
                .iter()
                .any(|spec| spec.name == *tool || spec.qualified_name.as_deref() == Some(tool));
            if resolves {
                continue;
            }
            let candidates: Vec<String> = tools
                .iter()
                .filter(|spec| spec.answers_to(tool))
                .map(|spec| {
                    spec.qualified_name
                        .clone()
                        .unwrap_or_else(|| spec.name.clone())
                })
                .collect();
            let source = NameSource::Alias {
                alias: alias.clone(),
            };
            let mut name = unmatched(source, tool, &tool_names);
            if candidates.len() > 1 {
                name.suggestion = None;
                name.candidates = candidates;
            }
            found.push(name);
        }
        for tool in self.aliases.arguments.keys() {
            if !tools.iter().any(|spec| spec.answers_to(tool)) {
                found.push(unmatched(NameSource::ArgumentAliases, tool, &tool_names));
            }
        }
        for plugin in self.plugin.keys() {
            if !plugins.contains(&plugin.as_str()) {
                found.push(unmatched(NameSource::Plugin, plugin, &plugins));
            }
        }
        found
    }
}

/// The name of `pool` closest to `name`, if it looks like a slip.
fn suggest(name: &str, pool: &[&str]) -> Option<String> {
    crate::suggest::closest(name, pool.iter().copied()).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::*;

    fn spec(listed: &str, qualified: &str) -> ToolSpec {
        let mut spec = ToolSpec::new(listed, "", json!({"type": "object"}));
        spec.qualified_name = Some(qualified.into());
        spec
    }

    fn config(text: &str) -> Config {
        Config::parse(text, Path::new("toolhost.toml")).unwrap()
    }

    #[test]
    fn names_that_match_nothing_are_found_with_a_suggestion() {
        let config = config(
            r#"
[confirm]
tools = ["write-file", "fs.read_file", "list_*"]
[filter]
allow = ["*"]
deny = ["nosuchtool", "text.*", "echo.*"]
[aliases.tools]
wc = "word_count_old"
count = "text.word_count"
plus = "add"
[aliases.arguments.write_file]
content = "text"
[aliases.arguments.nope]
x = "y"
[plugin.fss.limits]
fuel = 1000
[plugin.fs.limits]
fuel = 1000
"#,
        );
        let tools = [
            spec("write_file", "fs.write_file"),
            spec("read_file", "fs.read_file"),
            spec("list_dir", "fs.list_dir"),
            spec("word_count", "text.word_count"),
            spec("echo.add", "echo.add"),
            spec("echo2.add", "echo2.add"),
        ];
        let specs: Vec<&ToolSpec> = tools.iter().collect();
        let found = config.unmatched_names(["fs", "text", "echo", "echo2"], &specs);
        let shown: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "[confirm] tools: `write-file` matches no tool, so this safeguard is off: no call asks for confirmation because of it; did you mean `write_file`?",
                "[filter] deny: `nosuchtool` matches no tool, so it hides nothing",
                "[aliases.tools] plus: `add` is ambiguous (echo.add, echo2.add), so the alias does not resolve",
                "[aliases.tools] wc: `word_count_old` matches no tool, so the alias does not resolve; did you mean `word_count`?",
                "[aliases.arguments.nope]: `nope` matches no tool, so its argument aliases apply to nothing",
                "[plugin.fss]: `fss` matches no plugin, so its settings apply to nothing; did you mean `fs`?",
            ]
        );
        assert_eq!(found[0].source, NameSource::ConfirmTools);
        assert_eq!(found[0].suggestion.as_deref(), Some("write_file"));
        assert_eq!(found[2].candidates, ["echo.add", "echo2.add"]);
    }

    #[test]
    fn suggestions_are_only_for_slips() {
        let pool = ["write_file", "read_file", "fs"];
        assert_eq!(suggest("Write-File", &pool).as_deref(), Some("write_file"));
        assert_eq!(suggest("fss", &pool).as_deref(), Some("fs"));
        assert_eq!(suggest("nosuchtool", &pool), None);
        assert_eq!(suggest("write_*", &pool), None);
    }
}
