//! The Wasm OCI artifact: the component check, and the config blob as
//! `wkg` (the `oci-wasm` crate) writes it.

use serde::Serialize;
use wasmparser::{Chunk, Encoding, Parser, Payload};

use crate::oci::Digest;

/// Why bytes are not a WebAssembly component.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ComponentError {
    /// No WebAssembly header: not a `.wasm` file at all.
    #[error("not WebAssembly (no `\\0asm` header)")]
    NotWasm,
    /// A core WebAssembly module, not a component.
    #[error(
        "a core WebAssembly module, not a component (build for wasm32-wasip2, or adapt it \
         with `wasm-tools component new`)"
    )]
    CoreModule,
    /// A component header, but the binary does not parse.
    #[error("a malformed component: {0}")]
    Malformed(String),
}

/// The top-level imports and exports of a component, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ComponentNames {
    /// Exported names (`toolhost:plugin/…`, functions).
    pub exports: Vec<String>,
    /// Imported names (`wasi:cli/environment@0.2.0`, …).
    pub imports: Vec<String>,
}

/// Checks that `bytes` are a WebAssembly component (its top-level sections
/// parse; nested modules are skipped, the loader validates them), and
/// returns its top-level import and export names.
///
/// # Errors
///
/// [`ComponentError`]: not WebAssembly, a core module, or malformed.
pub fn check_component(bytes: &[u8]) -> Result<ComponentNames, ComponentError> {
    if !bytes.starts_with(b"\0asm") {
        return Err(ComponentError::NotWasm);
    }
    let malformed = |e: wasmparser::BinaryReaderError| ComponentError::Malformed(e.to_string());
    let mut names = ComponentNames::default();
    let mut parser = Parser::new(0);
    let mut rest = bytes;
    loop {
        let (payload, consumed) = match parser.parse(rest, true).map_err(malformed)? {
            Chunk::Parsed { payload, consumed } => (payload, consumed),
            Chunk::NeedMoreData(_) => {
                return Err(ComponentError::Malformed("truncated".to_owned()));
            }
        };
        rest = &rest[consumed..];
        match payload {
            Payload::Version { encoding, .. } if encoding != Encoding::Component => {
                return Err(ComponentError::CoreModule);
            }
            Payload::ComponentImportSection(reader) => {
                for import in reader {
                    names
                        .imports
                        .push(import.map_err(malformed)?.name.name.to_owned());
                }
            }
            Payload::ComponentExportSection(reader) => {
                for export in reader {
                    names
                        .exports
                        .push(export.map_err(malformed)?.name.name.to_owned());
                }
            }
            Payload::ModuleSection {
                unchecked_range, ..
            }
            | Payload::ComponentSection {
                unchecked_range, ..
            } => {
                // The parent parser resumes after the nested one's bytes.
                rest = rest
                    .get(unchecked_range.len()..)
                    .ok_or_else(|| ComponentError::Malformed("truncated".to_owned()))?;
            }
            Payload::End(_) => return Ok(names),
            _ => {}
        }
    }
}

/// The config blob (`application/vnd.wasm.config.v0+json`), field for
/// field as `oci-wasm`'s `WasmConfig` serializes it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WasmConfig<'a> {
    created: String,
    author: Option<&'a str>,
    architecture: &'static str,
    os: &'static str,
    layer_digests: Vec<String>,
    component: Component<'a>,
}

#[derive(Serialize)]
struct Component<'a> {
    exports: &'a [String],
    imports: &'a [String],
    target: Option<&'a str>,
}

/// The config blob for a component with `names` whose bytes hash to `layer`.
pub(crate) fn config_json(names: &ComponentNames, layer: &Digest) -> Vec<u8> {
    let config = WasmConfig {
        created: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        author: None,
        architecture: "wasm",
        os: "wasip2",
        layer_digests: vec![layer.to_string()],
        component: Component {
            exports: &names.exports,
            imports: &names.imports,
            target: None,
        },
    };
    serde_json::to_vec(&config).expect("the config is plain strings and lists")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn junk_and_core_modules_are_not_components() {
        assert_eq!(check_component(b"hello"), Err(ComponentError::NotWasm));
        assert_eq!(
            check_component(b"\0asm\x01\0\0\0"),
            Err(ComponentError::CoreModule)
        );
        // The component header and an import section cut short.
        assert!(matches!(
            check_component(b"\0asm\x0d\0\x01\0\x0a\x05\x01"),
            Err(ComponentError::Malformed(_))
        ));
        assert_eq!(
            check_component(b"\0asm\x0d\0\x01\0"),
            Ok(ComponentNames::default())
        );
    }

    #[test]
    fn the_config_is_what_wkg_writes() {
        let names = ComponentNames {
            exports: vec!["toolhost:plugin/tools@0.1.0".to_owned()],
            imports: vec![],
        };
        let json: serde_json::Value =
            serde_json::from_slice(&config_json(&names, &Digest::of(b"x"))).unwrap();
        assert_eq!(json["architecture"], "wasm");
        assert_eq!(json["os"], "wasip2");
        assert_eq!(json["layerDigests"][0], Digest::of(b"x").to_string());
        assert_eq!(
            json["component"]["exports"][0],
            "toolhost:plugin/tools@0.1.0"
        );
        assert!(json["created"].as_str().unwrap().ends_with('Z'));
    }
}
