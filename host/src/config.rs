//! `toolhost.toml`: the operator's configuration file.
//!
//! Every setting can also be built in code; the file is a convenience for the
//! CLI and servers. Unknown keys are errors (a typo never silently does nothing).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::EngineConfig;
use crate::engine::limits::Limits;
use crate::plugin::Reuse;
use crate::policy::{Grants, GrantsConfig};
use crate::state::{StateOptions, StateStore};

mod access;
mod audit;
mod auth;
mod layers;
mod names;
mod oci;
mod sources;
mod telemetry;

pub use crate::error::ConfigError;
pub use access::AccessConfig;
pub use audit::AuditConfig;
pub use auth::{AuthConfig, IssuerConfig};
pub use layers::Layered;
pub use names::{NameSource, UnmatchedName};
pub use oci::OciConfig;
pub use sources::SourceConfig;
pub use telemetry::TelemetryConfig;

/// The parsed `toolhost.toml`.
///
/// ```toml
/// plugins = "target/plugins"        # relative to this file
///
/// [limits]                          # defaults for every plugin
/// fuel = 2_000_000_000
/// memory_mib = 256
/// timeout_ms = 10_000
/// max_output_bytes = 4_194_304
///
/// [plugin.codec.limits]             # per plugin (by name), over the defaults
/// timeout_ms = 30_000
///
/// [load]                            # loading plugins (every plugin)
/// timeout_ms = 5_000                # instantiating + reading declarations
/// max_tools = 256
/// max_schema_bytes = 262_144        # one input or output schema
/// max_declaration_bytes = 4_194_304 # all of a plugin's declarations
///
/// [filter]                          # which tools are visible (glob patterns)
/// allow = ["*"]
/// deny = ["fail"]
///
/// [confirm]                         # which tools need a human's yes for each call
/// tools = ["batch_digest"]
/// hint = "This tool may take long. Run it?"
///
/// [aliases.tools]                   # extra names: alias = "tool"
/// wc = "word_count"
///
/// [aliases.arguments.word_count]    # argument key aliases: alias = "canonical key"
/// content = "text"
///
/// [state]                           # where invocation state and used approvals live
/// url = "redis://127.0.0.1:6379/0"  # unset: in this process
/// prefix = "toolhost:"
/// ttl_secs = 3600
/// timeout_ms = 2000
/// ```
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Config {
    /// The plugins directory (relative paths are relative to the file).
    #[serde(default)]
    pub plugins: Option<PathBuf>,
    /// Where compiled code is cached.
    #[serde(default)]
    pub cache_dir: Option<PathBuf>,
    /// Limits for every plugin.
    #[serde(default)]
    pub limits: LimitsConfig,
    /// Limits on loading plugins.
    #[serde(default)]
    pub load: LoadConfig,
    /// Per-plugin settings, by plugin name.
    #[serde(default)]
    pub plugin: BTreeMap<String, PluginConfig>,
    /// Which tools are visible.
    #[serde(default)]
    pub filter: FilterConfig,
    /// Which tools need confirmation.
    #[serde(default)]
    pub confirm: ConfirmConfig,
    /// Extra names for tools and argument keys.
    #[serde(default)]
    pub aliases: AliasConfig,
    /// The MCP server (`toolhost serve`).
    #[serde(default)]
    pub serve: ServeConfig,
    /// What all plugins and calls share (the engine).
    #[serde(default)]
    pub engine: EngineSettings,
    /// Where invocation state and used approvals live (Redis, or this process).
    #[serde(default)]
    pub state: StateConfig,
    /// OCI registries (`toolhost pull`, `toolhost push`).
    #[serde(default)]
    pub oci: OciConfig,
    /// Plugins served live from OCI registries (`[[sources]]`).
    #[serde(default)]
    pub sources: Vec<SourceConfig>,
    /// Who may list and call what (`[[access]]`); none: every caller may
    /// use everything.
    #[serde(default)]
    pub access: Vec<AccessConfig>,
    /// The audit trail of `toolhost serve` (`[audit]`).
    pub audit: Option<AuditConfig>,
    /// OpenTelemetry export of traces and metrics (`[telemetry]`).
    pub telemetry: Option<TelemetryConfig>,
    /// The file this was read from: grants' relative paths are relative to it.
    #[serde(skip)]
    source: Option<PathBuf>,
    /// Every plugin's grants, resolved once by [`Config::load`]: resolving
    /// reads the host's environment and secret files, and logs what is
    /// missing, which should happen once, not again at every (re)load.
    #[serde(skip)]
    resolved: BTreeMap<String, Grants>,
}

