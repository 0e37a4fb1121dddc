//! The filter layer (ADK's `FilterToolset` and `Predicate`): shows each context
//! only the catalog items (tools, resources, templates, prompts) a rule lets
//! it see.
//!
//! Hidden means absent: a filtered-out tool is not listed, and a call to it is
//! [`CallError::UnknownTool`](crate::CallError::UnknownTool), the same answer
//! as for a name no tool has, so the model learns nothing about it; a hidden
//! resource or prompt is likewise unknown.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::{Context, Prompt, Resource, ResourceTemplate, Tool, Toolset};
use crate::catalog::{Item, Kind, Kinds};
use crate::error::CallError;

type PredicateFn = dyn Fn(&Context, Item<'_>) -> bool + Send + Sync;

/// A rule over (context, catalog item): true means the context may see the
/// item. Rules judge every kind of item ([`Item`]): a tool, a resource, a
/// resource template or a prompt.
///
/// Name rules ([`Predicate::allow`], [`Predicate::glob`]) match any of an
/// item's names ([`Item::any_name`]); for a tool ([`ToolSpec::names`](crate::ToolSpec::names)),
/// its listed name, its qualified name
/// `plugin.tool` and its bare name. So `write_file` matches the tool
/// `write_file` of every plugin, whether it is listed bare or (clashing) as
/// `fs.write_file`; `fs.write_file` and `fs.*` match only plugin `fs`'s,
/// however it is listed. Adding a plugin never makes a rule miss a tool it
/// matched. Put [`Aliases`](super::Aliases) outside the filter, and a tool
/// hidden by name is hidden under its aliases too.
///
/// # Examples
/// ```
/// use toolhost::toolset::Predicate;
/// // Read-only tools for everyone, everything for admins, never `drop_*`.
/// let rule = Predicate::glob(["read_*", "list_*"])
///     .or(Predicate::role("admin"))
///     .and(!Predicate::glob(["drop_*"]));
/// # let _ = rule;
/// ```
#[derive(Clone)]
pub struct Predicate {
    test: Arc<PredicateFn>,
}

impl std::fmt::Debug for Predicate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Predicate").finish_non_exhaustive()
    }
}

impl Predicate {
    /// A custom rule.
    ///
    /// # Examples
    /// ```
    /// use toolhost::catalog::Item;
    /// use toolhost::toolset::Predicate;
    /// // Tools that say they change nothing, and every other kind of item.
    /// let read_only = Predicate::new(|_, item| match item {
    ///     Item::Tool(spec) => spec.hints.read_only == Some(true),
    ///     _ => true,
    /// });
    /// # let _ = read_only;
    /// ```
    pub fn new(test: impl Fn(&Context, Item<'_>) -> bool + Send + Sync + 'static) -> Self {
        Self {
            test: Arc::new(test),
        }
    }

    /// Only the items with these names (ADK's `AllowedToolsPredicate`).
    pub fn allow<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let names: BTreeSet<String> = names.into_iter().map(Into::into).collect();
        Self::new(move |_, item| item.any_name(|name| names.contains(name)))
    }

    /// Every item except those with these names.
    pub fn deny<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        !Self::allow(names)
    }

    /// The items with a name ([`Item::any_name`]) matching any of these
    /// patterns: `*` matches any run of characters (`.` included, so `echo.*`
    /// matches every tool, resource and prompt of the plugin `echo`), `?`
    /// matches one character, anything else itself.
    pub fn glob<I, S>(patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let patterns: Vec<Vec<char>> = patterns
            .into_iter()
            .map(|p| p.as_ref().chars().collect())
            .collect();
        Self::new(move |_, item| {
            item.any_name(|name| {
                let name: Vec<char> = name.chars().collect();
                patterns.iter().any(|p| glob_match(p, &name))
            })
        })
    }

    /// The items of this kind.
    ///
    /// # Examples
    /// ```
    /// use toolhost::catalog::Kind;
    /// use toolhost::toolset::Predicate;
    /// // Prompts for everyone; tools and resources for admins.
    /// let rule = Predicate::kind(Kind::Prompt).or(Predicate::role("admin"));
    /// # let _ = rule;
    /// ```
    pub fn kind(kind: Kind) -> Self {
        Self::new(move |_, item| item.kind() == kind)
    }

    /// Every item, for callers whose [`Identity`](crate::toolset::Identity) has this role.
    pub fn role(role: impl Into<String>) -> Self {
        let role = role.into();
        Self::new(move |cx, _| cx.identity().roles.contains(&role))
    }

    /// Every item, for callers with at least one of these roles.
    pub fn any_role<I, S>(roles: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let roles: BTreeSet<String> = roles.into_iter().map(Into::into).collect();
        Self::new(move |cx, _| !roles.is_disjoint(&cx.identity().roles))
    }

    /// True when every rule is (true for none).
    pub fn all(rules: impl IntoIterator<Item = Predicate>) -> Self {
        let rules: Vec<Predicate> = rules.into_iter().collect();
        Self::new(move |cx, item| rules.iter().all(|r| r.test(cx, item)))
    }

    /// True when any rule is (false for none).
    pub fn any(rules: impl IntoIterator<Item = Predicate>) -> Self {
        let rules: Vec<Predicate> = rules.into_iter().collect();
        Self::new(move |cx, item| rules.iter().any(|r| r.test(cx, item)))
    }

    /// True when both are.
    pub fn and(self, other: Predicate) -> Self {
        Self::all([self, other])
    }

    /// True when either is.
    pub fn or(self, other: Predicate) -> Self {
        Self::any([self, other])
    }

    /// Whether this context may see this item.
    pub fn test(&self, cx: &Context, item: Item<'_>) -> bool {
        (self.test)(cx, item)
    }
}

