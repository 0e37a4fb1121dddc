//! Live sources (`[[sources]]` in `toolhost.toml`): plugins pulled from OCI
//! registries and followed while serving.
//!
//! Each source is a reference with an optional digest pin. A pulled component
//! is verified ([`Client::pull`]), kept in the cache directory by its manifest
//! digest (`<cache>/oci/sha256-<hex>.wasm`, checked against its recorded hash
//! whenever it is used; a digest already there is not pulled again), and then
//! joins a [`PluginDir`] through [`PluginDir::put_external`]: the same load
//! and atomic swap as a file dropped into the directory, announced as a
//! [`ToolsetChange`](crate::toolset::ToolsetChange) (MCP `list_changed`).
//!
//! A tag is checked every [`Source::poll`] (a `HEAD` request); when it moves,
//! the new digest is pulled, verified, loaded and swapped in, while calls in
//! flight finish on the old version. A pinned reference is fetched once. A
//! failure (registry down, a digest that is not the pin, not a component, too
//! large, a component that does not load) keeps the previous version serving,
//! is logged once per distinct error, and shows in [`Sources::status`]. A
//! version that was refused is not pulled again until the tag moves.
//!
//! A source with [`Source::public_keys`] serves a version only once one of
//! the keys' cosign signatures of its digest verifies
//! ([`Client::verify_signature`]); an unsigned or wrongly signed version is
//! not served (the previous one keeps serving) and is checked again at each
//! poll, since a signature may be pushed after the component. That a digest's
//! signature verified is recorded in the cache directory (per set of keys),
//! so a restart while the registry is down serves the version last verified,
//! and so does a restart while the tag's newest version is not (yet) signed
//! (a replica restarted then serves what the others kept serving; with a
//! cache directory of its own, what it last served itself).
//!
//! A sidecar policy is never read for these plugins: their grants are the
//! operator's, from `[plugin.NAME]` as for any plugin.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::task::{AbortHandle, JoinSet};

use crate::error::ConfigError;
use crate::log::LOAD_TARGET;
use crate::oci::{
    Auth, Client, ClientOptions, Digest, OciError, PublicKeys, Reference, registry_auth,
};
use crate::toolset::{LoadState, PluginDir};
use crate::{Engine, Plugin, PluginOptions};

mod source;
mod store;

pub use source::Source;
use store::Store;

/// How often a tag is checked unless a source says otherwise.
pub const DEFAULT_POLL: Duration = Duration::from_secs(60);

/// What one source serves, as [`Sources::status`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SourceStatus {
    /// The plugin's name.
    pub name: String,
    /// The reference, as configured.
    pub reference: Reference,
    /// The digest pin, if any.
    pub pin: Option<Digest>,
    /// The manifest digest of the version serving, if one is.
    pub digest: Option<Digest>,
    /// Its file in the cache directory.
    pub file: Option<PathBuf>,
    /// The path the plugin is listed under ([`Source::label`]).
    pub label: PathBuf,
    /// Why the latest check, pull or load failed, if it did.
    pub error: Option<String>,
}

