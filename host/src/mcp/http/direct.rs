//! Direct calls: a `tools/call` POSTed in an initialized 2025-11-25 session
//! runs on the task of the connection that carried it (and so does a
//! stateless 2026-07-28 one: [`stateless`](super::stateless)).
//!
//! rmcp hands such a call from the HTTP service to the session's worker task,
//! from there to the session's service loop, which spawns a task for the
//! handler; the answer goes back the same way to a stream the response body
//! reads, with a channel and a task wake-up at each step. For a trivial tool
//! those hops cost several times the sandboxed call (`cargo xtask bench
//! mcp-http`). Here the same handler (rmcp's `handle_request`, with its
//! checks) is called in place: a call that finishes in its first poll (most
//! do) is answered at once, as a JSON body; one that does not is answered on
//! a request stream that can be resumed like rmcp's ([`resume`](super::resume)).
//!
//! Only calls whose answer is the only message of their stream go this way;
//! rmcp keeps every other message, and a call that could send more on its
//! stream: one with a `progressToken`, one in a session whose client can be
//! asked things (elicitation, sampling: a gated tool's approval, a guest's
//! question), one that names its protocol version in `_meta`, and any request
//! whose headers rmcp would check beyond what is checked here. A
//! `notifications/cancelled` for a direct call cancels it (and still goes to
//! rmcp); a `DELETE` ends them, and only the session's own caller may send
//! one. rmcp's session ends when no message reaches it for the session
//! idle timeout: a call is left to rmcp when rmcp has seen none of the
//! session's requests for half of it.

