//! Tools and toolsets as an agent framework sees them: ADK's `Tool` /
//! `Toolset`, Eino's `BaseTool`, across the WebAssembly boundary.
//!
//! A [`Tool`] has a spec (info and declaration), `invoke` and `stream`. Plugin
//! tools and tools written natively in Rust are both `Tool`s. A [`Toolset`]
//! returns the tools a given [`Context`] may see: a plugin, a plugins directory,
//! or a layer (filter, confirmation, aliases) wrapped around another set.

mod alias;
mod confirm;
pub(crate) mod context;
mod dir;
mod executor;
mod filter;
mod plugin_tools;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

pub use alias::{AliasError, Aliases, OnUnknown, ToolAliases, UnknownFuture};
pub use confirm::{Confirm, ConfirmationHint, ConfirmationRequest, DEFAULT_REMEMBERED_DECISIONS};
pub use context::{Context, Decision, Identity};
pub use dir::{LoadState, PluginDir, PluginStatus, ToolsetChange, WatchError};
pub use executor::{
    ArgumentsHook, BatchCall, BatchOutcome, Executor, Logging, Metrics, Middleware, Next,
    ToolMetrics, WithMiddleware,
};
pub use filter::{Filter, Predicate};
pub use plugin_tools::{PluginTool, SinglePlugin, StaticPlugins};

use crate::error::CallError;
use crate::plugin::ToolStream;
use crate::tool::{ToolOutput, ToolSpec};

/// A boxed, `Send` future: what object-safe async trait methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One tool: its spec, and how to run it.
///
/// Implement it for tools written natively in Rust; plugin tools implement it
/// through [`PluginTool`].
pub trait Tool: Send + Sync {
    /// Info and declaration: what the model sees.
    fn spec(&self) -> &ToolSpec;

    /// Runs the tool to completion. `cx` carries the call and invocation IDs,
    /// the caller's identity and any confirmation decisions.
    fn invoke<'a>(
        &'a self,
        cx: &'a Context,
        arguments: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, CallError>>;

    /// Runs the tool as a stream of parts. The default runs [`Tool::invoke`] and
    /// yields its result (JSON first, then parts).
    fn stream<'a>(
        &'a self,
        cx: &'a Context,
        arguments: Value,
    ) -> BoxFuture<'a, Result<ToolStream, CallError>> {
        Box::pin(async move {
            let output = self.invoke(cx, arguments).await?;
            Ok(ToolStream::from_output(output))
        })
    }
}

/// A set of tools whose contents may differ per context (user, roles, session).
pub trait Toolset: Send + Sync {
    /// The set's name (for logs and listings).
    fn name(&self) -> &str;

    /// The tools this context may see and call, in a stable order. Names are unique.
    fn tools(&self, cx: &Context) -> Vec<Arc<dyn Tool>>;

    /// The tool a call of `name` reaches in this context. The default looks
    /// `name` up in [`Toolset::tools`]. Layers that resolve extra names
    /// ([`Aliases`], [`OnUnknown`]) override it; layers that wrap tools should
    /// forward it to their inner set so those names survive.
    fn lookup(&self, cx: &Context, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools(cx).into_iter().find(|t| t.spec().name == name)
    }
}

impl<T: Toolset + ?Sized> Toolset for Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn tools(&self, cx: &Context) -> Vec<Arc<dyn Tool>> {
        (**self).tools(cx)
    }

    fn lookup(&self, cx: &Context, name: &str) -> Option<Arc<dyn Tool>> {
        (**self).lookup(cx, name)
    }
}

impl<T: Toolset + ?Sized> Toolset for Box<T> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn tools(&self, cx: &Context) -> Vec<Arc<dyn Tool>> {
        (**self).tools(cx)
    }

    fn lookup(&self, cx: &Context, name: &str) -> Option<Arc<dyn Tool>> {
        (**self).lookup(cx, name)
    }
}

/// Convenience methods on every toolset.
pub trait ToolsetExt: Toolset {
    /// The tool a call of `name` reaches in this context ([`Toolset::lookup`]).
    ///
    /// # Errors
    /// [`CallError::UnknownTool`] listing the tools this context can see.
    fn find(&self, cx: &Context, name: &str) -> Result<Arc<dyn Tool>, CallError> {
        self.lookup(cx, name).ok_or_else(|| CallError::UnknownTool {
            tool: name.to_owned(),
            available: self
                .tools(cx)
                .iter()
                .map(|t| t.spec().name.clone())
                .collect(),
        })
    }

    /// Finds a tool by name and invokes it.
    ///
    /// # Errors
    /// As [`ToolsetExt::find`] and [`Tool::invoke`].
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
            tool.invoke(cx, arguments).await
        })
    }

    /// Finds a tool by name and streams it.
    ///
    /// # Errors
    /// As [`ToolsetExt::find`] and [`Tool::stream`].
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
            tool.stream(cx, arguments).await
        })
    }
}

impl<T: Toolset + ?Sized> ToolsetExt for T {}
