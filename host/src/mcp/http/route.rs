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

use std::sync::Arc;

use futures_util::Stream;
use rmcp::model::{ClientJsonRpcMessage, ClientNotification, RequestId, ServerJsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::{
    RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};
use rmcp::{RoleServer, transport::Transport};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::resume::{Resumable, ResumeError};
use crate::mcp::Shared;
use crate::state::StateStore;
use crate::state::sessions::public_name;

/// The channel every replica hears: cancellations.
const EVERYONE: &str = "sessions";

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
    /// `inner`'s sessions, routed over `store`'s bus when it is shared.
    pub(in crate::mcp) fn new(inner: Arc<Resumable>, store: Option<StateStore>) -> Self {
        let bus = store.map(|store| {
            let tag: Arc<str> = crate::mcp::approval::random_id()[..12].into();
            (tag, store)
        });
        Self { inner, bus }
    }

    fn tagged<T>(&self, inner: T) -> Tagged<T> {
        Tagged {
            inner,
            tag: self.bus.as_ref().map(|(tag, _)| tag.clone()),
        }
    }

    /// Hears the bus until `stop`: delivers answers to this replica's
    /// requests and others' cancellations to the sessions held here.
    pub(in crate::mcp) fn listen(self: &Arc<Self>, shared: &Arc<Shared>, stop: CancellationToken) {
        let Some((tag, store)) = &self.bus else {
            return;
        };
        let Some(mut messages) = store.subscribe(vec![own_channel(tag), EVERYONE.to_owned()])
        else {
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
                let Ok(routed_message) = serde_json::from_str::<Envelope>(&message.payload) else {
                    tracing::debug!(channel = %message.channel, "an unreadable message on the bus");
                    continue;
                };
                if routed_message.from == *tag {
                    continue;
                }
                routed.deliver(&shared, routed_message).await;
            }
        });
    }

    /// Hands a message from another replica to the session held here, if
    /// one is.
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

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
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
}
