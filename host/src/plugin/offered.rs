//! What a plugin offers besides tools (`catalog.describe`), checked when it
//! loads: sizes against the load limits, URIs, templates and prompt names.

use std::collections::HashSet;
use std::path::Path;

use super::abi::catalog::Described;
use crate::catalog::{Kind, PromptSpec, ResourceSpec, ResourceTemplateSpec, UriTemplate};
use crate::engine::LoadLimits;
use crate::error::LoadError;
use crate::tool::is_valid_tool_name;

/// The longest URI a plugin may offer.
const MAX_URI_BYTES: usize = 2048;

/// A plugin's resources, templates and prompts, checked; each says its plugin.
#[derive(Debug, Default)]
pub(crate) struct Offered {
    pub(crate) resources: Vec<ResourceSpec>,
    pub(crate) templates: Vec<(ResourceTemplateSpec, UriTemplate)>,
    pub(crate) prompts: Vec<PromptSpec>,
}

impl Offered {
    /// Checks what `path`'s plugin (named `plugin`) described.
    ///
    /// # Errors
    /// [`LoadError::InvalidItem`] for the first item that breaks a rule:
    /// more items of a kind than `max_tools`, more text in all than
    /// `max_declaration_bytes`, a URI without a scheme or with control
    /// characters, a template [`UriTemplate`] refuses, a prompt name that is
    /// not a valid tool name, an argument named twice, or a duplicate.
    pub(crate) fn check(
        path: &Path,
        plugin: &str,
        described: Described,
        limits: &LoadLimits,
    ) -> Result<Self, LoadError> {
        let invalid = |kind: Kind, name: &str, reason: String| LoadError::InvalidItem {
            path: path.to_owned(),
            kind: kind.as_str(),
            name: name.chars().take(128).collect(),
            reason,
        };
        let counts = [
            (Kind::Resource, described.resources.len()),
            (Kind::ResourceTemplate, described.templates.len()),
            (Kind::Prompt, described.prompts.len()),
        ];
        for (kind, count) in counts {
            if count > limits.max_tools {
                return Err(invalid(
                    kind,
                    "(all)",
                    format!(
                        "the plugin offers {count}, more than the limit of {} (load limit `max_tools`)",
                        limits.max_tools
                    ),
                ));
            }
        }
        let size = size(&described);
        if size > limits.max_declaration_bytes {
            return Err(invalid(
                Kind::Resource,
                "(all)",
                format!(
                    "what the plugin offers besides tools is {size} bytes, more than the limit of {} (load limit `max_declaration_bytes`)",
                    limits.max_declaration_bytes
                ),
            ));
        }
        let mut seen = HashSet::new();
        let mut resources = described.resources;
        for spec in &mut resources {
            check_uri(&spec.uri).map_err(|reason| invalid(Kind::Resource, &spec.uri, reason))?;
            if !seen.insert(spec.uri.clone()) {
                return Err(invalid(Kind::Resource, &spec.uri, "offered twice".into()));
            }
            spec.plugin = Some(plugin.to_owned());
        }
        let mut templates = Vec::with_capacity(described.templates.len());
        for mut spec in described.templates {
            let template = UriTemplate::parse(&spec.uri_template)
                .map_err(|e| invalid(Kind::ResourceTemplate, &spec.uri_template, e.to_string()))?;
            check_uri(&spec.uri_template)
                .map_err(|reason| invalid(Kind::ResourceTemplate, &spec.uri_template, reason))?;
            if !seen.insert(spec.uri_template.clone()) {
                return Err(invalid(
                    Kind::ResourceTemplate,
                    &spec.uri_template,
                    "offered twice".into(),
                ));
            }
            spec.plugin = Some(plugin.to_owned());
            templates.push((spec, template));
        }
        let mut names = HashSet::new();
        let mut prompts = described.prompts;
        for spec in &mut prompts {
            if !is_valid_tool_name(&spec.name) {
                return Err(invalid(
                    Kind::Prompt,
                    &spec.name,
                    "a prompt's name must be 1 to 64 ASCII letters, digits, `_` or `-`".into(),
                ));
            }
            if !names.insert(spec.name.clone()) {
                return Err(invalid(Kind::Prompt, &spec.name, "offered twice".into()));
            }
            let mut arguments = HashSet::new();
            if let Some(twice) = spec
                .arguments
                .iter()
                .find(|argument| !arguments.insert(argument.name.as_str()))
            {
                return Err(invalid(
                    Kind::Prompt,
                    &spec.name,
                    format!("argument `{}` is declared twice", twice.name),
                ));
            }
            spec.plugin = Some(plugin.to_owned());
        }
        Ok(Self {
            resources,
            templates,
            prompts,
        })
    }

    /// Whether it offers the same as `other`.
    pub(crate) fn same_as(&self, other: &Offered) -> bool {
        self.resources == other.resources
            && self.prompts == other.prompts
            && self.templates.len() == other.templates.len()
            && self
                .templates
                .iter()
                .zip(&other.templates)
                .all(|((a, _), (b, _))| a == b)
    }

    /// Whether nothing is offered.
    pub(crate) fn is_empty(&self) -> bool {
        self.resources.is_empty() && self.templates.is_empty() && self.prompts.is_empty()
    }

    /// Whether `uri` is a listed resource's or one a template makes.
    pub(crate) fn offers_uri(&self, uri: &str) -> bool {
        self.resources.iter().any(|spec| spec.uri == uri)
            || self
                .templates
                .iter()
                .any(|(_, template)| template.matches(uri).is_some())
    }

    /// The listed resource at `uri`.
    pub(crate) fn resource(&self, uri: &str) -> Option<&ResourceSpec> {
        self.resources.iter().find(|spec| spec.uri == uri)
    }