/// Why sources cannot be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// A source's registry client cannot be set up (plain HTTP refused, TLS,
    /// an unreadable Docker config). Its message includes the client's error.
    #[error("source `{name}`: {error}")]
    Client {
        /// The source's name.
        name: String,
        /// Why (boxed: the error stays small).
        error: Box<OciError>,
    },
    /// A source's token file cannot be read, or is empty.
    #[error("source `{name}`: the token file {path}: {reason}")]
    TokenFile {
        /// The source's name.
        name: String,
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A source's public keys cannot be read. Its message names the file.
    #[error("source `{name}`: {error}")]
    Keys {
        /// The source's name.
        name: String,
        /// Why (boxed: the error stays small).
        error: Box<OciError>,
    },
    /// The directory of pulled components cannot be created or written.
    /// Its message includes the I/O error.
    #[error("the directory of pulled components {path}: {error}")]
    Store {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The configuration's `[[sources]]` are invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// The sources of a host (`[[sources]]`), following their registries.
///
/// Each pulled component is verified, kept in the cache directory by its
/// manifest digest (`<cache>/oci/sha256-<hex>.wasm`, checked against its
/// recorded hash whenever it is used), and served in a [`PluginDir`] through
/// [`PluginDir::put_external`], so it loads, swaps in and is announced as a
/// dropped file. A tag is checked every [`Source::poll`]; a failure keeps the
/// previous version serving, is logged once per distinct error and shows in
/// [`Sources::status`]. Dropping it stops following.
#[derive(Debug)]
pub struct Sources {
    entries: Vec<Arc<Entry>>,
    store: Store,
    tasks: Mutex<Vec<AbortHandle>>,
}

#[derive(Debug)]
struct Entry {
    source: Source,
    client: Client,
    /// The keys a version must be signed with, if any.
    keys: Option<PublicKeys>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The version serving: its manifest digest and file.
    serving: Option<(Digest, PathBuf)>,
    /// The latest failure, said once.
    error: Option<String>,
    /// A version that failed for good (not a component, failed to load…):
    /// not pulled or loaded again while the tag points to it.
    refused: Option<Digest>,
}

/// What a check found.
enum Fetched {
    /// The version serving is still the one to serve.
    Same,
    /// Another version, verified on disk; `stale` when it is only the last
    /// known one (the registry could not be asked).
    New {
        digest: Digest,
        file: PathBuf,
        stale: Option<String>,
    },
}

/// Why a check changed nothing.
struct Failure {
    /// What to say (`None`: the refusal already said).
    message: Option<String>,
    /// A version to refuse from now on.
    refuse: Option<Digest>,
}

impl Failure {
    fn say(message: impl Into<String>) -> Self {
        Self {
            message: Some(message.into()),
            refuse: None,
        }
    }
}

impl Sources {
    /// Sources reached with `options` (its insecure registries and size
    /// limit; each source's own credentials and plain-HTTP choice replace
    /// its `auth` and `plain_http`), their components kept in
    /// `<cache_dir>/oci` (without a cache directory: a temporary directory
    /// of this process, removed when this is dropped).
    ///
    /// # Errors
    /// [`SourceError`]: a client that cannot be set up, an unreadable token
    /// file, a directory that cannot be created.
    pub fn new(
        sources: Vec<Source>,
        options: &ClientOptions,
        cache_dir: Option<&Path>,
    ) -> Result<Self, SourceError> {
        let store = Store::open(cache_dir)?;
        let mut entries = Vec::with_capacity(sources.len());
        for source in sources {
            let mut options = options.clone();
            options.auth = auth(&source)?;
            options.plain_http = if source.insecure {
                vec![source.reference.registry().to_owned()]
            } else {
                Vec::new()
            };
            let client = Client::new(&options).map_err(|error| SourceError::Client {
                name: source.name.clone(),
                error: Box::new(error),
            })?;
            let keys = if source.public_keys.is_empty() {
                None
            } else {
                Some(
                    PublicKeys::read(&source.public_keys).map_err(|error| SourceError::Keys {
                        name: source.name.clone(),
                        error: Box::new(error),
                    })?,
                )
            };
            entries.push(Arc::new(Entry {
                source,
                client,
                keys,
                state: Mutex::default(),
            }));
        }
        Ok(Self {
            entries,
            store,
            tasks: Mutex::default(),
        })
    }

    /// Whether there are no sources.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The directory pulled components are kept in.
    pub fn store_dir(&self) -> &Path {
        self.store.dir()
    }

    /// What each source serves, and its latest error, in configuration order.
    pub fn status(&self) -> Vec<SourceStatus> {
        self.entries
            .iter()
            .map(|entry| {
                let state = entry.lock();
                let source = &entry.source;
                SourceStatus {
                    name: source.name.clone(),
                    reference: source.reference.clone(),
                    pin: source.pin.clone(),
                    digest: state.serving.as_ref().map(|(digest, _)| digest.clone()),
                    file: state.serving.as_ref().map(|(_, file)| file.clone()),
                    label: source.label(),
                    error: state.error.clone(),
                }
            })
            .collect()
    }

    /// Checks every source once, in parallel, and serves what each resolves
    /// to in `plugins` (for commands that load once).
    pub async fn resolve_into(&self, plugins: &Arc<PluginDir>) {
        let mut checks = JoinSet::new();
        for entry in &self.entries {
            let (entry, store, plugins) =
                (Arc::clone(entry), self.store.clone(), Arc::clone(plugins));
            checks.spawn(async move { entry.update(&store, Some(&plugins)).await });
        }
        while checks.join_next().await.is_some() {}
    }

    /// Serves the sources in `plugins` and follows them: each is checked at
    /// once, then every [`Source::poll`] (a pinned one only until it is
    /// served). The returned future ends when every source's first check is
    /// done. Following stops when `plugins` or `self` is dropped.
    pub fn follow(&self, plugins: &Arc<PluginDir>) -> impl Future<Output = ()> + Send + 'static {
        let (pending, mut first) = tokio::sync::watch::channel(self.entries.len());
        let pending = Arc::new(pending);
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        for entry in &self.entries {
            let (entry, store, plugins) = (
                Arc::clone(entry),
                self.store.clone(),
                Arc::downgrade(plugins),
            );
            let pending = Arc::clone(&pending);
            let task = tokio::spawn(async move {
                let mut first = Some(pending);
                loop {
                    let Some(dir) = plugins.upgrade() else { return };
                    entry.update(&store, Some(&dir)).await;
                    drop(dir);
                    if let Some(pending) = first.take() {
                        pending.send_modify(|left| *left = left.saturating_sub(1));
                    }
                    if !entry.source.tagged() && entry.lock().serving.is_some() {
                        return;
                    }
                    tokio::time::sleep(entry.source.poll).await;
                }
            });
            tasks.push(task.abort_handle());
        }
        async move {
            // Ends also if every task ended first (the sender is gone).
            let _ = first.wait_for(|left| *left == 0).await;
        }
    }

    /// Checks every source once and loads what each resolves to, for a set
    /// that does not follow them ([`PluginSet`](crate::PluginSet)): each
    /// plugin gets `options(name)` without a sidecar policy. Failures are in
    /// [`Sources::status`].
    pub async fn load(
        &self,
        engine: &Engine,
        options: &(dyn Fn(&str) -> PluginOptions + Sync),
    ) -> Vec<Plugin> {
        let mut checks = JoinSet::new();
        for entry in &self.entries {
            let (entry, store) = (Arc::clone(entry), self.store.clone());
            checks.spawn(async move { entry.update(&store, None).await });
        }
        while checks.join_next().await.is_some() {}
        let mut plugins = Vec::new();
        for entry in &self.entries {
            let Some((_, file)) = entry.lock().serving.clone() else {
                continue;
            };
            let mut options = options(&entry.source.name);
            options.sidecar_policy(false);
            let loaded = match engine.read_file(&file).await {
                Ok(bytes) => Plugin::from_bytes(engine, entry.source.label(), bytes, &options)
                    .await
                    .map_err(|e| e.to_string()),
                Err(error) => Err(format!("{}: {error}", file.display())),
            };
            match loaded {
                Ok(plugin) => plugins.push(plugin),
                Err(error) => {
                    entry.lock().serving = None;
                    entry.failed(error);
                }
            }
        }
        plugins
    }
}

impl Drop for Sources {
    fn drop(&mut self) {
        for task in self
            .tasks
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            task.abort();
        }
    }
}

