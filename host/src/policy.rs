//! Capabilities: what the operator grants a plugin, and nothing else.
//!
//! Deny by default. A plugin's calls see only what its [`Grants`] name:
//!
//! - **files**: host directories, each under a guest path, read-only unless
//!   written otherwise (wasmtime-wasi preopens over cap-std: no `..`, absolute
//!   path or symlink reaches outside a grant);
//! - **environment**: named variables only, with values from the host's
//!   environment, the policy, or a file; values are never printed;
//! - **network**: outgoing HTTP(S) to allow-listed hosts through `wasi:http`
//!   (see [`HostPattern`]); raw TCP to allow-listed addresses and name lookup
//!   only when granted; UDP never;
//! - **output**: stdout and stderr go to the host's log, capped per call.
//!
//! Clocks and randomness are always available; nothing else (arguments,
//! environment, working directory, network) is inherited from the host.
//!
//! Grants come from code ([`Grants`] setters), from `[plugin.NAME.grants]` in
//! `toolhost.toml`, or from a sidecar file `NAME.policy.toml` next to
//! `NAME.wasm` (see [`GrantsConfig`]). When `toolhost.toml` has grants for a
//! plugin, they win and its sidecar is ignored (with a warning).
//!
//! This module is the front: [`Grants`], [`Capability`], [`GrantsConfig`] and
//! sidecar files. Each kind of capability is one unit, in the manner of
//! Spin's factors (`kind.rs`: the `Kind` trait and the `KINDS` table every
//! use goes through): `files`, `env`, `http` and `sockets` each hold their
//! grant type, which imports they govern, their config keys (checked and
//! resolved there), their summary, what they add to a call's WASI context,
//! and their linker additions if any (`add_to_linker` calls those). `stdio`
//! (always on, logged) and the per-call state of all kinds (`CallCaps`)
//! are here too; `refusals` logs refused requests across kinds.

mod env;
mod files;
mod http;
mod kind;
mod refusals;
mod secrets;
mod sockets;
mod stdio;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use wasmtime::component::Linker;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpView};

pub use self::env::{EnvGrant, EnvSource, EnvVarConfig, Secret};
pub use self::files::{Access, DirConfig, DirGrant};
pub use self::http::{DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_REQUEST_TIMEOUT, HostPattern};
use self::kind::{KINDS, kind_of};
pub use self::secrets::{
    CallerSecrets, HeaderSecret, HeaderSecretConfig, MIN_SECRET_LEN, PerCallerConfig, SecretSource,
};
pub use self::sockets::SocketPattern;
use crate::error::ConfigError;

/// What the capabilities' host functions need of a call's store data: its
/// WASI view, the plugin's grants and the call (for refusal logs).
pub(crate) trait CallState: wasmtime_wasi::WasiView + 'static {
    /// The plugin's grants.
    fn grants(&self) -> &Grants;
    /// The call the store serves.
    fn call_tag(&self) -> &Arc<CallTag>;
}

/// The suffix of a sidecar policy file: `NAME.policy.toml` next to `NAME.wasm`.
pub const SIDECAR_SUFFIX: &str = ".policy.toml";

/// What a plugin's calls may reach beyond their own memory. Empty by default:
/// no files, no environment, no network.
///
/// # Examples
/// ```
/// use toolhost::PluginOptions;
/// use toolhost::policy::{Access, Grants};
/// let mut grants = Grants::default();
/// grants
///     .dir("/srv/reports", "/reports", Access::ReadWrite)
///     .env("LANG", "C.UTF-8")
///     .http("api.example.com".parse().unwrap());
/// let mut options = PluginOptions::default();
/// options.grants(grants);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grants {
    dirs: Vec<DirGrant>,
    env: Vec<EnvGrant>,
    http: Vec<HostPattern>,
    tcp: Vec<SocketPattern>,
    name_lookup: bool,
    max_response_bytes: u64,
    request_timeout: Duration,
    /// The caller's claims the plugin's tools see (`caller_claims`).
    caller_claims: Vec<String>,
    /// Headers the host adds to HTTP requests (`network.secrets`).
    secrets: Vec<HeaderSecret>,
    /// Finds the values of `secrets` in what the guest sends, gets, returns
    /// and logs.
    leaks: secrets::LeakCheck,
}

impl Default for Grants {
    fn default() -> Self {
        Self {
            dirs: Vec::new(),
            env: Vec::new(),
            http: Vec::new(),
            tcp: Vec::new(),
            name_lookup: false,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            caller_claims: Vec::new(),
            secrets: Vec::new(),
            leaks: secrets::LeakCheck::default(),
        }
    }
}

