//! What a 2025-11-25 session's client sends for a call running on another
//! replica reaches that replica (issue 37): its answer to a question the
//! call asked (a confirmation or a guest's `elicitation/create`), and its
//! `notifications/cancelled`.
//!
//! A replica numbers the requests it sends a client from 0, as every replica
//! does, so each tags them: [`Tagged`] sends request `n` as `"TAG.n"`, `TAG`
//! being the replica's, and reads an answer to `"TAG.n"` as one to `n`.
//! [`Routed`] (the session manager) hands an answer tagged for another
//! replica to that replica over the state store's bus (`rt:TAG`), and a
//! cancellation to every replica (`sessions`), each of which cancels the
//! call if it runs it. Messages name the session by a digest of its ID (the
//! bus is no place for the ID, a bearer secret).
//!
//! The bus delivers at most once: an answer lost (its replica gone, or
//! Redis reconnecting) leaves the call waiting for its confirmation
//! deadline, which then fails it clearly.
//!
//! The listener also hears that a session's settings changed (its
//! `logging/setLevel`, `resources/subscribe`), and has the session's copy
//! here load them ([`settings`]).
//!
//! A request's stream stays on the replica that runs the call, and so does
//! its resumption: each replica numbers a session's streams from 0 too, so
//! [`stamp`] adds its tag (and the call's JSON-RPC ID) to the stream's
//! event IDs. A `GET` resuming a stream of another replica is never joined
//! to a stream here: while that replica lives the client is sent back to
//! retry (rmcp's empty stream: through round robin it reaches the holder on
//! a later try); once it is gone (nobody hears its channel), the client is
//! answered a JSON-RPC error for its call, which ended with the replica.

use std::sync::Arc;

use futures_util::Stream;
use futures_util::future::Either;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ErrorData, RequestId, ServerJsonRpcMessage,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::{
    RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};
use rmcp::{RoleServer, transport::Transport};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::resume::{Resumable, ResumeError};
use crate::mcp::Shared;
use crate::mcp::features::logging::{LogLine, send_line};
use crate::mcp::session::Session;
use crate::mcp::session::settings::{self, CHANNEL as SETTINGS, LOGS};
use crate::state::StateStore;
use crate::state::bus::BusMessage;
use crate::state::sessions::public_name;

/// The channel every replica hears: cancellations.
const EVERYONE: &str = "sessions";

/// A new tag for this replica (random: replicas need no names of their own).
pub(in crate::mcp) fn new_tag() -> Arc<str> {
    crate::mcp::approval::random_id()[..TAG_LEN].into()
}

/// How many hex digits a replica's tag has.
const TAG_LEN: usize = 12;

/// A replica's own channel: answers to the requests it sent.
fn own_channel(tag: &str) -> String {
    format!("rt:{tag}")
}

/// The request ID `n` of the replica tagged `tag`, as sent to the client.
fn tagged(tag: &str, n: i64) -> RequestId {
    RequestId::String(format!("{tag}.{n}").into())
}

/// The replica's tag and number in a request ID this host sent, if it is one.
fn untagged(id: &RequestId) -> Option<(&str, i64)> {
    let RequestId::String(id) = id else {
        return None;
    };
    let (tag, n) = id.split_once('.')?;
    Some((tag, n.parse().ok()?))
}

/// How a request stream's event ID (rmcp's `INDEX/REQUEST`) reaches the
/// client in a fleet: with the tag of the replica that holds the stream
/// and, when it is short, the JSON-RPC ID of the call it answers:
/// `INDEX/REQUEST.TAG[.nNUMBER|.sSTRING]`.
pub(in crate::mcp) fn stamp(tag: &str, call: &RequestId) -> String {
    match call {
        RequestId::Number(n) => format!(".{tag}.n{n}"),
        RequestId::String(s)
            if s.len() <= MAX_STAMPED_ID
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') =>
        {
            format!(".{tag}.s{s}")
        }
        RequestId::String(_) => format!(".{tag}"),
    }
}