impl std::ops::Not for Predicate {
    type Output = Predicate;

    /// True when the rule is false.
    fn not(self) -> Predicate {
        Predicate::new(move |cx, item| !self.test(cx, item))
    }
}

/// Whether `name` matches the glob `pattern` (see [`Predicate::glob`]).
pub(crate) fn glob_matches(pattern: &str, name: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let name: Vec<char> = name.chars().collect();
    glob_match(&pattern, &name)
}

/// Wildcard matching with `*` and `?`, linear backtracking on the last `*`.
fn glob_match(pattern: &[char], name: &[char]) -> bool {
    let (mut p, mut n) = (0, 0);
    // The position of the last `*` seen, and where in `name` it started matching.
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == '?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                // Let the last `*` swallow one more character and retry.
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

/// A toolset showing only the items (tools, resources, templates, prompts)
/// its [`Predicate`] lets each context see.
///
/// # Examples
/// ```
/// use toolhost::toolset::{Filter, Predicate, SinglePlugin};
/// # fn build(plugin: toolhost::Plugin) {
/// let set = Filter::new(SinglePlugin::new(plugin), Predicate::deny(["delete_order"]));
/// # let _ = set;
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Filter<T> {
    inner: T,
    predicate: Predicate,
}

impl<T: Toolset> Filter<T> {
    /// Wraps `inner`; only items for which `predicate` holds stay visible.
    pub fn new(inner: T, predicate: Predicate) -> Self {
        Self { inner, predicate }
    }

    /// The wrapped set.
    pub fn inner(&self) -> &T {
        &self.inner
    }

    /// Whether this filter lets `item` through in context `cx`.
    pub(crate) fn admits(&self, cx: &Context, item: Item<'_>) -> bool {
        self.predicate.test(cx, item)
    }
}

impl<T: Toolset> Toolset for Filter<T> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn tools(&self, cx: &Context) -> Vec<Arc<dyn Tool>> {
        let mut tools = self.inner.tools(cx);
        tools.retain(|tool| self.predicate.test(cx, Item::Tool(tool.spec())));
        tools
    }

    fn lookup(&self, cx: &Context, name: &str) -> Option<Arc<dyn Tool>> {
        // Resolve through the inner set (it may know aliases), then judge the
        // tool it resolves to: hidden under its name means hidden under all.
        self.inner
            .lookup(cx, name)
            .filter(|tool| self.predicate.test(cx, Item::Tool(tool.spec())))
    }

    fn not_found(&self, cx: &Context, name: &str) -> CallError {
        // The inner set explains (it may know aliases); the explanation may
        // name only the tools this context can see.
        let visible: Vec<String> = self
            .tools(cx)
            .iter()
            .map(|tool| tool.spec().name.clone())
            .collect();
        restrict(self.inner.not_found(cx, name), &visible)
    }

    fn kinds(&self) -> Kinds {
        self.inner.kinds()
    }

    fn resources(&self, cx: &Context) -> Vec<Arc<dyn Resource>> {
        let mut resources = self.inner.resources(cx);
        resources.retain(|resource| self.predicate.test(cx, Item::Resource(resource.spec())));
        resources
    }

    fn resource_templates(&self, cx: &Context) -> Vec<Arc<dyn ResourceTemplate>> {
        let mut templates = self.inner.resource_templates(cx);
        templates.retain(|template| {
            self.predicate
                .test(cx, Item::ResourceTemplate(template.spec()))
        });
        templates
    }

    fn prompts(&self, cx: &Context) -> Vec<Arc<dyn Prompt>> {
        let mut prompts = self.inner.prompts(cx);
        prompts.retain(|prompt| self.predicate.test(cx, Item::Prompt(prompt.spec())));
        prompts
    }

    fn resource(&self, cx: &Context, uri: &str) -> Option<Arc<dyn Resource>> {
        // Judged as the resource a read reaches, whether listed or made by a
        // template: a rule that hides a template's name hides what it makes.
        self.inner
            .resource(cx, uri)
            .filter(|resource| self.predicate.test(cx, Item::Resource(resource.spec())))
    }

    fn prompt(&self, cx: &Context, name: &str) -> Option<Arc<dyn Prompt>> {
        self.inner
            .prompt(cx, name)
            .filter(|prompt| self.predicate.test(cx, Item::Prompt(prompt.spec())))
    }
}

