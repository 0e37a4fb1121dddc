//! A session's list-changed notifications: one loop for a 2025-11-25
//! session's client and a 2026-07-28 listening request.

use std::sync::Arc;

use rmcp::model::ServerNotification;
use rmcp::{Peer, RoleServer};
use tokio::sync::broadcast;

use crate::mcp::Shared;
use crate::mcp::features::List;
use crate::toolset::ToolsetChange;

/// The one change-forwarding loop, for a session's client (2025-11-25) and
/// a listening request (2026-07-28's `subscriptions/listen`): past the first
/// load, `send` the list-changed notification of every feature area's list
/// a change of the set changed (all of them after changes missed) that
/// `wanted`, until `stop`, the set's end, or a send fails.
pub(super) async fn forward_list_changes<F, Fut>(
    shared: &Shared,
    mut changes: broadcast::Receiver<ToolsetChange>,
    stop: impl Future<Output = ()>,
    mut send: F,
    session: &str,
    request: Option<&str>,
    wanted: impl Fn(List) -> bool,
) where
    F: FnMut(ServerNotification) -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let mut stop = std::pin::pin!(stop);
    if !shared.past_first_load(&mut changes, stop.as_mut()).await {
        return;
    }
    let request = request.unwrap_or("-");
    loop {
        let change = tokio::select! {
            () = stop.as_mut() => return,
            change = changes.recv() => match change {
                Ok(change) => Some(change),
                Err(broadcast::error::RecvError::Lagged(_)) => None,
                Err(broadcast::error::RecvError::Closed) => return,
            },
        };
        let changed = shared.features().into_iter().filter_map(|feature| {
            let list = feature.list()?;
            let changed = change.as_ref().is_none_or(|change| feature.changed(change));
            (changed && wanted(list)).then_some(list)
        });
        for list in changed.collect::<Vec<_>>() {
            if let Err(err) = send(list.notification()).await {
                tracing::debug!(%session, %request, %err, "could not send {}", list.method());
                return;
            }
            tracing::info!(%session, %request, "sent {}", list.method());
        }
    }
}

impl super::Session {
    /// Tells this session's client of list changes until the session ends.
    pub(super) fn forward_changes(&self, peer: Peer<RoleServer>) {
        let Some(changes) = &self.shared.changes else {
            return;
        };
        let changes = changes.resubscribe();
        let ended = self.state.ended.clone();
        let session = self.state.id().to_owned();
        let shared = Arc::clone(&self.shared);
        tokio::spawn(async move {
            let send = |notification: ServerNotification| {
                let peer = peer.clone();
                async move {
                    if peer.is_transport_closed() {
                        return Err("the transport is closed".to_owned());
                    }
                    peer.send_notification(notification)
                        .await
                        .map_err(|e| e.to_string())
                }
            };
            let stop = ended.cancelled();
            forward_list_changes(&shared, changes, stop, send, &session, None, |_| true).await;
        });
    }
}
