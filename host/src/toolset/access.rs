//! Who may list and call what: the access layer, rules over callers (their
//! [`Principal`](super::Principal): issuer, subject, scopes, roles, claims)
//! and catalog items.
//!
//! Unlike [`Filter`] (the operator hides an item from everyone: absent), an
//! item the rules do not grant a caller is unlisted for that caller, and a
//! call to it is refused as [`CallError::Forbidden`] before its arguments
//! are even checked, so the caller (and the metrics) can tell "not yours"
//! from "no such tool".

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;

use super::filter::Filter;
use super::{
    BoxFuture, Context, Predicate, Prompt, Resource, ResourceTemplate, Started, Tool, Toolset,
};
use crate::catalog::{Item, Kinds};
use crate::error::CallError;
use crate::tool::{Prepared, ToolSpec};

/// One access rule: the items a set of callers may list and call. Build the
/// predicate from caller tests ([`Predicate::scope`], [`Predicate::role`],
/// [`Predicate::subject`], [`Predicate::claim`], ...) and item tests
/// ([`Predicate::glob`], [`Predicate::read_only`], ...).
#[derive(Debug, Clone)]
pub struct AccessRule {
    name: String,
    grants: Predicate,
}

impl AccessRule {
    /// A rule called `name` (for logs and docs) granting what `grants`
    /// holds for.
    pub fn new(name: impl Into<String>, grants: Predicate) -> Self {
        Self {
            name: name.into(),
            grants,
        }
    }

    /// The rule's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// The access layer: a caller sees and may call what at least one rule
/// grants it, nothing else (deny by default).
///
/// # Examples
/// ```
/// use toolhost::toolset::{Access, AccessRule, PluginSet, Predicate};
/// # fn demo(plugins: PluginSet) {
/// let rules = [
///     // Holders of the `tools:read` scope: read-only tools.
///     AccessRule::new(
///         "readers",
///         Predicate::scope("tools:read").and(Predicate::read_only()),
///     ),
///     // The `fs-writers` group: everything of the `fs` plugin.
///     AccessRule::new(
///         "fs-writers",
///         Predicate::role("fs-writers").and(Predicate::glob(["fs.*"])),
///     ),
/// ];
/// let set = Access::new(plugins, rules);
/// # let _ = set;
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Access<T> {
    granted: Filter<T>,
    rules: Arc<[AccessRule]>,
}

impl<T: Toolset> Access<T> {
    /// Wraps `inner`: each caller gets what `rules` grant it.
    pub fn new(inner: T, rules: impl IntoIterator<Item = AccessRule>) -> Self {
        let rules: Arc<[AccessRule]> = rules.into_iter().collect();
        let any = Predicate::any(rules.iter().map(|rule| rule.grants.clone()));
        Self {
            granted: Filter::new(inner, any),
            rules,
        }
    }

    /// The rules.
    pub fn rules(&self) -> &[AccessRule] {
        &self.rules
    }

    /// The wrapped set.
    pub fn inner(&self) -> &T {
        self.granted.inner()
    }
}

impl<T: Toolset> Toolset for Access<T> {
    fn name(&self) -> &str {
        self.granted.name()
    }

    fn tools(&self, cx: &Context) -> Vec<Arc<dyn Tool>> {
        self.granted.tools(cx)
    }

    fn lookup(&self, cx: &Context, name: &str) -> Option<Arc<dyn Tool>> {
        // One lookup, then judged: two (the granted set's, then the inner
        // set's) could straddle a plugin's load and find a tool that just
        // appeared forbidden.
        let tool = self.granted.inner().lookup(cx, name)?;
        let decision = crate::spans::access(&tool.spec().name);
        let granted = decision.in_scope(|| self.granted.admits(cx, Item::Tool(tool.spec())));
        crate::spans::access_decided(&decision, granted);
        if granted {
            return Some(tool);
        }
        // A tool this caller may not call: found, so that the call is
        // refused as forbidden (not as unknown), before its arguments.
        let mut spec = tool.spec().clone();
        // It never runs: not as a task, not as a stream.
        spec.long_running = false;
        spec.streaming = false;
        Some(Arc::new(Forbidden { spec }))
    }

    fn not_found(&self, cx: &Context, name: &str) -> CallError {
        self.granted.not_found(cx, name)
    }

