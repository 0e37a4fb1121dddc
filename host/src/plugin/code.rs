//! A component's code: its header checked, compiled (from the cache when
//! possible), its world checked and linked against the engine's linker; in
//! tiers: baseline code first, optimized code in the background (see
//! [`Compilation`](crate::engine::Compilation)).

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Instant;

use wasmtime::component::{Component, InstancePre};

use super::ComponentInfo;
use super::abi::catalog::CatalogIndices;
use super::abi::{self, ExportIndices};
use super::runtime::PluginRuntime;
use super::state::PluginState;
use crate::Engine;
use crate::engine::{CodeCache, CodeEntry, Compilation, Tier};
use crate::error::{CallError, LoadError};

/// A plugin's code: the code new calls run, replaced once by the optimized
/// code when it was first linked with baseline code. Cheap to clone.
#[derive(Clone)]
pub(super) struct Code(Arc<Tiers>);

struct Tiers {
    /// What new calls run. Instances keep their own handle on the code they
    /// were made from, so baseline code is freed once the last one is gone.
    current: RwLock<Arc<Linked>>,
    /// True once no other code is coming: optimized, or it could not be.
    settled: tokio::sync::watch::Sender<bool>,
    /// What optimizing needs, from a tiered load of baseline code until
    /// [`Code::optimize`] starts it (once the plugin is known to load).
    pending: std::sync::Mutex<Option<(Unit, bytes::Bytes)>>,
}

/// One tier's code, compiled and linked against its engine's linker.
pub(crate) struct Linked {
    pub(super) pre: InstancePre<PluginState>,
    /// Where the typed exports are, in the component's contract version;
    /// `None` for a component that does not export the contract (its
    /// exported functions are its tools: see `dynamic`).
    pub(super) exports: Option<ExportIndices>,
    /// Where the catalog exports are, for a plugin that has them (`@0.4.0` on).
    pub(super) catalog: Option<CatalogIndices>,
    pub(super) tier: Tier,
}

impl Code {
    /// Checks the component's world and links it. Also returns what it imports.
    pub(super) fn link(
        engine: &Engine,
        path: &Path,
        component: &Component,
    ) -> Result<(Self, Vec<String>), LoadError> {
        let (linked, imports) = Linked::new(engine, path, component)?;
        let settled = linked.tier == Tier::Optimized;
        let code = Self(Arc::new(Tiers {
            current: RwLock::new(Arc::new(linked)),
            settled: tokio::sync::watch::Sender::new(settled),
            pending: std::sync::Mutex::new(None),
        }));
        Ok((code, imports))
    }

    /// Compiles and links a component's bytes on a loader thread: optimized
    /// code when the engine compiles only that or the cache holds it, else
    /// baseline code, with optimized code compiled in the background when
    /// the engine tiers, once [`Code::optimize`] says the plugin loaded (see
    /// [`Code::current`]). With a cache directory,
    /// `key` is the component's content key (see `ManifestKey`), what its
    /// code is cached under.
    pub(super) async fn load(
        engine: &Engine,
        (name, path): (&str, &Path),
        bytes: bytes::Bytes,
        key: Option<String>,
    ) -> Result<(Self, Vec<String>), LoadError> {
        let unit = Unit {
            name: name.to_owned(),
            path: path.to_owned(),
            key,
        };
        let (compiler, first, source) = (engine.clone(), unit.clone(), bytes.clone());
        let loading = engine.loading();
        let component = engine
            .load_blocking(move || compile_first(&compiler, &first, &source))
            .await
            .map_err(|_| shutting_down(path))??;
        drop(loading);
        let (code, imports) = Self::link(engine, path, &component)?;
        if code.current().tier == Tier::Baseline
            && engine.config().compilation == Compilation::Tiered
        {
            *code.lock_pending() = Some((unit, bytes));
        } else {
            code.0.settled.send_replace(true);
        }
        Ok((code, imports))
    }

    /// Starts compiling the optimized code of a tiered load, now that its
    /// plugin loaded: a plugin that fails after its code is linked (a bad
    /// schema, nothing that can be a tool) never costs the optimizing
    /// compiler's time, nor leaves its optimized code in the cache. Does
    /// nothing for code that is optimized already, or the second time.
    pub(super) fn optimize(&self, engine: &Engine) {
        let pending = self.lock_pending().take();
        if let Some((unit, bytes)) = pending {
            self.optimize_later(engine, unit, bytes);
        }
    }

