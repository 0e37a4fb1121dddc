//! Resources: [`Resource`] (a fixed URI), [`ResourceTemplate`] (an RFC 6570
//! URI template), what a read gets ([`ResourceRead`]) and returns ([`Contents`]).

use crate::Arguments;

/// A resource at a fixed URI (MCP `Resource`), declared with
/// [`Catalog::resource`](crate::Catalog::resource).
///
/// ```
/// use toolhost_guest::Resource;
///
/// let today = Resource::new("notes://today", "today")
///     .title("Today's notes")
///     .mime_type("text/plain");
/// assert_eq!(today.mime_type.as_deref(), Some("text/plain"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
#[must_use]
pub struct Resource {
    /// Where it is. Unique in the plugin; use a scheme or prefix of your own
    /// (`notes://today`), since the operator sees clashes between plugins.
    pub uri: String,
    /// A short name.
    pub name: String,
    /// A human-readable name.
    pub title: Option<String>,
    /// What it holds.
    pub description: Option<String>,
    /// Its MIME type, when known.
    pub mime_type: Option<String>,
    /// Its size in bytes, when known.
    pub size: Option<u64>,
}

impl Resource {
    /// A resource at `uri`, called `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
        }
    }

    /// Sets the human-readable name.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets what it holds.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the MIME type; contents that name none get it.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Sets the size in bytes.
    pub fn size(mut self, size: u64) -> Self {
        self.size = Some(size);
        self
    }
}

/// A family of resources whose URIs follow an RFC 6570 URI template (MCP
/// `ResourceTemplate`), declared with [`Catalog::template`](crate::Catalog::template).
///
/// The host matches a read's URI against it: `{name}` matches one path
/// segment (no `/`, `?` or `#`), `{+name}` any text.
///
/// ```
/// use toolhost_guest::ResourceTemplate;
///
/// let day = ResourceTemplate::new("notes://{day}", "day").description("The notes of one day");
/// assert_eq!(day.uri_template, "notes://{day}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
#[must_use]
pub struct ResourceTemplate {
    /// The URI template, e.g. `notes://{day}`.
    pub uri_template: String,
    /// A short name.
    pub name: String,
    /// A human-readable name.
    pub title: Option<String>,
    /// What its resources hold.
    pub description: Option<String>,
    /// The MIME type of its resources, when they share one.
    pub mime_type: Option<String>,
}

impl ResourceTemplate {
    /// A template of URIs `uri_template`, called `name`.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri_template: uri_template.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
        }
    }

    /// Sets the human-readable name.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets what its resources hold.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the MIME type its resources share; contents that name none get it.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

/// One read of a template's resource: the URI, and the template's variables
/// as the URI gave them (percent-decoded by the host).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResourceRead {
    /// The URI read.
    pub uri: String,
    /// The template's variables: `{id}` in `test://{id}` read as `test://7`
    /// is `id` = `7`.
    pub variables: Arguments,
}

impl ResourceRead {
    /// A read of `uri` with `variables` (the SDK builds it; tests of read
    /// handlers may too).
    pub fn new(uri: impl Into<String>, variables: Arguments) -> Self {
        Self {
            uri: uri.into(),
            variables,
        }
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

/// One resource's content, as a read returns it or a prompt message embeds it.
///
/// ```
/// use toolhost_guest::{Body, Contents};
///
/// let note = Contents::text("Buy milk.").mime_type("text/plain");
/// assert_eq!(note.body, Body::Text("Buy milk.".into()));
/// assert_eq!(note.uri, None); // a read fills in the URI read
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
#[must_use]
pub struct Contents {
    /// The URI it is of. `None` in a read's result: the URI read. A prompt
    /// message that embeds contents needs one.
    pub uri: Option<String>,
    /// Its MIME type. `None` in a read's result: the declared one, if any.
    pub mime_type: Option<String>,
    /// The content.
    pub body: Body,
}

impl Contents {
    /// Text contents.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(Body::Text(text.into()))
    }

    /// Binary contents.
    pub fn bytes(data: impl Into<Vec<u8>>) -> Self {
        Self::new(Body::Bytes(data.into()))
    }

    fn new(body: Body) -> Self {
        Self {
            uri: None,
            mime_type: None,
            body,
        }
    }

    /// Sets the URI it is of: a sub-resource's in a read, the embedded
    /// resource's in a prompt message.
    pub fn uri(mut self, uri: impl Into<String>) -> Self {
        self.uri = Some(uri.into());
        self
    }

    /// Sets the MIME type.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Fills in what a read's contents leave out: the URI read and, for the
    /// contents of that URI, the declared MIME type.
    pub(crate) fn defaults(mut self, uri: &str, mime_type: Option<&str>) -> Self {
        let uri = self.uri.get_or_insert_with(|| uri.to_owned()) == uri;
        if uri && self.mime_type.is_none() {
            self.mime_type = mime_type.map(str::to_owned);
        }
        self
    }
}

/// What a read handler may return: one [`Contents`] or several (a resource
/// and its sub-resources).
pub trait IntoContents {
    /// The contents, in order.
    fn into_contents(self) -> Vec<Contents>;
}

impl IntoContents for Contents {
    fn into_contents(self) -> Vec<Contents> {
        vec![self]
    }
}

impl IntoContents for Vec<Contents> {
    fn into_contents(self) -> Vec<Contents> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::{Body, Contents, Resource, ResourceTemplate};

    #[test]
    fn builders_set_every_field() {
        let r = Resource::new("u://x", "x")
            .title("X")
            .description("an x")
            .mime_type("text/plain")
            .size(3);
        assert_eq!(
            (r.title, r.description, r.mime_type, r.size),
            (
                Some("X".into()),
                Some("an x".into()),
                Some("text/plain".into()),
                Some(3)
            )
        );
        let t = ResourceTemplate::new("u://{x}", "x")
            .title("X")
            .description("xs")
            .mime_type("image/png");
        assert_eq!(
            (t.title, t.description, t.mime_type),
            (
                Some("X".into()),
                Some("xs".into()),
                Some("image/png".into())
            )
        );
    }

    #[test]
    fn defaults_fill_only_what_is_missing() {
        let own = Contents::bytes([1_u8]).defaults("u://x", Some("image/png"));
        assert_eq!(own.uri.as_deref(), Some("u://x"));
        assert_eq!(own.mime_type.as_deref(), Some("image/png"));
        assert_eq!(own.body, Body::Bytes(vec![1]));
        let kept = Contents::text("t")
            .mime_type("text/x")
            .defaults("u://x", Some("text/plain"));
        assert_eq!(kept.mime_type.as_deref(), Some("text/x"));
        let sub = Contents::text("t")
            .uri("u://x/1")
            .defaults("u://x", Some("text/plain"));
        assert_eq!((sub.uri.as_deref(), sub.mime_type), (Some("u://x/1"), None));
    }
}
