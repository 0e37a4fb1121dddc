//! Resumable streams (streamable HTTP, SEP-1699): a session's request stream
//! that drops before its end (the client's connection broke, or the server
//! closed it so the client polls) can be resumed with a `GET` naming its last
//! event in `Last-Event-ID`, on the replica that holds the session.
//!
//! [`Resumable`] wraps rmcp's in-process session manager. It reads every
//! request stream of a session to its end itself, into a bounded replay
//! buffer, and hands the client a [`Reader`] of that buffer; rmcp's own cache
//! drops a response that finds its stream gone, ours keeps it. While no
//! reader is attached the call keeps running, for the resume window; a
//! stream nobody resumes in that time is given up (its call cancelled
//! through the request's [`Hangup`]), and a finished stream's events are kept
//! that long after its end. Only the caller that made a request may resume
//! its stream ([`refuse_foreign`]).
//!
//! Bounds: a stream keeps its last [`MAX_EVENTS`] events and at most
//! [`MAX_STREAM_BYTES`] of them (the response, the newest, always); a session
//! keeps at most [`MAX_DETACHED_PER_SESSION`] streams nobody reads, and all
//! sessions at most [`MAX_DETACHED_BYTES`] of them: past either, the oldest
//! is given up.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Waker;
use std::time::{Duration, Instant};

use axum::response::IntoResponse as _;
use futures_util::future::Either;
use futures_util::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, GetExtensions, RequestId, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::session::{
    RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};
use tokio::sync::Notify;

use crate::mcp::transport::Hangup;
use crate::metrics::Metrics;
use crate::toolset::Principal;

/// The most events a stream keeps for a resume (the oldest go first).
pub(in crate::mcp) const MAX_EVENTS: usize = 1024;
/// The most bytes of events a stream keeps for a resume.
pub(in crate::mcp) const MAX_STREAM_BYTES: usize = 8 << 20;
/// The most streams nobody reads that one session keeps.
pub(in crate::mcp) const MAX_DETACHED_PER_SESSION: usize = 16;
/// The most bytes of streams nobody reads, over all sessions.
pub(in crate::mcp) const MAX_DETACHED_BYTES: usize = 64 << 20;

/// The `retry` interval a stream's priming event gives: how long a client
/// waits before it resumes a stream that ended early.
pub(in crate::mcp) const RETRY: Duration = Duration::from_secs(3);

/// Why a call stops when its stream is given up, for the log.
const NOT_RESUMED: &str = "its stream dropped and no client resumed it in time (stream_resume_ms)";

/// How streams are resumed: the window, and when the server closes a stream
/// so its client polls.
#[derive(Debug, Clone, Copy)]
pub(in crate::mcp) struct ResumeOptions {
    /// How long a dropped stream may be resumed; zero: never.
    pub(in crate::mcp) window: Duration,
    /// Ends a reader once it has been open this long (SEP-1699 polling).
    pub(in crate::mcp) close_after: Option<Duration>,
}

/// A stream's key: its session, and rmcp's number for the HTTP request.
pub(in crate::mcp) type Key = (SessionId, u64);

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub(in crate::mcp) enum ResumeError {
    /// rmcp's session manager failed.
    #[error(transparent)]
    Session(#[from] LocalSessionManagerError),
    /// The stream `Last-Event-ID` names is not kept (any more).
    #[error(
        "stream {0} of this session cannot be resumed: it was read to its end, or given up \
         (nobody resumed it in time), or never existed"
    )]
    Gone(String),
}

/// rmcp's in-process session manager, with request streams that can be
/// resumed.
pub(in crate::mcp) struct Resumable {
    inner: LocalSessionManager,
    streams: Arc<Streams>,
    options: ResumeOptions,
}

impl Resumable {
    /// `inner`'s sessions, with their streams kept in `streams`.
    pub(in crate::mcp) fn new(
        inner: LocalSessionManager,
        streams: Arc<Streams>,
        options: ResumeOptions,
    ) -> Self {
        Self {
            inner,
            streams,
            options,
        }
    }
}

impl Resumable {
    /// The session held here whose [`public_name`](crate::state::sessions::public_name)
    /// is `name`.
    pub(in crate::mcp) async fn find(&self, name: &str) -> Option<SessionId> {
        let sessions = self.inner.sessions.read().await;
        let public_name = crate::state::sessions::public_name;
        sessions.keys().find(|id| public_name(id) == name).cloned()
    }
}

