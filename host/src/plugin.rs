//! A loaded plugin: a compiled, pre-instantiated component with its checked
//! declarations, and every call of its tools, each in a fresh sandboxed instance.

mod manifest;
mod reuse;
pub(crate) mod state;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use serde_json::Value;
use wasmtime::component::{Component, ComponentExportIndex, Instance, InstancePre, ResourceAny};
use wasmtime::{Store, Trap, UpdateDeadline, WasmBacktrace};

use crate::Engine;
use crate::bindings::v0_1::exports::toolhost::plugin::tools as wit;
use crate::bindings::v0_1::toolhost::plugin::types::MediaKind as WitMediaKind;
use crate::bindings::v0_1::{Plugin as WitPlugin, PluginIndices as WitPluginIndices};
use crate::bindings::{TOOLS_INTERFACE, TOOLS_INTERFACE_PREFIX};
use crate::engine::LoadLimits;
use crate::engine::limits::{Busy, Limits};
use crate::error::{CallError, Exhausted, LoadError};
use crate::policy::{CallTag, Capability, Grants};
use crate::schema::Schema;
use crate::tool::{MediaKind, Part, ToolCall, ToolOutput, ToolSpec, Usage, wrap_result};
use manifest::{Manifest, ManifestKey};
pub(crate) use reuse::IdleInstances;
use state::PluginState;

/// The most resources (streams, WASI handles) one call may hold at once.
const MAX_RESOURCES: usize = 10_000;

/// How a plugin is loaded: its name, the limits its calls run under and what
/// they may reach.
#[derive(Debug, Clone)]
pub struct PluginOptions {
    name: Option<String>,
    limits: Limits,
    grants: Option<Grants>,
    sidecar: bool,
    reuse: Reuse,
}

/// Whether each call gets a fresh instance, or the calls of one invocation share one.
/// In `toolhost.toml`: `reuse = "never"` or `reuse = "per-invocation"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Reuse {
    /// A fresh instance for every call (the default): nothing one call leaves
    /// in the guest's memory reaches another call.
    #[default]
    Never,
    /// The calls of one invocation (one invocation ID) share an instance, one
    /// call at a time; different invocations never share one. For runtimes
    /// whose start-up dominates a call (Python, JavaScript). Each call still
    /// gets its own fuel, deadline and output cap. A streaming call always gets
    /// a fresh instance. An instance is dropped when a call traps or runs out
    /// of a budget, when its invocation ends
    /// ([`Engine::end_invocation`]), or when the engine's set of idle instances
    /// is full ([`EngineConfig::max_idle_instances`](crate::EngineConfig::max_idle_instances)).
    PerInvocation,
}

impl Default for PluginOptions {
    fn default() -> Self {
        Self {
            name: None,
            limits: Limits::default(),
            grants: None,
            sidecar: true,
            reuse: Reuse::Never,
        }
    }
}

impl PluginOptions {
    /// The plugin's name; by default the file name without `.wasm`.
    pub fn name(&mut self, name: impl Into<String>) -> &mut Self {
        self.name = Some(name.into());
        self
    }

    /// The limits every call of this plugin runs under.
    pub fn limits(&mut self, limits: Limits) -> &mut Self {
        self.limits = limits;
        self
    }

    /// Mutable access to the limits, to change one of them.
    pub fn limits_mut(&mut self) -> &mut Limits {
        &mut self.limits
    }

    /// What the plugin's calls may reach. Given here, they win over the
    /// plugin's sidecar policy file, which is then ignored (with a warning).
    pub fn grants(&mut self, grants: Grants) -> &mut Self {
        self.grants = Some(grants);
        self
    }

    /// Whether a plugin without grants given here reads them from its sidecar
    /// `NAME.policy.toml` next to `NAME.wasm` (default: yes). Without either,
    /// nothing is granted.
    pub fn sidecar_policy(&mut self, read: bool) -> &mut Self {
        self.sidecar = read;
        self
    }

    /// Whether calls share instances ([`Reuse`]; default: never).
    pub fn reuse(&mut self, reuse: Reuse) -> &mut Self {
        self.reuse = reuse;
        self
    }

    /// The instance reuse chosen.
    pub fn get_reuse(&self) -> Reuse {
        self.reuse
    }

    /// The grants given here, if any.
    pub fn get_grants(&self) -> Option<&Grants> {
        self.grants.as_ref()
    }

    /// The grants a plugin file gets: those given here, else its sidecar's,
    /// else none.
    fn effective_grants(&self, path: &Path) -> Result<Grants, LoadError> {
        let sidecar = crate::policy::sidecar_path(path);
        match &self.grants {
            Some(grants) => {
                if self.sidecar && sidecar.is_file() {
                    tracing::warn!(
                        plugin = %path.display(), sidecar = %sidecar.display(),
                        "the configuration grants this plugin; its sidecar policy is ignored"
                    );
                }
                Ok(grants.clone())
            }
            None if self.sidecar => crate::policy::load_sidecar(path)
                .map(Option::unwrap_or_default)
                .map_err(|error| LoadError::Policy {
                    path: path.to_owned(),
                    error,
                }),
            None => Ok(Grants::default()),
        }
    }
}

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

/// A component compiled and linked against the engine's linker.
#[derive(Clone)]
struct Code {
    pre: InstancePre<PluginState>,
    /// Where the typed exports are, for the calls that use several of them.
    indices: WitPluginIndices,
    /// `invoke`, the one export a plain call needs: looked up and type-checked
    /// alone per call, not with every other export.
    invoke: ComponentExportIndex,
}

impl Code {
    /// Checks the component's world and links it. Also returns what it imports.
    fn link(
        engine: &Engine,
        path: &Path,
        component: &Component,
    ) -> Result<(Self, Vec<String>), LoadError> {
        let info = component_info(engine, component);
        check_world(path, &info)?;
        let pre = engine
            .linker()
            .instantiate_pre(component)
            .map_err(|e| LoadError::Link {
                path: path.to_owned(),
                reason: format!("{e:#}"),
            })?;
        let wrong_shape = |e: wasmtime::Error| LoadError::WrongWorld {
            path: path.to_owned(),
            expected: TOOLS_INTERFACE.to_owned(),
            found: format!("an export of another shape ({e:#})"),
        };
        let indices = WitPluginIndices::new(&pre).map_err(wrong_shape)?;
        let invoke = component
            .get_export_index(None, TOOLS_INTERFACE)
            .and_then(|tools| component.get_export_index(Some(&tools), "invoke"))
            .ok_or_else(|| wrong_shape(wasmtime::format_err!("no `invoke` export")))?;
        Ok((
            Self {
                pre,
                indices,
                invoke,
            },
            info.imports,
        ))
    }
}

