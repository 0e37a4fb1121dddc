//! What a toolset offers besides tools: MCP's resources, resource templates
//! and prompts, their specs and what reading or getting them returns; and
//! [`Item`], any entry of the catalog (a tool included) as a policy sees it.
//!
//! Tools are the first kind of item ([`ToolSpec`]); the traits that serve the
//! others are in [`toolset`](crate::toolset) next to [`Tool`](crate::Tool):
//! [`Resource`](crate::toolset::Resource),
//! [`ResourceTemplate`](crate::toolset::ResourceTemplate) and
//! [`Prompt`](crate::toolset::Prompt). Layers that judge items, such as
//! [`Filter`](crate::toolset::Filter)'s [`Predicate`](crate::toolset::Predicate),
//! judge every kind through [`Item`], so a rule that hides `fs.*` hides the
//! plugin's resources and prompts with its tools.

use std::collections::BTreeMap;

mod template;
mod updates;

pub use template::{TemplateError, UriTemplate};
pub use updates::ResourceUpdated;
pub(crate) use updates::{MAX_PER_CALL as MAX_UPDATES_PER_CALL, ResourceUpdates};

use serde::{Deserialize, Serialize};

use crate::error::CallError;
use crate::tool::{Part, ToolSpec};

/// The kinds of catalog items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Kind {
    /// A tool ([`ToolSpec`]).
    Tool,
    /// A resource with a fixed URI ([`ResourceSpec`]).
    Resource,
    /// A family of resources whose URIs match a template ([`ResourceTemplateSpec`]).
    ResourceTemplate,
    /// A prompt ([`PromptSpec`]).
    Prompt,
}

impl Kind {
    /// Every kind, in order.
    pub const ALL: [Kind; 4] = [
        Kind::Tool,
        Kind::Resource,
        Kind::ResourceTemplate,
        Kind::Prompt,
    ];

