//! The server as an OAuth protected resource (RFC 9728): the metadata
//! document clients discover their authorization servers from, and the
//! `WWW-Authenticate` challenge of every refusal (RFC 6750) that points to it.

use axum::http::HeaderValue;
use serde_json::{Value, json};

use super::AuthError;

/// Where the protected resource metadata lives, below the origin (RFC 9728
/// § 3.1: the well-known prefix, then the resource's path).
pub(crate) const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// What an OAuth-protected server says about itself: its canonical URI (the
/// audience its tokens must name), who may issue them, and which scopes it
/// knows and needs. Served as RFC 9728 metadata at
/// `/.well-known/oauth-protected-resource` (and the same followed by the
/// resource's path), and named in every `401`'s challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProtectedResource {
    /// The server's canonical URI (`https://tools.example.com/mcp`): the
    /// `resource` clients ask tokens for (RFC 8707), and the audience a token
    /// must name to be accepted, exactly as configured.
    pub resource: String,
    /// `resource`, parsed.
    url: url::Url,
    /// The issuers (authorization servers) whose tokens are accepted.
    pub authorization_servers: Vec<String>,
    /// The scopes advertised in the metadata.
    pub scopes_supported: Vec<String>,
    /// The scopes every request needs (the `scope` of a challenge).
    pub scopes_required: Vec<String>,
}

impl ProtectedResource {
    pub(super) fn new(
        resource: String,
        url: url::Url,
        authorization_servers: Vec<String>,
        scopes_supported: Vec<String>,
        scopes_required: Vec<String>,
    ) -> Self {
        Self {
            resource,
            url,
            authorization_servers,
            scopes_supported,
            scopes_required,
        }
    }

    /// The absolute URL of the metadata document: the resource's origin,
    /// the well-known prefix, then the resource's path (RFC 9728 § 3.1).
    pub fn metadata_url(&self) -> String {
        let mut url = self.url.clone();
        url.set_query(None);
        url.set_fragment(None);
        let path = self.url.path().trim_end_matches('/');
        url.set_path(&format!("{WELL_KNOWN}{path}"));
        url.to_string()
    }

    /// The paths the metadata is served at: the path form of
    /// [`ProtectedResource::metadata_url`] and the bare well-known one
    /// (clients of the 2025-03-26 revision look there).
    pub(crate) fn metadata_paths(&self) -> Vec<String> {
        let path = self.url.path().trim_end_matches('/');
        let mut paths = vec![WELL_KNOWN.to_owned()];
        if !path.is_empty() {
            paths.push(format!("{WELL_KNOWN}{path}"));
        }
        paths
    }

    /// The metadata document (RFC 9728 § 2).
    pub(crate) fn document(&self) -> Value {
        let mut document = json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
            "resource_name": "toolhost",
        });
        let scopes = if self.scopes_supported.is_empty() {
            &self.scopes_required
        } else {
            &self.scopes_supported
        };
        if !scopes.is_empty() {
            document["scopes_supported"] = json!(scopes);
        }
        document
    }

    /// The `WWW-Authenticate` value refusing a request for `error`: the
    /// metadata's URL and the scopes needed, and for a bad token the RFC 6750
    /// error code and a description.
    pub(crate) fn challenge(&self, error: &AuthError) -> HeaderValue {
        let mut params: Vec<(&str, String)> = Vec::new();
        match error {
            AuthError::InvalidToken { reason } => {
                params.push(("error", "invalid_token".to_owned()));
                params.push(("error_description", reason.clone()));
            }
            AuthError::InsufficientScope { .. } => {
                params.push(("error", "insufficient_scope".to_owned()));
            }
            _ => {}
        }
        let scopes = match error {
            AuthError::InsufficientScope { needed } => needed.join(" "),
            _ => self.scopes_required.join(" "),
        };
        if !scopes.is_empty() {
            params.push(("scope", scopes));
        }
        params.push(("resource_metadata", self.metadata_url()));
        let value = params
            .iter()
            .map(|(name, value)| format!("{name}=\"{}\"", quoted(value)))
            .collect::<Vec<_>>()
            .join(", ");
        HeaderValue::from_str(&format!("Bearer {value}"))
            .unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
    }
}

/// `value` fit for a quoted-string: printable ASCII, `"` and `\` escaped.
fn quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => out.push('?'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(uri: &str) -> ProtectedResource {
        ProtectedResource::new(
            uri.to_owned(),
            uri.parse().unwrap(),
            vec!["https://idp.example.com/realms/tools".into()],
            vec![],
            vec!["mcp:tools".into()],
        )
    }

    #[test]
    fn metadata_lives_under_the_well_known_prefix_then_the_path() {
        let r = resource("https://tools.example.com/mcp");
        assert_eq!(
            r.metadata_url(),
            "https://tools.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            r.metadata_paths(),
            [WELL_KNOWN, "/.well-known/oauth-protected-resource/mcp"]
        );
        let root = resource("https://tools.example.com/");
        assert_eq!(
            root.metadata_url(),
            "https://tools.example.com/.well-known/oauth-protected-resource"
        );
        assert_eq!(root.metadata_paths(), [WELL_KNOWN]);
        // As configured, not as a URL parser would spell it (the audience
        // tokens carry, and what clients compare).
        let bare = resource("https://tools.example.com");
        assert_eq!(bare.document()["resource"], "https://tools.example.com");
        let doc = r.document();
        assert_eq!(doc["resource"], "https://tools.example.com/mcp");
        assert_eq!(doc["scopes_supported"], json!(["mcp:tools"]));
        assert_eq!(
            doc["authorization_servers"],
            json!(["https://idp.example.com/realms/tools"])
        );
    }

    #[test]
    fn challenges_name_the_metadata_the_scope_and_the_error() {
        let r = resource("https://tools.example.com/mcp");
        let meta = "resource_metadata=\"https://tools.example.com/.well-known/oauth-protected-resource/mcp\"";
        assert_eq!(
            r.challenge(&AuthError::Missing),
            format!("Bearer scope=\"mcp:tools\", {meta}").as_str()
        );
        assert_eq!(
            r.challenge(&AuthError::InvalidToken {
                reason: "the token \"expired\"".into()
            }),
            format!(
                "Bearer error=\"invalid_token\", error_description=\"the token \\\"expired\\\"\", scope=\"mcp:tools\", {meta}"
            )
            .as_str()
        );
        assert_eq!(
            r.challenge(&AuthError::InsufficientScope {
                needed: vec!["mcp:tools".into(), "admin".into()]
            }),
            format!("Bearer error=\"insufficient_scope\", scope=\"mcp:tools admin\", {meta}")
                .as_str()
        );
        assert_eq!(quoted("é\n"), "??");
    }
}
