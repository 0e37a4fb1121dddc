//! The MCP surface, cut by feature area: each module serves one area's
//! requests (`tools.rs`: `tools/list` and `tools/call`; `resources.rs` and
//! `prompts.rs`: the rest of the toolset's catalog; `tasks.rs`: the Tasks
//! extension) and says, through [`Feature`], what the server
//! advertises for it and which list changes its clients are told of.
//! `Session` only routes requests here.
//!
//! A new area (completions, logging) is one module here with its
//! handlers and a [`Feature`], listed in `Shared::features`, plus its routes
//! in `session.rs`'s `ServerHandler` (one line each).

use rmcp::model::{ConstString, ServerCapabilities, ServerNotification, SubscriptionFilter};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};

use crate::mcp::session::Session;
use crate::toolset::{Context, ToolsetChange};

pub(super) mod completions;
pub(super) mod elicitation;
pub(super) mod logging;
pub(super) mod prompts;
pub(super) mod resources;
pub(super) mod tasks;
pub(super) mod tools;

/// One area of the MCP surface.
pub(super) trait Feature: Send + Sync {
    /// Adds what this area serves to the capabilities the server declares
    /// (`initialize`, `server/discover`).
    fn advertise(&self, capabilities: &mut ServerCapabilities);

    /// The list this area serves whose changes clients are told of, if any.
    fn list(&self) -> Option<List> {
        None
    }

    /// Whether `change` of the set changed this area's list.
    fn changed(&self, change: &ToolsetChange) -> bool {
        let _ = change;
        false
    }
}

/// Whether a catalog area (resources, prompts) is served: when the set may
/// offer its items ([`Toolset::kinds`](crate::Toolset::kinds)). An area
/// not served answers its methods as rmcp does by default.
#[derive(Debug, Clone, Copy)]
pub(super) struct Offered(pub(super) bool);

impl Offered {
    /// The caller's context for a request of method `M`, once the set's
    /// first load is done; "method not found" if the area is not served.
    async fn begin<M: ConstString>(
        self,
        session: &Session,
        request: &RequestContext<RoleServer>,
    ) -> Result<Context, ErrorData> {
        if !self.0 {
            return Err(ErrorData::method_not_found::<M>());
        }
        session.shared().wait_ready().await;
        session.item_context(request)
    }
}

/// A list whose changes are notified (`notifications/…/list_changed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum List {
    /// `tools/list`.
    Tools,
    /// `resources/list` and `resources/templates/list`.
    Resources,
    /// `prompts/list`.
    Prompts,
}

impl List {
    /// Adds this list's changes to `filter` (what `subscriptions/listen`
    /// may carry).
    pub(super) fn accept(self, filter: &mut SubscriptionFilter) {
        match self {
            Self::Tools => filter.tools_list_changed = Some(true),
            Self::Resources => filter.resources_list_changed = Some(true),
            Self::Prompts => filter.prompts_list_changed = Some(true),
        }
    }

    /// Whether a subscription with `filter` asked for this list's changes.
    pub(super) fn accepted_by(self, filter: &SubscriptionFilter) -> bool {
        match self {
            Self::Tools => filter.tools_list_changed == Some(true),
            Self::Resources => filter.resources_list_changed == Some(true),
            Self::Prompts => filter.prompts_list_changed == Some(true),
        }
    }

    /// The notification that says this list changed.
    pub(super) fn notification(self) -> ServerNotification {
        match self {
            Self::Tools => ServerNotification::ToolListChangedNotification(Default::default()),
            Self::Resources => {
                ServerNotification::ResourceListChangedNotification(Default::default())
            }
            Self::Prompts => ServerNotification::PromptListChangedNotification(Default::default()),
        }
    }

    /// The notification's method, for the log.
    pub(super) fn method(self) -> &'static str {
        match self {
            Self::Tools => "notifications/tools/list_changed",
            Self::Resources => "notifications/resources/list_changed",
            Self::Prompts => "notifications/prompts/list_changed",
        }
    }
}
