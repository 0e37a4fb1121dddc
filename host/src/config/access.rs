//! `[[access]]`: per-caller access rules. Each rule says who it is for (all
//! its caller conditions must hold; a rule without any is for everyone) and
//! what they may list and call; a caller gets what any of its rules grant.
//! Without `[[access]]`, every caller may use everything.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::ConfigError;
use crate::toolset::{AccessRule, Predicate};

/// One `[[access]]` rule.
///
/// ```toml
/// [[access]]
/// name = "readers"
/// scopes = ["tools:read"]        # who: callers granted every one of these scopes
/// allow = ["*"]                  # what: tools, resources, prompts (globs)
/// read_only = true               # and only tools that say they change nothing
///
/// [[access]]
/// name = "fs-writers"
/// roles = ["fs-writers"]         # who: callers with any of these roles
/// allow = ["fs.*"]
/// confirm_destructive = true     # their destructive calls need a human's yes
/// ```
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct AccessConfig {
    /// The rule's name (in logs and docs).
    pub name: String,
    /// Callers granted every one of these scopes.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Callers with at least one of these roles.
    #[serde(default)]
    pub roles: Vec<String>,
    /// Callers with one of these subjects.
    #[serde(default)]
    pub subjects: Vec<String>,
    /// Callers vouched for by one of these issuers.
    #[serde(default)]
    pub issuers: Vec<String>,
    /// Callers whose claims have these values (a list claim: contains it).
    #[serde(default)]
    pub claims: BTreeMap<String, toml::Value>,
    /// What they may list and call: globs over names, as `[filter] allow`.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Of that, what they may not (wins over `allow`).
    #[serde(default)]
    pub deny: Vec<String>,
    /// Only tools that say they change nothing (`readOnlyHint`).
    #[serde(default)]
    pub read_only: bool,
    /// Their calls of these tools (globs) need a human's approval.
    #[serde(default)]
    pub confirm: Vec<String>,
    /// Their calls of destructive tools need a human's approval.
    #[serde(default)]
    pub confirm_destructive: bool,
}

impl AccessConfig {
    /// Who this rule is for.
    fn who(&self) -> Predicate {
        let mut tests = Vec::new();
        tests.extend(self.scopes.iter().cloned().map(Predicate::scope));
        if !self.roles.is_empty() {
            tests.push(Predicate::any_role(self.roles.clone()));
        }
        if !self.subjects.is_empty() {
            tests.push(Predicate::subject(self.subjects.clone()));
        }
        if !self.issuers.is_empty() {
            tests.push(Predicate::issuer(self.issuers.clone()));
        }
        for (name, value) in &self.claims {
            let value = serde_json::to_value(value).unwrap_or_default();
            tests.push(Predicate::claim(name.clone(), value));
        }
        Predicate::all(tests)
    }

    /// The rule: who it is for, and what it grants them.
    pub(super) fn rule(&self) -> AccessRule {
        let mut what = vec![self.who(), Predicate::glob(self.allow.clone())];
        if !self.deny.is_empty() {
            what.push(!Predicate::glob(self.deny.clone()));
        }
        if self.read_only {
            what.push(Predicate::read_only());
        }
        AccessRule::new(self.name.clone(), Predicate::all(what))
    }

    /// The calls this rule's callers must have approved, if any.
    pub(super) fn confirmation(&self) -> Option<Predicate> {
        let mut needs = Vec::new();
        if !self.confirm.is_empty() {
            needs.push(Predicate::glob(self.confirm.clone()));
        }
        if self.confirm_destructive {
            needs.push(Predicate::destructive());
        }
        (!needs.is_empty()).then(|| self.who().and(Predicate::any(needs)))
    }

    pub(super) fn check(
        &self,
        index: usize,
        error: &impl Fn(String, &str) -> ConfigError,
    ) -> Result<(), ConfigError> {
        let key = format!("access[{index}]");
        if self.name.trim().is_empty() {
            return Err(error(format!("{key}.name"), "name the rule"));
        }
        if self.allow.is_empty() {
            return Err(error(
                format!("{key}.allow"),
                "say what the rule grants (`allow = [\"*\"]` for everything)",
            ));
        }
        if self
            .allow
            .iter()
            .chain(&self.deny)
            .chain(&self.confirm)
            .chain(&self.scopes)
            .chain(&self.roles)
            .any(|entry| entry.trim().is_empty())
        {
            return Err(error(key, "entries must not be empty"));
        }
        Ok(())
    }
}
