//! Outgoing HTTP(S) through `wasi:http`, checked against the plugin's host
//! allowlist before any connection is made, with a response size cap and a
//! request timeout.
//!
//! The host never follows redirects: a guest that follows one makes a new
//! request, which meets the allowlist like any other.
//!
//! Config keys: `http`, `max_response_bytes` and `timeout_ms` in `[network]`.

use std::fmt;
use std::net::IpAddr;
use std::path::Path;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::combinators::UnsyncBoxBody;
use wasmtime::component::Linker;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks, WasiHttpView};

use super::kind::Kind;
use super::secrets::{self, Masked};
use super::{CallTag, Capability, ErrorAt, Grants, GrantsConfig, NetworkConfig};
use crate::error::ConfigError;

/// The default cap on an HTTP response body, in bytes.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 10 << 20;
/// The default limit on one HTTP request, from connecting to the last byte of the headers.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

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
/// use toolhost::policy::HostPattern;
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

impl Grants {
    /// Allows outgoing HTTP(S) requests that match `pattern`.
    pub fn http(&mut self, pattern: HostPattern) -> &mut Self {
        self.http.push(pattern);
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

    /// The allowed HTTP(S) destinations.
    pub fn http_hosts(&self) -> &[HostPattern] {
        &self.http
    }

    /// The HTTP response body cap.
    pub fn get_max_response_bytes(&self) -> u64 {
        self.max_response_bytes
    }

    /// The HTTP request timeout.
    pub fn get_request_timeout(&self) -> Duration {
        self.request_timeout
    }
}

/// HTTP: outgoing requests to allow-listed hosts through `wasi:http`,
/// checked by [`HttpHooks`] on every request.
pub(super) struct Http;

impl Kind for Http {
    fn capabilities(&self) -> &'static [Capability] {
        &[Capability::Http]
    }

    fn of_import(&self, interface: &str) -> Option<Capability> {
        interface
            .starts_with("wasi:http/")
            .then_some(Capability::Http)
    }

    fn covers(&self, grants: &Grants, _capability: Capability) -> bool {
        !grants.http.is_empty()
    }

    fn grant_for(&self, _capability: Capability) -> &'static str {
        "`[network] http = [...]` in its grants"
    }

    fn check(&self, config: &GrantsConfig, at: &ErrorAt<'_>) -> Result<(), ConfigError> {
        check_hosts(&config.network, at)?;
        check_limits(&config.network, at)?;
        super::secrets::check(&config.network, at)
    }

    fn resolve(
        &self,
        config: &GrantsConfig,
        base: &Path,
        at: &ErrorAt<'_>,
        grants: &mut Grants,
    ) -> Result<(), ConfigError> {
        resolve(&config.network, grants);
        super::secrets::resolve(&config.network, base, at, grants)
    }

    /// The allowed destinations.
    fn summary(&self, grants: &Grants, out: &mut Vec<String>) {
        if !grants.http.is_empty() {
            let hosts: Vec<String> = grants.http.iter().map(ToString::to_string).collect();
            out.push(format!("http {}", hosts.join(", ")));
        }
        for secret in grants.header_secrets() {
            out.push(format!(
                "secret header {} for {}",
                secret.header(),
                secret.host()
            ));
        }
    }

    // No part of the WASI context: `wasi:http` is linked for every plugin,
    // and its hooks check each request against the grants.
}

/// Checks `network.http`.
fn check_hosts(network: &NetworkConfig, at: &ErrorAt<'_>) -> Result<(), ConfigError> {
    for (i, host) in network.http.iter().enumerate() {
        host.parse::<HostPattern>()
            .map_err(|reason| at.key(format!("network.http[{i}]"), reason))?;
    }
    Ok(())
}

/// Checks `network.max_response_bytes` and `network.timeout_ms`.
fn check_limits(network: &NetworkConfig, at: &ErrorAt<'_>) -> Result<(), ConfigError> {
    if network.max_response_bytes == Some(0) || network.timeout_ms == Some(0) {
        let key = if network.timeout_ms == Some(0) {
            "network.timeout_ms"
        } else {
            "network.max_response_bytes"
        };
        return Err(at.key(key.into(), "must be greater than 0".into()));
    }
    Ok(())
}

/// Grants `network.http` and its limits (checked before).
fn resolve(network: &NetworkConfig, grants: &mut Grants) {
    for host in &network.http {
        if let Ok(pattern) = host.parse() {
            grants.http(pattern);
        }
    }
    if let Some(bytes) = network.max_response_bytes {
        grants.max_response_bytes(bytes);
    }
    if let Some(ms) = network.timeout_ms {
        grants.request_timeout(Duration::from_millis(ms));
    }
}

/// Links `wasi:http` for every plugin: a component that does not import it
/// pays nothing for it, and one that does meets its grants' allowlist.
pub(crate) fn add_to_linker<T: WasiHttpView + 'static>(
    linker: &mut Linker<T>,
) -> wasmtime::Result<()> {
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)
}

/// The `wasi:http` hooks of one call.
pub(crate) struct HttpHooks {
    pub(crate) call: Arc<CallTag>,
    pub(crate) grants: Arc<Grants>,
}

impl HttpHooks {
    /// The hooks of a call under `grants`.
    pub(crate) fn new(call: Arc<CallTag>, grants: Arc<Grants>) -> Self {
        Self { call, grants }
    }
}

