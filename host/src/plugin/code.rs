//! A component's code: its header checked, compiled (from the cache when
//! possible), its world checked and linked against the engine's linker.

use std::path::Path;

use wasmtime::component::{Component, InstancePre};

use super::ComponentInfo;
use super::abi::{self, ExportIndices};
use super::state::PluginState;
use crate::Engine;
use crate::error::LoadError;

/// A component compiled and linked against the engine's linker.
#[derive(Clone)]
pub(super) struct Code {
    pub(super) pre: InstancePre<PluginState>,
    /// Where the typed exports are, in the component's contract version.
    pub(super) exports: ExportIndices,
}

impl Code {
    /// Checks the component's world and links it. Also returns what it imports.
    pub(super) fn link(
        engine: &Engine,
        path: &Path,
        component: &Component,
    ) -> Result<(Self, Vec<String>), LoadError> {
        let info = component_info(engine, component);
        let version = abi::check_world(path, &info)?;
        let pre = engine
            .linker()
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
        Ok((Self { pre, exports }, info.imports))
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

/// Compiles a component (from the cache when possible). Blocking: call off the async runtime.
pub(crate) fn compile(engine: &Engine, path: &Path, bytes: &[u8]) -> Result<Component, LoadError> {
    check_header(path, bytes)?;
    Component::new(engine.wasm(), bytes).map_err(|e| LoadError::Malformed {
        path: path.to_owned(),
        reason: format!("{e:#}"),
    })
}

/// Compiles on a loader thread, so the async runtime keeps serving meanwhile.
pub(super) async fn compile_off_runtime(
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
