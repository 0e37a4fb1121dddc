//! Secrets the guest never sees: a header the host adds to a plugin's HTTP
//! requests to a granted host (and path prefix), with a value from the host's
//! environment, a file, or a per-caller table; and the leak check that keeps
//! every such value out of what the guest sends, receives and returns.
//!
//! The guest sends its request without the secret. The host refuses a
//! request whose URI or headers carry a configured secret's value, replaces
//! such a value in request and response bodies, response headers and tool
//! output with `*`s (same length), and warns. It never follows redirects, so a
//! redirect is a new request that gets a secret only if its own destination
//! is one the secret is for.
//!
//! Config: `[[network.secrets]]` in a plugin's grants (`host`, `path_prefix`,
//! `header`, `format`, and one of `from_env`, `from_file`, `per_caller`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use http::{HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::Value;

use super::http::HostPattern;
use super::{CallTag, ErrorAt, Grants, NetworkConfig, Secret};
use crate::error::ConfigError;
use crate::tool::{Caller, Part};

mod leaks;

pub(crate) use self::leaks::{LeakCheck, Masked, mask_headers};

/// The shortest secret value accepted: a shorter one is guessable, and its
/// leak check would redact ordinary text.
pub const MIN_SECRET_LEN: usize = 8;

/// What stands for the secret in a header's [`format`](HeaderSecretConfig::format).
const PLACEHOLDER: &str = "{secret}";

/// A header secret as written: `[[network.secrets]]`.
///
/// ```toml
/// [[network.secrets]]
/// host = "api.github.com"            # one of network.http, exactly as written there
/// path_prefix = "/repos/"            # default "/"
/// header = "Authorization"           # the default
/// format = "Bearer {secret}"         # the default
/// from_env = "GITHUB_TOKEN"          # or from_file = "…", or per_caller = {…}
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct HeaderSecretConfig {
    /// The granted destination the secret is for: one of `network.http`.
    pub host: String,
    /// Only requests whose path starts with this (default `/`).
    pub path_prefix: Option<String>,
    /// The header to set (default `Authorization`).
    pub header: Option<String>,
    /// The header's value, with `{secret}` once (default `Bearer {secret}`).
    pub format: Option<String>,
    /// The host environment variable holding the secret (missing: an error).
    pub from_env: Option<String>,
    /// A file holding the secret (trailing newline removed; relative to the policy file).
    pub from_file: Option<PathBuf>,
    /// A secret per caller, from a file.
    pub per_caller: Option<PerCallerConfig>,
}

/// Secrets per caller as written: a TOML file mapping a caller's claim value
/// (its subject by default) to its secret.
///
/// ```toml
/// # tokens.toml
/// ana = "ghp_…"
/// rita = "ghp_…"
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PerCallerConfig {
    /// The file (relative to the policy file).
    pub file: PathBuf,
    /// The caller's claim whose value picks the secret (default `sub`: the subject).
    pub claim: Option<String>,
}

/// Where a header secret's value comes from (values are never shown).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SecretSource {
    /// One value for every call: from the host's environment, a file or code.
    Fixed(Secret),
    /// A value per caller, picked by a claim's value (`sub`: the subject). A
    /// call without a caller, or of a caller without one, has its request refused.
    PerCaller {
        /// The claim whose value picks the secret.
        claim: String,
        /// The secrets, by claim value.
        secrets: CallerSecrets,
    },
}

/// Secrets by caller: `Debug` shows how many, never a value.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct CallerSecrets(BTreeMap<String, Secret>);

impl CallerSecrets {
    /// Secrets by claim value.
    pub fn new(secrets: impl IntoIterator<Item = (String, Secret)>) -> Self {
        Self(secrets.into_iter().collect())
    }
}

impl fmt::Debug for CallerSecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} caller(s)", self.0.len())
    }
}

