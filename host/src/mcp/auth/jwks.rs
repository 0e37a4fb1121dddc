//! An issuer's signing keys (its JWKS): found from its metadata (RFC 8414 or
//! OpenID discovery) unless configured, fetched with bounds (time, size, key
//! count, no redirects), cached, refreshed when stale (in the background,
//! the cached keys still serving) or when a token names a key the cache does
//! not hold (at most once per `min_refresh`, so unknown `kid`s cannot make
//! the server hammer the issuer).

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;

/// The largest JWKS or metadata document read (bytes).
pub(super) const MAX_DOCUMENT: usize = 256 * 1024;
/// The most keys kept of one JWKS.
pub(super) const MAX_KEYS: usize = 64;
/// How long stale keys keep serving while their issuer cannot be reached.
const STALE_GRACE: Duration = Duration::from_secs(3600);

/// How an issuer's keys are fetched and kept.
#[derive(Debug, Clone, Copy)]
pub(super) struct KeyPolicy {
    /// How long fetched keys are fresh.
    pub(super) ttl: Duration,
    /// The shortest time between two fetches.
    pub(super) min_refresh: Duration,
}

/// Why a token's key cannot be had.
#[derive(Debug)]
pub(super) enum KeyError {
    /// The issuer's keys are known, and none is the token's.
    Unknown,
    /// The issuer's keys cannot be had now.
    Unavailable(String),
}

/// One key of a set, ready to verify with.
struct Key {
    kid: Option<String>,
    /// The algorithm the JWK pins, if it does.
    alg: Option<Algorithm>,
    key: Arc<DecodingKey>,
}

/// A fetched key set.
struct KeySet {
    fetched: Instant,
    keys: Vec<Key>,
}

impl KeySet {
    /// The key for a token signed with `alg`, named `kid` (or, unnamed,
    /// the one key of the set that fits `alg`).
    fn find(&self, kid: Option<&str>, alg: Algorithm) -> Option<Arc<DecodingKey>> {
        let fits = |key: &&Key| {
            key.alg.is_none_or(|pinned| pinned == alg) && key.key.family() == alg.family()
        };
        match kid {
            Some(kid) => self
                .keys
                .iter()
                .filter(fits)
                .find(|key| key.kid.as_deref() == Some(kid)),
            None => {
                let mut fitting = self.keys.iter().filter(fits);
                match (fitting.next(), fitting.next()) {
                    (Some(only), None) => Some(only),
                    _ => None,
                }
            }
        }
        .map(|key| Arc::clone(&key.key))
    }
}

/// What the fetching side remembers (under the refresh lock).
#[derive(Default)]
struct Fetching {
    /// The JWKS URL: configured, or discovered once.
    jwks_uri: Option<String>,
    last_attempt: Option<Instant>,
    last_error: Option<String>,
}

/// One issuer's keys.
pub(super) struct IssuerKeys {
    issuer: String,
    client: reqwest::Client,
    policy: KeyPolicy,
    keys: RwLock<Option<Arc<KeySet>>>,
    fetching: Arc<tokio::sync::Mutex<Fetching>>,
}

impl IssuerKeys {
    pub(super) fn new(
        issuer: String,
        jwks_uri: Option<String>,
        client: reqwest::Client,
        policy: KeyPolicy,
    ) -> Arc<Self> {
        Arc::new(Self {
            issuer,
            client,
            policy,
            keys: RwLock::new(None),
            fetching: Arc::new(tokio::sync::Mutex::new(Fetching {
                jwks_uri,
                ..Fetching::default()
            })),
        })
    }

    fn cached(&self) -> Option<Arc<KeySet>> {
        self.keys.read().ok().and_then(|keys| keys.clone())
    }

