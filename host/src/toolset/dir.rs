//! A plugins directory as a live toolset: hot reload.
//!
//! [`PluginDir`] serves an immutable snapshot (`Arc<Snapshot>`) of the plugins
//! of a directory. A rescan ([`PluginDir::reload_now`], or the watcher started
//! by [`PluginDir::watch`]) finds the files whose metadata changed, waits for
//! each to settle, loads the new version completely off to the side (compile,
//! pre-instantiate, read and compile its declarations) and only then swaps a new
//! snapshot in. Tools hold their own [`Plugin`] clone, so calls in flight finish
//! on the version they started with.
//!
//! The first load of the directory loads each file on its own: a plugin joins
//! the snapshot as soon as it has loaded, so a slow or failing one delays no
//! other ([`PluginDir::start`]). A plugin listed from a cache manifest that
//! turns out stale once its code loads is loaded again.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::broadcast;

use super::{Context, PluginTool, Tool, Toolset};
use super::{PluginSet, log_failed, log_loaded, plugin_name, warn_clash};
use crate::Engine;
use crate::error::LoadError;
use crate::log::LOAD_TARGET;
use crate::plugin::{CodeState, Plugin, PluginOptions};
use crate::policy::sidecar_path;

/// How long a file's size and times must stay unchanged before it is loaded.
const SETTLE_INTERVAL: Duration = Duration::from_millis(100);
/// After this many settle checks (about 10 s) a file that keeps changing is
/// loaded anyway; if that fails, the next change retries it.
const MAX_SETTLE_CHECKS: u32 = 100;
/// How often a load that failed while the file was still changing is retried.
const LOAD_ATTEMPTS: u32 = 5;
/// Capacity of the change-event channel; a slower subscriber sees `Lagged`.
const EVENT_CAPACITY: usize = 64;

/// A plugins directory as a live [`Toolset`]: every `*.wasm` file in it is a
/// plugin, and adding, replacing or removing a file changes the set.
///
/// Naming follows [`PluginSet`]: a tool is listed under its bare name while no
/// other plugin of the directory offers that name, else as `plugin.tool` (and a
/// warning is logged). The qualified name `plugin.tool` always reaches a tool,
/// so adding a plugin never breaks it; a bare name that becomes ambiguous
/// fails with [`CallError::AmbiguousTool`](crate::CallError::AmbiguousTool).
///
/// A new version of a file is loaded completely before it replaces the old one;
/// if it fails to load, the old version keeps serving and the failure shows in
/// [`PluginDir::status`], in a [`ToolsetChange`] and in the log. A file still
/// being written is waited for (its size and times must stay unchanged for a
/// moment) and retried, so a half-copied file never becomes a broken tool.
///
/// # Examples
/// ```no_run
/// use toolhost::{Context, Engine, EngineConfig, PluginDir, PluginOptions, Toolset};
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let engine = Engine::new(&EngineConfig::default())?;
/// let plugins = PluginDir::open(&engine, "plugins", PluginOptions::default()).await?;
/// plugins.watch()?; // follow the directory from now on
/// let mut changes = plugins.subscribe();
/// for tool in plugins.tools(&Context::new()) {
///     println!("{}", tool.spec().name);
/// }
/// while let Ok(change) = changes.recv().await {
///     println!("added {:?}, removed {:?}", change.added, change.removed);
/// }
/// # Ok(()) }
/// ```
pub struct PluginDir {
    shared: Arc<Shared>,
    /// The first loads of the files, aborted if the set is dropped first.
    _first_loads: AbortOnDrop,
    #[cfg(feature = "hot-reload")]
    watching: std::sync::Mutex<Option<watching::Watch>>,
}

/// The state of one plugin file, as [`PluginDir::status`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PluginStatus {
    /// The file.
    pub path: PathBuf,
    /// The plugin's name (the serving version's, else the file name without `.wasm`).
    pub plugin: String,
    /// Loaded, or why its latest version failed.
    pub state: LoadState,
    /// When the file was last loaded or last failed to load.
    pub changed_at: SystemTime,
}

