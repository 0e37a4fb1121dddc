//! Tools and toolsets as an agent framework sees them: ADK's `Tool` /
//! `Toolset`, Eino's `BaseTool`, across the WebAssembly boundary.
//!
//! A [`Tool`] has a spec (info and declaration), `prepare` and `run`. Plugin
//! tools and tools written natively in Rust are both `Tool`s. A [`Toolset`]
//! returns the tools a given [`Context`] may see: a plugin, a plugins directory,
//! or a layer (filter, confirmation, aliases) wrapped around another set.
//!
//! Tools are the first kind of a toolset's catalog: a set may also offer
//! [`Resource`]s, [`ResourceTemplate`]s and [`Prompt`]s (MCP's other server
//! features; see [`catalog`](crate::catalog)), and the layers that judge items
//! ([`Filter`]) judge them all.

#[macro_use]
mod plugin_catalog;
mod access;
mod alias;
mod call;
mod catalog;
mod confirm;
pub(crate) mod context;
mod dir;
mod executor;
mod filter;
mod observe;
mod plugin_set;
mod plugin_tools;
mod unknown;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

pub use access::{Access, AccessRule};
pub use alias::{AliasError, Aliases, ToolAliases};
pub use call::{ApproveAll, Approver, NoApprover, Started, call, start, start_prepared};
pub(crate) use call::{drive, validate};
pub use catalog::{Prompt, Resource, ResourceTemplate};
pub use confirm::{Confirm, ConfirmationHint, ConfirmationRequest, DEFAULT_REMEMBERED_DECISIONS};
pub use context::{Context, Decision, Identity, Principal};
pub use dir::{LoadState, PluginDir, PluginStatus, ToolsetChange, WatchError};
pub use executor::{
    ArgumentsHook, BatchCall, BatchOutcome, Executor, Logging, Metrics, Middleware, Next,
    ToolMetrics, WithMiddleware,
};
pub(crate) use filter::glob_matches;
pub use filter::{Filter, Predicate};
pub use observe::{CallObserver, CallWatch, Outcome, OwnInvocations};
pub use plugin_set::{ListedTool, Loaded, PluginSet};
pub(crate) use plugin_set::{log_failed, log_loaded, plugin_name, warn_clash};
pub use plugin_tools::{PluginTool, SinglePlugin};
pub use unknown::{OnUnknown, UnknownFuture};

use crate::catalog::{Completion, CompletionRef, Kinds, PromptMessages, ResourceContents};
use crate::error::CallError;
use crate::tool::ToolStream;
use crate::tool::{Prepared, ToolOutput, ToolSpec};

/// A boxed, `Send` future: what object-safe async trait methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One tool: its spec, and how to run it.
///
/// Implement it for tools written natively in Rust; plugin tools implement it
/// through [`PluginTool`]; layers (confirmation, aliases, middlewares) wrap
/// another tool and forward what they do not change. Front ends run tools
/// through the call driver ([`start`], [`ToolsetExt`]), which prepares the
/// arguments once, runs the tool, and asks an [`Approver`] when a layer
/// pauses the call.
pub trait Tool: Send + Sync {
    /// Info and declaration: what the model sees.
    fn spec(&self) -> &ToolSpec;

    /// The arguments this call will run with: rewritten by the layers that
    /// rewrite arguments (aliases, argument hooks), coerced and checked
    /// against the input schema. It runs before anything else, so a human
    /// asked to confirm a call sees, and approves, exactly these.
    ///
    /// The default is [`ToolSpec::prepare`]; layers forward it to the tool
    /// they wrap (after rewriting the arguments, for those that do).
    ///
    /// # Errors
    /// [`CallError::InvalidArguments`] listing every violation, or a layer's refusal.
    fn prepare(&self, cx: &Context, arguments: Value) -> Result<Prepared, CallError> {
        let _ = cx;
        self.spec().prepare(arguments)
    }

    /// Runs the tool with prepared arguments: its whole output, a stream of
    /// its parts when it streams ([`ToolSpec::streaming`]), or a pause when a
    /// layer needs a human's approval first ([`Started::NeedsApproval`]; the
    /// tool has not run). `cx` carries the call and invocation IDs, the
    /// caller's identity and any confirmation decisions.
    ///
    /// # Errors
    /// The call's failure: a refusal, the tool's own error, an exhausted budget.
    fn run<'a>(
        &'a self,
        cx: &'a Context,
        arguments: Prepared,
    ) -> BoxFuture<'a, Result<Started, CallError>>;
}