    /// The kind's name, as logs and errors spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Resource => "resource",
            Kind::ResourceTemplate => "resource template",
            Kind::Prompt => "prompt",
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kinds of items a toolset may offer: what a front end advertises (an
/// MCP server announces resources or prompts only for a set that may offer
/// them). Tools are always among them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Kinds(u8);

impl Kinds {
    /// Tools only: what a toolset offers unless it says otherwise.
    pub const TOOLS: Kinds = Kinds(1 << Kind::Tool as u8);

    /// These kinds and `kind`.
    #[must_use]
    pub const fn with(self, kind: Kind) -> Kinds {
        Kinds(self.0 | 1 << kind as u8)
    }

    /// Whether `kind` is among these.
    pub const fn contains(self, kind: Kind) -> bool {
        self.0 & (1 << kind as u8) != 0
    }

    /// These and `other`'s.
    #[must_use]
    pub const fn union(self, other: Kinds) -> Kinds {
        Kinds(self.0 | other.0)
    }
}

impl Default for Kinds {
    fn default() -> Self {
        Kinds::TOOLS
    }
}

/// One catalog item as a policy sees it: its kind, its names and its plugin.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Item<'a> {
    /// A tool.
    Tool(&'a ToolSpec),
    /// A resource.
    Resource(&'a ResourceSpec),
    /// A resource template.
    ResourceTemplate(&'a ResourceTemplateSpec),
    /// A prompt.
    Prompt(&'a PromptSpec),
}

impl<'a> Item<'a> {
    /// The item's kind.
    pub fn kind(&self) -> Kind {
        match self {
            Item::Tool(_) => Kind::Tool,
            Item::Resource(_) => Kind::Resource,
            Item::ResourceTemplate(_) => Kind::ResourceTemplate,
            Item::Prompt(_) => Kind::Prompt,
        }
    }

    /// The name it is listed under: a tool's or prompt's name, a resource's
    /// URI, a template's URI template.
    pub fn name(&self) -> &'a str {
        match self {
            Item::Tool(spec) => &spec.name,
            Item::Resource(spec) => &spec.uri,
            Item::ResourceTemplate(spec) => &spec.uri_template,
            Item::Prompt(spec) => &spec.name,
        }
    }

    /// Whether `test` holds for any name a rule may match the item by: a
    /// tool's listed, qualified (`plugin.tool`) and bare names
    /// ([`ToolSpec::names`]); a prompt's the same, from its plugin; a
    /// resource's URI, its name and `plugin.name`; a template's URI template,
    /// its name and `plugin.name`.
    pub fn any_name(&self, mut test: impl FnMut(&str) -> bool) -> bool {
        let (location, name, plugin) = match self {
            Item::Tool(spec) => return spec.names().any(test),
            Item::Prompt(spec) => {
                let Some(plugin) = spec.plugin.as_deref() else {
                    return test(&spec.name);
                };
                return match spec
                    .name
                    .strip_prefix(plugin)
                    .and_then(|n| n.strip_prefix('.'))
                {
                    // Listed qualified: its bare name too.
                    Some(bare) => test(&spec.name) || test(bare),
                    None => test(&spec.name) || test(&format!("{plugin}.{}", spec.name)),
                };
            }
            Item::Resource(spec) => (&spec.uri, &spec.name, spec.plugin.as_deref()),
            Item::ResourceTemplate(spec) => {
                (&spec.uri_template, &spec.name, spec.plugin.as_deref())
            }
        };
        test(location)
            || test(name)
            || plugin.is_some_and(|plugin| test(&format!("{plugin}.{name}")))
    }

    /// The plugin that offers it, when a plugin does.
    pub fn plugin(&self) -> Option<&'a str> {
        match self {
            Item::Tool(spec) => spec.plugin(),
            Item::Resource(spec) => spec.plugin.as_deref(),
            Item::ResourceTemplate(spec) => spec.plugin.as_deref(),
            Item::Prompt(spec) => spec.plugin.as_deref(),
        }
    }
}

/// A resource: data at a URI that a client can read (MCP `Resource`).
///
/// # Examples
/// ```
/// let mut spec = toolhost::catalog::ResourceSpec::new("file:///notes/today.md", "today");
/// spec.mime_type = Some("text/markdown".into());
/// assert_eq!(spec.name, "today");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResourceSpec {
    /// Where it is: unique in a toolset.
    pub uri: String,
    /// A short name.
    pub name: String,
    /// A human-readable name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// The plugin that offers it; `None` for resources that belong to no plugin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
}

impl ResourceSpec {
    /// A resource at `uri` named `name`, with nothing else said.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            plugin: None,
        }
    }
}

/// A family of resources whose URIs follow an RFC 6570 URI template (MCP
/// `ResourceTemplate`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResourceTemplateSpec {
    /// The URI template, e.g. `file:///notes/{day}.md`.
    pub uri_template: String,
    /// A short name.
    pub name: String,
    /// A human-readable name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What its resources hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of its resources, when they share one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The plugin that offers it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
}

impl ResourceTemplateSpec {
    /// A template `uri_template` named `name`, with nothing else said.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri_template: uri_template.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            plugin: None,
        }
    }
}

/// What reading a resource returned: one resource's content.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResourceContents {
    /// The URI the content is of (a read may return sub-resources).
    pub uri: String,
    /// Its MIME type, when known.
    pub mime_type: Option<String>,
    /// The content.
    pub body: Body,
}

impl ResourceContents {
    /// Text at `uri`.
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            mime_type: None,
            body: Body::Text(text.into()),
        }
    }

    /// Bytes at `uri`.
    pub fn bytes(uri: impl Into<String>, bytes: Vec<u8>) -> Self {
        Self {
            uri: uri.into(),
            mime_type: None,
            body: Body::Bytes(bytes),
        }
    }

    /// The same, with a MIME type.
    #[must_use]
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

