//! Confirmation on MCP 2026-07-28: a Multi Round-Trip Request (SEP-2322).
//!
//! A call that needs a human's approval answers `InputRequiredResult`: a form
//! elicitation (the tool, the hint, the arguments as they will run) and a
//! sealed `requestState`. The client asks its user and retries the same call
//! with the answer and the state echoed back. The state is sealed with
//! rmcp's [`RequestStateCodec`] (HMAC-SHA256, a key ring so keys rotate) and
//! binds the tool, a digest of the checked and coerced arguments, the call ID
//! and an expiry, so any replica holding the keys can resume the call, and
//! none can be fooled by a state the client made up or changed.
//!
//! Single use is the confirmation layer's: the retry runs under the sealed
//! call ID, and an approval is acted on once per call ID (in the shared state
//! store when one is configured, so across replicas too).

use std::time::Duration;

use rmcp::ServiceError;
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitationAction, ElicitationSchema, InputRequest,
    InputRequests, InputRequiredResult, InputResponses, RequestStateCodec, RequestStateError,
    SealOptions,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::digest::json_digest as digest;
use crate::error::CallError;
use crate::hex::hex;
use crate::state::{StateError, StateStore};
use crate::toolset::{ConfirmationRequest, Decision};

/// The key of the one input request an approval asks.
pub(super) const QUESTION: &str = "approval";
/// Mixed into every seal: a state sealed for anything else never opens here.
const PURPOSE: &[u8] = b"toolhost/approval/v1";

/// Why a key ring could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyRingError {
    /// No key in the text.
    #[error("the key ring holds no key (one `KEY_ID SECRET` per line)")]
    Empty,
    /// A line is not `KEY_ID SECRET`, or the key is unusable.
    #[error("key ring line {line}: {reason}")]
    Line {
        /// The line (1-based; entries separated by commas count as lines).
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
}

/// The keys that seal and open approval states: the first signs, every one
/// opens, so a key can be rotated in (second, then first) and out (once
/// every state it signed has expired) without refusing a pending approval.
/// Every replica of a deployment needs the same ring.
#[derive(Clone)]
pub struct ApprovalKeys {
    codec: std::sync::Arc<RequestStateCodec>,
    generated: bool,
}

impl std::fmt::Debug for ApprovalKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalKeys")
            .field("generated", &self.generated)
            .finish_non_exhaustive()
    }
}

impl ApprovalKeys {
    /// The shortest secret accepted, in bytes.
    pub const MIN_SECRET_BYTES: usize = RequestStateCodec::MIN_KEY_LENGTH;

    /// Reads a key ring: entries `KEY_ID SECRET`, one per line or separated by
    /// commas; blank lines and lines starting with `#` are skipped. The first
    /// entry signs. A secret is at least [`ApprovalKeys::MIN_SECRET_BYTES`]
    /// bytes of text (`openssl rand -hex 32` makes one); a key ID is 1 to 255
    /// bytes without spaces.
    ///
    /// # Errors
    /// [`KeyRingError`] if an entry is malformed, a secret too short, an ID
    /// repeated, or there is no entry.
    pub fn parse(text: &str) -> Result<Self, KeyRingError> {
        let mut keys: Vec<(String, Vec<u8>)> = Vec::new();
        let entries = text.split(['\n', ',']).map(str::trim).enumerate();
        for (index, entry) in entries {
            let line = index + 1;
            if entry.is_empty() || entry.starts_with('#') {
                continue;
            }
            let bad = |reason: &str| KeyRingError::Line {
                line,
                reason: reason.to_owned(),
            };
            let mut parts = entry.split_whitespace();
            let (Some(id), Some(secret), None) = (parts.next(), parts.next(), parts.next()) else {
                return Err(bad("expected `KEY_ID SECRET`"));
            };
            if secret.len() < Self::MIN_SECRET_BYTES {
                return Err(bad(&format!(
                    "the secret of `{id}` is {} bytes; at least {} are needed (`openssl rand -hex 32` makes one)",
                    secret.len(),
                    Self::MIN_SECRET_BYTES
                )));
            }
            if keys.iter().any(|(known, _)| known == id) {
                return Err(bad(&format!("the key ID `{id}` appears twice")));
            }
            keys.push((id.to_owned(), secret.as_bytes().to_vec()));
        }
        let Some((active, _)) = keys.first() else {
            return Err(KeyRingError::Empty);
        };
        let active = active.clone();
        let codec =
            RequestStateCodec::new_with_keyring(active, keys).map_err(|e| KeyRingError::Line {
                line: 1,
                reason: e.to_string(),
            })?;
        Ok(Self {
            codec: std::sync::Arc::new(codec),
            generated: false,
        })
    }