use std::collections::HashMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::IntoResponse as _;
use bytes::Bytes;
use futures_util::{FutureExt as _, Stream, StreamExt as _};
use http_body_util::BodyExt as _;
use rmcp::model::{
    CallToolRequest, Extensions, RequestId, RequestMetaObject, ServerJsonRpcMessage,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::resume::{self, ResumeOptions, Streams};
use crate::mcp::Shared;
use crate::mcp::session::{Session, WeakSession};
use crate::toolset::Principal;

/// The largest body read here (rmcp's own limit).
const MAX_BODY: usize = 4 << 20;
/// How often an open stream of a direct call sends a keep-alive comment.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// Direct calls' stream numbers start here, far above rmcp's (which count
/// a session's HTTP requests from 0), so a `Last-Event-ID` names one stream.
const FIRST_STREAM: u64 = 1 << 48;

/// The initialized HTTP sessions, by session ID, for direct calls.
#[derive(Default)]
pub(in crate::mcp) struct Sessions {
    map: Mutex<HashMap<SessionId, Arc<Entry>>>,
    /// The last stream number given to a direct call.
    streams: AtomicU64,
}

/// A session direct calls can run in.
struct Entry {
    /// The session's ID (rmcp's), which names its direct calls' streams.
    id: SessionId,
    session: WeakSession,
    /// Milliseconds since `epoch` when rmcp last saw one of its requests.
    seen_by_rmcp: AtomicU64,
    epoch: Instant,
    /// Direct calls running on a task, by request ID, for a
    /// `notifications/cancelled` to find.
    running: Mutex<HashMap<RequestId, CancellationToken>>,
}

impl Entry {
    fn rmcp_saw_it(&self) {
        let now = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.seen_by_rmcp.store(now, Ordering::Relaxed);
    }

    /// How long since rmcp last saw one of the session's requests.
    fn unseen_for(&self) -> Duration {
        let seen = Duration::from_millis(self.seen_by_rmcp.load(Ordering::Relaxed));
        self.epoch.elapsed().saturating_sub(seen)
    }

    fn running(&self) -> MutexGuard<'_, HashMap<RequestId, CancellationToken>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Cancels the direct call `request`, if it runs.
    fn cancel(&self, request: &RequestId) {
        if let Some(token) = self.running().remove(request) {
            tracing::info!(%request, "cancelled");
            token.cancel();
        }
    }
}

impl Sessions {
    fn map(&self) -> MutexGuard<'_, HashMap<SessionId, Arc<Entry>>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Direct calls may run in `session`, named `id` by rmcp (called once
    /// its client has sent `notifications/initialized`).
    pub(in crate::mcp) fn register(&self, id: &str, session: &Session) {
        let id: SessionId = id.into();
        let entry = Arc::new(Entry {
            id: id.clone(),
            session: session.downgrade(),
            seen_by_rmcp: AtomicU64::new(0),
            epoch: Instant::now(),
            running: Mutex::default(),
        });
        let mut map = self.map();
        // Sessions that ended leave their entry: swept as the map grows.
        if map.len() >= 64 && map.len().is_power_of_two() {
            map.retain(|_, entry| entry.session.is_alive());
        }
        map.insert(id, entry);
    }

    /// Whether `principal` may use the session `id`, if it is held here.
    pub(in crate::mcp) fn is_owned_by(&self, id: &str, principal: &Principal) -> Option<bool> {
        let session = self.get(id)?.session.upgrade()?;
        Some(session.is_owned_by(principal))
    }

    /// The session `id`, if it is held here.
    pub(in crate::mcp) fn session(&self, id: &str) -> Option<Session> {
        self.get(id)?.session.upgrade()
    }

    fn get(&self, id: &str) -> Option<Arc<Entry>> {
        self.map().get(id).cloned()
    }

    /// Cancels the direct call `request` of session `id`, if it runs here.
    pub(in crate::mcp) fn cancel(&self, id: &str, request: &RequestId) {
        if let Some(entry) = self.get(id) {
            entry.cancel(request);
        }
    }

    /// Forgets the session `id` (it ended).
    pub(in crate::mcp) fn remove(&self, id: &str) {
        self.map().remove(id);
    }
}

/// How direct calls run: the request streams they may need, rmcp's
/// session idle timeout, and what stateless calls share.
#[derive(Clone)]
pub(in crate::mcp) struct Options {
    pub(in crate::mcp) streams: Arc<Streams>,
    pub(in crate::mcp) resume: ResumeOptions,
    pub(in crate::mcp) session_idle_timeout: Duration,
    /// What calls without a session share.
    pub(in crate::mcp) stateless: Arc<super::stateless::Stateless>,
}

/// The middleware: runs a POSTed `tools/call` of a registered session
/// directly when it can, and one without a session as
/// [`stateless`](super::stateless) says; hands everything else to `next`
/// (rmcp).
pub(in crate::mcp) async fn serve(
    shared: Arc<Shared>,
    options: Options,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let session_id = request
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok());
    if request.uri().path() != "/mcp" {
        return next.run(request).await;
    }
    let Some(session_id) = session_id else {
        if request.method() == Method::POST && options.stateless.may_take(request.headers()) {
            return super::stateless::serve(&shared, &options.stateless, request, next).await;
        }
        return next.run(request).await;
    };
    let Some(entry) = shared.direct.get(session_id) else {
        return next.run(request).await;
    };
    if request.method() == Method::DELETE {
        // Only its caller ends a session (rmcp would end anyone's).
        let principal = request.extensions().get::<Arc<Principal>>();
        if let (Some(session), Some(principal)) = (entry.session.upgrade(), principal)
            && !session.is_owned_by(principal)
        {
            tracing::warn!(
                target: "toolhost::auth",
                "refused to end an MCP session another caller opened"
            );
            return super::fleet::not_yours();
        }
        // The session ends: so do its direct calls, as rmcp's would.
        shared.direct.remove(session_id);
        for token in entry.running().values() {
            token.cancel();
        }
    }
    let fresh = entry.unseen_for() < options.session_idle_timeout / 2;
    if request.method() != Method::POST || !fresh || !plain_headers(request.headers()) {
        entry.rmcp_saw_it();
        return next.run(request).await;
    }
    let (parts, bytes) = match read_body(request).await {
        Posted::Read(parts, bytes) => (parts, bytes),
        Posted::Unread(request) => {
            entry.rmcp_saw_it();
            return next.run(request).await;
        }
        Posted::Unreadable(response) => return response,
    };
    let pass = |parts, bytes: Bytes| {
        entry.rmcp_saw_it();
        next.run(axum::extract::Request::from_parts(parts, Body::from(bytes)))
    };
    let Some(message) = read(&bytes) else {
        return pass(parts, bytes).await;
    };
    let (id, call) = match message {
        Read::Call(id, call) => (id, call),
        Read::Cancelled(id) => {
            entry.cancel(&id);
            return pass(parts, bytes).await;
        }
    };
    let Some(session) = entry.session.upgrade() else {
        return pass(parts, bytes).await;
    };
    let Some(peer) = session
        .peer()
        .filter(|peer| fits(peer, &parts.headers, &call))
        .cloned()
    else {
        return pass(parts, bytes).await;
    };
    let call = Call {
        session,
        peer,
        parts,
        id,
        request: call,
    };
    run(&shared, &options, &entry, call).await
}

/// A POST, its body read or not.
pub(super) enum Posted {
    /// Its head, and its whole body.
    Read(axum::http::request::Parts, Bytes),
    /// Untouched: it declares no length, or one over rmcp's bound (rmcp's
    /// to refuse).
    Unread(axum::extract::Request),
    /// Its body could not be read: the answer.
    Unreadable(axum::response::Response),
}

