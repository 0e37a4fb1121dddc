//! Resources over MCP: `resources/list`, `resources/templates/list` and
//! `resources/read`, served from the toolset's catalog
//! ([`Toolset::resources`](crate::Toolset::resources)) to a server whose set
//! may offer them.

use rmcp::model::{
    ListResourceTemplatesRequestMethod, ListResourceTemplatesResult, ListResourcesRequestMethod,
    ListResourcesResult, ReadResourceRequestMethod, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource as McpResource,
    ResourceTemplate as McpTemplate, ResourcesCapability, ServerCapabilities,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};

use super::{Feature, Offered};
use crate::catalog::{ResourceSpec, ResourceTemplateSpec};
use crate::mcp::convert::{catalog_error, resource_contents};
use crate::mcp::session::Session;
use crate::toolset::ToolsetExt;

/// Whether the server serves resources: when its set may offer resources or
/// templates ([`Toolset::kinds`](crate::Toolset::kinds)).
pub(in crate::mcp) struct Resources {
    pub(in crate::mcp) offered: Offered,
}

impl Feature for Resources {
    fn advertise(&self, capabilities: &mut ServerCapabilities) {
        if self.offered.0 {
            // No `subscribe` and no `listChanged` yet: nothing tells the
            // server when a resource or the list changes.
            capabilities.resources = Some(ResourcesCapability::default());
        }
    }
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