/// Settings of the MCP server (`toolhost serve`); all but
/// `progress_interval_ms` are about its HTTP transport. Unset ones keep the
/// defaults of [`HttpOptions`](crate::mcp::HttpOptions) and
/// [`McpServer`](crate::McpServer).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ServeConfig {
    /// `Host` header values accepted besides the loopback names (`localhost`,
    /// `127.0.0.1`, `::1`), as `name` or `name:port`. Guards against DNS rebinding.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted besides `http://localhost:*`,
    /// `http://127.0.0.1:*` and `http://[::1]:*` (requests without `Origin`
    /// always pass), such as `https://app.example.com:443`.
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// A file holding the bearer token clients must send (relative paths are
    /// relative to the configuration file). `$TOOLHOST_MCP_TOKEN` wins over it.
    /// Not with `[serve.auth]`.
    #[serde(default)]
    pub token_file: Option<PathBuf>,
    /// OAuth 2.1 authorization (`[serve.auth]`): tokens from trusted issuers
    /// instead of one shared token.
    pub auth: Option<AuthConfig>,
    /// The most HTTP connections open at once; more are answered 503 (256).
    pub max_connections: Option<usize>,
    /// The most HTTP connections one peer address may hold; more are answered
    /// 503 (half of `max_connections`; behind a proxy, `max_connections`).
    pub max_connections_per_peer: Option<usize>,
    /// Milliseconds a connection may take to send a request head, also the
    /// longest a kept-alive connection waits for its next request (10 000).
    pub header_read_timeout_ms: Option<u64>,
    /// Milliseconds a connection may move no bytes before it is closed (120 000).
    pub idle_timeout_ms: Option<u64>,
    /// Milliseconds an HTTP session may go without traffic before it ends and
    /// frees its memory (300 000); keep it above the call deadline.
    pub session_idle_timeout_ms: Option<u64>,
    /// Milliseconds a session's request stream that dropped may be resumed
    /// (`GET` with `Last-Event-ID`) while its call keeps running; a finished
    /// stream's events are kept that long (30 000). 0: a dropped stream
    /// cancels its call at once.
    pub stream_resume_ms: Option<u64>,
    /// Milliseconds after which the server ends a call's stream so its
    /// client resumes it (SEP-1699 polling, for proxies that cut long
    /// streams). Unset: a stream stays open until its response.
    pub stream_close_after_ms: Option<u64>,
    /// The shortest time between two progress notifications of one streaming
    /// call, in milliseconds (100); 0 sends one per chunk.
    pub progress_interval_ms: Option<u64>,
    /// A file holding the keys that seal approval states on MCP 2026-07-28
    /// (`KEY_ID SECRET` per line, the first signs; see
    /// [`ApprovalKeys::parse`](crate::mcp::ApprovalKeys::parse)); relative
    /// paths are relative to the configuration file. `$TOOLHOST_STATE_KEYS`
    /// (the same text) wins over it. Without either, each process makes its
    /// own key: fine for one process, not for replicas.
    #[serde(default)]
    pub state_key_file: Option<PathBuf>,
    /// Seconds a client may take to answer an approval question on MCP
    /// 2026-07-28 (600).
    pub approval_ttl_secs: Option<u64>,
    /// This replica's name, sent as the `x-toolhost-replica` header on every
    /// HTTP response. `$TOOLHOST_REPLICA` wins over it. Unset: no header.
    pub replica_name: Option<String>,
    /// Seconds between rescans of the plugins directory while serving, besides
    /// the watcher: for file systems that do not report changes (NFS and
    /// other network file systems a fleet shares). 0 turns it off (30).
    pub rescan_secs: Option<u64>,
    /// Milliseconds a stop (SIGTERM, Ctrl-C) lets the calls still running
    /// finish before it cancels them (30 000); 0 cancels them at once.
    pub drain_timeout_ms: Option<u64>,
    /// Whether long-running tools run as MCP tasks for clients that declare
    /// the Tasks extension (SEP-2663) on their call (true); see
    /// [`McpServer::with_tasks`](crate::McpServer::with_tasks).
    pub tasks: Option<bool>,
    /// Seconds a task's record (its status and result) is kept after its
    /// last change (3600).
    pub task_ttl_secs: Option<u64>,
    /// Whether a tool's JSON result, sent as `structuredContent`, also goes
    /// out as a text block, as the MCP specification asks (true); see
    /// [`McpServer::with_result_text`](crate::McpServer::with_result_text).
    pub result_text: Option<bool>,
}