type ResponseFuture = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), Error>> + Send>,
                ),
                Error,
            >,
        > + Send,
>;

impl HttpHooks {
    /// Whether the request's destination is granted. A user part in the
    /// authority (`allowed.com@elsewhere`) is refused outright.
    fn allowed(&self, uri: &http::Uri) -> bool {
        let (Some(scheme), Some(host), Some(authority)) =
            (uri.scheme_str(), uri.host(), uri.authority())
        else {
            return false;
        };
        if authority.as_str().contains('@') {
            return false;
        }
        let port = uri.port_u16().unwrap_or_else(|| default_port(scheme));
        self.grants
            .http_hosts()
            .iter()
            .any(|pattern| pattern.allows(scheme, host, port))
    }
}

impl WasiHttpHooks for HttpHooks {
    fn send_request(
        &mut self,
        mut request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> ResponseFuture {
        let uri = request.uri();
        let destination = format!(
            "{}://{}",
            uri.scheme_str().unwrap_or("?"),
            uri.authority().map(|a| a.as_str()).unwrap_or("")
        );
        let call = &self.call;
        if !self.allowed(uri) {
            // Only scheme and authority are logged: a query may hold a key.
            super::refusals::log(
                call,
                Capability::Http,
                "wasi:http/outgoing-handler",
                &format!("an HTTP request to {destination}"),
            );
            return Box::new(async { Err(Error::HttpRequestDenied) });
        }
        if let Err(refusal) = secrets::apply(&self.grants, call, &mut request) {
            let reason = match refusal {
                secrets::Refusal::Leak => {
                    "it carries the value of a configured secret (leak check)".to_owned()
                }
                secrets::Refusal::NoValue(why) => format!("its secret header has no value: {why}"),
            };
            tracing::warn!(
                target: "toolhost::policy",
                plugin = %call.plugin, tool = %call.tool, call = %call.call_id,
                %destination, "refused an HTTP request: {reason}"
            );
            return Box::new(async { Err(Error::HttpRequestDenied) });
        }
        tracing::debug!(
            target: "toolhost::policy",
            plugin = %call.plugin, tool = %call.tool, call = %call.call_id,
            %destination, method = %request.method(), "HTTP request"
        );
        let leaks = self.grants.leaks.clone();
        if !leaks.is_empty() {
            let warn = leak_warning(call, &destination, "request body");
            let check = leaks.clone();
            request = request.map(|body| UnsyncBoxBody::new(Masked::new(body, check, warn)));
        }
        let tag = Arc::clone(call);
        let limit = self.grants.get_max_response_bytes();
        let timeout = self.grants.get_request_timeout();
        let shorter =
            |asked: Option<std::time::Duration>| Some(asked.map_or(timeout, |a| a.min(timeout)));
        let options = options.unwrap_or_default();
        let options = RequestOptions {
            connect_timeout: shorter(options.connect_timeout),
            first_byte_timeout: shorter(options.first_byte_timeout),
            between_bytes_timeout: shorter(options.between_bytes_timeout),
        };
        Box::new(async move {
            let sent = tokio::time::timeout(
                timeout,
                wasmtime_wasi_http::default_send_request(request, Some(options)),
            )
            .await;
            let (response, io) = match sent {
                Ok(result) => result?,
                Err(_elapsed) => return Err(Error::HttpResponseTimeout),
            };
            let declared = response
                .headers()
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            if declared.is_some_and(|len| len > limit) {
                return Err(Error::HttpResponseBodySize(declared));
            }
            let mut response = response.map(|body| {
                let capped = UnsyncBoxBody::new(Capped {
                    inner: UnsyncBoxBody::new(body),
                    left: limit,
                    limit,
                });
                if leaks.is_empty() {
                    capped
                } else {
                    let warn = leak_warning(&tag, &destination, "response body");
                    UnsyncBoxBody::new(Masked::new(capped, leaks.clone(), warn))
                }
            });
            if secrets::mask_headers(&leaks, response.headers_mut()) {
                leak_warning(&tag, &destination, "response headers")();
            }
            Ok((
                response,
                Box::new(io) as Box<dyn Future<Output = Result<(), Error>> + Send>,
            ))
        })
    }
}

/// The warning that a secret's value was masked in `what` of a request to
/// `destination` (never the value).
fn leak_warning(
    call: &Arc<CallTag>,
    destination: &str,
    what: &'static str,
) -> Box<dyn FnOnce() + Send> {
    let call = Arc::clone(call);
    let destination = destination.to_owned();
    Box::new(move || {
        tracing::warn!(
            target: "toolhost::policy",
            plugin = %call.plugin, tool = %call.tool, call = %call.call_id,
            %destination, "masked a configured secret's value in the {what} (leak check)"
        );
    })
}

/// A response body that fails once more than `limit` bytes have come.
struct Capped {
    inner: WasiBody,
    left: u64,
    limit: u64,
}

impl Body for Capped {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let frame = match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => frame,
            other => return other,
        };
        if let Some(data) = frame.data_ref() {
            let len = data.len() as u64;
            if len > self.left {
                self.left = 0;
                return Poll::Ready(Some(Err(Error::HttpResponseBodySize(Some(self.limit)))));
            }
            self.left -= len;
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
