//! The HTTP server under the streamable HTTP transport: accepts connections up
//! to a cap (refusing the rest with a 503 and a log line), closes connections
//! that send no request head in time or go idle, and tells a call when the
//! connection its answer was to go on has dropped. A stop drains: calls
//! still running may finish (bounded) before the sessions end.

mod admit;
pub(super) mod direct;
pub(super) mod fleet;
pub(super) mod options;
pub(super) mod resume;
pub(super) mod route;
pub(super) mod stateless;

use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use bytes::Bytes;
use http_body::Frame;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::auth::Authenticator;
use super::transport::Hangup;

/// The connection limits of the HTTP server.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) max_connections: usize,
    /// The most of them one peer address may hold.
    pub(crate) max_connections_per_peer: usize,
    pub(crate) header_read_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) drain_timeout: Duration,
}

/// Serves `app` on `listener` until `shutdown` completes, then drains: stops
/// accepting connections, refuses new calls and waits (up to
/// `drain_timeout`) for the running ones, while open connections still carry
/// their answers, probes and the client's other messages; then cancels `stop`
/// (the sessions, and so the calls left; connections close as their current
/// request ends) and waits (a bounded while) for connections to end.
pub(crate) async fn serve(
    listener: TcpListener,
    app: axum::Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
    stop: CancellationToken,
    calls: &super::Calls,
) -> std::io::Result<()> {
    let open = Arc::new(Semaphore::new(limits.max_connections));
    let mut refusals = admit::Refusals::default();
    let peers = admit::Peers::new(limits.max_connections_per_peer);
    let mut shutdown = pin!(shutdown);
    loop {
        let (stream, addr) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of file descriptors, mostly: wait for some to close.
                    tracing::warn!(%err, "cannot accept an HTTP connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let Ok(permit) = open.clone().try_acquire_owned() else {
            refusals.refuse(stream, addr, admit::Over::All(limits.max_connections));
            continue;
        };
        let Some(share) = peers.take(addr.ip()) else {
            refusals.refuse(stream, addr, admit::Over::Peer(peers.limit()));
            continue;
        };
        let app = app.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            connection(stream, addr, app, limits, stop).await;
            drop(share);
            drop(permit);
        });
    }
    // New connections are refused from here on.
    drop(listener);
    drain_calls(calls, limits.drain_timeout).await;
    stop.cancel();
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    if tokio::time::timeout(CLOSE_GRACE, open.acquire_many(all))
        .await
        .is_err()
    {
        tracing::warn!("stopped with HTTP connections still open");
    }
    Ok(())
}

/// How long a drain whose calls have finished still waits for their answers
/// to be sent. Short: a POST response that is a long-lived stream (not a
/// call's answer) only ends with its session, so this wait ends by timing out.
const ANSWER_GRACE: Duration = Duration::from_secs(1);

/// How long a stop waits for connections to close once the sessions have
/// ended (each closes as its current response ends): a stop ends within
/// `drain_timeout` and a few seconds.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// How long the calls cut at the drain deadline have to end (and a task to
/// record that it did).
const CUT_GRACE: Duration = Duration::from_secs(2);

/// Refuses new calls, then waits up to `timeout` for the running ones to
/// finish, then cuts what is left (see [`super::Calls::cut`]). Logs when it
/// begins and how it ended (target `toolhost::serve`).
async fn drain_calls(calls: &super::Calls, timeout: Duration) {
    let running = calls.drain();
    if running == 0 {
        // Answers just sent may still be on their way out.
        let _ = tokio::time::timeout(ANSWER_GRACE, calls.answered()).await;
        tracing::info!(target: "toolhost::serve", "drained: no calls were running");
        return;
    }
    tracing::info!(
        target: "toolhost::serve",
        running,
        "draining: {running} call(s) running; new calls are refused; waiting up to {timeout:?} (drain_timeout_ms)"
    );
    let start = Instant::now();
    if tokio::time::timeout(timeout, calls.idle()).await.is_ok() {
        // The last answers go out after their calls' handlers return.
        if tokio::time::timeout(ANSWER_GRACE, calls.answered())
            .await
            .is_err()
        {
            tracing::debug!(target: "toolhost::serve", "drain: some POST responses still open");
        }
        let refused = calls.refused();
        tracing::info!(
            target: "toolhost::serve",
            elapsed_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
            refused,
            "drained: every running call finished; {refused} new call(s) refused meanwhile"
        );
    } else {
        let left = calls.running();
        let refused = calls.refused();
        tracing::warn!(
            target: "toolhost::serve",
            cut = left,
            refused,
            "drain deadline reached after {timeout:?} (drain_timeout_ms): {left} call(s) still running are cut short (their guests stopped, each answered that it may be sent again); {refused} new call(s) refused meanwhile"
        );
        calls.cut();
        // Each cut call answers at once (its guest's future dropped); a
        // task records how it ended first.
        if tokio::time::timeout(CUT_GRACE, calls.idle()).await.is_err() {
            tracing::warn!(
                target: "toolhost::serve",
                running = calls.running(),
                "drain: some cut calls did not end within {CUT_GRACE:?}"
            );
        }
        let _ = tokio::time::timeout(ANSWER_GRACE, calls.answered()).await;
    }
}

