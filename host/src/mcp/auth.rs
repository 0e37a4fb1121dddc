//! Who is calling over HTTP: an [`Authenticator`] turns a request's
//! credentials into a [`Principal`], or refuses the request.
//!
//! The HTTP transport runs the server's authenticator on every request before
//! MCP sees it, and puts the principal in the request's extensions; the
//! session reads it from there ([`principal`]) into each call's
//! [`Identity`](crate::toolset::Identity), and tasks belong to its key. stdio
//! has no credentials: its one client is whoever started the process, the
//! anonymous principal.
//!
//! Three schemes are built in: [`OAuth`] (`[serve.auth]`: an OAuth 2.1
//! resource server, JWTs from trusted issuers; it publishes its RFC 9728
//! metadata, [`ProtectedResource`]), [`StaticToken`] (`[serve] token`, one
//! shared bearer token) and, when none is configured, [`Unverified`].

mod jwks;
mod oauth;
mod resource;
mod verified;

pub use oauth::{OAuth, OAuthOptions, OAuthSetupError};
pub use resource::ProtectedResource;

use std::sync::{Arc, LazyLock, Mutex};
use std::time::Instant;

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use rmcp::RoleServer;
use rmcp::service::RequestContext;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

use crate::hex::hex;
use crate::toolset::{BoxFuture, Principal};

/// Turns a request's credentials into the [`Principal`] it acts for.
///
/// # Examples
/// ```
/// use toolhost::mcp::{AuthError, Authenticator, HttpOptions};
/// use toolhost::toolset::{BoxFuture, Principal};
///
/// /// Trusts a header a gateway in front of the server sets.
/// struct Gateway;
///
/// impl Authenticator for Gateway {
///     fn authenticate<'a>(
///         &'a self,
///         headers: &'a http::HeaderMap,
///     ) -> BoxFuture<'a, Result<Principal, AuthError>> {
///         let user = headers.get("x-user").and_then(|v| v.to_str().ok());
///         let principal = user
///             .map(|user| Principal::new("gateway", user).with_roles(["staff"]))
///             .ok_or(AuthError::Missing);
///         Box::pin(std::future::ready(principal))
///     }
/// }
///
/// let mut options = HttpOptions::default();
/// options.authenticator(Gateway);
/// ```
pub trait Authenticator: Send + Sync + 'static {
    /// The principal `headers` (a request's) act for.
    ///
    /// # Errors
    /// [`AuthError`]: the request is answered `401` without reaching MCP.
    fn authenticate<'a>(
        &'a self,
        headers: &'a HeaderMap,
    ) -> BoxFuture<'a, Result<Principal, AuthError>>;

    /// What the server publishes as an OAuth protected resource (RFC 9728),
    /// if the scheme is OAuth: the metadata document, served without
    /// credentials, and the challenge of every refusal. `None` by default.
    fn protected_resource(&self) -> Option<&ProtectedResource> {
        None
    }
}

/// Why an [`Authenticator`] refused a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The request carries no credentials the scheme accepts.
    #[error("missing bearer token")]
    Missing,
    /// The request's credentials are not valid.
    #[error("wrong bearer token")]
    Invalid,
    /// The bearer token cannot be accepted: malformed, expired, for another
    /// resource, from an untrusted issuer, wrongly signed (`401`,
    /// `error="invalid_token"`).
    #[error("invalid token: {reason}")]
    InvalidToken {
        /// Why, as the client is told (`error_description`).
        reason: String,
    },
    /// The token is valid but does not grant what the request needs (`403`,
    /// `error="insufficient_scope"`: the client may ask for more).
    #[error("insufficient scope: needs {}", needed.join(" "))]
    InsufficientScope {
        /// The scopes needed.
        needed: Vec<String>,
    },
    /// Tokens cannot be checked now (the issuer's keys cannot be fetched):
    /// `503`, try again.
    #[error("cannot check the token now: {reason}")]
    Unavailable {
        /// Why.
        reason: String,
    },
}

impl AuthError {
    /// The HTTP status the request is refused with.
    pub fn status(&self) -> axum::http::StatusCode {
        use axum::http::StatusCode;
        match self {
            Self::InsufficientScope { .. } => StatusCode::FORBIDDEN,
            Self::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::UNAUTHORIZED,
        }
    }

    /// A short name for the refusal (the `reason` label of
    /// `toolhost_auth_refusals_total`).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Missing => "missing",
            Self::Invalid | Self::InvalidToken { .. } => "invalid_token",
            Self::InsufficientScope { .. } => "insufficient_scope",
            Self::Unavailable { .. } => "unavailable",
        }
    }
}