/// A source's credentials ([`registry_auth`]: its token file first).
fn auth(source: &Source) -> Result<Auth, SourceError> {
    registry_auth(source.token_file.as_deref(), source.reference.registry()).map_err(|error| {
        match error {
            OciError::TokenFile { path, reason } => SourceError::TokenFile {
                name: source.name.clone(),
                path,
                reason,
            },
            error => SourceError::Client {
                name: source.name.clone(),
                error: Box::new(error),
            },
        }
    })
}

impl Entry {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a failure; logs it unless it is the one said last.
    fn failed(&self, error: String) {
        let mut state = self.lock();
        if state.error.as_deref() == Some(error.as_str()) {
            return;
        }
        let serving = match &state.serving {
            Some((digest, _)) => format!("still serving {digest}"),
            None => "nothing served".to_owned(),
        };
        tracing::warn!(
            target: LOAD_TARGET, plugin = %self.source.name,
            "source {}: {error} ({serving})", self.source.reference
        );
        state.error = Some(error);
    }

    /// Clears the error, saying so if there was one.
    fn recovered(&self) {
        if self.lock().error.take().is_some() {
            tracing::info!(
                target: LOAD_TARGET, plugin = %self.source.name,
                "source {}: reachable and current again", self.source.reference
            );
        }
    }

