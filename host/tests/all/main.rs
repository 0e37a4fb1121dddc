//! Host integration tests: one binary, real components built from `plugins/`
//! and `tests/plugins/` by the `toolhost-test-plugins` build script.
#![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

mod any_component;
mod any_component_calls;
mod any_component_polyglot;
mod auth;
mod cache;
mod caller;
mod caps;
mod catalog;
mod cli;
mod confirm;
mod conformance;
mod examples;
mod hostile;
mod layers;
mod loading;
mod mcp;
mod network;
mod oauth;
mod oci;
mod oci_wkg;
mod plugin_catalog;
mod reload;
mod reuse;
mod secrets;
mod shared;
mod signatures;
mod sources;
mod state;
mod stderr;
mod tiers;
mod tools;
mod toolsets;
mod versions;

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use toolhost::error::Busy;
use toolhost::{CallError, Engine, EngineConfig, Plugin, PluginOptions};

/// Runs one tool taken from a listing through the call driver, to its whole
/// output (nobody to approve).
pub(crate) async fn run_tool(
    tool: &dyn toolhost::Tool,
    cx: &toolhost::Context,
    arguments: serde_json::Value,
) -> Result<toolhost::ToolOutput, CallError> {
    use toolhost::toolset::{NoApprover, start};
    start(tool, cx, arguments, &NoApprover)
        .await?
        .collect()
        .await
}

/// As [`run_tool`], as a stream of parts.
pub(crate) async fn stream_tool(
    tool: &dyn toolhost::Tool,
    cx: &toolhost::Context,
    arguments: serde_json::Value,
) -> Result<toolhost::tool::ToolStream, CallError> {
    use toolhost::toolset::{NoApprover, start};
    start(tool, cx, arguments, &NoApprover).await?.into_stream()
}

/// Whether a call was refused because every instance slot is taken.
pub(crate) fn is_busy_instances(err: &CallError) -> bool {
    matches!(
        err,
        CallError::Busy {
            reason: Busy::Instances,
            ..
        }
    )
}

/// One engine for the whole test binary (as a real process has).
pub(crate) fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let mut config = EngineConfig::default();
        config.cache_dir(None);
        Engine::new(&config).expect("the engine starts")
    })
}

/// Loads a plugin with default options, once per path.
pub(crate) async fn plugin(path: &'static str) -> Plugin {
    static CACHE: OnceLock<Mutex<HashMap<&'static str, Plugin>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(plugin) = cache.lock().unwrap().get(path) {
        return plugin.clone();
    }
    let plugin = Plugin::load(engine(), path, &PluginOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{path} loads: {e}"));
    cache.lock().unwrap().insert(path, plugin.clone());
    plugin
}

/// Loads a plugin with its own options (not cached).
pub(crate) async fn plugin_with(path: &str, options: &PluginOptions) -> Plugin {
    Plugin::load(engine(), path, options)
        .await
        .unwrap_or_else(|e| panic!("{path} loads: {e}"))
}
