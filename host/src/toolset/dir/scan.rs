//! Scanning the directory: listing its files, loading the changed ones
//! once they settle, diffing tool listings and building snapshots.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use super::{LoadState, PluginStatus, Shared, ToolsetChange};
use crate::Engine;
use crate::error::LoadError;
use crate::log::LOAD_TARGET;
use crate::plugin::{CodeState, Plugin, PluginOptions, tools_sidecar_path};
use crate::policy::sidecar_path;
use crate::toolset::plugin_catalog::PluginCatalog;
use crate::toolset::{PluginSet, log_failed, log_loaded, plugin_name, warn_clash};
use crate::toolset::{PluginTool, Tool};

/// How long a file's size and times must stay unchanged before it is loaded.
const SETTLE_INTERVAL: Duration = Duration::from_millis(100);
/// After this many settle checks (about 10 s) a file that keeps changing is
/// loaded anyway; if that fails, the next change retries it.
const MAX_SETTLE_CHECKS: u32 = 100;
/// How often a load that failed while the file was still changing is retried.
const LOAD_ATTEMPTS: u32 = 5;

/// One immutable state of the directory.
pub(super) struct Snapshot {
    pub(super) files: BTreeMap<PathBuf, FileEntry>,
    pub(super) tools: Vec<Arc<dyn Tool>>,
    /// Index into `tools` by call name, so a call's lookup copies nothing.
    pub(super) by_name: HashMap<String, usize>,
    pub(super) status: Vec<PluginStatus>,
    /// Tool names several plugins offer (each warned about once, when it appears).
    pub(super) clashes: BTreeMap<String, Vec<String>>,
    /// The plugins' resources, templates and prompts.
    pub(super) catalog: PluginCatalog,
}

#[derive(Clone)]
pub(super) struct FileEntry {
    /// The metadata of the version last examined; a rescan skips the file while it matches.
    pub(super) seen: Option<Fingerprint>,
    /// The content hash of the version last examined (unknown for the initial load).
    pub(super) hash: Option<u64>,
    /// The version serving, if any.
    pub(super) plugin: Option<Plugin>,
    /// Why the version last examined failed to load, if it did.
    pub(super) failure: Option<String>,
    /// Its first load is still running.
    pub(super) loading: bool,
    pub(super) changed_at: SystemTime,
}

/// What tells one version of a plugin from another without reading it: its
/// file's metadata and its sidecars' (its policy, its tools file): a change
/// to either is a new version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Fingerprint {
    pub(super) wasm: FileMeta,
    pub(super) policy: Option<FileMeta>,
    pub(super) tools: Option<FileMeta>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileMeta {
    pub(super) len: u64,
    pub(super) modified: Option<SystemTime>,
    #[cfg(unix)]
    pub(super) inode: (u64, u64),
    #[cfg(unix)]
    pub(super) ctime: (i64, i64),
}

impl FileMeta {
    pub(super) fn of(metadata: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        use std::os::unix::fs::MetadataExt;
        Self {
            len: metadata.len(),
            modified: metadata.modified().ok(),
            #[cfg(unix)]
            inode: (metadata.dev(), metadata.ino()),
            #[cfg(unix)]
            ctime: (metadata.ctime(), metadata.ctime_nsec()),
        }
    }
}

impl Fingerprint {
    /// The fingerprint of `path` (a plugin file with this metadata) and its sidecars.
    pub(super) fn of(path: &Path, metadata: &std::fs::Metadata) -> Self {
        let meta = |sidecar: PathBuf| std::fs::metadata(sidecar).ok().as_ref().map(FileMeta::of);
        Self {
            wasm: FileMeta::of(metadata),
            policy: meta(sidecar_path(path)),
            tools: meta(tools_sidecar_path(path)),
        }
    }
}

/// What loading one changed file came to.
pub(super) enum Outcome {
    /// The file is gone.
    Gone,
    /// Its content is the version already examined.
    Unchanged { seen: Fingerprint },
    /// A new version loaded, in this long.
    Loaded {
        seen: Fingerprint,
        hash: u64,
        plugin: Plugin,
        took: Duration,
    },
    /// The new version failed to load.
    Failed {
        seen: Option<Fingerprint>,
        hash: Option<u64>,
        error: String,
    },
}

impl Shared {
    pub(super) fn snapshot(&self) -> Arc<Snapshot> {
        let current = self.current.read().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(&current)
    }

