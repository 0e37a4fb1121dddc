//! Sockets: raw TCP to allow-listed addresses and name lookup, only when
//! granted; UDP never. Every socket address the guest uses meets the grant's
//! address check, and a refused socket is logged where the call hits it.
//!
//! Config keys: `tcp` and `name_lookup` in `[network]`.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use wasmtime::component::{Linker, Resource};
use wasmtime::{Result, StoreContextMut};
use wasmtime_wasi::WasiCtxBuilder;
use wasmtime_wasi::p2::bindings::sockets::ip_name_lookup::{self, ResolveAddressStream};
use wasmtime_wasi::p2::bindings::sockets::network::{self, ErrorCode, IpAddressFamily, Network};
use wasmtime_wasi::p2::bindings::sockets::tcp_create_socket;
use wasmtime_wasi::p2::{TcpSocket, UdpSocket};
use wasmtime_wasi::sockets::{SocketAddrUse, WasiSocketsView as _};

use super::kind::Kind;
use super::refusals::log;
use super::{CallState, CallTag, Capability, ErrorAt, Grants, GrantsConfig, NetworkConfig};
use crate::error::ConfigError;

/// The socket interfaces' version in wasmtime-wasi's linker; a guest's
/// import of any `0.2.x` resolves to these definitions.
const SOCKETS: &str = "0.2.12";

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

impl Grants {
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

    /// The allowed raw TCP destinations.
    pub fn tcp_addrs(&self) -> &[SocketPattern] {
        &self.tcp
    }

    /// Whether name lookup is allowed.
    pub fn allows_name_lookup(&self) -> bool {
        self.name_lookup
    }
}

/// Sockets: raw TCP to allow-listed addresses, name lookup, never UDP.
pub(super) struct Sockets;

impl Kind for Sockets {
    fn capabilities(&self) -> &'static [Capability] {
        &[Capability::Tcp, Capability::Udp, Capability::NameLookup]
    }

    fn of_import(&self, interface: &str) -> Option<Capability> {
        match interface {
            "wasi:sockets/ip-name-lookup" => Some(Capability::NameLookup),
            i if i.starts_with("wasi:sockets/udp") => Some(Capability::Udp),
            i if i.starts_with("wasi:sockets/") => Some(Capability::Tcp),
            _ => None,
        }
    }

    fn covers(&self, grants: &Grants, capability: Capability) -> bool {
        match capability {
            Capability::Tcp => !grants.tcp.is_empty(),
            Capability::NameLookup => grants.name_lookup,
            _ => false,
        }
    }

    fn grant_for(&self, capability: Capability) -> &'static str {
        match capability {
            Capability::Tcp => "`[network] tcp = [\"IP:PORT\"]` in its grants",
            Capability::NameLookup => "`[network] name_lookup = true` in its grants",
            _ => "nothing: UDP is never granted",
        }
    }

    fn check(&self, config: &GrantsConfig, at: &ErrorAt<'_>) -> Result<(), ConfigError> {
        check(&config.network, at)
    }

    fn resolve(
        &self,
        config: &GrantsConfig,
        _base: &Path,
        _at: &ErrorAt<'_>,
        grants: &mut Grants,
    ) -> Result<(), ConfigError> {
        resolve(&config.network, grants);
        Ok(())
    }

    /// The allowed addresses and name lookup.
    fn summary(&self, grants: &Grants, out: &mut Vec<String>) {
        if !grants.tcp.is_empty() {
            let addrs: Vec<String> = grants.tcp.iter().map(ToString::to_string).collect();
            out.push(format!("tcp {}", addrs.join(", ")));
        }
        if grants.name_lookup {
            out.push("name lookup".to_owned());
        }
    }

    fn add_to_wasi(
        &self,
        grants: &Grants,
        builder: &mut WasiCtxBuilder,
        call: &Arc<CallTag>,
    ) -> Result<(), String> {
        add_to_wasi(grants, builder, call);
        Ok(())
    }
}

