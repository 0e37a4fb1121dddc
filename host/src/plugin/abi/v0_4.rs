//! `toolhost:plugin@0.4.0` (`wit/plugin.wit`), the current contract: the only
//! module that names its generated bindings. It links the version's host
//! imports and converts its types to and from the host's (the shared part:
//! `contract_version!` in `abi/contract.rs`). Over `@0.3.0` it has the
//! `catalog` interface (resources, templates, prompts, completions; its own
//! world, `catalog-plugin`) and two host imports: `resource-updated` and `ask`.

contract_version!("../wit", "toolhost:plugin/tools@0.4.0", caller,
    world "toolhost:plugin/catalog-plugin" CatalogPlugin,
    imports { "toolhost:plugin/host.ask": async | trappable, },
    host {
        fn resource_updated(&mut self, uri: String) -> wasmtime::Result<()> {
            self.host_resource_updated(uri);
            Ok(())
        }

        async fn ask(
            &mut self,
            question: types::Question,
        ) -> wasmtime::Result<Result<types::Answer, types::AskError>> {
            let asked = super::Question {
                message: question.message,
                schema: question.schema,
            };
            Ok(match self.host_ask(asked).await? {
                Ok(super::Answer::Accept(content)) => Ok(types::Answer::Accept(content)),
                Ok(super::Answer::Decline) => Ok(types::Answer::Decline),
                Ok(super::Answer::Cancel) => Ok(types::Answer::Cancel),
                Err(super::AskError::Unavailable(why)) => Err(types::AskError::Unavailable(why)),
                Err(super::AskError::Invalid(why)) => Err(types::AskError::Invalid(why)),
                Err(super::AskError::TooMany(why)) => Err(types::AskError::TooMany(why)),
                Err(super::AskError::Timeout) => Err(types::AskError::Timeout),
            })
        }
    }
);

hinted_declaration!();

use super::catalog::{Complete, Described, Get, RawContent, RawMessages, Read, Request, Target};
use crate::catalog::{
    Body, Completion, PromptArgument, PromptSpec, ResourceContents, ResourceSpec,
    ResourceTemplateSpec, Role,
};
use bindings::exports::toolhost::plugin::catalog as cat;

/// The catalog interface a plugin of this version may export.
pub(crate) const CATALOG_INTERFACE: &str = "toolhost:plugin/catalog@0.4.0";

/// Where a component's catalog exports are.
#[derive(Clone)]
pub(crate) struct CatalogIndices(cat::GuestIndices);

/// The typed catalog exports of an instance.
pub(crate) type CatalogExports = cat::Guest;

impl CatalogIndices {
    /// `None` for a component that exports only tools.
    pub(crate) fn new(
        pre: &InstancePre<PluginState>,
        component: &Component,
    ) -> wasmtime::Result<Option<Self>> {
        if component
            .get_export_index(None, CATALOG_INTERFACE)
            .is_none()
        {
            return Ok(None);
        }
        Ok(Some(Self(cat::GuestIndices::new(pre)?)))
    }

    pub(crate) fn load(
        &self,
        store: &mut Store<PluginState>,
        instance: &Instance,
    ) -> wasmtime::Result<CatalogExports> {
        self.0.load(store, instance)
    }
}

pub(crate) async fn describe(
    exports: &CatalogExports,
    store: &mut Store<PluginState>,
) -> wasmtime::Result<Described> {
    let described = exports.call_describe(store).await?;
    Ok(Described {
        resources: described.resources.into_iter().map(resource).collect(),
        templates: described.templates.into_iter().map(template).collect(),
        prompts: described.prompts.into_iter().map(prompt).collect(),
    })
}

pub(crate) async fn read(
    exports: &CatalogExports,
    store: &mut Store<PluginState>,
    read: Read,
) -> wasmtime::Result<Result<Vec<ResourceContents>, ToolError>> {
    let read = types::Read {
        request: request(read.request),
        uri: read.uri,
        template: read.template,
        variables: read.variables,
    };
    let result = exports.call_read_resource(store, &read).await?;
    Ok(result
        .map(|contents| contents.into_iter().map(resource_contents).collect())
        .map_err(tool_error))
}

pub(crate) async fn get(
    exports: &CatalogExports,
    store: &mut Store<PluginState>,
    get: Get,
) -> wasmtime::Result<Result<RawMessages, ToolError>> {
    let get = types::Get {
        request: request(get.request),
        name: get.name,
        arguments: get.arguments,
    };
    let result = exports.call_get_prompt(store, &get).await?;
    Ok(result
        .map(|got| RawMessages {
            description: got.description,
            messages: got
                .messages
                .into_iter()
                .map(|message| {
                    let role = match message.role {
                        types::Role::User => Role::User,
                        types::Role::Assistant => Role::Assistant,
                    };
                    let content = match message.content {
                        types::MessageContent::Part(p) => RawContent::Part(part(p)),
                        types::MessageContent::Resource(contents) => {
                            RawContent::Resource(resource_contents(contents))
                        }
                    };
                    (role, content)
                })
                .collect(),
        })
        .map_err(tool_error))
}

pub(crate) async fn complete(
    exports: &CatalogExports,
    store: &mut Store<PluginState>,
    complete: Complete,
) -> wasmtime::Result<Result<Completion, ToolError>> {
    let complete = types::CompletionRequest {
        request: request(complete.request),
        target: match complete.target {
            Target::Prompt(name) => types::CompletionTarget::Prompt(name),
            Target::Template(template) => types::CompletionTarget::Template(template),
        },
        argument: complete.argument,
        value: complete.value,
        context: complete.context,
    };
    let result = exports.call_complete(store, &complete).await?;
    Ok(result
        .map(|completion| Completion {
            values: completion.values,
            total: completion.total,
            has_more: completion.has_more,
        })
        .map_err(tool_error))
}

fn request(request: Request) -> types::Request {
    types::Request {
        call_id: request.call_id,
        invocation_id: request.invocation_id,
        caller: request.caller.map(wit_caller),
    }
}

fn resource(info: types::ResourceInfo) -> ResourceSpec {
    let mut spec = ResourceSpec::new(info.uri, info.name);
    spec.title = info.title;
    spec.description = info.description;
    spec.mime_type = info.mime_type;
    spec.size = info.size;
    spec
}

fn template(info: types::ResourceTemplateInfo) -> ResourceTemplateSpec {
    let mut spec = ResourceTemplateSpec::new(info.uri_template, info.name);
    spec.title = info.title;
    spec.description = info.description;
    spec.mime_type = info.mime_type;
    spec
}

fn prompt(info: types::PromptInfo) -> PromptSpec {
    let mut spec = PromptSpec::new(info.name, info.description);
    spec.title = info.title;
    spec.arguments = info
        .arguments
        .into_iter()
        .map(|argument| {
            let mut spec = if argument.required {
                PromptArgument::required(argument.name)
            } else {
                PromptArgument::optional(argument.name)
            };
            spec.title = argument.title;
            spec.description = argument.description;
            spec
        })
        .collect();
    spec
}

fn resource_contents(contents: types::ResourceContents) -> ResourceContents {
    ResourceContents {
        uri: contents.uri,
        mime_type: contents.mime_type,
        body: match contents.body {
            types::Body::Text(text) => Body::Text(text),
            types::Body::Bytes(bytes) => Body::Bytes(bytes),
        },
    }
}
