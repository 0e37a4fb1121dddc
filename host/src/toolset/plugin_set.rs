//! A set of loaded plugins, such as a plugins directory, and how tool names
//! resolve across them.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::plugin_catalog::PluginCatalog;
use super::{Context, PluginTool, Tool, Toolset, find_named};
use crate::Engine;
use crate::error::{CallError, LoadError};
use crate::log::LOAD_TARGET;
use crate::plugin::{Plugin, PluginOptions};
use crate::tool::ToolSpec;

/// The plugins loaded from a directory, and the files that failed to load.
///
/// Naming rule: every tool is reachable as `plugin.tool`; a bare `tool` name
/// works while exactly one plugin offers it. When two plugins offer the same
/// name, the bare name is ambiguous (a call to it lists the qualified names)
/// and a warning is logged at load: nothing is silently shadowed.
///
/// A set is a [`Toolset`]: call its tools through
/// [`ToolsetExt`](super::ToolsetExt) or [`start`](crate::toolset::start), and put
/// layers over it ([`Config::layered`](crate::Config::layered)).
///
/// # Examples
/// ```no_run
/// use toolhost::{Context, Engine, EngineConfig, PluginOptions, PluginSet, ToolsetExt};
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let engine = Engine::new(&EngineConfig::default())?;
/// let set = PluginSet::load_dir(&engine, "target/plugins", &PluginOptions::default()).await?;
/// let cx = Context::new();
/// let output = set.invoke(&cx, "word_count", serde_json::json!({"text": "one two"})).await?;
/// println!("{:?}", output.result);
/// # Ok(()) }
/// ```
#[derive(Debug, Default)]
pub struct PluginSet {
    plugins: Vec<Plugin>,
    failures: Vec<LoadError>,
    /// Every tool as the set lists it (see [`PluginSet::listed`]).
    tools: Vec<Arc<dyn Tool>>,
    /// Its plugins' resources, templates and prompts.
    catalog: PluginCatalog,
}

/// A tool as a set lists it.
#[derive(Debug, Clone, Copy)]
pub struct ListedTool<'a> {
    /// The plugin that offers it.
    pub plugin: &'a Plugin,
    /// Its spec.
    pub spec: &'a ToolSpec,
    /// Whether its bare name is unique in the set (else call it as `plugin.tool`).
    pub unique: bool,
}

impl ListedTool<'_> {
    /// The name to call it by: the bare name when unique, else `plugin.tool`.
    pub fn call_name(&self) -> String {
        if self.unique {
            self.spec.name.clone()
        } else {
            format!("{}.{}", self.plugin.name(), self.spec.name)
        }
    }
}

/// Logs a plugin's load (`verb`: loaded, reloaded) on one line, with its tool
/// count and the time it took.
pub(crate) fn log_loaded(verb: &str, plugin: &Plugin, elapsed: Duration) {
    let tools = plugin.tools().count();
    let s = if tools == 1 { "" } else { "s" };
    tracing::info!(
        target: LOAD_TARGET,
        plugin = plugin.name(), tools, elapsed_ms = elapsed.as_millis(),
        "{verb} {} ({tools} tool{s}) in {:.1} s", plugin.name(), elapsed.as_secs_f64()
    );
}

/// Logs why a plugin file did not load, once per failed version.
pub(crate) fn log_failed(path: &Path, error: &dyn std::fmt::Display) {
    tracing::warn!(
        target: LOAD_TARGET,
        plugin = %plugin_name(path),
        "not loaded: {error}"
    );
}

/// Warns that several plugins offer `tool`.
pub(crate) fn warn_clash(tool: &str, plugins: &[String]) {
    tracing::warn!(
        target: crate::log::CLASH_TARGET,
        tool,
        plugins = %plugins.join(", "),
        "several plugins offer this tool; call it as `plugin.tool`"
    );
}

/// One plugin file finished loading (for progress reports).
#[derive(Debug)]
pub struct Loaded<'a> {
    /// The file.
    pub path: &'a Path,
    /// How long it took (compiling, or reading the cache, plus reading declarations).
    pub elapsed: Duration,
    /// Its outcome.
    pub result: Result<&'a Plugin, &'a LoadError>,
}