    /// A random key for this process only: approvals asked here cannot be
    /// answered on another replica or after a restart.
    pub fn generate() -> Self {
        let secret = hex(&random_bytes::<32>());
        // 64 bytes of text and a valid ID: the ring cannot be refused.
        let codec = RequestStateCodec::new_with_keyring("process", [("process", secret.clone())])
            .unwrap_or_else(|_| RequestStateCodec::new_unchecked(secret));
        Self {
            codec: std::sync::Arc::new(codec),
            generated: true,
        }
    }

    /// Whether these keys were generated for this process (no ring configured).
    pub fn is_generated(&self) -> bool {
        self.generated
    }

    /// The codec that seals and opens with these keys (a tool's question
    /// states use it too, under a purpose of their own).
    pub(super) fn codec(&self) -> &RequestStateCodec {
        &self.codec
    }
}

/// What a sealed approval state holds.
#[derive(Debug, Serialize, Deserialize)]
struct Sealed {
    /// The tool's canonical name.
    tool: String,
    /// SHA-256 of the canonical JSON of the checked, coerced arguments.
    args: String,
    /// The call ID the approval is for (single use is per call ID).
    call: String,
    /// The key of the principal that was asked: only it may answer.
    #[serde(default)]
    owner: String,
    /// The asking request's span (a `traceparent`), with telemetry on: the
    /// retry's span links to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    asked_in: Option<String>,
    /// The state store's epoch when it was asked ([`StateStore::epoch`]):
    /// an approval is used once as long as the store remembers it was.
    #[serde(default)]
    epoch: String,
}

/// Asks and resumes approvals for one server.
#[derive(Debug, Clone)]
pub(super) struct Approvals {
    keys: ApprovalKeys,
    ttl: Duration,
    /// Where the used approvals are remembered: its epoch is sealed.
    store: StateStore,
}

/// How a retry resumes: the call ID to run under, the decision, and the
/// arguments it binds.
pub(super) struct Resumed {
    pub(super) call_id: String,
    pub(super) decision: Decision,
    /// The store's epoch it was asked in.
    pub(super) epoch: String,
}

impl Approvals {
    /// With these keys and lifetime, and the epoch of `store`: the store the
    /// confirmation layer records used approvals in.
    pub(super) fn new(keys: ApprovalKeys, ttl: Duration, store: StateStore) -> Self {
        Self { keys, ttl, store }
    }

    pub(super) fn store(&self) -> &StateStore {
        &self.store
    }

    /// The epoch to seal in an approval or a question asked now.
    ///
    /// # Errors
    /// The store does not answer: nothing can be asked that could not be
    /// checked.
    pub(super) async fn epoch(&self) -> Result<String, StateError> {
        self.store.epoch().await
    }

    /// Whether an approval sealed in `epoch` may still be used: the store
    /// has the same epoch, so it still remembers which approvals were used.
    /// The error is the refusal for the client (or a store failure).
    pub(super) async fn check_epoch(&self, sealed: &str) -> Result<(), EpochRefused> {
        let now = self.store.epoch().await.map_err(EpochRefused::Store)?;
        if now == sealed {
            Ok(())
        } else {
            Err(EpochRefused::Lost)
        }
    }

    pub(super) fn keys(&self) -> &ApprovalKeys {
        &self.keys
    }

    pub(super) fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The `InputRequiredResult` that asks for this approval.
    /// Only `owner` (a [`Principal::key`](crate::toolset::Principal::key))
    /// may answer it.
    /// `epoch` is the store's now ([`Approvals::epoch`]).
    pub(super) fn ask(
        &self,
        ask: &ConfirmationRequest,
        owner: &str,
        epoch: &str,
    ) -> Result<InputRequiredResult, CallError> {
        let sealed = Sealed {
            tool: ask.tool.clone(),
            args: digest(&ask.arguments),
            call: ask.call_id.clone(),
            owner: owner.to_owned(),
            asked_in: super::trace::traceparent(),
            epoch: epoch.to_owned(),
        };
        let options = SealOptions::new().associated_data(PURPOSE).ttl(self.ttl);
        let state = self
            .keys
            .codec
            .seal_json_with(&sealed, &options)
            .map_err(|e| {
                // Logged in full; the client reads a decision, not a crash.
                tracing::error!(tool = %ask.tool, error = %e, "cannot seal an approval state");
                unavailable(ask)
            })?;
        Ok(InputRequiredResult::new(
            Some(input_requests(ask)?),
            Some(state),
        ))
    }