/// Whether a plugin file's latest version is the one serving.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoadState {
    /// The latest version is loaded and serving.
    Loaded {
        /// Its tools, under the names they are listed as.
        tools: Vec<String>,
    },
    /// The file's first load has not finished yet ([`PluginDir::start`]).
    Loading,
    /// The latest version failed to load.
    Failed {
        /// Why.
        error: String,
        /// An earlier version of the file is still serving its tools.
        serving_previous: bool,
    },
}

/// What one rescan changed, as sent to subscribers ([`PluginDir::subscribe`]). Tool names
/// are those the set lists (bare, or `plugin.tool` where names clash).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolsetChange {
    /// Tools that were not listed before.
    pub added: Vec<String>,
    /// Tools that are no longer listed.
    pub removed: Vec<String>,
    /// Tools still listed whose declaration (description, schemas, flags) changed.
    pub changed: Vec<String>,
    /// Files whose new version failed to load, with why.
    pub failed: Vec<(PathBuf, String)>,
}

impl ToolsetChange {
    /// True if nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.changed.is_empty()
            && self.failed.is_empty()
    }
}

/// Why [`PluginDir::watch`] could not start watching.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WatchError {
    /// Watching needs a tokio runtime to run its task on.
    #[error("watching a plugins directory needs a tokio runtime")]
    NoRuntime,
    /// The operating system refused to watch the directory.
    /// Its message includes the watcher's error (not also its `source()`).
    #[error("{dir}: cannot watch: {error}")]
    Watch {
        /// The plugins directory.
        dir: PathBuf,
        /// The watcher's error.
        error: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Options per plugin name (the file name without `.wasm`).
type OptionsFn = Arc<dyn Fn(&str) -> PluginOptions + Send + Sync>;

struct Shared {
    engine: Engine,
    dir: PathBuf,
    name: String,
    options: OptionsFn,
    current: RwLock<Arc<Snapshot>>,
    /// Serializes rescans: each one starts from the snapshot the last one left.
    rescan: tokio::sync::Mutex<()>,
    events: broadcast::Sender<ToolsetChange>,
    /// How many files' first loads are still running.
    first_pending: Arc<tokio::sync::watch::Sender<usize>>,
}

/// Aborts tasks when dropped.
#[derive(Default)]
struct AbortOnDrop(Vec<tokio::task::AbortHandle>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// Counts one first load as finished when dropped (also if aborted or panicked).
struct FirstLoad(Arc<tokio::sync::watch::Sender<usize>>);

impl Drop for FirstLoad {
    fn drop(&mut self) {
        self.0
            .send_modify(|pending| *pending = pending.saturating_sub(1));
    }
}

/// One immutable state of the directory.
struct Snapshot {
    files: BTreeMap<PathBuf, FileEntry>,
    tools: Vec<Arc<dyn Tool>>,
    /// Index into `tools` by call name, so a call's lookup copies nothing.
    by_name: HashMap<String, usize>,
    status: Vec<PluginStatus>,
    /// Tool names several plugins offer (each warned about once, when it appears).
    clashes: BTreeMap<String, Vec<String>>,
}

#[derive(Clone)]
struct FileEntry {
    /// The metadata of the version last examined; a rescan skips the file while it matches.
    seen: Option<Fingerprint>,
    /// The content hash of the version last examined (unknown for the initial load).
    hash: Option<u64>,
    /// The version serving, if any.
    plugin: Option<Plugin>,
    /// Why the version last examined failed to load, if it did.
    failure: Option<String>,
    /// Its first load is still running.
    loading: bool,
    changed_at: SystemTime,
}

/// What tells one version of a plugin from another without reading it: its
/// file's metadata and its sidecar policy's (a policy change is a new version).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fingerprint {
    wasm: FileMeta,
    policy: Option<FileMeta>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileMeta {
    len: u64,
    modified: Option<SystemTime>,
    #[cfg(unix)]
    inode: (u64, u64),
    #[cfg(unix)]
    ctime: (i64, i64),
}

impl FileMeta {
    fn of(metadata: &std::fs::Metadata) -> Self {
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
    /// The fingerprint of `path` (a plugin file with this metadata) and its sidecar policy.
    fn of(path: &Path, metadata: &std::fs::Metadata) -> Self {
        let policy = std::fs::metadata(sidecar_path(path)).ok();
        Self {
            wasm: FileMeta::of(metadata),
            policy: policy.as_ref().map(FileMeta::of),
        }
    }
}

/// What loading one changed file came to.
enum Outcome {
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

impl PluginDir {
    /// Loads every `*.wasm` file of `dir` (each on its own, in parallel) and
    /// serves their tools; returns once every file has loaded or failed. A
    /// file that fails to load is reported in [`PluginDir::status`]; it never
    /// stops the others. `options` apply to every plugin (leave its name
    /// unset: each plugin is named after its file).
    ///
    /// A plugin's guest code gets the engine's load deadline
    /// ([`EngineConfig::load_deadline`](crate::EngineConfig::load_deadline))
    /// to list its tools; with a cache directory, a plugin that failed is not
    /// run again at the next start. To serve each plugin as soon as it has
    /// loaded instead, see [`PluginDir::start`].
    ///
    /// The set does not follow the directory until [`PluginDir::watch`] is
    /// called; [`PluginDir::reload_now`] rescans it on demand.
    ///
    /// # Errors
    /// Fails only if the directory itself cannot be read.
    pub async fn open(
        engine: &Engine,
        dir: impl AsRef<Path>,
        options: PluginOptions,
    ) -> Result<Self, LoadError> {
        Self::open_configured(engine, dir, move |_: &str| options.clone()).await
    }

    /// As [`PluginDir::open`], with options per plugin: `options` gets each
    /// plugin's name (its file name without `.wasm`) whenever that file loads
    /// or reloads, so limits can differ per plugin.
    ///
    /// # Errors
    /// Fails only if the directory itself cannot be read.
    pub async fn open_configured(
        engine: &Engine,
        dir: impl AsRef<Path>,
        options: impl Fn(&str) -> PluginOptions + Send + Sync + 'static,
    ) -> Result<Self, LoadError> {
        let set = Self::start_configured(engine, dir, options).await?;
        set.loaded().await;
        Ok(set)
    }

    /// Lists `dir` and starts loading every `*.wasm` file of it, each on its
    /// own; returns at once. Each plugin joins the set as soon as it has
    /// loaded (a [`ToolsetChange`] is sent for it), so a slow or failing
    /// plugin delays no other; until then its [`PluginStatus`] is
    /// [`LoadState::Loading`]. [`PluginDir::loaded`] waits for them all.
    /// Dropping the set stops the loads still running.
    ///
    /// # Errors
    /// Fails only if the directory itself cannot be read.
    pub async fn start(
        engine: &Engine,
        dir: impl AsRef<Path>,
        options: PluginOptions,
    ) -> Result<Self, LoadError> {
        Self::start_configured(engine, dir, move |_: &str| options.clone()).await
    }

    /// As [`PluginDir::start`], with options per plugin (see
    /// [`PluginDir::open_configured`]).
    ///
    /// # Errors
    /// Fails only if the directory itself cannot be read.
    pub async fn start_configured(
        engine: &Engine,
        dir: impl AsRef<Path>,
        options: impl Fn(&str) -> PluginOptions + Send + Sync + 'static,
    ) -> Result<Self, LoadError> {
        let options: OptionsFn = Arc::new(options);
        let dir = dir.as_ref().to_owned();
        // The fingerprints are taken before loading: a file that changes
        // while it loads is seen as changed by the next rescan.
        let listing = list_dir(&dir).await?;
        let now = SystemTime::now();
        let files: BTreeMap<PathBuf, FileEntry> = listing
            .iter()
            .map(|(path, seen)| {
                let entry = FileEntry {
                    seen: *seen,
                    hash: None,
                    plugin: None,
                    failure: None,
                    loading: true,
                    changed_at: now,
                };
                (path.clone(), entry)
            })
            .collect();
        let (events, _) = broadcast::channel(EVENT_CAPACITY);
        let shared = Arc::new(Shared {
            engine: engine.clone(),
            name: dir.display().to_string(),
            dir,
            options: Arc::clone(&options),
            current: RwLock::new(Arc::new(Snapshot::new(files, None))),
            rescan: tokio::sync::Mutex::new(()),
            events,
            first_pending: Arc::new(tokio::sync::watch::Sender::new(listing.len())),
        });
        let mut first_loads = AbortOnDrop::default();
        for (path, _) in listing {
            let done = FirstLoad(Arc::clone(&shared.first_pending));
            let (engine, options) = (engine.clone(), options(&plugin_name(&path)));
            let shared = Arc::downgrade(&shared);
            let task = tokio::spawn(async move {
                let started = Instant::now();
                let result = Plugin::load(&engine, &path, &options).await;
                if let Some(shared) = shared.upgrade() {
                    shared.first_loaded(path, result, started.elapsed()).await;
                }
                drop(done);
            });
            first_loads.0.push(task.abort_handle());
        }
        Ok(Self {
            shared,
            _first_loads: first_loads,
            #[cfg(feature = "hot-reload")]
            watching: std::sync::Mutex::new(None),
        })
    }

    /// Waits until the first load of every file (see [`PluginDir::start`])
    /// has finished, loaded or failed.
    pub async fn loaded(&self) {
        let mut pending = self.shared.first_pending.subscribe();
        // The sender lives as long as `self`: this cannot fail.
        let _ = pending.wait_for(|pending| *pending == 0).await;
    }

    /// As [`PluginDir::loaded`], as a future that does not borrow the set
    /// (to wait in another task). It also ends if the set is dropped.
    pub fn when_loaded(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut pending = self.shared.first_pending.subscribe();
        async move {
            let _ = pending.wait_for(|pending| *pending == 0).await;
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// The plugins serving now, in file-name order.
    pub fn plugins(&self) -> Vec<Plugin> {
        let snapshot = self.shared.snapshot();
        snapshot
            .files
            .values()
            .filter_map(|entry| entry.plugin.clone())
            .collect()
    }

    /// The state of every `*.wasm` file of the directory, in file-name order.
    pub fn status(&self) -> Vec<PluginStatus> {
        self.shared.snapshot().status.clone()
    }

    /// Change events: one per rescan that changed the listed tools or saw a
    /// new version fail to load. A subscriber that falls more than 64 events
    /// behind gets [`broadcast::error::RecvError::Lagged`] and can call
    /// [`Toolset::tools`] to catch up.
    pub fn subscribe(&self) -> broadcast::Receiver<ToolsetChange> {
        self.shared.events.subscribe()
    }

    /// Rescans the directory now and returns what changed (also sent to
    /// subscribers when not empty). Files whose size or times changed are
    /// waited for until they settle (at least 100 ms), loaded completely, and
    /// swapped in together. The watcher runs this same rescan.
    ///
    /// # Errors
    /// Fails only if the directory itself cannot be read; the set is then unchanged.
    pub async fn reload_now(&self) -> Result<ToolsetChange, LoadError> {
        self.shared.rescan(&HashSet::new()).await
    }

    /// Starts following the directory: changes are debounced (200 ms of
    /// quiet) and then rescanned as by [`PluginDir::reload_now`]. The watcher
    /// first rescans once, to catch up with changes made since
    /// [`PluginDir::open`]. It stops when the `PluginDir` is dropped. Calling
    /// it again while watching does nothing.
    ///
    /// The directory's parent is watched too: a plugins directory deleted and
    /// created again, or a symlink to it pointed elsewhere, is followed (the
    /// watch moves to the new directory and it is rescanned).
    ///
    /// # Errors
    /// [`WatchError::NoRuntime`] outside a tokio runtime; [`WatchError::Watch`]
    /// if the operating system refuses to watch the directory.
    #[cfg(feature = "hot-reload")]
    pub fn watch(&self) -> Result<(), WatchError> {
        let mut slot = self.watching.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(watching::Watch::start(&self.shared)?);
        }
        Ok(())
    }
}

impl std::fmt::Debug for PluginDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginDir")
            .field("dir", &self.shared.dir)
            .field("status", &self.shared.snapshot().status)
            .finish_non_exhaustive()
    }
}

impl Toolset for PluginDir {
    fn name(&self) -> &str {
        &self.shared.name
    }

    fn tools(&self, _cx: &Context) -> Vec<Arc<dyn Tool>> {
        self.shared.snapshot().tools.clone()
    }

    fn lookup(&self, _cx: &Context, name: &str) -> Option<Arc<dyn Tool>> {
        let snapshot = self.shared.snapshot();
        let index = *snapshot.by_name.get(name)?;
        snapshot.tools.get(index).cloned()
    }
}

impl Shared {
    fn snapshot(&self) -> Arc<Snapshot> {
        let current = self.current.read().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(&current)
    }

    /// Rescans the directory. `force` names files to re-read even if their
    /// metadata looks unchanged (the watcher saw them written).
    async fn rescan(
        self: &Arc<Self>,
        force: &HashSet<PathBuf>,
    ) -> Result<ToolsetChange, LoadError> {
        let _serial = self.rescan.lock().await;
        let old = self.snapshot();
        let listing = list_dir(&self.dir).await?;
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
            let options = (self.options)(&plugin_name(&path));
            let (engine, owned) = (self.engine.clone(), path.clone());
            let task =
                loads.spawn(async move { load_settled(&engine, &owned, &options, previous).await });
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
            }
        });
        diff(&old.tools, &new.tools, &mut change);
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
    async fn first_loaded(
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
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = new;
        if !change.is_empty() {
            let _ = self.events.send(change);
        }
    }

    /// Loads a plugin again if its code, once loaded, shows that it was
    /// listed from a stale cache manifest (which is rewritten by then).
    fn follow(self: &Arc<Self>, path: PathBuf, plugin: &Plugin) {
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
    async fn reload_stale(self: &Arc<Self>, path: &Path, id: u64) {
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
    fn new(files: BTreeMap<PathBuf, FileEntry>, previous: Option<&Snapshot>) -> Self {
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
        }
    }
}

/// Logs that a plugin left the set because its file is gone.
fn log_removed(entry: &FileEntry) {
    if let Some(plugin) = &entry.plugin {
        tracing::info!(target: LOAD_TARGET, plugin = plugin.name(), "removed {}", plugin.name());
    }
}

/// Fills in the tools added, removed and changed between two listings.
fn diff(old: &[Arc<dyn Tool>], new: &[Arc<dyn Tool>], change: &mut ToolsetChange) {
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

/// Waits for a changed file to settle, then loads it; retries while a failure
/// may be due to the file still being written.
async fn load_settled(
    engine: &Engine,
    path: &Path,
    options: &PluginOptions,
    previous: Option<u64>,
) -> Outcome {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let (seen, bytes) = match settle(engine, path).await {
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
        // The sidecar policy is part of the version: a change to it reloads.
        let policy = tokio::fs::read(sidecar_path(path)).await.ok();
        let hash = content_hash(&bytes) ^ content_hash(policy.as_deref().unwrap_or(b"no policy"));
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
                    !matches!(fingerprint(path).await, Ok(Some(now)) if now == seen);
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
async fn settle(engine: &Engine, path: &Path) -> std::io::Result<Option<(Fingerprint, Vec<u8>)>> {
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
async fn fingerprint(path: &Path) -> std::io::Result<Option<Fingerprint>> {
    match tokio::fs::metadata(path).await {
        Ok(metadata) => {
            let policy = tokio::fs::metadata(sidecar_path(path)).await.ok();
            Ok(Some(Fingerprint {
                wasm: FileMeta::of(&metadata),
                policy: policy.as_ref().map(FileMeta::of),
            }))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn content_hash(bytes: &[u8]) -> u64 {
    let mut hasher = DefaultHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}

/// The `*.wasm` files directly inside `dir` (following symlinks), sorted, with
/// their fingerprints (`None` if the metadata could not be read).
async fn list_dir(dir: &Path) -> Result<Vec<(PathBuf, Option<Fingerprint>)>, LoadError> {
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

fn is_wasm(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "wasm")
}

/// `dir/NAME.wasm` for a sidecar policy `dir/NAME.policy.toml`.
fn plugin_of_sidecar(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(crate::policy::SIDECAR_SUFFIX)?;
    Some(path.with_file_name(format!("{stem}.wasm")))
}

#[cfg(feature = "hot-reload")]
mod watching {
    //! The watcher: `notify` events, debounced, trigger rescans.

    use std::collections::HashSet;
    use std::path::{Path, PathBuf};
    use std::sync::{Arc, Weak};
    use std::time::Duration;

    use notify::event::{AccessKind, AccessMode, EventKind};
    use notify::{RecursiveMode, Watcher};
    use tokio::sync::{mpsc, oneshot};
    use tokio::time::Instant;

    use super::{Shared, WatchError, is_wasm, plugin_of_sidecar};

    /// Quiet time after the last event before a rescan starts.
    const DEBOUNCE: Duration = Duration::from_millis(200);
    /// A rescan starts at the latest this long after the first event, even if
    /// events keep coming (a file being written for a long time is then
    /// waited for by the settle check instead).
    const MAX_DEBOUNCE: Duration = Duration::from_secs(2);

    /// A running watcher. Dropping it ends the task, and the OS watch with it.
    pub(super) struct Watch {
        _stop: oneshot::Sender<()>,
    }

    /// The OS watch of the directory and of its parent.
    struct Os {
        watcher: notify::RecommendedWatcher,
        /// The directory, absolute (the paths of events are under it).
        dir: PathBuf,
    }

    impl Os {
        /// Watches the directory again: it may be another one now (created
        /// again, or a symlink pointed elsewhere). A directory that is gone
        /// is watched again when its parent sees it come back.
        fn rewatch(&mut self) {
            let _ = self.watcher.unwatch(&self.dir);
            if let Err(error) = self.watcher.watch(&self.dir, RecursiveMode::NonRecursive) {
                tracing::debug!(dir = %self.dir.display(), %error, "the plugins directory cannot be watched now");
            }
        }
    }

    impl Watch {
        pub(super) fn start(shared: &Arc<Shared>) -> Result<Self, WatchError> {
            let runtime =
                tokio::runtime::Handle::try_current().map_err(|_| WatchError::NoRuntime)?;
            let dir = std::path::absolute(&shared.dir).map_err(|e| WatchError::Watch {
                dir: shared.dir.clone(),
                error: Box::new(e),
            })?;
            let (events, receiver) = mpsc::unbounded_channel();
            let relevant = dir.clone();
            let mut watcher = notify::recommended_watcher(move |event| {
                // Of the parent's events, only those about the directory matter.
                if let Ok(notify::Event { paths, .. }) = &event
                    && !paths.is_empty()
                    && !paths
                        .iter()
                        .any(|p| p == &relevant || p.parent() == Some(&relevant))
                {
                    return;
                }
                // The task is gone once the PluginDir is dropped: nothing to tell.
                let _ = events.send(event);
            })
            .map_err(|e| watch_error(shared, e))?;
            watcher
                .watch(&dir, RecursiveMode::NonRecursive)
                .map_err(|e| watch_error(shared, e))?;
            if let Some(parent) = dir.parent()
                && let Err(error) = watcher.watch(parent, RecursiveMode::NonRecursive)
            {
                tracing::warn!(
                    parent = %parent.display(), %error,
                    "cannot watch the parent of the plugins directory: a directory deleted and created again, or a symlink pointed elsewhere, will not be followed"
                );
            }
            let (stop, stopped) = oneshot::channel();
            runtime.spawn(run(
                Arc::downgrade(shared),
                Os { watcher, dir },
                receiver,
                stopped,
            ));
            Ok(Self { _stop: stop })
        }
    }

    fn watch_error(shared: &Shared, error: notify::Error) -> WatchError {
        WatchError::Watch {
            dir: shared.dir.clone(),
            error: Box::new(error),
        }
    }

    /// What a batch of events asks for.
    #[derive(Default)]
    struct Pending {
        rescan: bool,
        /// Files seen written: re-read even if their metadata looks unchanged.
        force: HashSet<PathBuf>,
    }

    impl Pending {
        /// Adds an event; true if it is about the directory itself (moved,
        /// deleted, created, a symlink to it replaced).
        /// `dir` is the directory, absolute; `named` as the set names it
        /// (the paths of its files are under it).
        fn add(&mut self, dir: &Path, named: &Path, event: notify::Result<notify::Event>) -> bool {
            let event = match event {
                Ok(event) => event,
                Err(error) => {
                    tracing::warn!(%error, "watching the plugins directory");
                    self.rescan = true;
                    return true;
                }
            };
            if event.need_rescan() {
                self.rescan = true;
            }
            let written = match event.kind {
                // Our own reads open and close files: those must not trigger rescans.
                EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
                EventKind::Access(_) => return false,
                EventKind::Create(_) | EventKind::Remove(_) => true,
                EventKind::Modify(notify::event::ModifyKind::Metadata(_)) => false,
                EventKind::Modify(_) | EventKind::Any | EventKind::Other => true,
            };
            let mut itself = event.need_rescan();
            if event.paths.is_empty() {
                self.rescan = true;
                itself = true;
            }
            for path in event.paths {
                if path == dir {
                    // The directory itself moved, went away or came back.
                    self.rescan = true;
                    itself = true;
                    continue;
                }
                let (Some(name), true) = (path.file_name(), path.parent() == Some(dir)) else {
                    continue;
                };
                let path = named.join(name);
                // A sidecar policy stands for its plugin file.
                let path = plugin_of_sidecar(&path).unwrap_or(path);
                if is_wasm(&path) {
                    self.rescan = true;
                    if written {
                        self.force.insert(path);
                    }
                }
            }
            itself
        }
    }

    async fn run(
        shared: Weak<Shared>,
        mut os: Os,
        mut events: mpsc::UnboundedReceiver<notify::Result<notify::Event>>,
        mut stop: oneshot::Receiver<()>,
    ) {
        let dir = os.dir.clone();
        let Some(named) = shared.upgrade().map(|shared| shared.dir.clone()) else {
            return;
        };
        // Catch up with whatever changed between `open` and `watch`.
        let mut pending = Pending {
            rescan: true,
            force: HashSet::new(),
        };
        loop {
            while !pending.rescan {
                tokio::select! {
                    _ = &mut stop => return,
                    event = events.recv() => match event {
                        Some(event) => if pending.add(&dir, &named, event) {
                            os.rewatch();
                        },
                        None => return,
                    },
                }
            }
            let deadline = Instant::now() + MAX_DEBOUNCE;
            loop {
                let quiet = tokio::time::sleep_until((Instant::now() + DEBOUNCE).min(deadline));
                tokio::select! {
                    _ = &mut stop => return,
                    () = quiet => break,
                    event = events.recv() => match event {
                        Some(event) => if pending.add(&dir, &named, event) {
                            os.rewatch();
                        },
                        None => return,
                    },
                }
            }
            // Held only while rescanning: the task must not keep the set alive.
            let Some(strong) = shared.upgrade() else {
                return;
            };
            let batch = std::mem::take(&mut pending);
            if let Err(error) = strong.rescan(&batch.force).await {
                tracing::warn!(%error, "rescanning the plugins directory");
            }
        }
    }
}