impl PluginSet {
    /// Loads every `*.wasm` file of a directory, compiling in parallel. A file
    /// that fails to load is recorded in [`PluginSet::failures`]; it never stops
    /// the others. `dir` may also be one `.wasm` file: a set of that plugin.
    ///
    /// # Errors
    /// Fails only if the directory itself cannot be read.
    pub async fn load_dir(
        engine: &Engine,
        dir: impl AsRef<Path>,
        options: &PluginOptions,
    ) -> Result<Self, LoadError> {
        Self::load_dir_with(engine, dir, options, |_| {}).await
    }

    /// As [`PluginSet::load_dir`], calling `progress` as each file finishes.
    ///
    /// # Errors
    /// Fails only if the directory itself cannot be read.
    pub async fn load_dir_with(
        engine: &Engine,
        dir: impl AsRef<Path>,
        options: &PluginOptions,
        progress: impl FnMut(Loaded<'_>),
    ) -> Result<Self, LoadError> {
        Self::load_dir_configured(engine, dir, &|_| options.clone(), progress).await
    }

    /// As [`PluginSet::load_dir_with`], with options per plugin: `options` gets
    /// each plugin's name (its file name without `.wasm`), so limits can differ.
    ///
    /// # Errors
    /// Fails only if the directory itself cannot be read.
    pub async fn load_dir_configured(
        engine: &Engine,
        dir: impl AsRef<Path>,
        options: &(dyn Fn(&str) -> PluginOptions + Sync),
        mut progress: impl FnMut(Loaded<'_>),
    ) -> Result<Self, LoadError> {
        let dir = dir.as_ref();
        let files = wasm_files(dir).map_err(|error| LoadError::Io {
            path: dir.to_owned(),
            error,
        })?;
        let mut tasks = tokio::task::JoinSet::new();
        for (index, path) in files.iter().enumerate() {
            let (engine, path, options) =
                (engine.clone(), path.clone(), options(&plugin_name(path)));
            tasks.spawn(async move {
                let start = Instant::now();
                let result = Plugin::load(&engine, &path, &options).await;
                (index, start.elapsed(), result)
            });
        }
        let mut results: Vec<Option<Result<Plugin, LoadError>>> =
            files.iter().map(|_| None).collect();
        while let Some(joined) = tasks.join_next().await {
            let Ok((index, elapsed, result)) = joined else {
                continue;
            };
            match &result {
                Ok(plugin) => log_loaded("loaded", plugin, elapsed),
                Err(error) => log_failed(&files[index], error),
            }
            progress(Loaded {
                path: &files[index],
                elapsed,
                result: result.as_ref(),
            });
            results[index] = Some(result);
        }
        let (mut plugins, mut failures) = (Vec::new(), Vec::new());
        for (path, result) in files.into_iter().zip(results) {
            match result {
                Some(Ok(plugin)) => plugins.push(plugin),
                Some(Err(err)) => failures.push(err),
                None => failures.push(LoadError::Engine {
                    path,
                    reason: "the loading task failed".into(),
                }),
            }
        }
        let set = Self::assemble(plugins, failures);
        set.warn_clashes();
        Ok(set)
    }

    /// A set of already loaded plugins.
    pub fn from_plugins(plugins: Vec<Plugin>) -> Self {
        let set = Self::assemble(plugins, Vec::new());
        set.warn_clashes();
        set
    }

    /// This set with `plugins` added (loaded from elsewhere, such as OCI
    /// sources), listed after its own; clashes they bring are warned about.
    pub fn with_plugins(self, plugins: Vec<Plugin>) -> Self {
        let before = self.clashes();
        let mut all = self.plugins;
        all.extend(plugins);
        let set = Self::assemble(all, self.failures);
        for (tool, plugins) in set.clashes() {
            if before.get(&tool) != Some(&plugins) {
                warn_clash(&tool, &plugins);
            }
        }
        set.catalog.warn_new_clashes(Some(&self.catalog));
        set
    }

    /// A set of already loaded plugins, without the clash warnings (for a
    /// caller that warns about each clash once, as it appears).
    pub(crate) fn from_plugins_quietly(plugins: Vec<Plugin>) -> Self {
        Self::assemble(plugins, Vec::new())
    }

    fn assemble(plugins: Vec<Plugin>, failures: Vec<LoadError>) -> Self {
        let catalog = PluginCatalog::of(&plugins);
        let mut set = Self {
            plugins,
            failures,
            tools: Vec::new(),
            catalog,
        };
        set.tools = set
            .listed()
            .into_iter()
            .filter_map(|listed| {
                PluginTool::new(listed.plugin, &listed.spec.name)
                    .map(|tool| tool.renamed(listed.call_name()))
            })
            .map(|tool| Arc::new(tool) as Arc<dyn Tool>)
            .collect();
        set
    }

    fn warn_clashes(&self) {
        for (tool, plugins) in self.clashes() {
            warn_clash(&tool, &plugins);
        }
        self.catalog.warn_new_clashes(None);
    }

    /// The tool names more than one plugin offers, with those plugins.
    pub(crate) fn clashes(&self) -> BTreeMap<String, Vec<String>> {
        let mut owners: HashMap<&str, Vec<String>> = HashMap::new();
        for plugin in &self.plugins {
            for tool in plugin.tools() {
                owners
                    .entry(&tool.name)
                    .or_default()
                    .push(plugin.name().to_owned());
            }
        }
        owners
            .into_iter()
            .filter(|(_, plugins)| plugins.len() > 1)
            .map(|(tool, plugins)| (tool.to_owned(), plugins))
            .collect()
    }

    /// The loaded plugins, in file-name order.
    pub fn plugins(&self) -> &[Plugin] {
        &self.plugins
    }

    /// The files that failed to load, with why.
    pub fn failures(&self) -> &[LoadError] {
        &self.failures
    }

    /// Every tool of every plugin, with the plugin that offers it and
    /// whether its bare name is unique.
    pub fn listed(&self) -> Vec<ListedTool<'_>> {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for tool in self.plugins.iter().flat_map(Plugin::tools) {
            *counts.entry(&tool.name).or_default() += 1;
        }
        self.plugins
            .iter()
            .flat_map(|plugin| {
                let counts = &counts;
                plugin.tools().map(move |spec| ListedTool {
                    plugin,
                    spec,
                    unique: counts.get(spec.name.as_str()) == Some(&1),
                })
            })
            .collect()
    }