    /// One check: resolve, pull if needed, and serve in `plugins` (when
    /// given; else only record what to serve).
    async fn update(&self, store: &Store, plugins: Option<&PluginDir>) {
        let (serving, refused) = {
            let state = self.lock();
            (state.serving.clone(), state.refused.clone())
        };
        let fetched = self
            .fetch(
                store,
                serving.as_ref().map(|(digest, _)| digest),
                refused.as_ref(),
            )
            .await;
        match fetched {
            Ok(Fetched::Same) => {
                if refused.is_some() {
                    // The set last tried the refused version: serve this one
                    // there again (a no-op if it never left).
                    if let (Some(dir), Some((_, file))) = (plugins, &serving) {
                        let _ = dir.put_external(self.source.label(), file).await;
                    }
                    self.lock().refused = None;
                }
                self.recovered();
            }
            Ok(Fetched::New {
                digest,
                file,
                stale,
            }) => {
                let adopted = match plugins {
                    Some(dir) => adopt(dir, &self.source.label(), &file).await,
                    None => Ok(()),
                };
                match adopted {
                    Ok(()) => {
                        tracing::info!(
                            target: LOAD_TARGET, plugin = %self.source.name,
                            "serving {} {digest} from {}", self.source.name, self.source.reference
                        );
                        if stale.is_none() && self.source.tagged() {
                            store.remember(&self.source.reference, &digest).await;
                        }
                        {
                            let mut state = self.lock();
                            state.serving = Some((digest, file));
                            state.refused = None;
                        }
                        match stale {
                            Some(error) => self.failed(error),
                            None => self.recovered(),
                        }
                    }
                    Err((error, refuse)) => {
                        if refuse {
                            self.lock().refused = Some(digest.clone());
                        }
                        self.failed(format!("{digest}: {error}"));
                    }
                }
            }
            Err(failure) => {
                if let Some(digest) = failure.refuse {
                    self.lock().refused = Some(digest);
                }
                if let Some(message) = failure.message {
                    self.failed(message);
                }
            }
        }
    }