/// Checks `network.tcp`.
fn check(network: &NetworkConfig, at: &ErrorAt<'_>) -> Result<(), ConfigError> {
    for (i, addr) in network.tcp.iter().enumerate() {
        addr.parse::<SocketPattern>()
            .map_err(|reason| at.key(format!("network.tcp[{i}]"), reason))?;
    }
    Ok(())
}

/// Grants `network.tcp` and `network.name_lookup` (checked before).
fn resolve(network: &NetworkConfig, grants: &mut Grants) {
    for addr in &network.tcp {
        if let Ok(pattern) = addr.parse() {
            grants.tcp(pattern);
        }
    }
    grants.name_lookup(network.name_lookup);
}

/// Turns sockets on in a call's WASI context as far as granted: TCP with an
/// address check when some address is, name lookup when granted, UDP never.
fn add_to_wasi(grants: &Grants, builder: &mut WasiCtxBuilder, call: &Arc<CallTag>) {
    builder
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false);
    if !grants.tcp.is_empty() {
        let allowed = Arc::new(grants.tcp.clone());
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
                    log(&call, Capability::Tcp, "wasi:sockets/tcp", &what);
                }
                Box::pin(async move { ok })
            });
    }
    builder.allow_ip_name_lookup(grants.name_lookup);
}

/// Puts logging in front of the socket functions that refuse a call without
/// a grant. Each still answers as wasmtime-wasi does (it is called for the
/// answer); only the log line is added.
pub(crate) fn add_to_linker<T: CallState>(linker: &mut Linker<T>) -> Result<()> {
    linker.allow_shadowing(true);
    linker
        .instance(&format!("wasi:sockets/tcp-create-socket@{SOCKETS}"))?
        .func_wrap(
            "create-tcp-socket",
            |mut store: StoreContextMut<'_, T>, (family,): (IpAddressFamily,)| {
                let state = store.data_mut();
                if !state.grants().covers(Capability::Tcp) {
                    log(
                        state.call_tag(),
                        Capability::Tcp,
                        "wasi:sockets/tcp-create-socket",
                        "a TCP socket",
                    );
                }
                let mut view = state.sockets();
                let socket: Result<Resource<TcpSocket>, ErrorCode> =
                    match tcp_create_socket::Host::create_tcp_socket(&mut view, family) {
                        Ok(socket) => Ok(socket),
                        Err(error) => Err(network::Host::convert_error_code(&mut view, error)?),
                    };
                Ok((socket,))
            },
        )?;
    linker
        .instance(&format!("wasi:sockets/udp-create-socket@{SOCKETS}"))?
        .func_wrap(
            "create-udp-socket",
            |mut store: StoreContextMut<'_, T>, (_family,): (IpAddressFamily,)| {
                let state = store.data_mut();
                log(
                    state.call_tag(),
                    Capability::Udp,
                    "wasi:sockets/udp-create-socket",
                    "a UDP socket",
                );
                // What wasmtime-wasi answers too: UDP is never allowed.
                let socket: Result<Resource<UdpSocket>, ErrorCode> = Err(ErrorCode::AccessDenied);
                Ok((socket,))
            },
        )?;
    linker
        .instance(&format!("wasi:sockets/ip-name-lookup@{SOCKETS}"))?
        .func_wrap(
            "resolve-addresses",
            |mut store: StoreContextMut<'_, T>, (net, name): (Resource<Network>, String)| {
                let state = store.data_mut();
                if !state.grants().allows_name_lookup() {
                    // The name is the guest's; it stays out of the message.
                    log(
                        state.call_tag(),
                        Capability::NameLookup,
                        "wasi:sockets/ip-name-lookup",
                        "a name lookup",
                    );
                }
                let mut view = state.sockets();
                let stream: Result<Resource<ResolveAddressStream>, ErrorCode> =
                    match ip_name_lookup::Host::resolve_addresses(&mut view, net, name) {
                        Ok(stream) => Ok(stream),
                        Err(error) => Err(network::Host::convert_error_code(&mut view, error)?),
                    };
                Ok((stream,))
            },
        )?;
    linker.allow_shadowing(false);
    Ok(())
}