/// The longest string JSON-RPC ID an event ID carries.
const MAX_STAMPED_ID: usize = 64;

/// A stamped event ID read back: rmcp's own, the holder's tag, and the
/// call's ID if it was carried. `None` for an ID no replica stamped.
fn read_stamp(event_id: &str) -> Option<(&str, &str, Option<RequestId>)> {
    let (index, rest) = event_id.split_once('/')?;
    let (request, rest) = rest.split_once('.')?;
    let own = &event_id[..index.len() + 1 + request.len()];
    let (tag, call) = match rest.split_once('.') {
        Some((tag, call)) => (tag, Some(call)),
        None => (rest, None),
    };
    // What a client sends is only a tag if it looks like one (it names a
    // Redis channel a resume asks about).
    if tag.len() != TAG_LEN || !tag.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let call = call.and_then(|call| match call.split_at_checked(1)? {
        ("n", n) => Some(RequestId::Number(n.parse().ok()?)),
        ("s", s) => Some(RequestId::String(s.into())),
        _ => None,
    });
    Some((own, tag, call))
}

/// What a client resuming a stream of a replica that is gone is answered:
/// its call's end.
fn holder_gone(call: RequestId) -> ServerSseMessage {
    let why = "the MCP server replica that ran this call stopped before it answered, so its \
               stream cannot be resumed; the call may have partly run: send it again if that \
               is safe";
    ServerSseMessage::from_message(ServerJsonRpcMessage::error(
        ErrorData::internal_error(why, None),
        Some(call),
    ))
}

/// What goes over the bus: a client's message of a session.
#[derive(Serialize, Deserialize)]
struct Envelope {
    /// The replica that published it.
    from: String,
    /// The session's [`public_name`].
    session: String,
    message: ClientJsonRpcMessage,
}