impl SessionManager for Resumable {
    type Error = ResumeError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        Ok(self.inner.create_session().await?)
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        mut message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        if let ClientJsonRpcMessage::Request(request) = &mut message {
            let opened = crate::mcp::transport::Opened(id.clone());
            request.request.extensions_mut().insert(opened);
        }
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.streams.close_session(id);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        mut message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        if self.options.window.is_zero() {
            let stream = self.inner.create_stream(id, message).await?;
            return Ok(Either::Right(Either::Right(stream)));
        }
        let call = match &message {
            ClientJsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        let (hangup, owner) = match &mut message {
            ClientJsonRpcMessage::Request(request) => request
                .request
                .extensions_mut()
                .get_mut::<axum::http::request::Parts>()
                .map(take_over)
                .unwrap_or_default(),
            _ => (None, None),
        };
        let mut inner = Box::pin(self.inner.create_stream(id, message).await?);
        // The priming event, already sent: its ID names the HTTP request.
        let Some(first) = inner.next().await else {
            return Ok(Either::Right(Either::Left(futures_util::stream::empty())));
        };
        let request = first
            .event_id
            .as_deref()
            .and_then(parse_event_id)
            .and_then(|(_, request)| request);
        let key = request.map(|request| (id.clone(), request));
        let reader = self.streams.keep(
            key.zip(call.as_ref()),
            hangup,
            owner,
            first,
            inner,
            self.options,
        );
        Ok(Either::Left(reader))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        match parse_event_id(&last_event_id) {
            // A request's stream: ours, or gone.
            Some((index, Some(request))) => {
                let Some(replay) = self.streams.get(&(id.clone(), request)) else {
                    return Err(ResumeError::Gone(last_event_id));
                };
                tracing::debug!(session = %id, request, after = index, "a client resumed its stream");
                self.streams.metrics.stream_resumed();
                Ok(Either::Left(Reader::attach(
                    replay,
                    self.streams.clone(),
                    index + 1,
                    self.options.close_after,
                )))
            }
            // The session's own stream (the `GET` one): rmcp's.
            _ => Ok(Either::Right(self.inner.resume(id, last_event_id).await?)),
        }
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        Ok(self.inner.restore_session(id).await?)
    }
}

/// Takes the decision of when the client has hung up from the transport
/// (the request's stream can be resumed, so its dropping is no hangup by
/// itself), and reads who made the request, from the parts of its HTTP
/// request.
pub(in crate::mcp) fn take_over(
    parts: &mut axum::http::request::Parts,
) -> (Option<Hangup>, Option<(String, String)>) {
    let owner = parts
        .extensions
        .get::<Arc<Principal>>()
        .map(|p| (p.issuer.clone(), p.subject.clone()));
    let hangup = parts
        .extensions
        .get::<Hangup>()
        .map(|hangup| hangup.defer(NOT_RESUMED));
    if let Some(hangup) = &hangup {
        parts.extensions.insert(hangup.clone());
    }
    (hangup, owner)
}

/// rmcp's event ID, `INDEX/REQUEST` (a request's stream) or `INDEX` (the
/// session's own), without a fleet's stamp (`.TAG…`, see [`super::route`]).
fn parse_event_id(id: &str) -> Option<(usize, Option<u64>)> {
    let id = id.split_once('.').map_or(id, |(own, _)| own);
    match id.split_once('/') {
        Some((index, request)) => Some((index.parse().ok()?, Some(request.parse().ok()?))),
        None => Some((id.parse().ok()?, None)),
    }
}

/// Refuses a `GET` that resumes a stream another caller's request opened:
/// `404`, as for a stream that does not exist.
pub(in crate::mcp) fn refuse_foreign(
    streams: &Streams,
    request: &axum::extract::Request,
) -> Option<axum::response::Response> {
    let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok());
    let session: SessionId = header("mcp-session-id")?.into();
    let (_, stream) = parse_event_id(header("last-event-id")?)?;
    let replay = streams.get(&(session, stream?))?;
    let principal = request.extensions().get::<Arc<Principal>>();
    let theirs = principal.map(|p| (p.issuer.as_str(), p.subject.as_str()));
    let owner = replay.owner.as_ref().map(|(i, s)| (i.as_str(), s.as_str()));
    if owner == theirs {
        return None;
    }
    tracing::warn!(
        target: "toolhost::auth",
        "refused to resume a stream another caller's request opened"
    );
    Some(
        (
            axum::http::StatusCode::NOT_FOUND,
            "no stream of yours has that Last-Event-ID\n",
        )
            .into_response(),
    )
}

/// The streams that can be resumed, of every session.
pub(in crate::mcp) struct Streams {
    map: Mutex<HashMap<Key, Arc<Replay>>>,
    metrics: Arc<Metrics>,
    /// This replica's tag, in a fleet: its streams' event IDs carry it.
    tag: Option<Arc<str>>,
}