/// Engine-wide settings (`[engine]`); unset ones keep their default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct EngineSettings {
    /// Guest linear memory all calls together may hold, in MiB [default: half
    /// the machine's memory]; past it a call waits briefly, then fails as busy.
    pub max_guest_memory_mib: Option<u64>,
    /// How many plugin instances may be alive at once [default: sized from
    /// the guest memory budget, at most 1000]; past it a call fails as busy.
    pub max_concurrent_instances: Option<u32>,
    /// How plugins are compiled: `tiered` (baseline code first, optimized
    /// in the background; the default), `optimized` or `baseline` (see
    /// [`Compilation`](crate::engine::Compilation)).
    pub compilation: Option<crate::engine::Compilation>,
}

/// Where invocation state and used approvals live (`[state]`); unset keys
/// keep the defaults of [`StateOptions`]. See [`crate::state`].
#[derive(Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct StateConfig {
    /// The Redis server (`redis://[user:password@]host:port/db`); unset keeps
    /// state in this process. `$TOOLHOST_STATE_URL` wins over it (keeps a
    /// password out of the file).
    pub url: Option<String>,
    /// What every Redis key starts with (`toolhost:`).
    pub prefix: Option<String>,
    /// Seconds an invocation's state is kept after its last write, and a used
    /// approval is remembered in Redis (3600).
    pub ttl_secs: Option<u64>,
    /// Milliseconds one Redis operation may take (2000).
    pub timeout_ms: Option<u64>,
}

impl std::fmt::Debug for StateConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateConfig")
            .field("url", &self.url.as_deref().map(crate::state::redact))
            .field("prefix", &self.prefix)
            .field("ttl_secs", &self.ttl_secs)
            .field("timeout_ms", &self.timeout_ms)
            .finish()
    }
}

impl StateConfig {
    /// The store options this section describes, over the defaults;
    /// `$TOOLHOST_STATE_URL`, when set and not empty, gives the URL.
    pub fn options(&self) -> StateOptions {
        let from_env = std::env::var("TOOLHOST_STATE_URL")
            .ok()
            .filter(|url| !url.trim().is_empty());
        self.options_with_url(from_env.or_else(|| self.url.clone()))
    }

    fn options_with_url(&self, url: Option<String>) -> StateOptions {
        let mut options = StateOptions::default();
        options.url(url);
        if let Some(prefix) = &self.prefix {
            options.prefix(prefix.clone());
        }
        if let Some(secs) = self.ttl_secs {
            options.ttl(Duration::from_secs(secs));
        }
        if let Some(ms) = self.timeout_ms {
            options.timeout(Duration::from_millis(ms));
        }
        options
    }

