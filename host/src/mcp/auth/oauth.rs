//! The MCP server as an OAuth 2.1 resource server (the MCP specification's
//! authorization section): bearer JWTs from trusted issuers, checked against
//! the issuer's published keys, for this server's resource URI only.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderMap;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::{Map, Value};

use super::jwks::{IssuerKeys, KeyError, KeyPolicy};
use super::verified::Verified;
use super::{AuthError, Authenticator, ProtectedResource, bearer};
use crate::toolset::{BoxFuture, Principal};

/// The algorithms a token may be signed with: the asymmetric ones only (a
/// shared-secret `HS*` token checked against a public key is the classic
/// key-confusion attack; `none` is never a signature).
const ACCEPTED: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// The longest bearer token read (bytes); longer ones are refused unread.
const MAX_TOKEN: usize = 16 * 1024;

/// How an [`OAuth`] resource server checks tokens.
///
/// # Examples
/// ```
/// use toolhost::mcp::{OAuth, OAuthOptions};
///
/// let mut options = OAuthOptions::new("https://tools.example.com/mcp");
/// options
///     .issuer("https://idp.example.com/realms/tools")
///     .require_scopes(["mcp:tools"])
///     .roles_claim("groups");
/// let oauth = OAuth::new(options).unwrap();
/// assert_eq!(
///     oauth.protected_resource().metadata_url(),
///     "https://tools.example.com/.well-known/oauth-protected-resource/mcp"
/// );
/// ```
#[derive(Debug, Clone)]
pub struct OAuthOptions {
    resource: String,
    issuers: Vec<(String, Option<String>)>,
    scopes_required: Vec<String>,
    scopes_supported: Vec<String>,
    roles_claim: Option<String>,
    leeway: Duration,
    jwks_ttl: Duration,
    jwks_min_refresh: Duration,
    fetch_timeout: Duration,
}

impl OAuthOptions {
    /// The default of [`OAuthOptions::leeway`].
    pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(60);
    /// The default of [`OAuthOptions::jwks_cache`].
    pub const DEFAULT_JWKS_CACHE: Duration = Duration::from_secs(300);
    /// The default of [`OAuthOptions::jwks_min_refresh`].
    pub const DEFAULT_JWKS_MIN_REFRESH: Duration = Duration::from_secs(10);
    /// The default of [`OAuthOptions::fetch_timeout`].
    pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(5);

    /// A resource server whose canonical URI is `resource` (the URL clients
    /// reach the MCP endpoint at, such as `https://tools.example.com/mcp`):
    /// only tokens whose audience is exactly this are accepted.
    pub fn new(resource: impl Into<String>) -> Self {
        Self {
            resource: resource.into(),
            issuers: Vec::new(),
            scopes_required: Vec::new(),
            scopes_supported: Vec::new(),
            roles_claim: None,
            leeway: Self::DEFAULT_LEEWAY,
            jwks_ttl: Self::DEFAULT_JWKS_CACHE,
            jwks_min_refresh: Self::DEFAULT_JWKS_MIN_REFRESH,
            fetch_timeout: Self::DEFAULT_FETCH_TIMEOUT,
        }
    }

    /// Trusts tokens `issuer` signs (its `iss`, exactly); its keys come from
    /// the `jwks_uri` of its metadata (RFC 8414 or OpenID discovery).
    pub fn issuer(&mut self, issuer: impl Into<String>) -> &mut Self {
        self.issuers.push((issuer.into(), None));
        self
    }

    /// Trusts tokens `issuer` signs with the keys published at `jwks_uri`
    /// (no discovery).
    pub fn issuer_with_jwks(
        &mut self,
        issuer: impl Into<String>,
        jwks_uri: impl Into<String>,
    ) -> &mut Self {
        self.issuers.push((issuer.into(), Some(jwks_uri.into())));
        self
    }