/// A header the host adds to a plugin's HTTP requests to `host` (under
/// `path_prefix`), replacing any the guest set, with a secret the guest never
/// sees.
///
/// # Examples
/// ```
/// use toolhost::policy::{Grants, HeaderSecret, Secret, SecretSource};
/// let api: toolhost::policy::HostPattern = "api.example.com".parse().unwrap();
/// let mut grants = Grants::default();
/// grants.http(api.clone()).header_secret(
///     HeaderSecret::new(api, SecretSource::Fixed(Secret::new("s3cr3t-t0ken")))
///         .with_path_prefix("/v1/")
///         .unwrap(),
/// );
/// assert!(!format!("{grants:?}").contains("s3cr3t"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderSecret {
    host: HostPattern,
    path_prefix: String,
    header: HeaderName,
    /// The header value around the secret.
    before: String,
    after: String,
    source: SecretSource,
}

impl HeaderSecret {
    /// `Authorization: Bearer <secret>` on every request to `host`.
    pub fn new(host: HostPattern, source: SecretSource) -> Self {
        Self {
            host,
            path_prefix: "/".to_owned(),
            header: http::header::AUTHORIZATION,
            before: "Bearer ".to_owned(),
            after: String::new(),
            source,
        }
    }

    /// Only for request paths starting with `prefix`.
    ///
    /// # Errors
    /// `prefix` does not start with `/`.
    pub fn with_path_prefix(mut self, prefix: &str) -> Result<Self, String> {
        if !prefix.starts_with('/') {
            return Err(format!("`{prefix}` must start with `/`"));
        }
        prefix.clone_into(&mut self.path_prefix);
        Ok(self)
    }

    /// Sets header `name` to `format`, where `{secret}` stands for the secret.
    ///
    /// # Errors
    /// `name` is not a header name, or `format` has not exactly one `{secret}`
    /// or is not a valid header value.
    pub fn with_header(mut self, name: &str, format: &str) -> Result<Self, String> {
        self.header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("`{name}` is not an HTTP header name"))?;
        let (before, after) = match format.split_once(PLACEHOLDER) {
            Some((before, after)) if !after.contains(PLACEHOLDER) => (before, after),
            _ => return Err(format!("`{format}` must hold `{PLACEHOLDER}` exactly once")),
        };
        HeaderValue::from_str(&format!("{before}{after}"))
            .map_err(|_| format!("`{format}` is not a valid header value"))?;
        before.clone_into(&mut self.before);
        after.clone_into(&mut self.after);
        Ok(self)
    }

    /// The destination it is for.
    pub fn host(&self) -> &HostPattern {
        &self.host
    }

    /// The header it sets.
    pub fn header(&self) -> &HeaderName {
        &self.header
    }

    /// Whether a request to `uri` gets this secret: its destination is
    /// `host`'s, and its path starts with the prefix and has no dot segment
    /// (`.`, `..`, also percent-encoded), which could climb out of it.
    fn applies_to(&self, uri: &http::Uri) -> bool {
        let (Some(scheme), Some(host)) = (uri.scheme_str(), uri.host()) else {
            return false;
        };
        let port = uri
            .port_u16()
            .unwrap_or(if scheme.eq_ignore_ascii_case("http") {
                80
            } else {
                443
            });
        let path = uri.path();
        self.host.allows(scheme, host, port)
            && path.starts_with(&self.path_prefix)
            && !path.split('/').any(|segment| {
                let decoded = percent_encoding::percent_decode_str(segment).decode_utf8_lossy();
                decoded == "." || decoded == ".."
            })
    }

    /// The secret for this call's caller, if there is one.
    fn value_for(&self, caller: Option<&Caller>) -> Result<&Secret, String> {
        match &self.source {
            SecretSource::Fixed(secret) => Ok(secret),
            SecretSource::PerCaller { claim, secrets } => {
                let caller = caller.ok_or("the call has no authenticated caller")?;
                let key = claim_value(caller, claim)
                    .ok_or_else(|| format!("the caller has no `{claim}` claim"))?;
                secrets
                    .0
                    .get(&key)
                    .ok_or_else(|| format!("no secret for caller `{key}` (`{claim}`)"))
            }
        }
    }

    /// Every value this secret may take.
    fn values(&self) -> Vec<&str> {
        match &self.source {
            SecretSource::Fixed(secret) => vec![secret.expose()],
            SecretSource::PerCaller { secrets, .. } => {
                secrets.0.values().map(Secret::expose).collect()
            }
        }
    }
}

