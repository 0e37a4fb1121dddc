//! The alias layer: extra names for tools and their argument keys (Eino's
//! `ToolAliases`).
//!
//! It resolves names through [`Toolset::lookup`], so a name alias is callable
//! (and found by [`ToolsetExt::find`](super::ToolsetExt::find)) but **not
//! listed**: the model sees each tool once, under its canonical name, and the
//! aliases only catch the names models tend to produce instead.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use super::{BoxFuture, Context, Layer, Started, Tool, Toolset};
use crate::error::CallError;
use crate::tool::{Prepared, ToolSpec};

/// The aliases of one tool (Eino's `ToolAliasConfig`).
///
/// # Examples
/// ```
/// use toolhost::toolset::ToolAliases;
/// let search = ToolAliases::new()
///     .name("web_search")
///     .name("lookup")
///     .argument("query", ["q", "keyword"]);
/// assert_eq!(search.names, ["web_search", "lookup"]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolAliases {
    /// Other names the tool answers to.
    pub names: Vec<String>,
    /// For a top-level argument key (the canonical key), the other keys that
    /// mean it, in order of preference.
    pub arguments: BTreeMap<String, Vec<String>>,
}

impl ToolAliases {
    /// No aliases.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds another name for the tool.
    pub fn name(mut self, alias: impl Into<String>) -> Self {
        self.names.push(alias.into());
        self
    }

    /// Adds other keys meaning the top-level argument `canonical`.
    pub fn argument<I, S>(mut self, canonical: impl Into<String>, aliases: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.arguments
            .entry(canonical.into())
            .or_default()
            .extend(aliases.into_iter().map(Into::into));
        self
    }
}

/// A bad alias configuration, found when the [`Aliases`] layer is built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AliasError {
    /// An alias (of the tool or of an argument key) is the empty string.
    #[error("aliases of `{tool}`: an alias is empty")]
    EmptyAlias {
        /// The tool.
        tool: String,
    },
    /// A canonical argument key is the empty string.
    #[error("aliases of `{tool}`: an argument key is empty")]
    EmptyKey {
        /// The tool.
        tool: String,
    },
    /// A canonical argument key contains `.`: only top-level keys have aliases.
    #[error(
        "aliases of `{tool}`: argument key `{key}` contains `.`; only top-level keys can have aliases"
    )]
    NestedKey {
        /// The tool.
        tool: String,
        /// The key.
        key: String,
    },
    /// A name alias is already the name of a tool.
    #[error("alias `{alias}` of `{tool}` is already the name of a tool")]
    AliasIsToolName {
        /// The alias.
        alias: String,
        /// The tool it was configured for.
        tool: String,
    },
    /// One name alias for two tools.
    #[error("alias `{alias}` is configured for two tools: `{first}` and `{second}`")]
    AmbiguousAlias {
        /// The alias.
        alias: String,
        /// One tool.
        first: String,
        /// The other tool.
        second: String,
    },
    /// An argument alias is a property of the tool's input schema, or another
    /// configured canonical key.
    #[error(
        "aliases of `{tool}`: argument alias `{alias}` is already an argument of the tool (a schema property or a configured key)"
    )]
    ArgumentClash {
        /// The tool.
        tool: String,
        /// The alias.
        alias: String,
    },
    /// One argument alias for two canonical keys.
    #[error(
        "aliases of `{tool}`: argument alias `{alias}` is configured for two keys: `{first}` and `{second}`"
    )]
    AmbiguousArgument {
        /// The tool.
        tool: String,
        /// The alias.
        alias: String,
        /// One key.
        first: String,
        /// The other key.
        second: String,
    },
}

/// A tool's argument aliases: for each canonical key, its aliases in order.
#[derive(Debug)]
struct KeyAliases {
    keys: Vec<(String, Vec<String>)>,
}

impl KeyAliases {
    /// Eino's rule: top-level keys only; a canonical key already present wins
    /// and its aliases are dropped; otherwise the first alias present (in
    /// configured order) supplies it. Non-objects pass unchanged. An alias that
    /// the tool's current schema declares as a property (it can change on
    /// reload) is a real key and left alone.
    fn remap(&self, spec: &ToolSpec, arguments: Value) -> Value {
        let Value::Object(mut map) = arguments else {
            return arguments;
        };
        let properties = spec
            .input_schema
            .get("properties")
            .and_then(Value::as_object);
        let declared = |key: &str| properties.is_some_and(|p| p.contains_key(key));
        for (canonical, aliases) in &self.keys {
            for alias in aliases {
                if declared(alias) {
                    continue;
                }
                if let Some(value) = map.remove(alias.as_str())
                    && !map.contains_key(canonical.as_str())
                {
                    map.insert(canonical.clone(), value);
                }
            }
        }
        Value::Object(map)
    }
}