impl Grants {
    /// Whether nothing at all is granted.
    pub fn is_empty(&self) -> bool {
        KINDS.into_iter().all(|kind| {
            kind.capabilities()
                .iter()
                .all(|capability| !kind.covers(self, *capability))
        })
    }

    /// Whether a capability is granted (clocks, randomness and the logged stdio always are).
    pub fn covers(&self, capability: Capability) -> bool {
        kind_of(capability).is_none_or(|kind| kind.covers(self, capability))
    }

    /// A one-line summary of what is granted, without any value: for `list` and logs.
    pub fn summary(&self) -> Vec<String> {
        let mut out = Vec::new();
        for kind in KINDS {
            kind.summary(self, &mut out);
        }
        if !self.caller_claims.is_empty() {
            out.push(format!("caller claims: {}", self.caller_claims.join(", ")));
        }
        out
    }

    /// Lets the plugin's tools see the caller's claim `name` (contract
    /// `@0.3.0` on). They always see the caller's issuer, subject and scopes;
    /// its credentials never.
    pub fn caller_claim(&mut self, name: impl Into<String>) -> &mut Self {
        let name = name.into();
        if !self.caller_claims.contains(&name) {
            self.caller_claims.push(name);
        }
        self
    }

    /// The caller's claims the plugin's tools see.
    pub fn caller_claims(&self) -> &[String] {
        &self.caller_claims
    }

    /// Builds the WASI context of one call: exactly these grants, nothing
    /// inherited; each capability adds its part.
    fn wasi_ctx(&self, stdio: &stdio::StdioLog, call: &Arc<CallTag>) -> Result<WasiCtx, String> {
        let mut builder = WasiCtxBuilder::new();
        stdio::add_to_wasi(stdio, &mut builder);
        for kind in KINDS {
            kind.add_to_wasi(self, &mut builder, call)?;
        }
        Ok(builder.build())
    }
}

/// What the capabilities keep in one call's store: its WASI context (exactly
/// the grants), its logged stdio, and its HTTP context and hooks. A new kind
/// with per-call state adds it here, and to [`CallCaps::rebind`] if a kept
/// instance's next call must see it anew.
pub(crate) struct CallCaps {
    /// The WASI context: each kind's part ([`Kind::add_to_wasi`](kind::Kind)).
    pub(crate) wasi: WasiCtx,
    /// Where the guest's stdout, stderr and `log` messages go.
    pub(crate) stdio: stdio::StdioLog,
    /// `wasi:http`'s context.
    pub(crate) http: WasiHttpCtx,
    /// Checks every outgoing HTTP request against the grants.
    pub(crate) http_hooks: http::HttpHooks,
}

impl CallCaps {
    /// The capabilities of one call of `call.tool` under `grants`, its log
    /// output capped at `max_stdio_bytes`.
    ///
    /// # Errors
    /// Why a grant cannot be given now (a granted directory that cannot be
    /// opened).
    pub(crate) fn new(
        grants: &Arc<Grants>,
        call: &Arc<CallTag>,
        max_stdio_bytes: u64,
    ) -> Result<Self, String> {
        let stdio = stdio::StdioLog::new(Arc::clone(call), max_stdio_bytes);
        // Exactly the grants: no inherited environment, arguments or network.
        let wasi = grants.wasi_ctx(&stdio, call)?;
        Ok(Self {
            wasi,
            stdio,
            http: WasiHttpCtx::new(),
            http_hooks: http::HttpHooks::new(Arc::clone(call), Arc::clone(grants)),
        })
    }

    /// Readies them for the next call of a kept instance: its output cap and
    /// the call its logs and refusals name.
    pub(crate) fn rebind(&mut self, call: &Arc<CallTag>) {
        self.stdio.rebind(Arc::clone(call));
        self.http_hooks.call = Arc::clone(call);
    }
}

/// Adds every interface a plugin may import to `linker`: WASI, `wasi:http`
/// (its hooks check each request), and the kinds' additions (logging in front
/// of refused socket functions). Shadowing is off again afterwards.
///
/// # Errors
/// A duplicate definition: a programming error.
pub(crate) fn add_to_linker<T>(linker: &mut Linker<T>) -> wasmtime::Result<()>
where
    T: CallState + WasiHttpView,
{
    wasmtime_wasi::p2::add_to_linker_async(linker)?;
    http::add_to_linker(linker)?;
    // Refusals of sockets are logged where a call hits them.
    sockets::add_to_linker(linker)?;
    linker.allow_shadowing(false);
    Ok(())
}