    /// Sets the store this section describes on an engine configuration.
    pub fn apply(&self, config: &mut EngineConfig) {
        config.state(self.options());
    }
}

/// Limits as written in the file; unset ones keep their default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct LimitsConfig {
    /// Fuel per call.
    pub fuel: Option<u64>,
    /// Linear memory per call, in MiB.
    pub memory_mib: Option<u64>,
    /// Deadline per call, in milliseconds.
    pub timeout_ms: Option<u64>,
    /// Output per call, in bytes.
    pub max_output_bytes: Option<u64>,
    /// Guest stdout, stderr and `log` messages logged per call, in bytes (the
    /// rest is dropped).
    pub max_stdio_bytes: Option<u64>,
    /// Table elements per table.
    pub table_elements: Option<u64>,
    /// Core instances, memories and tables per call.
    pub instances: Option<u32>,
}

/// Limits on loading a plugin, as written in the file (see
/// [`EngineConfig::load_timeout`] and the methods after it); unset ones keep
/// their default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct LoadConfig {
    /// How long a plugin's guest code may run while it loads, in milliseconds.
    pub timeout_ms: Option<u64>,
    /// The most tools one plugin may declare.
    pub max_tools: Option<usize>,
    /// The largest input or output schema of one tool, in bytes.
    pub max_schema_bytes: Option<usize>,
    /// The most bytes all of one plugin's declarations may take.
    pub max_declaration_bytes: Option<usize>,
}

impl LoadConfig {
    /// Sets the limits given here on an engine configuration.
    pub fn apply(&self, config: &mut EngineConfig) {
        if let Some(ms) = self.timeout_ms {
            config.load_timeout(Duration::from_millis(ms));
        }
        if let Some(n) = self.max_tools {
            config.max_tools(n);
        }
        if let Some(bytes) = self.max_schema_bytes {
            config.max_schema_bytes(bytes);
        }
        if let Some(bytes) = self.max_declaration_bytes {
            config.max_declaration_bytes(bytes);
        }
    }
}

/// Settings of one plugin.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PluginConfig {
    /// Limits over the defaults.
    #[serde(default)]
    pub limits: LimitsConfig,
    /// What the plugin may reach (files, environment, network). When given,
    /// it wins over the plugin's sidecar `NAME.policy.toml`.
    #[serde(default)]
    pub grants: Option<GrantsConfig>,
    /// Instance reuse: `"never"` (the default) or `"per-invocation"`.
    #[serde(default)]
    pub reuse: Reuse,
}

/// Visibility rules: a tool is visible if it matches `allow` (when given) and not `deny`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct FilterConfig {
    /// Glob patterns (`*`, `?`) of visible tools; empty means all.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Glob patterns of hidden tools; wins over `allow`.
    #[serde(default)]
    pub deny: Vec<String>,
}

/// Confirmation rules.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ConfirmConfig {
    /// Tools (names or glob patterns) whose every call needs a human's yes.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Every tool needs confirmation.
    #[serde(default)]
    pub all: bool,
    /// The hint shown to the human.
    #[serde(default)]
    pub hint: Option<String>,
}

/// Aliases.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct AliasConfig {
    /// `alias = "tool"`.
    #[serde(default)]
    pub tools: BTreeMap<String, String>,
    /// Per tool: `alias = "canonical argument key"`.
    #[serde(default)]
    pub arguments: BTreeMap<String, BTreeMap<String, String>>,
}