    /// Opens a retry's state and reads its answer, for a call of `tool`
    /// whose arguments, checked and coerced, are `arguments`. The error is a
    /// refusal for the client, read as a decision: "`tool` was not run: why".
    pub(super) fn resume(
        &self,
        owner: &str,
        tool: &str,
        arguments: &Value,
        state: &str,
        answers: Option<&InputResponses>,
    ) -> Result<Resumed, String> {
        self.open(owner, tool, arguments, state, answers)
            .map_err(|why| format!("`{tool}` was not run: {why}"))
    }

    fn open(
        &self,
        owner: &str,
        tool: &str,
        arguments: &Value,
        state: &str,
        answers: Option<&InputResponses>,
    ) -> Result<Resumed, String> {
        let sealed: Sealed =
            self.keys
                .codec
                .open_json_with(state, PURPOSE)
                .map_err(|e| match e {
                    RequestStateError::Expired => format!(
                        "its approval has expired (approvals last {} s); \
                     call again to be asked again",
                        self.ttl.as_secs()
                    ),
                    // Neither an approval's state nor a question's (tried
                    // first): said of either.
                    RequestStateError::UnknownKeyId => {
                        "the request state was sealed with a key this server does not hold \
                     (asked on a server with other keys, or the key was retired); call again \
                     to be asked again"
                            .to_owned()
                    }
                    other => format!(
                        "the request state was not made by this server or was changed ({other}); \
                     call again to be asked again"
                    ),
                })?;
        if sealed.owner != owner {
            return Err(
                "the approval state was asked of another caller; call again to be asked again"
                    .to_owned(),
            );
        }
        if sealed.tool != tool {
            return Err(format!(
                "the approval state is for `{}`, not `{tool}`; call again to be asked again",
                sealed.tool
            ));
        }
        if sealed.args != digest(arguments) {
            return Err(format!(
                "the arguments changed since the approval was asked (called with {arguments}); \
                 retry with the arguments that were approved, or call again to be asked again"
            ));
        }
        let answer = answers.and_then(|answers| answers.get(QUESTION));
        let Some(answer) = answer else {
            return Err(format!(
                "the retry carries no answer to the approval question (`inputResponses.{QUESTION}`); \
                 answer it, or call again to be asked again"
            ));
        };
        let decision = decide(answer, arguments);
        super::trace::link_to_asker(sealed.asked_in.as_deref());
        Ok(Resumed {
            call_id: sealed.call,
            decision,
            epoch: sealed.epoch,
        })
    }
}

/// Why an approval (or a question's round that runs on one) is not used.
#[derive(Debug)]
pub(super) enum EpochRefused {
    /// Sealed in another epoch of the store: asked on a server with
    /// another store, or the store lost what it remembered since (so
    /// whether this approval was used).
    Lost,
    /// The store did not answer.
    Store(StateError),
}

impl EpochRefused {
    /// The refusal, as the client reads it.
    pub(super) fn message(&self, tool: &str) -> String {
        match self {
            Self::Lost => format!(
                "`{tool}` was not run: its approval was given where this server's state store \
                 could not record its use (on a server that does not share this one's store, \
                 `[state] url`; or before the store lost its data: restarted empty, flushed), so \
                 whether it was used already cannot be told; call again to be asked again"
            ),
            Self::Store(err) => format!(
                "`{tool}` was not run: whether its approval was used cannot be checked now \
                 ({err}); retry shortly"
            ),
        }
    }
}

/// The input requests that ask for this approval: one form elicitation, at
/// [`QUESTION`] (in an `InputRequiredResult`, or a task's `inputRequests`).
pub(super) fn input_requests(ask: &ConfirmationRequest) -> Result<InputRequests, CallError> {
    let form = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: question(ask),
        requested_schema: approval_form(ask)?,
    };
    let mut requests = InputRequests::new();
    requests.insert(
        QUESTION.to_owned(),
        InputRequest::Elicitation(ElicitRequest::new(form)),
    );
    Ok(requests)
}

/// The decision an elicitation answer means: approved only when accepted
/// with `approve: true`.
pub(super) fn decide(answer: &Value, arguments: &Value) -> Decision {
    let action = answer
        .get("action")
        .and_then(|a| serde_json::from_value::<ElicitationAction>(a.clone()).ok());
    let approved = action == Some(ElicitationAction::Accept)
        && answer
            .get("content")
            .and_then(|c| c.get("approve"))
            .and_then(Value::as_bool)
            == Some(true);
    if approved {
        return Decision::Approve {
            arguments: arguments.clone(),
            payload: None,
        };
    }
    Decision::Reject {
        reason: Some(not_approved(action.as_ref()).to_owned()),
    }
}