    /// Rescans the directory. `force` names files to re-read even if their
    /// metadata looks unchanged (the watcher saw them written).
    pub(super) async fn rescan(
        self: &Arc<Self>,
        force: &HashSet<PathBuf>,
    ) -> Result<ToolsetChange, LoadError> {
        let _serial = self.rescan.lock().await;
        let old = self.snapshot();
        let mut listing = list_dir(&self.dir).await?;
        let externals = self
            .externals
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for (label, file) in &externals {
            // Unreadable metadata: loaded (and failing with why) as a dir file is.
            listing.push((label.clone(), fingerprint(file).await.ok().flatten()));
        }
        let mut files = old.files.clone();
        // `touched`: some entry changed; `structural`: the plugins or failures did.
        let (mut touched, mut structural) = (false, false);
        let listed: HashSet<&Path> = listing.iter().map(|(path, _)| path.as_path()).collect();
        files.retain(|path, entry| {
            let keep = listed.contains(path.as_path());
            if !keep {
                log_removed(entry);
            }
            structural |= !keep;
            keep
        });
        touched |= structural;

        let mut loads = tokio::task::JoinSet::new();
        let mut paths = HashMap::new();
        for (path, fingerprint) in listing {
            let entry = files.get(&path);
            let unchanged = fingerprint.is_some() && entry.and_then(|e| e.seen) == fingerprint;
            if unchanged && !force.contains(&path) {
                continue;
            }
            let previous = entry.and_then(|e| e.hash);
            let mut options = (self.options)(&plugin_name(&path));
            let file = match externals.get(&path) {
                Some(file) => {
                    // Grants are the operator's: never a sidecar next to the file.
                    options.sidecar_policy(false);
                    file.clone()
                }
                None => path.clone(),
            };
            let (engine, owned) = (self.engine.clone(), path.clone());
            let task = loads.spawn(async move {
                load_settled(&engine, &owned, &file, &options, previous).await
            });
            paths.insert(task.id(), path);
        }

        let mut change = ToolsetChange::default();
        while let Some(joined) = loads.join_next_with_id().await {
            let (path, outcome) = match joined {
                Ok((id, outcome)) => (paths.remove(&id), outcome),
                Err(err) => (
                    paths.remove(&err.id()),
                    Outcome::Failed {
                        seen: None,
                        hash: None,
                        error: format!("the loading task failed: {err}"),
                    },
                ),
            };
            let Some(path) = path else { continue };
            touched = true;
            structural |= !matches!(outcome, Outcome::Unchanged { .. });
            let now = SystemTime::now();
            match outcome {
                Outcome::Gone => {
                    if let Some(entry) = files.remove(&path) {
                        log_removed(&entry);
                    }
                }
                Outcome::Unchanged { seen } => {
                    if let Some(entry) = files.get_mut(&path) {
                        entry.seen = Some(seen);
                    }
                }
                Outcome::Loaded {
                    seen,
                    hash,
                    plugin,
                    took,
                } => {
                    let replaces = files.get(&path).is_some_and(|e| e.plugin.is_some());
                    log_loaded(if replaces { "reloaded" } else { "loaded" }, &plugin, took);
                    self.follow(path.clone(), &plugin);
                    files.insert(
                        path,
                        FileEntry {
                            seen: Some(seen),
                            hash: Some(hash),
                            plugin: Some(plugin),
                            failure: None,
                            loading: false,
                            changed_at: now,
                        },
                    );
                }
                Outcome::Failed { seen, hash, error } => {
                    let entry = files.entry(path.clone()).or_insert_with(|| FileEntry {
                        seen: None,
                        hash: None,
                        plugin: None,
                        failure: None,
                        loading: false,
                        changed_at: now,
                    });
                    log_failed(&path, &error);
                    entry.seen = seen;
                    entry.hash = hash;
                    entry.loading = false;
                    entry.failure = Some(error.clone());
                    entry.changed_at = now;
                    change.failed.push((path, error));
                }
            }
        }
        if !touched {
            return Ok(change);
        }

        let new = Arc::new(if structural {
            Snapshot::new(files, Some(&old))
        } else {
            // Only fingerprints changed: keep the tools (and skip the clash warnings).
            Snapshot {
                files,
                tools: old.tools.clone(),
                by_name: old.by_name.clone(),
                status: old.status.clone(),
                clashes: old.clashes.clone(),
                catalog: old.catalog.clone(),
            }
        });
        diff(&old.tools, &new.tools, &mut change);
        (change.resources, change.prompts) = old.catalog.differences(&new.catalog);
        change.failed.sort();
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = new;
        if !change.is_empty() {
            // No subscriber is not an error.
            let _ = self.events.send(change.clone());
        }
        Ok(change)
    }