    /// The key that verifies a token of this issuer signed with `alg` and
    /// naming `kid`.
    pub(super) async fn key(
        self: &Arc<Self>,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<Arc<DecodingKey>, KeyError> {
        if let Some(set) = self.cached() {
            let age = set.fetched.elapsed();
            if let Some(key) = set.find(kid, alg) {
                if age >= self.policy.ttl {
                    self.refresh_in_background();
                }
                if age < self.policy.ttl + STALE_GRACE {
                    return Ok(key);
                }
            }
        }
        // No keys yet, a key the cache lacks, or keys too old to trust.
        let mut fetching = self.fetching.lock().await;
        if let Some(set) = self.cached()
            && !self.due(&fetching)
        {
            // Fetched meanwhile, or fetched too recently to try again.
            return match set.find(kid, alg) {
                Some(key) if set.fetched.elapsed() < self.policy.ttl + STALE_GRACE => Ok(key),
                Some(_) => Err(self.unavailable(&fetching)),
                None => Err(KeyError::Unknown),
            };
        }
        if self.cached().is_none() && !self.due(&fetching) {
            return Err(self.unavailable(&fetching));
        }
        self.refresh(&mut fetching).await;
        match self.cached() {
            Some(set) if set.fetched.elapsed() < self.policy.ttl + STALE_GRACE => {
                set.find(kid, alg).ok_or(KeyError::Unknown)
            }
            _ => Err(self.unavailable(&fetching)),
        }
    }

    fn unavailable(&self, fetching: &Fetching) -> KeyError {
        KeyError::Unavailable(
            fetching
                .last_error
                .clone()
                .unwrap_or_else(|| "its keys were not fetched yet".to_owned()),
        )
    }

    fn due(&self, fetching: &Fetching) -> bool {
        fetching
            .last_attempt
            .is_none_or(|at| at.elapsed() >= self.policy.min_refresh)
    }

    /// Refreshes stale keys without making the caller wait; a refresh
    /// already running (or one just tried) is enough.
    fn refresh_in_background(self: &Arc<Self>) {
        let this = Arc::clone(self);
        let Ok(mut fetching) = Arc::clone(&self.fetching).try_lock_owned() else {
            return;
        };
        if !self.due(&fetching) {
            return;
        }
        tokio::spawn(async move {
            this.refresh(&mut fetching).await;
        });
    }

    /// Fetches the keys (finding the JWKS first if need be); on failure the
    /// cache keeps what it had and the error is remembered and logged.
    async fn refresh(&self, fetching: &mut Fetching) {
        fetching.last_attempt = Some(Instant::now());
        match self.fetch(fetching).await {
            Ok(set) => {
                tracing::debug!(
                    target: "toolhost::auth",
                    issuer = %self.issuer,
                    keys = set.keys.len(),
                    "fetched the issuer's signing keys"
                );
                fetching.last_error = None;
                if let Ok(mut keys) = self.keys.write() {
                    *keys = Some(Arc::new(set));
                }
            }
            Err(error) => {
                tracing::warn!(
                    target: "toolhost::auth",
                    issuer = %self.issuer,
                    %error,
                    "cannot fetch the issuer's signing keys; cached keys (if any) keep serving"
                );
                fetching.last_error = Some(error);
            }
        }
    }

    async fn fetch(&self, fetching: &mut Fetching) -> Result<KeySet, String> {
        let jwks_uri = match &fetching.jwks_uri {
            Some(uri) => uri.clone(),
            None => {
                let uri = discover(&self.client, &self.issuer).await?;
                fetching.jwks_uri = Some(uri.clone());
                uri
            }
        };
        let document = get_json(&self.client, &jwks_uri).await?;
        let listed = document
            .get("keys")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("{jwks_uri}: not a JWKS (no `keys` array)"))?;
        let mut keys = Vec::new();
        for value in listed {
            if keys.len() == MAX_KEYS {
                tracing::warn!(
                    target: "toolhost::auth",
                    issuer = %self.issuer,
                    "the issuer's JWKS has more than {MAX_KEYS} keys; the rest are ignored"
                );
                break;
            }
            // A key of a kind this server does not know is skipped, not fatal.
            let Ok(jwk) = serde_json::from_value::<Jwk>(value.clone()) else {
                continue;
            };
            if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
                continue;
            }
            let Ok(key) = DecodingKey::from_jwk(&jwk) else {
                continue;
            };
            let alg = jwk
                .common
                .key_algorithm
                .and_then(|alg| alg.to_string().parse::<Algorithm>().ok());
            keys.push(Key {
                kid: jwk.common.key_id.clone(),
                alg,
                key: Arc::new(key),
            });
        }
        if keys.is_empty() {
            return Err(format!("{jwks_uri}: no usable signing key"));
        }
        Ok(KeySet {
            fetched: Instant::now(),
            keys,
        })
    }
}

/// The JWKS URL of `issuer`, from its metadata: RFC 8414's
/// `oauth-authorization-server` and OpenID's `openid-configuration`, in the
/// order the MCP specification gives; the document must name `issuer`
/// exactly (RFC 8414 § 3.3).
async fn discover(client: &reqwest::Client, issuer: &str) -> Result<String, String> {
    let url: url::Url = issuer
        .parse()
        .map_err(|err| format!("issuer {issuer}: {err}"))?;
    let path = url.path().trim_end_matches('/');
    let origin = url.origin().ascii_serialization();
    let candidates = if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    };
    let mut errors = Vec::new();
    for candidate in candidates {
        match get_json(client, &candidate).await {
            Ok(metadata) => {
                let named = metadata.get("issuer").and_then(Value::as_str);
                if named != Some(issuer) {
                    errors.push(format!(
                        "{candidate} names issuer {named:?}, not {issuer:?}"
                    ));
                    continue;
                }
                let Some(jwks_uri) = metadata.get("jwks_uri").and_then(Value::as_str) else {
                    errors.push(format!("{candidate} has no jwks_uri"));
                    continue;
                };
                super::oauth::check_endpoint(jwks_uri)
                    .map_err(|err| format!("{candidate}: {err}"))?;
                return Ok(jwks_uri.to_owned());
            }
            Err(error) => errors.push(error),
        }
    }
    Err(format!(
        "no metadata found for issuer {issuer}: {}",
        errors.join("; ")
    ))
}

/// GETs `url` as JSON: a 200 answer of at most [`MAX_DOCUMENT`] bytes within
/// the client's timeout; redirects are not followed.
pub(super) async fn get_json(client: &reqwest::Client, url: &str) -> Result<Value, String> {
    let mut response = client
        .get(url)
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|err| format!("{url}: {}", describe(&err)))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("{url}: answered {status}"));
    }
    if response
        .content_length()
        .is_some_and(|len| len > MAX_DOCUMENT as u64)
    {
        return Err(format!("{url}: more than {MAX_DOCUMENT} bytes"));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|err| format!("{url}: {}", describe(&err)))?
    {
        if body.len() + chunk.len() > MAX_DOCUMENT {
            return Err(format!("{url}: more than {MAX_DOCUMENT} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).map_err(|err| format!("{url}: not JSON: {err}"))
}

/// A request error with its causes (reqwest's own message hides them).
fn describe(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        return "timed out".to_owned();
    }
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
