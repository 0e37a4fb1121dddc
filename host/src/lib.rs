//! # toolhost
//!
//! Runs LLM-agent tools as sandboxed WebAssembly components.
//!
//! A tool plugin is a WebAssembly component (WASI preview 2) that exports the
//! `toolhost:plugin@0.3.0` world (see `wit/plugin.wit`; `@0.2.0` and `@0.1.0`
//! plugins still load): a list of tool declarations (name, description, JSON Schema of the
//! arguments, optional hints), `invoke` and `invoke-stream`. The host:
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

pub mod audit;
pub mod catalog;
pub mod config;
mod digest;
pub mod engine;
pub mod error;
mod hex;
mod log;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "mcp")]
mod metrics;
#[cfg(feature = "oci")]
pub mod oci;
pub mod plugin;
pub mod policy;
mod redact;
pub mod schema;
mod sealed;
pub mod spans;
pub mod state;
mod suggest;
#[cfg(feature = "telemetry")]
pub mod telemetry;
mod time;
pub mod tool;
pub mod toolset;

// The front door: what most embedders name. Everything else lives in the
// public modules above, one concept each.
pub use config::Config;
pub use engine::{Engine, EngineConfig};
pub use error::{CallError, LoadError};
pub use log::escape_control;
#[cfg(feature = "mcp")]
pub use mcp::McpServer;
pub use plugin::{Plugin, PluginOptions};
pub use tool::{Prepared, ToolHints, ToolOutput, ToolSpec};
pub use toolset::{Context, PluginDir, PluginSet, Tool, Toolset, ToolsetExt};

/// The Rust of `docs/library.md`, compiled as a doc test so the page stays
/// true to the API.
#[cfg(doctest)]
#[doc = include_str!("../../docs/library.md")]
struct LibraryDocs;