/// A set of tools whose contents may differ per context (user, roles, session).
pub trait Toolset: Send + Sync {
    /// The set's name (for logs and listings).
    fn name(&self) -> &str;

    /// The tools this context may see and call, in a stable order. Names are unique.
    fn tools(&self, cx: &Context) -> Vec<Arc<dyn Tool>>;

    /// The tool a call of `name` reaches in this context. The default looks
    /// `name` up in [`Toolset::tools`]: a listed name, else a qualified name
    /// `plugin.tool` ([`ToolSpec::qualified_name`]), which reaches a plugin's
    /// tool whatever name it is listed under. Layers that resolve extra names
    /// ([`Aliases`], [`OnUnknown`]) override it; layers that wrap tools should
    /// forward it to their inner set so those names survive.
    fn lookup(&self, cx: &Context, name: &str) -> Option<Arc<dyn Tool>> {
        find_named(&self.tools(cx), name)
    }

    /// Why a call of `name`, which [`Toolset::lookup`] did not resolve, reaches
    /// no tool in this context. The default: [`CallError::AmbiguousTool`] when
    /// several listed tools answer to `name` (a bare name two plugins offer),
    /// else [`CallError::UnknownTool`] listing the tools. Layers that resolve
    /// extra names explain those ([`Aliases`]); layers that hide tools must
    /// not name hidden tools here ([`Filter`]).
    fn not_found(&self, cx: &Context, name: &str) -> CallError {
        unresolved(&self.tools(cx), name)
    }

    /// The kinds of items this set may offer, now or after a change: what a
    /// front end advertises. The default is tools only; a set that offers
    /// resources or prompts says so, and layers say what their inner set says.
    fn kinds(&self) -> Kinds {
        Kinds::TOOLS
    }

    /// The resources this context may see and read, in a stable order. URIs
    /// are unique. The default: none.
    fn resources(&self, cx: &Context) -> Vec<Arc<dyn Resource>> {
        let _ = cx;
        Vec::new()
    }

    /// The resource templates this context may see, in a stable order. The
    /// default: none.
    fn resource_templates(&self, cx: &Context) -> Vec<Arc<dyn ResourceTemplate>> {
        let _ = cx;
        Vec::new()
    }

    /// The prompts this context may see and get, in a stable order. Names are
    /// unique. The default: none.
    fn prompts(&self, cx: &Context) -> Vec<Arc<dyn Prompt>> {
        let _ = cx;
        Vec::new()
    }

    /// The resource a read of `uri` reaches in this context. The default: the
    /// listed resource at `uri`, else the one the first template that knows
    /// `uri` makes ([`ResourceTemplate::resolve`]). Layers that hide items
    /// must judge the resource this returns.
    fn resource(&self, cx: &Context, uri: &str) -> Option<Arc<dyn Resource>> {
        catalog::find_resource(&self.resources(cx), &self.resource_templates(cx), cx, uri)
    }

    /// The prompt a get of `name` reaches in this context. The default: the
    /// prompt listed as `name`, else one that answers to it (a qualified or
    /// bare name, as for tools).
    fn prompt(&self, cx: &Context, name: &str) -> Option<Arc<dyn Prompt>> {
        catalog::find_prompt(&self.prompts(cx), name)
    }
}

/// The first of `tools` listed as `name`, else the first whose qualified name
/// is `name`; copies nothing but the result.
pub(crate) fn find_named(tools: &[Arc<dyn Tool>], name: &str) -> Option<Arc<dyn Tool>> {
    tools
        .iter()
        .find(|tool| tool.spec().name == name)
        .or_else(|| {
            tools
                .iter()
                .find(|tool| tool.spec().qualified_name.as_deref() == Some(name))
        })
        .cloned()
}

/// Why `name` reaches none of `tools` (see [`Toolset::not_found`]).
pub(crate) fn unresolved(tools: &[Arc<dyn Tool>], name: &str) -> CallError {
    let candidates: Vec<String> = tools
        .iter()
        .filter(|tool| tool.spec().answers_to(name))
        .map(|tool| tool.spec().name.clone())
        .collect();
    if candidates.len() > 1 {
        return CallError::AmbiguousTool {
            tool: name.to_owned(),
            candidates,
        };
    }
    CallError::UnknownTool {
        tool: name.to_owned(),
        available: tools.iter().map(|t| t.spec().name.clone()).collect(),
    }
}