/// `err` naming only the tools in `visible`: an ambiguity among fewer than two
/// visible tools becomes an unknown name.
fn restrict(mut err: CallError, visible: &[String]) -> CallError {
    let unresolved = err.unresolved_mut();
    match unresolved {
        CallError::UnknownTool { available, .. } => {
            available.retain(|name| visible.contains(name));
        }
        CallError::AmbiguousTool { tool, candidates } => {
            candidates.retain(|name| visible.contains(name));
            if candidates.len() < 2 {
                *unresolved = CallError::UnknownTool {
                    tool: std::mem::take(tool),
                    available: visible.to_vec(),
                };
            }
        }
        _ => {}
    }
    err
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::{Value, json};

    use super::*;
    use crate::error::CallError;
    use crate::tool::{Prepared, ToolOutput, ToolSpec};
    use crate::toolset::{BoxFuture, Identity, Started, ToolsetExt};

    /// A native tool that counts its runs and answers `{"tool", "arguments"}`.
    pub(crate) struct Probe {
        spec: ToolSpec,
        pub(crate) runs: AtomicUsize,
    }

    impl Probe {
        pub(crate) fn new(name: &str, properties: &[&str]) -> Arc<Self> {
            let properties: serde_json::Map<String, Value> = properties
                .iter()
                .map(|p| ((*p).to_owned(), json!({})))
                .collect();
            Arc::new(Self {
                spec: ToolSpec::new(
                    name,
                    format!("the {name} probe"),
                    json!({"type": "object", "properties": properties}),
                ),
                runs: AtomicUsize::new(0),
            })
        }

        /// A probe whose arguments must match `schema`.
        pub(crate) fn with_schema(name: &str, schema: Value) -> Arc<Self> {
            Arc::new(Self {
                spec: ToolSpec::new(name, format!("the {name} probe"), schema),
                runs: AtomicUsize::new(0),
            })
        }

        pub(crate) fn runs(&self) -> usize {
            self.runs.load(Ordering::SeqCst)
        }
    }

    impl Tool for Probe {
        fn spec(&self) -> &ToolSpec {
            &self.spec
        }

        fn run<'a>(
            &'a self,
            cx: &'a Context,
            arguments: Prepared,
        ) -> BoxFuture<'a, Result<Started, CallError>> {
            self.runs.fetch_add(1, Ordering::SeqCst);
            let arguments = arguments.into_arguments();
            Box::pin(async move {
                Ok(Started::Output(ToolOutput {
                    result: Some(json!({"tool": self.spec.name, "arguments": arguments})),
                    call_id: cx.call_id().to_owned(),
                    ..ToolOutput::default()
                }))
            })
        }
    }

    /// A fixed set of native tools.
    #[derive(Debug, Clone)]
    pub(crate) struct Native(pub(crate) Vec<Arc<dyn Tool>>);

    impl Toolset for Native {
        fn name(&self) -> &str {
            "native"
        }

        fn tools(&self, _cx: &Context) -> Vec<Arc<dyn Tool>> {
            self.0.clone()
        }
    }

    pub(crate) fn native(names: &[&str]) -> Native {
        Native(
            names
                .iter()
                .map(|n| Probe::new(n, &[]) as Arc<dyn Tool>)
                .collect(),
        )
    }

    fn names(set: &impl Toolset, cx: &Context) -> Vec<String> {
        set.tools(cx)
            .iter()
            .map(|t| t.spec().name.clone())
            .collect()
    }

    fn admin() -> Context {
        let mut who = Identity::default();
        who.roles.insert("admin".into());
        Context::new().with_identity(who)
    }

    fn m(pattern: &str, name: &str) -> bool {
        let p: Vec<char> = pattern.chars().collect();
        let n: Vec<char> = name.chars().collect();
        glob_match(&p, &n)
    }

    #[test]
    fn glob_matches_stars_and_question_marks() {
        assert!(m("*", ""));
        assert!(m("*", "anything"));
        assert!(m("read_*", "read_file"));
        assert!(m("read_*", "read_"));
        assert!(!m("read_*", "rea"));
        assert!(m("*_file", "read_file"));
        assert!(m("r?ad", "read"));
        assert!(!m("r?ad", "rad"));
        assert!(m("a*b*c", "aXXbYYc"));
        assert!(m("a*b*c", "abc"));
        assert!(!m("a*b*c", "aXXbYY"));
        assert!(m("*a*a*", "banana"));
        assert!(!m("exact", "exactly"));
        assert!(m("exact", "exact"));
        assert!(m("echo.*", "echo.add"));
        assert!(!m("", "x"));
        assert!(m("ü?", "üß"));
    }

    #[tokio::test]
    async fn hidden_tools_are_absent_and_unknown() {
        let set = Filter::new(
            native(&["read", "write", "delete"]),
            Predicate::deny(["delete"]),
        );
        let cx = Context::new();
        assert_eq!(names(&set, &cx), ["read", "write"]);
        match set.invoke(&cx, "delete", json!({})).await {
            Err(CallError::UnknownTool { tool, available }) => {
                assert_eq!(tool, "delete");
                assert_eq!(available, ["read", "write"]);
            }
            other => panic!("expected unknown tool, got {other:?}"),
        }
        let out = set.invoke(&cx, "read", json!({})).await.unwrap();
        assert_eq!(out.result.unwrap()["tool"], "read");
    }

    #[tokio::test]
    async fn a_hidden_tool_never_runs() {
        let delete = Probe::new("delete", &[]);
        let set = Filter::new(
            Native(vec![delete.clone() as Arc<dyn Tool>]),
            Predicate::allow(["read"]),
        );
        assert!(
            set.invoke(&Context::new(), "delete", json!({}))
                .await
                .is_err()
        );
        assert!(
            set.stream(&Context::new(), "delete", json!({}))
                .await
                .is_err()
        );
        assert_eq!(delete.runs(), 0);
    }

    #[test]
    fn allow_deny_and_glob() {
        let inner = || native(&["read_file", "list_files", "write_file", "drop_db"]);
        let cx = Context::new();
        let allow = Filter::new(inner(), Predicate::allow(["read_file", "nope"]));
        assert_eq!(names(&allow, &cx), ["read_file"]);
        let globbed = Filter::new(inner(), Predicate::glob(["*_file", "list_*"]));
        assert_eq!(
            names(&globbed, &cx),
            ["read_file", "list_files", "write_file"]
        );
        let not_drop = Filter::new(inner(), !Predicate::glob(["drop_*"]));
        assert_eq!(
            names(&not_drop, &cx),
            ["read_file", "list_files", "write_file"]
        );
        let question = Filter::new(inner(), Predicate::glob(["????_file"]));
        assert_eq!(names(&question, &cx), ["read_file"]);
    }

    #[test]
    fn roles_and_combinators() {
        // Readers for everyone; writers and droppers for admins only.
        let rule = Predicate::glob(["read_*", "list_*"]).or(Predicate::role("admin"));
        let set = Filter::new(native(&["read_file", "list_files", "drop_db"]), rule);
        assert_eq!(names(&set, &Context::new()), ["read_file", "list_files"]);
        assert_eq!(
            names(&set, &admin()),
            ["read_file", "list_files", "drop_db"]
        );
        let any = Filter::new(native(&["x"]), Predicate::any_role(["ops", "admin"]));
        assert_eq!(names(&any, &admin()), ["x"]);
        assert!(names(&any, &Context::new()).is_empty());
        let nothing = Filter::new(native(&["x"]), Predicate::any([]));
        assert!(names(&nothing, &Context::new()).is_empty());
        let everything = Filter::new(native(&["x"]), Predicate::all([]));
        assert_eq!(names(&everything, &Context::new()), ["x"]);
        let both = Predicate::role("admin").and(Predicate::allow(["x"]));
        let both = Filter::new(native(&["x", "y"]), both);
        assert_eq!(names(&both, &admin()), ["x"]);
    }

    #[test]
    fn custom_rules_see_context_and_spec() {
        let rule = Predicate::new(|cx, item| {
            let Item::Tool(spec) = item else {
                return false;
            };
            cx.identity().attributes.get("tenant").map(String::as_str) == Some("acme")
                && !spec.description.contains("delete")
        });
        let set = Filter::new(native(&["keep", "delete"]), rule);
        assert!(names(&set, &Context::new()).is_empty());
        let mut who = Identity::default();
        who.attributes.insert("tenant".into(), "acme".into());
        let cx = Context::new().with_identity(who);
        assert_eq!(names(&set, &cx), ["keep"]);
    }

    #[test]
    fn filters_stack() {
        let set = Filter::new(
            Filter::new(native(&["a", "b", "c"]), Predicate::deny(["a"])),
            Predicate::deny(["b"]),
        );
        assert_eq!(names(&set, &Context::new()), ["c"]);
        assert!(set.find(&Context::new(), "a").is_err());
    }
}
