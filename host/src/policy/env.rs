//! Environment: named variables only, with values from the host's
//! environment, the policy, or a file; values are never printed.
//!
//! Config keys: `env = [...]` (host variables passed through) and
//! `[env_vars]` (`value`, `from_env` or `from_file` per variable).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use wasmtime_wasi::WasiCtxBuilder;

use super::kind::Kind;
use super::{CallTag, Capability, ErrorAt, Grants, GrantsConfig};
use crate::error::ConfigError;

/// A value that is never printed: `Debug` shows `"***"` and there is no `Display`.
///
/// Environment values granted to a plugin are kept as secrets, whatever their
/// source, so `list`, `inspect`, logs and errors never show them.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
pub struct Secret(Arc<str>);

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self(value.into())
    }
}

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into().into())
    }

    /// The value itself, for handing to the guest.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"***\"")
    }
}

/// Where a granted environment variable's value comes from (values are never shown).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EnvSource {
    /// The host's environment variable of this name.
    Host(String),
    /// Written in the policy.
    Policy,
    /// Read from this file when the policy was loaded.
    File(PathBuf),
}

/// A granted environment variable.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EnvGrant {
    /// The name the guest sees.
    pub name: String,
    /// Where the value came from.
    pub source: EnvSource,
    value: Secret,
}

/// Where an environment variable's value comes from: exactly one of the three.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct EnvVarConfig {
    /// The value itself.
    pub value: Option<Secret>,
    /// The host environment variable to take it from.
    pub from_env: Option<String>,
    /// A file to read it from (trailing newline removed; relative to the policy file).
    pub from_file: Option<PathBuf>,
}

impl Grants {
    /// Grants an environment variable with a value given here.
    pub fn env(&mut self, name: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.push_env(name.into(), EnvSource::Policy, Secret::new(value));
        self
    }

    /// Grants the host's environment variable `name` under the same name; does
    /// nothing if the host does not have it.
    pub fn env_from_host(&mut self, name: impl Into<String>) -> &mut Self {
        let name = name.into();
        if let Ok(value) = std::env::var(&name) {
            self.push_env(name.clone(), EnvSource::Host(name), Secret::new(value));
        }
        self
    }

    /// Grants an environment variable whose value is a secret (never printed).
    pub fn secret(&mut self, name: impl Into<String>, value: Secret) -> &mut Self {
        self.push_env(name.into(), EnvSource::Policy, value);
        self
    }

    fn push_env(&mut self, name: String, source: EnvSource, value: Secret) {
        self.env.retain(|e| e.name != name);
        self.env.push(EnvGrant {
            name,
            source,
            value,
        });
    }

    /// The granted environment variables (values are never shown).
    pub fn env_vars(&self) -> &[EnvGrant] {
        &self.env
    }
}

fn valid_env_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['=', '\0'])
}

/// The environment: `env` and `[env_vars]`, exactly these variables per call.
pub(super) struct Env;

impl Kind for Env {
    fn capabilities(&self) -> &'static [Capability] {
        &[Capability::Environment]
    }

    fn of_import(&self, interface: &str) -> Option<Capability> {
        (interface == "wasi:cli/environment").then_some(Capability::Environment)
    }

    fn covers(&self, grants: &Grants, _capability: Capability) -> bool {
        !grants.env.is_empty()
    }

    fn grant_for(&self, _capability: Capability) -> &'static str {
        "`env` or `[env_vars]` in its grants"
    }

    fn check(&self, config: &GrantsConfig, at: &ErrorAt<'_>) -> Result<(), ConfigError> {
        check(&config.env, &config.env_vars, at)
    }

    fn resolve(
        &self,
        config: &GrantsConfig,
        base: &Path,
        at: &ErrorAt<'_>,
        grants: &mut Grants,
    ) -> Result<(), ConfigError> {
        resolve(&config.env, &config.env_vars, base, at, grants)
    }

    /// The granted variables' names (never their values).
    fn summary(&self, grants: &Grants, out: &mut Vec<String>) {
        if !grants.env.is_empty() {
            let names: Vec<&str> = grants.env.iter().map(|e| e.name.as_str()).collect();
            out.push(format!("env {}", names.join(", ")));
        }
    }

    /// Sets exactly the granted variables.
    fn add_to_wasi(
        &self,
        grants: &Grants,
        builder: &mut WasiCtxBuilder,
        _call: &Arc<CallTag>,
    ) -> Result<(), String> {
        for env in &grants.env {
            builder.env(&env.name, env.value.expose());
        }
        Ok(())
    }
}

/// Checks `env` and `[env_vars]` without touching the file system.
fn check(
    env: &[String],
    env_vars: &BTreeMap<String, EnvVarConfig>,
    at: &ErrorAt<'_>,
) -> Result<(), ConfigError> {
    for (i, name) in env.iter().enumerate() {
        if !valid_env_name(name) {
            return Err(at.key(
                format!("env[{i}]"),
                format!("`{name}` is not a variable name"),
            ));
        }
    }
    for (name, source) in env_vars {
        let key = format!("env_vars.{name}");
        if !valid_env_name(name) {
            return Err(at.key(key, "not a variable name".into()));
        }
        let given = [
            source.value.is_some(),
            source.from_env.is_some(),
            source.from_file.is_some(),
        ];
        if given.iter().filter(|g| **g).count() != 1 {
            return Err(at.key(
                key,
                "give exactly one of `value`, `from_env` or `from_file`".into(),
            ));
        }
    }
    Ok(())
}

/// Grants `env` and `[env_vars]`: reads the host's environment and secret
/// files (relative to `base`, the policy file's directory). A missing host
/// variable is not an error: it is logged and left unset.
fn resolve(
    env: &[String],
    env_vars: &BTreeMap<String, EnvVarConfig>,
    base: &Path,
    at: &ErrorAt<'_>,
    grants: &mut Grants,
) -> Result<(), ConfigError> {
    let path = at.path;
    let prefix = at.prefix;
    for name in env {
        match std::env::var(name) {
            Ok(value) => grants.push_env(
                name.clone(),
                EnvSource::Host(name.clone()),
                Secret::new(value),
            ),
            Err(_) => tracing::debug!(
                policy = %path.display(), variable = %name,
                "granted host variable is not set; the plugin will not see it"
            ),
        }
    }
    for (name, source) in env_vars {
        let key = format!("env_vars.{name}");
        if let Some(value) = &source.value {
            grants.push_env(name.clone(), EnvSource::Policy, value.clone());
        } else if let Some(var) = &source.from_env {
            match std::env::var(var) {
                Ok(value) => grants.push_env(
                    name.clone(),
                    EnvSource::Host(var.clone()),
                    Secret::new(value),
                ),
                Err(_) => tracing::warn!(
                    policy = %path.display(), key = %format!("{prefix}{key}"), from_env = %var,
                    "the host has no such environment variable; the plugin will not see `{name}`"
                ),
            }
        } else if let Some(file) = &source.from_file {
            let file = base.join(file);
            let text = std::fs::read_to_string(&file).map_err(|e| {
                at.key(
                    format!("{key}.from_file"),
                    format!("cannot read {}: {e}", file.display()),
                )
            })?;
            let value = text.strip_suffix('\n').unwrap_or(&text);
            let value = value.strip_suffix('\r').unwrap_or(value);
            grants.push_env(
                name.clone(),
                EnvSource::File(file.clone()),
                Secret::new(value),
            );
        }
    }
    Ok(())
}