/// A session's transport that tags the requests it sends (module docs).
pub(in crate::mcp) struct Tagged<T> {
    inner: T,
    tag: Option<Arc<str>>,
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Tagged<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        mut item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let (Some(tag), ServerJsonRpcMessage::Request(request)) = (&self.tag, &mut item)
            && let RequestId::Number(n) = request.id
        {
            request.id = tagged(tag, n);
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let mut message = self.inner.receive().await?;
        let id = match &mut message {
            ClientJsonRpcMessage::Response(response) => Some(&mut response.id),
            ClientJsonRpcMessage::Error(error) => error.id.as_mut(),
            _ => None,
        };
        if let (Some(tag), Some(id)) = (&self.tag, id)
            && let Some((to, n)) = untagged(id)
            && to == &**tag
        {
            *id = RequestId::Number(n);
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// The session manager of a replica in a fleet: [`Resumable`], with its
/// sessions' requests tagged and clients' answers and cancellations routed
/// (module docs). Without a shared store it adds nothing.
pub(in crate::mcp) struct Routed {
    inner: Arc<Resumable>,
    /// This replica's tag and the store whose bus it uses (fleet only).
    bus: Option<(Arc<str>, StateStore)>,
}

impl Routed {
    /// `inner`'s sessions, routed over `bus`: the shared store's, and this
    /// replica's tag ([`new_tag`]).
    pub(in crate::mcp) fn new(inner: Arc<Resumable>, bus: Option<(Arc<str>, StateStore)>) -> Self {
        Self { inner, bus }
    }

    fn tagged<T>(&self, inner: T) -> Tagged<T> {
        Tagged {
            inner,
            tag: self.bus.as_ref().map(|(tag, _)| tag.clone()),
        }
    }

    /// Hears the bus until `stop`: answers to this replica's requests,
    /// others' cancellations, settings and log lines, for the sessions held
    /// here ([`Self::hear`]).
    pub(in crate::mcp) fn listen(self: &Arc<Self>, shared: &Arc<Shared>, stop: CancellationToken) {
        let Some((tag, store)) = &self.bus else {
            return;
        };
        let channels = vec![
            own_channel(tag),
            EVERYONE.to_owned(),
            SETTINGS.to_owned(),
            LOGS.to_owned(),
        ];
        let Some(mut messages) = store.subscribe(channels) else {
            return;
        };
        let (routed, shared) = (Arc::downgrade(self), Arc::downgrade(shared));
        let tag = tag.clone();
        tokio::spawn(async move {
            loop {
                let message = tokio::select! {
                    () = stop.cancelled() => return,
                    message = messages.recv() => message,
                };
                let Some(message) = message else { return };
                let (Some(routed), Some(shared)) = (routed.upgrade(), shared.upgrade()) else {
                    return;
                };
                routed.hear(&shared, &tag, message).await;
            }
        });
    }

    /// What the bus brought, for the session held here it names, if one is:
    /// a call's log line (this copy sends it, if it has a client to send it
    /// to), a change of the session's settings (this copy loads them), or a
    /// client's message another replica received.
    async fn hear(&self, shared: &Shared, tag: &str, message: BusMessage) {
        match message.channel.as_str() {
            LOGS => {
                if let Ok(line) = serde_json::from_str::<LogLine>(&message.payload)
                    && let Some((_, session)) = self.held(shared, &line.session).await
                    && let Some(peer) = session.peer().cloned()
                {
                    tokio::spawn(async move { send_line(&peer, line).await });
                }
            }
            SETTINGS => {
                if let Some((id, session)) = self.held(shared, &message.payload).await {
                    settings::load_soon(&session, &id);
                }
            }
            _ => match serde_json::from_str::<Envelope>(&message.payload) {
                Ok(routed) if routed.from != tag => self.deliver(shared, routed).await,
                Ok(_) => {}
                Err(_) => {
                    tracing::debug!(channel = %message.channel, "an unreadable message on the bus");
                }
            },
        }
    }

    /// The session held here whose public name is `name`, and its ID.
    async fn held(&self, shared: &Shared, name: &str) -> Option<(SessionId, Session)> {
        let id = self.inner.find(name).await?;
        let session = shared.direct.session(&id)?;
        Some((id, session))
    }

    /// Hands a client's message another replica received to the session
    /// held here, if one is.
    async fn deliver(&self, shared: &Shared, routed: Envelope) {
        let Some(id) = self.inner.find(&routed.session).await else {
            return;
        };
        if let Some(request) = cancelled(&routed.message) {
            shared.direct.cancel(&id, request);
        }
        if let Err(error) = self.inner.accept_message(&id, routed.message).await {
            tracing::debug!(%error, "a message from another replica reached no session");
        }
    }

    /// Publishes `message` of session `id` on `channel`: how many replicas
    /// heard it.
    async fn publish(&self, channel: &str, id: &SessionId, message: ClientJsonRpcMessage) -> u64 {
        let Some((tag, store)) = &self.bus else {
            return 0;
        };
        let routed = Envelope {
            from: tag.to_string(),
            session: public_name(id),
            message,
        };
        let Ok(payload) = serde_json::to_string(&routed) else {
            return 0;
        };
        match store.publish(channel, &payload).await {
            Ok(heard) => heard,
            Err(error) => {
                tracing::warn!(%error, "could not pass a client's message to the other replicas");
                0
            }
        }
    }
}

/// The request a `notifications/cancelled` cancels, if `message` is one.
fn cancelled(message: &ClientJsonRpcMessage) -> Option<&RequestId> {
    let ClientJsonRpcMessage::Notification(notification) = message else {
        return None;
    };
    let ClientNotification::CancelledNotification(cancelled) = &notification.notification else {
        return None;
    };
    cancelled.params.request_id.as_ref()
}

impl SessionManager for Routed {
    type Error = ResumeError;
    type Transport = Tagged<<Resumable as SessionManager>::Transport>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        Ok((id, self.tagged(transport)))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_stream(id, message).await
    }

    /// An answer to another replica's request goes to it; a cancellation
    /// goes to every replica, and to the session here.
    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        if let Some((tag, _)) = &self.bus {
            let answered = match &message {
                ClientJsonRpcMessage::Response(response) => Some(&response.id),
                ClientJsonRpcMessage::Error(error) => error.id.as_ref(),
                _ => None,
            };
            if let Some((to, _)) = answered.and_then(untagged)
                && to != &**tag
            {
                let channel = own_channel(to);
                if self.publish(&channel, id, message).await == 0 {
                    tracing::warn!(
                        "a client answered a request of a replica that is gone; the call it \
                         held failed with it"
                    );
                }
                return Ok(());
            }
            if cancelled(&message).is_some() {
                self.publish(EVERYONE, id, message.clone()).await;
            }
        }
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    /// A stream of this replica's is resumed here; one of another replica
    /// never is (module docs).
    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let Some((own_tag, store)) = &self.bus else {
            return Ok(Either::Right(self.inner.resume(id, last_event_id).await?));
        };
        let Some((own, holder, call)) = read_stamp(&last_event_id) else {
            return Ok(Either::Right(self.inner.resume(id, last_event_id).await?));
        };
        if holder == &**own_tag {
            let own = own.to_owned();
            return Ok(Either::Right(self.inner.resume(id, own).await?));
        }
        let gone = matches!(store.listeners(&own_channel(holder)).await, Ok(0));
        let answer = match call {
            Some(call) if gone => {
                tracing::info!(
                    "a client resumed the stream of a call whose replica is gone: answered \
                     that the call ended with it"
                );
                vec![holder_gone(call)]
            }
            // An empty stream, as rmcp answers a stream it does not know,
            // without its warning: the client retries, and a retry every
            // few seconds while it waits is no news.
            _ => {
                tracing::debug!(gone, "a client resumed another replica's stream here");
                Vec::new()
            }
        };
        Ok(Either::Left(futures_util::stream::iter(answer)))
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        Ok(match self.inner.restore_session(id).await? {
            RestoreOutcome::Restored(transport) => RestoreOutcome::Restored(self.tagged(transport)),
            RestoreOutcome::AlreadyPresent => RestoreOutcome::AlreadyPresent,
            _ => RestoreOutcome::NotSupported,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tagged_id_reads_back_as_its_replica_and_number() {
        let id = tagged("ab12", 7);
        assert_eq!(id, RequestId::String("ab12.7".into()));
        assert_eq!(untagged(&id), Some(("ab12", 7)));
        // A client's own IDs, and strings that are not tags, are nobody's.
        assert_eq!(untagged(&RequestId::Number(7)), None);
        assert_eq!(untagged(&RequestId::String("7".into())), None);
        assert_eq!(untagged(&RequestId::String("ab.x".into())), None);
    }

    #[test]
    fn a_stamped_event_id_reads_back_as_rmcps_its_holder_and_its_call() {
        let tag = "0123456789ab";
        let number = format!("3/7{}", stamp(tag, &RequestId::Number(42)));
        assert_eq!(number, "3/7.0123456789ab.n42");
        assert_eq!(
            read_stamp(&number),
            Some(("3/7", tag, Some(RequestId::Number(42))))
        );
        let string = format!("0/1{}", stamp(tag, &RequestId::String("call-9".into())));
        assert_eq!(
            read_stamp(&string),
            Some(("0/1", tag, Some(RequestId::String("call-9".into()))))
        );
        // A long or odd string ID is left out: the holder is still known.
        let odd = format!("0/1{}", stamp(tag, &RequestId::String("a.b/c".into())));
        assert_eq!(read_stamp(&odd), Some(("0/1", tag, None)));
        // rmcp's own IDs (one replica) and the session's stream are nobody's,
        // and so is what is no tag.
        assert_eq!(read_stamp("3/7"), None);
        assert_eq!(read_stamp("12"), None);
        assert_eq!(read_stamp("3/7.ab12.n42"), None);
        assert_eq!(read_stamp("3/7.0123456789xy.n42"), None);
    }
}
