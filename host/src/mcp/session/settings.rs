//! What the client of a 2025-11-25 session set in it (`logging/setLevel`,
//! `resources/subscribe`), on every replica that serves the session: kept
//! in its record in the shared store ([`Setting`]), and each change told to
//! the other replicas over the bus ([`CHANNEL`], the session's public name),
//! whose copies of the session then load the record again; a replica that
//! takes the session up loads it too. A call's log messages go the same way
//! ([`LOGS`]): they belong to the session's `GET` stream, which another
//! replica may hold. Without a shared store, nothing here does anything: the
//! session's one copy keeps its settings and sends its own messages.

use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};

use super::Session;
use crate::mcp::features::{logging, resources};
use crate::mcp::transport;
use crate::state::StateStore;
use crate::state::sessions::{Set, Setting, public_name};

/// The bus channel on which a replica says a session's settings changed.
pub(in crate::mcp) const CHANNEL: &str = "settings";

/// The shared store a fleet's sessions are kept in, if there is one.
fn fleet_store(session: &Session) -> Option<&StateStore> {
    let store = session.state.engine.as_ref()?.state();
    store.is_shared().then_some(store)
}

/// Keeps `setting`, just made on this copy of the session of `context`'s
/// request, for the replicas that serve the session, and tells them.
///
/// # Errors
/// Invalid params when the session keeps as many subscriptions as it may
/// (counting those made through other replicas). A store that cannot be
/// reached is no error: this copy keeps the setting, with a warning.
pub(in crate::mcp) async fn share(
    session: &Session,
    context: &RequestContext<RoleServer>,
    setting: Setting<'_>,
) -> Result<(), ErrorData> {
    let (Some(store), Some(id)) = (
        fleet_store(session),
        transport::http_session_id(&context.extensions),
    ) else {
        return Ok(());
    };
    match store.sessions().set(id, setting).await {
        Ok(Set::Full) => {
            return Err(ErrorData::invalid_params(
                format!(
                    "a session may subscribe to at most {} resources",
                    resources::MAX_SUBSCRIPTIONS
                ),
                None,
            ));
        }
        Ok(_) => {}
        Err(error) => {
            tracing::warn!(%error, "could not keep a session's setting for the other replicas: only this one has it");
            return Ok(());
        }
    }
    if let Err(error) = store.publish(CHANNEL, &public_name(id)).await {
        tracing::warn!(%error, "could not tell the other replicas that a session's settings changed");
    }
    Ok(())
}

/// Loads the settings the store keeps for session `id` into this copy of
/// it, on a task of its own (when a replica takes the session up, and when
/// another says they changed).
pub(in crate::mcp) fn load_soon(session: &Session, id: &str) {
    let Some(store) = fleet_store(session).cloned() else {
        return;
    };
    let (session, id) = (session.downgrade(), id.to_owned());
    tokio::spawn(async move {
        let record = match store.sessions().get(&id).await {
            Ok(Some(record)) => record,
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(%error, "could not load a session's settings from the store");
                return;
            }
        };
        let Some(session) = session.upgrade() else {
            return;
        };
        if let Some(level) = &record.log_level {
            logging::restore(&session, level);
        }
        if !record.subscriptions.is_empty() {
            resources::restore(&session, record.subscriptions);
        }
    });
}

/// The bus channel of a call's log messages in a fleet: they belong to no
/// request, so they go out on the session's `GET` stream, which another
/// replica may hold; every replica's copy of the session sends what it
/// hears, and only the stream's holder has a client to send it to.
pub(in crate::mcp) const LOGS: &str = "logs";

/// Where the log messages of a call of `context`'s session go besides its
/// replica: the fleet's bus ([`LOGS`]), if there is one.
pub(in crate::mcp) fn log_relay(
    session: &Session,
    context: &RequestContext<RoleServer>,
) -> Option<(StateStore, String)> {
    let store = fleet_store(session)?.clone();
    let id = transport::http_session_id(&context.extensions)?;
    Some((store, public_name(id)))
}
