//! Completions over MCP: `completion/complete` for a prompt's argument or a
//! resource template's variable, served from the toolset's catalog
//! ([`ToolsetExt::complete`](crate::toolset::ToolsetExt::complete)) to a
//! server whose set may offer prompts or templates.

use std::collections::BTreeMap;

use rmcp::model::{
    CompleteRequestMethod, CompleteRequestParams, CompleteResult, CompletionInfo, Reference,
    ServerCapabilities,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};

use super::{Feature, Offered};
use crate::catalog::CompletionRef;
use crate::mcp::convert::catalog_error;
use crate::mcp::session::Session;
use crate::toolset::ToolsetExt;

/// The most context arguments a completion request may carry.
const MAX_CONTEXT_ARGUMENTS: usize = 64;

/// Whether the server serves completions: when its set may offer prompts
/// or resource templates.
pub(in crate::mcp) struct Completions {
    pub(in crate::mcp) offered: Offered,
}

impl Feature for Completions {
    fn advertise(&self, capabilities: &mut ServerCapabilities) {
        if self.offered.0 {
            capabilities.completions = Some(Default::default());
        }
    }
}

/// `completion/complete`: suggested values, none for a prompt or template
/// the caller cannot see.
pub(in crate::mcp) async fn complete(
    session: &Session,
    request: CompleteRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<CompleteResult, ErrorData> {
    let shared = session.shared();
    let cx = shared
        .completions
        .offered
        .begin::<CompleteRequestMethod>(session, &context)
        .await?;
    let target = match request.r#ref {
        Reference::Prompt(prompt) => CompletionRef::Prompt(prompt.name),
        Reference::Resource(template) => CompletionRef::Template(template.uri),
        _ => {
            return Err(ErrorData::invalid_params(
                "an unknown kind of reference",
                None,
            ));
        }
    };
    let arguments = request
        .context
        .and_then(|context| context.arguments)
        .unwrap_or_default();
    if arguments.len() > MAX_CONTEXT_ARGUMENTS {
        return Err(ErrorData::invalid_params(
            format!("a completion's context may hold at most {MAX_CONTEXT_ARGUMENTS} arguments"),
            None,
        ));
    }
    let arguments: BTreeMap<String, String> = arguments.into_iter().collect();
    let completion = shared
        .toolset
        .complete(
            &cx,
            &target,
            &request.argument.name,
            &request.argument.value,
            &arguments,
        )
        .await
        .map_err(catalog_error)?
        .capped();
    let info =
        CompletionInfo::with_pagination(completion.values, completion.total, completion.has_more)
            .map_err(|e| ErrorData::internal_error(e, None))?;
    Ok(CompleteResult::new(info))
}