/// One bearer token every client shares (`[serve] token`): every holder of
/// it is one principal, `toolhost:static-token` / `bearer`.
pub struct StaticToken {
    token: Box<str>,
}

impl StaticToken {
    /// The issuer of the principal this scheme vouches for.
    pub const ISSUER: &str = "toolhost:static-token";

    /// Accepts `Authorization: Bearer <token>`, compared in constant time.
    pub fn new(token: impl Into<String>) -> Self {
        Self {
            token: token.into().into_boxed_str(),
        }
    }
}

impl std::fmt::Debug for StaticToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StaticToken(<redacted>)")
    }
}

impl Authenticator for StaticToken {
    fn authenticate<'a>(
        &'a self,
        headers: &'a HeaderMap,
    ) -> BoxFuture<'a, Result<Principal, AuthError>> {
        let outcome = match bearer(headers) {
            None => Err(AuthError::Missing),
            Some(given) if constant_time_eq(given.as_bytes(), self.token.as_bytes()) => {
                Ok(Principal::new(Self::ISSUER, "bearer"))
            }
            Some(_) => Err(AuthError::Invalid),
        };
        Box::pin(std::future::ready(outcome))
    }
}

/// No scheme (HTTP without `[serve] token`): every request is accepted. A
/// request without an `Authorization` header is the anonymous principal; one
/// with it acts for whoever holds that exact header, unverified
/// (`toolhost:unverified` / a digest of it), so clients that present
/// different credentials still do not see each other's tasks.
#[derive(Debug, Default, Clone, Copy)]
pub struct Unverified;

impl Unverified {
    /// The issuer of the principals this scheme names.
    pub const ISSUER: &str = "toolhost:unverified";
}

impl Authenticator for Unverified {
    fn authenticate<'a>(
        &'a self,
        headers: &'a HeaderMap,
    ) -> BoxFuture<'a, Result<Principal, AuthError>> {
        let principal = match headers.get(AUTHORIZATION) {
            Some(value) => Principal::new(
                Self::ISSUER,
                format!("authorization:{}", hex(&Sha256::digest(value.as_bytes()))),
            ),
            None => Principal::anonymous(),
        };
        Box::pin(std::future::ready(Ok(principal)))
    }
}

/// The token of `Authorization: Bearer <token>`, if the request has one.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
}

/// Compares secrets without leaking where they differ through timing.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    bool::from(a.ct_eq(b))
}

/// The anonymous principal, shared (stdio's every call carries it).
static ANONYMOUS: LazyLock<Arc<Principal>> = LazyLock::new(|| Arc::new(Principal::anonymous()));

/// The principal a request acts for: the one the HTTP transport's
/// authenticator attached, else (stdio) the anonymous one.
pub(super) fn principal(context: &RequestContext<RoleServer>) -> Arc<Principal> {
    super::transport::principal(context).map_or_else(|| Arc::clone(&ANONYMOUS), Arc::clone)
}

/// Authenticates `request` with `authenticator`: its principal goes into the
/// request's extensions, or the request is refused (`401`, `403` or `503`,
/// with the scheme's challenge).
pub(super) async fn authenticate(
    authenticator: &dyn Authenticator,
    metrics: &crate::metrics::Metrics,
    mut request: axum::extract::Request,
) -> Result<axum::extract::Request, axum::response::Response> {
    use axum::response::IntoResponse;
    match authenticator.authenticate(request.headers()).await {
        Ok(principal) => {
            request.extensions_mut().insert(Arc::new(principal));
            Ok(request)
        }
        Err(error) => {
            metrics.auth_refused(error.kind());
            REFUSALS.note(&error);
            let challenge = match authenticator.protected_resource() {
                Some(resource) => resource.challenge(&error),
                None => challenge(&error),
            };
            let mut response = (
                error.status(),
                [(axum::http::header::WWW_AUTHENTICATE, challenge)],
                format!("{error}\n"),
            )
                .into_response();
            if matches!(error, AuthError::Unavailable { .. }) {
                response.headers_mut().insert(
                    axum::http::header::RETRY_AFTER,
                    axum::http::HeaderValue::from_static("5"),
                );
            }
            Err(response)
        }
    }
}

