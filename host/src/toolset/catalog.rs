//! The catalog beyond tools, as a toolset serves it: [`Resource`],
//! [`ResourceTemplate`] and [`Prompt`], next to [`Tool`](super::Tool). Their
//! specs and results are in [`catalog`](crate::catalog).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{BoxFuture, Context};
use crate::catalog::{
    Completion, PromptMessages, PromptSpec, ResourceContents, ResourceSpec, ResourceTemplateSpec,
};
use crate::error::CallError;

/// A resource a client can read (MCP `resources/read`).
///
/// Implement it for resources served natively in Rust; layers that judge
/// items ([`Filter`](super::Filter)) pass it on or hide it.
pub trait Resource: Send + Sync {
    /// Where it is and what it is.
    fn spec(&self) -> &ResourceSpec;

    /// Its content now. `cx` carries the caller's identity.
    ///
    /// # Errors
    /// Why it cannot be read now.
    fn read<'a>(
        &'a self,
        cx: &'a Context,
    ) -> BoxFuture<'a, Result<Vec<ResourceContents>, CallError>>;
}

/// A family of resources whose URIs match a template (MCP
/// `resources/templates/list`): it makes the resource a read of one of its
/// URIs reaches.
pub trait ResourceTemplate: Send + Sync {
    /// The template and what its resources are.
    fn spec(&self) -> &ResourceTemplateSpec;

    /// The resource at `uri`, when `uri` is one of this template's. The
    /// resource's spec is what policies judge the read by, so it should say
    /// the template's name and plugin.
    fn resolve(&self, cx: &Context, uri: &str) -> Option<Arc<dyn Resource>>;

    /// Suggested values for the variable `argument`, given what the user
    /// typed (`value`) and the variables already filled in (`context`).
    /// None by default.
    ///
    /// # Errors
    /// Why none can be suggested now.
    fn complete<'a>(
        &'a self,
        cx: &'a Context,
        argument: &'a str,
        value: &'a str,
        context: &'a BTreeMap<String, String>,
    ) -> BoxFuture<'a, Result<Completion, CallError>> {
        let _ = (cx, argument, value, context);
        Box::pin(async { Ok(Completion::default()) })
    }
}

/// A prompt a user can pick (MCP `prompts/get`).
pub trait Prompt: Send + Sync {
    /// Its name, description and arguments.
    fn spec(&self) -> &PromptSpec;

    /// The messages, filled in with `arguments`, which the caller
    /// ([`ToolsetExt::get_prompt`](super::ToolsetExt::get_prompt)) has
    /// checked against [`PromptSpec::check`].
    ///
    /// # Errors
    /// Why it cannot be filled in.
    fn get<'a>(
        &'a self,
        cx: &'a Context,
        arguments: BTreeMap<String, String>,
    ) -> BoxFuture<'a, Result<PromptMessages, CallError>>;

    /// Suggested values for the argument `argument`, given what the user
    /// typed (`value`) and the arguments already filled in (`context`).
    /// None by default.
    ///
    /// # Errors
    /// Why none can be suggested now.
    fn complete<'a>(
        &'a self,
        cx: &'a Context,
        argument: &'a str,
        value: &'a str,
        context: &'a BTreeMap<String, String>,
    ) -> BoxFuture<'a, Result<Completion, CallError>> {
        let _ = (cx, argument, value, context);
        Box::pin(async { Ok(Completion::default()) })
    }
}

/// The listed resource at `uri`, else the one the first template that knows
/// `uri` makes (see [`Toolset::resource`](super::Toolset::resource)).
pub(crate) fn find_resource(
    resources: &[Arc<dyn Resource>],
    templates: &[Arc<dyn ResourceTemplate>],
    cx: &Context,
    uri: &str,
) -> Option<Arc<dyn Resource>> {
    resources
        .iter()
        .find(|resource| resource.spec().uri == uri)
        .cloned()
        .or_else(|| {
            templates
                .iter()
                .find_map(|template| template.resolve(cx, uri))
        })
}

/// The listed prompt named `name`, else one that answers to it (a qualified
/// or bare name).
pub(crate) fn find_prompt(prompts: &[Arc<dyn Prompt>], name: &str) -> Option<Arc<dyn Prompt>> {
    prompts
        .iter()
        .find(|prompt| prompt.spec().name == name)
        .or_else(|| prompts.iter().find(|prompt| prompt.spec().answers_to(name)))
        .cloned()
}