/// A caller's claim as the key of a per-caller table: `sub` is its subject, a
/// string claim its text, a number or boolean its JSON text.
fn claim_value(caller: &Caller, claim: &str) -> Option<String> {
    if claim == "sub" {
        return Some(caller.subject().to_owned());
    }
    match caller.claims().get(claim)? {
        Value::String(text) => Some(text.clone()),
        value @ (Value::Number(_) | Value::Bool(_)) => Some(value.to_string()),
        _ => None,
    }
}

impl Grants {
    /// Adds a header secret. Its host should also be granted
    /// ([`Grants::http`]): a secret adds nothing to what may be reached.
    pub fn header_secret(&mut self, secret: HeaderSecret) -> &mut Self {
        self.secrets.push(secret);
        self.leaks = LeakCheck::of(&self.secrets);
        self
    }

    /// The header secrets (values are never shown).
    pub fn header_secrets(&self) -> &[HeaderSecret] {
        &self.secrets
    }

    /// The leak check of its secrets (each call's tag holds a clone).
    pub(crate) fn leak_check(&self) -> &LeakCheck {
        &self.leaks
    }

    /// Masks the values of its secrets in a text (a tool's error message);
    /// whether there was one.
    pub(crate) fn mask_text(&self, text: &mut String) -> bool {
        !self.leaks.is_empty() && self.leaks.mask_str(text)
    }

    /// Masks the values of its secrets in a tool's result; whether there was one.
    pub(crate) fn mask_value(&self, value: &mut Value) -> bool {
        !self.leaks.is_empty() && self.leaks.mask_json(value)
    }

    /// Masks the values of its secrets in a part of a tool's output; whether
    /// there was one.
    pub(crate) fn mask_part(&self, part: &mut Part) -> bool {
        if self.leaks.is_empty() {
            return false;
        }
        match part {
            Part::Text(text) => self.leaks.mask_str(text),
            Part::Json(value) => self.leaks.mask_json(value),
            Part::Blob { name, data, .. } => {
                let named = name.as_mut().is_some_and(|name| self.leaks.mask_str(name));
                self.leaks.mask(data) | named
            }
        }
    }

    /// The claims per-caller secrets pick callers by (besides `sub`).
    pub(crate) fn secret_claims(&self) -> impl Iterator<Item = &str> {
        self.secrets
            .iter()
            .filter_map(|secret| match &secret.source {
                SecretSource::PerCaller { claim, .. } if claim != "sub" => Some(claim.as_str()),
                _ => None,
            })
    }
}

/// Checks `network.secrets` (values are read later, by [`resolve`]).
pub(super) fn check(network: &NetworkConfig, at: &ErrorAt<'_>) -> Result<(), ConfigError> {
    for (i, secret) in network.secrets.iter().enumerate() {
        let key = |field: &str| format!("network.secrets[{i}]{field}");
        if !network.http.contains(&secret.host) {
            return Err(at.key(
                key(".host"),
                format!(
                    "`{}` must be one of `network.http` ({}), exactly as written there",
                    secret.host,
                    network.http.join(", ")
                ),
            ));
        }
        let sources = [
            secret.from_env.is_some(),
            secret.from_file.is_some(),
            secret.per_caller.is_some(),
        ];
        if sources.iter().filter(|set| **set).count() != 1 {
            return Err(at.key(
                key(""),
                "needs exactly one of `from_env`, `from_file` and `per_caller`".to_owned(),
            ));
        }
        let host: HostPattern = secret
            .host
            .parse()
            .map_err(|reason| at.key(key(".host"), reason))?;
        shape(secret, &host).map_err(|(field, reason)| at.key(key(field), reason))?;
        if let Some(per_caller) = &secret.per_caller
            && per_caller
                .claim
                .as_deref()
                .is_some_and(|c| c.trim().is_empty())
        {
            return Err(at.key(key(".per_caller.claim"), "is empty".to_owned()));
        }
    }
    Ok(())
}