    /// What the source should serve now, verified on disk (pulled if needed).
    async fn fetch(
        &self,
        store: &Store,
        serving: Option<&Digest>,
        refused: Option<&Digest>,
    ) -> Result<Fetched, Failure> {
        let source = &self.source;
        let mut stale = None;
        let target = match source.reference.digest() {
            Some(digest) => digest.clone(),
            None => match self.client.resolve(&source.reference).await {
                Ok(digest) => digest,
                Err(error) if serving.is_none() => {
                    // Nothing serves yet (a start while the registry is
                    // down): the pinned digest, else the one this tag last
                    // had here, if its file is intact.
                    let (fallback, what) = match &source.pin {
                        Some(pin) => (
                            store.verified(pin).await.map(|_| pin.clone()),
                            "the pinned digest",
                        ),
                        None => (
                            store.remembered(&source.reference).await,
                            "the digest the tag last had",
                        ),
                    };
                    let fallback = match (fallback, &self.keys) {
                        (Some(digest), Some(keys))
                            if !store.signed(&digest, keys.fingerprint()).await =>
                        {
                            return Err(Failure::say(format!(
                                "{error}; {digest}, {what}, is not served: its signature was \
                                 never verified with these keys"
                            )));
                        }
                        (fallback, _) => fallback,
                    };
                    let Some(digest) = fallback else {
                        return Err(Failure::say(error.to_string()));
                    };
                    stale = Some(format!("{error}; serving {digest}, {what}"));
                    digest
                }
                Err(error) => return Err(Failure::say(error.to_string())),
            },
        };
        if let Some(pin) = &source.pin
            && *pin != target
        {
            return Err(Failure::say(format!(
                "the tag points to {target}, not to the pinned {pin}: refused"
            )));
        }
        if serving == Some(&target) {
            return Ok(Fetched::Same);
        }
        if refused == Some(&target) {
            // Said when it was refused.
            return Err(Failure {
                message: None,
                refuse: None,
            });
        }
        let pinned = source.reference.pinned(&target);
        if let Some(keys) = &self.keys
            && stale.is_none()
        {
            // Checked whenever a version is to be served and the registry
            // answers; never refused for good: a signature may come later.
            match self.client.verify_signature(&pinned, keys).await {
                Ok(_) => store.record_signed(&target, keys.fingerprint()).await,
                Err(error)
                    if error.is_registry() && store.signed(&target, keys.fingerprint()).await =>
                {
                    stale = Some(format!(
                        "{error}; serving {target}, whose signature was verified before"
                    ));
                }
                // Nothing serves yet (a start, a restarted replica) and the
                // tag's newest version is not signed: the version the tag
                // last had here, if its signature verified with these keys
                // (the replicas that kept serving serve it too).
                Err(error) if serving.is_none() && source.pin.is_none() => {
                    let last = store.remembered(&source.reference).await;
                    let Some(last) = last.filter(|last| *last != target) else {
                        return Err(Failure::say(error.to_string()));
                    };
                    let (Some(file), true) = (
                        store.verified(&last).await,
                        store.signed(&last, keys.fingerprint()).await,
                    ) else {
                        return Err(Failure::say(error.to_string()));
                    };
                    return Ok(Fetched::New {
                        digest: last.clone(),
                        file,
                        stale: Some(format!(
                            "{error}; serving {last}, the version last verified here"
                        )),
                    });
                }
                Err(error) => return Err(Failure::say(error.to_string())),
            }
        }
        if let Some(file) = store.verified(&target).await {
            return Ok(Fetched::New {
                digest: target,
                file,
                stale,
            });
        }
        let pulled = match self.client.pull(&pinned, &mut |_, _| {}).await {
            Ok(pulled) => pulled,
            Err(error) => {
                // A registry that cannot be reached is asked again at the
                // next check; a version that is wrong stays refused.
                let refuse = (!error.is_registry()).then(|| target.clone());
                return Err(Failure {
                    message: Some(error.to_string()),
                    refuse,
                });
            }
        };
        let file = store
            .put(&pulled)
            .await
            .map_err(|e| Failure::say(e.to_string()))?;
        Ok(Fetched::New {
            digest: target,
            file,
            stale,
        })
    }
}

/// Serves `file` under `label` in `plugins`; on failure, why, and whether
/// the version is refused for good (it failed to load).
async fn adopt(plugins: &PluginDir, label: &Path, file: &Path) -> Result<(), (String, bool)> {
    plugins
        .put_external(label, file)
        .await
        .map_err(|e| (e.to_string(), false))?;
    let state = plugins
        .status()
        .into_iter()
        .find(|status| status.path == label)
        .map(|status| status.state);
    match state {
        Some(LoadState::Loaded { .. }) => Ok(()),
        Some(LoadState::Failed { error, .. }) => Err((error, true)),
        _ => Err(("the pulled file was not loaded".to_owned(), false)),
    }
}
