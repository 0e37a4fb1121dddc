//! The confirmation layer (ADK's `WithConfirmation`): a human approves each
//! call of chosen tools before it runs, and the host enforces it.
//!
//! See [`Confirm`] for the flow.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use serde_json::Value;

use super::{BoxFuture, Context, Decision, Layer, Predicate, Started, Tool, Toolset};
use crate::catalog::Item;
pub use crate::error::ConfirmationRequest;
use crate::error::{CallError, StateError};
use crate::state::StateStore;
use crate::tool::{Prepared, ToolSpec};

/// What a UI shows when asking for approval: a hint, and anything else it needs.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ConfirmationHint {
    /// The question for the human. Empty means "Approve this call of `tool`?".
    pub hint: String,
    /// Anything else for the UI (ADK's `payload`).
    pub payload: Option<Value>,
}

impl ConfirmationHint {
    /// A hint without payload.
    pub fn new(hint: impl Into<String>) -> Self {
        Self {
            hint: hint.into(),
            payload: None,
        }
    }

    /// Adds a payload for the UI.
    pub fn with_payload(mut self, payload: Value) -> Self {
        self.payload = Some(payload);
        self
    }
}

type ProviderFn = dyn Fn(&Context, &ToolSpec, &Value) -> Option<ConfirmationHint> + Send + Sync;

/// When a call needs approval. Rules add up: a call needs approval if any rule
/// says so. (ADK lets a provider override the static flag; here a provider can
/// only add requirements, so it cannot weaken a static rule by mistake.)
#[derive(Clone, Default)]
struct Rules {
    every: Option<ConfirmationHint>,
    tools: HashMap<String, ConfirmationHint>,
    /// Tools chosen by a predicate (`[confirm] tools` globs), in order.
    matching: Vec<(Predicate, ConfirmationHint)>,
    provider: Option<Arc<ProviderFn>>,
}

impl Rules {
    /// Whether calls of this tool may need approval at all, in this context.
    fn may_require(&self, cx: &Context, spec: &ToolSpec) -> bool {
        self.every.is_some()
            || self.provider.is_some()
            || self.fixed(spec).is_some()
            || self.matched(cx, spec).is_some()
    }

    /// The first rule by predicate that chooses this tool.
    fn matched(&self, cx: &Context, spec: &ToolSpec) -> Option<&ConfirmationHint> {
        self.matching
            .iter()
            .find_map(|(predicate, hint)| predicate.test(cx, Item::Tool(spec)).then_some(hint))
    }

    /// The static rule for this tool: one for any of its names (listed,
    /// qualified or bare), so a rule holds however the tool is listed or called.
    fn fixed(&self, spec: &ToolSpec) -> Option<&ConfirmationHint> {
        spec.names().find_map(|name| self.tools.get(name))
    }

    /// The hint if this call needs approval. A provider's hint wins over a
    /// static one, since it saw the arguments.
    fn required(
        &self,
        cx: &Context,
        spec: &ToolSpec,
        arguments: &Value,
    ) -> Option<ConfirmationHint> {
        let dynamic = self.provider.as_ref().and_then(|p| p(cx, spec, arguments));
        let fixed = || {
            self.fixed(spec)
                .or_else(|| self.matched(cx, spec))
                .or(self.every.as_ref())
                .cloned()
        };
        let mut hint = dynamic.or_else(fixed)?;
        if hint.hint.is_empty() {
            hint.hint = format!("Approve this call of `{}`?", spec.name);
        }
        Some(hint)
    }
}

/// How many decided call IDs a [`Confirm`] layer remembers by default (in
/// process; see [`Confirm::with_store`] for Redis).
pub const DEFAULT_REMEMBERED_DECISIONS: usize = crate::state::DEFAULT_EMBEDDED_NONCES;