    fn kinds(&self) -> Kinds {
        self.granted.kinds()
    }

    fn resources(&self, cx: &Context) -> Vec<Arc<dyn Resource>> {
        self.granted.resources(cx)
    }

    fn resource_templates(&self, cx: &Context) -> Vec<Arc<dyn ResourceTemplate>> {
        self.granted.resource_templates(cx)
    }

    fn prompts(&self, cx: &Context) -> Vec<Arc<dyn Prompt>> {
        self.granted.prompts(cx)
    }

    fn resource(&self, cx: &Context, uri: &str) -> Option<Arc<dyn Resource>> {
        self.granted.resource(cx, uri)
    }

    fn prompt(&self, cx: &Context, name: &str) -> Option<Arc<dyn Prompt>> {
        self.granted.prompt(cx, name)
    }
}

/// A tool the caller may not call: every call is refused, unprepared.
struct Forbidden {
    spec: ToolSpec,
}

impl Forbidden {
    fn refusal(&self, cx: &Context) -> CallError {
        CallError::Forbidden {
            tool: self.spec.name.clone(),
            caller: caller(cx),
        }
    }
}

impl Tool for Forbidden {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn prepare(&self, cx: &Context, _arguments: Value) -> Result<Prepared, CallError> {
        Err(self.refusal(cx))
    }

    fn run<'a>(
        &'a self,
        cx: &'a Context,
        _arguments: Prepared,
    ) -> BoxFuture<'a, Result<Started, CallError>> {
        Box::pin(std::future::ready(Err(self.refusal(cx))))
    }
}

/// The caller as a refusal names it.
fn caller(cx: &Context) -> String {
    match cx.identity().principal.as_deref() {
        Some(p) if !p.is_anonymous() => format!("`{}` of `{}`", p.subject, p.issuer),
        _ => "the anonymous caller".to_owned(),
    }
}

/// Caller and item tests for access rules.
impl Predicate {
    /// Every item, for callers whose principal was granted this scope.
    pub fn scope(scope: impl Into<String>) -> Self {
        let scope = scope.into();
        Self::new(move |cx, _| {
            cx.identity()
                .principal
                .as_deref()
                .is_some_and(|p| p.scopes.contains(&scope))
        })
    }

    /// Every item, for callers with one of these subjects (under any issuer:
    /// combine with [`Predicate::issuer`]).
    pub fn subject<I, S>(subjects: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let subjects: BTreeSet<String> = subjects.into_iter().map(Into::into).collect();
        Self::new(move |cx, _| {
            cx.identity()
                .principal
                .as_deref()
                .is_some_and(|p| !p.is_anonymous() && subjects.contains(&p.subject))
        })
    }

    /// Every item, for callers vouched for by one of these issuers.
    pub fn issuer<I, S>(issuers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let issuers: BTreeSet<String> = issuers.into_iter().map(Into::into).collect();
        Self::new(move |cx, _| {
            cx.identity()
                .principal
                .as_deref()
                .is_some_and(|p| !p.is_anonymous() && issuers.contains(&p.issuer))
        })
    }

    /// Every item, for callers whose claim `name` is `value`, or (a list)
    /// contains it.
    pub fn claim(name: impl Into<String>, value: Value) -> Self {
        let name = name.into();
        Self::new(move |cx, _| {
            let Some(claim) = cx
                .identity()
                .principal
                .as_deref()
                .and_then(|p| p.claims.get(&name))
            else {
                return false;
            };
            claim == &value || claim.as_array().is_some_and(|items| items.contains(&value))
        })
    }

    /// Tools that say they change nothing (`readOnlyHint`), and every item
    /// of another kind (reading a resource or getting a prompt changes
    /// nothing).
    pub fn read_only() -> Self {
        Self::new(|_, item| match item {
            Item::Tool(spec) => spec.hints.read_only == Some(true),
            _ => true,
        })
    }

    /// Tools that may destroy or overwrite: those that say so
    /// (`destructiveHint`), and, as MCP assumes, those that say neither that
    /// nor that they are read-only.
    pub fn destructive() -> Self {
        Self::new(|_, item| match item {
            Item::Tool(spec) => {
                spec.hints.destructive == Some(true)
                    || (spec.hints.destructive.is_none() && spec.hints.read_only != Some(true))
            }
            _ => false,
        })
    }
}