/// The secret's path prefix and header on `host` (its source still to come).
fn shape(
    secret: &HeaderSecretConfig,
    host: &HostPattern,
) -> Result<HeaderSecret, (&'static str, String)> {
    let mut out = HeaderSecret::new(host.clone(), SecretSource::Fixed(Secret::new("")));
    if let Some(prefix) = &secret.path_prefix {
        out = out
            .with_path_prefix(prefix)
            .map_err(|reason| (".path_prefix", reason))?;
    }
    let header = secret.header.as_deref().unwrap_or("Authorization");
    let format = secret.format.as_deref().unwrap_or("Bearer {secret}");
    out.with_header(header, format).map_err(|reason| {
        let field = if reason.starts_with(&format!("`{header}`")) {
            ".header"
        } else {
            ".format"
        };
        (field, reason)
    })
}

/// Reads `network.secrets`' values into `grants` (checked before).
pub(super) fn resolve(
    network: &NetworkConfig,
    base: &Path,
    at: &ErrorAt<'_>,
    grants: &mut Grants,
) -> Result<(), ConfigError> {
    for (i, config) in network.secrets.iter().enumerate() {
        let key = |field: &str| format!("network.secrets[{i}]{field}");
        let host: HostPattern = config
            .host
            .parse()
            .map_err(|reason| at.key(key(".host"), reason))?;
        let mut secret =
            shape(config, &host).map_err(|(field, reason)| at.key(key(field), reason))?;
        secret.source = if let Some(name) = &config.from_env {
            let value = std::env::var(name).map_err(|_| {
                at.key(
                    key(".from_env"),
                    format!("the host has no environment variable `{name}`"),
                )
            })?;
            SecretSource::Fixed(long_enough(Secret::new(value), || {
                at.key(key(".from_env"), too_short(name))
            })?)
        } else if let Some(file) = &config.from_file {
            let path = base.join(file);
            let value = read_secret(&path).map_err(|reason| at.key(key(".from_file"), reason))?;
            SecretSource::Fixed(long_enough(value, || {
                at.key(key(".from_file"), too_short(&path.display().to_string()))
            })?)
        } else if let Some(per_caller) = &config.per_caller {
            let path = base.join(&per_caller.file);
            let secrets =
                read_table(&path).map_err(|reason| at.key(key(".per_caller.file"), reason))?;
            SecretSource::PerCaller {
                claim: per_caller.claim.clone().unwrap_or_else(|| "sub".to_owned()),
                secrets,
            }
        } else {
            return Err(at.key(
                key(""),
                "needs exactly one of `from_env`, `from_file` and `per_caller`".to_owned(),
            ));
        };
        grants.header_secret(secret);
    }
    Ok(())
}

fn too_short(source: &str) -> String {
    format!("the secret in `{source}` is shorter than {MIN_SECRET_LEN} bytes")
}

fn long_enough(secret: Secret, error: impl FnOnce() -> ConfigError) -> Result<Secret, ConfigError> {
    if secret.expose().len() < MIN_SECRET_LEN {
        return Err(error());
    }
    Ok(secret)
}

/// A secret file's contents, without a trailing newline.
fn read_secret(path: &Path) -> Result<Secret, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    Ok(Secret::new(
        text.strip_suffix('\n')
            .map(|t| t.strip_suffix('\r').unwrap_or(t))
            .unwrap_or(&text),
    ))
}

/// A per-caller file: a TOML table of claim value → secret.
fn read_table(path: &Path) -> Result<CallerSecrets, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    // Never echo the file's text: a parse error shows only where it is.
    let table: BTreeMap<String, String> = toml::from_str(&text).map_err(|e| {
        let at = e
            .span()
            .map(|span| format!(" at byte {}", span.start))
            .unwrap_or_default();
        format!(
            "`{}` must be a table of caller = \"secret\" strings{at}",
            path.display()
        )
    })?;
    if let Some((caller, _)) = table.iter().find(|(_, v)| v.len() < MIN_SECRET_LEN) {
        return Err(format!(
            "`{}`: the secret of `{caller}` is shorter than {MIN_SECRET_LEN} bytes",
            path.display()
        ));
    }
    Ok(CallerSecrets::new(
        table.into_iter().map(|(k, v)| (k, Secret::new(v))),
    ))
}

/// Why a request was refused before it left.
pub(crate) enum Refusal {
    /// Its URI or headers carry a secret's value.
    Leak,
    /// A secret applies, but has no value for this call's caller.
    NoValue(String),
}