/// A toolset whose chosen tools run only after a human approves the exact call.
///
/// Static ([`Confirm::require`]), set-wide ([`Confirm::require_all`]) or
/// dynamic ([`Confirm::provider`]). Static rules match any of the tool's
/// names ([`ToolSpec::names`]), so they hold whether a tool is listed bare or
/// qualified and whichever name or alias a call uses. Clones share what was decided, so a replay through a clone is refused
/// too. Every tool a rule may apply to (all of them when there is a
/// set-wide rule or a provider, which may ask about any call) is listed with
/// [`ToolSpec::confirm`] set, so a front end can tell before calling.
///
/// A call that needs approval and carries no decision pauses
/// ([`Started::NeedsApproval`], which the call driver hands to its
/// [`Approver`](super::Approver); [`ToolsetExt::invoke`](super::ToolsetExt::invoke)
/// ends with [`CallError::ConfirmationRequired`]) with a
/// [`ConfirmationRequest`]: the call ID, the tool, the exact arguments, a hint
/// and a payload for the UI. The caller resumes by calling again with the
/// **same call ID** and [`Context::with_decision`]:
///
/// - [`Decision::Approve`] runs the call once, and only if the approved
///   arguments equal the call's arguments exactly;
/// - [`Decision::Reject`] ends it with [`CallError::ConfirmationRejected`].
///
/// Refusals by the layer are also [`CallError::ConfirmationRejected`], with a
/// `reason` that says why: the arguments changed since approval (the approval
/// stays unused, so a resume with the approved arguments still runs), or the
/// call ID was already decided (approvals are single-use: the layer remembers
/// the last [`DEFAULT_REMEMBERED_DECISIONS`] call IDs it ran or rejected, 8
/// bytes each; see [`Confirm::remember_decisions`]). Layers given one shared
/// store ([`Confirm::with_store`], Redis) refuse each other's used approvals,
/// so an approval runs once across replicas; if that store cannot be reached
/// or does not answer in time, an approved call does not run and ends with
/// [`CallError::State`] ([`StateError::Unrecorded`]): the approval stays
/// valid (a record that reached the store late is undone), so a retry of the
/// same approved call runs it once.
///
/// The wrapped tool, and so the guest, is never entered before approval. The
/// wrapper is the only path to the inner tool in the layered set, and decisions
/// come from the embedder's [`Context`], never from the model.
///
/// Layer order, inner to outer: plugins → [`Filter`](super::Filter) →
/// `Confirm` → [`Aliases`](super::Aliases) → [`OnUnknown`](super::OnUnknown).
/// Keep every layer that rewrites arguments (aliases, argument hooks) outside
/// `Confirm`, so the human approves exactly what the tool receives.
///
/// # Examples
/// ```
/// use serde_json::json;
/// use toolhost::{CallError, Context, ToolsetExt};
/// use toolhost::toolset::{Confirm, Decision, SinglePlugin};
/// # async fn run(plugin: toolhost::Plugin) -> Result<(), CallError> {
/// let set = Confirm::new(SinglePlugin::new(plugin)).require("delete_order");
/// let args = json!({"id": 7});
/// let cx = Context::new().with_call_id("call-1");
/// let request = match set.invoke(&cx, "delete_order", args.clone()).await {
///     Err(CallError::ConfirmationRequired(request)) => request,
///     other => { other?; return Ok(()) }
/// };
/// // … show request.hint and request.arguments to a human, who approves …
/// let cx = cx.with_decision(
///     request.call_id.clone(),
///     Decision::Approve { arguments: request.arguments.clone(), payload: None },
/// );
/// let output = set.invoke(&cx, "delete_order", args).await?;
/// # let _ = output; Ok(()) }
/// ```
#[derive(Clone)]
pub struct Confirm<T> {
    inner: T,
    rules: Arc<Rules>,
    decided: StateStore,
    marked: Arc<MarkedSpecs>,
}

/// The marked specs ([`ToolSpec::confirm`]) of the tools this layer gates,
/// one per wrapped tool: a lookup (every call makes one) shares it instead of
/// copying the spec, schemas and all.
#[derive(Default)]
struct MarkedSpecs {
    by_tool: Mutex<MarkedMap>,
}

#[derive(Default)]
struct MarkedMap {
    /// By the wrapped tool's address. The `Weak` keeps that allocation (not
    /// the tool) alive, so no other tool can take the address meanwhile.
    specs: HashMap<usize, (Weak<dyn Tool>, Arc<ToolSpec>)>,
    /// The size at which entries of dropped tools (a reload replaced them)
    /// are swept out.
    sweep_at: usize,
}

impl MarkedSpecs {
    /// The spec of `tool`, marked.
    fn of(&self, tool: &Arc<dyn Tool>) -> Arc<ToolSpec> {
        let key = Arc::as_ptr(tool).cast::<()>().addr();
        let mut map = self.by_tool.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, spec)) = map.specs.get(&key) {
            return Arc::clone(spec);
        }
        if map.specs.len() >= map.sweep_at {
            map.specs.retain(|_, (tool, _)| tool.strong_count() > 0);
            map.sweep_at = (map.specs.len() * 2).max(64);
        }
        let mut spec = tool.spec().clone();
        spec.confirm = true;
        let spec = Arc::new(spec);
        map.specs
            .insert(key, (Arc::downgrade(tool), Arc::clone(&spec)));
        spec
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Confirm<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Confirm")
            .field("inner", &self.inner)
            .field("every", &self.rules.every.is_some())
            .field("tools", &self.rules.tools.keys().collect::<Vec<_>>())
            .field("matching", &self.rules.matching.len())
            .field("provider", &self.rules.provider.is_some())
            .finish_non_exhaustive()
    }
}

