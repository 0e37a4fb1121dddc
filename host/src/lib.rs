//! # toolhost
//!
//! Runs LLM-agent tools as sandboxed WebAssembly components.
//!
//! A tool plugin is a WebAssembly component (WASI preview 2) that exports the
//! `toolhost:plugin@0.1.0` world (see `wit/plugin.wit`): a list of tool
//! declarations (name, description, JSON Schema of the arguments), `invoke` and
//! `invoke-stream`. The host:
//!
//! - compiles each plugin once (caching compiled code on disk) and pre-links it;
//! - gives **every call a fresh instance** under fuel, memory, table, deadline
//!   and output limits, with nothing of the outside world granted;
//! - checks arguments against the declared schema before the guest runs,
//!   coercing obvious slips (`"42"` for an integer) and listing every violation;
//! - wraps a result that is not a JSON object as `{"result": value}` and checks
//!   declared result schemas;
//! - turns traps, panics and exhausted budgets into typed [`CallError`]s while
//!   it goes on serving.
//!
//! ```no_run
//! use toolhost::{Context, Engine, EngineConfig, PluginOptions, PluginSet, ToolsetExt};
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let engine = Engine::new(&EngineConfig::default())?;
//! let set = PluginSet::load_dir(&engine, "target/plugins", &PluginOptions::default()).await?;
//! for failure in set.failures() {
//!     eprintln!("not loaded: {failure}");
//! }
//! let output = set
//!     .invoke(&Context::new(), "word_count", serde_json::json!({"text": "one two three"}))
//!     .await?;
//! println!("{:?}", output.result);
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod config;
mod engine;
mod error;
mod log;
#[cfg(feature = "mcp")]
mod mcp;
mod plugin;
mod policy;
mod schema;
mod tool;
mod toolset;

pub use config::{
    AliasConfig, Config, ConfigError, ConfirmConfig, EngineSettings, FilterConfig, Layered,
    LimitsConfig, LoadConfig, NameSource, PluginConfig, ServeConfig, UnmatchedName,
};
pub use engine::limits::Limits;
pub use engine::{Engine, EngineConfig, EngineError, GuestMemory, default_cache_dir};
pub use error::{Busy, CallError, Exhausted, LoadError};
pub use log::escape_control;
#[cfg(feature = "mcp")]
pub use mcp::{HttpOptions, McpError, McpServer};
pub use plugin::{ComponentInfo, Plugin, PluginOptions, Reuse, inspect};
pub use policy::{
    Access, Capability, DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_REQUEST_TIMEOUT, DirConfig, DirGrant,
    EnvGrant, EnvSource, EnvVarConfig, Grants, GrantsConfig, HostPattern, NetworkConfig,
    SIDECAR_SUFFIX, Secret, SocketPattern, sidecar_path,
};
pub use schema::{Schema, SchemaError};
pub use tool::{
    Collector, LONG_RUNNING_NOTE, MediaKind, Part, ToolCall, ToolOutput, ToolSpec, ToolStream,
    Usage, wrap_result,
};
pub use toolset::{
    AliasError, Aliases, ApproveAll, Approver, Confirm, ConfirmationHint, ConfirmationRequest,
    DEFAULT_REMEMBERED_DECISIONS, Filter, NoApprover, OnUnknown, Predicate, Started, ToolAliases,
    UnknownFuture, call, start,
};
pub use toolset::{
    ArgumentsHook, BatchCall, BatchOutcome, BoxFuture, Context, Decision, Executor, Identity,
    ListedTool, Loaded, Logging, Metrics, Middleware, Next, PluginSet, PluginTool, SinglePlugin,
    Tool, ToolMetrics, Toolset, ToolsetExt, WithMiddleware,
};
pub use toolset::{LoadState, PluginDir, PluginStatus, ToolsetChange, WatchError};

/// The Rust of `docs/library.md`, compiled as a doc test so the page stays
/// true to the API.
#[cfg(doctest)]
#[doc = include_str!("../../docs/library.md")]
struct LibraryDocs;
