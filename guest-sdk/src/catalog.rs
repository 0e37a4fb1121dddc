//! [`Catalog`]: what a plugin offers besides tools — resources, resource
//! templates, prompts and completions (MCP's other server features).
//!
//! A plugin declares its catalog in one function and names it in
//! [`export_tools!`](crate::export_tools); a plugin that names none exports an
//! empty catalog. Every request runs in a fresh instance, like a tool call, so
//! the function runs once per request: keep it to declarations, and do the
//! work in the handlers.

mod completion;
mod prompt;
mod resource;

use std::collections::BTreeMap;
use std::fmt;

use serde::de::DeserializeOwned;

use crate::{Context, ToolError};

pub use completion::{Completion, CompletionRequest};
pub use prompt::{IntoMessages, Message, MessageContent, Messages, Prompt, PromptArgument, Role};
pub use resource::{Body, Contents, IntoContents, Resource, ResourceRead, ResourceTemplate};

type ReadFn = Box<dyn Fn(&Context) -> Result<Vec<Contents>, ToolError>>;
type TemplateReadFn = Box<dyn Fn(&Context, &ResourceRead) -> Result<Vec<Contents>, ToolError>>;
type GetFn = Box<dyn Fn(&Context, &Arguments) -> Result<Messages, ToolError>>;
type CompleteFn = Box<dyn Fn(&Context, &CompletionRequest) -> Result<Completion, ToolError>>;

/// Everything a plugin offers besides tools, with the handlers that serve it.
///
/// Built with consuming methods, in the function named by
/// [`export_tools!`](crate::export_tools):
///
/// ```
/// use toolhost_guest::{
///     Catalog, Completion, Contents, Message, Prompt, PromptArgument, Resource,
///     ResourceTemplate, export_tools,
/// };
///
/// fn catalog() -> Catalog {
///     Catalog::new()
///         .resource(
///             Resource::new("notes://today", "today").mime_type("text/plain"),
///             |_cx| Ok(Contents::text("Buy milk.")),
///         )
///         .template(
///             ResourceTemplate::new("notes://{day}", "day").mime_type("text/plain"),
///             |_cx, read| Ok(Contents::text(format!("Notes of {}.", read.variables.require("day")?))),
///         )
///         .prompt(
///             Prompt::new("summarize", "Summarizes a day's notes.")
///                 .argument(PromptArgument::required("day").description("Which day")),
///             |_cx, args| Ok(vec![Message::user(format!("Summarize {}.", args.require("day")?))]),
///         )
///         .complete_prompt("summarize", |_cx, request| {
///             Ok(Completion::matching(["today", "yesterday"], &request.value))
///         })
/// }
///
/// export_tools! { catalog: catalog }
/// # fn main() {}
/// ```
///
/// URIs and names are keys: declaring a resource, template or prompt again
/// replaces the earlier one (in its place), as does a second completion
/// handler for the same target.
#[derive(Default)]
#[must_use]
pub struct Catalog {
    resources: Vec<(Resource, ReadFn)>,
    templates: Vec<(ResourceTemplate, TemplateReadFn)>,
    prompts: Vec<(Prompt, GetFn)>,
    completions: Vec<(Target, CompleteFn)>,
}

/// What a completion is for: a prompt (by name) or a template (by URI template).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    Prompt(String),
    Template(String),
}

impl Catalog {
    /// An empty catalog: no resources, templates or prompts.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a resource at a fixed URI, read by `read`.
    ///
    /// Contents without a URI are the resource's own (its URI is filled in),
    /// and they get its MIME type unless they name one.
    pub fn resource<F, R>(mut self, resource: Resource, read: F) -> Self
    where
        F: Fn(&Context) -> Result<R, ToolError> + 'static,
        R: IntoContents,
    {
        let read: ReadFn = Box::new(move |cx| read(cx).map(IntoContents::into_contents));
        upsert(&mut self.resources, resource, read, |a, b| a.uri == b.uri);
        self
    }

