//! A loaded plugin: a compiled, pre-instantiated component with its checked
//! declarations, and every call of its tools, each in a fresh sandboxed instance.
//!
//! [`Plugin`] and its public surface live here; the rest by concept:
//! `load` (read, compile, check, assemble from the component or its cached
//! manifest), `code` (compiling and linking a component), `declarations`
//! (checking what a plugin declares), `call` (instantiating, arming and
//! finishing a call), `trap` (classifying traps and exhausted budgets),
//! `stream` (a guest's stream of chunks), `abi` (the contract versions),
//! `dynamic` (any component's exported functions as tools).

pub(crate) mod abi;
mod call;
mod code;
mod declarations;
mod dynamic;
pub mod guest_spans;
mod items;
mod load;
mod manifest;
mod offered;
mod options;
mod reuse;
mod runtime;
pub(crate) mod state;
mod stream;
mod trap;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::Engine;
use crate::engine::Tier;
use crate::engine::limits::Limits;
use crate::error::{CallError, LoadError};
use crate::policy::{Capability, Grants};
use crate::schema::Schema;
use crate::tool::ToolSpec;
use code::{Code, compile_off_runtime, component_info};
use manifest::ManifestKey;

pub(crate) use dynamic::sidecar::{SUFFIX as TOOLS_SIDECAR_SUFFIX, path as tools_sidecar_path};
pub use dynamic::{ExportedTool, ExportedTools, Refusal};
pub use options::{PluginOptions, Reuse};

/// A loaded plugin. Cheap to clone; calls in flight keep the version they started on.
#[derive(Clone)]
pub struct Plugin {
    inner: Arc<Inner>,
}

struct Inner {
    /// Unique per loaded version: ties idle instances to it.
    id: u64,
    reuse: Reuse,
    name: Arc<str>,
    path: PathBuf,
    engine: Engine,
    /// The compiled, linked code. Set when the plugin loads, or, for a plugin
    /// listed from its manifest, by the background preload or the first call
    /// that needs it, whichever comes first. A failure is kept: every call
    /// then reports it.
    code: tokio::sync::OnceCell<Result<Code, String>>,
    /// The component's bytes, until its code is loaded.
    source: Mutex<Option<bytes::Bytes>>,
    /// The manifest a plugin was listed from: checked against the component
    /// once its code loads, and rewritten if they differ.
    manifest: Option<ManifestKey>,
    /// Where its code stands (a [`PluginDir`](crate::PluginDir) follows it,
    /// to reload a plugin listed from a manifest that turned out stale).
    code_state: tokio::sync::watch::Sender<CodeState>,
    tools: Vec<LoadedTool>,
    /// What it offers besides tools.
    offered: Arc<offered::Offered>,
    limits: Limits,
    grants: Arc<Grants>,
    imports: Vec<String>,
}

/// Where a plugin's code stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CodeState {
    /// Not loaded yet (a plugin listed from its manifest).
    Pending,
    /// Loaded.
    Loaded,
    /// It cannot be loaded.
    Failed,
    /// It loaded, but declares otherwise than the manifest the plugin was
    /// listed from (which has been rewritten): this version fails its calls.
    Stale {
        /// What differs.
        reason: String,
    },
}

struct LoadedTool {
    spec: ToolSpec,
    input: Arc<Schema>,
    output: Option<Schema>,
    /// For a component that does not export the toolhost contract, the
    /// exported function the tool calls.
    function: Option<Arc<dynamic::Function>>,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.inner.name)
            .field("path", &self.inner.path)
            .field("tools", &self.tools().map(|t| &t.name).collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// What a component file is, as far as it can be told without running it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentInfo {
    /// Everything the component imports (WASI interfaces and the toolhost host interface).
    pub imports: Vec<String>,
    /// Everything the component exports.
    pub exports: Vec<String>,
}

impl ComponentInfo {
    /// The version of the toolhost contract the component exports, if any.
    pub fn toolhost_version(&self) -> Option<&str> {
        self.exports
            .iter()
            .find_map(|e| e.strip_prefix(abi::TOOLS_INTERFACE_PREFIX))
    }
}

impl Plugin {
    /// Waits until the plugin's code is loaded. A plugin listed from its
    /// manifest (a warm start from the cache directory) loads its code in the
    /// background; its first call waits for it. Call this to wait up front.
    ///
    /// # Errors
    /// [`LoadError::Engine`] if the code cannot be loaded: every call of the
    /// plugin then fails with the same reason.
    ///
    /// [`LoadError::StaleManifest`] if the plugin was listed from a cache
    /// manifest that does not match what its code declares.
    pub async fn ready(&self) -> Result<(), LoadError> {
        let Err(reason) = self.code().await else {
            return Ok(());
        };
        let path = self.inner.path.clone();
        Err(
            match (&*self.inner.code_state.borrow(), &self.inner.manifest) {
                (CodeState::Stale { reason }, Some(key)) => LoadError::StaleManifest {
                    path,
                    manifest: key.path().to_owned(),
                    reason: reason.clone(),
                },
                _ => LoadError::Engine { path, reason },
            },
        )
    }

