//! Plugin tools as [`Tool`]s, and loaded plugins as [`Toolset`]s.

use std::sync::Arc;

use serde_json::Value;

use super::plugin_catalog::PluginCatalog;
use super::{BoxFuture, Context, Principal, Started, Tool, Toolset, find_named};
use crate::error::CallError;
use crate::plugin::Plugin;
use crate::policy::Grants;
use crate::tool::{Caller, Prepared, ToolCall, ToolSpec};

/// One tool of a loaded plugin. Holds its plugin version: a call that started
/// keeps running on it even if the plugin is replaced meanwhile.
#[derive(Debug, Clone)]
pub struct PluginTool {
    plugin: Plugin,
    /// The spec as listed (its name may be qualified as `plugin.tool`).
    spec: ToolSpec,
    /// The name the plugin declared.
    declared: String,
}

impl PluginTool {
    /// The tool `name` of `plugin`, listed under its declared name, with its
    /// qualified name `plugin.tool` ([`ToolSpec::qualified_name`]).
    pub fn new(plugin: &Plugin, name: &str) -> Option<Self> {
        let mut spec = plugin.tool(name)?.clone();
        spec.qualified_name = Some(format!("{}.{}", plugin.name(), spec.name));
        Some(Self {
            plugin: plugin.clone(),
            declared: spec.name.clone(),
            spec,
        })
    }

    /// Lists the tool under another name (used for `plugin.tool` qualification).
    pub fn renamed(mut self, name: impl Into<String>) -> Self {
        self.spec.name = name.into();
        self
    }

    /// The plugin it belongs to.
    pub fn plugin(&self) -> &Plugin {
        &self.plugin
    }

    /// The name the plugin declared.
    pub fn declared_name(&self) -> &str {
        &self.declared
    }

    fn call(&self, cx: &Context, arguments: Value) -> ToolCall {
        call_for(&self.plugin, cx, &self.declared).with_arguments(arguments)
    }
}

/// A call of `plugin`'s item `name` (a tool, a prompt, a URI) in context
/// `cx`: its call and invocation IDs, its log sink, and the caller as the
/// plugin may see them; no arguments.
pub(super) fn call_for(plugin: &Plugin, cx: &Context, name: &str) -> ToolCall {
    let mut call = ToolCall::new(name, Value::Null)
        .with_call_id(cx.call_id())
        .with_invocation_id(cx.invocation_id());
    if let Some(sink) = cx.log_sink() {
        call = call.with_log_sink(sink.clone());
    }
    if let Some(asker) = cx.asker() {
        call = call.with_asker(asker.clone());
    }
    match &cx.identity().principal {
        Some(principal) if !principal.is_anonymous() => {
            call.with_caller(caller(principal, plugin.grants()))
        }
        _ => call,
    }
}

/// What a plugin's call gets of a principal: issuer, subject, scopes and the
/// claims its grants name (`caller_claims`, which its tools see, and those its
/// per-caller secrets pick by, which only the host sees); nothing else.
fn caller(principal: &Principal, grants: &Grants) -> Caller {
    let caller = Caller::new(&*principal.issuer, &*principal.subject)
        .with_scopes(principal.scopes.iter().cloned());
    grants
        .caller_claims()
        .iter()
        .map(String::as_str)
        .chain(grants.secret_claims())
        .filter_map(|name| Some((name, principal.claims.get(name)?)))
        .fold(caller, |caller, (name, value)| {
            caller.with_claim(name, value.clone())
        })
}

impl Tool for PluginTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    // The stream-or-output choice is made here, once: a streaming tool
    // gives its parts as they come. The arguments were checked against this
    // spec's schema, the plugin's own, so the plugin does not check again.
    fn run<'a>(
        &'a self,
        cx: &'a Context,
        arguments: Prepared,
    ) -> BoxFuture<'a, Result<Started, CallError>> {
        let call = self.call(cx, arguments.into_arguments());
        Box::pin(async move {
            if self.spec.streaming {
                self.plugin.stream_prepared(call).await.map(Started::Stream)
            } else {
                self.plugin.invoke_prepared(call).await.map(Started::Output)
            }
        })
    }
}

/// One plugin as a toolset: its tools under their declared names (and
/// reachable as `plugin.tool` too).
#[derive(Debug, Clone)]
pub struct SinglePlugin {
    plugin: Plugin,
    tools: Vec<Arc<dyn Tool>>,
    catalog: PluginCatalog,
}

impl SinglePlugin {
    /// The toolset of one loaded plugin.
    pub fn new(plugin: Plugin) -> Self {
        let tools = plugin
            .tools()
            .filter_map(|spec| PluginTool::new(&plugin, &spec.name))
            .map(|tool| Arc::new(tool) as Arc<dyn Tool>)
            .collect();
        let catalog = PluginCatalog::of([&plugin]);
        Self {
            plugin,
            tools,
            catalog,
        }
    }
}

impl Toolset for SinglePlugin {
    fn name(&self) -> &str {
        self.plugin.name()
    }

    fn tools(&self, _cx: &Context) -> Vec<Arc<dyn Tool>> {
        self.tools.clone()
    }

    fn lookup(&self, _cx: &Context, name: &str) -> Option<Arc<dyn Tool>> {
        find_named(&self.tools, name)
    }

    catalog_of!(self => &self.catalog, false);
}

impl std::fmt::Debug for dyn Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.spec().name)
            .finish_non_exhaustive()
    }
}
