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

pub(crate) mod http;
pub(crate) mod refusals;
pub(crate) mod stdio;

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use wasmtime_wasi::sockets::SocketAddrUse;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder};

use crate::config::ConfigError;

/// The default cap on an HTTP response body, in bytes.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 10 << 20;
/// The default limit on one HTTP request, from connecting to the last byte of the headers.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The suffix of a sidecar policy file: `NAME.policy.toml` next to `NAME.wasm`.
pub const SIDECAR_SUFFIX: &str = ".policy.toml";

/// A value that is never printed: `Debug` shows `"***"` and there is no `Display`.
///
/// Environment values granted to a plugin are kept as secrets, whatever their
/// source, so `list`, `inspect`, logs and errors never show them.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
pub struct Secret(Arc<str>);

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self(value.into())
    }
}

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into().into())
    }

    /// The value itself, for handing to the guest.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"***\"")
    }
}

/// How a plugin may use a granted directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Access {
    /// Read files and list directories; every write is refused.
    #[default]
    ReadOnly,
    /// Read, create, write, rename and remove inside the directory.
    ReadWrite,
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ReadOnly => "ro",
            Self::ReadWrite => "rw",
        })
    }
}

/// A host directory made visible to the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DirGrant {
    /// The directory on the host.
    pub host: PathBuf,
    /// Where the guest sees it (for example `/workspace`).
    pub guest: String,
    /// Read-only or read-write.
    pub access: Access,
}

/// Where a granted environment variable's value comes from (values are never shown).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EnvSource {
    /// The host's environment variable of this name.
    Host(String),
    /// Written in the policy.
    Policy,
    /// Read from this file when the policy was loaded.
    File(PathBuf),
}

/// A granted environment variable.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EnvGrant {
    /// The name the guest sees.
    pub name: String,
    /// Where the value came from.
    pub source: EnvSource,
    value: Secret,
}

