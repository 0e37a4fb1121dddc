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
//! - **TCP**: [`super::sockets`] (creating a socket without a TCP grant, and
//!   the socket address check: connecting to an address not granted);
//! - **UDP**: [`super::sockets`] (never granted);
//! - **name lookup**: [`super::sockets`] (`resolve-addresses` without the grant);
//! - **files**: not as a request. The guest resolves a path against its
//!   preopened directories itself, so an open outside all of them fails
//!   inside the guest ("No such file or directory") before it reaches the
//!   host; when the call then fails with an error naming such a path,
//!   [`files`](super::files) adds that the path is outside the grants (and
//!   which key grants one) to the error, and logs it.

use std::sync::atomic::{AtomicU16, Ordering};

use super::{CallTag, Capability};

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
    super::kind::kind_of(capability).map_or("its grants", |kind| kind.grant_for(capability))
}