    fn lock_pending(&self) -> std::sync::MutexGuard<'_, Option<(Unit, bytes::Bytes)>> {
        // Only ever replaced whole: a poisoned lock holds a usable value.
        self.0
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The code new calls run: the optimized code once it is ready.
    pub(super) fn current(&self) -> Arc<Linked> {
        // Only ever replaced whole: a poisoned lock holds a usable value.
        Arc::clone(
            &self
                .0
                .current
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// Waits until no other code is coming, and returns the tier calls then run.
    pub(super) async fn settled(&self) -> Tier {
        let mut settled = self.0.settled.subscribe();
        // The sender lives in `self`: it cannot be dropped while waited on.
        let _ = settled.wait_for(|done| *done).await;
        self.current().tier
    }

    /// Compiles optimized code in the background (one plugin at a time per
    /// engine) and switches new calls to it; caches it (and drops the cached
    /// baseline code, which no start needs then), so the next load of the
    /// same bytes takes it from the cache at once. Gives up quietly if the
    /// plugin is dropped meanwhile.
    fn optimize_later(&self, engine: &Engine, unit: Unit, bytes: bytes::Bytes) {
        let tiers = Arc::downgrade(&self.0);
        let engine = engine.clone();
        tokio::spawn(async move {
            let name = unit.name.clone();
            // `None`: given up (shutting down, dropped, or it does not compile).
            async {
                let Ok(_turn) = engine.optimize_gate().acquire_owned().await else {
                    return None;
                };
                // Cranelift takes every core: let the loads a start waits for finish first.
                engine.no_loads().await;
                if tiers.strong_count() == 0 {
                    return None;
                }
                let started = Instant::now();
                let (compiler, owned) = (engine.clone(), unit.clone());
                let compiled = engine
                    .load_blocking(move || {
                        let component = compile_with(&compiler, compiler.wasm(), &owned, &bytes);
                        if component.is_ok() {
                            forget_baseline(&compiler, &owned);
                        }
                        component
                    })
                    .await
                    .map_err(|_| shutting_down(&unit.path))
                    .and_then(|compiled| compiled)
                    .and_then(|component| Linked::new(&engine, &unit.path, &component));
                let linked = match compiled {
                    Ok((linked, _)) => linked,
                    Err(e) => {
                        tracing::warn!(
                            target: crate::log::LOAD_TARGET, plugin = %name, error = %e,
                            "{name}: cannot compile optimized code; it keeps running baseline code"
                        );
                        return None;
                    }
                };
                let tiers = tiers.upgrade()?;
                *tiers
                    .current
                    .write()
                    .unwrap_or_else(PoisonError::into_inner) = Arc::new(linked);
                let took = started.elapsed();
                tracing::info!(
                    target: crate::log::LOAD_TARGET, plugin = %name, elapsed_ms = took.as_millis(),
                    "{name}: optimized code ready in {:.1} s; new calls run it", took.as_secs_f64()
                );
                Some(())
            }
            .await;
            if let Some(tiers) = tiers.upgrade() {
                tiers.settled.send_replace(true);
            }
        });
    }
}

impl Linked {
    /// Where the typed exports are.
    ///
    /// # Errors
    /// [`CallError::Host`] for a component that does not export the contract.
    pub(super) fn indices(&self, tool: &str) -> Result<&ExportIndices, CallError> {
        self.exports.as_ref().ok_or_else(|| CallError::Host {
            tool: tool.to_owned(),
            reason: "the component does not export the toolhost contract".to_owned(),
        })
    }

    /// Checks the component's world and links it against its tier's linker.
    /// Also returns what it imports.
    fn new(
        engine: &Engine,
        path: &Path,
        component: &Component,
    ) -> Result<(Self, Vec<String>), LoadError> {
        let tier = engine.tier_of(component.engine());
        let info = component_info(component);
        let version = match abi::check_world(path, &info) {
            Ok(version) => Some(version),
            // Any other component: its exported functions are its tools.
            Err(LoadError::WrongWorld { .. }) => None,
            Err(e) => return Err(e),
        };
        let link_failed = |reason: String| LoadError::Link {
            path: path.to_owned(),
            reason,
        };
        let linker = PluginRuntime::of(engine)
            .ok_or_else(|| "the engine runs something else than plugins".to_owned())
            .and_then(|runtime| runtime.linker_for(tier))
            .map_err(link_failed)?;
        let pre = linker.instantiate_pre(component).map_err(|e| {
            link_failed(match version {
                Some(_) => format!("{e:#}"),
                None => unprovided(&info.imports, &e),
            })
        })?;
        let Some(version) = version else {
            let linked = Self {
                pre,
                exports: None,
                catalog: None,
                tier,
            };
            return Ok((linked, info.imports));
        };
        let exports =
            ExportIndices::new(version, &pre, component).map_err(|e| LoadError::WrongWorld {
                path: path.to_owned(),
                expected: version.tools_interface().to_owned(),
                found: format!("an export of another shape ({e:#})"),
            })?;
        let exports = Some(exports);
        let catalog =
            CatalogIndices::new(version, &pre, component).map_err(|e| LoadError::WrongWorld {
                path: path.to_owned(),
                expected: version.tools_interface().to_owned(),
                found: format!("a catalog export of another shape ({e:#})"),
            })?;
        let linked = Self {
            pre,
            exports,
            catalog,
            tier,
        };
        Ok((linked, info.imports))
    }
}

/// Why a component of another world does not link: the imports the host
/// does not provide at all (it provides WASI and its own `toolhost:`
/// interfaces), named, then wasmtime's own reason.
fn unprovided(imports: &[String], error: &wasmtime::Error) -> String {
    let foreign: Vec<&str> = imports
        .iter()
        .map(String::as_str)
        .filter(|i| !i.starts_with("wasi:") && !i.starts_with("toolhost:"))
        .collect();
    if foreign.is_empty() {
        format!("{error:#}")
    } else {
        format!(
            "it imports what the host does not provide: {} ({error:#})",
            foreign.join(", ")
        )
    }
}

fn shutting_down(path: &Path) -> LoadError {
    LoadError::Engine {
        path: path.to_owned(),
        reason: "compilation failed: the engine is shutting down, or the compiler panicked".into(),
    }
}

/// What compiling needs to know of a plugin: its name (for warnings), its
/// file, and with a cache directory its content key (see `ManifestKey`).
#[derive(Clone)]
struct Unit {
    name: String,
    path: PathBuf,
    key: Option<String>,
}

/// The cache entry of `unit`'s code compiled by `wasm`, with a cache directory.
fn cached<'a>(
    engine: &'a Engine,
    wasm: &wasmtime::Engine,
    unit: &Unit,
) -> Option<(&'a CodeCache, CodeEntry)> {
    let cache = engine.code_cache()?;
    let entry = cache.entry(wasm, unit.key.as_deref()?);
    Some((cache, entry))
}

/// The first code of a load: optimized when that is cached (and intact) or
/// the engine has no baseline compiler, else baseline; optimized too where
/// the baseline compiler cannot compile the component (a feature Winch lacks).
/// Blocking: call off the async runtime.
fn compile_first(engine: &Engine, unit: &Unit, bytes: &[u8]) -> Result<Component, LoadError> {
    // Refused before either compiler is tried (and says so once).
    check_header(&unit.path, bytes)?;
    let Some(baseline) = engine.baseline() else {
        return compile_with(engine, engine.wasm(), unit, bytes);
    };
    if let Some((cache, entry)) = cached(engine, engine.wasm(), unit)
        && let Some(component) = cache.load(engine.wasm(), &entry, &unit.name)
    {
        return Ok(component);
    }
    // Not cached, or damaged (and removed): baseline code first.
    match compile_with(engine, baseline, unit, bytes) {
        Ok(component) => Ok(component),
        Err(e) => {
            tracing::debug!(
                target: crate::log::LOAD_TARGET, path = %unit.path.display(), error = %e,
                "the baseline compiler cannot compile this component; compiling optimized code"
            );
            compile_with(engine, engine.wasm(), unit, bytes)
        }
    }
}

/// The code `wasm` (one of `engine`'s compilers) compiles from `bytes`: from
/// the cache when an intact entry is there, else compiled and cached.
/// Blocking: call off the async runtime.
fn compile_with(
    engine: &Engine,
    wasm: &wasmtime::Engine,
    unit: &Unit,
    bytes: &[u8],
) -> Result<Component, LoadError> {
    check_header(&unit.path, bytes)?;
    let cached = cached(engine, wasm, unit);
    if let Some((cache, entry)) = &cached
        && let Some(component) = cache.load(wasm, entry, &unit.name)
    {
        return Ok(component);
    }
    let component = Component::new(wasm, bytes).map_err(|e| LoadError::Malformed {
        path: unit.path.clone(),
        reason: format!("{e:#}"),
    })?;
    if let Some((cache, entry)) = &cached {
        cache.store(entry, &component);
    }
    Ok(component)
}

/// Removes `unit`'s cached baseline code: once its optimized code is cached,
/// no load needs it.
fn forget_baseline(engine: &Engine, unit: &Unit) {
    if let Some(baseline) = engine.baseline()
        && let Some((cache, entry)) = cached(engine, baseline, unit)
    {
        cache.remove(&entry);
    }
}

/// Checks the file's header: WebAssembly at all, and a component rather than a core module.
pub(super) fn check_header(path: &Path, bytes: &[u8]) -> Result<(), LoadError> {
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

/// Compiles the code quickest to compile that this engine runs (baseline
/// code unless it compiles only optimized code), on a loader thread, without
/// the cache: for a one-off look at a component, such as `inspect`.
pub(super) async fn compile_off_runtime(
    engine: &Engine,
    path: &Path,
    bytes: impl AsRef<[u8]> + Send + 'static,
) -> Result<Component, LoadError> {
    let compiler = engine.clone();
    let unit = Unit {
        name: path.display().to_string(),
        path: path.to_owned(),
        key: None,
    };
    engine
        .load_blocking(move || compile_first(&compiler, &unit, bytes.as_ref()))
        .await
        .map_err(|_| shutting_down(path))?
}

/// Lists a compiled component's imports and exports.
pub(crate) fn component_info(component: &Component) -> ComponentInfo {
    let (engine, ty) = (component.engine(), component.component_type());
    ComponentInfo {
        imports: ty.imports(engine).map(|(n, _)| n.to_owned()).collect(),
        exports: ty.exports(engine).map(|(n, _)| n.to_owned()).collect(),
    }
}
