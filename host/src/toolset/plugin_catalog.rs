//! What loaded plugins offer besides tools, as a toolset serves it: their
//! resources, templates and prompts as [`Resource`], [`ResourceTemplate`]
//! and [`Prompt`], and the naming rule across plugins ([`PluginCatalog`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::plugin_tools::call_for;
use super::{BoxFuture, Context, Prompt, Resource, ResourceTemplate};
use crate::catalog::{
    Completion, CompletionRef, Kind, Kinds, PromptMessages, PromptSpec, ResourceContents,
    ResourceSpec, ResourceTemplateSpec,
};
use crate::error::CallError;
use crate::plugin::Plugin;

/// A plugin's resource at a fixed URI, or one of its templates' URIs.
struct PluginResource {
    plugin: Plugin,
    spec: ResourceSpec,
}

impl Resource for PluginResource {
    fn spec(&self) -> &ResourceSpec {
        &self.spec
    }

    fn read<'a>(
        &'a self,
        cx: &'a Context,
    ) -> BoxFuture<'a, Result<Vec<ResourceContents>, CallError>> {
        let call = call_for(&self.plugin, cx, &self.spec.uri);
        Box::pin(self.plugin.read_resource(call, &self.spec.uri))
    }
}

/// A plugin's resource template.
struct PluginTemplate {
    plugin: Plugin,
    spec: ResourceTemplateSpec,
}

impl ResourceTemplate for PluginTemplate {
    fn spec(&self) -> &ResourceTemplateSpec {
        &self.spec
    }

    fn resolve(&self, _cx: &Context, uri: &str) -> Option<Arc<dyn Resource>> {
        let spec = self.plugin.resource_at(uri)?;
        // Only this template's URIs (a listed resource is found as itself).
        (spec.name == self.spec.name && self.plugin.resources().iter().all(|r| r.uri != uri)).then(
            || {
                Arc::new(PluginResource {
                    plugin: self.plugin.clone(),
                    spec,
                }) as Arc<dyn Resource>
            },
        )
    }

    fn complete<'a>(
        &'a self,
        cx: &'a Context,
        argument: &'a str,
        value: &'a str,
        context: &'a BTreeMap<String, String>,
    ) -> BoxFuture<'a, Result<Completion, CallError>> {
        let call = call_for(&self.plugin, cx, &self.spec.uri_template);
        let target = CompletionRef::Template(self.spec.uri_template.clone());
        Box::pin(async move {
            self.plugin
                .complete(call, &target, argument, value, context)
                .await
        })
    }
}

/// A plugin's prompt, listed under its declared name or `plugin.prompt`.
struct PluginPrompt {
    plugin: Plugin,
    spec: PromptSpec,
    /// The name the plugin declared.
    declared: String,
}

impl Prompt for PluginPrompt {
    fn spec(&self) -> &PromptSpec {
        &self.spec
    }

    fn get<'a>(
        &'a self,
        cx: &'a Context,
        arguments: BTreeMap<String, String>,
    ) -> BoxFuture<'a, Result<PromptMessages, CallError>> {
        let call = call_for(&self.plugin, cx, &self.declared);
        Box::pin(self.plugin.get_prompt(call, &self.declared, arguments))
    }

    fn complete<'a>(
        &'a self,
        cx: &'a Context,
        argument: &'a str,
        value: &'a str,
        context: &'a BTreeMap<String, String>,
    ) -> BoxFuture<'a, Result<Completion, CallError>> {
        let call = call_for(&self.plugin, cx, &self.declared);
        let target = CompletionRef::Prompt(self.declared.clone());
        Box::pin(async move {
            self.plugin
                .complete(call, &target, argument, value, context)
                .await
        })
    }
}

/// The catalog methods of a [`Toolset`](super::Toolset) that serves a
/// [`PluginCatalog`]: `$catalog` is it (a reference, from `self`), `$dynamic` says
/// whether plugins may come later (see [`PluginCatalog::kinds`]).
macro_rules! catalog_of {
    ($this:ident => $catalog:expr, $dynamic:expr) => {
        fn kinds(&$this) -> crate::catalog::Kinds {
            let catalog = $catalog;
            catalog.kinds($dynamic)
        }

        fn resources(&$this, _cx: &Context) -> Vec<Arc<dyn crate::toolset::Resource>> {
            let catalog = $catalog;
            catalog.resources.clone()
        }

        fn resource_templates(
            &$this,
            _cx: &Context,
        ) -> Vec<Arc<dyn crate::toolset::ResourceTemplate>> {
            let catalog = $catalog;
            catalog.templates.clone()
        }

        fn prompts(&$this, _cx: &Context) -> Vec<Arc<dyn crate::toolset::Prompt>> {
            let catalog = $catalog;
            catalog.prompts.clone()
        }
    };
}

/// The resources, templates and prompts of a list of plugins.
///
/// Naming rule: a prompt is listed under its bare name while one plugin
/// offers it, else as `plugin.prompt` (as tools are). A URI or URI template
/// two plugins offer is served by neither: nothing is silently shadowed, and
/// the clash is warned about (give each plugin a scheme or prefix of its own).
#[derive(Clone, Default)]
pub(crate) struct PluginCatalog {
    pub(crate) resources: Vec<Arc<dyn Resource>>,
    pub(crate) templates: Vec<Arc<dyn ResourceTemplate>>,
    pub(crate) prompts: Vec<Arc<dyn Prompt>>,
    /// What several plugins offer: "kind `name`" → the plugins.
    pub(crate) clashes: BTreeMap<String, Vec<String>>,
    /// Whether any plugin offers anything besides tools.
    pub(crate) offers: bool,
}

