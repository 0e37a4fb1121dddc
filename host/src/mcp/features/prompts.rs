//! Prompts over MCP: `prompts/list` and `prompts/get`, served from the
//! toolset's catalog ([`Toolset::prompts`](crate::Toolset::prompts)) to a
//! server whose set may offer them.

use std::collections::BTreeMap;

use rmcp::model::{
    ContentBlock, GetPromptRequestMethod, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, ListPromptsRequestMethod, ListPromptsResult, Prompt as McpPrompt,
    PromptArgument as McpArgument, PromptMessage as McpMessage, PromptsCapability, Role,
    ServerCapabilities,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::Value;

use super::{Feature, List, Offered};
use crate::catalog::{self, MessageContent, PromptMessages, PromptSpec};
use crate::mcp::convert::{catalog_error, content, resource_contents};
use crate::mcp::session::Session;
use crate::toolset::ToolsetChange;
use crate::toolset::ToolsetExt;

/// Whether the server serves prompts: when its set may offer them
/// ([`Toolset::kinds`](crate::Toolset::kinds)).
pub(in crate::mcp) struct Prompts {
    pub(in crate::mcp) offered: Offered,
}

impl Feature for Prompts {
    fn advertise(&self, capabilities: &mut ServerCapabilities) {
        if self.offered.0 {
            let mut prompts = PromptsCapability::default();
            prompts.list_changed = Some(true);
            capabilities.prompts = Some(prompts);
        }
    }

    fn list(&self) -> Option<List> {
        self.offered.0.then_some(List::Prompts)
    }

    fn changed(&self, change: &ToolsetChange) -> bool {
        change.prompts
    }
}

/// `prompts/list`: every prompt the caller may get.
pub(in crate::mcp) async fn list(
    session: &Session,
    context: RequestContext<RoleServer>,
) -> Result<ListPromptsResult, ErrorData> {
    let shared = session.shared();
    let cx = shared
        .prompts
        .offered
        .begin::<ListPromptsRequestMethod>(session, &context)
        .await?;
    let listed = shared
        .toolset
        .prompts(&cx)
        .iter()
        .map(|prompt| mcp_prompt(prompt.spec()))
        .collect();
    Ok(ListPromptsResult::with_all_items(listed))
}

/// `prompts/get`: the prompt's messages, filled in with the request's
/// arguments (MCP's are strings; another JSON value is refused).
pub(in crate::mcp) async fn get(
    session: &Session,
    request: GetPromptRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<GetPromptResponse, ErrorData> {
    let shared = session.shared();
    let cx = shared
        .prompts
        .offered
        .begin::<GetPromptRequestMethod>(session, &context)
        .await?;
    let mut arguments = BTreeMap::new();
    for (name, value) in request.arguments.unwrap_or_default() {
        let Value::String(value) = value else {
            return Err(ErrorData::invalid_params(
                format!(
                    "argument `{name}` of prompt `{}` is not a string",
                    request.name
                ),
                None,
            ));
        };
        arguments.insert(name, value);
    }
    let got = shared
        .toolset
        .get_prompt(&cx, &request.name, arguments)
        .await
        .map_err(catalog_error)?;
    Ok(mcp_messages(got, cx.call_id()).into())
}

fn mcp_prompt(spec: &PromptSpec) -> McpPrompt {
    let arguments = spec
        .arguments
        .iter()
        .map(|argument| {
            let mut mcp = McpArgument::new(&argument.name).with_required(argument.required);
            mcp.title.clone_from(&argument.title);
            mcp.description.clone_from(&argument.description);
            mcp
        })
        .collect::<Vec<_>>();
    let description = (!spec.description.is_empty()).then_some(spec.description.as_str());
    let mut prompt = McpPrompt::new(
        &spec.name,
        description,
        (!arguments.is_empty()).then_some(arguments),
    );
    prompt.title.clone_from(&spec.title);
    prompt
}

fn mcp_messages(got: PromptMessages, call_id: &str) -> GetPromptResult {
    let messages = got
        .messages
        .into_iter()
        .enumerate()
        .map(|(index, message)| {
            let role = match message.role {
                catalog::Role::User => Role::User,
                catalog::Role::Assistant => Role::Assistant,
            };
            let block = match message.content {
                MessageContent::Part(part) => content(part, call_id, index),
                MessageContent::Resource(contents) => {
                    ContentBlock::resource(resource_contents(contents))
                }
            };
            McpMessage::new(role, block)
        })
        .collect();
    let mut result = GetPromptResult::new(messages);
    result.description = got.description;
    result
}
