//! The MCP revision a request speaks, resolved once per request and handed
//! down: the one place that knows what differs between the revisions served.

use rmcp::RoleServer;
use rmcp::model::ProtocolVersion;
use rmcp::service::RequestContext;

/// A revision of MCP, as far as serving differs between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Revision {
    /// 2025-11-25 (and older): a session from `initialize`; the server asks
    /// its client in the call (an elicitation request).
    Sessions,
    /// 2026-07-28 and later: sessionless; the server asks by answering
    /// `InputRequiredResult`, and the client's retry carries the answer
    /// (Multi Round-Trip Requests, SEP-2322).
    Sessionless,
}

impl Revision {
    /// The revision of this request.
    pub(super) fn of(request: &RequestContext<RoleServer>) -> Self {
        let sessionless = request
            .protocol_version()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        if sessionless {
            Self::Sessionless
        } else {
            Self::Sessions
        }
    }

    /// Whether a call's invocation, when none is named, is the call's own
    /// (no session to share one).
    pub(super) fn call_is_its_invocation(self) -> bool {
        self == Self::Sessionless
    }

    /// Whether the server asks its client by answering the call and reading
    /// the answer from its retry, rather than by a request within the call.
    pub(super) fn asks_by_retry(self) -> bool {
        self == Self::Sessionless
    }
}