    /// Puts the outcome of a file's first load in the set, unless a rescan
    /// has dealt with the file meanwhile.
    pub(super) async fn first_loaded(
        self: &Arc<Self>,
        path: PathBuf,
        result: Result<Plugin, LoadError>,
        took: Duration,
    ) {
        let _serial = self.rescan.lock().await;
        let old = self.snapshot();
        let mut files = old.files.clone();
        let Some(entry) = files.get_mut(&path).filter(|entry| entry.loading) else {
            return;
        };
        let mut change = ToolsetChange::default();
        entry.loading = false;
        entry.changed_at = SystemTime::now();
        match result {
            Ok(plugin) => {
                log_loaded("loaded", &plugin, took);
                self.follow(path, &plugin);
                entry.plugin = Some(plugin);
            }
            Err(error) => {
                log_failed(&path, &error);
                entry.failure = Some(error.to_string());
                change.failed.push((path, error.to_string()));
            }
        }
        let new = Arc::new(Snapshot::new(files, Some(&old)));
        diff(&old.tools, &new.tools, &mut change);
        (change.resources, change.prompts) = old.catalog.differences(&new.catalog);
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = new;
        if !change.is_empty() {
            let _ = self.events.send(change);
        }
    }

    /// Loads a plugin again if its code, once loaded, shows that it was
    /// listed from a stale cache manifest (which is rewritten by then).
    pub(super) fn follow(self: &Arc<Self>, path: PathBuf, plugin: &Plugin) {
        let mut state = plugin.code_state();
        if matches!(*state.borrow(), CodeState::Loaded | CodeState::Failed) {
            return;
        }
        let (shared, id) = (Arc::downgrade(self), plugin.id());
        tokio::spawn(async move {
            // Ends when the plugin is dropped (its sender with it).
            let Ok(stale) = state
                .wait_for(|state| *state != CodeState::Pending)
                .await
                .map(|state| matches!(*state, CodeState::Stale { .. }))
            else {
                return;
            };
            if let (true, Some(shared)) = (stale, shared.upgrade()) {
                shared.reload_stale(&path, id).await;
            }
        });
    }

    /// Loads `path` again if the version serving is `id`.
    pub(super) async fn reload_stale(self: &Arc<Self>, path: &Path, id: u64) {
        {
            let _serial = self.rescan.lock().await;
            let old = self.snapshot();
            let serving = old.files.get(path).and_then(|entry| entry.plugin.as_ref());
            if serving.is_none_or(|plugin| plugin.id() != id) {
                return;
            }
            let mut files = old.files.clone();
            if let Some(entry) = files.get_mut(path) {
                // Forgotten: the next rescan loads the file whatever its metadata.
                entry.seen = None;
                entry.hash = None;
            }
            let new = Snapshot {
                files,
                tools: old.tools.clone(),
                by_name: old.by_name.clone(),
                status: old.status.clone(),
                clashes: old.clashes.clone(),
                catalog: old.catalog.clone(),
            };
            *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(new);
        }
        tracing::info!(
            target: LOAD_TARGET, plugin = %plugin_name(path),
            "loading the plugin again: its cache manifest was stale"
        );
        if let Err(error) = self.rescan(&HashSet::new()).await {
            tracing::warn!(%error, "rescanning the plugins directory");
        }
    }
}

