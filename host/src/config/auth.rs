//! `[serve.auth]`: the MCP HTTP server as an OAuth 2.1 resource server. This
//! module only reads and checks the settings; the server
//! ([`OAuthOptions`](crate::mcp::OAuthOptions), feature `mcp`) checks tokens.

use serde::Deserialize;

use super::ConfigError;

/// `[serve.auth]`: who may issue the tokens the MCP HTTP server accepts.
///
/// ```toml
/// [serve.auth]
/// resource = "https://tools.example.com/mcp"   # this server's canonical URI
/// scopes = ["mcp:tools"]                       # every request needs these
/// roles_claim = "groups"
///
/// [[serve.auth.issuers]]
/// issuer = "https://idp.example.com/realms/tools"
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct AuthConfig {
    /// This server's canonical URI, as clients reach its MCP endpoint (the
    /// audience every accepted token must name).
    pub resource: String,
    /// The trusted authorization servers.
    #[serde(default)]
    pub issuers: Vec<IssuerConfig>,
    /// Scopes every request's token must grant (else `403`
    /// `insufficient_scope`).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Scopes the protected resource metadata advertises [default: `scopes`].
    #[serde(default)]
    pub scopes_supported: Vec<String>,
    /// The claim holding the caller's roles: `groups`, `roles`, or a dotted
    /// path (`realm_access.roles`).
    pub roles_claim: Option<String>,
    /// Seconds a token's `exp`/`nbf` may be off (60).
    pub leeway_secs: Option<u64>,
    /// Seconds an issuer's fetched keys are used before they are fetched
    /// again (300).
    pub jwks_cache_secs: Option<u64>,
    /// The fewest seconds between two fetches of one issuer's keys, however
    /// many tokens name unknown keys (10).
    pub jwks_refresh_min_secs: Option<u64>,
    /// Milliseconds one fetch of an issuer's metadata or keys may take (5000).
    pub fetch_timeout_ms: Option<u64>,
}

/// One trusted issuer (`[[serve.auth.issuers]]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct IssuerConfig {
    /// The issuer, exactly as its tokens' `iss` says.
    pub issuer: String,
    /// Where its keys are published [default: the `jwks_uri` of its
    /// metadata, found by RFC 8414 or OpenID discovery].
    pub jwks_uri: Option<String>,
}

impl AuthConfig {
    /// Checks what can be checked without the network.
    pub(super) fn check(
        &self,
        error: impl Fn(String, &str) -> ConfigError,
    ) -> Result<(), ConfigError> {
        if self.resource.trim().is_empty() {
            return Err(error(
                "serve.auth.resource".to_owned(),
                "name this server's canonical URI, such as `https://tools.example.com/mcp`",
            ));
        }
        if self.issuers.is_empty() {
            return Err(error(
                "serve.auth.issuers".to_owned(),
                "trust at least one issuer ([[serve.auth.issuers]] issuer = \"https://…\")",
            ));
        }
        for (i, issuer) in self.issuers.iter().enumerate() {
            if issuer.issuer.trim().is_empty() {
                return Err(error(
                    format!("serve.auth.issuers[{i}].issuer"),
                    "must not be empty",
                ));
            }
        }
        if self.scopes.iter().chain(&self.scopes_supported).any(|s| {
            s.is_empty()
                || s.chars()
                    .any(|c| c.is_whitespace() || c == '"' || c == '\\')
        }) {
            return Err(error(
                "serve.auth.scopes".to_owned(),
                "a scope is one word without spaces, quotes or backslashes",
            ));
        }
        if self.jwks_cache_secs == Some(0) || self.fetch_timeout_ms == Some(0) {
            return Err(error(
                "serve.auth".to_owned(),
                "jwks_cache_secs and fetch_timeout_ms must be greater than 0",
            ));
        }
        Ok(())
    }
}