/// A toolset whose tools also answer to other names, and take other keys for
/// their top-level arguments (Eino's `ToolAliases`).
///
/// - A name alias resolves on call ([`Toolset::lookup`]) and is not listed. A
///   real tool name always wins over an alias (should a plugin gain a tool of
///   that name after a reload); an alias of a tool this context cannot see
///   does not resolve.
/// - An alias's tool may be given bare (`word_count`) or qualified
///   (`text.word_count`), and may be missing: such a stale alias is not an
///   error. It resolves to nothing (a call of it fails with
///   [`CallError::AliasUnresolved`], saying which tool it points at) until its
///   tool is there again, say after a reload; [`Aliases::unresolved`] lists
///   them.
/// - Argument aliases are remapped before the call; a canonical key already
///   present wins and the alias key is dropped. They apply to the tool under
///   any of its names ([`ToolSpec::names`]).
/// - The configuration itself is checked when the layer is built
///   ([`AliasError`]), against the tools an empty context sees where it
///   depends on them (an alias that is a tool's name, an argument alias that
///   is a property of its tool's schema).
///
/// Put it outermost (outside [`Filter`](super::Filter) and
/// [`Confirm`](super::Confirm)): then filters and confirmation rules see
/// canonical names, and a confirmation request shows canonical arguments.
///
/// # Examples
/// ```
/// use toolhost::toolset::{Aliases, SinglePlugin, ToolAliases};
/// # fn build(plugin: toolhost::Plugin) -> Result<(), toolhost::toolset::AliasError> {
/// let set = Aliases::new(
///     SinglePlugin::new(plugin),
///     [("add", ToolAliases::new().name("sum").argument("a", ["x"]).argument("b", ["y"]))],
/// )?;
/// # let _ = set; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Aliases<T> {
    inner: T,
    /// Name alias → canonical name.
    names: HashMap<String, String>,
    /// Canonical name → its argument aliases (only tools that have some).
    arguments: HashMap<String, Arc<KeyAliases>>,
}

impl<T: Toolset> Aliases<T> {
    /// Wraps `inner` with aliases per canonical tool name. Entries for the same
    /// tool are merged.
    ///
    /// # Errors
    /// [`AliasError`] for the first problem found, checked in tool-name order:
    /// an empty alias or key, a nested key, a name alias that is a tool's name
    /// or configured for two tools, an argument alias that is a property of
    /// its tool's schema or configured for two keys. A tool that is missing is
    /// not an error (see [`Aliases::unresolved`]).
    pub fn new<I, K>(inner: T, config: I) -> Result<Self, AliasError>
    where
        I: IntoIterator<Item = (K, ToolAliases)>,
        K: Into<String>,
    {
        let mut merged: BTreeMap<String, ToolAliases> = BTreeMap::new();
        for (tool, aliases) in config {
            let entry = merged.entry(tool.into()).or_default();
            entry.names.extend(aliases.names);
            for (key, keys) in aliases.arguments {
                entry.arguments.entry(key).or_default().extend(keys);
            }
        }
        let cx = Context::new();
        let listed: HashSet<String> = inner
            .tools(&cx)
            .iter()
            .map(|t| t.spec().name.clone())
            .collect();
        let mut names: HashMap<String, String> = HashMap::new();
        let mut arguments = HashMap::new();
        for (tool, config) in merged {
            // A missing tool is no error: its aliases wait for it.
            let target = inner.lookup(&cx, &tool);
            let spec = target.as_ref().map(|t| t.spec());
            for alias in config.names {
                if alias.is_empty() {
                    return Err(AliasError::EmptyAlias { tool });
                }
                if listed.contains(alias.as_str()) {
                    return Err(AliasError::AliasIsToolName { alias, tool });
                }
                match names.get(&alias) {
                    Some(first) if *first != tool => {
                        return Err(AliasError::AmbiguousAlias {
                            first: first.clone(),
                            alias,
                            second: tool,
                        });
                    }
                    _ => {
                        names.insert(alias, tool.clone());
                    }
                }
            }
            if let Some(keys) = check_arguments(&tool, spec, config.arguments)? {
                arguments.insert(tool, Arc::new(keys));
            }
        }
        Ok(Self {
            inner,
            names,
            arguments,
        })
    }

    /// The canonical name `name` stands for, if it is an alias.
    pub fn canonical(&self, name: &str) -> Option<&str> {
        self.names.get(name).map(String::as_str)
    }