/// Which HTTP(S) requests a plugin may make: `[scheme://]host[:port]`.
///
/// - `host` is an exact name (`api.example.com`), an IP address, or a wildcard
///   `*.example.com` matching every name that ends in `.example.com` (not
///   `example.com` itself). Names compare case-insensitively.
/// - Without a scheme only `https` is allowed; write `http://` to allow plain HTTP.
/// - Without a port only the scheme's default port (443, 80) is allowed;
///   `:*` allows any port.
///
/// # Examples
/// ```
/// use toolhost::HostPattern;
/// let api: HostPattern = "*.example.com".parse().unwrap();
/// assert!(api.allows("https", "api.example.com", 443));
/// assert!(!api.allows("http", "api.example.com", 80));
/// assert!(!api.allows("https", "example.com", 443));
/// let local: HostPattern = "http://127.0.0.1:8080".parse().unwrap();
/// assert!(local.allows("http", "127.0.0.1", 8080));
/// assert!(!local.allows("http", "127.0.0.1", 8081));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    text: String,
    scheme: String,
    host: HostMatch,
    port: PortMatch,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostMatch {
    Exact(String),
    /// The suffix including its leading dot: `.example.com`.
    Suffix(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PortMatch {
    Default,
    Any,
    Exact(u16),
}

/// Normalizes a host name or address for comparison: lower case, no trailing
/// dot, no IPv6 brackets.
fn normalize_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

impl FromStr for HostPattern {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (scheme, rest) = match text.split_once("://") {
            Some((scheme, rest)) => (scheme.to_ascii_lowercase(), rest),
            None => ("https".to_owned(), text),
        };
        if scheme != "http" && scheme != "https" {
            return Err(format!(
                "`{text}`: the scheme must be http or https, not `{scheme}`"
            ));
        }
        if rest.contains(['/', '@', '?', '#']) || rest.is_empty() {
            return Err(format!(
                "`{text}`: expected `[scheme://]host[:port]` (no path, user or query)"
            ));
        }
        // An IPv6 address is bracketed: `[::1]:8080`.
        let (host, port) = match rest.strip_prefix('[') {
            Some(v6) => match v6.split_once(']') {
                Some((host, after)) => (host, after.strip_prefix(':')),
                None => return Err(format!("`{text}`: unclosed `[`")),
            },
            None => match rest.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (rest, None),
            },
        };
        let port = match port {
            None => PortMatch::Default,
            Some("*") => PortMatch::Any,
            Some(port) => PortMatch::Exact(
                port.parse()
                    .map_err(|_| format!("`{text}`: `{port}` is not a port (1 to 65535 or `*`)"))?,
            ),
        };
        let host = normalize_host(host);
        let host = match host.strip_prefix("*.") {
            Some(suffix) if valid_name(suffix) => HostMatch::Suffix(format!(".{suffix}")),
            Some(_) => return Err(format!("`{text}`: `*.` must be followed by a domain name")),
            None if host.parse::<IpAddr>().is_ok() || valid_name(&host) => HostMatch::Exact(host),
            None => {
                return Err(format!(
                    "`{text}`: `{host}` is not a host name, an IP address or `*.domain`"
                ));
            }
        };
        Ok(Self {
            text: text.to_owned(),
            scheme,
            host,
            port,
        })
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

impl HostPattern {
    /// Whether a request with this scheme, host and port is allowed.
    pub fn allows(&self, scheme: &str, host: &str, port: u16) -> bool {
        if !self.scheme.eq_ignore_ascii_case(scheme) {
            return false;
        }
        let port_ok = match self.port {
            PortMatch::Any => true,
            PortMatch::Exact(p) => p == port,
            PortMatch::Default => port == default_port(&self.scheme),
        };
        let host = normalize_host(host);
        port_ok
            && match &self.host {
                HostMatch::Exact(exact) => *exact == host,
                HostMatch::Suffix(suffix) => host.len() > suffix.len() && host.ends_with(suffix),
            }
    }
}

fn default_port(scheme: &str) -> u16 {
    if scheme.eq_ignore_ascii_case("http") {
        80
    } else {
        443
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Which raw TCP connections a plugin may open: `IP:PORT` or `IP:*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketPattern {
    ip: IpAddr,
    port: Option<u16>,
}

impl FromStr for SocketPattern {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let bad =
            || format!("`{text}`: expected `IP:PORT` or `IP:*` (for example `127.0.0.1:5432`)");
        if let Ok(addr) = text.parse::<SocketAddr>() {
            return Ok(Self {
                ip: addr.ip(),
                port: Some(addr.port()),
            });
        }
        let ip = text.strip_suffix(":*").ok_or_else(bad)?;
        let ip = ip.trim_start_matches('[').trim_end_matches(']');
        Ok(Self {
            ip: ip.parse().map_err(|_| bad())?,
            port: None,
        })
    }
}

impl SocketPattern {
    /// Whether a connection to this address is allowed.
    pub fn allows(&self, addr: SocketAddr) -> bool {
        addr.ip() == self.ip && self.port.is_none_or(|p| p == addr.port())
    }
}

impl fmt::Display for SocketPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.ip, self.port) {
            (IpAddr::V6(ip), Some(port)) => write!(f, "[{ip}]:{port}"),
            (IpAddr::V6(ip), None) => write!(f, "[{ip}]:*"),
            (ip, Some(port)) => write!(f, "{ip}:{port}"),
            (ip, None) => write!(f, "{ip}:*"),
        }
    }
}

/// What a plugin's calls may reach beyond their own memory. Empty by default:
/// no files, no environment, no network.
///
/// # Examples
/// ```
/// use toolhost::{Access, Grants, PluginOptions};
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
        }
    }
}

impl Grants {
    /// Grants a host directory, seen by the guest at `guest` (an absolute guest path).
    pub fn dir(
        &mut self,
        host: impl Into<PathBuf>,
        guest: impl Into<String>,
        access: Access,
    ) -> &mut Self {
        self.dirs.push(DirGrant {
            host: host.into(),
            guest: guest.into(),
            access,
        });
        self
    }

    /// Grants an environment variable with a value given here.
    pub fn env(&mut self, name: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.push_env(name.into(), EnvSource::Policy, Secret::new(value));
        self
    }

    /// Grants the host's environment variable `name` under the same name; does
    /// nothing if the host does not have it.
    pub fn env_from_host(&mut self, name: impl Into<String>) -> &mut Self {
        let name = name.into();
        if let Ok(value) = std::env::var(&name) {
            self.push_env(name.clone(), EnvSource::Host(name), Secret::new(value));
        }
        self
    }

    /// Grants an environment variable whose value is a secret (never printed).
    pub fn secret(&mut self, name: impl Into<String>, value: Secret) -> &mut Self {
        self.push_env(name.into(), EnvSource::Policy, value);
        self
    }

    fn push_env(&mut self, name: String, source: EnvSource, value: Secret) {
        self.env.retain(|e| e.name != name);
        self.env.push(EnvGrant {
            name,
            source,
            value,
        });
    }

    /// Allows outgoing HTTP(S) requests that match `pattern`.
    pub fn http(&mut self, pattern: HostPattern) -> &mut Self {
        self.http.push(pattern);
        self
    }

    /// Allows raw TCP connections that match `pattern` (and turns on TCP sockets).
    pub fn tcp(&mut self, pattern: SocketPattern) -> &mut Self {
        self.tcp.push(pattern);
        self
    }

    /// Allows `wasi:sockets/ip-name-lookup` (resolving host names).
    pub fn name_lookup(&mut self, allow: bool) -> &mut Self {
        self.name_lookup = allow;
        self
    }

    /// The largest HTTP response body a call may receive, in bytes.
    pub fn max_response_bytes(&mut self, bytes: u64) -> &mut Self {
        self.max_response_bytes = bytes;
        self
    }

    /// How long one HTTP request may take until its response headers arrive.
    pub fn request_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.request_timeout = timeout;
        self
    }

    /// The granted directories.
    pub fn dirs(&self) -> &[DirGrant] {
        &self.dirs
    }

    /// The granted environment variables (values are never shown).
    pub fn env_vars(&self) -> &[EnvGrant] {
        &self.env
    }

    /// The allowed HTTP(S) destinations.
    pub fn http_hosts(&self) -> &[HostPattern] {
        &self.http
    }

    /// The allowed raw TCP destinations.
    pub fn tcp_addrs(&self) -> &[SocketPattern] {
        &self.tcp
    }

    /// Whether name lookup is allowed.
    pub fn allows_name_lookup(&self) -> bool {
        self.name_lookup
    }

    /// The HTTP response body cap.
    pub fn get_max_response_bytes(&self) -> u64 {
        self.max_response_bytes
    }

    /// The HTTP request timeout.
    pub fn get_request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// Whether nothing at all is granted.
    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty()
            && self.env.is_empty()
            && self.http.is_empty()
            && self.tcp.is_empty()
            && !self.name_lookup
    }

    /// Whether a capability is granted (clocks, randomness and the logged stdio always are).
    pub fn covers(&self, capability: Capability) -> bool {
        match capability {
            Capability::Files => !self.dirs.is_empty(),
            Capability::Environment => !self.env.is_empty(),
            Capability::Http => !self.http.is_empty(),
            Capability::Tcp => !self.tcp.is_empty(),
            Capability::NameLookup => self.name_lookup,
            Capability::Udp => false,
            Capability::Stdio | Capability::Clocks | Capability::Random | Capability::Other => true,
        }
    }

    /// A one-line summary of what is granted, without any value: for `list` and logs.
    pub fn summary(&self) -> Vec<String> {
        let mut out = Vec::new();
        for dir in &self.dirs {
            out.push(format!(
                "files {} → {} ({})",
                dir.host.display(),
                dir.guest,
                dir.access
            ));
        }
        if !self.env.is_empty() {
            let names: Vec<&str> = self.env.iter().map(|e| e.name.as_str()).collect();
            out.push(format!("env {}", names.join(", ")));
        }
        if !self.http.is_empty() {
            let hosts: Vec<String> = self.http.iter().map(ToString::to_string).collect();
            out.push(format!("http {}", hosts.join(", ")));
        }
        if !self.tcp.is_empty() {
            let addrs: Vec<String> = self.tcp.iter().map(ToString::to_string).collect();
            out.push(format!("tcp {}", addrs.join(", ")));
        }
        if self.name_lookup {
            out.push("name lookup".to_owned());
        }
        out
    }

    /// Builds the WASI context of one call: exactly these grants, nothing inherited.
    pub(crate) fn wasi_ctx(
        &self,
        stdio: &stdio::StdioLog,
        call: &Arc<CallTag>,
    ) -> Result<WasiCtx, String> {
        let mut builder = WasiCtxBuilder::new();
        builder
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .stdout(stdio.sink(stdio::Stream::Stdout))
            .stderr(stdio.sink(stdio::Stream::Stderr));
        for dir in &self.dirs {
            let perms = match dir.access {
                Access::ReadOnly => FsPerms::ReadOnly,
                Access::ReadWrite => FsPerms::ReadWrite,
            };
            builder
                .preopened_dir(&dir.host, &dir.guest, perms)
                .map_err(|e| {
                    format!(
                        "the granted directory {} cannot be opened: {e}",
                        dir.host.display()
                    )
                })?;
        }
        for env in &self.env {
            builder.env(&env.name, env.value.expose());
        }
        if !self.tcp.is_empty() {
            let allowed = Arc::new(self.tcp.clone());
            let call = Arc::clone(call);
            builder
                .allow_tcp(true)
                .socket_addr_check(move |addr, used| {
                    let ok = match used {
                        // A connect first checks the implicit bind to an ephemeral
                        // port; binding anything else (a listener) is not granted.
                        SocketAddrUse::TcpBind => addr.ip().is_unspecified() && addr.port() == 0,
                        SocketAddrUse::TcpConnect => allowed.iter().any(|p| p.allows(addr)),
                        _ => false,
                    };
                    if !ok {
                        let what = match used {
                            SocketAddrUse::TcpConnect => format!("a TCP connection to {addr}"),
                            _ => format!("a TCP socket at {addr} ({used:?})"),
                        };
                        refusals::log(&call, Capability::Tcp, "wasi:sockets/tcp", &what);
                    }
                    Box::pin(async move { ok })
                });
        }
        builder.allow_ip_name_lookup(self.name_lookup);
        Ok(builder.build())
    }
}