impl<T: Toolset> Confirm<T> {
    /// Wraps `inner`; no call needs approval until a rule is added.
    pub fn new(inner: T) -> Self {
        Self {
            inner,
            rules: Arc::default(),
            decided: StateStore::embedded_with(DEFAULT_REMEMBERED_DECISIONS),
            marked: Arc::default(),
        }
    }

    /// How many decided call IDs to remember (at least 1; default
    /// [`DEFAULT_REMEMBERED_DECISIONS`]). Past the bound the oldest is
    /// forgotten, and a replay of an approval that old would run again, so
    /// keep the bound above the number of calls an approval may stay around for.
    /// Forgets what this layer decided so far, and keeps its decisions in
    /// process from now on (instead of a store given by [`Confirm::with_store`]).
    pub fn remember_decisions(mut self, capacity: usize) -> Self {
        self.decided = StateStore::embedded_with(capacity);
        self
    }

    /// Records decided call IDs in `store` (as nonces `confirm:CALL_ID`)
    /// instead of this layer's own memory: every layer given the same store,
    /// or a Redis store at the same URL and prefix, refuses an approval
    /// another one used. In Redis a decision is remembered for the store's
    /// TTL ([`StateOptions::ttl`](crate::state::StateOptions::ttl)): keep it
    /// above the longest an approval may wait before it is used.
    /// Forgets what this layer decided so far.
    pub fn with_store(mut self, store: StateStore) -> Self {
        self.decided = store;
        self
    }

    /// Every call of the tool `name` needs approval, with the default hint.
    /// `name` may be bare (`write_file`: that tool of every plugin) or
    /// qualified (`fs.write_file`); the rule holds however the tool is listed
    /// (bare or, when names clash, qualified) and called (either name, or an
    /// alias).
    ///
    /// Logs a warning if an empty context sees no such tool (a typo here
    /// would leave a dangerous tool unguarded).
    pub fn require(self, name: impl Into<String>) -> Self {
        self.require_with(name, ConfirmationHint::default())
    }

    /// Every call of the tool `name` needs approval, asked with this hint.
    pub fn require_with(mut self, name: impl Into<String>, hint: ConfirmationHint) -> Self {
        let name = name.into();
        let cx = Context::new();
        let known = self.inner.lookup(&cx, &name).is_some()
            || self
                .inner
                .tools(&cx)
                .iter()
                .any(|tool| tool.spec().answers_to(&name));
        if !known {
            tracing::warn!(
                toolset = self.inner.name(),
                tool = %name,
                "confirmation required for a tool an empty context cannot see"
            );
        }
        Arc::make_mut(&mut self.rules).tools.insert(name, hint);
        self
    }

    /// Every call of each tool `predicate` chooses (tested in the call's
    /// context) needs approval, asked with this hint: glob patterns
    /// ([`Predicate::glob`]) as `[confirm] tools` uses them, or roles. Unlike
    /// a [`Confirm::provider`], it does not look at arguments, so the tools it
    /// does not choose are listed unmarked ([`ToolSpec::confirm`]).
    pub fn require_matching(mut self, predicate: Predicate, hint: ConfirmationHint) -> Self {
        Arc::make_mut(&mut self.rules)
            .matching
            .push((predicate, hint));
        self
    }

    /// Every call of every tool in the set needs approval, with the default hint.
    pub fn require_all(self) -> Self {
        self.require_all_with(ConfirmationHint::default())
    }

    /// Every call of every tool in the set needs approval, asked with this hint.
    pub fn require_all_with(mut self, hint: ConfirmationHint) -> Self {
        Arc::make_mut(&mut self.rules).every = Some(hint);
        self
    }

    /// Decides per call from context, tool and arguments: `Some(hint)` means
    /// the call needs approval. Adds to the static rules; it cannot waive them.
    pub fn provider(
        mut self,
        provider: impl Fn(&Context, &ToolSpec, &Value) -> Option<ConfirmationHint>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        Arc::make_mut(&mut self.rules).provider = Some(Arc::new(provider));
        self
    }

    /// The wrapped set.
    pub fn inner(&self) -> &T {
        &self.inner
    }
}

impl<T: Toolset> Layer for Confirm<T> {
    type Inner = T;

    fn inner(&self) -> &T {
        &self.inner
    }

