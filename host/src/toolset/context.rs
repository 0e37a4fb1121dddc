//! What a call carries besides its arguments: IDs, who is calling, and what a
//! human decided about calls that needed confirmation.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::Value;

use super::observe::CallObserver;
use crate::tool::{Asker, LogSink, next_call_id};

/// Who is calling: used by filters and confirmation providers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    /// The user, if known.
    pub user: Option<String>,
    /// The user's roles (for allowlists by role). A front end that
    /// authenticates its caller adds the [`Principal`]'s roles here.
    pub roles: BTreeSet<String>,
    /// The session or conversation.
    pub session: Option<String>,
    /// Anything else an embedder wants to filter on.
    pub attributes: BTreeMap<String, String>,
    /// Who the front end authenticated, when it authenticates its callers
    /// (the MCP server's HTTP transport); `None` for a library call that
    /// names none.
    pub principal: Option<Arc<Principal>>,
}

/// Who a request's credentials say is calling: what an authenticator
/// (the MCP server's [`Authenticator`](crate::mcp::Authenticator)) makes of
/// them. What a caller owns (an MCP task) belongs to its
/// [`Principal::key`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Principal {
    /// Who vouches for the subject: an OAuth issuer, or `toolhost:…` for the
    /// host's own schemes. Empty for the anonymous caller.
    pub issuer: String,
    /// The caller, unique under its issuer.
    pub subject: String,
    /// The scopes the credentials grant.
    pub scopes: BTreeSet<String>,
    /// The caller's roles (filters and confirmation rules by role see them
    /// as [`Identity::roles`]).
    pub roles: BTreeSet<String>,
    /// Anything else the credentials said (a token's claims).
    pub claims: serde_json::Map<String, Value>,
}

impl Principal {
    /// The subject the anonymous principal has.
    pub const ANONYMOUS: &str = "anonymous";

    /// A caller `subject` vouched for by `issuer`, with no scopes, roles or claims.
    pub fn new(issuer: impl Into<String>, subject: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            subject: subject.into(),
            ..Self::default()
        }
    }

    /// A caller nobody vouches for: no credentials (stdio, whose one client
    /// is whoever started the process, or HTTP without any).
    pub fn anonymous() -> Self {
        Self::new("", Self::ANONYMOUS)
    }

    /// Whether nobody vouches for this caller.
    pub fn is_anonymous(&self) -> bool {
        self.issuer.is_empty() && self.subject == Self::ANONYMOUS
    }

    /// Adds roles.
    pub fn with_roles(mut self, roles: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.roles.extend(roles.into_iter().map(Into::into));
        self
    }

    /// Adds scopes.
    pub fn with_scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// What identifies this caller wherever it is stored (the owner of an
    /// MCP task): issuer and subject, unambiguously joined; `anonymous` for
    /// the anonymous caller.
    pub fn key(&self) -> String {
        if self.is_anonymous() {
            return Self::ANONYMOUS.to_owned();
        }
        // JSON quoting keeps "a b" + "c" apart from "a" + "b c".
        serde_json::to_string(&[&self.issuer, &self.subject])
            .unwrap_or_else(|_| format!("{}\n{}", self.issuer, self.subject))
    }
}

/// A human's answer to a confirmation request (ADK's `ToolConfirmation`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Decision {
    /// Run the call, exactly with these arguments (those of the request).
    Approve {
        /// The arguments the human saw and approved.
        arguments: Value,
        /// Anything the UI sends back to the tool (ADK's `payload`).
        payload: Option<Value>,
    },
    /// Do not run the call.
    Reject {
        /// Why, if the human said.
        reason: Option<String>,
    },
}

impl Decision {
    /// Approves a request as it was asked: its arguments, its payload.
    pub fn approve(request: &super::ConfirmationRequest) -> Self {
        Self::Approve {
            arguments: request.arguments.clone(),
            payload: request.payload.clone(),
        }
    }

    /// Rejects the call, saying why.
    pub fn reject(reason: impl Into<String>) -> Self {
        Self::Reject {
            reason: Some(reason.into()),
        }
    }
}