/// Which call a refusal or a line of output belongs to, for the log.
#[derive(Debug)]
pub(crate) struct CallTag {
    pub(crate) plugin: Arc<str>,
    pub(crate) tool: String,
    pub(crate) call_id: String,
    /// Who calls, as far as the plugin's secrets need to know (per-caller ones).
    pub(crate) caller: Option<crate::tool::Caller>,
    /// Where the guest's log messages also go (an MCP client that asked).
    pub(crate) log: Option<crate::tool::LogSink>,
    /// Who the guest's questions go to (an MCP client that can be asked).
    pub(crate) ask: Option<crate::tool::Asker>,
    /// The plugin's secret values, masked in what its guest logs.
    pub(crate) leaks: secrets::LeakCheck,
    /// What the call was refused so far: each capability is warned about once.
    pub(crate) refused: refusals::Refused,
}

/// A kind of outside access, as the WASI interfaces a component imports ask for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Capability {
    /// `wasi:filesystem/*`.
    Files,
    /// `wasi:cli/environment`.
    Environment,
    /// `wasi:http/*`.
    Http,
    /// `wasi:sockets/tcp*`, `network`, `instance-network`.
    Tcp,
    /// `wasi:sockets/udp*`.
    Udp,
    /// `wasi:sockets/ip-name-lookup`.
    NameLookup,
    /// `wasi:cli/stdin|stdout|stderr|terminal-*`: logged by the host.
    Stdio,
    /// `wasi:clocks/*`.
    Clocks,
    /// `wasi:random/*`.
    Random,
    /// Anything else (`wasi:io`, `wasi:cli/exit`, the toolhost host interface).
    Other,
}

impl Capability {
    /// The capability an import asks for.
    pub fn of_import(import: &str) -> Self {
        let interface = import.split('@').next().unwrap_or(import);
        if let Some(capability) = KINDS.into_iter().find_map(|kind| kind.of_import(interface)) {
            return capability;
        }
        match interface {
            "wasi:cli/stdin" | "wasi:cli/stdout" | "wasi:cli/stderr" => Self::Stdio,
            i if i.starts_with("wasi:cli/terminal-") => Self::Stdio,
            i if i.starts_with("wasi:clocks/") => Self::Clocks,
            i if i.starts_with("wasi:random/") => Self::Random,
            _ => Self::Other,
        }
    }

    /// The capabilities a component's imports ask for, sorted, without
    /// duplicates and without [`Capability::Other`].
    pub fn of_imports<I>(imports: I) -> Vec<Self>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let mut caps: Vec<Self> = imports
            .into_iter()
            .map(|i| Self::of_import(i.as_ref()))
            .filter(|c| *c != Self::Other)
            .collect();
        caps.sort();
        caps.dedup();
        caps
    }

    /// Whether a missing grant for it deserves a warning at load. Every Rust
    /// guest imports `wasi:cli/environment`, so a missing environment grant does not.
    pub fn needs_grant(self) -> bool {
        matches!(
            self,
            Self::Files | Self::Http | Self::Tcp | Self::Udp | Self::NameLookup
        )
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Files => "files",
            Self::Environment => "env",
            Self::Http => "http",
            Self::Tcp => "tcp",
            Self::Udp => "udp",
            Self::NameLookup => "name lookup",
            Self::Stdio => "stdio",
            Self::Clocks => "clocks",
            Self::Random => "random",
            Self::Other => "other",
        })
    }
}

/// Grants as written in a policy file: `[plugin.NAME.grants]` in
/// `toolhost.toml`, or the whole of a sidecar `NAME.policy.toml`.
///
/// ```toml
/// [[dirs]]                          # repeat for more directories
/// host = "workspace"                # relative to the policy file
/// guest = "/workspace"
/// write = false                     # default: read-only
///
/// env = ["LANG"]                    # passed through from the host's environment
///
/// [env_vars]
/// GREETING = { value = "hello" }
/// API_TOKEN = { from_env = "GITHUB_TOKEN" }
/// DB_PASSWORD = { from_file = "/run/secrets/db" }
///
/// [network]
/// http = ["api.github.com", "*.example.com", "http://127.0.0.1:8080"]
/// max_response_bytes = 10_485_760
/// timeout_ms = 30_000
/// tcp = ["127.0.0.1:5432"]
/// name_lookup = false
///
/// [[network.secrets]]               # a header the guest never sees
/// host = "api.github.com"           # one of network.http
/// from_env = "GITHUB_TOKEN"         # Authorization: Bearer <it>
///
/// caller_claims = ["email", "groups"]  # the caller's token claims its tools see
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct GrantsConfig {
    /// Granted directories.
    #[serde(default)]
    pub dirs: Vec<DirConfig>,
    /// Host environment variables passed through under the same name.
    #[serde(default)]
    pub env: Vec<String>,
    /// Environment variables with a value from the policy, the host or a file.
    #[serde(default)]
    pub env_vars: BTreeMap<String, EnvVarConfig>,
    /// Network access.
    #[serde(default)]
    pub network: NetworkConfig,
    /// The caller's token claims the plugin's tools see (beside its issuer,
    /// subject and scopes, which they always see).
    #[serde(default)]
    pub caller_claims: Vec<String>,
}

