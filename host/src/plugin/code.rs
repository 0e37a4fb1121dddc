//! A component's code: its header checked, compiled (from the cache when
//! possible), its world checked and linked against the engine's linker; in
//! tiers: baseline code first, optimized code in the background (see
//! [`Compilation`](crate::engine::Compilation)).

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Instant;

use wasmtime::component::{Component, InstancePre};

use super::ComponentInfo;
use super::abi::{self, ExportIndices};
use super::state::PluginState;
use crate::Engine;
use crate::engine::{Compilation, Tier};
use crate::error::LoadError;

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
}

/// One tier's code, compiled and linked against its engine's linker.
pub(crate) struct Linked {
    pub(super) pre: InstancePre<PluginState>,
    /// Where the typed exports are, in the component's contract version.
    pub(super) exports: ExportIndices,
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
        }));
        Ok((code, imports))
    }

    /// Compiles and links a component's bytes on a loader thread: optimized
    /// code when the engine compiles only that or `marker` says it is cached,
    /// else baseline code, with optimized code compiled in the background
    /// when the engine tiers (see [`Code::current`]).
    pub(super) async fn load(
        engine: &Engine,
        (name, path): (&str, &Path),
        bytes: bytes::Bytes,
        marker: Option<PathBuf>,
    ) -> Result<(Self, Vec<String>), LoadError> {
        let (compiler, owned, source) = (engine.clone(), path.to_owned(), bytes.clone());
        let probe = marker.clone();
        let loading = engine.loading();
        let component = engine
            .load_blocking(move || {
                let cached = probe.is_some_and(|marker| marker.exists());
                compile_first(&compiler, &owned, &source, cached)
            })
            .await
            .map_err(|_| shutting_down(path))??;
        drop(loading);
        let (code, imports) = Self::link(engine, path, &component)?;
        if code.current().tier == Tier::Baseline
            && engine.config().compilation == Compilation::Tiered
        {
            code.optimize_later(engine, (name, path), bytes, marker);
        } else {
            code.0.settled.send_replace(true);
        }
        Ok((code, imports))
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
    /// engine) and switches new calls to it; leaves `marker` so the next load
    /// of the same bytes takes it from the cache at once. Gives up quietly if
    /// the plugin is dropped meanwhile.
    fn optimize_later(
        &self,
        engine: &Engine,
        (name, path): (&str, &Path),
        bytes: bytes::Bytes,
        marker: Option<PathBuf>,
    ) {
        let tiers = Arc::downgrade(&self.0);
        let (engine, name, path) = (engine.clone(), name.to_owned(), path.to_owned());
        tokio::spawn(async move {
            let optimized = async {
                let Ok(_turn) = engine.optimize_gate().acquire_owned().await else {
                    return None;
                };
                // Cranelift takes every core: let the loads a start waits for finish first.
                engine.no_loads().await;
                if tiers.strong_count() == 0 {
                    return None;
                }
                let started = Instant::now();
                let (compiler, owned) = (engine.clone(), path.clone());
                let compiled = engine
                    .load_blocking(move || compile(&compiler, &owned, &bytes))
                    .await
                    .map_err(|_| shutting_down(&path))
                    .and_then(|compiled| compiled)
                    .and_then(|component| Linked::new(&engine, &path, &component));
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
            if optimized.is_some()
                && let Some(marker) = marker
            {
                mark_optimized(&engine, marker).await;
            }
            if let Some(tiers) = tiers.upgrade() {
                tiers.settled.send_replace(true);
            }
        });
    }
}

impl Linked {
    /// Checks the component's world and links it against its tier's linker.
    /// Also returns what it imports.
    fn new(
        engine: &Engine,
        path: &Path,
        component: &Component,
    ) -> Result<(Self, Vec<String>), LoadError> {
        let tier = engine.tier_of(component.engine());
        let info = component_info(component);
        let version = abi::check_world(path, &info)?;
        let pre = engine
            .linker_for(tier)
            .instantiate_pre(component)
            .map_err(|e| LoadError::Link {
                path: path.to_owned(),
                reason: format!("{e:#}"),
            })?;
        let exports =
            ExportIndices::new(version, &pre, component).map_err(|e| LoadError::WrongWorld {
                path: path.to_owned(),
                expected: version.tools_interface().to_owned(),
                found: format!("an export of another shape ({e:#})"),
            })?;
        Ok((Self { pre, exports, tier }, info.imports))
    }
}

/// Leaves the marker that says a component's optimized code is in the cache.
async fn mark_optimized(engine: &Engine, marker: PathBuf) {
    let written = engine
        .load_blocking(move || {
            if let Some(dir) = marker.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(&marker, b"")
        })
        .await;
    if let Ok(Err(e)) = written {
        tracing::debug!(error = %e, "cannot mark optimized code as cached");
    }
}

fn shutting_down(path: &Path) -> LoadError {
    LoadError::Engine {
        path: path.to_owned(),
        reason: "compilation failed: the engine is shutting down, or the compiler panicked".into(),
    }
}

/// The first code of a load: optimized when that is cached (`cached`) or the
/// engine has no baseline compiler, else baseline; optimized too where the
/// baseline compiler cannot compile the component (a feature Winch lacks).
fn compile_first(
    engine: &Engine,
    path: &Path,
    bytes: &[u8],
    cached: bool,
) -> Result<Component, LoadError> {
    let baseline = match engine.baseline() {
        Some(baseline) if !cached => baseline,
        _ => return compile(engine, path, bytes),
    };
    check_header(path, bytes)?;
    match Component::new(baseline, bytes) {
        Ok(component) => Ok(component),
        Err(e) => {
            tracing::debug!(
                target: crate::log::LOAD_TARGET, path = %path.display(), error = %format!("{e:#}"),
                "the baseline compiler cannot compile this component; compiling optimized code"
            );
            compile(engine, path, bytes)
        }
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

/// Compiles a component's optimized code (from the cache when possible).
/// Blocking: call off the async runtime.
pub(crate) fn compile(engine: &Engine, path: &Path, bytes: &[u8]) -> Result<Component, LoadError> {
    check_header(path, bytes)?;
    Component::new(engine.wasm(), bytes).map_err(|e| LoadError::Malformed {
        path: path.to_owned(),
        reason: format!("{e:#}"),
    })
}

/// Compiles the code quickest to compile that this engine runs (baseline
/// code unless it compiles only optimized code), on a loader thread: for a
/// one-off look at a component, such as `inspect`.
pub(super) async fn compile_off_runtime(
    engine: &Engine,
    path: &Path,
    bytes: impl AsRef<[u8]> + Send + 'static,
) -> Result<Component, LoadError> {
    let (compiler, owned) = (engine.clone(), path.to_owned());
    engine
        .load_blocking(move || compile_first(&compiler, &owned, bytes.as_ref(), false))
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
