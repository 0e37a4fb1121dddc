//! Long-running calls as tasks (the MCP Tasks extension, SEP-2663): their
//! status, outcome and signals, kept in the [`StateStore`] so a poll, an
//! input response or a cancel may land on any replica.
//!
//! A task is one [`TaskRecord`]. Its owner (the replica running the call)
//! [`create`](TaskStore::create)s it, [`beat`](TaskStore::beat)s while it
//! runs (learning the status, hence a cancel, and taking input responses),
//! and ends it with a [`transition`](TaskStore::transition) to a terminal
//! status. Clients read it with [`get`](TaskStore::get), answer an input
//! request with [`respond`](TaskStore::respond), and cancel it with a
//! transition to [`TaskStatus::Cancelled`]. Terminal statuses are final:
//! whichever transition reaches one first wins, in process and in Redis alike.
//!
//! A record expires [`TaskRecord::ttl_ms`] after its last write. In Redis
//! it is the hash `PREFIXtask:ID`, written only by Lua scripts (each one
//! atomic step); in process it is one entry of a map holding at most
//! [`MAX_EMBEDDED_TASKS`] records and [`MAX_EMBEDDED_TASK_BYTES`] bytes.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{Repr, StateError, StateStore};

/// The most bytes a task's payload, or one set of input responses, may
/// hold; more is refused with [`StateError::TaskPayload`].
pub const MAX_TASK_PAYLOAD_BYTES: usize = 16 << 20;

/// The most tasks an in-process store holds (expired ones, then terminal
/// ones, make room first); past it [`TaskStore::create`] fails with
/// [`StateError::Tasks`].
pub const MAX_EMBEDDED_TASKS: usize = 10_000;

/// The most bytes the in-process store's tasks may hold together: their
/// payloads (results, errors, input requests), pending input responses and
/// a fixed overhead per record. Past it, finished tasks are dropped oldest
/// first; if that is not enough, the write fails with
/// [`StateError::TaskBytes`] (Redis has its own `maxmemory`).
pub const MAX_EMBEDDED_TASK_BYTES: usize = 256 << 20;

/// Where a task is in its lifecycle (SEP-2663). [`Completed`](Self::Completed),
/// [`Failed`](Self::Failed) and [`Cancelled`](Self::Cancelled) are terminal:
/// once there, a task never changes again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskStatus {
    /// The call is running.
    Working,
    /// The call waits for the client's input (an approval, say).
    InputRequired,
    /// The call returned; the payload is its result.
    Completed,
    /// The call failed; the payload is its error.
    Failed,
    /// The call was cancelled.
    Cancelled,
}

impl TaskStatus {
    /// Every status, in lifecycle order.
    pub const ALL: [Self; 5] = [
        Self::Working,
        Self::InputRequired,
        Self::Completed,
        Self::Failed,
        Self::Cancelled,
    ];

    /// True for the statuses a task never leaves.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }

    /// The wire name: `working`, `input_required`, `completed`, `failed`,
    /// `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// The status a wire name names.
    pub(crate) fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == name)
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the store keeps of one task. Times are Unix times in milliseconds;
/// payloads are JSON text the caller chose.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskRecord {
    /// The task's id: 128 random bits made by the caller (it acts as a
    /// bearer capability).
    pub id: String,
    /// Where the task is.
    pub status: TaskStatus,
    /// A human-readable word on the status, if any.
    pub status_message: Option<String>,
    /// When the task was created.
    pub created_at_ms: u64,
    /// When its status last changed.
    pub updated_at_ms: u64,
    /// The record expires this long after its last write.
    pub ttl_ms: u64,
    /// How often clients should poll it.
    pub poll_ms: u64,
    /// The replica running it (free text).
    pub owner: String,
    /// Who may see it (opaque; the caller hashes it).
    pub principal: String,
    /// The tool called.
    pub tool: String,
    /// JSON: the input requests (input required), the result (completed) or
    /// the error (failed).
    pub payload: Option<String>,
    /// The owner's last beat.
    pub heartbeat_ms: u64,
}

