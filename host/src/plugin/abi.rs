//! The contract seam: every supported version of the WIT contract, behind
//! host types.
//!
//! Each version is one module (`abi/v0_1.rs`, ...), the only place that names
//! its generated bindings: it links the version's host imports, and converts
//! its declarations, calls, parts and errors to and from the types here. The
//! rest of the plugin code calls a component through [`ExportIndices`] and
//! [`Exports`], enums over the versions, and never matches on a version's
//! types. The versions are one table (`versions!` below): a new version is a
//! new module and one line there, which makes it [`CURRENT`]; plugins built
//! against older versions keep loading.

#[macro_use]
mod contract;
pub(crate) mod catalog;
pub(crate) mod v0_1;
pub(crate) mod v0_2;
pub(crate) mod v0_3;
pub(crate) mod v0_4;

use std::path::Path;

use wasmtime::Store;
use wasmtime::component::{Component, Instance, InstancePre, Linker, ResourceAny};

use super::ComponentInfo;
use super::state::PluginState;
use crate::error::LoadError;
use crate::tool::{MediaKind, ToolHints};

/// The prefix shared by every version of the tools interface.
pub(crate) const TOOLS_INTERFACE_PREFIX: &str = "toolhost:plugin/tools@";

/// The table of supported versions: the `Version` enum, [`VERSIONS`], and
/// the enums over the versions' exports ([`ExportIndices`], [`Invoke`],
/// [`Exports`]) with one dispatching arm per version each. Oldest first; the
/// last is [`CURRENT`].
macro_rules! versions {
    ($($(#[$doc:meta])* $version:ident => $module:ident,)+) => {
        /// A version of the contract this host supports.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum Version {
            $($(#[$doc])* $version,)+
        }

        /// Every supported version, oldest first.
        pub(crate) const VERSIONS: &[Version] = &[$(Version::$version),+];

        impl Version {
            /// The tools interface a plugin of this version exports.
            pub(crate) fn tools_interface(self) -> &'static str {
                match self {
                    $(Self::$version => $module::TOOLS_INTERFACE,)+
                }
            }

            /// The version's WIT text.
            pub(crate) fn wit(self) -> &'static str {
                match self {
                    $(Self::$version => $module::WIT,)+
                }
            }
        }

        /// Adds the host imports of every supported version to the linker.
        pub(crate) fn add_to_linker(linker: &mut Linker<PluginState>) -> wasmtime::Result<()> {
            $($module::add_to_linker(linker)?;)+
            Ok(())
        }

        /// Where a linked component's exports are, per version (type-checked
        /// when the plugin loaded).
        #[derive(Clone)]
        pub(crate) enum ExportIndices {
            $($version($module::ExportIndices),)+
        }

        impl ExportIndices {
            /// Looks up and type-checks the exports of a component of `version`.
            pub(crate) fn new(
                version: Version,
                pre: &InstancePre<PluginState>,
                component: &Component,
            ) -> wasmtime::Result<Self> {
                Ok(match version {
                    $(Version::$version => Self::$version($module::ExportIndices::new(pre, component)?),)+
                })
            }

            /// `invoke` alone: what a plain call needs, without every other export.
            pub(crate) fn invoke(
                &self,
                store: &mut Store<PluginState>,
                instance: &Instance,
            ) -> wasmtime::Result<Invoke> {
                Ok(match self {
                    $(Self::$version(indices) => Invoke::$version(indices.invoke(store, instance)?),)+
                })
            }

            /// Every typed export of an instance.
            pub(crate) fn exports(
                &self,
                store: &mut Store<PluginState>,
                instance: &Instance,
            ) -> wasmtime::Result<Exports> {
                Ok(match self {
                    $(Self::$version(indices) => Exports::$version(indices.exports(store, instance)?),)+
                })
            }
        }

        /// The typed `invoke` export of one instance.
        pub(crate) enum Invoke {
            $($version($module::Invoke),)+
        }

        impl Invoke {
            /// Runs a tool to completion.
            pub(crate) async fn call(
                &self,
                store: &mut Store<PluginState>,
                call: Call,
            ) -> wasmtime::Result<Result<RawOutput, ToolError>> {
                match self {
                    $(Self::$version(invoke) => $module::invoke(invoke, store, call).await,)+
                }
            }
        }

        /// Every typed export of one instance.
        pub(crate) enum Exports {
            $($version($module::Exports),)+
        }

        impl Exports {
            /// Every tool the plugin offers.
            pub(crate) async fn declarations(
                &self,
                store: &mut Store<PluginState>,
            ) -> wasmtime::Result<Vec<Declaration>> {
                match self {
                    $(Self::$version(exports) => $module::declarations(exports, store).await,)+
                }
            }

            /// Starts a streaming tool: the handle of its chunks.
            pub(crate) async fn invoke_stream(
                &self,
                store: &mut Store<PluginState>,
                call: Call,
            ) -> wasmtime::Result<Result<ResourceAny, ToolError>> {
                match self {
                    $(Self::$version(exports) => $module::invoke_stream(exports, store, call).await,)+
                }
            }

            /// The next chunk of a stream; `None` at its end.
            pub(crate) async fn next(
                &self,
                store: &mut Store<PluginState>,
                chunks: ResourceAny,
            ) -> wasmtime::Result<Result<Option<RawPart>, ToolError>> {
                match self {
                    $(Self::$version(exports) => $module::next(exports, store, chunks).await,)+
                }
            }
        }
    };
}

versions! {
    /// `toolhost:plugin@0.1.0` (`wit/v0.1.0/plugin.wit`, frozen).
    V0_1 => v0_1,
    /// `toolhost:plugin@0.2.0` (`wit/v0.2.0/plugin.wit`, frozen): adds tool hints.
    V0_2 => v0_2,
    /// `toolhost:plugin@0.3.0` (`wit/v0.3.0/plugin.wit`, frozen): adds the caller to a call.
    V0_3 => v0_3,
    /// `toolhost:plugin@0.4.0` (`wit/plugin.wit`): adds the catalog
    /// (resources, templates, prompts, completions), `resource-updated` and `ask`.
    V0_4 => v0_4,
}

/// The current contract: the newest, what a plugin author builds against.
pub(crate) const CURRENT: Version = VERSIONS[VERSIONS.len() - 1];

/// The tools interfaces of every supported version, oldest first.
pub(crate) fn supported() -> Vec<String> {
    VERSIONS
        .iter()
        .map(|v| v.tools_interface().to_owned())
        .collect()
}

/// The version of the contract a component exports, if this host supports it.
///
/// # Errors
/// [`LoadError::UnsupportedVersion`] (listing every supported version) for a
/// toolhost plugin of another version, [`LoadError::WrongWorld`] for any
/// other component.
pub(crate) fn check_world(path: &Path, info: &ComponentInfo) -> Result<Version, LoadError> {
    // Newest first: a component that exported two versions speaks the newer.
    if let Some(&version) = VERSIONS
        .iter()
        .rev()
        .find(|v| info.exports.iter().any(|e| e == v.tools_interface()))
    {
        return Ok(version);
    }
    if let Some(found) = info
        .exports
        .iter()
        .find(|e| e.starts_with(TOOLS_INTERFACE_PREFIX))
    {
        return Err(LoadError::UnsupportedVersion {
            path: path.to_owned(),
            found: found.clone(),
            supported: supported(),
        });
    }
    Err(LoadError::WrongWorld {
        path: path.to_owned(),
        // The current contract: what a plugin author should build against.
        expected: CURRENT.tools_interface().to_owned(),
        found: if info.exports.is_empty() {
            "nothing".to_owned()
        } else {
            info.exports.join(", ")
        },
    })
}

/// One tool's declaration, as the guest returned it (not checked yet).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Declaration {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) long_running: bool,
    pub(crate) streaming: bool,
    pub(crate) input_schema: String,
    pub(crate) output_schema: Option<String>,
    pub(crate) hints: ToolHints,
}