impl Snapshot {
    /// The snapshot of these files; a clash of tool names that `previous`
    /// did not have is warned about (once, not at every later snapshot).
    pub(super) fn new(files: BTreeMap<PathBuf, FileEntry>, previous: Option<&Snapshot>) -> Self {
        let set = PluginSet::from_plugins_quietly(
            files
                .values()
                .filter_map(|entry| entry.plugin.clone())
                .collect(),
        );
        let clashes = set.clashes();
        for (tool, plugins) in &clashes {
            if previous.and_then(|p| p.clashes.get(tool)) != Some(plugins) {
                warn_clash(tool, plugins);
            }
        }
        let catalog = PluginCatalog::of(set.plugins());
        catalog.warn_new_clashes(previous.map(|p| &p.catalog));
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        let mut names: HashMap<&Path, Vec<String>> = HashMap::new();
        for listed in set.listed() {
            let name = listed.call_name();
            if let Some(tool) = PluginTool::new(listed.plugin, &listed.spec.name) {
                names
                    .entry(listed.plugin.path())
                    .or_default()
                    .push(name.clone());
                tools.push(Arc::new(tool.renamed(name)));
            }
        }
        let status = files
            .iter()
            .map(|(path, entry)| PluginStatus {
                path: path.clone(),
                plugin: match &entry.plugin {
                    Some(plugin) => plugin.name().to_owned(),
                    None => plugin_name(path),
                },
                state: match &entry.failure {
                    Some(error) => LoadState::Failed {
                        error: error.clone(),
                        serving_previous: entry.plugin.is_some(),
                    },
                    None if entry.loading => LoadState::Loading,
                    None => LoadState::Loaded {
                        tools: names.get(path.as_path()).cloned().unwrap_or_default(),
                    },
                },
                changed_at: entry.changed_at,
            })
            .collect();
        let mut by_name = HashMap::with_capacity(tools.len() * 2);
        for (index, tool) in tools.iter().enumerate() {
            // The first of equal names wins, as in `Toolset::lookup`'s default.
            by_name.entry(tool.spec().name.clone()).or_insert(index);
        }
        // `plugin.tool` always reaches a tool, also one listed under its bare
        // name; listed names win (a bare name never contains `.`, so only
        // plugins sharing a name could collide here).
        for (index, tool) in tools.iter().enumerate() {
            if let Some(qualified) = &tool.spec().qualified_name {
                by_name.entry(qualified.clone()).or_insert(index);
            }
        }
        Self {
            files,
            tools,
            by_name,
            status,
            clashes,
            catalog,
        }
    }
}

/// Logs that a plugin left the set because its file is gone.
pub(super) fn log_removed(entry: &FileEntry) {
    if let Some(plugin) = &entry.plugin {
        tracing::info!(target: LOAD_TARGET, plugin = plugin.name(), "removed {}", plugin.name());
    }
}

/// Fills in the tools added, removed and changed between two listings.
pub(super) fn diff(old: &[Arc<dyn Tool>], new: &[Arc<dyn Tool>], change: &mut ToolsetChange) {
    let old: BTreeMap<&str, _> = old
        .iter()
        .map(|t| (t.spec().name.as_str(), t.spec()))
        .collect();
    let new: BTreeMap<&str, _> = new
        .iter()
        .map(|t| (t.spec().name.as_str(), t.spec()))
        .collect();
    for (name, spec) in &new {
        match old.get(name) {
            None => change.added.push((*name).to_owned()),
            Some(before) if before != spec => change.changed.push((*name).to_owned()),
            Some(_) => {}
        }
    }
    change.removed = old
        .keys()
        .filter(|name| !new.contains_key(*name))
        .map(|name| (*name).to_owned())
        .collect();
}

/// Waits for a changed file to settle, then loads it as the plugin listed
/// under `path`; retries while a failure may be due to the file still being
/// written. `file` is `path`, or for an external plugin the file serving it
/// (whose sidecar is never read).
pub(super) async fn load_settled(
    engine: &Engine,
    path: &Path,
    file: &Path,
    options: &PluginOptions,
    previous: Option<u64>,
) -> Outcome {
    let external = path != file;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let (seen, bytes) = match settle(engine, file).await {
            Ok(Some(settled)) => settled,
            Ok(None) => return Outcome::Gone,
            Err(error) => {
                let error = LoadError::Io {
                    path: path.to_owned(),
                    error,
                };
                return Outcome::Failed {
                    seen: None,
                    hash: None,
                    error: error.to_string(),
                };
            }
        };
        // The sidecars are part of the version: a change to one reloads.
        let (policy, tools) = if external {
            (None, None)
        } else {
            (
                tokio::fs::read(sidecar_path(path)).await.ok(),
                tokio::fs::read(tools_sidecar_path(path)).await.ok(),
            )
        };
        let hash = content_hash(&bytes)
            ^ content_hash(policy.as_deref().unwrap_or(b"no policy"))
            ^ content_hash(tools.as_deref().unwrap_or(b"no tools sidecar")).rotate_left(1);
        if previous == Some(hash) {
            return Outcome::Unchanged { seen };
        }
        let started = Instant::now();
        match Plugin::from_bytes(engine, path.to_owned(), bytes, options).await {
            Ok(plugin) => {
                return Outcome::Loaded {
                    seen,
                    hash,
                    plugin,
                    took: started.elapsed(),
                };
            }
            Err(error) => {
                let still_changing =
                    !matches!(fingerprint(file).await, Ok(Some(now)) if now == seen);
                if still_changing && attempt < LOAD_ATTEMPTS {
                    tracing::debug!(path = %path.display(), %error, "plugin file still changing; retrying");
                    continue;
                }
                return Outcome::Failed {
                    seen: Some(seen),
                    hash: Some(hash),
                    error: error.to_string(),
                };
            }
        }
    }
}