/// The context of one tool call.
///
/// # Examples
/// ```
/// use toolhost::Context;
/// use toolhost::toolset::Identity;
/// let mut who = Identity::default();
/// who.user = Some("ana".into());
/// who.roles.insert("admin".into());
/// let cx = Context::new().with_call_id("call-1").with_invocation_id("turn-1").with_identity(who);
/// assert_eq!(cx.call_id(), "call-1");
/// assert!(cx.identity().roles.contains("admin"));
/// ```
#[derive(Clone)]
pub struct Context {
    call_id: String,
    invocation_id: String,
    identity: Arc<Identity>,
    decisions: Arc<HashMap<String, Decision>>,
    /// `None` for none: a context is made for every call, and an empty
    /// `Arc<[_]>` would still allocate.
    observers: Option<Arc<[Arc<dyn CallObserver>]>>,
    /// Where the call's guest log messages also go (an MCP client that asked).
    log: Option<LogSink>,
    /// Who the call's questions go to (an MCP client that can be asked).
    ask: Option<Asker>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("call_id", &self.call_id)
            .field("invocation_id", &self.invocation_id)
            .field("identity", &self.identity)
            .field("decisions", &self.decisions)
            .field("observers", &self.observers().len())
            .finish()
    }
}

impl Default for Context {
    fn default() -> Self {
        Self::new()
    }
}

impl Context {
    /// A context with a fresh call ID, its own invocation and no identity.
    pub fn new() -> Self {
        let call_id = next_call_id();
        Self {
            invocation_id: call_id.clone(),
            call_id,
            identity: Arc::default(),
            decisions: Arc::default(),
            observers: None,
            log: None,
            ask: None,
        }
    }

    /// Sets the call ID (the model's tool-call ID).
    pub fn with_call_id(mut self, id: impl Into<String>) -> Self {
        self.call_id = id.into();
        self
    }

    /// Sets the invocation ID; calls of one invocation share scratch state.
    pub fn with_invocation_id(mut self, id: impl Into<String>) -> Self {
        self.invocation_id = id.into();
        self
    }

    /// Sets who is calling.
    pub fn with_identity(mut self, identity: Identity) -> Self {
        self.identity = Arc::new(identity);
        self
    }

    /// Adds a human's decision about the call with that ID.
    pub fn with_decision(mut self, call_id: impl Into<String>, decision: Decision) -> Self {
        Arc::make_mut(&mut self.decisions).insert(call_id.into(), decision);
        self
    }

    /// Adds an observer of the calls run in this context (and in contexts
    /// made from it): the call driver tells it how each call ends.
    pub fn with_observer(mut self, observer: Arc<dyn CallObserver>) -> Self {
        let mut observers = self.observers().to_vec();
        observers.push(observer);
        self.observers = Some(observers.into());
        self
    }

    /// Sets the observers at once (a front end that adds the same ones to
    /// every call, without building the list each time).
    pub(crate) fn with_observers(mut self, observers: Arc<[Arc<dyn CallObserver>]>) -> Self {
        self.observers = Some(observers);
        self
    }

    /// Also hands the messages a called guest logs to `sink`.
    pub fn with_log_sink(mut self, sink: LogSink) -> Self {
        self.log = Some(sink);
        self
    }

    /// Where a called guest's log messages also go, if anywhere.
    pub fn log_sink(&self) -> Option<&LogSink> {
        self.log.as_ref()
    }

    /// Lets called tools ask the user questions through `asker`.
    pub fn with_asker(mut self, asker: Asker) -> Self {
        self.ask = Some(asker);
        self
    }

    /// Who a called tool's questions go to, if anyone.
    pub fn asker(&self) -> Option<&Asker> {
        self.ask.as_ref()
    }

    /// The observers of calls in this context, in the order added.
    pub fn observers(&self) -> &[Arc<dyn CallObserver>] {
        self.observers.as_deref().unwrap_or_default()
    }

    /// The same invocation, identity, decisions and observers, for another call.
    pub fn for_call(&self, call_id: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            ..self.clone()
        }
    }

    /// The call ID.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The invocation ID.
    pub fn invocation_id(&self) -> &str {
        &self.invocation_id
    }

    /// Who is calling.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// The decision about the call with that ID, if a human made one.
    pub fn decision(&self, call_id: &str) -> Option<&Decision> {
        self.decisions.get(call_id)
    }
}
