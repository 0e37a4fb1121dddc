//! Tasks in the state store (MCP Tasks, issue 18 §3): the same lifecycle
//! checks on an in-process store and on a real `redis-server`; two stores
//! sharing Redis ("replicas") see each other's tasks; records expire after
//! their TTL; racing transitions to terminal statuses: exactly one wins.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use toolhost::state::tasks::{
    MAX_TASK_PAYLOAD_BYTES, TaskRecord, TaskStatus, TaskStore, Transition,
};
use toolhost::state::{StateError, StateOptions, StateStore};

use super::Redis;

const HOUR: Duration = Duration::from_secs(3600);

/// A store in `redis` under `prefix`, with a timeout generous enough for a
/// loaded 2-core CI machine.
pub(super) fn shared(redis: &Redis, prefix: &str) -> StateStore {
    shared_with(redis, prefix, Duration::from_secs(5))
}

fn shared_with(redis: &Redis, prefix: &str, timeout: Duration) -> StateStore {
    let mut options = StateOptions::default();
    options
        .url(Some(redis.url()))
        .prefix(prefix)
        .timeout(timeout);
    StateStore::new(&options).unwrap()
}

/// One Redis command's one-line answer (`:123`, `+OK`, `$-1`...).
pub(super) fn ask(redis: &Redis, command: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", redis.port)).unwrap();
    stream
        .write_all(format!("{command}\r\n").as_bytes())
        .unwrap();
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).unwrap();
    line.trim_end().to_owned()
}

