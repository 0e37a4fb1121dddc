//! Refusals at the point a call hits them, logged once per call and capability.
//!
//! A plugin may import files and sockets without using them (every Python,
//! JavaScript, Go and C runtime does), so an ungranted import is only noted at
//! load (at debug). What is worth a warning is a call that actually tries:
//! this module logs it where the request is refused, naming the plugin, the
//! tool, the interface and the capability that would allow it.
//!
//! Bounded: a guest that retries a refused request in a loop gets one warning
//! per call and capability; the repeats go to debug.
//!
//! Where each refusal is seen:
//! - **HTTP**: the `wasi:http` hooks ([`super::http`]), per request;
//! - **TCP**: here (creating a socket without a TCP grant), and the socket
//!   address check (connecting to an address not granted);
//! - **UDP**: here (never granted);
//! - **name lookup**: here (`resolve-addresses` without the grant);
//! - **files**: nowhere. Without a file grant the guest has no preopened
//!   directory, so an open fails inside the guest before it reaches the host.

use std::sync::atomic::{AtomicU16, Ordering};

use wasmtime::component::{Linker, Resource};
use wasmtime::{Result, StoreContextMut};
use wasmtime_wasi::p2::bindings::sockets::ip_name_lookup::{self, ResolveAddressStream};
use wasmtime_wasi::p2::bindings::sockets::network::{self, ErrorCode, IpAddressFamily, Network};
use wasmtime_wasi::p2::bindings::sockets::tcp_create_socket;
use wasmtime_wasi::p2::{TcpSocket, UdpSocket};
use wasmtime_wasi::sockets::WasiSocketsView as _;

use super::{CallTag, Capability};
use crate::plugin::state::PluginState;

/// The socket interfaces' version in wasmtime-wasi's linker; a guest's
/// import of any `0.2.x` resolves to these definitions.
const SOCKETS: &str = "0.2.12";

/// The capabilities a call has been refused so far (to warn once each): one
/// bit per [`Capability`], so a call pays no lock and no allocation for it.
#[derive(Debug, Default)]
pub(crate) struct Refused(AtomicU16);

// One bit per capability: `Other` is the last.
const _: () = assert!((Capability::Other as u16) < 16);

impl Refused {
    /// Records a refusal; true if it is the call's first for `capability`.
    fn first(&self, capability: Capability) -> bool {
        let bit = 1 << capability as u16;
        self.0.fetch_or(bit, Ordering::Relaxed) & bit == 0
    }
}

/// Logs that `call` was refused `capability` through `interface`: a warning
/// the first time in the call, debug after that. `what` says what was asked
/// (a destination, an address); it must hold nothing secret.
pub(crate) fn log(call: &CallTag, capability: Capability, interface: &str, what: &str) {
    let grant = grant_for(capability);
    if call.refused.first(capability) {
        tracing::warn!(
            target: "toolhost::policy",
            plugin = %call.plugin, tool = %call.tool, call = %call.call_id,
            interface, capability = %capability,
            "refused {what}: the plugin is not granted {capability} (to allow it: {grant}); \
             further refusals of this call are logged at debug"
        );
    } else {
        tracing::debug!(
            target: "toolhost::policy",
            plugin = %call.plugin, tool = %call.tool, call = %call.call_id,
            interface, capability = %capability,
            "refused {what}"
        );
    }
}

/// Where the grant that allows a capability is written.
fn grant_for(capability: Capability) -> &'static str {
    match capability {
        Capability::Http => "`[network] http = [...]` in its grants",
        Capability::Tcp => "`[network] tcp = [\"IP:PORT\"]` in its grants",
        Capability::NameLookup => "`[network] name_lookup = true` in its grants",
        Capability::Files => "`[[dirs]]` in its grants",
        Capability::Udp => "nothing: UDP is never granted",
        _ => "its grants",
    }
}

/// Puts logging in front of the socket functions that refuse a call without
/// a grant. Each still answers as wasmtime-wasi does (it is called for the
/// answer); only the log line is added.
pub(crate) fn add_to_linker(linker: &mut Linker<PluginState>) -> Result<()> {
    linker.allow_shadowing(true);
    linker
        .instance(&format!("wasi:sockets/tcp-create-socket@{SOCKETS}"))?
        .func_wrap(
            "create-tcp-socket",
            |mut store: StoreContextMut<'_, PluginState>, (family,): (IpAddressFamily,)| {
                let state = store.data_mut();
                if !state.http_hooks.grants.covers(Capability::Tcp) {
                    log(
                        &state.call,
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
            |mut store: StoreContextMut<'_, PluginState>, (_family,): (IpAddressFamily,)| {
                let state = store.data_mut();
                log(
                    &state.call,
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
            |mut store: StoreContextMut<'_, PluginState>,
             (net, name): (Resource<Network>, String)| {
                let state = store.data_mut();
                if !state.http_hooks.grants.allows_name_lookup() {
                    // The name is the guest's; it stays out of the message.
                    log(
                        &state.call,
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