/// A layer over a toolset that passes on the inner set's tools, each through
/// [`Layer::wrap`] (confirmation, aliases, middlewares), and the rest of its
/// catalog unchanged: tower's `Layer`, for toolsets. Implement it and the layer is a [`Toolset`] whose name and
/// listing come from the inner set, and whose lookups and refusals do too
/// unless the layer resolves names of its own ([`Layer::resolve`],
/// [`Layer::unresolved`]). Layers that hide tools ([`Filter`]) implement
/// [`Toolset`] themselves.
pub trait Layer: Send + Sync {
    /// The set this layer wraps.
    type Inner: Toolset + ?Sized;

    /// The set this layer wraps.
    fn inner(&self) -> &Self::Inner;

    /// The tool as this layer passes it on.
    fn wrap(&self, cx: &Context, tool: Arc<dyn Tool>) -> Arc<dyn Tool>;

    /// The tool a call of `name` reaches ([`Toolset::lookup`]). The default:
    /// the inner set's, wrapped.
    fn resolve(&self, cx: &Context, name: &str) -> Option<Arc<dyn Tool>> {
        self.inner()
            .lookup(cx, name)
            .map(|tool| self.wrap(cx, tool))
    }

    /// Why `name` reaches no tool ([`Toolset::not_found`]). The default: the
    /// inner set's explanation.
    fn unresolved(&self, cx: &Context, name: &str) -> CallError {
        self.inner().not_found(cx, name)
    }
}

impl<L: Layer> Toolset for L {
    fn name(&self) -> &str {
        self.inner().name()
    }

    fn tools(&self, cx: &Context) -> Vec<Arc<dyn Tool>> {
        self.inner()
            .tools(cx)
            .into_iter()
            .map(|tool| self.wrap(cx, tool))
            .collect()
    }

    fn lookup(&self, cx: &Context, name: &str) -> Option<Arc<dyn Tool>> {
        self.resolve(cx, name)
    }

    fn not_found(&self, cx: &Context, name: &str) -> CallError {
        self.unresolved(cx, name)
    }

    // Layers change tools; the rest of the catalog passes through.
    fn kinds(&self) -> Kinds {
        self.inner().kinds()
    }

    fn resources(&self, cx: &Context) -> Vec<Arc<dyn Resource>> {
        self.inner().resources(cx)
    }

    fn resource_templates(&self, cx: &Context) -> Vec<Arc<dyn ResourceTemplate>> {
        self.inner().resource_templates(cx)
    }

    fn prompts(&self, cx: &Context) -> Vec<Arc<dyn Prompt>> {
        self.inner().prompts(cx)
    }

    fn resource(&self, cx: &Context, uri: &str) -> Option<Arc<dyn Resource>> {
        self.inner().resource(cx, uri)
    }

    fn prompt(&self, cx: &Context, name: &str) -> Option<Arc<dyn Prompt>> {
        self.inner().prompt(cx, name)
    }
}

/// A shared or boxed toolset is the toolset it points to: a layer that
/// changes nothing.
macro_rules! toolset_behind_pointer {
    ($($pointer:ident),*) => {$(
        impl<T: Toolset + ?Sized> Layer for $pointer<T> {
            type Inner = T;

            fn inner(&self) -> &T {
                self
            }

            fn wrap(&self, _cx: &Context, tool: Arc<dyn Tool>) -> Arc<dyn Tool> {
                tool
            }
        }
    )*};
}

toolset_behind_pointer!(Arc, Box);

/// Convenience methods on every toolset.
pub trait ToolsetExt: Toolset {
    /// The tool a call of `name` reaches in this context ([`Toolset::lookup`]).
    ///
    /// # Errors
    /// As [`Toolset::not_found`]: [`CallError::UnknownTool`] listing the tools
    /// this context can see, [`CallError::AmbiguousTool`] listing the qualified
    /// names a bare name could mean, or [`CallError::AliasUnresolved`].
    fn find(&self, cx: &Context, name: &str) -> Result<Arc<dyn Tool>, CallError> {
        self.lookup(cx, name)
            .ok_or_else(|| self.not_found(cx, name))
    }