struct LoadedTool {
    spec: ToolSpec,
    input: Arc<Schema>,
    output: Option<Schema>,
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
            .find_map(|e| e.strip_prefix(TOOLS_INTERFACE_PREFIX))
    }
}

/// A plugin's name: the one its options give, else its file name without `.wasm`.
fn plugin_display_name(path: &Path, options: &PluginOptions) -> String {
    match &options.name {
        Some(name) => name.clone(),
        None => path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "plugin".to_owned()),
    }
}

/// Checks the file's header: WebAssembly at all, and a component rather than a core module.
fn check_header(path: &Path, bytes: &[u8]) -> Result<(), LoadError> {
    const MAGIC: &[u8] = b"\0asm";
    if !bytes.starts_with(MAGIC) {
        return Err(LoadError::NotWasm {
            path: path.to_owned(),
        });
    }
    match bytes.get(4..8) {
        Some([1, 0, 0, 0]) => Err(LoadError::CoreModule {
            path: path.to_owned(),
        }),
        Some([_, _, 1, 0]) => Ok(()),
        Some(_) => Err(LoadError::Malformed {
            path: path.to_owned(),
            reason: "unknown WebAssembly version or layer in the header".into(),
        }),
        None => Err(LoadError::Malformed {
            path: path.to_owned(),
            reason: "the file ends inside the header".into(),
        }),
    }
}

/// Compiles a component (from the cache when possible). Blocking: call off the async runtime.
pub(crate) fn compile(engine: &Engine, path: &Path, bytes: &[u8]) -> Result<Component, LoadError> {
    check_header(path, bytes)?;
    Component::new(engine.wasm(), bytes).map_err(|e| LoadError::Malformed {
        path: path.to_owned(),
        reason: format!("{e:#}"),
    })
}

/// Compiles on a loader thread, so the async runtime keeps serving meanwhile.
async fn compile_off_runtime(
    engine: &Engine,
    path: &Path,
    bytes: impl AsRef<[u8]> + Send + 'static,
) -> Result<Component, LoadError> {
    let (compiler, owned) = (engine.clone(), path.to_owned());
    engine
        .load_blocking(move || compile(&compiler, &owned, bytes.as_ref()))
        .await
        .map_err(|_| LoadError::Engine {
            path: path.to_owned(),
            reason: "compilation failed: the engine is shutting down, or the compiler panicked"
                .into(),
        })?
}

/// Lists a compiled component's imports and exports.
pub(crate) fn component_info(engine: &Engine, component: &Component) -> ComponentInfo {
    let ty = component.component_type();
    ComponentInfo {
        imports: ty
            .imports(engine.wasm())
            .map(|(n, _)| n.to_owned())
            .collect(),
        exports: ty
            .exports(engine.wasm())
            .map(|(n, _)| n.to_owned())
            .collect(),
    }
}

fn check_world(path: &Path, info: &ComponentInfo) -> Result<(), LoadError> {
    if info.exports.iter().any(|e| e == TOOLS_INTERFACE) {
        return Ok(());
    }
    if let Some(found) = info
        .exports
        .iter()
        .find(|e| e.starts_with(TOOLS_INTERFACE_PREFIX))
    {
        return Err(LoadError::UnsupportedVersion {
            path: path.to_owned(),
            found: found.clone(),
            supported: TOOLS_INTERFACE.to_owned(),
        });
    }
    Err(LoadError::WrongWorld {
        path: path.to_owned(),
        expected: TOOLS_INTERFACE.to_owned(),
        found: if info.exports.is_empty() {
            "nothing".to_owned()
        } else {
            info.exports.join(", ")
        },
    })
}

fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl Plugin {
    /// Loads a plugin file: reads, checks and compiles it (from the cache when
    /// possible), links it, reads its declarations once and compiles their schemas.
    /// A component that loaded before with the same cache directory is listed
    /// from its manifest instead, and its code loads in the background (see
    /// [`Plugin::from_bytes`]).
    ///
    /// # Errors
    /// A [`LoadError`] naming the file and what is wrong: not WebAssembly, a core
    /// module, truncated, another world, an unsupported version, missing imports,
    /// failing declarations, or an invalid tool name or schema.
    pub async fn load(
        engine: &Engine,
        path: impl AsRef<Path>,
        options: &PluginOptions,
    ) -> Result<Self, LoadError> {
        let path = path.as_ref().to_owned();
        let bytes = engine
            .read_file(&path)
            .await
            .map_err(|error| LoadError::Io {
                path: path.clone(),
                error,
            })?;
        Self::from_bytes(engine, path, bytes, options).await
    }

    /// Loads a plugin from bytes; `path` names it in errors (and, by default, gives its name).
    ///
    /// With a cache directory, a component that loaded before is listed from
    /// its manifest there (what it declared and imports) and its code loads in
    /// the background: its first call waits for the code if it is not loaded
    /// yet (see [`Plugin::ready`]).
    ///
    /// # Errors
    /// As [`Plugin::load`].
    pub async fn from_bytes(
        engine: &Engine,
        path: PathBuf,
        bytes: Vec<u8>,
        options: &PluginOptions,
    ) -> Result<Self, LoadError> {
        check_header(&path, &bytes)?;
        let grants = options.effective_grants(&path)?;
        let bytes = bytes::Bytes::from(bytes);
        let key = match engine.config().get_cache_dir() {
            Some(dir) => {
                let (dir, hashed, wasm) = (dir.to_owned(), bytes.clone(), engine.wasm().clone());
                engine
                    .load_blocking(move || ManifestKey::new(&dir, &wasm, &hashed))
                    .await
                    .ok()
            }
            None => None,
        };
        let limits = engine.config().load_limits();
        // A failure is remembered per component and settings: any of them
        // may be why it failed.
        let failure = key
            .as_ref()
            .map(|key| key.failure(&format!("{:?}\n{grants:?}\n{limits:?}", options.limits)));
        if let Some(failure) = &failure
            && let Some(reason) = failure.read().await
        {
            return Err(LoadError::Remembered {
                path,
                reason,
                record: failure.path().to_owned(),
            });
        }
        if let Some(key) = &key
            && let Some(manifest) = key.read(manifest_cap(limits)).await
        {
            match Self::from_manifest(
                engine,
                &path,
                &bytes,
                manifest,
                options,
                grants.clone(),
                key,
            ) {
                Ok(plugin) => {
                    plugin.preload();
                    return Ok(plugin);
                }
                Err(e) => tracing::warn!(
                    manifest = %key.path().display(), error = %e,
                    "ignoring a plugin manifest that does not check; loading the plugin in full"
                ),
            }
        }
        // Compiling a large component (a Python or JavaScript runtime) takes
        // seconds: say so, so an operator knows why its tools are not there yet.
        tracing::info!(
            target: crate::log::LOAD_TARGET, plugin = %plugin_display_name(&path, options),
            "compiling {}: no compiled code cached", plugin_display_name(&path, options)
        );
        let loaded = match compile_off_runtime(engine, &path, bytes).await {
            Ok(component) => {
                Self::from_compiled(engine, path, &component, options, grants, key.as_ref()).await
            }
            Err(e) => Err(e),
        };
        if let (Err(e), Some(failure)) = (&loaded, &failure)
            && lasting(e)
        {
            failure.write(e).await;
        }
        loaded
    }

    /// Loads a plugin from an already compiled component.
    pub(crate) async fn from_component(
        engine: &Engine,
        path: PathBuf,
        component: &Component,
        options: &PluginOptions,
    ) -> Result<Self, LoadError> {
        let grants = options.effective_grants(&path)?;
        Self::from_compiled(engine, path, component, options, grants, None).await
    }

    /// Links a compiled component, reads its declarations and, given a key,
    /// stores its manifest.
    async fn from_compiled(
        engine: &Engine,
        path: PathBuf,
        component: &Component,
        options: &PluginOptions,
        grants: Grants,
        key: Option<&ManifestKey>,
    ) -> Result<Self, LoadError> {
        let (code, imports) = Code::link(engine, &path, component)?;
        let declarations = Self::loader(engine, &path, &options.limits, &grants, &imports, &code)
            .read_declarations()
            .await?;
        let tools = check_declarations(&path, &declarations, engine.config().load_limits())?;
        if let Some(key) = key {
            key.write(&Manifest::new(&imports, &declarations)).await;
        }
        let code = tokio::sync::OnceCell::new_with(Some(Ok(code)));
        let plugin = Self::assemble(engine, &path, options, (grants, imports, tools), code, None);
        plugin.note_ungranted();
        Ok(plugin)
    }

    /// A plugin around `code` whose guest runs under the load deadline, to
    /// read its declarations.
    fn loader(
        engine: &Engine,
        path: &Path,
        limits: &Limits,
        grants: &Grants,
        imports: &[String],
        code: &Code,
    ) -> Self {
        let mut limits = limits.clone();
        limits.deadline(engine.config().get_load_deadline());
        let mut options = PluginOptions::default();
        options.limits(limits);
        let code = tokio::sync::OnceCell::new_with(Some(Ok(code.clone())));
        let parts = (grants.clone(), imports.to_vec(), Vec::new());
        Self::assemble(engine, path, &options, parts, code, None)
    }

    /// Lists a plugin from its manifest; its code loads later.
    fn from_manifest(
        engine: &Engine,
        path: &Path,
        bytes: &bytes::Bytes,
        manifest: Manifest,
        options: &PluginOptions,
        grants: Grants,
        key: &ManifestKey,
    ) -> Result<Self, LoadError> {
        let imports = manifest.imports.clone();
        let declarations = manifest.declarations();
        let tools = check_declarations(path, &declarations, engine.config().load_limits())?;
        let plugin = Self::assemble(
            engine,
            path,
            options,
            (grants, imports, tools),
            tokio::sync::OnceCell::new(),
            Some((bytes.clone(), key.clone())),
        );
        plugin.note_ungranted();
        Ok(plugin)
    }

    /// A plugin from its parts: what it may reach, imports and declares, and
    /// its code (or the bytes to load it from).
    fn assemble(
        engine: &Engine,
        path: &Path,
        options: &PluginOptions,
        (grants, imports, tools): (Grants, Vec<String>, Vec<LoadedTool>),
        code: tokio::sync::OnceCell<Result<Code, String>>,
        source: Option<(bytes::Bytes, ManifestKey)>,
    ) -> Self {
        let name: Arc<str> = plugin_display_name(path, options).into();
        let state = if code.initialized() {
            CodeState::Loaded
        } else {
            CodeState::Pending
        };
        let (source, manifest) = source.unzip();
        Self {
            inner: Arc::new(Inner {
                id: reuse::next_plugin_id(),
                reuse: options.reuse,
                name,
                path: path.to_owned(),
                engine: engine.clone(),
                code,
                source: Mutex::new(source),
                manifest,
                code_state: tokio::sync::watch::Sender::new(state),
                tools,
                limits: options.limits.clone(),
                grants: Arc::new(grants),
                imports,
            }),
        }
    }

    /// Notes, at debug, the imports its grants do not cover. Most runtimes
    /// (Python, JavaScript, Go, C) import files and sockets whether or not a
    /// tool uses them, so this is no warning: `toolhost list` shows it, and a
    /// call that actually reaches a refused interface is logged then.
    fn note_ungranted(&self) {
        for import in self.ungranted_imports() {
            tracing::debug!(
                plugin = self.name(), interface = import,
                capability = %Capability::of_import(import),
                "the plugin imports an interface it is not granted; its calls that use it will be refused"
            );
        }
    }

    /// Loads the code of a plugin listed from its manifest in the background,
    /// a few plugins at a time (the engine's preload gate), so that a start
    /// with many plugins answers its first call without waiting for them all.
    fn preload(&self) {
        let plugin = Arc::downgrade(&self.inner);
        let gate = self.inner.engine.preload_gate();
        tokio::spawn(async move {
            let Ok(_permit) = gate.acquire_owned().await else {
                return;
            };
            // A plugin dropped meanwhile (reloaded, removed) needs no code.
            if let Some(inner) = plugin.upgrade() {
                let _ = Plugin { inner }.code().await;
            }
        });
    }

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

    /// Follows where the plugin's code stands, without loading it.
    pub(crate) fn code_state(&self) -> tokio::sync::watch::Receiver<CodeState> {
        self.inner.code_state.subscribe()
    }

    /// Tells this loaded version from every other.
    pub(crate) fn id(&self) -> u64 {
        self.inner.id
    }

    /// The plugin's code, loaded now if it is not yet.
    async fn code(&self) -> Result<&Code, String> {
        let loaded = match self.inner.code.get() {
            Some(loaded) => loaded,
            None => self.inner.code.get_or_init(|| self.load_code()).await,
        };
        loaded.as_ref().map_err(Clone::clone)
    }

    /// Compiles (from the cache) and links the plugin's code from its bytes.
    /// Cancellation-safe: the bytes go only once the outcome is kept.
    async fn load_code(&self) -> Result<Code, String> {
        let source = self.lock_source().clone();
        let Some(bytes) = source else {
            return Err("its code was never loaded and its bytes are gone".into());
        };
        let (engine, path) = (&self.inner.engine, &self.inner.path);
        let loaded = match compile_off_runtime(engine, path, bytes).await {
            Ok(component) => match Code::link(engine, path, &component) {
                Ok((code, imports)) => self.reconcile(code, imports).await,
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        *self.lock_source() = None;
        self.inner.code_state.send_replace(match &loaded {
            Ok(_) => CodeState::Loaded,
            Err(LoadError::StaleManifest { reason, .. }) => CodeState::Stale {
                reason: reason.clone(),
            },
            Err(_) => CodeState::Failed,
        });
        loaded.map_err(|e| {
            tracing::error!(plugin = self.name(), error = %e, "cannot load the plugin's code; its calls fail");
            e.to_string()
        })
    }

    /// Checks a plugin listed from its manifest against its code: the
    /// component is asked for its declarations (under the load deadline) and
    /// they must be those listed. If not, the manifest is rewritten from the
    /// component and this version is stale.
    async fn reconcile(&self, code: Code, imports: Vec<String>) -> Result<Code, LoadError> {
        let inner = &*self.inner;
        let Some(key) = &inner.manifest else {
            return Ok(code);
        };
        let (engine, path) = (&inner.engine, &inner.path);
        let loader = Self::loader(engine, path, &inner.limits, &inner.grants, &imports, &code);
        // Boxed: reading declarations instantiates, which may load code.
        let declarations = Box::pin(loader.read_declarations()).await?;
        let tools = check_declarations(path, &declarations, engine.config().load_limits())?;
        let reason = if imports == inner.imports {
            differences(&inner.tools, &tools)
        } else {
            Some("it imports other interfaces".to_owned())
        };
        let Some(reason) = reason else {
            return Ok(code);
        };
        key.write(&Manifest::new(&imports, &declarations)).await;
        tracing::warn!(
            plugin = self.name(), manifest = %key.path().display(), %reason,
            "the cache manifest did not match the component; rewritten from the component"
        );
        Err(LoadError::StaleManifest {
            path: path.clone(),
            manifest: key.path().to_owned(),
            reason,
        })
    }

    fn lock_source(&self) -> std::sync::MutexGuard<'_, Option<bytes::Bytes>> {
        // Only ever replaced whole: a poisoned lock holds a usable value.
        self.inner
            .source
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The code, for a call that runs it.
    async fn code_for(&self, tool: &str) -> Result<&Code, CallError> {
        self.code().await.map_err(|reason| CallError::Host {
            tool: tool.to_owned(),
            reason: format!("the plugin's code cannot be loaded: {reason}"),
        })
    }

    async fn read_declarations(&self) -> Result<Vec<wit::Declaration>, LoadError> {
        let path = || self.inner.path.clone();
        let reason = |e: CallError| match e {
            CallError::Exhausted {
                budget: Exhausted::Deadline { limit },
                ..
            } => LoadError::Timeout {
                path: path(),
                limit,
            },
            e @ (CallError::Exhausted { .. }
            | CallError::Panicked { .. }
            | CallError::Trapped { .. }) => LoadError::Declarations {
                path: path(),
                reason: e.to_string(),
            },
            // Not the plugin's doing (the engine is busy): not remembered.
            e => LoadError::Engine {
                path: path(),
                reason: e.to_string(),
            },
        };
        let (mut store, instance) = self
            .instantiate("(declarations)", "load", "load")
            .await
            .map_err(reason)?;
        let bindings = self
            .bindings(&mut store, "(declarations)", &instance)
            .await
            .map_err(reason)?;
        let deadline = store.data().deadline;
        let result = timeout(
            deadline,
            bindings
                .toolhost_plugin_tools()
                .call_declarations(&mut store),
        )
        .await;
        self.settle(&mut store, "(declarations)", result)
            .map_err(reason)
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

    /// Coerces and checks the arguments; returns them as JSON text for the guest.
    fn prepare(&self, tool: &LoadedTool, mut arguments: Value) -> Result<String, CallError> {
        if arguments.is_null() {
            arguments = Value::Object(Default::default());
        }
        tool.input.coerce(&mut arguments);
        let problems = tool.input.problems(&arguments);
        if !problems.is_empty() {
            return Err(CallError::InvalidArguments {
                tool: tool.spec.name.clone(),
                problems,
            });
        }
        // Straight into a buffer: `Value`'s `Display` goes through `fmt`, and is slower.
        serde_json::to_string(&arguments).map_err(|e| CallError::Host {
            tool: tool.spec.name.clone(),
            reason: format!("cannot encode the arguments: {e}"),
        })
    }

    /// Runs a tool to completion in a fresh instance.
    ///
    /// # Errors
    /// A [`CallError`]: unknown tool, invalid arguments (every violation listed),
    /// the tool's own failure, an exhausted budget, a panic or trap, or an invalid result.
    pub async fn invoke(&self, call: ToolCall) -> Result<ToolOutput, CallError> {
        let tool = self
            .find(&call.tool)
            .ok_or_else(|| self.unknown(&call.tool))?;
        if tool.spec.streaming {
            return self.stream(call).await?.collect().await;
        }
        let name = tool.spec.name.as_str();
        let (mut store, instance, wit_call) = self.begin(tool, call).await?;
        let deadline = store.data().deadline;
        let invoke = instance
            .get_typed_func::<(&wit::Call,), (Result<wit::Output, wit::ToolError>,)>(
                &mut store,
                &self.code_for(name).await?.invoke,
            )
            .map_err(|e| CallError::Host {
                tool: name.to_owned(),
                reason: format!("the `invoke` export: {e:#}"),
            })?;
        let result = timeout(deadline, invoke.call_async(&mut store, (&wit_call,)))
            .await
            .map(|called| called.map(|(output,)| output));
        let output = self.settle(&mut store, name, result)?;
        let usage = self.usage(&store);
        // The guest returned (a trap or an exhausted budget returned early
        // above and dropped the instance): it may serve the invocation again.
        if self.inner.reuse == Reuse::PerInvocation {
            let idle = reuse::Idle { store, instance };
            self.inner
                .engine
                .idle()
                .put(self.inner.id, &wit_call.invocation_id, idle);
        }
        let output = output.map_err(|e| self.tool_error(name, e))?;
        let mut output = self.finish(tool, output, wit_call.call_id)?;
        output.usage = usage;
        Ok(output)
    }

    /// Checks a call's arguments, then gives it a fresh instance.
    async fn begin(
        &self,
        tool: &LoadedTool,
        call: ToolCall,
    ) -> Result<(Store<PluginState>, Instance, wit::Call), CallError> {
        let arguments = self.prepare(tool, call.arguments)?;
        // A stream keeps its instance to the end and does not return it, so it
        // never takes the invocation's idle one.
        let idle = match self.inner.reuse {
            Reuse::PerInvocation if !tool.spec.streaming => self
                .inner
                .engine
                .idle()
                .take(self.inner.id, &call.invocation_id),
            _ => None,
        };
        let (store, instance) = match idle {
            Some(mut idle) => {
                self.rearm(&mut idle.store, &tool.spec.name, &call.call_id)?;
                (idle.store, idle.instance)
            }
            None => {
                self.instantiate(&tool.spec.name, &call.call_id, &call.invocation_id)
                    .await?
            }
        };
        let wit_call = wit::Call {
            call_id: call.call_id,
            invocation_id: call.invocation_id,
            tool: tool.spec.name.clone(),
            arguments,
        };
        Ok((store, instance, wit_call))
    }

    /// Starts a tool and returns its output as a stream of parts. A tool that
    /// does not stream gives its whole output as the stream's parts (its JSON
    /// result first).
    ///
    /// # Errors
    /// As [`Plugin::invoke`]; errors while streaming come from [`ToolStream::next`].
    pub async fn stream(&self, call: ToolCall) -> Result<ToolStream, CallError> {
        let tool = self
            .find(&call.tool)
            .ok_or_else(|| self.unknown(&call.tool))?;
        if !tool.spec.streaming {
            let output = Box::pin(self.invoke(call)).await?;
            return Ok(ToolStream::from_output(output));
        }
        let name = tool.spec.name.as_str();
        let (mut store, instance, wit_call) = self.begin(tool, call).await?;
        let bindings = self.bindings(&mut store, name, &instance).await?;
        let deadline = store.data().deadline;
        let result = timeout(
            deadline,
            bindings
                .toolhost_plugin_tools()
                .call_invoke_stream(&mut store, &wit_call),
        )
        .await;
        let handle = self
            .settle(&mut store, name, result)?
            .map_err(|e| self.tool_error(name, e))?;
        Ok(ToolStream {
            call_id: wit_call.call_id,
            inner: StreamInner::Guest(Box::new(GuestStream {
                plugin: self.clone(),
                tool: tool.spec.name.clone(),
                store,
                bindings,
                handle,
                emitted: 0,
                done: false,
            })),
        })
    }

    /// A fresh store under this plugin's limits, and a fresh instance in it.
    async fn instantiate(
        &self,
        tool: &str,
        call_id: &str,
        invocation_id: &str,
    ) -> Result<(Store<PluginState>, Instance), CallError> {
        let code = self.code_for(tool).await?;
        let engine = &self.inner.engine;
        let state = PluginState::new(
            engine,
            &self.inner.grants,
            &self.inner.limits,
            self.call_tag(tool, call_id),
            invocation_id,
            MAX_RESOURCES,
        )?;
        let mut store = Store::new(engine.wasm(), state);
        store.limiter_async(|state| &mut state.limiter);
        self.arm(&mut store, tool)?;
        let deadline = store.data().deadline;
        let instantiated = timeout(deadline, code.pre.instantiate_async(&mut store)).await;
        let instance = self.settle(&mut store, tool, instantiated)?;
        Ok((store, instance))
    }

    /// Every typed export of an instance (type-checked when the plugin loaded).
    async fn bindings(
        &self,
        store: &mut Store<PluginState>,
        tool: &str,
        instance: &Instance,
    ) -> Result<WitPlugin, CallError> {
        self.code_for(tool)
            .await?
            .indices
            .load(store, instance)
            .map_err(|e| CallError::Host {
                tool: tool.to_owned(),
                reason: format!("the plugin's exports: {e:#}"),
            })
    }

    /// Which call a log line or a refusal belongs to.
    fn call_tag(&self, tool: &str, call_id: &str) -> Arc<CallTag> {
        Arc::new(CallTag {
            plugin: self.inner.name.clone(),
            tool: tool.to_owned(),
            call_id: call_id.to_owned(),
            refused: Default::default(),
        })
    }

    /// Gives a store the budgets of one call: fuel, and a deadline from now.
    fn arm(&self, store: &mut Store<PluginState>, tool: &str) -> Result<(), CallError> {
        let limits = &self.inner.limits;
        let limit = limits.get_deadline();
        let deadline = Instant::now() + limit;
        store.data_mut().deadline = deadline;
        store.data_mut().limiter.deadline = deadline;
        store
            .set_fuel(limits.get_fuel())
            .map_err(|e| CallError::Host {
                tool: tool.to_owned(),
                reason: e.to_string(),
            })?;
        store.set_epoch_deadline(1);
        // Yield at every tick so a runaway guest cannot starve the executor, and
        // stop it once its deadline has passed.
        store.epoch_deadline_callback(move |_| {
            if Instant::now() < deadline {
                Ok(UpdateDeadline::Yield(1))
            } else {
                Err(Exhausted::Deadline { limit }.into())
            }
        });
        Ok(())
    }

    /// Readies an idle instance of this invocation for its next call: the
    /// call's tag in logs and hooks, a fresh output cap, fresh budgets.
    fn rearm(
        &self,
        store: &mut Store<PluginState>,
        tool: &str,
        call_id: &str,
    ) -> Result<(), CallError> {
        let call = self.call_tag(tool, call_id);
        let state = store.data_mut();
        state.stdio.rebind(Arc::clone(&call));
        state.http_hooks.call = Arc::clone(&call);
        state.call = call;
        state.panic_message = None;
        self.arm(store, tool)
    }

    /// What a store's call has cost so far.
    fn usage(&self, store: &Store<PluginState>) -> Usage {
        let left = store.get_fuel().unwrap_or(0);
        Usage {
            fuel: self.inner.limits.get_fuel().saturating_sub(left),
            peak_memory_bytes: store.data().limiter.peak_memory,
        }
    }

    /// The outcome of a guest call that ran under [`timeout`]: its value, or the
    /// typed error for a trap, an exhausted budget, or the deadline.
    fn settle<T>(
        &self,
        store: &mut Store<PluginState>,
        tool: &str,
        result: Result<wasmtime::Result<T>, tokio::time::error::Elapsed>,
    ) -> Result<T, CallError> {
        match result {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(err)) => Err(self.classify(store, tool, err)),
            Err(_elapsed) => Err(CallError::Exhausted {
                plugin: self.inner.name.to_string(),
                tool: tool.to_owned(),
                budget: Exhausted::Deadline {
                    limit: self.inner.limits.get_deadline(),
                },
            }),
        }
    }

    /// Turns a wasmtime error into the typed error that says what happened.
    fn classify(
        &self,
        store: &mut Store<PluginState>,
        tool: &str,
        err: wasmtime::Error,
    ) -> CallError {
        let plugin = self.inner.name.to_string();
        let tool = tool.to_owned();
        let limits = &self.inner.limits;
        let exhausted = |budget| CallError::Exhausted {
            plugin: plugin.clone(),
            tool: tool.clone(),
            budget,
        };
        if let Some(&budget) = err.downcast_ref::<Exhausted>() {
            return exhausted(budget);
        }
        if let Some(&reason) = err.downcast_ref::<Busy>() {
            return CallError::Busy {
                plugin,
                tool,
                reason,
            };
        }
        if let Some(full) = err.downcast_ref::<state::StateFull>() {
            return CallError::Failed {
                plugin,
                tool,
                message: full.to_string(),
            };
        }
        let trap = err.downcast_ref::<Trap>().copied();
        match trap {
            Some(Trap::OutOfFuel) => {
                return exhausted(Exhausted::Fuel {
                    limit: limits.get_fuel(),
                });
            }
            Some(Trap::StackOverflow) => {
                return exhausted(Exhausted::Stack {
                    limit: self.inner.engine.max_wasm_stack() as u64,
                });
            }
            Some(Trap::MemoryOutOfBounds) if shadow_stack_overflow(&err) => {
                return exhausted(Exhausted::Stack {
                    limit: self.inner.engine.max_wasm_stack() as u64,
                });
            }
            _ => {}
        }
        // wasmtime reports the limiter's instance, memory and table counts only
        // as text ("resource limit exceeded: instance count too high at 9").
        if trap.is_none() && format!("{err:#}").contains("count too high") {
            return exhausted(Exhausted::Instances {
                limit: limits.get_instances(),
            });
        }
        if err
            .downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
            .is_some()
        {
            return CallError::Busy {
                plugin,
                tool,
                reason: Busy::Instances,
            };
        }
        if let Some(message) = store.data_mut().panic_message.take() {
            return CallError::Panicked {
                plugin,
                tool,
                message,
            };
        }
        let summary = match trap {
            Some(trap) => trap.to_string(),
            None => err.to_string(),
        };
        if trap.is_none() {
            // Not a trap: instantiation failed for a host reason (e.g. the pool is full).
            tracing::warn!(plugin = %plugin, tool = %tool, error = ?err, "call could not run");
        }
        CallError::Trapped {
            plugin,
            tool,
            trap: summary,
            source: err,
        }
    }

    /// The tool's own error, its message cut to a size a model's context (and
    /// the host's log) can take.
    fn tool_error(&self, tool: &str, err: wit::ToolError) -> CallError {
        let cut = |message| crate::error::cut(message, crate::error::MAX_ERROR_MESSAGE_BYTES);
        match err {
            wit::ToolError::InvalidArguments(message) => CallError::InvalidArguments {
                tool: tool.to_owned(),
                problems: vec![cut(message)],
            },
            wit::ToolError::Failed(message) => CallError::Failed {
                plugin: self.inner.name.to_string(),
                tool: tool.to_owned(),
                message: cut(message),
            },
            wit::ToolError::UnknownTool(message) => CallError::InvalidOutput {
                plugin: self.inner.name.to_string(),
                tool: tool.to_owned(),
                reason: format!(
                    "the plugin declared this tool but does not know it: {}",
                    cut(message)
                ),
            },
        }
    }

    fn invalid_output(&self, tool: &str, reason: String) -> CallError {
        CallError::InvalidOutput {
            plugin: self.inner.name.to_string(),
            tool: tool.to_owned(),
            reason,
        }
    }

    fn check_output_size(&self, tool: &str, size: u64) -> Result<(), CallError> {
        let limit = self.inner.limits.get_output_bytes();
        if size > limit {
            return Err(CallError::Exhausted {
                plugin: self.inner.name.to_string(),
                tool: tool.to_owned(),
                budget: Exhausted::Output { limit },
            });
        }
        Ok(())
    }

    fn convert_part(&self, tool: &str, part: wit::Part) -> Result<Part, CallError> {
        Ok(match part {
            wit::Part::Text(text) => Part::Text(text),
            wit::Part::Json(text) => Part::Json(serde_json::from_str(&text).map_err(|e| {
                self.invalid_output(tool, format!("a JSON part is not valid JSON: {e}"))
            })?),
            wit::Part::Blob(blob) => Part::Blob {
                kind: match blob.kind {
                    WitMediaKind::Image => MediaKind::Image,
                    WitMediaKind::Audio => MediaKind::Audio,
                    WitMediaKind::Video => MediaKind::Video,
                    WitMediaKind::File => MediaKind::File,
                },
                mime_type: blob.mime_type,
                name: blob.name,
                data: blob.data,
            },
        })
    }

    fn finish(
        &self,
        tool: &LoadedTool,
        output: wit::Output,
        call_id: String,
    ) -> Result<ToolOutput, CallError> {
        let name = tool.spec.name.as_str();
        let size = output.json.as_ref().map_or(0, String::len)
            + output.parts.iter().map(wit_part_size).sum::<usize>();
        self.check_output_size(name, size as u64)?;
        let result = match output.json {
            None => None,
            Some(text) => {
                let value: Value = serde_json::from_str(&text).map_err(|e| {
                    self.invalid_output(name, format!("the JSON result is not valid JSON: {e}"))
                })?;
                if let Some(schema) = &tool.output {
                    let problems = schema.problems(&value);
                    if !problems.is_empty() {
                        return Err(self.invalid_output(
                            name,
                            format!(
                                "it does not match its declared result schema: {}",
                                problems.join("; ")
                            ),
                        ));
                    }
                }
                Some(wrap_result(value))
            }
        };
        let parts = output
            .parts
            .into_iter()
            .map(|p| self.convert_part(name, p))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ToolOutput {
            result,
            parts,
            call_id,
            usage: Usage::default(),
        })
    }
}

/// Runs a guest call under the call's deadline. The epoch callback stops guest
/// code that computes past it; this timer also stops a guest blocked in an
/// async host call (a WASI sleep or poll), which never reaches an epoch check.
async fn timeout<F: Future>(
    deadline: Instant,
    call: F,
) -> Result<F::Output, tokio::time::error::Elapsed> {
    tokio::time::timeout_at(tokio::time::Instant::from_std(deadline), call).await
}

/// Languages that keep their stack in linear memory (Rust, C: "stack first",
/// growing down towards address 0) overflow it by wrapping below zero. That is
/// a stack overflow, not a wild pointer. wasmtime reports it as an
/// out-of-bounds access: at a fault address just under 4 GiB when a plain load
/// or store hit the guard region, or with no address when a bulk-memory
/// instruction (`memory.fill`, `memory.copy`) refused it; then the backtrace,
/// full and made of one to three recursing functions, tells.
fn shadow_stack_overflow(err: &wasmtime::Error) -> bool {
    wrapped_stack_address(err) || runaway_recursion(err)
}

/// The backtrace is at least 16 frames deep (wasmtime keeps 20 by default)
/// and holds at most 3 distinct functions: a recursion that ran away.
fn runaway_recursion(err: &wasmtime::Error) -> bool {
    const MIN_FRAMES: usize = 16;
    let Some(backtrace) = err.downcast_ref::<WasmBacktrace>() else {
        return false;
    };
    let frames = backtrace.frames();
    if frames.len() < MIN_FRAMES {
        return false;
    }
    let mut functions: Vec<u32> = frames.iter().map(|frame| frame.func_index()).collect();
    functions.sort_unstable();
    functions.dedup();
    functions.len() <= 3
}

/// The fault address lies in the top 1 MiB below 4 GiB.
fn wrapped_stack_address(err: &wasmtime::Error) -> bool {
    const PREFIX: &str = "memory fault at wasm address 0x";
    let text = format!("{err:#}");
    let Some(start) = text.find(PREFIX) else {
        return false;
    };
    let hex: String = text[start + PREFIX.len()..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    u64::from_str_radix(&hex, 16).is_ok_and(|address| {
        (u64::from(u32::MAX) - (1 << 20)..=u64::from(u32::MAX)).contains(&address)
    })
}

/// What each chunk of a stream counts toward the output cap beyond its bytes.
pub(crate) const CHUNK_OVERHEAD_BYTES: usize = 256;

fn wit_part_size(part: &wit::Part) -> usize {
    match part {
        wit::Part::Text(text) | wit::Part::Json(text) => text.len(),
        wit::Part::Blob(blob) => {
            blob.mime_type.len() + blob.name.as_ref().map_or(0, String::len) + blob.data.len()
        }
    }
}

/// Holds declarations to the load limits, before any schema is parsed.
fn check_sizes(
    path: &Path,
    declarations: &[wit::Declaration],
    limits: &LoadLimits,
) -> Result<(), LoadError> {
    if declarations.len() > limits.max_tools {
        return Err(LoadError::TooManyTools {
            path: path.to_owned(),
            count: declarations.len(),
            limit: limits.max_tools,
        });
    }
    let mut total = 0usize;
    for declaration in declarations {
        let schemas = [
            ("input", Some(&declaration.input_schema)),
            ("output", declaration.output_schema.as_ref()),
        ];
        for (which, schema) in schemas {
            let bytes = schema.map_or(0, String::len);
            if bytes > limits.max_schema_bytes {
                return Err(LoadError::SchemaTooLarge {
                    path: path.to_owned(),
                    // Cut: the name is not checked yet.
                    tool: declaration.info.name.chars().take(64).collect(),
                    which,
                    bytes,
                    limit: limits.max_schema_bytes,
                });
            }
            total = total.saturating_add(bytes);
        }
        total = total
            .saturating_add(declaration.info.name.len())
            .saturating_add(declaration.info.description.len());
    }
    if total > limits.max_declaration_bytes {
        return Err(LoadError::DeclarationsTooLarge {
            path: path.to_owned(),
            bytes: total,
            limit: limits.max_declaration_bytes,
        });
    }
    Ok(())
}

/// The largest manifest file worth reading under these limits (JSON may
/// escape a byte of text into six).
fn manifest_cap(limits: &LoadLimits) -> u64 {
    (limits.max_declaration_bytes as u64)
        .saturating_mul(6)
        .saturating_add(1 << 20)
}

/// Whether a load failure comes from the component and its settings alone,
/// so that loading the same bytes the same way would fail again.
fn lasting(error: &LoadError) -> bool {
    matches!(
        error,
        LoadError::Malformed { .. }
            | LoadError::WrongWorld { .. }
            | LoadError::UnsupportedVersion { .. }
            | LoadError::Link { .. }
            | LoadError::Declarations { .. }
            | LoadError::InvalidTool { .. }
            | LoadError::TooManyTools { .. }
            | LoadError::SchemaTooLarge { .. }
            | LoadError::DeclarationsTooLarge { .. }
            | LoadError::Timeout { .. }
    )
}

/// How the tools listed differ from those declared, if they do.
fn differences(listed: &[LoadedTool], declared: &[LoadedTool]) -> Option<String> {
    for tool in listed {
        match declared.iter().find(|d| d.spec.name == tool.spec.name) {
            None => {
                return Some(format!(
                    "it lists `{}`, which the component does not declare",
                    tool.spec.name
                ));
            }
            Some(d) if d.spec != tool.spec => {
                return Some(format!(
                    "it lists `{}` otherwise than the component declares it",
                    tool.spec.name
                ));
            }
            Some(_) => {}
        }
    }
    if let Some(missing) = declared
        .iter()
        .find(|d| !listed.iter().any(|t| t.spec.name == d.spec.name))
    {
        return Some(format!(
            "it does not list `{}`, which the component declares",
            missing.spec.name
        ));
    }
    let order = |tools: &[LoadedTool]| {
        tools
            .iter()
            .map(|t| t.spec.name.clone())
            .collect::<Vec<_>>()
    };
    (order(listed) != order(declared)).then(|| "it lists the tools in another order".to_owned())
}

fn check_declarations(
    path: &Path,
    declarations: &[wit::Declaration],
    limits: &LoadLimits,
) -> Result<Vec<LoadedTool>, LoadError> {
    check_sizes(path, declarations, limits)?;
    let mut seen = HashSet::new();
    let mut tools = Vec::with_capacity(declarations.len());
    for declaration in declarations {
        let name = declaration.info.name.clone();
        let invalid = |reason: String| LoadError::InvalidTool {
            path: path.to_owned(),
            tool: name.clone(),
            reason,
        };
        if !valid_tool_name(&name) {
            return Err(invalid(
                "a tool name must be 1 to 64 ASCII letters, digits, `_` or `-`".into(),
            ));
        }
        if !seen.insert(name.clone()) {
            return Err(invalid("declared twice".into()));
        }
        let input = Schema::input(&declaration.input_schema)
            .map_err(|e| invalid(format!("input schema: {e}")))?;
        let output = declaration
            .output_schema
            .as_deref()
            .map(Schema::output)
            .transpose()
            .map_err(|e| invalid(format!("output schema: {e}")))?;
        let input = Arc::new(input);
        let mut spec = ToolSpec::new(
            name.clone(),
            declaration.info.description.clone(),
            input.raw().clone(),
        )
        .with_compiled_input(Arc::clone(&input));
        spec.long_running = declaration.info.long_running;
        spec.streaming = declaration.streaming;
        spec.output_schema = output.as_ref().map(|s| s.raw().clone());
        tools.push(LoadedTool {
            spec,
            input,
            output,
        });
    }
    Ok(tools)
}

/// The output of a running tool, pulled part by part.
pub struct ToolStream {
    call_id: String,
    inner: StreamInner,
}

enum StreamInner {
    Ready(std::vec::IntoIter<Part>),
    Guest(Box<GuestStream>),
    Channel(tokio::sync::mpsc::Receiver<Result<Part, CallError>>),
}

struct GuestStream {
    plugin: Plugin,
    tool: String,
    store: Store<PluginState>,
    bindings: WitPlugin,
    handle: ResourceAny,
    emitted: u64,
    done: bool,
}

impl std::fmt::Debug for ToolStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolStream")
            .field("call_id", &self.call_id)
            .finish_non_exhaustive()
    }
}