/// The question a human sees.
pub(super) fn question(ask: &ConfirmationRequest) -> String {
    format!(
        "The tool `{}` needs your approval: {}\nArguments: {}",
        ask.tool, ask.hint, ask.arguments
    )
}

/// The one-field form: approve, yes or no.
pub(super) fn approval_form(ask: &ConfirmationRequest) -> Result<ElicitationSchema, CallError> {
    ElicitationSchema::builder()
        .required_bool_property("approve", |b| {
            b.title("Approve")
                .description(format!("Run `{}` with these arguments", ask.tool))
        })
        .build()
        .map_err(|e| {
            tracing::error!(tool = %ask.tool, error = %e, "cannot build an approval form");
            unavailable(ask)
        })
}

/// The call was not run because nobody could be asked (a fault of the
/// server's, logged by the caller): a decision for the client to read.
pub(super) fn unavailable(ask: &ConfirmationRequest) -> CallError {
    CallError::ConfirmationUnavailable {
        tool: ask.tool.clone(),
        hint: ask.hint.clone(),
        reason: "the server could not ask for approval, so it was not run; try again later"
            .to_owned(),
    }
}

/// Why a call was not approved, from the elicitation's action (`None`: the
/// answer was not an elicitation result).
pub(super) fn not_approved(action: Option<&ElicitationAction>) -> &'static str {
    match action {
        Some(ElicitationAction::Accept) => "the user did not approve it",
        Some(ElicitationAction::Decline) => "the user declined it",
        Some(_) => "the user cancelled the approval",
        None => "the answer to the approval question is not an elicitation result",
    }
}

/// Why an approval asked in the call (2025-11-25 elicitation) got no answer:
/// said as the reason the call was not run, without protocol noise.
pub(super) fn unanswered(err: &ServiceError) -> String {
    match err {
        ServiceError::Timeout { timeout } => {
            format!(
                "nobody answered the approval question within {} s",
                timeout.as_secs()
            )
        }
        ServiceError::McpError(error) => {
            format!("the client could not ask for approval ({})", error.message)
        }
        ServiceError::TransportClosed | ServiceError::Cancelled { .. } => {
            "the client went away before the approval question was answered".to_owned()
        }
        other => format!("the approval question got no answer ({other})"),
    }
}

/// 128 random bits as hex: IDs no other process or replica will make.
pub(super) fn random_id() -> String {
    hex(&random_bytes::<16>())
}