/// Reads a POST's body when it declares a length within rmcp's bound.
pub(super) async fn read_body(request: axum::extract::Request) -> Posted {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_none_or(|length| length > MAX_BODY) {
        return Posted::Unread(request);
    }
    let (parts, body) = request.into_parts();
    match http_body_util::Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => Posted::Read(parts, collected.to_bytes()),
        Err(err) => {
            tracing::debug!(%err, "could not read an MCP request's body");
            Posted::Unreadable(
                (
                    StatusCode::BAD_REQUEST,
                    "could not read the request's body\n",
                )
                    .into_response(),
            )
        }
    }
}

/// Whether a POST's headers need no more checks than those made here:
/// JSON in, JSON or SSE accepted without weights, and no SEP-2243 headers
/// but `Mcp-Method` and `Mcp-Name` (checked against the body later).
pub(super) fn plain_headers(headers: &HeaderMap) -> bool {
    let json_in = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
        });
    let accept = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim);
    let (mut json, mut sse, mut weighted) = (false, false, false);
    for range in accept {
        weighted |= range.contains(';');
        json |= range.eq_ignore_ascii_case("application/json");
        sse |= range.eq_ignore_ascii_case("text/event-stream");
    }
    let param_headers = headers
        .keys()
        .any(|name| name.as_str().starts_with("mcp-param-"));
    json_in && json && sse && !weighted && !param_headers
}

/// Whether a call of a session with this client can run directly: its
/// answer will be the only message on its stream, and rmcp would check
/// nothing more of it. The client can be asked nothing (no elicitation, no
/// sampling), the call wants no progress, does not name a protocol version,
/// and the headers that name a version, method or tool agree with the
/// session and the body.
fn fits(peer: &Peer<RoleServer>, headers: &HeaderMap, call: &CallToolRequest) -> bool {
    if peer.is_transport_closed() {
        return false;
    }
    let Some(info) = peer.peer_info() else {
        return false;
    };
    let asks = info.capabilities.elicitation.is_some() || info.capabilities.sampling.is_some();
    let meta = call.extensions.get::<RequestMetaObject>();
    let progress = meta.is_some_and(|meta| meta.get_progress_token().is_some());
    let names_version = meta.is_some_and(|meta| meta.protocol_version().is_some());
    let header = |name: &str| headers.get(name).map(|v| v.to_str().ok());
    let agrees = |name: &str, value: &str| header(name).is_none_or(|v| v == Some(value));
    !asks
        && !progress
        && !names_version
        && agrees("mcp-protocol-version", info.protocol_version.as_str())
        && agrees("mcp-method", "tools/call")
        && agrees("mcp-name", &call.params.name)
}

/// A message a direct call cares about.
pub(super) enum Read {
    /// A `tools/call` request: its ID, and the request as rmcp reads it.
    Call(RequestId, CallToolRequest),
    /// A `notifications/cancelled` of this request ID.
    Cancelled(RequestId),
}

/// Reads a POST's body: `None` for anything rmcp should read.
pub(super) fn read(bytes: &[u8]) -> Option<Read> {
    let Ok(Value::Object(mut map)) = serde_json::from_slice::<Value>(bytes) else {
        return None;
    };
    if map.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return None;
    }
    match map.get("method").and_then(Value::as_str)? {
        "tools/call" => {
            let id = map.get("id")?.clone();
            let (id, call) = crate::mcp::request::call_request(&id, &mut map)?.ok()?;
            Some(Read::Call(id, call))
        }
        "notifications/cancelled" if !map.contains_key("id") => {
            let id = map.get("params")?.get("requestId")?;
            let id: RequestId = serde_json::from_value(id.clone()).ok()?;
            Some(Read::Cancelled(id))
        }
        _ => None,
    }
}

/// A call to run directly.
struct Call {
    session: Session,
    /// The session's client.
    peer: Peer<RoleServer>,
    /// Its HTTP request's parts (headers, and what the layers before
    /// attached: the principal, the hangup).
    parts: axum::http::request::Parts,
    id: RequestId,
    request: CallToolRequest,
}