/// Checks an outgoing request against the leak check and adds the secrets
/// that apply to it.
pub(crate) fn apply<B>(
    grants: &Grants,
    call: &CallTag,
    request: &mut http::Request<B>,
) -> Result<(), Refusal> {
    let leaks = &grants.leaks;
    if leaks.is_empty() {
        return Ok(());
    }
    let uri = request.uri().to_string();
    if leaks.found_in(uri.as_bytes())
        || request
            .headers()
            .values()
            .any(|value| leaks.found_in(value.as_bytes()))
    {
        return Err(Refusal::Leak);
    }
    for secret in &grants.secrets {
        if !secret.applies_to(request.uri()) {
            continue;
        }
        let value = secret
            .value_for(call.caller.as_ref())
            .map_err(Refusal::NoValue)?;
        let mut header = HeaderValue::from_str(&format!(
            "{}{}{}",
            secret.before,
            value.expose(),
            secret.after
        ))
        .map_err(|_| Refusal::NoValue("the secret is not a valid header value".into()))?;
        header.set_sensitive(true);
        request.headers_mut().insert(secret.header.clone(), header);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaks(values: &[&str]) -> LeakCheck {
        let host: HostPattern = "api.example.com".parse().unwrap();
        let secrets: Vec<HeaderSecret> = values
            .iter()
            .map(|v| HeaderSecret::new(host.clone(), SecretSource::Fixed(Secret::new(*v))))
            .collect();
        LeakCheck::of(&secrets)
    }

    #[test]
    fn masking_keeps_the_length_and_finds_every_value() {
        let check = leaks(&["s3cr3t-one", "s3cr3t-one-longer", "other-secret"]);
        let mut text = "a s3cr3t-one-longer b other-secret c s3cr3t-one".to_owned();
        assert!(check.mask_str(&mut text));
        assert_eq!(text, "a ***************** b ************ c **********");
        let mut json = serde_json::json!({"k s3cr3t-one": ["x other-secret"], "n": 1});
        assert!(check.mask_json(&mut json));
        assert!(!json.to_string().contains("secret"), "{json}");
        assert!(!check.mask_str(&mut "nothing here".to_owned()));
    }

    #[test]
    fn secrets_apply_to_their_host_and_path_only() {
        let host: HostPattern = "http://127.0.0.1:8080".parse().unwrap();
        let secret = HeaderSecret::new(host, SecretSource::Fixed(Secret::new("s3cr3t-one")))
            .with_path_prefix("/api/")
            .unwrap();
        let applies = |uri: &str| secret.applies_to(&uri.parse().unwrap());
        assert!(applies("http://127.0.0.1:8080/api/x"));
        assert!(!applies("http://127.0.0.1:8081/api/x"));
        assert!(!applies("http://127.0.0.1:8080/other"));
        assert!(!applies("http://127.0.0.1:8080/api/../other"));
        assert!(!applies("http://127.0.0.1:8080/api/%2E%2e/other"));
        assert!(!applies("https://127.0.0.1:8080/api/x"));
        assert!(
            HeaderSecret::new(
                "a.com".parse().unwrap(),
                SecretSource::Fixed(Secret::new("x"))
            )
            .with_header("X-Key", "{secret} and {secret}")
            .is_err()
        );
    }

    #[test]
    fn per_caller_secrets_pick_by_claim() {
        let secret = HeaderSecret::new(
            "a.com".parse().unwrap(),
            SecretSource::PerCaller {
                claim: "email".into(),
                secrets: CallerSecrets::new([("ana@x.com".to_owned(), Secret::new("ana-token-1"))]),
            },
        );
        let ana = Caller::new("iss", "ana").with_claim("email", "ana@x.com");
        assert_eq!(
            secret.value_for(Some(&ana)).unwrap().expose(),
            "ana-token-1"
        );
        let rita = Caller::new("iss", "rita").with_claim("email", "rita@x.com");
        assert!(secret.value_for(Some(&rita)).is_err());
        assert!(secret.value_for(None).is_err());
        assert!(!format!("{secret:?}").contains("ana-token"));
    }
}