    /// Finds a tool by name and runs it through the call driver
    /// ([`start`], with nobody to ask), to its whole output. A call that
    /// needs a human's approval ends with [`CallError::ConfirmationRequired`],
    /// to resume with a [`Decision`] in the context; [`start`] with an
    /// [`Approver`] asks and resumes.
    ///
    /// # Errors
    /// As [`ToolsetExt::find`], [`start`] and [`Started::collect`].
    fn invoke<'a>(
        &'a self,
        cx: &'a Context,
        name: &'a str,
        arguments: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, CallError>>
    where
        Self: Sync,
    {
        Box::pin(async move {
            let tool = self.find(cx, name)?;
            start(&*tool, cx, arguments, &NoApprover)
                .await?
                .collect()
                .await
        })
    }

    /// As [`ToolsetExt::invoke`], as a stream of parts (a tool that does not
    /// stream gives its whole output as the stream's parts).
    ///
    /// # Errors
    /// As [`ToolsetExt::find`], [`start`] and [`Started::into_stream`].
    fn stream<'a>(
        &'a self,
        cx: &'a Context,
        name: &'a str,
        arguments: Value,
    ) -> BoxFuture<'a, Result<ToolStream, CallError>>
    where
        Self: Sync,
    {
        Box::pin(async move {
            let tool = self.find(cx, name)?;
            start(&*tool, cx, arguments, &NoApprover)
                .await?
                .into_stream()
        })
    }

    /// Reads the resource at `uri` ([`Toolset::resource`]).
    ///
    /// # Errors
    /// [`CallError::UnknownResource`] when no resource this context may read
    /// is there, or the resource's own error.
    fn read<'a>(
        &'a self,
        cx: &'a Context,
        uri: &'a str,
    ) -> BoxFuture<'a, Result<Vec<ResourceContents>, CallError>>
    where
        Self: Sync,
    {
        Box::pin(async move {
            let resource = self
                .resource(cx, uri)
                .ok_or_else(|| CallError::UnknownResource {
                    uri: uri.to_owned(),
                })?;
            resource.read(cx).await
        })
    }

    /// Gets the prompt `name` ([`Toolset::prompt`]) filled in with
    /// `arguments`, once they are checked against its spec
    /// ([`PromptSpec::check`](crate::catalog::PromptSpec::check)).
    ///
    /// # Errors
    /// [`CallError::UnknownPrompt`] listing the prompts this context can see,
    /// [`CallError::InvalidArguments`], or the prompt's own error.
    fn get_prompt<'a>(
        &'a self,
        cx: &'a Context,
        name: &'a str,
        arguments: BTreeMap<String, String>,
    ) -> BoxFuture<'a, Result<PromptMessages, CallError>>
    where
        Self: Sync,
    {
        Box::pin(async move {
            let prompt = self
                .prompt(cx, name)
                .ok_or_else(|| CallError::UnknownPrompt {
                    prompt: name.to_owned(),
                    available: self
                        .prompts(cx)
                        .iter()
                        .map(|prompt| prompt.spec().name.clone())
                        .collect(),
                })?;
            prompt.spec().check(&arguments)?;
            prompt.get(cx, arguments).await
        })
    }

    /// Suggested values for an argument of a prompt, or a variable of a
    /// resource template, this context can see. A prompt or template it
    /// cannot see, or an argument it does not take, gets none.
    ///
    /// # Errors
    /// The prompt's or template's own error.
    fn complete<'a>(
        &'a self,
        cx: &'a Context,
        target: &'a CompletionRef,
        argument: &'a str,
        value: &'a str,
        context: &'a BTreeMap<String, String>,
    ) -> BoxFuture<'a, Result<Completion, CallError>>
    where
        Self: Sync,
    {
        Box::pin(async move {
            match target {
                CompletionRef::Prompt(name) => match self.prompt(cx, name) {
                    Some(prompt) if prompt.spec().arguments.iter().any(|a| a.name == argument) => {
                        prompt.complete(cx, argument, value, context).await
                    }
                    _ => Ok(Completion::default()),
                },
                CompletionRef::Template(uri_template) => {
                    let template = self
                        .resource_templates(cx)
                        .into_iter()
                        .find(|template| template.spec().uri_template == *uri_template);
                    match template {
                        Some(template) => template.complete(cx, argument, value, context).await,
                        None => Ok(Completion::default()),
                    }
                }
            }
        })
    }
}

impl<T: Toolset + ?Sized> ToolsetExt for T {}
