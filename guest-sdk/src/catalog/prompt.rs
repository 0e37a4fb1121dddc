//! Prompts: the declaration ([`Prompt`], [`PromptArgument`]) and what getting
//! one returns ([`Messages`] of [`Message`]s).

use crate::{Contents, Part};

/// A prompt: messages a user picks, filled in with arguments (MCP `Prompt`),
/// declared with [`Catalog::prompt`](crate::Catalog::prompt).
///
/// ```
/// use toolhost_guest::{Prompt, PromptArgument};
///
/// let review = Prompt::new("review", "Reviews a diff.")
///     .title("Code review")
///     .argument(PromptArgument::required("diff").description("The diff to review"))
///     .argument(PromptArgument::optional("focus"));
/// assert_eq!(review.arguments.len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
#[must_use]
pub struct Prompt {
    /// Unique within the plugin: ASCII letters, digits, `_` and `-`, 1 to 64
    /// characters (as a tool's name).
    pub name: String,
    /// A human-readable name.
    pub title: Option<String>,
    /// What it is for.
    pub description: String,
    /// The arguments it takes, in order.
    pub arguments: Vec<PromptArgument>,
}

impl Prompt {
    /// A prompt called `name`, for `description`, without arguments.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: description.into(),
            arguments: Vec::new(),
        }
    }

    /// Sets the human-readable name.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Appends an argument.
    pub fn argument(mut self, argument: PromptArgument) -> Self {
        self.arguments.push(argument);
        self
    }
}

/// One argument of a [`Prompt`]. Prompt arguments are strings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
#[must_use]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// A human-readable name.
    pub title: Option<String>,
    /// What it is.
    pub description: Option<String>,
    /// Whether a get must give it (the host checks).
    pub required: bool,
}

impl PromptArgument {
    /// An argument every get must give.
    pub fn required(name: impl Into<String>) -> Self {
        Self::new(name, true)
    }

    /// An argument a get may leave out.
    pub fn optional(name: impl Into<String>) -> Self {
        Self::new(name, false)
    }

    fn new(name: impl Into<String>, required: bool) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: None,
            required,
        }
    }

    /// Sets the human-readable name.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets what it is.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// Who says a prompt [`Message`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// The user.
    User,
    /// The model.
    Assistant,
}

/// What a prompt [`Message`] says: text, JSON or media (a [`Part`]), or an
/// embedded resource ([`Contents`], which must name its URI).
///
/// Converts from `&str` and `String` (text), [`Part`] and [`Contents`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MessageContent {
    /// Text, JSON or media: an image is `Part::image("image/png", bytes)`.
    Part(Part),
    /// A resource's content, embedded; its [`Contents::uri`] must be set.
    Resource(Contents),
}

impl From<Part> for MessageContent {
    fn from(part: Part) -> Self {
        Self::Part(part)
    }
}

impl From<Contents> for MessageContent {
    fn from(contents: Contents) -> Self {
        Self::Resource(contents)
    }
}

impl From<String> for MessageContent {
    fn from(text: String) -> Self {
        Self::Part(Part::text(text))
    }
}

impl From<&str> for MessageContent {
    fn from(text: &str) -> Self {
        Self::Part(Part::text(text))
    }
}

/// One message of a filled-in prompt.
///
/// ```
/// use toolhost_guest::{Contents, Message, Part, Role};
///
/// let messages = [
///     Message::user("Describe this picture."),
///     Message::user(Part::image("image/png", vec![0x89, b'P'])),
///     Message::user(Contents::text("notes").uri("notes://today").mime_type("text/plain")),
///     Message::assistant("It is a red dot."),
/// ];
/// assert_eq!(messages[3].role, Role::Assistant);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Message {
    /// Who says it.
    pub role: Role,
    /// What it says.
    pub content: MessageContent,
}

impl Message {
    /// A message said by `role`.
    pub fn new(role: Role, content: impl Into<MessageContent>) -> Self {
        Self {
            role,
            content: content.into(),
        }
    }

    /// A message said by the user.
    pub fn user(content: impl Into<MessageContent>) -> Self {
        Self::new(Role::User, content)
    }

    /// A message said by the model.
    pub fn assistant(content: impl Into<MessageContent>) -> Self {
        Self::new(Role::Assistant, content)
    }
}

/// What getting a prompt returns: its messages, and optionally a description
/// of this filled-in prompt. A get handler may return a `Vec<Message>` instead.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
#[must_use]
pub struct Messages {
    /// A description of this filled-in prompt.
    pub description: Option<String>,
    /// The messages, in order.
    pub messages: Vec<Message>,
}

impl Messages {
    /// These messages, without a description.
    pub fn new(messages: impl IntoIterator<Item = Message>) -> Self {
        Self {
            description: None,
            messages: messages.into_iter().collect(),
        }
    }

    /// Sets the description of this filled-in prompt.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// What a prompt's get handler may return: [`Messages`] or a `Vec<Message>`.
pub trait IntoMessages {
    /// Converts the value into [`Messages`].
    fn into_messages(self) -> Messages;
}

impl IntoMessages for Messages {
    fn into_messages(self) -> Messages {
        self
    }
}

impl IntoMessages for Vec<Message> {
    fn into_messages(self) -> Messages {
        Messages::new(self)
    }
}

#[cfg(test)]
mod tests {
    use super::{IntoMessages, Message, MessageContent, Messages, Prompt, PromptArgument, Role};
    use crate::{Contents, Part};

    #[test]
    fn prompts_and_arguments_build() {
        let p = Prompt::new("p", "d")
            .title("P")
            .argument(PromptArgument::required("a").title("A").description("an a"))
            .argument(PromptArgument::optional("b"));
        assert_eq!(p.title.as_deref(), Some("P"));
        assert!(p.arguments[0].required && !p.arguments[1].required);
        assert_eq!(p.arguments[0].title.as_deref(), Some("A"));
        assert_eq!(p.arguments[0].description.as_deref(), Some("an a"));
    }

    #[test]
    fn messages_convert_their_content() {
        assert_eq!(
            Message::user("hi").content,
            MessageContent::Part(Part::text("hi"))
        );
        assert_eq!(Message::assistant(String::from("x")).role, Role::Assistant);
        let embedded = Message::user(Contents::text("t").uri("u://x"));
        assert!(matches!(embedded.content, MessageContent::Resource(c) if c.uri.is_some()));
        let messages = vec![Message::user("a")].into_messages();
        assert_eq!(messages.description, None);
        let described = Messages::new([Message::user("a")]).description("d");
        assert_eq!(described.into_messages().description.as_deref(), Some("d"));
    }
}