impl Config {
    /// Reads and checks a configuration file.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the file, the key and the reason: unreadable,
    /// not TOML, an unknown key, a value of the wrong type or out of range.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            path: path.to_owned(),
            key: None,
            reason: format!("cannot read: {e}"),
        })?;
        let mut config = Self::parse(&text, path)?;
        if let Some(plugins) = &config.plugins
            && plugins.is_relative()
            && let Some(dir) = path.parent()
        {
            config.plugins = Some(dir.join(plugins));
        }
        if let Some(token) = &config.serve.token_file
            && token.is_relative()
            && let Some(dir) = path.parent()
        {
            config.serve.token_file = Some(dir.join(token));
        }
        if let Some(audit) = &mut config.audit
            && let Some(file) = &audit.file
            && file.is_relative()
            && let Some(dir) = path.parent()
        {
            audit.file = Some(dir.join(file));
        }
        if let Some(keys) = &config.serve.state_key_file
            && keys.is_relative()
            && let Some(dir) = path.parent()
        {
            config.serve.state_key_file = Some(dir.join(keys));
        }
        if let Some(dir) = path.parent() {
            config.resolve_source_paths(dir);
        }
        // Resolve every plugin's grants once now, so a missing directory or an
        // unreadable secret file is reported at startup, naming the key.
        let mut resolved = BTreeMap::new();
        for name in config.plugin.keys() {
            if let Some(grants) = config.grants_for(name)? {
                resolved.insert(name.clone(), grants);
            }
        }
        config.resolved = resolved;
        Ok(config)
    }

    /// Parses configuration text; `path` names it in errors.
    ///
    /// # Errors
    /// As [`Config::load`].
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let mut config: Self = ConfigError::from_toml(text, path)?;
        config.check(path)?;
        config.source = Some(path.to_owned());
        Ok(config)
    }

    /// The grants `[plugin.NAME.grants]` gives a plugin, if it has that table
    /// (relative paths are relative to this file). A configuration from
    /// [`Config::load`] resolved them then; a parsed one resolves them now.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the key: a granted directory that does not
    /// exist, an unreadable secret file.
    pub fn grants_for(&self, plugin: &str) -> Result<Option<Grants>, ConfigError> {
        if let Some(grants) = self.resolved.get(plugin) {
            return Ok(Some(grants.clone()));
        }
        let Some(grants) = self.plugin.get(plugin).and_then(|p| p.grants.as_ref()) else {
            return Ok(None);
        };
        let path = self
            .source
            .clone()
            .unwrap_or_else(|| PathBuf::from("toolhost.toml"));
        grants
            .resolve(&path, &format!("plugin.{plugin}.grants."))
            .map(Some)
    }

    fn check(&self, path: &Path) -> Result<(), ConfigError> {
        let error = |key: String, reason: &str| ConfigError {
            path: path.to_owned(),
            key: Some(key),
            reason: reason.to_owned(),
        };
        let sections = std::iter::once(("limits".to_owned(), &self.limits)).chain(
            self.plugin
                .iter()
                .map(|(name, p)| (format!("plugin.{name}.limits"), &p.limits)),
        );
        for (section, limits) in sections {
            let zero = [
                ("fuel", limits.fuel),
                ("memory_mib", limits.memory_mib),
                ("timeout_ms", limits.timeout_ms),
                ("max_output_bytes", limits.max_output_bytes),
                ("max_stdio_bytes", limits.max_stdio_bytes),
                ("table_elements", limits.table_elements),
                ("instances", limits.instances.map(u64::from)),
            ];
            for (key, value) in zero {
                if value == Some(0) {
                    return Err(error(format!("{section}.{key}"), "must be greater than 0"));
                }
            }
            if limits.memory_mib.is_some_and(|m| m > 4096) {
                return Err(error(
                    format!("{section}.memory_mib"),
                    "at most 4096 (a 32-bit linear memory)",
                ));
            }
        }
        let load = [
            ("timeout_ms", self.load.timeout_ms),
            ("max_tools", self.load.max_tools.map(|n| n as u64)),
            (
                "max_schema_bytes",
                self.load.max_schema_bytes.map(|n| n as u64),
            ),
            (
                "max_declaration_bytes",
                self.load.max_declaration_bytes.map(|n| n as u64),
            ),
        ];
        for (key, value) in load {
            if value == Some(0) {
                return Err(error(format!("load.{key}"), "must be greater than 0"));
            }
        }
        for (key, values) in [
            ("serve.allowed_hosts", &self.serve.allowed_hosts),
            ("serve.allowed_origins", &self.serve.allowed_origins),
        ] {
            if values.iter().any(|v| v.trim().is_empty()) {
                return Err(error(key.to_owned(), "entries must not be empty"));
            }
        }
        if self
            .serve
            .allowed_origins
            .iter()
            .any(|o| o != "null" && !o.contains("://"))
        {
            return Err(error(
                "serve.allowed_origins".to_owned(),
                "an origin needs a scheme, like `https://app.example.com:443`",
            ));
        }
        for (key, value) in [
            ("state.ttl_secs", self.state.ttl_secs),
            ("state.timeout_ms", self.state.timeout_ms),
        ] {
            if value == Some(0) {
                return Err(error(key.to_owned(), "must be greater than 0"));
            }
        }
        if let Some(audit) = &self.audit {
            if audit.file.is_none() && !audit.log {
                return Err(error(
                    "audit".to_owned(),
                    "name a `file`, or set `log = true`",
                ));
            }
            if audit.max_file_mib == Some(0) || audit.queue == Some(0) {
                return Err(error(
                    "audit".to_owned(),
                    "max_file_mib and queue must be greater than 0",
                ));
            }
        }
        for (index, rule) in self.access.iter().enumerate() {
            rule.check(index, &error)?;
        }
        if let Some(auth) = &self.serve.auth {
            if self.serve.token_file.is_some() {
                return Err(error(
                    "serve.token_file".to_owned(),
                    "choose one: a shared token, or [serve.auth] (OAuth)",
                ));
            }
            auth.check(|key, reason| error(key, reason))?;
        }
        if let Some(url) = &self.state.url {
            StateStore::new(&self.state.options_with_url(Some(url.clone())))
                .map_err(|e| error("state.url".to_owned(), &e.to_string()))?;
        }
        for (name, plugin) in &self.plugin {
            if let Some(grants) = &plugin.grants {
                grants.check(path, &format!("plugin.{name}.grants."))?;
            }
        }
        self.check_sources(path)?;
        for (alias, tool) in &self.aliases.tools {
            if alias.trim().is_empty() || tool.trim().is_empty() {
                return Err(error(
                    format!("aliases.tools.{alias}"),
                    "an alias and its tool must not be empty",
                ));
            }
        }
        Ok(())
    }

    /// The limits for a plugin: defaults, then `[limits]`, then `[plugin.NAME.limits]`.
    pub fn limits_for(&self, plugin: &str) -> Limits {
        let mut limits = Limits::default();
        apply(&mut limits, &self.limits);
        if let Some(config) = self.plugin.get(plugin) {
            apply(&mut limits, &config.limits);
        }
        limits
    }

    /// The instance reuse `[plugin.NAME] reuse` sets (default: never).
    pub fn reuse_for(&self, plugin: &str) -> Reuse {
        self.plugin.get(plugin).map(|p| p.reuse).unwrap_or_default()
    }
}

fn apply(limits: &mut Limits, config: &LimitsConfig) {
    if let Some(fuel) = config.fuel {
        limits.fuel(fuel);
    }
    if let Some(mib) = config.memory_mib {
        limits.memory_bytes(mib.saturating_mul(1 << 20));
    }
    if let Some(ms) = config.timeout_ms {
        limits.timeout(Duration::from_millis(ms));
    }
    if let Some(bytes) = config.max_output_bytes {
        limits.max_output_bytes(bytes);
    }
    if let Some(bytes) = config.max_stdio_bytes {
        limits.max_stdio_bytes(bytes);
    }
    if let Some(elements) = config.table_elements {
        limits.table_elements(elements);
    }
    if let Some(instances) = config.instances {
        limits.instances(instances);
    }
}

#[cfg(test)]
mod tests;