impl ToolStream {
    /// A stream over a finished output: its JSON result first, then its parts.
    pub fn from_output(output: ToolOutput) -> Self {
        let call_id = output.call_id;
        let mut parts: Vec<Part> = output.result.into_iter().map(Part::Json).collect();
        parts.extend(output.parts);
        Self {
            call_id,
            inner: StreamInner::Ready(parts.into_iter()),
        }
    }

    /// A stream fed through a channel, for tools written natively in Rust: send
    /// parts (or an error) on the sender; the stream ends when it is dropped.
    pub fn channel(
        call_id: impl Into<String>,
        capacity: usize,
    ) -> (tokio::sync::mpsc::Sender<Result<Part, CallError>>, Self) {
        let (sender, receiver) = tokio::sync::mpsc::channel(capacity.max(1));
        let stream = Self {
            call_id: call_id.into(),
            inner: StreamInner::Channel(receiver),
        };
        (sender, stream)
    }

    /// The call ID this stream answers.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The next part; `None` once the stream has ended or failed.
    ///
    /// # Errors
    /// The tool's failure, an exhausted budget (the deadline and fuel cover the
    /// whole stream; the output limit covers all chunks together), or a trap.
    pub async fn next(&mut self) -> Option<Result<Part, CallError>> {
        match &mut self.inner {
            StreamInner::Ready(parts) => parts.next().map(Ok),
            StreamInner::Guest(guest) => guest.next().await,
            StreamInner::Channel(receiver) => receiver.recv().await,
        }
    }

