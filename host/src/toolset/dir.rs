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
//!
//! Files from elsewhere (components pulled from an OCI registry) join the
//! same snapshots through [`PluginDir::put_external`]: loaded, swapped and
//! announced exactly as the directory's own files.

mod scan;
#[cfg(feature = "hot-reload")]
mod watch;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Instant, SystemTime};

use tokio::sync::broadcast;

use self::scan::{FileEntry, Snapshot, list_dir};
use super::plugin_name;
use super::{Context, Tool, Toolset};
use crate::Engine;
use crate::error::LoadError;
use crate::plugin::{Plugin, PluginOptions};

/// Capacity of the change-event channel; a slower subscriber sees `Lagged`.
const EVENT_CAPACITY: usize = 64;

/// A plugins directory as a live [`Toolset`]: every `*.wasm` file in it is a
/// plugin, and adding, replacing or removing a file changes the set.
///
/// Naming follows [`PluginSet`](crate::PluginSet): a tool is listed under its bare name while no
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
    watching: std::sync::Mutex<Option<watch::Watch>>,
}

/// The state of one plugin file, as [`PluginDir::status`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PluginStatus {
    /// The file (for a plugin from outside the directory, the label it was
    /// put under: [`PluginDir::put_external`]).
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
    /// Whether the resources or resource templates listed changed.
    pub resources: bool,
    /// Whether the prompts listed changed.
    pub prompts: bool,
}

impl ToolsetChange {
    /// True if nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.changed.is_empty()
            && self.failed.is_empty()
            && !self.resources
            && !self.prompts
    }

    /// Whether the tools listed changed (or a file failed to load).
    pub fn tools_changed(&self) -> bool {
        !(self.added.is_empty()
            && self.removed.is_empty()
            && self.changed.is_empty()
            && self.failed.is_empty())
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
    /// Plugins from outside the directory: label → the file serving it
    /// ([`PluginDir::put_external`]). Each rescan lists them besides the
    /// directory's files.
    externals: RwLock<BTreeMap<PathBuf, PathBuf>>,
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

impl PluginDir {
    /// Loads every `*.wasm` file of `dir` (each on its own, in parallel) and
    /// serves their tools; returns once every file has loaded or failed. A
    /// file that fails to load is reported in [`PluginDir::status`]; it never
    /// stops the others. `options` apply to every plugin (leave its name
    /// unset: each plugin is named after its file).
    ///
    /// A plugin's guest code gets the engine's load deadline
    /// ([`EngineConfig::load_timeout`](crate::EngineConfig::load_timeout))
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
            externals: RwLock::new(BTreeMap::new()),
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

    /// The state of every `*.wasm` file of the directory and of every plugin
    /// put from outside it, in path order.
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

    /// Serves the component in `file`, which lives outside the directory
    /// (one pulled from an OCI registry, say), as one more plugin of the set,
    /// listed under `label`: the path its [`PluginStatus`] and its load errors
    /// name, whose file name without `.wasm` is the plugin's name (and the
    /// name its options are asked for). Its options never read a sidecar
    /// policy: its grants are those the options give.
    ///
    /// It loads, swaps in and is announced as a file of the directory does: a
    /// later call with the same `label` and another `file` is a new version,
    /// loaded completely before it replaces the old one; if it fails to load,
    /// the old one keeps serving and [`PluginDir::status`] says why. Calls in
    /// flight finish on the version they started with. This runs a rescan
    /// ([`PluginDir::reload_now`]) and returns what it changed; the same
    /// `file` again changes nothing.
    ///
    /// # Errors
    /// Fails only if the directory itself cannot be read; the file is then
    /// loaded by the next rescan.
    pub async fn put_external(
        &self,
        label: impl Into<PathBuf>,
        file: impl Into<PathBuf>,
    ) -> Result<ToolsetChange, LoadError> {
        self.shared
            .externals
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(label.into(), file.into());
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
            *slot = Some(watch::Watch::start(&self.shared)?);
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

    // Plugins may come later: the directory may always offer every kind.
    catalog_of!(self => &self.shared.snapshot().catalog, true);
}