    fn wrap(&self, cx: &Context, tool: Arc<dyn Tool>) -> Arc<dyn Tool> {
        if !self.rules.may_require(cx, tool.spec()) {
            return tool;
        }
        Arc::new(Confirmed {
            spec: self.marked.of(&tool),
            tool,
            rules: Arc::clone(&self.rules),
            decided: self.decided.clone(),
        })
    }
}

/// One tool behind the confirmation gate.
struct Confirmed {
    /// The tool's spec, marked [`ToolSpec::confirm`].
    spec: Arc<ToolSpec>,
    tool: Arc<dyn Tool>,
    rules: Arc<Rules>,
    decided: StateStore,
}

impl Confirmed {
    /// `None` when the call may run now; the request to ask when it needs
    /// approval; the error when it may not run. Runs before the inner tool is
    /// touched, and marks an approval used before it runs.
    async fn gate(
        &self,
        cx: &Context,
        arguments: &Value,
    ) -> Result<Option<ConfirmationRequest>, CallError> {
        let spec = self.tool.spec();
        let Some(hint) = self.rules.required(cx, spec, arguments) else {
            return Ok(None);
        };
        let call_id = cx.call_id();
        let refuse = |reason: String| CallError::ConfirmationRejected {
            tool: spec.name.clone(),
            call_id: call_id.to_owned(),
            reason: Some(reason),
        };
        let already = || {
            refuse(
                "this call was already decided, and an approval is used once; \
                 make a new call (with a new call ID) to be asked again"
                    .to_owned(),
            )
        };
        let unavailable = |reason: StateError| CallError::State {
            tool: spec.name.clone(),
            reason,
        };
        match cx.decision(call_id) {
            None => {
                // Only a courtesy (a replay learns it is one before a human is
                // asked again): the approval's own claim is the real check,
                // so a store that cannot say does not stop the question.
                match self.is_decided(call_id).await {
                    Ok(true) => return Err(already()),
                    Ok(false) => {}
                    Err(error) => {
                        tracing::warn!(%error, call_id, "cannot tell whether the call was decided; asking");
                    }
                }
                Ok(Some(ConfirmationRequest {
                    call_id: call_id.to_owned(),
                    tool: spec.name.clone(),
                    arguments: arguments.clone(),
                    hint: hint.hint,
                    payload: hint.payload,
                }))
            }
            Some(Decision::Reject { reason }) => {
                // A rejection is final whether or not it could be recorded.
                if let Err(error) = self.mark_decided(call_id).await {
                    tracing::warn!(%error, call_id, "a rejection could not be recorded");
                }
                Err(CallError::ConfirmationRejected {
                    tool: spec.name.clone(),
                    call_id: call_id.to_owned(),
                    reason: reason.clone(),
                })
            }
            Some(Decision::Approve {
                arguments: approved,
                ..
            }) => {
                if approved != arguments {
                    return Err(refuse(format!(
                        "the arguments changed since approval (approved {approved}, called with \
                         {arguments}); call again with the approved arguments or ask again"
                    )));
                }
                // Check and mark in one step (in Redis, `SET NX`), so two
                // racing replays cannot both run, even on two replicas.
                let recorded = self
                    .mark_decided(call_id)
                    .await
                    .map_err(|reason| match reason {
                        StateError::Unavailable { .. } | StateError::Timeout { .. } => {
                            unavailable(StateError::Unrecorded {
                                reason: Box::new(reason),
                            })
                        }
                        other => unavailable(other),
                    })?;
                if recorded { Ok(None) } else { Err(already()) }
            }
        }
    }

    async fn is_decided(&self, call_id: &str) -> Result<bool, StateError> {
        self.decided.is_claimed(&nonce(call_id)).await
    }

    /// Marks the call ID decided; false if it already was.
    async fn mark_decided(&self, call_id: &str) -> Result<bool, StateError> {
        self.decided.claim_once(&nonce(call_id)).await
    }
}

/// The nonce of a call's decision, apart from other users of the store.
fn nonce(call_id: &str) -> String {
    format!("confirm:{call_id}")
}

impl Tool for Confirmed {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn prepare(&self, cx: &Context, arguments: Value) -> Result<Prepared, CallError> {
        self.tool.prepare(cx, arguments)
    }

    // Prepared arguments are checked already, so what a human is asked about
    // is what runs, and an approval binds the arguments the tool gets.
    fn run<'a>(
        &'a self,
        cx: &'a Context,
        arguments: Prepared,
    ) -> BoxFuture<'a, Result<Started, CallError>> {
        Box::pin(async move {
            match self.gate(cx, arguments.arguments()).await? {
                Some(request) => Ok(Started::NeedsApproval(Box::new(request))),
                None => self.tool.run(cx, arguments).await,
            }
        })
    }
}

#[cfg(test)]
mod tests;