    /// Which compiler's code new calls of this plugin run now; `None` while
    /// its code is not loaded (or cannot be). See
    /// [`Compilation`](crate::engine::Compilation).
    pub fn tier(&self) -> Option<Tier> {
        match self.inner.code.get() {
            Some(Ok(code)) => Some(code.current().tier),
            _ => None,
        }
    }

    /// Waits until the plugin's code is loaded and no faster code is coming
    /// (its optimized code is in, or cannot be compiled, or the engine does
    /// not tier), and returns the tier new calls then run.
    ///
    /// # Errors
    /// As [`Plugin::ready`].
    pub async fn settled(&self) -> Result<Tier, LoadError> {
        self.ready().await?;
        match self.code().await {
            Ok(code) => Ok(code.settled().await),
            // `ready` said it loaded.
            Err(reason) => Err(LoadError::Engine {
                path: self.inner.path.clone(),
                reason,
            }),
        }
    }

    /// Follows where the plugin's code stands, without loading it.
    pub(crate) fn code_state(&self) -> tokio::sync::watch::Receiver<CodeState> {
        self.inner.code_state.subscribe()
    }

    /// Tells this loaded version from every other.
    pub(crate) fn id(&self) -> u64 {
        self.inner.id
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The file it was loaded from.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The tools it offers, in declaration order.
    pub fn tools(&self) -> impl ExactSizeIterator<Item = &ToolSpec> {
        self.inner.tools.iter().map(|t| &t.spec)
    }

    /// The tool of that name, if the plugin has it.
    pub fn tool(&self, name: &str) -> Option<&ToolSpec> {
        self.find(name).map(|t| &t.spec)
    }

    /// What the component imports (WASI interfaces and the toolhost host interface).
    pub fn imports(&self) -> &[String] {
        &self.inner.imports
    }

    /// The limits its calls run under.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// What its calls may reach.
    pub fn grants(&self) -> &Grants {
        &self.inner.grants
    }

    /// The capabilities its WASI imports ask for (sorted, without duplicates).
    pub fn requested(&self) -> Vec<Capability> {
        let mut caps: Vec<Capability> = self
            .inner
            .imports
            .iter()
            .map(|i| Capability::of_import(i))
            .filter(|c| *c != Capability::Other)
            .collect();
        caps.sort();
        caps.dedup();
        caps
    }

    /// The imported interfaces that need a grant it does not have (files,
    /// HTTP, sockets): calls that use them are refused.
    pub fn ungranted_imports(&self) -> Vec<&str> {
        self.inner
            .imports
            .iter()
            .filter(|i| {
                let cap = Capability::of_import(i);
                cap.needs_grant() && !self.inner.grants.covers(cap)
            })
            .map(String::as_str)
            .collect()
    }

    /// The engine it was loaded into.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    fn find(&self, name: &str) -> Option<&LoadedTool> {
        self.inner.tools.iter().find(|t| t.spec.name == name)
    }

    fn unknown(&self, name: &str) -> CallError {
        CallError::UnknownTool {
            tool: name.to_owned(),
            available: self.tools().map(|t| t.name.clone()).collect(),
        }
    }
}

/// What [`inspect`] tells of a component file.
#[derive(Debug)]
#[non_exhaustive]
pub struct Inspection {
    /// Its imports and exports.
    pub info: ComponentInfo,
    /// The plugin, if it loads (a toolhost plugin, or a component toolset of
    /// its exported functions); else why not.
    pub plugin: Result<Plugin, LoadError>,
    /// For a component that does not export the toolhost contract: its
    /// exported functions as the tools they would be, and those that cannot
    /// be one (see [`ExportedTools`]).
    pub exported: Option<ExportedTools>,
}

/// Reads a component file and tells what it is: its imports and exports, and,
/// if it is a toolhost plugin that loads, its tools; if it exports another
/// world, its functions as tools.
///
/// # Errors
/// A [`LoadError`] if the file cannot be read or compiled. A component of
/// another world is not an error here: its info comes back with the load
/// error for the tools.
pub async fn inspect(engine: &Engine, path: impl AsRef<Path>) -> Result<Inspection, LoadError> {
    let path = path.as_ref().to_owned();
    let bytes = tokio::fs::read(&path)
        .await
        .map_err(|error| LoadError::Io {
            path: path.clone(),
            error,
        })?;
    let bytes = bytes::Bytes::from(bytes);
    let component = compile_off_runtime(engine, &path, bytes.clone()).await?;
    let info = component_info(&component);
    let exported = info.toolhost_version().is_none().then(|| {
        let (docs, _) = dynamic::docs::Docs::read(&bytes);
        dynamic::exported_tools(&component, &docs)
    });
    let source = (&component, bytes);
    let plugin = Plugin::from_component(engine, path, source, &PluginOptions::default()).await;
    Ok(Inspection {
        info,
        plugin,
        exported,
    })
}