/// Which call a refusal or a line of output belongs to, for the log.
#[derive(Debug)]
pub(crate) struct CallTag {
    pub(crate) plugin: Arc<str>,
    pub(crate) tool: String,
    pub(crate) call_id: String,
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
        match interface {
            i if i.starts_with("wasi:filesystem/") => Self::Files,
            "wasi:cli/environment" => Self::Environment,
            i if i.starts_with("wasi:http/") => Self::Http,
            "wasi:sockets/ip-name-lookup" => Self::NameLookup,
            i if i.starts_with("wasi:sockets/udp") => Self::Udp,
            i if i.starts_with("wasi:sockets/") => Self::Tcp,
            "wasi:cli/stdin" | "wasi:cli/stdout" | "wasi:cli/stderr" => Self::Stdio,
            i if i.starts_with("wasi:cli/terminal-") => Self::Stdio,
            i if i.starts_with("wasi:clocks/") => Self::Clocks,
            i if i.starts_with("wasi:random/") => Self::Random,
            _ => Self::Other,
        }
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
}

/// One granted directory as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct DirConfig {
    /// The host directory (relative to the policy file).
    pub host: PathBuf,
    /// Where the guest sees it: an absolute guest path such as `/data`.
    pub guest: String,
    /// Allow writes (default: read-only).
    #[serde(default)]
    pub write: bool,
}