/// Runs one call here; answers it as JSON when it finishes in its first
/// poll, else on a request stream that can be resumed.
async fn run(
    shared: &Arc<Shared>,
    options: &Options,
    entry: &Arc<Entry>,
    call: Call,
) -> axum::response::Response {
    let Call {
        session,
        peer,
        mut parts,
        id,
        request,
    } = call;
    let resumable = !options.resume.window.is_zero();
    let (hangup, owner) = if resumable {
        resume::take_over(&mut parts)
    } else {
        (None, None)
    };
    let mut extensions = Extensions::new();
    extensions.insert(parts);
    let (token, mut answer) =
        crate::mcp::request::answer(session, peer, id.clone(), request, extensions);
    if let Some(message) = (&mut answer).now_or_never() {
        // Nobody could cancel it yet: it has its answer.
        return message.map_or_else(
            || StatusCode::ACCEPTED.into_response(),
            |m| json_response(&m),
        );
    }
    entry.running().insert(id.clone(), token);
    let call = id.clone();
    let running = Arc::clone(entry);
    let finished = answer.map(move |message| {
        running.running().remove(&id);
        message
    });
    if !resumable {
        // The call runs on (on a task of its own) until it sees the client
        // hang up: the response's body dropped.
        let answer = tokio::spawn(finished);
        let events = futures_util::stream::once(answer).filter_map(|message| {
            let event = message.ok().flatten().map(ServerSseMessage::from_message);
            std::future::ready(event)
        });
        return sse_response(events);
    }
    let number = shared.direct.streams.fetch_add(1, Ordering::Relaxed) + FIRST_STREAM;
    let priming = ServerSseMessage::priming(format!("0/{number}"), resume::RETRY);
    let events = futures_util::stream::once(finished).filter_map(move |message| {
        let event = message.map(|message| ServerSseMessage::new(format!("1/{number}"), message));
        std::future::ready(event)
    });
    let reader = options.streams.keep(
        Some(((entry.id.clone(), number), &call)),
        hangup,
        owner,
        priming,
        Box::pin(events),
        options.resume,
    );
    sse_response(reader)
}

pub(super) fn json_response(message: &ServerJsonRpcMessage) -> axum::response::Response {
    match serde_json::to_vec(message) {
        Ok(body) => (
            [(header::CONTENT_TYPE, "application/json")],
            Body::from(body),
        )
            .into_response(),
        Err(err) => {
            tracing::error!(%err, "could not write an MCP answer");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// A stream of events as a `text/event-stream` response, with a keep-alive
/// comment while nothing comes.
fn sse_response(
    events: impl Stream<Item = ServerSseMessage> + Send + 'static,
) -> axum::response::Response {
    let body = Sse {
        events: Box::pin(events),
        keep_alive: tokio::time::interval_at(tokio::time::Instant::now() + KEEP_ALIVE, KEEP_ALIVE),
    };
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        [("x-accel-buffering", "no")],
        Body::from_stream(body),
    )
        .into_response()
}

/// SSE framing of a stream of events.
struct Sse {
    events: Pin<Box<dyn Stream<Item = ServerSseMessage> + Send>>,
    keep_alive: tokio::time::Interval,
}

impl Stream for Sse {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.events.poll_next_unpin(cx) {
            Poll::Ready(Some(event)) => {
                self.keep_alive.reset();
                Poll::Ready(Some(Ok(frame(&event))))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => match self.keep_alive.poll_tick(cx) {
                Poll::Ready(_) => Poll::Ready(Some(Ok(Bytes::from_static(b":\n\n")))),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

/// One SSE event, as rmcp frames it: `data`, then `id` and `retry`.
fn frame(event: &ServerSseMessage) -> Bytes {
    let mut out = String::from("data: ");
    if let Some(message) = &event.message {
        match serde_json::to_string(&**message) {
            Ok(text) => out.push_str(&text),
            Err(err) => tracing::error!(%err, "could not write an MCP message"),
        }
    }
    out.push('\n');
    if let Some(id) = &event.event_id {
        out.push_str("id: ");
        out.push_str(id);
        out.push('\n');
    }
    if let Some(retry) = event.retry {
        out.push_str(&format!("retry: {}\n", retry.as_millis()));
    }
    out.push('\n');
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_read(bytes: &[u8]) -> bool {
        read(bytes).is_some()
    }

    #[test]
    fn only_plain_calls_and_cancellations_are_read() {
        assert!(is_read(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{}}}"#
        ));
        assert!(is_read(
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}"#
        ));
        // rmcp reads the rest, and answers what is wrong with it.
        assert!(!is_read(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#
        ));
        assert!(!is_read(
            br#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"add"}}"#
        ));
        assert!(!is_read(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#
        ));
        assert!(!is_read(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","_meta":3}}"#
        ));
        assert!(!is_read(
            br#"[{"jsonrpc":"2.0","id":1,"method":"tools/call"}]"#
        ));
    }

    #[test]
    fn weighted_or_partial_accept_headers_are_left_to_rmcp() {
        let headers = |accept: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
            headers.insert(header::ACCEPT, accept.parse().unwrap());
            headers
        };
        assert!(plain_headers(&headers(
            "application/json, text/event-stream"
        )));
        assert!(!plain_headers(&headers("application/json")));
        assert!(!plain_headers(&headers(
            "application/json, text/event-stream;q=0"
        )));
        let mut with_param = headers("application/json, text/event-stream");
        with_param.insert("mcp-param-a", "1".parse().unwrap());
        assert!(!plain_headers(&with_param));
    }
}