    /// Pulls the stream to its end and gathers it into one output: adjacent
    /// text chunks are joined; when every chunk is text, the JSON result is
    /// `{"result": "<all the text>"}`.
    ///
    /// # Errors
    /// The first error the stream gives.
    pub async fn collect(mut self) -> Result<ToolOutput, CallError> {
        let mut parts: Vec<Part> = Vec::new();
        while let Some(part) = self.next().await {
            match (part?, parts.last_mut()) {
                (Part::Text(text), Some(Part::Text(last))) => last.push_str(&text),
                (part, _) => parts.push(part),
            }
        }
        let result = match parts.as_slice() {
            [] => Some(wrap_result(Value::String(String::new()))),
            [Part::Text(text)] => Some(wrap_result(Value::String(text.clone()))),
            _ => None,
        };
        if result.is_some() {
            parts.clear();
        }
        let usage = match &self.inner {
            StreamInner::Guest(guest) => guest.plugin.usage(&guest.store),
            _ => Usage::default(),
        };
        Ok(ToolOutput {
            result,
            parts,
            call_id: self.call_id,
            usage,
        })
    }
}

impl GuestStream {
    async fn next(&mut self) -> Option<Result<Part, CallError>> {
        if self.done {
            return None;
        }
        let result = self.pull().await;
        if !matches!(result, Some(Ok(_))) {
            self.done = true;
        }
        result
    }