/// Serves one connection: hyper's header-read timeout covers the wait for
/// every request head (the first and those of a kept-alive connection); the
/// idle watch closes a connection nothing was read from or written to for
/// `idle_timeout` (a slow body, a client that stopped reading).
async fn connection(
    stream: TcpStream,
    addr: SocketAddr,
    app: axum::Router,
    limits: Limits,
    stop: CancellationToken,
) {
    // TCP_NODELAY: a response goes out in several writes (headers, then the
    // SSE event); with Nagle's algorithm the later ones wait for the client's
    // delayed ACK (~40 ms on Linux) whenever the earlier one is unacknowledged.
    if let Err(err) = stream.set_nodelay(true) {
        tracing::debug!(%addr, %err, "cannot set TCP_NODELAY");
    }
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Watched {
        inner: stream,
        activity: activity.clone(),
    });
    let service = TowerToHyperService::new(app);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    let mut conn = pin!(builder.serve_connection(io, service));
    let mut stopping = false;
    loop {
        let idle_at = activity.last() + limits.idle_timeout;
        tokio::select! {
            result = conn.as_mut() => {
                match result {
                    Err(err) if err.is_timeout() => tracing::info!(
                        %addr,
                        "closed an HTTP connection: no complete request head within {:?} (header_read_timeout)",
                        limits.header_read_timeout
                    ),
                    Err(err) => tracing::debug!(%addr, %err, "HTTP connection failed"),
                    Ok(()) => {}
                }
                return;
            }
            () = stop.cancelled(), if !stopping => {
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
            () = tokio::time::sleep_until(idle_at.into()) => {
                if activity.last().elapsed() >= limits.idle_timeout {
                    tracing::info!(
                        %addr,
                        "closed an HTTP connection: nothing sent or received for {:?} (idle_timeout)",
                        limits.idle_timeout
                    );
                    return;
                }
            }
        }
    }
}

/// When a connection last moved bytes.
struct Activity {
    start: Instant,
    millis: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Self {
            start: Instant::now(),
            millis: AtomicU64::new(0),
        }
    }

    fn touch(&self) {
        let millis = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.millis.store(millis, Ordering::Relaxed);
    }

    fn last(&self) -> Instant {
        self.start + Duration::from_millis(self.millis.load(Ordering::Relaxed))
    }
}

/// A stream that records activity.
struct Watched {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, data);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Attaches a [`Hangup`] to a POST request, cancelled when the response's
/// body is dropped before its end (the client went away; unless the stream
/// can be resumed, see [`resume`]), and wraps the response's body to notice
/// that; counts the response until its body is sent (or dropped), so that a
/// drain lets answers out. A `GET` that resumes another caller's stream is
/// refused.
pub(super) async fn watch_disconnect(
    shared: Arc<super::Shared>,
    streams: Arc<resume::Streams>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if request.method() == axum::http::Method::GET
        && let Some(refused) = resume::refuse_foreign(&streams, &request)
    {
        return refused;
    }
    if request.method() != axum::http::Method::POST {
        return next.run(request).await;
    }
    let mut request = match refuse_while_draining(&shared, request).await {
        Ok(request) => request,
        Err(refused) => return refused,
    };
    let answer = shared.calls.answer();
    let hangup = Hangup::new(CancellationToken::new(), "the client's connection dropped");
    request.extensions_mut().insert(hangup.clone());
    let response = next.run(request).await;
    response.map(|body| {
        Body::new(Guarded {
            inner: body,
            hangup: Some(hangup),
            _answer: answer,
        })
    })
}

/// While a stop drains, a POSTed `tools/call` is refused before it runs:
/// HTTP 503 (`Retry-After: 1`) with the JSON-RPC error calls get then, so
/// a balancer may send it to another replica (nginx: `proxy_next_upstream
/// http_503 non_idempotent`, docs/deploy.md) as it cannot have run. Every
/// other request is served as usual.
async fn refuse_while_draining(
    shared: &super::Shared,
    request: axum::extract::Request,
) -> Result<axum::extract::Request, axum::response::Response> {
    if !shared.calls.is_draining() || request.uri().path() != "/mcp" {
        return Ok(request);
    }
    let (parts, bytes) = match direct::read_body(request).await {
        direct::Posted::Read(parts, bytes) => (parts, bytes),
        direct::Posted::Unread(request) => return Ok(request),
        direct::Posted::Unreadable(response) => return Err(response),
    };
    let Some(id) = call_id(&bytes) else {
        return Ok(axum::extract::Request::from_parts(parts, Body::from(bytes)));
    };
    shared.calls.refuse();
    let refusal = rmcp::model::ServerJsonRpcMessage::error(super::calls::refusal(), Some(id));
    let mut response = direct::json_response(&refusal);
    *response.status_mut() = axum::http::StatusCode::SERVICE_UNAVAILABLE;
    response.headers_mut().insert(
        axum::http::header::RETRY_AFTER,
        axum::http::HeaderValue::from_static("1"),
    );
    Err(response)
}