/// One call of one tool, as the guest receives it.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub(crate) call_id: String,
    pub(crate) invocation_id: String,
    pub(crate) tool: String,
    /// The arguments object, as JSON text.
    pub(crate) arguments: String,
    /// Who is calling, for versions that say (`@0.3.0` on).
    pub(crate) caller: Option<Caller>,
}

/// The caller as a guest sees it: no credentials, and only the claims its
/// plugin's `caller_claims` grant names.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub(crate) issuer: String,
    pub(crate) subject: String,
    pub(crate) scopes: Vec<String>,
    /// The granted claims, as a JSON object text.
    pub(crate) claims: String,
}

/// A part as the guest returned it: JSON still as text.
#[derive(Debug)]
pub(crate) enum RawPart {
    Text(String),
    Json(String),
    Blob {
        kind: MediaKind,
        mime_type: String,
        name: Option<String>,
        data: Vec<u8>,
    },
}

impl RawPart {
    /// The bytes it holds, toward the output cap.
    pub(crate) fn size(&self) -> usize {
        match self {
            Self::Text(text) | Self::Json(text) => text.len(),
            Self::Blob {
                mime_type,
                name,
                data,
                ..
            } => mime_type.len() + name.as_ref().map_or(0, String::len) + data.len(),
        }
    }
}