impl TaskRecord {
    /// A task [`Working`](TaskStatus::Working) from now, with no message
    /// nor payload, beaten now.
    pub fn new(
        id: impl Into<String>,
        owner: impl Into<String>,
        principal: impl Into<String>,
        tool: impl Into<String>,
        ttl: Duration,
        poll: Duration,
    ) -> Self {
        let now = now_ms();
        Self {
            id: id.into(),
            status: TaskStatus::Working,
            status_message: None,
            created_at_ms: now,
            updated_at_ms: now,
            ttl_ms: millis(ttl),
            poll_ms: millis(poll),
            owner: owner.into(),
            principal: principal.into(),
            tool: tool.into(),
            payload: None,
            heartbeat_ms: now,
        }
    }
}

/// The outcome of a [`TaskStore::transition`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transition {
    /// The task was not terminal; this is it now.
    Applied(TaskRecord),
    /// The task was terminal already, and is unchanged: this is it.
    Final(TaskRecord),
    /// There is no such task (never made, or expired).
    Missing,
}

/// What the owner learns from one [`TaskStore::beat`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Beat {
    /// The task's status now ([`Cancelled`](TaskStatus::Cancelled): stop).
    pub status: TaskStatus,
    /// Input responses the client sent since the last beat, taken out of
    /// the store (the next beat does not see them again).
    pub responses: Option<String>,
}

/// The tasks of one [`StateStore`], from [`StateStore::tasks`]. Cheap to
/// clone; the same semantics in process and in Redis, where every write is
/// one atomic script and every operation one round trip within the store's
/// timeout.
#[derive(Clone, Debug)]
pub struct TaskStore {
    store: StateStore,
}

impl StateStore {
    /// The tasks kept in this store (in Redis: `PREFIXtask:ID` hashes).
    pub fn tasks(&self) -> TaskStore {
        TaskStore {
            store: self.clone(),
        }
    }
}

impl TaskStore {
    /// Stores a new task.
    ///
    /// # Errors
    /// [`StateError::TaskExists`] if a task (unexpired) has its id;
    /// [`StateError::TaskPayload`] if its payload is over
    /// [`MAX_TASK_PAYLOAD_BYTES`]; in process, [`StateError::Tasks`] if the
    /// store holds [`MAX_EMBEDDED_TASKS`] live tasks none of which is
    /// terminal, [`StateError::TaskBytes`] if its tasks hold
    /// [`MAX_EMBEDDED_TASK_BYTES`]; in Redis, [`StateError::Unavailable`] or [`StateError::Timeout`].
    pub async fn create(&self, record: &TaskRecord) -> Result<(), StateError> {
        check_size(record.payload.as_deref())?;
        match &self.store.repr {
            Repr::Embedded(embedded) => embedded.tasks.create(record),
            Repr::Redis(redis) => redis.create_task(record).await,
        }
    }

    /// The task, if it exists and has not expired. Reading does not keep it
    /// alive.
    ///
    /// # Errors
    /// In Redis, [`StateError::Unavailable`] (also for a record this host
    /// cannot read) or [`StateError::Timeout`].
    pub async fn get(&self, id: &str) -> Result<Option<TaskRecord>, StateError> {
        match &self.store.repr {
            Repr::Embedded(embedded) => Ok(embedded.tasks.get(id)),
            Repr::Redis(redis) => redis.get_task(id).await,
        }
    }

    /// Moves the task to `to` with `message` and `payload` (`None` clears
    /// either), only if its status is not terminal: then it updates
    /// [`updated_at_ms`](TaskRecord::updated_at_ms), drops input responses
    /// not yet taken (they answered the previous request) and refreshes the
    /// TTL. One atomic step: of two transitions racing to terminal
    /// statuses, exactly one is [`Transition::Applied`].
    ///
    /// # Errors
    /// [`StateError::TaskPayload`] if `payload` is over
    /// [`MAX_TASK_PAYLOAD_BYTES`] (nothing changes); in process,
    /// [`StateError::TaskBytes`] if the payload does not fit the store's
    /// [`MAX_EMBEDDED_TASK_BYTES`] even after dropping finished tasks; in Redis,
    /// [`StateError::Unavailable`] or [`StateError::Timeout`]: then the
    /// transition may or may not have happened.
    pub async fn transition(
        &self,
        id: &str,
        to: TaskStatus,
        message: Option<&str>,
        payload: Option<&str>,
    ) -> Result<Transition, StateError> {
        check_size(payload)?;
        let change = Change {
            to,
            message,
            payload,
            now_ms: now_ms(),
        };
        match &self.store.repr {
            Repr::Embedded(embedded) => embedded.tasks.transition(id, &change),
            Repr::Redis(redis) => redis.transition_task(id, &change).await,
        }
    }