    /// Scopes every request's token must grant; a valid token without them
    /// is answered `403` with `error="insufficient_scope"`.
    pub fn require_scopes(
        &mut self,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> &mut Self {
        self.scopes_required
            .extend(scopes.into_iter().map(Into::into));
        self
    }

    /// Scopes the metadata advertises (the required ones when unset).
    pub fn scopes_supported(
        &mut self,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> &mut Self {
        self.scopes_supported
            .extend(scopes.into_iter().map(Into::into));
        self
    }

    /// The claim holding the caller's roles (a list of strings, or one
    /// string), such as `groups`, `roles`, or a dotted path into nested
    /// objects (`realm_access.roles`, Keycloak's).
    pub fn roles_claim(&mut self, claim: impl Into<String>) -> &mut Self {
        self.roles_claim = Some(claim.into());
        self
    }

    /// How far a token's `exp` and `nbf` may be off (clock skew).
    pub fn leeway(&mut self, leeway: Duration) -> &mut Self {
        self.leeway = leeway;
        self
    }

    /// How long fetched keys are used before they are fetched again (in the
    /// background: the cached ones keep serving meanwhile, and for up to an
    /// hour more while the issuer cannot be reached).
    pub fn jwks_cache(&mut self, ttl: Duration) -> &mut Self {
        self.jwks_ttl = ttl;
        self
    }

    /// The shortest time between two fetches of one issuer's keys: a token
    /// naming a key the cache lacks fetches them again at most this often.
    pub fn jwks_min_refresh(&mut self, min: Duration) -> &mut Self {
        self.jwks_min_refresh = min;
        self
    }

    /// How long one fetch of metadata or keys may take.
    pub fn fetch_timeout(&mut self, timeout: Duration) -> &mut Self {
        self.fetch_timeout = timeout;
        self
    }
}

/// Why [`OAuth::new`] refused its options.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthSetupError {
    /// The resource URI is not an absolute `http(s)` URL without a fragment.
    #[error("resource {uri:?}: {why}")]
    Resource {
        /// The URI given.
        uri: String,
        /// What is wrong with it.
        why: String,
    },
    /// No issuer is trusted.
    #[error("no issuer is trusted: name at least one")]
    NoIssuer,
    /// An issuer or JWKS URL is not usable.
    #[error("{what} {url:?}: {why}")]
    Endpoint {
        /// `issuer` or `jwks_uri`.
        what: &'static str,
        /// The URL given.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// The HTTP client for fetching keys could not be built.
    #[error("cannot build the HTTP client that fetches keys: {0}")]
    Client(String),
}

/// An OAuth 2.1 resource server ([`Authenticator`]): accepts
/// `Authorization: Bearer <JWT>` from the trusted issuers, signed with a key
/// of the issuer's JWKS (asymmetric algorithms only), within its validity
/// (`exp`, `nbf`, with leeway), whose audience is this server's resource URI
/// (a token for another resource is refused, never passed on), granting the
/// required scopes. The caller's [`Principal`] is the token's issuer and
/// subject, with its scopes (`scope` or `scp`), roles (the configured claim)
/// and claims.
pub struct OAuth {
    resource: ProtectedResource,
    issuers: HashMap<String, Arc<IssuerKeys>>,
    roles_claim: Option<Vec<String>>,
    leeway: Duration,
    verified: Verified,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth")
            .field("resource", &self.resource)
            .field("roles_claim", &self.roles_claim)
            .field("leeway", &self.leeway)
            .finish_non_exhaustive()
    }
}

impl OAuth {
    /// A resource server checking tokens as `options` say.
    ///
    /// # Errors
    /// [`OAuthSetupError`]: a URI that is not absolute, a plain-`http`
    /// issuer or key URL off loopback, no issuer.
    pub fn new(options: OAuthOptions) -> Result<Self, OAuthSetupError> {
        let url = parse_resource(&options.resource)?;
        if options.issuers.is_empty() {
            return Err(OAuthSetupError::NoIssuer);
        }
        // reqwest uses the process's rustls provider: ring, as for OCI.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .timeout(options.fetch_timeout)
            .connect_timeout(options.fetch_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("toolhost/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|err| OAuthSetupError::Client(err.to_string()))?;
        let policy = KeyPolicy {
            ttl: options.jwks_ttl,
            min_refresh: options.jwks_min_refresh,
        };
        let mut issuers = HashMap::new();
        let mut names = Vec::new();
        for (issuer, jwks_uri) in options.issuers {
            check_endpoint(&issuer).map_err(|why| OAuthSetupError::Endpoint {
                what: "issuer",
                url: issuer.clone(),
                why,
            })?;
            if let Some(uri) = &jwks_uri {
                check_endpoint(uri).map_err(|why| OAuthSetupError::Endpoint {
                    what: "jwks_uri",
                    url: uri.clone(),
                    why,
                })?;
            }
            names.push(issuer.clone());
            let keys = IssuerKeys::new(issuer.clone(), jwks_uri, client.clone(), policy);
            issuers.insert(issuer, keys);
        }
        Ok(Self {
            resource: ProtectedResource::new(
                options.resource,
                url,
                names,
                options.scopes_supported,
                options.scopes_required,
            ),
            issuers,
            roles_claim: options
                .roles_claim
                .map(|claim| claim.split('.').map(str::to_owned).collect()),
            leeway: options.leeway,
            verified: Verified::new(options.jwks_ttl),
        })
    }

    /// What this server publishes about itself (RFC 9728).
    pub fn protected_resource(&self) -> &ProtectedResource {
        &self.resource
    }

    /// The principal of `token`, if it may use this server.
    async fn check(&self, token: &str) -> Result<Principal, AuthError> {
        let principal = match self.verified.get(token) {
            Some(principal) => principal,
            None => self.verify(token).await?,
        };
        let missing = self
            .resource
            .scopes_required
            .iter()
            .any(|scope| !principal.scopes.contains(scope));
        if missing {
            return Err(AuthError::InsufficientScope {
                needed: self.resource.scopes_required.clone(),
            });
        }
        Ok(principal)
    }

    /// Verifies `token` (signature, issuer, audience, validity) and
    /// remembers it.
    async fn verify(&self, token: &str) -> Result<Principal, AuthError> {
        let invalid = |reason: &str| AuthError::InvalidToken {
            reason: reason.to_owned(),
        };
        if token.len() > MAX_TOKEN {
            return Err(invalid("the token is too long"));
        }
        let header =
            jsonwebtoken::decode_header(token).map_err(|_| invalid("the token is not a JWT"))?;
        if !ACCEPTED.contains(&header.alg) {
            return Err(invalid("the token's signing algorithm is not accepted"));
        }
        // Which issuer's keys to check it with: only configured issuers are
        // ever asked for keys, whatever a token claims.
        #[derive(serde::Deserialize)]
        struct Unverified {
            iss: Option<String>,
        }
        let claimed: Unverified = jsonwebtoken::dangerous::insecure_decode_claims(token)
            .map_err(|_| invalid("the token's claims are not JSON"))?;
        let issuer = claimed
            .iss
            .ok_or_else(|| invalid("the token names no issuer"))?;
        let Some(keys) = self.issuers.get(&issuer) else {
            return Err(invalid("the token's issuer is not trusted"));
        };
        let key = keys
            .key(header.kid.as_deref(), header.alg)
            .await
            .map_err(|err| match err {
                KeyError::Unknown => invalid("the token's signing key is not the issuer's"),
                KeyError::Unavailable(why) => AuthError::Unavailable {
                    reason: format!("cannot check tokens of {issuer} now: {why}"),
                },
            })?;
        let mut validation = Validation::new(header.alg);
        validation.leeway = self.leeway.as_secs();
        validation.validate_nbf = true;
        validation.set_issuer(&[&issuer]);
        validation.set_audience(&[&self.resource.resource]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let claims = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
            .map_err(|err| {
                invalid(match err.kind() {
                    ErrorKind::InvalidSignature => "the token's signature is wrong",
                    ErrorKind::ExpiredSignature => "the token has expired",
                    ErrorKind::ImmatureSignature => "the token is not valid yet",
                    ErrorKind::InvalidAudience => "the token is for another resource",
                    ErrorKind::InvalidIssuer => "the token's issuer is not trusted",
                    ErrorKind::MissingRequiredClaim(_) => {
                        "the token lacks a required claim (exp, iss, aud, sub)"
                    }
                    ErrorKind::InvalidAlgorithm => "the token's algorithm does not fit its key",
                    _ => "the token is not valid",
                })
            })?
            .claims;
        let expires = claims
            .get("exp")
            .and_then(Value::as_u64)
            .unwrap_or(0)
            .saturating_add(self.leeway.as_secs());
        let principal = self.principal(issuer, claims)?;
        self.verified.put(token, &principal, expires);
        Ok(principal)
    }

    fn principal(
        &self,
        issuer: String,
        claims: Map<String, Value>,
    ) -> Result<Principal, AuthError> {
        let subject = match claims.get("sub") {
            Some(Value::String(sub)) if !sub.is_empty() => sub.clone(),
            _ => {
                return Err(AuthError::InvalidToken {
                    reason: "the token's subject is not a string".to_owned(),
                });
            }
        };
        let mut principal = Principal::new(issuer, subject);
        // `scope` (RFC 9068: space-separated), or `scp` (Entra ID, Okta:
        // a list, or a space-separated string).
        for name in ["scope", "scp"] {
            principal.scopes.extend(strings(claims.get(name)));
        }
        if let Some(path) = &self.roles_claim {
            let mut value = Some(&Value::Object(claims.clone()));
            for part in path {
                value = value.and_then(|v| v.get(part));
            }
            principal
                .roles
                .extend(strings(value).filter(|role| !role.is_empty()));
        }
        principal.claims = claims;
        Ok(principal)
    }
}

/// The strings of a claim: a list of strings, or one space-separated string.
fn strings(value: Option<&Value>) -> impl Iterator<Item = String> + '_ {
    let (list, text) = match value {
        Some(Value::Array(items)) => (items.as_slice(), None),
        Some(Value::String(text)) => (&[][..], Some(text.as_str())),
        _ => (&[][..], None),
    };
    list.iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .chain(
            text.into_iter()
                .flat_map(str::split_whitespace)
                .map(str::to_owned),
        )
}

impl Authenticator for OAuth {
    fn authenticate<'a>(
        &'a self,
        headers: &'a HeaderMap,
    ) -> BoxFuture<'a, Result<Principal, AuthError>> {
        Box::pin(async move {
            match bearer(headers) {
                None => Err(AuthError::Missing),
                Some(token) => self.check(token.trim()).await,
            }
        })
    }