fn task(id: &str, ttl: Duration) -> TaskRecord {
    TaskRecord::new(
        id,
        "replica-a",
        "principal-1",
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

/// The lifecycle checks every backend must pass alike.
async fn lifecycle(tasks: &TaskStore) {
    // Create and read back, field for field; ids are unique.
    let mut record = task("t1", HOUR);
    record.status_message = Some("starting".into());
    tasks.create(&record).await.unwrap();
    assert_eq!(tasks.get("t1").await.unwrap(), Some(record.clone()));
    assert_eq!(tasks.get("nope").await.unwrap(), None);
    let err = tasks.create(&task("t1", HOUR)).await.unwrap_err();
    assert!(
        matches!(err, StateError::TaskExists { ref id } if id == "t1"),
        "{err:?}"
    );

    // No input is taken while none is asked for.
    assert!(!tasks.respond("t1", r#"{"a":0}"#).await.unwrap());
    let beat = tasks.beat("t1").await.unwrap().unwrap();
    assert_eq!((beat.status, beat.responses), (TaskStatus::Working, None));
    let beaten = tasks.get("t1").await.unwrap().unwrap();
    assert!(beaten.heartbeat_ms >= record.heartbeat_ms);
    assert_eq!(
        beaten.updated_at_ms, record.updated_at_ms,
        "a beat is no update"
    );

    // Ask for input; the answer is taken once, the latest one wins.
    let asking = applied(
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
    assert_eq!(asking.status, TaskStatus::InputRequired);
    assert_eq!(asking.status_message.as_deref(), Some("approve?"));
    assert_eq!(asking.payload.as_deref(), Some(r#"{"approve":{}}"#));
    assert_eq!(asking.created_at_ms, record.created_at_ms);
    assert!(asking.updated_at_ms >= record.updated_at_ms);
    assert_eq!(tasks.get("t1").await.unwrap(), Some(asking.clone()));
    assert!(tasks.respond("t1", r#"{"a":1}"#).await.unwrap());
    assert!(tasks.respond("t1", r#"{"a":2}"#).await.unwrap());
    let beat = tasks.beat("t1").await.unwrap().unwrap();
    assert_eq!(beat.status, TaskStatus::InputRequired);
    assert_eq!(beat.responses.as_deref(), Some(r#"{"a":2}"#));
    assert_eq!(tasks.beat("t1").await.unwrap().unwrap().responses, None);
    // An answer not taken before the next transition is dropped with it.
    assert!(tasks.respond("t1", r#"{"a":3}"#).await.unwrap());
    let working = applied(
        tasks
            .transition("t1", TaskStatus::Working, None, None)
            .await
            .unwrap(),
    );
    assert_eq!((working.status_message, working.payload), (None, None));
    assert_eq!(tasks.beat("t1").await.unwrap().unwrap().responses, None);

    // Terminal statuses are final, whatever comes next.
    let done = applied(
        tasks
            .transition(
                "t1",
                TaskStatus::Completed,
                Some("done"),
                Some(r#"{"content":[]}"#),
            )
            .await
            .unwrap(),
    );
    assert_eq!(done.payload.as_deref(), Some(r#"{"content":[]}"#));
    for to in TaskStatus::ALL {
        let again = tasks.transition("t1", to, None, Some("{}")).await.unwrap();
        assert_eq!(again, Transition::Final(done.clone()), "completed -> {to}");
    }
    assert!(!tasks.respond("t1", "{}").await.unwrap());
    let beat = tasks.beat("t1").await.unwrap().unwrap();
    assert_eq!((beat.status, beat.responses), (TaskStatus::Completed, None));
    assert_eq!(tasks.get("t1").await.unwrap(), Some(done));
    for end in [TaskStatus::Failed, TaskStatus::Cancelled] {
        let id = format!("t-{end}");
        tasks.create(&task(&id, HOUR)).await.unwrap();
        let ended = applied(tasks.transition(&id, end, None, None).await.unwrap());
        let again = tasks
            .transition(&id, TaskStatus::Working, None, None)
            .await
            .unwrap();
        assert_eq!(again, Transition::Final(ended));
    }

    // No such task.
    let missing = tasks
        .transition("nope", TaskStatus::Cancelled, None, None)
        .await;
    assert_eq!(missing.unwrap(), Transition::Missing);
    assert!(!tasks.respond("nope", "{}").await.unwrap());
    assert_eq!(tasks.beat("nope").await.unwrap(), None);

    // Payloads past the limit are refused and change nothing.
    let refused = StateError::TaskPayload {
        limit: MAX_TASK_PAYLOAD_BYTES,
    };
    let big = "x".repeat(MAX_TASK_PAYLOAD_BYTES + 1);
    let mut oversized = task("big", HOUR);
    oversized.payload = Some(big.clone());
    assert_eq!(tasks.create(&oversized).await.unwrap_err(), refused);
    assert_eq!(tasks.get("big").await.unwrap(), None);
    tasks.create(&task("t2", HOUR)).await.unwrap();
    let err = tasks
        .transition("t2", TaskStatus::Completed, None, Some(&big))
        .await;
    assert_eq!(err.unwrap_err(), refused);
    assert_eq!(
        tasks.get("t2").await.unwrap().unwrap().status,
        TaskStatus::Working
    );
}

/// Records expire `ttl_ms` after their last write; reads do not refresh it.
/// In process the test's clock is paused (each sleep advances it exactly); in
/// Redis, whose clock runs, beats come at a seventh of the TTL and expiries
/// are waited for, so a stalled machine does not fail it.
async fn expiry(tasks: &TaskStore) {
    let ttl = Duration::from_millis(1050);
    tasks.create(&task("idle", ttl)).await.unwrap();
    tasks.create(&task("beaten", ttl)).await.unwrap();
    tasks.create(&task("waiting", ttl)).await.unwrap();
    tasks
        .transition("waiting", TaskStatus::InputRequired, None, None)
        .await
        .unwrap();
    for _ in 0..8 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert!(tasks.get("idle").await.is_ok());
        tasks.beat("beaten").await.unwrap().unwrap();
        assert!(tasks.respond("waiting", "{}").await.unwrap());
    }
    assert_eq!(tasks.get("idle").await.unwrap(), None);
    assert!(tasks.get("beaten").await.unwrap().is_some());
    assert!(tasks.get("waiting").await.unwrap().is_some());
    assert_eq!(tasks.beat("idle").await.unwrap(), None);
    // A finished task expires too; its id may be used again.
    tasks
        .transition("beaten", TaskStatus::Completed, None, None)
        .await
        .unwrap();
    gone(tasks, "beaten").await;
    tasks.create(&task("beaten", ttl)).await.unwrap();
}

/// Waits until the record `id` has expired (for at most a minute).
async fn gone(tasks: &TaskStore, id: &str) {
    for _ in 0..600 {
        if tasks.get(id).await.unwrap().is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the record `{id}` did not expire");
}

/// Of a completion and a cancel racing on two handles, exactly one applies,
/// and the other sees the winner's record.
async fn races(a: &TaskStore, b: &TaskStore) {
    for i in 0..40 {
        let id = format!("race-{i}");
        a.create(&task(&id, HOUR)).await.unwrap();
        let (done, cancelled) = tokio::join!(
            a.transition(&id, TaskStatus::Completed, None, Some("1")),
            b.transition(
                &id,
                TaskStatus::Cancelled,
                Some("cancelled by the client"),
                None
            ),
        );
        let winner = match (done.unwrap(), cancelled.unwrap()) {
            (Transition::Applied(won), Transition::Final(seen))
            | (Transition::Final(seen), Transition::Applied(won)) => {
                assert_eq!(won, seen);
                won
            }
            other => panic!("exactly one applies: {other:?}"),
        };
        assert!(winner.status.is_terminal());
        assert_eq!(b.get(&id).await.unwrap(), Some(winner));
    }
}

#[tokio::test(start_paused = true)]
async fn tasks_expire_in_process_on_the_paused_clock() {
    expiry(&StateStore::embedded().tasks()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_behave_alike_in_process_and_in_redis() {
    let local = StateStore::embedded();
    lifecycle(&local.tasks()).await;
    races(&local.tasks(), &local.tasks()).await;

    let redis = Redis::start();
    let store = shared(&redis, "tasks:");
    lifecycle(&store.tasks()).await;
    expiry(&store.tasks()).await;
    races(&store.tasks(), &shared(&redis, "tasks:").tasks()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_are_seen_by_every_replica_sharing_redis() {
    let redis = Redis::start();
    let (a, b) = (
        shared(&redis, "replicas:").tasks(),
        shared(&redis, "replicas:").tasks(),
    );
    // A runs the task; a poll on B sees it.
    let record = task("t", Duration::from_secs(60));
    a.create(&record).await.unwrap();
    assert_eq!(b.get("t").await.unwrap(), Some(record));
    assert!(matches!(
        b.create(&task("t", HOUR)).await,
        Err(StateError::TaskExists { .. })
    ));
    // A asks for input; B takes the client's answer; A's beat gets it.
    a.transition(
        "t",
        TaskStatus::InputRequired,
        None,
        Some(r#"{"approve":{}}"#),
    )
    .await
    .unwrap();
    assert_eq!(
        b.get("t").await.unwrap().unwrap().status,
        TaskStatus::InputRequired
    );
    assert!(
        b.respond("t", r#"{"approve":{"action":"accept"}}"#)
            .await
            .unwrap()
    );
    let beat = a.beat("t").await.unwrap().unwrap();
    assert_eq!(
        beat.responses.as_deref(),
        Some(r#"{"approve":{"action":"accept"}}"#)
    );
    a.transition("t", TaskStatus::Working, None, None)
        .await
        .unwrap();
    // A cancel on B reaches A's next beat; A's late result is refused.
    let cancelled = applied(
        b.transition("t", TaskStatus::Cancelled, None, None)
            .await
            .unwrap(),
    );
    assert_eq!(
        a.beat("t").await.unwrap().unwrap().status,
        TaskStatus::Cancelled
    );
    let late = a
        .transition("t", TaskStatus::Completed, None, Some("{}"))
        .await
        .unwrap();
    assert_eq!(late, Transition::Final(cancelled));

    // One hash per task, at PREFIXtask:ID, expiring within its TTL.
    let pttl: i64 = ask(&redis, "PTTL replicas:task:t")[1..].parse().unwrap();
    assert!((50_000..=60_000).contains(&pttl), "{pttl}");
    assert_eq!(ask(&redis, "HGET replicas:task:t status"), "$9");
    // Another prefix is another deployment: it sees nothing.
    assert_eq!(
        shared(&redis, "other:").tasks().get("t").await.unwrap(),
        None
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_in_a_stalled_redis_time_out() {
    let redis = Redis::start();
    let tasks = shared_with(&redis, "stall:", Duration::from_millis(300)).tasks();
    tasks.create(&task("t", HOUR)).await.unwrap();
    let stalled = redis.stall(Duration::from_secs(2));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let err = tasks.beat("t").await.unwrap_err();
    assert!(err.is_unavailable(), "{err:?}");
    tokio::task::spawn_blocking(move || stalled.join().unwrap())
        .await
        .unwrap();
}