/// A resource's content: text or bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// Text.
    Text(String),
    /// Bytes (base64 over MCP).
    Bytes(Vec<u8>),
}

/// A prompt: a message template a user picks, filled in with arguments (MCP
/// `Prompt`).
///
/// # Examples
/// ```
/// use toolhost::catalog::{PromptArgument, PromptSpec};
/// let mut spec = PromptSpec::new("summarize", "Summarizes a text.");
/// spec.arguments.push(PromptArgument::required("text"));
/// let mut arguments = std::collections::BTreeMap::new();
/// assert!(spec.check(&arguments).is_err());
/// arguments.insert("text".to_owned(), "Hello.".to_owned());
/// assert!(spec.check(&arguments).is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PromptSpec {
    /// The prompt's name.
    pub name: String,
    /// A human-readable name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    pub description: String,
    /// The arguments it takes (all strings), in order.
    pub arguments: Vec<PromptArgument>,
    /// The plugin that offers it. Its name may be listed qualified
    /// (`plugin.prompt`) when two plugins offer one of that name, as tools are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
}

impl PromptSpec {
    /// A prompt `name` taking no arguments.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: description.into(),
            arguments: Vec::new(),
            plugin: None,
        }
    }

    /// Whether `name` is one of the names it answers to (see [`Item::any_name`]).
    pub fn answers_to(&self, name: &str) -> bool {
        Item::Prompt(self).any_name(|n| n == name)
    }

    /// Checks arguments for a get: every required argument given, no
    /// argument it does not take.
    ///
    /// # Errors
    /// [`CallError::InvalidArguments`] listing every problem.
    pub fn check(&self, arguments: &BTreeMap<String, String>) -> Result<(), CallError> {
        let missing = self
            .arguments
            .iter()
            .filter(|a| a.required && !arguments.contains_key(&a.name))
            .map(|a| format!("missing required argument `{}`", a.name));
        let unknown = arguments
            .keys()
            .filter(|key| !self.arguments.iter().any(|a| a.name == **key))
            .map(|key| format!("no argument named `{key}`"));
        let problems: Vec<String> = missing.chain(unknown).collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(CallError::InvalidArguments {
                tool: self.name.clone(),
                problems,
            })
        }
    }
}

/// One argument of a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// A human-readable name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether a get must give it.
    pub required: bool,
}

impl PromptArgument {
    /// An argument a get must give.
    pub fn required(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: None,
            required: true,
        }
    }

    /// An argument a get may leave out.
    pub fn optional(name: impl Into<String>) -> Self {
        Self {
            required: false,
            ..Self::required(name)
        }
    }

    /// The same, described.
    #[must_use]
    pub fn described(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// What getting a prompt returned: the messages to put before the model.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct PromptMessages {
    /// A description of this filled-in prompt.
    pub description: Option<String>,
    /// The messages, in order.
    pub messages: Vec<PromptMessage>,
}

impl PromptMessages {
    /// These messages, undescribed.
    pub fn new(messages: Vec<PromptMessage>) -> Self {
        Self {
            description: None,
            messages,
        }
    }
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PromptMessage {
    /// Who says it.
    pub role: Role,
    /// What it says.
    pub content: MessageContent,
}

impl PromptMessage {
    /// Text the user says.
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: MessageContent::Part(Part::Text(text.into())),
        }
    }

    /// Text the assistant says.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: MessageContent::Part(Part::Text(text.into())),
        }
    }
}

/// Who says a prompt message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The user.
    User,
    /// The model.
    Assistant,
}

/// What a prompt message says.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum MessageContent {
    /// Text, JSON or a media part.
    Part(Part),
    /// A resource's content, embedded.
    Resource(ResourceContents),
}

/// What a completion is for (MCP `completion/complete`'s `ref`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompletionRef {
    /// An argument of the prompt of this name (as listed).
    Prompt(String),
    /// A variable of the resource template with this URI template.
    Template(String),
}