/// Where an environment variable's value comes from: exactly one of the three.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct EnvVarConfig {
    /// The value itself.
    pub value: Option<Secret>,
    /// The host environment variable to take it from.
    pub from_env: Option<String>,
    /// A file to read it from (trailing newline removed; relative to the policy file).
    pub from_file: Option<PathBuf>,
}

/// Network access as written.
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
}

fn valid_env_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['=', '\0'])
}

impl GrantsConfig {
    /// Parses a sidecar policy file's text; `path` names it in errors.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the file, the line or key, and the reason.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let config: Self = crate::config::from_toml(text, path)?;
        config.check(path, "")?;
        Ok(config)
    }

    /// Checks what can be checked without touching the file system.
    pub(crate) fn check(&self, path: &Path, prefix: &str) -> Result<(), ConfigError> {
        let error = |key: String, reason: String| ConfigError {
            path: path.to_owned(),
            key: Some(format!("{prefix}{key}")),
            reason,
        };
        for (i, dir) in self.dirs.iter().enumerate() {
            if !dir.guest.starts_with('/') {
                return Err(error(
                    format!("dirs[{i}].guest"),
                    format!(
                        "`{}` must be an absolute guest path such as `/data`",
                        dir.guest
                    ),
                ));
            }
            if dir.host.as_os_str().is_empty() {
                return Err(error(format!("dirs[{i}].host"), "must not be empty".into()));
            }
        }
        for (i, name) in self.env.iter().enumerate() {
            if !valid_env_name(name) {
                return Err(error(
                    format!("env[{i}]"),
                    format!("`{name}` is not a variable name"),
                ));
            }
        }
        for (name, source) in &self.env_vars {
            let key = format!("env_vars.{name}");
            if !valid_env_name(name) {
                return Err(error(key, "not a variable name".into()));
            }
            let given = [
                source.value.is_some(),
                source.from_env.is_some(),
                source.from_file.is_some(),
            ];
            if given.iter().filter(|g| **g).count() != 1 {
                return Err(error(
                    key,
                    "give exactly one of `value`, `from_env` or `from_file`".into(),
                ));
            }
        }
        for (i, host) in self.network.http.iter().enumerate() {
            host.parse::<HostPattern>()
                .map_err(|reason| error(format!("network.http[{i}]"), reason))?;
        }
        for (i, addr) in self.network.tcp.iter().enumerate() {
            addr.parse::<SocketPattern>()
                .map_err(|reason| error(format!("network.tcp[{i}]"), reason))?;
        }
        if self.network.max_response_bytes == Some(0) || self.network.timeout_ms == Some(0) {
            let key = if self.network.timeout_ms == Some(0) {
                "network.timeout_ms"
            } else {
                "network.max_response_bytes"
            };
            return Err(error(key.into(), "must be greater than 0".into()));
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
        let error = |key: String, reason: String| ConfigError {
            path: path.to_owned(),
            key: Some(format!("{prefix}{key}")),
            reason,
        };
        let mut grants = Grants::default();
        for (i, dir) in self.dirs.iter().enumerate() {
            let host = base.join(&dir.host);
            if !host.is_dir() {
                return Err(error(
                    format!("dirs[{i}].host"),
                    format!("{} is not a directory", host.display()),
                ));
            }
            let access = if dir.write {
                Access::ReadWrite
            } else {
                Access::ReadOnly
            };
            grants.dir(host, dir.guest.clone(), access);
        }
        for name in &self.env {
            match std::env::var(name) {
                Ok(value) => grants.push_env(
                    name.clone(),
                    EnvSource::Host(name.clone()),
                    Secret::new(value),
                ),
                Err(_) => tracing::debug!(
                    policy = %path.display(), variable = %name,
                    "granted host variable is not set; the plugin will not see it"
                ),
            }
        }
        for (name, source) in &self.env_vars {
            let key = format!("env_vars.{name}");
            if let Some(value) = &source.value {
                grants.push_env(name.clone(), EnvSource::Policy, value.clone());
            } else if let Some(var) = &source.from_env {
                match std::env::var(var) {
                    Ok(value) => grants.push_env(
                        name.clone(),
                        EnvSource::Host(var.clone()),
                        Secret::new(value),
                    ),
                    Err(_) => tracing::warn!(
                        policy = %path.display(), key = %format!("{prefix}{key}"), from_env = %var,
                        "the host has no such environment variable; the plugin will not see `{name}`"
                    ),
                }
            } else if let Some(file) = &source.from_file {
                let file = base.join(file);
                let text = std::fs::read_to_string(&file).map_err(|e| {
                    error(
                        format!("{key}.from_file"),
                        format!("cannot read {}: {e}", file.display()),
                    )
                })?;
                let value = text.strip_suffix('\n').unwrap_or(&text);
                let value = value.strip_suffix('\r').unwrap_or(value);
                grants.push_env(
                    name.clone(),
                    EnvSource::File(file.clone()),
                    Secret::new(value),
                );
            }
        }
        for host in &self.network.http {
            if let Ok(pattern) = host.parse() {
                grants.http(pattern);
            }
        }
        for addr in &self.network.tcp {
            if let Ok(pattern) = addr.parse() {
                grants.tcp(pattern);
            }
        }
        grants.name_lookup(self.network.name_lookup);
        if let Some(bytes) = self.network.max_response_bytes {
            grants.max_response_bytes(bytes);
        }
        if let Some(ms) = self.network.timeout_ms {
            grants.request_timeout(Duration::from_millis(ms));
        }
        Ok(grants)
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