    /// Adds a resource template (RFC 6570, e.g. `notes://{day}`), read by `read`.
    ///
    /// The host matches a read's URI against the template and passes its
    /// variables in the [`ResourceRead`]. Contents without a URI are the
    /// read's URI, and they get the template's MIME type unless they name one.
    pub fn template<F, R>(mut self, template: ResourceTemplate, read: F) -> Self
    where
        F: Fn(&Context, &ResourceRead) -> Result<R, ToolError> + 'static,
        R: IntoContents,
    {
        let read: TemplateReadFn =
            Box::new(move |cx, request| read(cx, request).map(IntoContents::into_contents));
        upsert(&mut self.templates, template, read, |a, b| {
            a.uri_template == b.uri_template
        });
        self
    }

    /// Adds a prompt, filled in by `get` from its arguments.
    ///
    /// The host has checked the arguments: every required one is given, and
    /// none the prompt does not declare.
    pub fn prompt<F, M>(mut self, prompt: Prompt, get: F) -> Self
    where
        F: Fn(&Context, &Arguments) -> Result<M, ToolError> + 'static,
        M: IntoMessages,
    {
        let get: GetFn = Box::new(move |cx, args| get(cx, args).map(IntoMessages::into_messages));
        upsert(&mut self.prompts, prompt, get, |a, b| a.name == b.name);
        self
    }

    /// Suggests values for the arguments of the prompt named `prompt`.
    ///
    /// `complete` gets the argument's name, what the user typed so far and
    /// the arguments already filled in. A declared prompt without a handler
    /// completes nothing.
    pub fn complete_prompt<F>(self, prompt: impl Into<String>, complete: F) -> Self
    where
        F: Fn(&Context, &CompletionRequest) -> Result<Completion, ToolError> + 'static,
    {
        self.completion(Target::Prompt(prompt.into()), Box::new(complete))
    }

    /// Suggests values for the variables of the template whose URI template
    /// is `uri_template`; see [`Catalog::complete_prompt`].
    pub fn complete_template<F>(self, uri_template: impl Into<String>, complete: F) -> Self
    where
        F: Fn(&Context, &CompletionRequest) -> Result<Completion, ToolError> + 'static,
    {
        self.completion(Target::Template(uri_template.into()), Box::new(complete))
    }

    fn completion(mut self, target: Target, complete: CompleteFn) -> Self {
        upsert(&mut self.completions, target, complete, |a, b| a == b);
        self
    }

    /// The declared resources, in order.
    pub fn resources(&self) -> impl Iterator<Item = &Resource> {
        self.resources.iter().map(|(resource, _)| resource)
    }

    /// The declared resource templates, in order.
    pub fn templates(&self) -> impl Iterator<Item = &ResourceTemplate> {
        self.templates.iter().map(|(template, _)| template)
    }

    /// The declared prompts, in order.
    pub fn prompts(&self) -> impl Iterator<Item = &Prompt> {
        self.prompts.iter().map(|(prompt, _)| prompt)
    }

    /// Reads a resource: the template's if `template` is given, else the
    /// listed resource at `read.uri`.
    pub(crate) fn read(
        &self,
        cx: &Context,
        template: Option<&str>,
        read: &ResourceRead,
    ) -> Result<Vec<Contents>, ToolError> {
        let (contents, mime_type) = match template {
            Some(template) => {
                let (declared, handler) = self
                    .templates
                    .iter()
                    .find(|(t, _)| t.uri_template == template)
                    .ok_or_else(|| ToolError::UnknownTool(read.uri.clone()))?;
                (handler(cx, read)?, declared.mime_type.as_deref())
            }
            None => {
                let (declared, handler) = self
                    .resources
                    .iter()
                    .find(|(r, _)| r.uri == read.uri)
                    .ok_or_else(|| ToolError::UnknownTool(read.uri.clone()))?;
                (handler(cx)?, declared.mime_type.as_deref())
            }
        };
        Ok(contents
            .into_iter()
            .map(|contents| contents.defaults(&read.uri, mime_type))
            .collect())
    }

    /// Fills in the prompt named `name`.
    pub(crate) fn get(
        &self,
        cx: &Context,
        name: &str,
        arguments: &Arguments,
    ) -> Result<Messages, ToolError> {
        let (_, get) = self
            .prompts
            .iter()
            .find(|(p, _)| p.name == name)
            .ok_or_else(|| ToolError::UnknownTool(name.to_owned()))?;
        get(cx, arguments)
    }