/// Suggested values for an argument (MCP `completion/complete`'s result).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Completion {
    /// The values, best first; at most [`Completion::MAX_VALUES`] are served.
    pub values: Vec<String>,
    /// How many there are in all, when known.
    pub total: Option<u32>,
    /// Whether there are more than those given.
    pub has_more: bool,
}

impl Completion {
    /// The most values a completion serves (MCP's limit).
    pub const MAX_VALUES: usize = 100;

    /// These values, all there are.
    pub fn new(values: Vec<String>) -> Self {
        Self {
            values,
            total: None,
            has_more: false,
        }
        .capped()
    }

    /// The same, held to [`Completion::MAX_VALUES`]: values past it are
    /// dropped and `has_more` says so.
    #[must_use]
    pub fn capped(mut self) -> Self {
        if self.values.len() > Self::MAX_VALUES {
            self.values.truncate(Self::MAX_VALUES);
            self.has_more = true;
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(item: Item<'_>) -> Vec<String> {
        let mut names = Vec::new();
        item.any_name(|name| {
            names.push(name.to_owned());
            false
        });
        names
    }

    #[test]
    fn items_answer_to_their_names_and_plugin() {
        let mut resource = ResourceSpec::new("file:///a.txt", "a.txt");
        resource.plugin = Some("fs".into());
        let item = Item::Resource(&resource);
        assert_eq!(item.kind(), Kind::Resource);
        assert_eq!(item.name(), "file:///a.txt");
        assert_eq!(names(item), ["file:///a.txt", "a.txt", "fs.a.txt"]);
        assert_eq!(item.plugin(), Some("fs"));

        let mut prompt = PromptSpec::new("text.summarize", "");
        prompt.plugin = Some("text".into());
        assert_eq!(
            names(Item::Prompt(&prompt)),
            ["text.summarize", "summarize"]
        );
        assert!(prompt.answers_to("summarize"));
        assert!(!prompt.answers_to("text"));
        prompt.name = "summarize".into();
        assert_eq!(
            names(Item::Prompt(&prompt)),
            ["summarize", "text.summarize"]
        );

        let template = ResourceTemplateSpec::new("file:///{name}", "files");
        let item = Item::ResourceTemplate(&template);
        assert_eq!(names(item), ["file:///{name}", "files"]);
        assert_eq!(item.plugin(), None);

        let mut tool = ToolSpec::new("echo", "", serde_json::json!({"type": "object"}));
        tool.qualified_name = Some("my.plugin.echo".into());
        assert_eq!(names(Item::Tool(&tool)), ["echo", "my.plugin.echo"]);
        assert_eq!(Item::Tool(&tool).plugin(), Some("my.plugin"));
    }

    #[test]
    fn kinds_say_what_a_set_may_offer() {
        let kinds = Kinds::default();
        assert!(kinds.contains(Kind::Tool));
        assert!(!kinds.contains(Kind::Prompt));
        let kinds = kinds.with(Kind::Prompt);
        assert!(kinds.contains(Kind::Prompt));
        assert!(!kinds.contains(Kind::Resource));
        assert!(
            kinds
                .union(Kinds::TOOLS.with(Kind::Resource))
                .contains(Kind::Resource)
        );
    }

    #[test]
    fn prompt_arguments_are_checked_all_at_once() {
        let mut spec = PromptSpec::new("p", "");
        spec.arguments = vec![PromptArgument::required("a"), PromptArgument::optional("b")];
        let arguments = BTreeMap::from([("c".to_owned(), String::new())]);
        let Err(CallError::InvalidArguments { tool, problems }) = spec.check(&arguments) else {
            panic!("a missing and an unknown argument are refused");
        };
        assert_eq!(tool, "p");
        assert_eq!(
            problems,
            ["missing required argument `a`", "no argument named `c`"]
        );
        let arguments = BTreeMap::from([("a".to_owned(), String::new())]);
        assert!(spec.check(&arguments).is_ok());
    }
}
