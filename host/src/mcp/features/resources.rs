//! Resources over MCP: `resources/list`, `resources/templates/list` and
//! `resources/read`, served from the toolset's catalog
//! ([`Toolset::resources`](crate::Toolset::resources)) to a server whose set
//! may offer them.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    ListResourceTemplatesRequestMethod, ListResourceTemplatesResult, ListResourcesRequestMethod,
    ListResourcesResult, ReadResourceRequestMethod, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource as McpResource,
    ResourceTemplate as McpTemplate, ResourceUpdatedNotification, ResourceUpdatedNotificationParam,
    ResourcesCapability, ServerCapabilities, ServerNotification, SubscribeRequestMethod,
    SubscribeRequestParams, UnsubscribeRequestMethod, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use tokio::sync::broadcast::error::RecvError;

use super::{Feature, List, Offered};
use crate::catalog::{ResourceSpec, ResourceTemplateSpec};
use crate::mcp::convert::{catalog_error, resource_contents};
use crate::mcp::session::Session;
use crate::state::sessions::Setting;
use crate::toolset::ToolsetChange;
use crate::toolset::ToolsetExt;

/// Whether the server serves resources: when its set may offer resources or
/// templates ([`Toolset::kinds`](crate::Toolset::kinds)).
pub(in crate::mcp) struct Resources {
    pub(in crate::mcp) offered: Offered,
}

impl Feature for Resources {
    fn advertise(&self, capabilities: &mut ServerCapabilities) {
        if self.offered.0 {
            // Subscriptions: plugins say when a resource changed
            // (`host.resource-updated`).
            let mut resources = ResourcesCapability::default();
            resources.subscribe = Some(true);
            resources.list_changed = Some(true);
            capabilities.resources = Some(resources);
        }
    }

    fn list(&self) -> Option<List> {
        self.offered.0.then_some(List::Resources)
    }

    fn changed(&self, change: &ToolsetChange) -> bool {
        change.resources
    }
}

/// The most resources one session may subscribe to.
pub(in crate::mcp) const MAX_SUBSCRIPTIONS: usize = 256;

/// A session's resource subscriptions (`resources/subscribe`, 2025-11-25).
#[derive(Debug, Default)]
pub(in crate::mcp) struct Subscriptions {
    uris: Mutex<HashSet<String>>,
    /// Whether the session's forwarder of updates runs.
    forwarding: AtomicBool,
}