/// Network access as written: one `[network]` table for two kinds, HTTP
/// (`http`, `max_response_bytes`, `timeout_ms`; see the `http` module) and
/// sockets (`tcp`, `name_lookup`; see the `sockets` module).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct NetworkConfig {
    /// Allowed HTTP(S) destinations ([`HostPattern`]).
    #[serde(default)]
    pub http: Vec<String>,
    /// Allowed raw TCP destinations ([`SocketPattern`]).
    #[serde(default)]
    pub tcp: Vec<String>,
    /// Allow name lookup.
    #[serde(default)]
    pub name_lookup: bool,
    /// HTTP response body cap in bytes.
    pub max_response_bytes: Option<u64>,
    /// HTTP request timeout in milliseconds.
    pub timeout_ms: Option<u64>,
    /// Headers the host adds to requests to granted hosts, with secrets the
    /// guest never sees ([`HeaderSecretConfig`]).
    #[serde(default)]
    pub secrets: Vec<HeaderSecretConfig>,
}

impl GrantsConfig {
    /// Parses a sidecar policy file's text; `path` names it in errors.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the file, the line or key, and the reason.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let config: Self = ConfigError::from_toml(text, path)?;
        config.check(path, "")?;
        Ok(config)
    }

    /// Checks what can be checked without touching the file system.
    pub(crate) fn check(&self, path: &Path, prefix: &str) -> Result<(), ConfigError> {
        let at = ErrorAt { path, prefix };
        KINDS
            .into_iter()
            .try_for_each(|kind| kind.check(self, &at))?;
        if self.caller_claims.iter().any(|name| name.trim().is_empty()) {
            return Err(at.key(
                "caller_claims".to_owned(),
                "a claim name is empty".to_owned(),
            ));
        }
        Ok(())
    }

    /// Turns the written grants into [`Grants`]: resolves paths against `base`
    /// (the policy file's directory), checks that granted directories exist,
    /// reads secret files and the host's environment.
    ///
    /// # Errors
    /// A [`ConfigError`] naming `path`, the key (after `prefix`) and the reason.
    /// A missing host variable is not an error: it is logged and left unset.
    pub fn resolve(&self, path: &Path, prefix: &str) -> Result<Grants, ConfigError> {
        self.check(path, prefix)?;
        let base = path.parent().unwrap_or(Path::new(""));
        let at = ErrorAt { path, prefix };
        let mut grants = Grants::default();
        for kind in KINDS {
            kind.resolve(self, base, &at, &mut grants)?;
        }
        for name in &self.caller_claims {
            grants.caller_claim(name.clone());
        }
        Ok(grants)
    }
}

/// Where a key of a policy is written: its file, and the prefix of its keys
/// (`plugin.NAME.grants.` in `toolhost.toml`, nothing in a sidecar).
pub(crate) struct ErrorAt<'a> {
    path: &'a Path,
    prefix: &'a str,
}

impl ErrorAt<'_> {
    /// The error of `key` (after the prefix).
    fn key(&self, key: String, reason: String) -> ConfigError {
        ConfigError {
            path: self.path.to_owned(),
            key: Some(format!("{}{key}", self.prefix)),
            reason,
        }
    }
}

/// The sidecar policy file of a plugin file: `dir/NAME.policy.toml` for `dir/NAME.wasm`.
pub fn sidecar_path(wasm: &Path) -> PathBuf {
    let stem = wasm
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    wasm.with_file_name(format!("{stem}{SIDECAR_SUFFIX}"))
}