    async fn pull(&mut self) -> Option<Result<Part, CallError>> {
        let plugin = &self.plugin;
        let tool = self.tool.as_str();
        let deadline = self.store.data().deadline;
        let next = timeout(
            deadline,
            self.bindings
                .toolhost_plugin_tools()
                .chunks()
                .call_next(&mut self.store, self.handle),
        )
        .await;
        let chunk = match plugin.settle(&mut self.store, tool, next) {
            Err(e) => return Some(Err(e)),
            Ok(Err(e)) => return Some(Err(plugin.tool_error(tool, e))),
            Ok(Ok(None)) => return None,
            Ok(Ok(Some(chunk))) => chunk,
        };
        // Every chunk costs the host (a message, a progress notification)
        // even when empty: each counts a fixed overhead toward the output cap.
        self.emitted += (wit_part_size(&chunk) + CHUNK_OVERHEAD_BYTES) as u64;
        if let Err(e) = plugin.check_output_size(tool, self.emitted) {
            return Some(Err(e));
        }
        Some(plugin.convert_part(tool, chunk))
    }
}

/// Reads a component file and tells what it is: its imports and exports, and,
/// if it is a toolhost plugin that loads, its tools.
///
/// # Errors
/// A [`LoadError`] if the file cannot be read or compiled. A component of
/// another world is not an error here: its info comes back with the load
/// error for the tools.
pub async fn inspect(
    engine: &Engine,
    path: impl AsRef<Path>,
) -> Result<(ComponentInfo, Result<Plugin, LoadError>), LoadError> {
    let path = path.as_ref().to_owned();
    let bytes = tokio::fs::read(&path)
        .await
        .map_err(|error| LoadError::Io {
            path: path.clone(),
            error,
        })?;
    let component = compile_off_runtime(engine, &path, bytes).await?;
    let info = component_info(engine, &component);
    let plugin = Plugin::from_component(engine, path, &component, &PluginOptions::default()).await;
    Ok((info, plugin))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

    use super::*;

    /// A plugin listed from its manifest whose code then fails to load: it is
    /// listed, every call reports why, and `ready` says so too.
    #[tokio::test]
    async fn code_that_fails_after_a_manifest_listing_fails_every_call() {
        let cache = tempfile::tempdir().unwrap();
        let mut config = crate::EngineConfig::default();
        config.cache_dir(Some(cache.path().to_owned()));
        let engine = Engine::new(&config).unwrap();
        // A component header, then garbage: it cannot compile.
        let bytes = b"\0asm\x0d\0\x01\0 not a component body".to_vec();
        let declared = wit::Declaration {
            info: crate::bindings::v0_1::toolhost::plugin::types::ToolInfo {
                name: "t".into(),
                description: "listed".into(),
                long_running: false,
            },
            input_schema: r#"{"type": "object"}"#.into(),
            output_schema: None,
            streaming: false,
        };
        ManifestKey::new(cache.path(), engine.wasm(), &bytes)
            .write(&Manifest::new(&[], &[declared]))
            .await;

        let path = PathBuf::from("broken.wasm");
        let plugin = Plugin::from_bytes(&engine, path, bytes, &PluginOptions::default())
            .await
            .unwrap();
        assert_eq!(plugin.tool("t").unwrap().description, "listed");
        for _ in 0..2 {
            let err = plugin
                .invoke(ToolCall::new("t", serde_json::json!({})))
                .await
                .unwrap_err();
            assert!(
                matches!(&err, CallError::Host { reason, .. } if reason.contains("malformed")),
                "{err:?}"
            );
        }
        let err = plugin.ready().await.unwrap_err();
        assert!(
            matches!(&err, LoadError::Engine { reason, .. } if reason.contains("malformed")),
            "{err:?}"
        );
    }
}