    /// The name aliases whose tool does not resolve in this context (missing,
    /// hidden or ambiguous), as `(alias, tool)` in alias order.
    pub fn unresolved(&self, cx: &Context) -> Vec<(&str, &str)> {
        let mut stale: Vec<(&str, &str)> = self
            .names
            .iter()
            .filter(|(_, tool)| self.inner.lookup(cx, tool).is_none())
            .map(|(alias, tool)| (alias.as_str(), tool.as_str()))
            .collect();
        stale.sort_unstable();
        stale
    }

    /// The wrapped set.
    pub fn inner(&self) -> &T {
        &self.inner
    }
}

/// Checks one tool's argument aliases (against its schema, when the tool is
/// there); `None` when it has none.
fn check_arguments(
    tool: &str,
    spec: Option<&ToolSpec>,
    arguments: BTreeMap<String, Vec<String>>,
) -> Result<Option<KeyAliases>, AliasError> {
    let properties = spec
        .and_then(|spec| spec.input_schema.get("properties"))
        .and_then(Value::as_object);
    let mut seen: HashMap<&str, &str> = HashMap::new();
    for (key, aliases) in &arguments {
        if key.is_empty() {
            return Err(AliasError::EmptyKey { tool: tool.into() });
        }
        if key.contains('.') {
            return Err(AliasError::NestedKey {
                tool: tool.into(),
                key: key.clone(),
            });
        }
        for alias in aliases {
            if alias.is_empty() {
                return Err(AliasError::EmptyAlias { tool: tool.into() });
            }
            let property = properties.is_some_and(|p| p.contains_key(alias));
            if property || arguments.contains_key(alias) {
                return Err(AliasError::ArgumentClash {
                    tool: tool.into(),
                    alias: alias.clone(),
                });
            }
            match seen.get(alias.as_str()) {
                Some(first) if first != key => {
                    return Err(AliasError::AmbiguousArgument {
                        tool: tool.into(),
                        alias: alias.clone(),
                        first: (*first).to_owned(),
                        second: key.clone(),
                    });
                }
                _ => {
                    seen.insert(alias, key);
                }
            }
        }
    }
    let keys: Vec<(String, Vec<String>)> = arguments
        .into_iter()
        .filter(|(_, aliases)| !aliases.is_empty())
        .map(|(key, mut aliases)| {
            // Duplicates are harmless; keep the first occurrence's order.
            let mut once = HashSet::new();
            aliases.retain(|a| once.insert(a.clone()));
            (key, aliases)
        })
        .collect();
    Ok((!keys.is_empty()).then_some(KeyAliases { keys }))
}

impl<T: Toolset> Layer for Aliases<T> {
    type Inner = T;

    fn inner(&self) -> &T {
        &self.inner
    }

    fn wrap(&self, _cx: &Context, tool: Arc<dyn Tool>) -> Arc<dyn Tool> {
        let keys = tool
            .spec()
            .names()
            .find_map(|name| self.arguments.get(name));
        match keys {
            Some(keys) => Arc::new(Aliased {
                tool,
                keys: Arc::clone(keys),
            }),
            None => tool,
        }
    }

    fn resolve(&self, cx: &Context, name: &str) -> Option<Arc<dyn Tool>> {
        let tool = self.inner.lookup(cx, name).or_else(|| {
            let canonical = self.names.get(name)?;
            self.inner.lookup(cx, canonical)
        })?;
        Some(self.wrap(cx, tool))
    }

    fn unresolved(&self, cx: &Context, name: &str) -> CallError {
        match self.names.get(name) {
            Some(tool) => CallError::AliasUnresolved {
                alias: name.to_owned(),
                tool: tool.clone(),
                problem: Box::new(self.inner.not_found(cx, tool)),
            },
            None => self.inner.not_found(cx, name),
        }
    }
}

/// A tool whose argument aliases are remapped before it runs.
struct Aliased {
    tool: Arc<dyn Tool>,
    keys: Arc<KeyAliases>,
}

impl Tool for Aliased {
    fn spec(&self) -> &ToolSpec {
        self.tool.spec()
    }

    fn prepare(&self, cx: &Context, arguments: Value) -> Result<Prepared, CallError> {
        let arguments = self.keys.remap(self.tool.spec(), arguments);
        self.tool.prepare(cx, arguments)
    }

    fn run<'a>(
        &'a self,
        cx: &'a Context,
        arguments: Prepared,
    ) -> BoxFuture<'a, Result<Started, CallError>> {
        self.tool.run(cx, arguments)
    }
}

#[cfg(test)]
mod tests;