    /// The first template that makes `uri`, with the variables it gives.
    pub(crate) fn template_for(
        &self,
        uri: &str,
    ) -> Option<(&ResourceTemplateSpec, Vec<(String, String)>)> {
        self.templates
            .iter()
            .find_map(|(spec, template)| Some((spec, template.matches(uri)?)))
    }

    /// The template written `uri_template`.
    pub(crate) fn template(&self, uri_template: &str) -> Option<&ResourceTemplateSpec> {
        self.templates
            .iter()
            .map(|(spec, _)| spec)
            .find(|spec| spec.uri_template == uri_template)
    }

    /// The prompt the plugin declared as `name`.
    pub(crate) fn prompt(&self, name: &str) -> Option<&PromptSpec> {
        self.prompts.iter().find(|spec| spec.name == name)
    }
}

/// Every byte of text described, toward `max_declaration_bytes`.
fn size(described: &Described) -> usize {
    let text = |values: &[Option<&String>]| -> usize {
        values.iter().map(|v| v.map_or(0, String::len)).sum()
    };
    let resources: usize = described
        .resources
        .iter()
        .map(|r| {
            r.uri.len()
                + r.name.len()
                + text(&[
                    r.title.as_ref(),
                    r.description.as_ref(),
                    r.mime_type.as_ref(),
                ])
        })
        .sum();
    let templates: usize = described
        .templates
        .iter()
        .map(|t| {
            t.uri_template.len()
                + t.name.len()
                + text(&[
                    t.title.as_ref(),
                    t.description.as_ref(),
                    t.mime_type.as_ref(),
                ])
        })
        .sum();
    let prompts: usize = described
        .prompts
        .iter()
        .map(|p| {
            p.name.len()
                + p.description.len()
                + text(&[p.title.as_ref()])
                + p.arguments
                    .iter()
                    .map(|a| a.name.len() + text(&[a.title.as_ref(), a.description.as_ref()]))
                    .sum::<usize>()
        })
        .sum();
    resources + templates + prompts
}

/// A URI a plugin may offer: a scheme (`x:`), no whitespace or control
/// characters, at most [`MAX_URI_BYTES`].
fn check_uri(uri: &str) -> Result<(), String> {
    if uri.len() > MAX_URI_BYTES {
        return Err(format!("a URI may be at most {MAX_URI_BYTES} bytes"));
    }
    let scheme = uri.split_once(':').map(|(scheme, _)| scheme);
    let valid_scheme = scheme.is_some_and(|scheme| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    if !valid_scheme {
        return Err("a URI must start with a scheme (`notes:`, `file:`, ...)".into());
    }
    if uri.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("a URI may not hold whitespace or control characters".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

    use super::*;
    use crate::catalog::PromptArgument;

    fn check(described: Described) -> Result<Offered, String> {
        Offered::check(Path::new("p.wasm"), "p", described, &LoadLimits::default())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn items_are_checked_and_say_their_plugin() {
        let mut described = Described::default();
        described
            .resources
            .push(ResourceSpec::new("test://static-text", "text"));
        described.templates.push(ResourceTemplateSpec::new(
            "test://template/{id}/data",
            "data",
        ));
        let mut prompt = PromptSpec::new("greet", "Greets.");
        prompt.arguments.push(PromptArgument::required("name"));
        described.prompts.push(prompt);
        let offered = check(described).unwrap();
        assert_eq!(offered.resources[0].plugin.as_deref(), Some("p"));
        assert!(offered.offers_uri("test://static-text"));
        assert!(offered.offers_uri("test://template/7/data"));
        assert!(!offered.offers_uri("test://template/7"));
        let (spec, variables) = offered.template_for("test://template/7/data").unwrap();
        assert_eq!(spec.name, "data");
        assert_eq!(variables, [("id".to_owned(), "7".to_owned())]);
        assert_eq!(
            offered.prompt("greet").unwrap().plugin.as_deref(),
            Some("p")
        );
    }

    #[test]
    fn broken_items_are_refused_with_why() {
        type Case = (fn(&mut Described), &'static str);
        let cases: [Case; 6] = [
            (
                |d| d.resources.push(ResourceSpec::new("no-scheme", "x")),
                "scheme",
            ),
            (
                |d| d.resources.push(ResourceSpec::new("x://a b", "x")),
                "whitespace",
            ),
            (
                |d| {
                    d.resources.push(ResourceSpec::new("x://a", "x"));
                    d.resources.push(ResourceSpec::new("x://a", "y"));
                },
                "offered twice",
            ),
            (
                |d| d.templates.push(ResourceTemplateSpec::new("x://{?q}", "q")),
                "not supported",
            ),
            (
                |d| d.prompts.push(PromptSpec::new("bad name", "")),
                "prompt's name",
            ),
            (
                |d| {
                    let mut prompt = PromptSpec::new("p", "");
                    prompt.arguments =
                        vec![PromptArgument::required("a"), PromptArgument::optional("a")];
                    d.prompts.push(prompt);
                },
                "declared twice",
            ),
        ];
        for (make, expected) in cases {
            let mut described = Described::default();
            make(&mut described);
            let err = check(described).unwrap_err();
            assert!(err.contains(expected), "{err}");
        }
    }

    #[test]
    fn too_many_items_hit_the_load_limit() {
        let mut described = Described::default();
        for i in 0..=LoadLimits::default().max_tools {
            described
                .resources
                .push(ResourceSpec::new(format!("x://{i}"), "r"));
        }
        assert!(check(described).unwrap_err().contains("max_tools"));
    }
}