impl Streams {
    /// No streams yet; resumes and streams given up are counted in
    /// `metrics`; `tag`: this replica's in a fleet ([`super::route::stamp`]).
    pub(in crate::mcp) fn new(metrics: Arc<Metrics>, tag: Option<Arc<str>>) -> Self {
        Self {
            map: Mutex::default(),
            metrics,
            tag,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Key, Arc<Replay>>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps a request's stream, opened by `first` (its priming event, whose
    /// ID names it) and then `events`, so that it can be resumed under `key`
    /// (with the JSON-RPC ID of the call it answers):
    /// read to its end by a task of its own, whoever reads it; the reader
    /// returned is the client's first. `hangup`: cancelled when the stream is
    /// given up.
    pub(in crate::mcp) fn keep(
        self: &Arc<Self>,
        key: Option<(Key, &RequestId)>,
        hangup: Option<Hangup>,
        owner: Option<(String, String)>,
        first: ServerSseMessage,
        events: impl Stream<Item = ServerSseMessage> + Send + Unpin + 'static,
        options: ResumeOptions,
    ) -> Reader {
        let stamp = match (&self.tag, &key) {
            (Some(tag), Some((_, call))) => super::route::stamp(tag, call),
            _ => String::new(),
        };
        let key = key.map(|(key, _)| key);
        let replay = Arc::new(Replay::new(key.clone(), hangup, owner, stamp));
        replay.push(first);
        if let Some(key) = key {
            self.insert(key, replay.clone());
        }
        tokio::spawn(forward(
            self.clone(),
            replay.clone(),
            events,
            options.window,
        ));
        Reader::attach(replay, self.clone(), 0, options.close_after)
    }

    fn get(&self, key: &Key) -> Option<Arc<Replay>> {
        self.lock().get(key).cloned()
    }

    fn insert(&self, key: Key, replay: Arc<Replay>) {
        self.lock().insert(key, replay);
    }

    /// Forgets `key`'s stream, if it still is `replay`.
    fn remove(&self, key: &Key, replay: &Arc<Replay>) {
        let mut map = self.lock();
        if map.get(key).is_some_and(|kept| Arc::ptr_eq(kept, replay)) {
            map.remove(key);
        }
    }

    /// Gives up every stream of a session that ended.
    fn close_session(&self, session: &SessionId) {
        let gone: Vec<Arc<Replay>> = {
            let mut map = self.lock();
            let keys: Vec<Key> = map.keys().filter(|(s, _)| s == session).cloned().collect();
            keys.iter().filter_map(|key| map.remove(key)).collect()
        };
        for replay in gone {
            replay.give_up(&self.metrics, "its session ended");
        }
    }

    /// Gives up the oldest streams nobody reads while a session keeps more
    /// than [`MAX_DETACHED_PER_SESSION`], or all more than
    /// [`MAX_DETACHED_BYTES`].
    fn trim(&self) {
        let gone: Vec<Arc<Replay>> = {
            let mut map = self.lock();
            let mut detached: Vec<(Instant, usize, Key)> = map
                .iter()
                .filter_map(|(key, replay)| {
                    let state = replay.lock();
                    state.detached_at.map(|at| (at, state.bytes, key.clone()))
                })
                .collect();
            detached.sort_by_key(|(at, _, _)| *at);
            let mut total: usize = detached.iter().map(|(_, bytes, _)| bytes).sum();
            let mut per_session: HashMap<SessionId, usize> = HashMap::new();
            for (_, _, (session, _)) in &detached {
                *per_session.entry(session.clone()).or_default() += 1;
            }
            let mut gone = Vec::new();
            for (_, bytes, key) in detached {
                let count = per_session.entry(key.0.clone()).or_default();
                if total <= MAX_DETACHED_BYTES && *count <= MAX_DETACHED_PER_SESSION {
                    continue;
                }
                total -= bytes;
                *count -= 1;
                if let Some(replay) = map.remove(&key) {
                    gone.push(replay);
                }
            }
            gone
        };
        for replay in gone {
            replay.give_up(&self.metrics, "too many streams nobody reads are kept");
        }
    }
}

/// One request's stream: its events so far, and who reads them.
struct Replay {
    state: Mutex<State>,
    /// Wakes the stream's forwarder when a reader comes or goes.
    changed: Notify,
    /// Where the stream is kept (none: it cannot be resumed).
    key: Option<Key>,
    /// Cancels the request's call when the stream is given up.
    hangup: Option<Hangup>,
    /// The issuer and subject of the caller whose request it answers.
    owner: Option<(String, String)>,
    /// What its event IDs end with in a fleet (else empty).
    stamp: String,
}

struct State {
    /// Each event with its index (rmcp's, from its ID) and size.
    events: VecDeque<(usize, ServerSseMessage, usize)>,
    bytes: usize,
    /// The index the next event without an ID gets.
    next_index: usize,
    /// The response (or the session's end) has been read from rmcp.
    done: bool,
    /// The attached reader's number (0: none), and the last number given.
    reader: u64,
    readers: u64,
    /// Since when no reader is attached, while the stream is not read to its end.
    detached_at: Option<Instant>,
    /// Given up, or read to its end: no longer kept.
    gone: bool,
    /// The attached reader, waiting for an event.
    waker: Option<Waker>,
}

impl Replay {
    fn new(
        key: Option<Key>,
        hangup: Option<Hangup>,
        owner: Option<(String, String)>,
        stamp: String,
    ) -> Self {
        Self {
            key,
            stamp,
            state: Mutex::new(State {
                events: VecDeque::new(),
                bytes: 0,
                next_index: 0,
                done: false,
                reader: 0,
                readers: 0,
                detached_at: None,
                gone: false,
                waker: None,
            }),
            changed: Notify::new(),
            hangup,
            owner,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps an event (dropping the oldest over the bounds) and wakes the reader.
    fn push(&self, mut event: ServerSseMessage) {
        let size = event
            .message
            .as_ref()
            .and_then(|m| serde_json::to_string(&**m).ok())
            .map_or(0, |text| text.len());
        let mut state = self.lock();
        if state.gone {
            return;
        }
        let index = event
            .event_id
            .as_deref()
            .and_then(parse_event_id)
            .map_or(state.next_index, |(index, _)| index);
        if let Some(id) = &mut event.event_id {
            id.push_str(&self.stamp);
        }
        state.next_index = index + 1;
        state.bytes += size;
        state.events.push_back((index, event, size));
        while state.events.len() > 1
            && (state.events.len() > MAX_EVENTS || state.bytes > MAX_STREAM_BYTES)
        {
            if let Some((_, _, size)) = state.events.pop_front() {
                state.bytes -= size;
            }
        }
        if let Some(waker) = state.waker.take() {
            waker.wake();
        }
    }

    /// rmcp has nothing more for this stream.
    fn finish(&self) {
        let mut state = self.lock();
        state.done = true;
        if let Some(waker) = state.waker.take() {
            waker.wake();
        }
    }

    /// When the stream is given up unless a reader comes: the end of the
    /// window, while none is attached.
    fn expiry(&self, window: Duration) -> Option<Instant> {
        self.lock().detached_at.map(|at| at + window)
    }

    /// Forgets the stream in `streams`.
    fn forget(self: &Arc<Self>, streams: &Streams) {
        if let Some(key) = &self.key {
            streams.remove(key, self);
        }
    }

    /// Stops keeping the stream; a call still running on it is cancelled.
    fn give_up(&self, metrics: &Metrics, why: &str) {
        metrics.stream_given_up();
        let running = {
            let mut state = self.lock();
            state.gone = true;
            state.reader = 0;
            state.detached_at = None;
            if let Some(waker) = state.waker.take() {
                waker.wake();
            }
            !state.done
        };
        if running && let Some(hangup) = &self.hangup {
            tracing::debug!("a stream was given up: {why}");
            hangup.cancel();
        }
        self.changed.notify_one();
    }
}

/// Reads rmcp's stream of a request into its replay buffer, to its end,
/// whoever reads it; gives the stream up when nobody has for `window`.
async fn forward(
    streams: Arc<Streams>,
    replay: Arc<Replay>,
    mut inner: impl Stream<Item = ServerSseMessage> + Send + Unpin + 'static,
    window: Duration,
) {
    let mut open = true;
    loop {
        if replay.lock().gone && !open {
            return;
        }
        let expiry = replay.expiry(window);
        let expired = async move {
            match expiry {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            event = inner.next(), if open => match event {
                Some(event) => replay.push(event),
                None => {
                    replay.finish();
                    open = false;
                }
            },
            () = replay.changed.notified() => {}
            () = expired => {
                // Unless a reader came just now.
                if replay.expiry(window).is_some_and(|at| at <= Instant::now()) {
                    replay.forget(&streams);
                    replay.give_up(&streams.metrics, NOT_RESUMED);
                }
            }
        }
    }
}

mod reader;
#[cfg(test)]
mod tests;

pub(in crate::mcp) use reader::Reader;