impl Subscriptions {
    fn uris(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.uris.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `resources/subscribe`: the session's client hears of every update of a
/// resource the caller may read, until it unsubscribes or the session ends.
pub(in crate::mcp) async fn subscribe(
    session: &Session,
    request: SubscribeRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<(), ErrorData> {
    let shared = session.shared();
    let cx = shared
        .resources
        .offered
        .begin::<SubscribeRequestMethod>(session, &context)
        .await?;
    if shared.toolset.resource(&cx, &request.uri).is_none() {
        return Err(catalog_error(crate::error::CallError::UnknownResource {
            uri: request.uri,
        }));
    }
    let (subscriptions, ..) = session.subscriptions();
    {
        let mut uris = subscriptions.uris();
        if uris.len() >= MAX_SUBSCRIPTIONS && !uris.contains(&request.uri) {
            return Err(ErrorData::invalid_params(
                format!("a session may subscribe to at most {MAX_SUBSCRIPTIONS} resources"),
                None,
            ));
        }
        uris.insert(request.uri.clone());
    }
    // The request's own peer: the session's is set by `notifications/initialized`,
    // whose handler may not have run yet when a prompt client subscribes.
    forward(session, context.peer.clone());
    let setting = Setting::Subscribe {
        uri: &request.uri,
        limit: MAX_SUBSCRIPTIONS,
    };
    let shared = crate::mcp::session::settings::share(session, &context, setting).await;
    if shared.is_err() {
        subscriptions.uris().remove(&request.uri);
    }
    shared
}

/// The session's subscriptions as another replica's copy of it keeps them
/// (`settings`): from now on this copy tells its client of their updates.
pub(in crate::mcp) fn restore(session: &Session, uris: Vec<String>) {
    let (subscriptions, ..) = session.subscriptions();
    *subscriptions.uris() = uris.into_iter().take(MAX_SUBSCRIPTIONS).collect();
    if let Some(peer) = session.peer() {
        forward(session, peer.clone());
    }
}

/// Tells `peer` of every update of a resource the session subscribed to,
/// until the session ends (one forwarder a session).
fn forward(session: &Session, peer: rmcp::Peer<RoleServer>) {
    let (subscriptions, ended, engine) = session.subscriptions();
    let Some(engine) = engine else {
        return;
    };
    if subscriptions.forwarding.swap(true, Ordering::AcqRel) {
        return;
    }
    let mut updates = engine.resource_updates();
    let (subscriptions, ended) = (Arc::clone(subscriptions), ended.clone());
    tokio::spawn(async move {
        loop {
            let update = tokio::select! {
                () = ended.cancelled() => return,
                update = updates.recv() => update,
            };
            let update = match update {
                Ok(update) => update,
                Err(RecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "a session fell behind on resource updates");
                    continue;
                }
                Err(RecvError::Closed) => return,
            };
            if !subscriptions.uris().contains(&update.uri) {
                continue;
            }
            let notification = ResourceUpdatedNotificationParam::new(update.uri);
            if peer.notify_resource_updated(notification).await.is_err() {
                return;
            }
        }
    });
}

/// 2026-07-28's `subscriptions/listen` with `resourceSubscriptions`: `send`
/// the updates of the URIs asked for that the caller may read (at most
/// [`MAX_SUBSCRIPTIONS`]), until the engine's updates end or a send fails.
pub(in crate::mcp) async fn forward_to_listener<F, Fut>(
    session: &Session,
    request: &RequestContext<RoleServer>,
    uris: &[String],
    mut send: F,
) where
    F: FnMut(ServerNotification) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let shared = session.shared();
    let (_, _, Some(engine)) = session.subscriptions() else {
        return;
    };
    if !shared.resources.offered.0 || uris.is_empty() {
        return;
    }
    let mut updates = engine.resource_updates();
    shared.wait_ready().await;
    let Ok(cx) = session.item_context(request) else {
        return;
    };
    let readable: HashSet<&str> = uris
        .iter()
        .take(MAX_SUBSCRIPTIONS)
        .filter(|uri| shared.toolset.resource(&cx, uri).is_some())
        .map(String::as_str)
        .collect();
    if readable.is_empty() {
        return;
    }
    loop {
        let update = match updates.recv().await {
            Ok(update) => update,
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!(missed, "a listener fell behind on resource updates");
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        if !readable.contains(update.uri.as_str()) {
            continue;
        }
        let notification = ServerNotification::ResourceUpdatedNotification(
            ResourceUpdatedNotification::new(ResourceUpdatedNotificationParam::new(update.uri)),
        );
        if send(notification).await.is_err() {
            return;
        }
    }
}

/// `resources/unsubscribe`: no more updates of that URI (none is fine).
pub(in crate::mcp) async fn unsubscribe(
    session: &Session,
    request: UnsubscribeRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<(), ErrorData> {
    session
        .shared()
        .resources
        .offered
        .begin::<UnsubscribeRequestMethod>(session, &context)
        .await?;
    let (subscriptions, ..) = session.subscriptions();
    subscriptions.uris().remove(&request.uri);
    let setting = Setting::Unsubscribe(&request.uri);
    crate::mcp::session::settings::share(session, &context, setting).await
}

/// `resources/list`: every resource the caller may read.
pub(in crate::mcp) async fn list(
    session: &Session,
    context: RequestContext<RoleServer>,
) -> Result<ListResourcesResult, ErrorData> {
    let shared = session.shared();
    let cx = shared
        .resources
        .offered
        .begin::<ListResourcesRequestMethod>(session, &context)
        .await?;
    let listed = shared
        .toolset
        .resources(&cx)
        .iter()
        .map(|resource| mcp_resource(resource.spec()))
        .collect();
    Ok(ListResourcesResult::with_all_items(listed))
}

/// `resources/templates/list`: every template the caller may see.
pub(in crate::mcp) async fn templates(
    session: &Session,
    context: RequestContext<RoleServer>,
) -> Result<ListResourceTemplatesResult, ErrorData> {
    let shared = session.shared();
    let cx = shared
        .resources
        .offered
        .begin::<ListResourceTemplatesRequestMethod>(session, &context)
        .await?;
    let listed = shared
        .toolset
        .resource_templates(&cx)
        .iter()
        .map(|template| mcp_template(template.spec()))
        .collect();
    Ok(ListResourceTemplatesResult::with_all_items(listed))
}

/// `resources/read`: the content at a URI the caller may read.
pub(in crate::mcp) async fn read(
    session: &Session,
    request: ReadResourceRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<ReadResourceResponse, ErrorData> {
    let shared = session.shared();
    let cx = shared
        .resources
        .offered
        .begin::<ReadResourceRequestMethod>(session, &context)
        .await?;
    let contents = shared
        .toolset
        .read(&cx, &request.uri)
        .await
        .map_err(catalog_error)?;
    Ok(ReadResourceResult::new(contents.into_iter().map(resource_contents).collect()).into())
}

fn mcp_resource(spec: &ResourceSpec) -> McpResource {
    let mut resource = McpResource::new(&spec.uri, &spec.name);
    resource.title.clone_from(&spec.title);
    resource.description.clone_from(&spec.description);
    resource.mime_type.clone_from(&spec.mime_type);
    resource.size = spec.size;
    resource
}

fn mcp_template(spec: &ResourceTemplateSpec) -> McpTemplate {
    let mut template = McpTemplate::new(&spec.uri_template, &spec.name);
    template.title.clone_from(&spec.title);
    template.description.clone_from(&spec.description);
    template.mime_type.clone_from(&spec.mime_type);
    template
}
