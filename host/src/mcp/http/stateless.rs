//! Stateless calls: a `tools/call` POSTed without a session (2026-07-28)
//! runs on the task of the connection that carried it.
//!
//! rmcp serves each such POST as a session of its own: it reads the message
//! into its typed enum and again into a JSON value for its header checks,
//! makes the service twice (once to look up a tool schema toolhost never
//! annotates), starts a service loop with its channels on a one-shot
//! transport, and spawns the handler; the answer comes back through a
//! channel. For a trivial tool that costs a third more than a call in a
//! session (`cargo xtask bench mcp-http`). Here the same handler (rmcp's
//! `handle_request`, with its checks) runs in place, in a fresh session as
//! rmcp's would, with a peer every stateless call shares: like the one rmcp
//! makes per POST it knows the client only as the request's `_meta` says
//! (rmcp's request context reads `_meta` first), and it has nothing to send,
//! since the calls taken here send nothing but their answer.
//!
//! Only plain calls come here, those whose answer is the only message and
//! that rmcp would check no further: headers that name the revision, the
//! method and the tool exactly once and agree with the body, no `Origin`
//! (a browser's request goes through rmcp's checks), a `Host` among the
//! allowed ones, and a `_meta` that has what 2026-07-28 requires and asks
//! for no progress. Everything else goes to rmcp, which answers what is
//! wrong with it.

use std::convert::Infallible;
use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode, header};
use bytes::Bytes;
use futures_util::FutureExt as _;
use rmcp::model::{
    CallToolRequest, ClientCapabilities, ErrorCode, Extensions, Implementation,
    InitializeRequestParams, ProtocolVersion, RequestId, RequestMetaObject, ServerJsonRpcMessage,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage, serve_directly_with_ct};
use rmcp::transport::Transport;
use rmcp::{ErrorData, Peer, RoleServer};
use tokio_util::sync::CancellationToken;

use super::direct::{self, Posted, Read};
use crate::mcp::Shared;
use crate::mcp::session::Session;

/// What stateless calls share: the peer, the allowed hosts, the server's stop.
pub(in crate::mcp) struct Stateless {
    peer: Peer<RoleServer>,
    /// The allowed `Host`s: a host, and the port if one was named.
    hosts: Vec<(String, Option<u16>)>,
    stop: CancellationToken,
}

impl Stateless {
    /// Stateless calls of `shared`'s server, which allows `hosts` and stops
    /// on `stop`. The shared peer's loop ends with `stop`.
    pub(in crate::mcp) fn new(
        shared: &Arc<Shared>,
        hosts: &[String],
        stop: CancellationToken,
    ) -> Self {
        // What rmcp's stateless path tells its per-POST peer of the client.
        let client =
            InitializeRequestParams::new(ClientCapabilities::default(), Implementation::default())
                .with_protocol_version(ProtocolVersion::V_2026_07_28);
        let running = serve_directly_with_ct(
            Session::new(Arc::clone(shared), "http"),
            Silent(stop.clone()),
            Some(client),
            stop.child_token(),
        );
        let peer = running.peer().clone();
        tokio::spawn(async move {
            let _ = running.waiting().await;
        });
        Self {
            peer,
            hosts: hosts.iter().filter_map(|host| authority(host)).collect(),
            stop,
        }
    }

    /// Whether a POST without a session has the headers of a call taken
    /// here (the body is checked once read).
    pub(super) fn may_take(&self, headers: &HeaderMap) -> bool {
        direct::plain_headers(headers)
            && sole(headers, "mcp-protocol-version") == Some(ProtocolVersion::V_2026_07_28.as_str())
            && sole(headers, "mcp-method") == Some("tools/call")
            && sole(headers, "mcp-name").is_some()
            && !headers.contains_key(header::ORIGIN)
            && self.host_allowed(headers)
    }

    /// Whether the `Host` is one the server allows, as rmcp reads it.
    fn host_allowed(&self, headers: &HeaderMap) -> bool {
        let Some((host, port)) = sole(headers, header::HOST.as_str()).and_then(authority) else {
            return false;
        };
        self.hosts.iter().any(|(allowed, allowed_port)| {
            *allowed == host && allowed_port.is_none_or(|p| Some(p) == port)
        })
    }
}

/// The one value of header `name`: `None` when it is absent, repeated or
/// not text.
fn sole<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    let mut values = headers.get_all(name).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    value.to_str().ok()
}

/// A host (lowercase, without brackets) and its port, as rmcp compares them.
fn authority(text: &str) -> Option<(String, Option<u16>)> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let normal = |host: &str| host.trim_matches(['[', ']']).to_ascii_lowercase();
    Some(match axum::http::uri::Authority::try_from(text) {
        Ok(authority) => (normal(authority.host()), authority.port_u16()),
        Err(_) => (normal(text), None),
    })
}