/// What a tool returned, as the guest returned it.
#[derive(Debug)]
pub(crate) struct RawOutput {
    /// The JSON result, as text.
    pub(crate) json: Option<String>,
    pub(crate) parts: Vec<RawPart>,
}

/// A question a tool asks its user, as the guest asked it.
#[derive(Debug, Clone)]
pub(crate) struct Question {
    pub(crate) message: String,
    /// The form, as JSON Schema text (not checked yet).
    pub(crate) schema: String,
}

/// The user's answer to a [`Question`].
#[derive(Debug, Clone)]
pub(crate) enum Answer {
    /// The form's content, as a JSON object text.
    Accept(String),
    Decline,
    Cancel,
}

/// Why a [`Question`] got no answer.
#[derive(Debug, Clone)]
pub(crate) enum AskError {
    Unavailable(String),
    Invalid(String),
    TooMany(String),
    Timeout,
}

/// A tool's own, expected failure.
#[derive(Debug)]
pub(crate) enum ToolError {
    InvalidArguments(String),
    Failed(String),
    UnknownTool(String),
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

    use super::*;

    fn exporting(exports: &[&str]) -> ComponentInfo {
        ComponentInfo {
            imports: Vec::new(),
            exports: exports.iter().map(|e| (*e).to_owned()).collect(),
        }
    }

    #[test]
    fn every_supported_version_loads() {
        for &version in VERSIONS {
            let info = exporting(&["wasi:cli/run@0.2.0", version.tools_interface()]);
            assert_eq!(check_world(Path::new("p.wasm"), &info).unwrap(), version);
        }
    }

    #[test]
    fn an_unsupported_version_lists_every_supported_one() {
        let info = exporting(&["toolhost:plugin/tools@9.0.0"]);
        let err = check_world(Path::new("p.wasm"), &info).unwrap_err();
        let LoadError::UnsupportedVersion {
            found, supported, ..
        } = &err
        else {
            panic!("expected UnsupportedVersion, got {err:?}");
        };
        assert_eq!(found, "toolhost:plugin/tools@9.0.0");
        assert_eq!(supported.len(), VERSIONS.len());
        for version in VERSIONS {
            assert!(err.to_string().contains(version.tools_interface()), "{err}");
        }
        assert!(supported.contains(&"toolhost:plugin/tools@0.1.0".to_owned()));
    }

    #[test]
    fn another_world_names_the_published_contract() {
        let err = check_world(Path::new("p.wasm"), &exporting(&["other:thing/x@1.0.0"]));
        assert!(
            matches!(&err, Err(LoadError::WrongWorld { expected, .. }) if expected == "toolhost:plugin/tools@0.4.0"),
            "{err:?}"
        );
    }
}