    /// Completes an argument of a declared prompt or template.
    pub(crate) fn complete(
        &self,
        cx: &Context,
        target: &Target,
        request: &CompletionRequest,
    ) -> Result<Completion, ToolError> {
        let declared = match target {
            Target::Prompt(name) => self.prompts().any(|p| &p.name == name),
            Target::Template(template) => self.templates().any(|t| &t.uri_template == template),
        };
        if !declared {
            let (Target::Prompt(name) | Target::Template(name)) = target;
            return Err(ToolError::UnknownTool(name.clone()));
        }
        match self.completions.iter().find(|(t, _)| t == target) {
            Some((_, complete)) => complete(cx, request),
            None => Ok(Completion::default()),
        }
    }
}

/// Replaces the entry whose key `same` matches, in place, or appends.
fn upsert<K, V>(entries: &mut Vec<(K, V)>, key: K, value: V, same: impl Fn(&K, &K) -> bool) {
    match entries.iter_mut().find(|(k, _)| same(k, &key)) {
        Some(entry) => *entry = (key, value),
        None => entries.push((key, value)),
    }
}

impl fmt::Debug for Catalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Catalog")
            .field("resources", &self.resources().collect::<Vec<_>>())
            .field("templates", &self.templates().collect::<Vec<_>>())
            .field("prompts", &self.prompts().collect::<Vec<_>>())
            .field(
                "completions",
                &self.completions.iter().map(|(t, _)| t).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Named string values: a prompt's arguments, a template's variables, or the
/// arguments already filled in when completing.
///
/// ```
/// use toolhost_guest::Arguments;
///
/// let args: Arguments = [("city", "Paris")].into_iter().collect();
/// assert_eq!(args.get("city"), Some("Paris"));
/// assert!(args.require("country").is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Arguments(BTreeMap<String, String>);

impl Arguments {
    /// No values.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value of `name`, if given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// The value of `name`.
    ///
    /// # Errors
    ///
    /// [`ToolError::InvalidArguments`] if it is not given.
    pub fn require(&self, name: &str) -> Result<&str, ToolError> {
        self.get(name)
            .ok_or_else(|| ToolError::invalid_arguments(format!("`{name}` is missing")))
    }

    /// The values as a typed struct (string fields; `Option` for the ones
    /// that may be missing).
    ///
    /// # Errors
    ///
    /// [`ToolError::InvalidArguments`] if they do not fit `T`.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, ToolError> {
        let object = self
            .0
            .iter()
            .map(|(name, value)| (name.clone(), serde_json::Value::String(value.clone())))
            .collect();
        serde_json::from_value(serde_json::Value::Object(object))
            .map_err(ToolError::invalid_arguments)
    }

    /// Sets `name` to `value`.
    pub fn insert(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.0.insert(name.into(), value.into());
    }

    /// The values, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// How many values there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Arguments {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Self(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::{Arguments, Catalog, Target};
    use crate::{
        Completion, CompletionRequest, Contents, Context, Message, Prompt, Resource, ResourceRead,
        ResourceTemplate, ToolError,
    };

    fn cx() -> Context {
        Context::new("call-1", "inv-1", "test")
    }

    fn catalog() -> Catalog {
        Catalog::new()
            .resource(
                Resource::new("test://a", "a").mime_type("text/plain"),
                |_| Ok(Contents::text("old")),
            )
            .resource(Resource::new("test://b", "b"), |_| {
                Ok(vec![
                    Contents::bytes([1_u8]),
                    Contents::text("sub").uri("test://b/1").mime_type("text/x"),
                ])
            })
            // Replaces the first `test://a`, in its place.
            .resource(
                Resource::new("test://a", "a2").mime_type("text/plain"),
                |_| Ok(Contents::text("new")),
            )
            .template(ResourceTemplate::new("test://t/{id}", "t"), |_, read| {
                Ok(Contents::text(read.variables.require("id")?.to_owned()))
            })
            .prompt(Prompt::new("p", "A prompt."), |_, args| {
                Ok(vec![Message::user(format!("{args:?}"))])
            })
            .prompt(Prompt::new("quiet", "No completions."), |_, _| {
                Ok(Vec::<Message>::new())
            })
            .complete_prompt("p", |_, request| {
                Ok(Completion::matching(["x1", "x2", "y"], &request.value))
            })
    }

    #[test]
    fn redeclaring_replaces_in_place() {
        let catalog = catalog();
        let names: Vec<_> = catalog.resources().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["a2", "b"]);
        let read = ResourceRead::new("test://a", Arguments::new());
        let contents = catalog.read(&cx(), None, &read).expect("reads");
        assert_eq!(
            contents,
            [Contents::text("new")
                .uri("test://a")
                .mime_type("text/plain")]
        );
    }

    #[test]
    fn contents_default_to_the_read_uri_only() {
        let read = ResourceRead::new("test://b", Arguments::new());
        let contents = catalog().read(&cx(), None, &read).expect("reads");
        assert_eq!(contents[0].uri.as_deref(), Some("test://b"));
        assert_eq!(contents[0].mime_type, None);
        assert_eq!(contents[1].uri.as_deref(), Some("test://b/1"));
        assert_eq!(contents[1].mime_type.as_deref(), Some("text/x"));
    }

    #[test]
    fn unknown_targets_are_unknown() {
        let catalog = catalog();
        let read = ResourceRead::new("test://nope", Arguments::new());
        assert_eq!(
            catalog.read(&cx(), None, &read),
            Err(ToolError::UnknownTool("test://nope".into()))
        );
        // A template's URI is not a listed resource, and vice versa.
        let read = ResourceRead::new("test://t/1", Arguments::new());
        assert!(catalog.read(&cx(), None, &read).is_err());
        assert!(catalog.read(&cx(), Some("test://a"), &read).is_err());
        assert_eq!(
            catalog.get(&cx(), "nope", &Arguments::new()).map(|_| ()),
            Err(ToolError::UnknownTool("nope".into()))
        );
        let request = CompletionRequest::new("a", "", Arguments::new());
        assert_eq!(
            catalog.complete(&cx(), &Target::Prompt("nope".into()), &request),
            Err(ToolError::UnknownTool("nope".into()))
        );
        assert_eq!(
            catalog.complete(&cx(), &Target::Template("test://a".into()), &request),
            Err(ToolError::UnknownTool("test://a".into()))
        );
    }

    #[test]
    fn completions_without_a_handler_are_empty() {
        let request = CompletionRequest::new("a", "x", Arguments::new());
        let catalog = catalog();
        let none = catalog.complete(&cx(), &Target::Prompt("quiet".into()), &request);
        assert_eq!(none, Ok(Completion::default()));
        let some = catalog.complete(&cx(), &Target::Prompt("p".into()), &request);
        assert_eq!(some.map(|c| c.values), Ok(vec!["x1".into(), "x2".into()]));
        let template = Target::Template("test://t/{id}".into());
        assert_eq!(
            catalog.complete(&cx(), &template, &request),
            Ok(Completion::default())
        );
    }

    #[test]
    fn arguments_parse_into_structs() {
        #[derive(Deserialize, Debug, PartialEq)]
        struct Args {
            city: String,
            country: Option<String>,
        }
        let args: Arguments = [("city", "Paris")].into_iter().collect();
        assert_eq!(
            args.parse::<Args>(),
            Ok(Args {
                city: "Paris".into(),
                country: None
            })
        );
        assert!(matches!(
            Arguments::new().parse::<Args>(),
            Err(ToolError::InvalidArguments(m)) if m.contains("city")
        ));
        assert_eq!(
            args.require("nope"),
            Err(ToolError::InvalidArguments("`nope` is missing".into()))
        );
        let mut args = args;
        args.insert("country", "FR");
        assert_eq!(
            args.iter().collect::<Vec<_>>(),
            [("city", "Paris"), ("country", "FR")]
        );
        assert_eq!((args.len(), args.is_empty()), (2, false));
    }

    #[test]
    fn debug_lists_the_declarations() {
        let debug = format!("{:?}", catalog());
        assert!(debug.contains("test://t/{id}") && debug.contains("Prompt(\"p\")"));
    }
}