impl std::fmt::Debug for PluginCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginCatalog")
            .field("resources", &self.resources.len())
            .field("templates", &self.templates.len())
            .field("prompts", &self.prompts.len())
            .field("clashes", &self.clashes)
            .finish()
    }
}

impl PluginCatalog {
    /// The catalog of `plugins`, in their order.
    pub(crate) fn of<'a>(plugins: impl IntoIterator<Item = &'a Plugin> + Clone) -> Self {
        let mut clashes: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut owners: HashMap<(Kind, &str), Vec<&Plugin>> = HashMap::new();
        for plugin in plugins.clone() {
            let names = plugin
                .resources()
                .iter()
                .map(|r| (Kind::Resource, r.uri.as_str()))
                .chain(
                    plugin
                        .resource_templates()
                        .map(|t| (Kind::ResourceTemplate, t.uri_template.as_str())),
                )
                .chain(
                    plugin
                        .prompts()
                        .iter()
                        .map(|p| (Kind::Prompt, p.name.as_str())),
                );
            for key in names {
                owners.entry(key).or_default().push(plugin);
            }
        }
        for ((kind, name), plugins) in &owners {
            if plugins.len() > 1 {
                clashes.insert(
                    format!("{kind} `{name}`"),
                    plugins.iter().map(|p| p.name().to_owned()).collect(),
                );
            }
        }
        let unique =
            |kind: Kind, name: &str| owners.get(&(kind, name)).is_none_or(|o| o.len() == 1);
        let mut catalog = Self::default();
        for plugin in plugins {
            catalog.offers |= !plugin.resources().is_empty()
                || plugin.resource_templates().next().is_some()
                || !plugin.prompts().is_empty();
            for spec in plugin.resources() {
                if unique(Kind::Resource, &spec.uri) {
                    catalog.resources.push(Arc::new(PluginResource {
                        plugin: plugin.clone(),
                        spec: spec.clone(),
                    }));
                }
            }
            for spec in plugin.resource_templates() {
                if unique(Kind::ResourceTemplate, &spec.uri_template) {
                    catalog.templates.push(Arc::new(PluginTemplate {
                        plugin: plugin.clone(),
                        spec: spec.clone(),
                    }));
                }
            }
            for spec in plugin.prompts() {
                let mut listed = spec.clone();
                if !unique(Kind::Prompt, &spec.name) {
                    listed.name = format!("{}.{}", plugin.name(), spec.name);
                }
                catalog.prompts.push(Arc::new(PluginPrompt {
                    plugin: plugin.clone(),
                    declared: spec.name.clone(),
                    spec: listed,
                }));
            }
        }
        catalog.clashes = clashes;
        catalog
    }

    /// Whether `new` lists other resources or templates, and other prompts.
    pub(crate) fn differences(&self, new: &PluginCatalog) -> (bool, bool) {
        fn specs<T: ?Sized, S: PartialEq + Clone>(
            items: &[Arc<T>],
            spec: impl Fn(&T) -> &S,
        ) -> Vec<S> {
            items.iter().map(|item| spec(item).clone()).collect()
        }
        let resources = specs(&self.resources, |r| r.spec()) != specs(&new.resources, |r| r.spec())
            || specs(&self.templates, |t| t.spec()) != specs(&new.templates, |t| t.spec());
        let prompts = specs(&self.prompts, |p| p.spec()) != specs(&new.prompts, |p| p.spec());
        (resources, prompts)
    }

    /// Warns about every clash `previous` did not have.
    pub(crate) fn warn_new_clashes(&self, previous: Option<&PluginCatalog>) {
        for (item, plugins) in &self.clashes {
            if previous.and_then(|p| p.clashes.get(item)) != Some(plugins) {
                tracing::warn!(
                    target: crate::log::CLASH_TARGET,
                    item = %item,
                    plugins = %plugins.join(", "),
                    "several plugins offer {item}: prompts are listed as `plugin.prompt`, \
                     resources and templates are served by none (give each plugin a URI \
                     scheme or prefix of its own)"
                );
            }
        }
    }

    /// What a set of these plugins may offer: tools, and the rest when
    /// `dynamic` (plugins may come later) or when one offers anything.
    pub(crate) fn kinds(&self, dynamic: bool) -> Kinds {
        if dynamic || self.offers {
            Kinds::TOOLS
                .with(Kind::Resource)
                .with(Kind::ResourceTemplate)
                .with(Kind::Prompt)
        } else {
            Kinds::TOOLS
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_catalog_offers_tools_only_unless_plugins_may_come() {
        let catalog = PluginCatalog::of(&[]);
        assert!(!catalog.kinds(false).contains(Kind::Prompt));
        assert!(catalog.kinds(true).contains(Kind::Prompt));
        assert!(catalog.clashes.is_empty());
    }
}
