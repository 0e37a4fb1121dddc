//! [`Caller`]: who calls a tool, as the tool itself may see it.

use serde_json::{Map, Value};

/// Who calls a tool, as the host tells the tool (contract `@0.3.0` on): the
/// caller's issuer, subject, scopes and claims, never its credentials. A
/// plugin sees only the claims its `caller_claims` grant names.
///
/// # Examples
/// ```
/// use toolhost::tool::{Caller, ToolCall};
/// let caller = Caller::new("https://id.example.com", "ana")
///     .with_scopes(["tools:read"])
///     .with_claim("email", "ana@example.com");
/// let call = ToolCall::new("whoami", serde_json::json!({})).with_caller(caller);
/// assert_eq!(call.caller().map(Caller::subject), Some("ana"));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Caller {
    issuer: String,
    subject: String,
    scopes: Vec<String>,
    claims: Map<String, Value>,
}

impl Caller {
    /// A caller `subject` vouched for by `issuer`, with no scopes or claims.
    pub fn new(issuer: impl Into<String>, subject: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            subject: subject.into(),
            ..Self::default()
        }
    }

    /// Adds scopes.
    pub fn with_scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// Adds a claim (replacing one of the same name).
    pub fn with_claim(mut self, name: impl Into<String>, value: impl Into<Value>) -> Self {
        self.claims.insert(name.into(), value.into());
        self
    }

    /// Who vouches for the subject.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The caller, unique under its issuer.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The scopes the caller's credentials grant.
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// The caller's claims (before a plugin's grant picks some).
    pub fn claims(&self) -> &Map<String, Value> {
        &self.claims
    }

    /// The claims named in `granted` that the caller has, as a JSON object text.
    pub(crate) fn granted_claims(&self, granted: &[String]) -> String {
        let picked: Map<String, Value> = granted
            .iter()
            .filter_map(|name| Some((name.clone(), self.claims.get(name)?.clone())))
            .collect();
        // A map of JSON values always serializes.
        serde_json::to_string(&picked).unwrap_or_else(|_| "{}".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_granted_claims_the_caller_has_are_kept() {
        let caller = Caller::new("i", "s")
            .with_claim("email", "a@b.c")
            .with_claim("groups", serde_json::json!(["x"]))
            .with_claim("secret_thing", 1);
        let granted = ["groups".to_owned(), "email".to_owned(), "absent".to_owned()];
        let text = caller.granted_claims(&granted);
        let value: Value = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(
            value,
            serde_json::json!({"email": "a@b.c", "groups": ["x"]})
        );
        assert_eq!(caller.granted_claims(&[]), "{}");
    }
}