/// The `WWW-Authenticate` value of a refusal by a scheme that is not OAuth
/// (a static token, an embedder's own): RFC 6750's `Bearer` with a realm,
/// and for credentials that were given but refused the error code (§3.1: a
/// request without credentials gets none). A bare `Bearer` reads to clients
/// such as the MCP Inspector as "this server speaks OAuth"; the realm and
/// code say "present the token you were given".
fn challenge(error: &AuthError) -> axum::http::HeaderValue {
    use axum::http::HeaderValue;
    match error {
        AuthError::Missing | AuthError::Unavailable { .. } => {
            HeaderValue::from_static(r#"Bearer realm="toolhost""#)
        }
        AuthError::Invalid | AuthError::InvalidToken { .. } => {
            HeaderValue::from_static(r#"Bearer realm="toolhost", error="invalid_token""#)
        }
        AuthError::InsufficientScope { .. } => {
            HeaderValue::from_static(r#"Bearer realm="toolhost", error="insufficient_scope""#)
        }
    }
}

/// Refused requests, logged at most once a second (with how many were
/// refused since), so a client sending bad tokens cannot flood the log.
struct RefusalLog {
    state: Mutex<(Option<Instant>, u64)>,
}

static REFUSALS: RefusalLog = RefusalLog {
    state: Mutex::new((None, 0)),
};

impl RefusalLog {
    fn note(&self, error: &AuthError) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        state.1 += 1;
        let due = state
            .0
            .is_none_or(|at| at.elapsed() >= std::time::Duration::from_secs(1));
        if due {
            tracing::warn!(
                target: "toolhost::auth",
                %error,
                refused = state.1,
                "refused MCP HTTP request(s) (this one's reason shown; at most one line a second)"
            );
            *state = (Some(Instant::now()), 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(authorization: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(value) = authorization {
            headers.insert(AUTHORIZATION, value.parse().unwrap());
        }
        headers
    }

    #[test]
    fn bearer_tokens_compare_exactly() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret2"));
        assert!(!constant_time_eq(b"", b"secret"));
    }

    #[tokio::test]
    async fn a_static_token_is_one_principal_and_refuses_the_rest() {
        let scheme = StaticToken::new("secret");
        let ok = scheme
            .authenticate(&headers(Some("Bearer secret")))
            .await
            .unwrap();
        assert_eq!(ok, Principal::new(StaticToken::ISSUER, "bearer"));
        assert!(!ok.is_anonymous());
        for (given, refused) in [
            (None, AuthError::Missing),
            (Some("Basic secret"), AuthError::Missing),
            (Some("Bearer secreT"), AuthError::Invalid),
            (Some("Bearer secret "), AuthError::Invalid),
        ] {
            let err = scheme.authenticate(&headers(given)).await.unwrap_err();
            assert_eq!(err, refused, "{given:?}");
        }
        assert_eq!(format!("{scheme:?}"), "StaticToken(<redacted>)");
    }

    #[test]
    fn refusals_without_oauth_name_the_realm_and_the_error() {
        let shown = |error: AuthError| challenge(&error).to_str().unwrap().to_owned();
        // RFC 6750 §3.1: no error code when the request had no credentials.
        assert_eq!(shown(AuthError::Missing), r#"Bearer realm="toolhost""#);
        assert_eq!(
            shown(AuthError::Invalid),
            r#"Bearer realm="toolhost", error="invalid_token""#
        );
        assert_eq!(
            shown(AuthError::InvalidToken {
                reason: "expired".into()
            }),
            r#"Bearer realm="toolhost", error="invalid_token""#
        );
        assert_eq!(
            shown(AuthError::InsufficientScope {
                needed: vec!["tools".into()]
            }),
            r#"Bearer realm="toolhost", error="insufficient_scope""#
        );
    }

    #[tokio::test]
    async fn unverified_credentials_keep_their_holders_apart() {
        let alice = Unverified
            .authenticate(&headers(Some("Bearer alice")))
            .await
            .unwrap();
        let bob = Unverified
            .authenticate(&headers(Some("Bearer bob")))
            .await
            .unwrap();
        let nobody = Unverified.authenticate(&headers(None)).await.unwrap();
        assert_eq!(alice.issuer, Unverified::ISSUER);
        assert_ne!(alice.key(), bob.key());
        assert!(nobody.is_anonymous());
        assert_eq!(nobody.key(), "anonymous");
        assert!(!alice.subject.contains("alice"), "a digest, not the secret");
    }

    #[test]
    fn keys_join_issuer_and_subject_unambiguously() {
        assert_ne!(
            Principal::new("a b", "c").key(),
            Principal::new("a", "b c").key()
        );
        // A subject called `anonymous` under an issuer is not the anonymous caller.
        assert_ne!(Principal::new("x", "anonymous").key(), "anonymous");
    }
}