    fn protected_resource(&self) -> Option<&ProtectedResource> {
        Some(&self.resource)
    }
}

/// The canonical resource URI: absolute `http(s)`, no fragment (RFC 8707).
fn parse_resource(uri: &str) -> Result<url::Url, OAuthSetupError> {
    let refuse = |why: &str| OAuthSetupError::Resource {
        uri: uri.to_owned(),
        why: why.to_owned(),
    };
    let url: url::Url = uri
        .parse()
        .map_err(|err: url::ParseError| refuse(&err.to_string()))?;
    if !matches!(url.scheme(), "https" | "http") {
        return Err(refuse("not an http(s) URL"));
    }
    if url.fragment().is_some() {
        return Err(refuse("a resource URI has no fragment"));
    }
    if url.host_str().is_none() {
        return Err(refuse("no host"));
    }
    Ok(url)
}

/// An issuer or key URL: `https`, or plain `http` on a loopback host only
/// (OAuth 2.1 wants TLS for everything else).
pub(super) fn check_endpoint(url: &str) -> Result<(), String> {
    let parsed: url::Url = url
        .parse()
        .map_err(|err: url::ParseError| err.to_string())?;
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if is_loopback(&parsed) => Ok(()),
        "http" => Err("plain http is only allowed on loopback; use https".to_owned()),
        _ => Err("not an http(s) URL".to_owned()),
    }
}

fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_refuses_what_cannot_be_a_resource_or_an_issuer() {
        let mut options = OAuthOptions::new("not a url");
        options.issuer("https://idp.example.com");
        assert!(matches!(
            OAuth::new(options).unwrap_err(),
            OAuthSetupError::Resource { .. }
        ));
        assert_eq!(
            OAuth::new(OAuthOptions::new("https://t.example.com/mcp")).unwrap_err(),
            OAuthSetupError::NoIssuer
        );
        let mut options = OAuthOptions::new("https://t.example.com/mcp");
        options.issuer("http://idp.example.com");
        assert!(matches!(
            OAuth::new(options).unwrap_err(),
            OAuthSetupError::Endpoint { what: "issuer", .. }
        ));
        let mut options = OAuthOptions::new("https://t.example.com/mcp#x");
        options.issuer("https://idp.example.com");
        assert!(OAuth::new(options).is_err());
        for ok in [
            "http://127.0.0.1:9/x",
            "http://localhost:1",
            "http://[::1]:2",
            "https://a.b",
        ] {
            assert_eq!(check_endpoint(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn scopes_and_roles_come_from_the_usual_claims() {
        let mut options = OAuthOptions::new("https://t.example.com/mcp");
        options
            .issuer("https://idp.example.com")
            .roles_claim("realm_access.roles");
        let oauth = OAuth::new(options).unwrap();
        let claims = serde_json::json!({
            "sub": "ana",
            "scope": "mcp:tools  tools:read",
            "scp": ["files:write"],
            "realm_access": {"roles": ["staff", "", 3]},
        });
        let Value::Object(claims) = claims else {
            unreachable!()
        };
        let principal = oauth
            .principal("https://idp.example.com".into(), claims)
            .unwrap();
        assert_eq!(principal.subject, "ana");
        assert_eq!(
            principal.scopes.iter().collect::<Vec<_>>(),
            ["files:write", "mcp:tools", "tools:read"]
        );
        assert_eq!(principal.roles.iter().collect::<Vec<_>>(), ["staff"]);
        let Value::Object(no_sub) = serde_json::json!({"sub": 7}) else {
            unreachable!()
        };
        assert!(oauth.principal("x".into(), no_sub).is_err());
    }
}
