//! [`LoadError`]: why a plugin could not be loaded.

use std::path::PathBuf;
use std::time::Duration;

use super::ConfigError;

/// Why a plugin could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file could not be read.
    ///
    /// Its message includes the I/O error's, so that error is not also its
    /// `source()` (a printer that follows the chain would say it twice).
    #[error("{path}: cannot read: {error}")]
    Io {
        /// The plugin file.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The file is not WebAssembly at all.
    #[error("{path}: not a WebAssembly file (no `\\0asm` header)")]
    NotWasm {
        /// The plugin file.
        path: PathBuf,
    },
    /// The file is a core WebAssembly module, not a component.
    #[error(
        "{path}: a core WebAssembly module, not a component; build for wasm32-wasip2 or wrap it with `wasm-tools component new`"
    )]
    CoreModule {
        /// The plugin file.
        path: PathBuf,
    },
    /// The file is truncated or otherwise not valid WebAssembly.
    #[error("{path}: malformed or truncated component: {reason}")]
    Malformed {
        /// The plugin file.
        path: PathBuf,
        /// What the parser or compiler said.
        reason: String,
    },
    /// The component does not export the toolhost world.
    #[error("{path}: not a toolhost plugin: it does not export `{expected}` (it exports: {found})")]
    WrongWorld {
        /// The plugin file.
        path: PathBuf,
        /// The interface a plugin must export.
        expected: String,
        /// What the component exports instead.
        found: String,
    },
    /// The component targets a version of the contract this host does not support.
    #[error(
        "{path}: built for `{found}`, but this host supports only `{}`",
        supported.join("`, `")
    )]
    UnsupportedVersion {
        /// The plugin file.
        path: PathBuf,
        /// The version the plugin exports.
        found: String,
        /// Every version this host loads (their tools interfaces, oldest first).
        supported: Vec<String>,
    },
    /// The component imports something the host does not provide.
    #[error("{path}: cannot be linked: {reason}")]
    Link {
        /// The plugin file.
        path: PathBuf,
        /// What is missing or mismatched.
        reason: String,
    },
    /// Reading the tool declarations failed (the guest trapped or ran out of a budget).
    #[error("{path}: listing its tools failed: {reason}")]
    Declarations {
        /// The plugin file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A declaration is invalid (bad name, duplicate name, bad schema).
    #[error("{path}: tool `{}`: {reason}", crate::log::escape_name(tool))]
    InvalidTool {
        /// The plugin file.
        path: PathBuf,
        /// The tool's declared name.
        tool: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A resource, template or prompt the plugin offers is invalid (bad URI,
    /// template or name, a duplicate, too many or too large).
    #[error("{path}: {kind} `{}`: {reason}", crate::log::escape_name(name))]
    InvalidItem {
        /// The plugin file.
        path: PathBuf,
        /// What it is: `resource`, `resource template` or `prompt` (a
        /// catalog `Kind`'s name; text, so that errors sit below the catalog).
        kind: &'static str,
        /// Its URI, URI template or name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The plugin's policy (its sidecar `NAME.policy.toml`, or its grants in
    /// `toolhost.toml`) is invalid; the source names the file, the key and why.
    /// Its message includes the policy error's (not also its `source()`).
    #[error("{path}: invalid policy: {error}")]
    Policy {
        /// The plugin file.
        path: PathBuf,
        /// The policy error.
        error: ConfigError,
    },
    /// The component toolset's tools sidecar (`NAME.tools.toml`) is
    /// invalid; the error names the file, the key and why.
    #[error("{path}: invalid tools sidecar: {error}")]
    Sidecar {
        /// The plugin file.
        path: PathBuf,
        /// The sidecar's error.
        error: ConfigError,
    },
    /// The plugin declares more tools than the engine allows
    /// ([`EngineConfig::max_tools`](crate::EngineConfig::max_tools)).
    #[error(
        "{path}: declares {count} tools, more than the limit of {limit} (load limit `max_tools`): the plugin is not loaded; to serve it, raise the limit to at least {count} (`[load] max_tools = {count}` in toolhost.toml)"
    )]
    TooManyTools {
        /// The plugin file.
        path: PathBuf,
        /// How many it declares.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// One tool's input or output schema is larger than the engine allows
    /// ([`EngineConfig::max_schema_bytes`](crate::EngineConfig::max_schema_bytes)).
    #[error(
        "{path}: tool `{tool}`: its {which} schema is {bytes} bytes, more than the limit of {limit} (load limit `max_schema_bytes`)"
    )]
    SchemaTooLarge {
        /// The plugin file.
        path: PathBuf,
        /// The tool's declared name.
        tool: String,
        /// `input` or `output`.
        which: &'static str,
        /// The schema's size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// All declarations together (names, descriptions, schemas) are larger
    /// than the engine allows
    /// ([`EngineConfig::max_declaration_bytes`](crate::EngineConfig::max_declaration_bytes)).
    #[error(
        "{path}: its declarations take {bytes} bytes, more than the limit of {limit} (load limit `max_declaration_bytes`)"
    )]
    DeclarationsTooLarge {
        /// The plugin file.
        path: PathBuf,
        /// Their total size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// Instantiating the plugin and reading its declarations took longer than
    /// the load deadline ([`EngineConfig::load_timeout`](crate::EngineConfig::load_timeout)).
    #[error("{path}: listing its tools took longer than the load deadline of {limit:?}")]
    Timeout {
        /// The plugin file.
        path: PathBuf,
        /// The load deadline.
        limit: Duration,
    },
    /// These very bytes failed to load before, with the same host and
    /// settings, and the failure was remembered in the cache directory: the
    /// plugin is not compiled or run again. Changing the file, the host or
    /// the plugin's settings (limits, grants, load limits) retries it, as does
    /// deleting the record.
    #[error("{path}: failed to load before and nothing changed since (to retry, change the plugin or its settings, or delete {}): {reason}", record.display())]
    Remembered {
        /// The plugin file.
        path: PathBuf,
        /// Why it failed then.
        reason: String,
        /// The record in the cache directory.
        record: PathBuf,
    },
    /// The plugin was listed from a cache manifest that does not match what
    /// the component declares (the manifest was edited or damaged, or the
    /// declarations depend on something else than the component's bytes).
    /// The manifest has been rewritten; load the plugin again (a
    /// [`PluginDir`](crate::PluginDir) does so by itself).
    #[error("{path}: the cache manifest it was listed from ({}) does not match the component: {reason}; load it again", manifest.display())]
    StaleManifest {
        /// The plugin file.
        path: PathBuf,
        /// The manifest.
        manifest: PathBuf,
        /// What differs.
        reason: String,
    },
    /// The engine failed in a way that is not the plugin's fault.
    #[error("{path}: {reason}")]
    Engine {
        /// The plugin file.
        path: PathBuf,
        /// What failed.
        reason: String,
    },
}

impl LoadError {
    /// The plugin file this error is about.
    pub fn path(&self) -> &std::path::Path {
        match self {
            Self::Io { path, .. }
            | Self::NotWasm { path }
            | Self::CoreModule { path }
            | Self::Malformed { path, .. }
            | Self::WrongWorld { path, .. }
            | Self::UnsupportedVersion { path, .. }
            | Self::Link { path, .. }
            | Self::Declarations { path, .. }
            | Self::InvalidTool { path, .. }
            | Self::InvalidItem { path, .. }
            | Self::Policy { path, .. }
            | Self::Sidecar { path, .. }
            | Self::TooManyTools { path, .. }
            | Self::SchemaTooLarge { path, .. }
            | Self::DeclarationsTooLarge { path, .. }
            | Self::Timeout { path, .. }
            | Self::Remembered { path, .. }
            | Self::StaleManifest { path, .. }
            | Self::Engine { path, .. } => path,
        }
    }
}