/// The ID of a JSON-RPC `tools/call` request, if `body` is one.
fn call_id(body: &[u8]) -> Option<rmcp::model::RequestId> {
    let message: serde_json::Value = serde_json::from_slice(body).ok()?;
    if message.get("method")?.as_str()? != "tools/call" {
        return None;
    }
    serde_json::from_value(message.get("id")?.clone()).ok()
}

/// A response body that signals its hangup when dropped before its end.
struct Guarded {
    inner: Body,
    hangup: Option<Hangup>,
    /// Counts this answer until the body is dropped.
    _answer: super::calls::Counted,
}

impl http_body::Body for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) {
            self.hangup = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        if let Some(hangup) = self.hangup.take() {
            hangup.signal();
        }
    }
}

/// Authenticates a request (its principal goes into its extensions, or it is
/// answered `401`); answers a session's end the way clients expect.
pub(super) async fn authorize(
    authenticator: Arc<dyn Authenticator>,
    shared: Arc<super::Shared>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let request = match super::auth::authenticate(&*authenticator, &shared.metrics, request).await {
        Ok(request) => request,
        Err(refused) => return refused,
    };
    let ending = request.method() == axum::http::Method::DELETE;
    let mut response = next.run(request).await;
    // rmcp answers a session's DELETE with 202; clients (the Python SDK among
    // them) expect 200 or 204 and warn on anything else.
    if ending && response.status() == axum::http::StatusCode::ACCEPTED {
        *response.status_mut() = axum::http::StatusCode::NO_CONTENT;
        *response.body_mut() = axum::body::Body::empty();
    }
    response
}

/// The answer of `GET /readyz`: 200 once the first load of the plugins has
/// finished and the state store answers; 503 while the load runs, while a
/// stop drains (a load balancer then sends no more), and while the store
/// (Redis) cannot be reached.
pub(super) async fn readiness(shared: &super::Shared) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    let unavailable = |why: String| (StatusCode::SERVICE_UNAVAILABLE, why).into_response();
    if shared.calls.is_draining() {
        return unavailable("draining\n".to_owned());
    }
    if !shared.is_ready() {
        return unavailable("loading plugins\n".to_owned());
    }
    // Calls that keep state need the store: a replica that cannot reach it
    // is not ready (its other calls would work, but a balancer cannot tell).
    if let Some(engine) = &shared.engine
        && let Err(err) = engine.state().ping().await
    {
        return unavailable(format!("state store unreachable: {err}\n"));
    }
    (StatusCode::OK, "ready\n").into_response()
}

/// The answer of `GET /metrics`.
pub(super) fn metrics(shared: &super::Shared) -> axum::response::Response {
    use axum::response::IntoResponse;
    let text = shared
        .metrics
        .encode(shared.calls.running(), shared.engine.as_ref());
    (
        [(
            axum::http::header::CONTENT_TYPE,
            crate::metrics::CONTENT_TYPE,
        )],
        text,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without TCP_NODELAY on accepted connections, a response's later
    /// writes waited for the client's delayed ACK: ~40 ms stalls per call
    /// (the `cluster` bench: median 818 µs, p99 43 ms; with it 285 / 451 µs).
    #[tokio::test]
    async fn accepted_connections_send_at_once() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (accepted, addr) = listener.accept().unwrap();
        // The same socket, to read its options once `connection` has it.
        let watch = accepted.try_clone().unwrap();
        assert!(!watch.nodelay().unwrap());
        accepted.set_nonblocking(true).unwrap();
        let stream = TcpStream::from_std(accepted).unwrap();
        let app = axum::Router::new().route("/", axum::routing::get(|| async { "ok" }));
        let limits = Limits {
            max_connections: 1,
            max_connections_per_peer: 1,
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(10),
            drain_timeout: Duration::from_secs(1),
        };
        let stop = CancellationToken::new();
        let served = tokio::spawn(connection(stream, addr, app, limits, stop.clone()));
        let answer = tokio::task::spawn_blocking(move || {
            use std::io::{Read, Write};
            client
                .write_all(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
                .unwrap();
            let mut answer = String::new();
            client.read_to_string(&mut answer).unwrap();
            answer
        })
        .await
        .unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(watch.nodelay().unwrap());
        stop.cancel();
        served.await.unwrap();
    }
}