/// Whether a stateless call fits: its `_meta` has what 2026-07-28 requires,
/// names that revision, and asks for no progress; the tool the header names
/// is the one called.
fn fits(headers: &HeaderMap, call: &CallToolRequest) -> bool {
    let Some(meta) = call.extensions.get::<RequestMetaObject>() else {
        return false;
    };
    meta.missing_required_keys(&ProtocolVersion::V_2026_07_28)
        .is_empty()
        && meta.protocol_version() == Some(ProtocolVersion::V_2026_07_28)
        && meta.get_progress_token().is_none()
        && sole(headers, "mcp-name") == Some(&*call.params.name)
}

/// Runs a stateless call here when it fits (its answer as a JSON body, as
/// rmcp answers one), else hands the request to `next` (rmcp).
pub(super) async fn serve(
    shared: &Arc<Shared>,
    stateless: &Stateless,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let (parts, bytes) = match direct::read_body(request).await {
        Posted::Read(parts, bytes) => (parts, bytes),
        Posted::Unread(request) => return next.run(request).await,
        Posted::Unreadable(response) => return response,
    };
    let pass = |parts, bytes: Bytes| {
        next.run(axum::extract::Request::from_parts(
            parts,
            axum::body::Body::from(bytes),
        ))
    };
    let (id, call) = match direct::read(&bytes) {
        Some(Read::Call(id, call)) if fits(&parts.headers, &call) => (id, call),
        _ => return pass(parts, bytes).await,
    };
    let session = Session::new(Arc::clone(shared), "http");
    let mut extensions = Extensions::new();
    extensions.insert(parts);
    let (token, mut answer) = crate::mcp::request::answer(
        session,
        stateless.peer.clone(),
        id.clone(),
        call,
        extensions,
    );
    let message = match (&mut answer).now_or_never() {
        Some(message) => message,
        None => {
            // The call runs on a task of its own, cancelled if the client
            // hangs up (this future is dropped) or the server stops.
            let cancel = token.drop_guard();
            let running = tokio::spawn(answer);
            let message = tokio::select! {
                joined = running => joined.unwrap_or_else(|err| {
                    tracing::error!(%err, "a stateless call's task failed");
                    Some(failed(&id, "the call failed inside the MCP server"))
                }),
                // Not a 503: the call may have partly run, so a balancer
                // must not send it again on its own. (The call answers so
                // itself when the drain cuts it; this is for what is left.)
                () = stateless.stop.cancelled() => Some(ServerJsonRpcMessage::error(
                    crate::mcp::calls::cut_short(),
                    Some(id.clone()),
                )),
            };
            drop(cancel);
            message
        }
    };
    let message = message.unwrap_or_else(|| failed(&id, "the call was cancelled"));
    let mut response = direct::json_response(&message);
    if response.status() == StatusCode::OK {
        *response.status_mut() = status(&message);
    }
    response
}

/// The JSON-RPC error answering call `id`, which ended without its answer.
fn failed(id: &RequestId, why: &str) -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::error(
        ErrorData::internal_error(why.to_owned(), None),
        Some(id.clone()),
    )
}

/// The HTTP status of a stateless answer, as rmcp gives it: an error that
/// says the request itself is wrong is a 400, an unknown method a 404.
fn status(message: &ServerJsonRpcMessage) -> StatusCode {
    let ServerJsonRpcMessage::Error(error) = message else {
        return StatusCode::OK;
    };
    match error.error.code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

/// The transport of the shared peer: it receives nothing and has nowhere to
/// send (the calls that share it send nothing but their answers, which go
/// back here). It ends when the server stops.
struct Silent(CancellationToken);

impl Transport<RoleServer> for Silent {
    type Error = Infallible;

    fn send(
        &mut self,
        message: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        tracing::debug!(
            ?message,
            "a stateless call's message had no stream to go on"
        );
        std::future::ready(Ok(()))
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        let stop = self.0.clone();
        async move {
            stop.cancelled().await;
            None
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        std::future::ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_compare_as_rmcp_compares_them() {
        assert_eq!(
            authority("LocalHost:8080"),
            Some(("localhost".into(), Some(8080)))
        );
        assert_eq!(authority("[::1]:3000"), Some(("::1".into(), Some(3000))));
        assert_eq!(authority("::1"), Some(("::1".into(), None)));
        assert_eq!(authority(" "), None);
    }

    #[test]
    fn a_header_named_twice_has_no_sole_value() {
        let mut headers = HeaderMap::new();
        headers.append("mcp-method", "tools/call".parse().unwrap());
        assert_eq!(sole(&headers, "mcp-method"), Some("tools/call"));
        headers.append("mcp-method", "tools/call".parse().unwrap());
        assert_eq!(sole(&headers, "mcp-method"), None);
    }
}