    /// Finds the plugin and tool a name refers to (`tool` or `plugin.tool`).
    ///
    /// # Errors
    /// [`CallError::AmbiguousTool`] listing the qualified names when several
    /// plugins offer a bare name; else [`CallError::UnknownTool`] listing the
    /// names that exist (qualified ones where a bare name is ambiguous).
    pub fn resolve(&self, name: &str) -> Result<(&Plugin, &ToolSpec), CallError> {
        // Tool names never contain `.`; plugin names (file names) may.
        if let Some((plugin_name, tool_name)) = name.rsplit_once('.')
            && let Some(plugin) = self.plugins.iter().find(|p| p.name() == plugin_name)
            && let Some(spec) = plugin.tool(tool_name)
        {
            return Ok((plugin, spec));
        }
        let matches: Vec<_> = self
            .plugins
            .iter()
            .filter_map(|p| p.tool(name).map(|spec| (p, spec)))
            .collect();
        match matches.as_slice() {
            [only] => Ok(*only),
            [_, _, ..] => Err(CallError::AmbiguousTool {
                tool: name.to_owned(),
                candidates: matches
                    .iter()
                    .map(|(plugin, spec)| format!("{}.{}", plugin.name(), spec.name))
                    .collect(),
            }),
            [] => Err(CallError::UnknownTool {
                tool: name.to_owned(),
                available: self.listed().iter().map(ListedTool::call_name).collect(),
            }),
        }
    }
}

impl Toolset for PluginSet {
    fn name(&self) -> &str {
        "plugins"
    }

    fn tools(&self, _cx: &Context) -> Vec<Arc<dyn Tool>> {
        self.tools.clone()
    }

    fn lookup(&self, _cx: &Context, name: &str) -> Option<Arc<dyn Tool>> {
        find_named(&self.tools, name)
    }

    catalog_of!(self => &self.catalog, false);
}

/// The `*.wasm` files directly inside `dir`, sorted by name; `dir` itself
/// when it is one `.wasm` file.
fn wasm_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    if dir.is_file() && dir.extension().is_some_and(|e| e == "wasm") {
        return Ok(vec![dir.to_owned()]);
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "wasm") && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// A plugin's name: its file name without `.wasm`.
pub(crate) fn plugin_name(path: &Path) -> String {
    path.file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default()
}