    /// Stores input responses for the owner's next [`beat`](Self::beat)
    /// (replacing any not yet taken) and refreshes the TTL, only if the
    /// task is [`InputRequired`](TaskStatus::InputRequired): false
    /// otherwise, or if there is no such task.
    ///
    /// # Errors
    /// [`StateError::TaskPayload`] if `responses` is over
    /// [`MAX_TASK_PAYLOAD_BYTES`]; in process, [`StateError::TaskBytes`] as
    /// for [`transition`](Self::transition); in Redis,
    /// [`StateError::Unavailable`] or [`StateError::Timeout`].
    pub async fn respond(&self, id: &str, responses: &str) -> Result<bool, StateError> {
        check_size(Some(responses))?;
        match &self.store.repr {
            Repr::Embedded(embedded) => embedded.tasks.respond(id, responses),
            Repr::Redis(redis) => redis.respond_task(id, responses).await,
        }
    }

    /// The owner's beat: unless the task is terminal, sets
    /// [`heartbeat_ms`](TaskRecord::heartbeat_ms) to now, refreshes the TTL
    /// and takes the pending input responses; returns the status (and those
    /// responses). A terminal task is left as it is. `None` if the task is
    /// gone.
    ///
    /// # Errors
    /// In Redis, [`StateError::Unavailable`] or [`StateError::Timeout`].
    pub async fn beat(&self, id: &str) -> Result<Option<Beat>, StateError> {
        let now = now_ms();
        match &self.store.repr {
            Repr::Embedded(embedded) => Ok(embedded.tasks.beat(id, now)),
            Repr::Redis(redis) => redis.beat_task(id, now).await,
        }
    }
}

/// One transition, as the backends apply it.
#[derive(Debug)]
pub(crate) struct Change<'a> {
    pub(crate) to: TaskStatus,
    pub(crate) message: Option<&'a str>,
    pub(crate) payload: Option<&'a str>,
    pub(crate) now_ms: u64,
}

fn check_size(payload: Option<&str>) -> Result<(), StateError> {
    match payload {
        Some(payload) if payload.len() > MAX_TASK_PAYLOAD_BYTES => Err(StateError::TaskPayload {
            limit: MAX_TASK_PAYLOAD_BYTES,
        }),
        _ => Ok(()),
    }
}

/// Now, in milliseconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, millis)
}

pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly on unexpected errors")]

    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    fn task(id: &str, ttl: Duration) -> TaskRecord {
        TaskRecord::new(
            id,
            "replica-a",
            "principal",
            "slow",
            ttl,
            Duration::from_millis(250),
        )
    }

    fn applied(transition: Transition) -> TaskRecord {
        match transition {
            Transition::Applied(record) => record,
            other => panic!("expected Applied, got {other:?}"),
        }
    }

    #[test]
    fn statuses_have_their_wire_names() {
        for status in TaskStatus::ALL {
            assert_eq!(TaskStatus::parse(status.as_str()), Some(status));
        }
        assert_eq!(TaskStatus::InputRequired.as_str(), "input_required");
        let terminal: Vec<_> = TaskStatus::ALL
            .into_iter()
            .filter(|s| s.is_terminal())
            .collect();
        assert_eq!(
            terminal,
            [
                TaskStatus::Completed,
                TaskStatus::Failed,
                TaskStatus::Cancelled
            ]
        );
        assert_eq!(TaskStatus::parse("done"), None);
    }

    #[tokio::test]
    async fn a_task_goes_through_its_lifecycle() {
        let tasks = StateStore::embedded().tasks();
        let record = task("t1", HOUR);
        assert_eq!(record.status, TaskStatus::Working);
        assert_eq!(record.ttl_ms, 3_600_000);
        tasks.create(&record).await.unwrap();
        assert_eq!(tasks.get("t1").await.unwrap(), Some(record.clone()));
        assert_eq!(tasks.get("t2").await.unwrap(), None);
        let err = tasks.create(&record).await.unwrap_err();
        assert!(
            matches!(err, StateError::TaskExists { ref id } if id == "t1"),
            "{err:?}"
        );

        let waiting = applied(
            tasks
                .transition(
                    "t1",
                    TaskStatus::InputRequired,
                    Some("approve?"),
                    Some(r#"{"approve":{}}"#),
                )
                .await
                .unwrap(),
        );
        assert_eq!(waiting.status, TaskStatus::InputRequired);
        assert_eq!(waiting.status_message.as_deref(), Some("approve?"));
        assert_eq!(waiting.payload.as_deref(), Some(r#"{"approve":{}}"#));
        assert!(waiting.updated_at_ms >= record.updated_at_ms);
        assert_eq!(waiting.created_at_ms, record.created_at_ms);
        assert_eq!(tasks.get("t1").await.unwrap(), Some(waiting));

        assert!(tasks.respond("t1", r#"{"approve":true}"#).await.unwrap());
        let back = applied(
            tasks
                .transition("t1", TaskStatus::Working, None, None)
                .await
                .unwrap(),
        );
        // The message and payload are cleared with None.
        assert_eq!((back.status_message, back.payload), (None, None));

        let done = applied(
            tasks
                .transition("t1", TaskStatus::Completed, None, Some(r#"{"content":[]}"#))
                .await
                .unwrap(),
        );
        assert_eq!(done.payload.as_deref(), Some(r#"{"content":[]}"#));
        assert_eq!(tasks.get("t1").await.unwrap(), Some(done));
        assert_eq!(
            tasks
                .transition("t9", TaskStatus::Cancelled, None, None)
                .await
                .unwrap(),
            Transition::Missing
        );
    }

    #[tokio::test]
    async fn terminal_statuses_are_final() {
        let tasks = StateStore::embedded().tasks();
        for end in [
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Cancelled,
        ] {
            let id = format!("t-{end}");
            tasks.create(&task(&id, HOUR)).await.unwrap();
            let ended = applied(
                tasks
                    .transition(&id, end, Some("over"), Some("1"))
                    .await
                    .unwrap(),
            );
            for to in TaskStatus::ALL {
                let again = tasks
                    .transition(&id, to, Some("again"), Some("2"))
                    .await
                    .unwrap();
                assert_eq!(again, Transition::Final(ended.clone()), "{end} -> {to}");
            }
            assert_eq!(tasks.get(&id).await.unwrap(), Some(ended.clone()));
            // A beat learns the end and writes nothing; respond is refused.
            let beat = tasks.beat(&id).await.unwrap().unwrap();
            assert_eq!(
                beat,
                Beat {
                    status: end,
                    responses: None
                }
            );
            assert!(!tasks.respond(&id, "{}").await.unwrap());
            assert_eq!(tasks.get(&id).await.unwrap(), Some(ended));
        }
    }

    #[tokio::test]
    async fn responses_land_only_while_input_is_required_and_are_taken_once() {
        let tasks = StateStore::embedded().tasks();
        assert!(!tasks.respond("none", "{}").await.unwrap());
        tasks.create(&task("t", HOUR)).await.unwrap();
        assert!(!tasks.respond("t", r#"{"a":1}"#).await.unwrap());
        let beat = tasks.beat("t").await.unwrap().unwrap();
        assert_eq!(
            beat,
            Beat {
                status: TaskStatus::Working,
                responses: None
            }
        );

        tasks
            .transition("t", TaskStatus::InputRequired, None, Some("{}"))
            .await
            .unwrap();
        assert!(tasks.respond("t", r#"{"a":1}"#).await.unwrap());
        // A second answer before the owner took the first replaces it.
        assert!(tasks.respond("t", r#"{"a":2}"#).await.unwrap());
        let beat = tasks.beat("t").await.unwrap().unwrap();
        assert_eq!(beat.status, TaskStatus::InputRequired);
        assert_eq!(beat.responses.as_deref(), Some(r#"{"a":2}"#));
        let beat = tasks.beat("t").await.unwrap().unwrap();
        assert_eq!(beat.responses, None);

        // Responses not taken before a transition answered the old request: dropped.
        assert!(tasks.respond("t", r#"{"a":3}"#).await.unwrap());
        tasks
            .transition("t", TaskStatus::InputRequired, None, Some("{}"))
            .await
            .unwrap();
        assert_eq!(tasks.beat("t").await.unwrap().unwrap().responses, None);
        assert_eq!(tasks.beat("gone").await.unwrap(), None);
    }

    #[tokio::test]
    async fn beats_stamp_the_heartbeat_but_not_the_update_time() {
        let tasks = StateStore::embedded().tasks();
        let mut record = task("t", HOUR);
        record.heartbeat_ms = 1;
        record.updated_at_ms = 1;
        tasks.create(&record).await.unwrap();
        tasks.beat("t").await.unwrap().unwrap();
        let now = tasks.get("t").await.unwrap().unwrap();
        assert!(now.heartbeat_ms > 1, "{now:?}");
        assert_eq!(now.updated_at_ms, 1);
    }

    // The runtime's clock is paused: the sleeps advance it exactly, so the
    // beats land inside the TTL however loaded the machine is.
    #[tokio::test(start_paused = true)]
    async fn records_expire_after_their_ttl_from_the_last_write() {
        let tasks = StateStore::embedded().tasks();
        let ttl = Duration::from_millis(300);
        tasks.create(&task("idle", ttl)).await.unwrap();
        tasks.create(&task("beaten", ttl)).await.unwrap();
        for _ in 0..4 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            tasks.beat("beaten").await.unwrap().unwrap();
        }
        // Reading does not keep a task alive; beating does.
        assert_eq!(tasks.get("idle").await.unwrap(), None);
        assert!(tasks.get("beaten").await.unwrap().is_some());
        assert_eq!(tasks.beat("idle").await.unwrap(), None);
        assert_eq!(
            tasks
                .transition("idle", TaskStatus::Failed, None, None)
                .await
                .unwrap(),
            Transition::Missing
        );
        // An expired id may be used again.
        tasks.create(&task("idle", ttl)).await.unwrap();
    }

    #[tokio::test]
    async fn the_store_holds_a_bounded_number_of_running_tasks() {
        let tasks = StateStore::embedded().tasks();
        for i in 0..MAX_EMBEDDED_TASKS {
            tasks.create(&task(&format!("t{i}"), HOUR)).await.unwrap();
        }
        let err = tasks.create(&task("one more", HOUR)).await.unwrap_err();
        assert_eq!(
            err,
            StateError::Tasks {
                limit: MAX_EMBEDDED_TASKS
            }
        );
        tasks
            .transition("t7", TaskStatus::Cancelled, None, None)
            .await
            .unwrap();
        tasks.create(&task("one more", HOUR)).await.unwrap();
        assert_eq!(tasks.get("t7").await.unwrap(), None);
    }

    #[tokio::test]
    async fn oversized_payloads_are_refused_and_change_nothing() {
        let tasks = StateStore::embedded().tasks();
        let big = "x".repeat(MAX_TASK_PAYLOAD_BYTES + 1);
        let refused = StateError::TaskPayload {
            limit: MAX_TASK_PAYLOAD_BYTES,
        };
        let mut record = task("big", HOUR);
        record.payload = Some(big.clone());
        assert_eq!(tasks.create(&record).await.unwrap_err(), refused);
        assert_eq!(tasks.get("big").await.unwrap(), None);

        tasks.create(&task("t", HOUR)).await.unwrap();
        let err = tasks
            .transition("t", TaskStatus::Completed, None, Some(&big))
            .await;
        assert_eq!(err.unwrap_err(), refused);
        applied(
            tasks
                .transition("t", TaskStatus::InputRequired, None, None)
                .await
                .unwrap(),
        );
        assert_eq!(tasks.respond("t", &big).await.unwrap_err(), refused);
        assert_eq!(tasks.beat("t").await.unwrap().unwrap().responses, None);
        // Exactly the limit is fine.
        let most = "x".repeat(MAX_TASK_PAYLOAD_BYTES);
        applied(
            tasks
                .transition("t", TaskStatus::Completed, None, Some(&most))
                .await
                .unwrap(),
        );
    }
}