/// Waits until a file's size and times are unchanged across two checks
/// [`SETTLE_INTERVAL`] apart, and reads it; `None` if it is gone.
pub(super) async fn settle(
    engine: &Engine,
    path: &Path,
) -> std::io::Result<Option<(Fingerprint, Vec<u8>)>> {
    let Some(mut last) = fingerprint(path).await? else {
        return Ok(None);
    };
    let mut checks = 0;
    loop {
        tokio::time::sleep(SETTLE_INTERVAL).await;
        checks += 1;
        let Some(now) = fingerprint(path).await? else {
            return Ok(None);
        };
        let patience_left = checks < MAX_SETTLE_CHECKS;
        if now != last && patience_left {
            last = now;
            continue;
        }
        let bytes = match engine.read_file(path).await {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        // The bytes must be those of the version that settled.
        let Some(after) = fingerprint(path).await? else {
            return Ok(None);
        };
        if after == now || !patience_left {
            return Ok(Some((after, bytes)));
        }
        last = after;
    }
}

/// A file's fingerprint; `None` if it does not exist.
pub(super) async fn fingerprint(path: &Path) -> std::io::Result<Option<Fingerprint>> {
    match tokio::fs::metadata(path).await {
        Ok(metadata) => {
            let policy = tokio::fs::metadata(sidecar_path(path)).await.ok();
            let tools = tokio::fs::metadata(tools_sidecar_path(path)).await.ok();
            Ok(Some(Fingerprint {
                wasm: FileMeta::of(&metadata),
                policy: policy.as_ref().map(FileMeta::of),
                tools: tools.as_ref().map(FileMeta::of),
            }))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

pub(super) fn content_hash(bytes: &[u8]) -> u64 {
    let mut hasher = DefaultHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}

/// The `*.wasm` files directly inside `dir` (following symlinks), sorted, with
/// their fingerprints (`None` if the metadata could not be read).
pub(super) async fn list_dir(dir: &Path) -> Result<Vec<(PathBuf, Option<Fingerprint>)>, LoadError> {
    let owned = dir.to_owned();
    let listed = tokio::task::spawn_blocking(move || -> std::io::Result<_> {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&owned)? {
            let path = entry?.path();
            if !is_wasm(&path) {
                continue;
            }
            match std::fs::metadata(&path) {
                Ok(metadata) if metadata.is_file() => {
                    let fingerprint = Fingerprint::of(&path, &metadata);
                    files.push((path, Some(fingerprint)));
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(_) => files.push((path, None)),
            }
        }
        files.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(files)
    })
    .await;
    match listed {
        Ok(Ok(files)) => Ok(files),
        Ok(Err(error)) => Err(LoadError::Io {
            path: dir.to_owned(),
            error,
        }),
        Err(e) => Err(LoadError::Engine {
            path: dir.to_owned(),
            reason: format!("listing the directory failed: {e}"),
        }),
    }
}

pub(super) fn is_wasm(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "wasm")
}

/// `dir/NAME.wasm` for a sidecar `dir/NAME.policy.toml` or `dir/NAME.tools.toml`.
pub(super) fn plugin_of_sidecar(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    let stem = name
        .strip_suffix(crate::policy::SIDECAR_SUFFIX)
        .or_else(|| name.strip_suffix(crate::plugin::TOOLS_SIDECAR_SUFFIX))?;
    Some(path.with_file_name(format!("{stem}.wasm")))
}