/// Reads and resolves a plugin's sidecar policy, if it has one.
///
/// # Errors
/// A [`ConfigError`] naming the sidecar file, the key and the reason.
pub(crate) fn load_sidecar(wasm: &Path) -> Result<Option<Grants>, ConfigError> {
    let path = sidecar_path(wasm);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(ConfigError {
                path,
                key: None,
                reason: format!("cannot read: {e}"),
            });
        }
    };
    let config = GrantsConfig::parse(&text, &path)?;
    config.resolve(&path, "").map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_patterns_match_exactly_what_they_say() {
        let p: HostPattern = "api.example.com".parse().unwrap();
        assert!(p.allows("https", "API.example.com.", 443));
        assert!(!p.allows("http", "api.example.com", 80));
        assert!(!p.allows("https", "api.example.com", 8443));
        assert!(!p.allows("https", "evil-api.example.com", 443));
        let p: HostPattern = "*.example.com:*".parse().unwrap();
        assert!(p.allows("https", "a.b.example.com", 1234));
        assert!(!p.allows("https", "example.com", 443));
        assert!(!p.allows("https", "notexample.com", 443));
        let p: HostPattern = "http://[::1]:8080".parse().unwrap();
        assert!(p.allows("http", "[::1]", 8080));
        for bad in [
            "ftp://x.com",
            "x.com/path",
            "user@x.com",
            "*.",
            "x.com:99999",
            "",
            "a..b",
        ] {
            assert!(bad.parse::<HostPattern>().is_err(), "{bad}");
        }
    }

    #[test]
    fn socket_patterns() {
        let p: SocketPattern = "127.0.0.1:5432".parse().unwrap();
        assert!(p.allows("127.0.0.1:5432".parse().unwrap()));
        assert!(!p.allows("127.0.0.1:5433".parse().unwrap()));
        let p: SocketPattern = "10.0.0.1:*".parse().unwrap();
        assert!(p.allows("10.0.0.1:1".parse().unwrap()));
        assert!("localhost:80".parse::<SocketPattern>().is_err());
    }

    #[test]
    fn secrets_never_print() {
        let mut grants = Grants::default();
        grants
            .env("VISIBLE_NAME", "hunter2")
            .secret("TOKEN", Secret::new("s3cr3t"));
        let debug = format!("{grants:?}");
        assert!(
            !debug.contains("hunter2") && !debug.contains("s3cr3t"),
            "{debug}"
        );
        assert!(debug.contains("VISIBLE_NAME"), "{debug}");
        let summary = grants.summary().join("; ");
        assert!(!summary.contains("hunter2"), "{summary}");
        let config = GrantsConfig::parse(
            "[env_vars]\nTOKEN = { value = \"s3cr3t\" }\n",
            Path::new("x.policy.toml"),
        )
        .unwrap();
        assert!(!format!("{config:?}").contains("s3cr3t"));
    }

    #[test]
    fn policy_errors_name_the_file_the_key_and_the_reason() {
        let path = Path::new("fs.policy.toml");
        let err =
            GrantsConfig::parse("[[dirs]]\nhost = \"x\"\nguest = \"data\"\n", path).unwrap_err();
        assert_eq!(err.key.as_deref(), Some("dirs[0].guest"));
        assert!(err.to_string().starts_with("fs.policy.toml"), "{err}");
        let err = GrantsConfig::parse("[network]\nhttp = [\"ftp://x\"]\n", path).unwrap_err();
        assert_eq!(err.key.as_deref(), Some("network.http[0]"));
        assert!(err.reason.contains("scheme"), "{err}");
        let err = GrantsConfig::parse("[env_vars]\nX = {}\n", path).unwrap_err();
        assert!(err.reason.contains("exactly one"), "{err}");
        let err = GrantsConfig::parse("[network]\nhttps = []\n", path).unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
        let err = GrantsConfig::parse("[[dirs]]\nhost = \"no/such/dir\"\nguest = \"/d\"\n", path)
            .unwrap()
            .resolve(path, "")
            .unwrap_err();
        assert!(err.reason.contains("not a directory"), "{err}");
    }

    #[test]
    fn capabilities_of_imports() {
        assert_eq!(
            Capability::of_import("wasi:filesystem/preopens@0.2.6"),
            Capability::Files
        );
        assert_eq!(
            Capability::of_import("wasi:http/outgoing-handler@0.2.12"),
            Capability::Http
        );
        assert_eq!(
            Capability::of_import("wasi:sockets/tcp-create-socket@0.2.6"),
            Capability::Tcp
        );
        assert_eq!(
            Capability::of_import("wasi:sockets/ip-name-lookup@0.2.6"),
            Capability::NameLookup
        );
        assert!(!Grants::default().covers(Capability::Http));
        assert!(Grants::default().covers(Capability::Clocks));
    }
}
