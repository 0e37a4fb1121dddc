//! Loading a plugin: read, check and compile its component (or list it from
//! its cached manifest and load its code later), read its declarations once.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use wasmtime::component::Component;

use super::abi::Declaration;
use super::abi::catalog::Described;
use super::call::timeout;
use super::code::{Code, check_header};
use super::declarations::{check_declarations, differences};
use super::dynamic::docs::Docs;
use super::dynamic::loaded_tools;
use super::dynamic::sidecar::{self, Sidecar};
use super::manifest::{Manifest, ManifestKey};
use super::offered::Offered;
use super::{CodeState, Inner, LoadedTool, Plugin, PluginOptions, reuse};
use crate::Engine;
use crate::engine::LoadLimits;
use crate::engine::limits::Limits;
use crate::error::{CallError, Exhausted, LoadError};
use crate::policy::{Capability, Grants};

impl Plugin {
    /// Loads a plugin file: reads, checks and compiles it (from the cache when
    /// possible), links it, reads its declarations once and compiles their schemas.
    /// A component that loaded before with the same cache directory is listed
    /// from its manifest instead, and its code loads in the background (see
    /// [`Plugin::from_bytes`]).
    ///
    /// A component that does not export the toolhost contract loads as a
    /// toolset of its exported functions (see `dynamic`): those that cannot
    /// be tools are left out, each with a warning.
    ///
    /// # Errors
    /// A [`LoadError`] naming the file and what is wrong: not WebAssembly, a core
    /// module, truncated, another world with no function that can be a tool, an
    /// unsupported version, missing imports (named), failing declarations, or
    /// an invalid tool name or schema.
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
        let key = match engine.config().cache_dir.as_deref() {
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
        let name = plugin_display_name(&path, options);
        // A failure is remembered per component and settings: any of them
        // may be why it failed.
        let failure = key
            .as_ref()
            .map(|key| key.failure(&format!("{:?}\n{grants:?}\n{limits:?}", options.limits)));
        if let Some(failure) = &failure
            && let Some(reason) = failure.read(&name).await
        {
            return Err(LoadError::Remembered {
                path,
                reason,
                record: failure.path().to_owned(),
            });
        }
        if let Some(key) = &key
            && let Some(manifest) = key.read(&name, manifest_cap(limits)).await
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
            target: crate::log::LOAD_TARGET, plugin = %name,
            "compiling {name}: no compiled code cached"
        );
        let content = key.as_ref().map(|key| key.hash().to_owned());
        let source = bytes.clone();
        let loaded = match Code::load(engine, (&name, &path), bytes, content).await {
            Ok((code, imports)) => {
                let cache = (key.as_ref(), Some(source));
                let loaded =
                    Self::from_code(engine, path, code.clone(), imports, options, grants, cache)
                        .await;
                if loaded.is_ok() {
                    code.optimize(engine);
                }
                loaded
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

    /// Loads a plugin from an already compiled component, compiled from `bytes`.
    pub(crate) async fn from_component(
        engine: &Engine,
        path: PathBuf,
        (component, bytes): (&Component, bytes::Bytes),
        options: &PluginOptions,
    ) -> Result<Self, LoadError> {
        let grants = options.effective_grants(&path)?;
        let (code, imports) = Code::link(engine, &path, component)?;
        let source = (None, Some(bytes));
        Self::from_code(engine, path, code, imports, options, grants, source).await
    }

    /// Reads linked code's declarations and, given a key, stores its manifest.
    /// The component's bytes, when given, are read for its WIT docs.
    async fn from_code(
        engine: &Engine,
        path: PathBuf,
        code: Code,
        imports: Vec<String>,
        options: &PluginOptions,
        grants: Grants,
        (key, bytes): (Option<&ManifestKey>, Option<bytes::Bytes>),
    ) -> Result<Self, LoadError> {
        let linked = code.current();
        if linked.exports.is_none() {
            // Any other component: its exported functions are its tools,
            // known from its types alone (no manifest: nothing to ask it),
            // described by its WIT docs and its sidecar, both read on every
            // load (neither is part of the compiled code or its cache).
            let limits = engine.config().load_limits();
            let name = plugin_display_name(&path, options);
            let docs = Self::docs(engine, &name, bytes).await;
            let sidecar = if options.sidecar_policy {
                Sidecar::read(&path)
                    .await
                    .map_err(|error| LoadError::Sidecar {
                        path: path.clone(),
                        error,
                    })?
            } else {
                None
            };
            let described = (&docs, sidecar.as_ref());
            let tools = loaded_tools(&path, &name, linked.pre.component(), limits, described)?;
            let code = tokio::sync::OnceCell::new_with(Some(Ok(code)));
            let parts = (grants, imports, tools, Offered::default());
            let plugin = Self::assemble(engine, &path, options, parts, code, None);
            plugin.note_ungranted();
            return Ok(plugin);
        }
        drop(linked);
        let sidecar = sidecar::path(&path);
        if options.sidecar_policy && tokio::fs::try_exists(&sidecar).await.unwrap_or(false) {
            // Not the load target: a one-shot command shows it too.
            tracing::warn!(
                plugin = %path.display(), sidecar = %sidecar.display(),
                "a tools sidecar applies to component toolsets only; this plugin declares its own tools, so it is ignored"
            );
        }
        let (declarations, catalog) =
            Self::loader(engine, &path, &options.limits, &grants, &imports, &code)
                .read_declarations()
                .await?;
        let limits = engine.config().load_limits();
        let tools = check_declarations(&path, &declarations, limits)?;
        let name = plugin_display_name(&path, options);
        let offered = Offered::check(&path, &name, catalog.clone(), limits)?;
        if let Some(key) = key {
            key.write(&Manifest::new(&imports, &declarations, &catalog))
                .await;
        }
        let code = tokio::sync::OnceCell::new_with(Some(Ok(code)));
        let parts = (grants, imports, tools, offered);
        let plugin = Self::assemble(engine, &path, options, parts, code, None);
        plugin.note_ungranted();
        Ok(plugin)
    }

    /// The WIT docs in a component's bytes (read on a loader thread: the
    /// whole component is walked); what cannot be read is a warning.
    async fn docs(engine: &Engine, plugin: &str, bytes: Option<bytes::Bytes>) -> Docs {
        let Some(bytes) = bytes else {
            return Docs::default();
        };
        let (docs, warnings) = engine
            .load_blocking(move || Docs::read(&bytes))
            .await
            .unwrap_or_default();
        for warning in warnings {
            tracing::warn!(target: crate::log::LOAD_TARGET, %plugin, "{plugin}: {warning}");
        }
        docs
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
        limits.timeout(engine.config().load.timeout);
        let mut options = PluginOptions::default();
        options.limits(limits);
        let code = tokio::sync::OnceCell::new_with(Some(Ok(code.clone())));
        let parts = (
            grants.clone(),
            imports.to_vec(),
            Vec::new(),
            Offered::default(),
        );
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
        let (declarations, catalog) = manifest.declarations();
        let limits = engine.config().load_limits();
        let tools = check_declarations(path, &declarations, limits)?;
        let offered = Offered::check(path, &plugin_display_name(path, options), catalog, limits)?;
        let plugin = Self::assemble(
            engine,
            path,
            options,
            (grants, imports, tools, offered),
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
        (grants, imports, tools, offered): (Grants, Vec<String>, Vec<LoadedTool>, Offered),
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
                offered: Arc::new(offered),
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

    /// The plugin's code, loaded now if it is not yet.
    pub(super) async fn code(&self) -> Result<&Code, String> {
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
        let content = self
            .inner
            .manifest
            .as_ref()
            .map(|key| key.hash().to_owned());
        let loaded = match Code::load(engine, (self.name(), path), bytes, content).await {
            Ok((code, imports)) => self.reconcile(code, imports).await,
            Err(e) => Err(e),
        };
        if let Ok(code) = &loaded {
            code.optimize(engine);
        }
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
        let (declarations, catalog) = Box::pin(loader.read_declarations()).await?;
        let limits = engine.config().load_limits();
        let tools = check_declarations(path, &declarations, limits)?;
        let offered = Offered::check(path, &inner.name, catalog.clone(), limits)?;
        let reason = if imports != inner.imports {
            Some("it imports other interfaces".to_owned())
        } else if !offered.same_as(&inner.offered) {
            Some("it offers other resources, templates or prompts".to_owned())
        } else {
            differences(&inner.tools, &tools)
        };
        let Some(reason) = reason else {
            return Ok(code);
        };
        key.write(&Manifest::new(&imports, &declarations, &catalog))
            .await;
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
    pub(super) async fn code_for(&self, tool: &str) -> Result<&Code, CallError> {
        self.code().await.map_err(|reason| CallError::Host {
            tool: tool.to_owned(),
            reason: format!("the plugin's code cannot be loaded: {reason}"),
        })
    }

    /// Asks the guest what it declares: its tools, and what else it offers
    /// if it exports a catalog (in the same instance, under the same deadline).
    async fn read_declarations(&self) -> Result<(Vec<Declaration>, Described), LoadError> {
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
        let (mut store, instance, code) = self
            .instantiate("(declarations)", "load", "load", Default::default())
            .await
            .map_err(reason)?;
        let exports =
            super::call::exports(&code, &mut store, "(declarations)", &instance).map_err(reason)?;
        let deadline = store.data().deadline.clone();
        let result = timeout(deadline.clone(), exports.declarations(&mut store)).await;
        let declarations = self
            .settle(&mut store, "(declarations)", result)
            .map_err(reason)?;
        let Some(indices) = &code.catalog else {
            return Ok((declarations, Described::default()));
        };
        let catalog = indices
            .load(&mut store, &instance)
            .map_err(|e| LoadError::Declarations {
                path: path(),
                reason: format!("the plugin's catalog exports: {e:#}"),
            })?;
        let result = timeout(deadline, catalog.describe(&mut store)).await;
        let described = self
            .settle(&mut store, "(catalog)", result)
            .map_err(reason)?;
        Ok((declarations, described))
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
            | LoadError::InvalidItem { .. }
            | LoadError::TooManyTools { .. }
            | LoadError::SchemaTooLarge { .. }
            | LoadError::DeclarationsTooLarge { .. }
            | LoadError::Timeout { .. }
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

    use super::*;
    use crate::tool::ToolCall;

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
        let declared = Declaration {
            name: "t".into(),
            description: "listed".into(),
            long_running: false,
            input_schema: r#"{"type": "object"}"#.into(),
            output_schema: None,
            streaming: false,
            hints: Default::default(),
        };
        ManifestKey::new(cache.path(), engine.wasm(), &bytes)
            .write(&Manifest::new(&[], &[declared], &Default::default()))
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