/// `N` random bytes from the OS; should it have none (never seen on Linux),
/// from std's per-process hasher keys, themselves as random as the platform
/// allows. Never a fixed value: keys and IDs are made of these.
fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    if getrandom::fill(&mut bytes).is_err() {
        use std::hash::BuildHasher as _;
        for (i, chunk) in bytes.chunks_mut(8).enumerate() {
            let word = std::collections::hash_map::RandomState::new().hash_one(i);
            chunk.copy_from_slice(&word.to_le_bytes()[..chunk.len()]);
        }
    }
    bytes
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const RING: &str =
        "# comment\nk2 0123456789abcdef0123456789abcdef01\nk1 fedcba9876543210fedcba9876543210fe\n";

    fn request() -> ConfirmationRequest {
        ConfirmationRequest {
            call_id: "call-1".into(),
            tool: "echo".into(),
            arguments: json!({"b": 1, "a": [true, {"y": null, "x": "s"}]}),
            hint: "sure?".into(),
            payload: None,
        }
    }

    fn accept() -> InputResponses {
        let mut answers = InputResponses::new();
        answers.insert(
            QUESTION.into(),
            json!({"action": "accept", "content": {"approve": true}}),
        );
        answers
    }

    /// The principal key approvals in these tests are asked of.
    const OWNER: &str = "anonymous";
    /// The epoch approvals in these tests are sealed in.
    const EPOCH: &str = "e1";

    #[test]
    fn an_approval_resumes_the_sealed_call_and_binds_the_arguments() {
        let approvals = Approvals::new(
            ApprovalKeys::parse(RING).unwrap(),
            Duration::from_secs(60),
            StateStore::embedded(),
        );
        let asked = approvals.ask(&request(), OWNER, EPOCH).unwrap();
        let state = asked.request_state.clone().unwrap();
        assert!(asked.input_requests.unwrap().contains_key(QUESTION));
        // Key order does not matter; the values do.
        let same = json!({"a": [true, {"x": "s", "y": null}], "b": 1});
        let resumed = approvals
            .resume(OWNER, "echo", &same, &state, Some(&accept()))
            .unwrap();
        assert_eq!(resumed.call_id, "call-1");
        assert!(matches!(resumed.decision, Decision::Approve { .. }));
        let changed = json!({"a": [true, {"x": "s", "y": null}], "b": 2});
        let err = approvals
            .resume(OWNER, "echo", &changed, &state, Some(&accept()))
            .err()
            .unwrap();
        assert!(err.contains("arguments changed"), "{err}");
        let err = approvals
            .resume(OWNER, "other", &same, &state, Some(&accept()))
            .err()
            .unwrap();
        assert!(err.contains("is for `echo`"), "{err}");
        let err = approvals
            .resume(OWNER, "echo", &same, &state, None)
            .err()
            .unwrap();
        assert!(err.contains("no answer"), "{err}");
    }

    #[test]
    fn tampered_foreign_and_expired_states_are_refused() {
        let keys = ApprovalKeys::parse(RING).unwrap();
        let approvals = Approvals::new(
            keys.clone(),
            Duration::from_secs(60),
            StateStore::embedded(),
        );
        let state = approvals
            .ask(&request(), OWNER, EPOCH)
            .unwrap()
            .request_state
            .unwrap();
        let args = request().arguments;
        // One character in the middle (the payload), so every bit counts.
        let mut tampered: Vec<char> = state.chars().collect();
        let middle = tampered.len() / 2;
        tampered[middle] = if tampered[middle] == 'A' { 'B' } else { 'A' };
        let tampered: String = tampered.into_iter().collect();
        let err = approvals
            .resume(OWNER, "echo", &args, &tampered, Some(&accept()))
            .err()
            .unwrap();
        assert!(err.contains("not made by this server"), "{err}");
        let foreign = Approvals::new(
            ApprovalKeys::generate(),
            Duration::from_secs(60),
            StateStore::embedded(),
        );
        let err = foreign
            .resume(OWNER, "echo", &args, &state, Some(&accept()))
            .err()
            .unwrap();
        assert!(err.contains("key this server does not hold"), "{err}");
        // Another caller cannot answer (replay) it, even holding the state.
        let err = approvals
            .resume(
                r#"["https://idp","mallory"]"#,
                "echo",
                &args,
                &state,
                Some(&accept()),
            )
            .err()
            .unwrap();
        assert!(err.contains("another caller"), "{err}");
        // A ring that only verifies with the old key still opens it (rotation).
        let rotated = ApprovalKeys::parse(
            "k3 00000000000000000000000000000000000\nk2 0123456789abcdef0123456789abcdef01",
        )
        .unwrap();
        let rotated = Approvals::new(rotated, Duration::from_secs(60), StateStore::embedded());
        assert!(
            rotated
                .resume(OWNER, "echo", &args, &state, Some(&accept()))
                .is_ok()
        );
        let short = Approvals::new(keys, Duration::from_millis(1), StateStore::embedded());
        let state = short
            .ask(&request(), OWNER, EPOCH)
            .unwrap()
            .request_state
            .unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let err = short
            .resume(OWNER, "echo", &args, &state, Some(&accept()))
            .err()
            .unwrap();
        assert!(err.contains("expired"), "{err}");
    }

    #[test]
    fn only_an_accepted_yes_approves() {
        let args = json!({});
        let decide = |answer: Value| decide(&answer, &args);
        assert!(matches!(
            decide(json!({"action": "accept", "content": {"approve": true}})),
            Decision::Approve { .. }
        ));
        for answer in [
            json!({"action": "accept", "content": {"approve": false}}),
            json!({"action": "accept"}),
            json!({"action": "decline"}),
            json!({"action": "cancel"}),
            json!("yes"),
        ] {
            assert!(
                matches!(decide(answer.clone()), Decision::Reject { .. }),
                "{answer}"
            );
        }
    }

    #[test]
    fn key_rings_are_checked() {
        assert!(matches!(
            ApprovalKeys::parse("# nothing\n\n"),
            Err(KeyRingError::Empty)
        ));
        let short = ApprovalKeys::parse("k1 short").err().unwrap().to_string();
        assert!(
            short.contains("line 1") && short.contains("at least 32"),
            "{short}"
        );
        let twice = "a 0123456789abcdef0123456789abcdef01, a 0123456789abcdef0123456789abcdef02";
        let twice = ApprovalKeys::parse(twice).err().unwrap().to_string();
        assert!(
            twice.contains("line 2") && twice.contains("twice"),
            "{twice}"
        );
        let malformed = ApprovalKeys::parse("only-one-field")
            .err()
            .unwrap()
            .to_string();
        assert!(malformed.contains("KEY_ID SECRET"), "{malformed}");
        assert!(ApprovalKeys::generate().is_generated());
        assert_ne!(random_id(), random_id());
    }
}
