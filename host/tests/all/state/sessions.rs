//! MCP sessions in the state store (issue 37): the same lifecycle on an
//! in-process store and on a real `redis-server`; two stores sharing Redis
//! ("replicas") take up each other's sessions, and only the owner ends one;
//! a session kept touched lives on, an idle one expires; Redis never holds
//! a session's ID.

use std::time::Duration;

use toolhost::state::StateStore;
use toolhost::state::sessions::{Ended, SessionRecord, SessionStore, Set, Setting};

use super::Redis;
use super::tasks::{ask, shared};

const HOUR: Duration = Duration::from_secs(3600);

const INIT: &str =
    r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}"#;

/// What any store does: create once, read, touch, and end by the owner only.
async fn lifecycle(a: &SessionStore, b: &SessionStore) {
    let record = SessionRecord::new(INIT, "alice");
    assert!(a.create("s-1", &record, HOUR).await.unwrap());
    // Another replica sees it, and cannot make it again.
    assert_eq!(b.get("s-1").await.unwrap(), Some(record.clone()));
    let bob = SessionRecord::new(INIT, "bob");
    assert!(!b.create("s-1", &bob, HOUR).await.unwrap());
    assert_eq!(a.get("s-1").await.unwrap().unwrap().owner, "alice");
    assert!(b.touch("s-1", HOUR).await.unwrap());
    // Only its owner ends it; once.
    assert_eq!(b.end("s-1", "bob").await.unwrap(), Ended::NotOwner);
    assert_eq!(a.get("s-1").await.unwrap(), Some(record));
    assert_eq!(b.end("s-1", "alice").await.unwrap(), Ended::Ended);
    assert_eq!(a.end("s-1", "alice").await.unwrap(), Ended::Missing);
    assert_eq!(a.get("s-1").await.unwrap(), None);
    assert!(!a.touch("s-1", HOUR).await.unwrap());
    assert_eq!(a.get("never").await.unwrap(), None);
    // An ended session's ID may be used again.
    assert!(b.create("s-1", &bob, HOUR).await.unwrap());
}

/// What a client sets in a session, kept for every replica: a level, and
/// subscriptions within a bound; nothing for a session that is gone; ending
/// the session ends them.
async fn settings(a: &SessionStore, b: &SessionStore) {
    let record = SessionRecord::new(INIT, "alice");
    assert!(a.create("set", &record, HOUR).await.unwrap());
    assert_eq!(
        a.set("set", Setting::LogLevel("info")).await.unwrap(),
        Set::Set
    );
    let subscribe = |uri| Setting::Subscribe { uri, limit: 2 };
    for uri in ["test://b", "test://a", "test://b"] {
        assert_eq!(b.set("set", subscribe(uri)).await.unwrap(), Set::Set);
    }
    assert_eq!(
        b.set("set", subscribe("test://c")).await.unwrap(),
        Set::Full
    );
    let kept = a.get("set").await.unwrap().unwrap();
    assert_eq!(kept.log_level.as_deref(), Some("info"));
    assert_eq!(kept.subscriptions, ["test://a", "test://b"]);
    assert_eq!(kept.owner, "alice");
    assert_eq!(
        a.set("set", Setting::Unsubscribe("test://a"))
            .await
            .unwrap(),
        Set::Set
    );
    assert_eq!(b.set("set", subscribe("test://c")).await.unwrap(), Set::Set);
    assert_eq!(
        a.set("set", Setting::LogLevel("debug")).await.unwrap(),
        Set::Set
    );
    let kept = b.get("set").await.unwrap().unwrap();
    assert_eq!(kept.log_level.as_deref(), Some("debug"));
    assert_eq!(kept.subscriptions, ["test://b", "test://c"]);
    assert_eq!(a.end("set", "alice").await.unwrap(), Ended::Ended);
    // A setting never brings an ended session back.
    assert_eq!(
        b.set("set", Setting::LogLevel("info")).await.unwrap(),
        Set::Missing
    );
    assert_eq!(a.get("set").await.unwrap(), None);
}

/// A session touched within its idle timeout lives on; one left idle
/// expires, and is then gone for touches too. In process the test's clock
/// is paused; in Redis, touches come at a seventh of the timeout and the
/// expiry is waited for, so a stalled machine does not fail it.
async fn expiry(sessions: &SessionStore) {
    let idle = Duration::from_millis(1050);
    let record = SessionRecord::new(INIT, "alice");
    assert!(sessions.create("idle", &record, idle).await.unwrap());
    assert!(sessions.create("busy", &record, idle).await.unwrap());
    for _ in 0..8 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert!(sessions.get("idle").await.is_ok());
        assert!(sessions.touch("busy", idle).await.unwrap());
    }
    assert!(sessions.get("busy").await.unwrap().is_some());
    for _ in 0..600 {
        if sessions.get("idle").await.unwrap().is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(sessions.get("idle").await.unwrap(), None);
    assert!(!sessions.touch("idle", idle).await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn sessions_expire_in_process_on_the_paused_clock() {
    expiry(&StateStore::embedded().sessions()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_behave_alike_in_process_and_in_redis() {
    let local = StateStore::embedded();
    lifecycle(&local.sessions(), &local.sessions()).await;
    settings(&local.sessions(), &local.sessions()).await;

    let redis = Redis::start();
    let (a, b) = (shared(&redis, "sessions:"), shared(&redis, "sessions:"));
    lifecycle(&a.sessions(), &b.sessions()).await;
    settings(&a.sessions(), &b.sessions()).await;
    expiry(&a.sessions()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_keeps_a_digest_of_the_session_id_and_an_idle_timeout() {
    let redis = Redis::start();
    let sessions = shared(&redis, "ids:").sessions();
    let id = "mcp-secret-session-id";
    let record = SessionRecord::new(INIT, "alice");
    assert!(sessions.create(id, &record, HOUR).await.unwrap());
    // One key, named by a digest: the bearer secret is nowhere in Redis.
    let keys = ask(&redis, "KEYS ids:sess:*");
    assert_eq!(keys, "*1", "one session key: {keys}");
    assert_eq!(ask(&redis, &format!("KEYS *{id}*")), "*0");
    // It expires on its own: an idle timeout, refreshed by a touch.
    let pttl = ask(
        &redis,
        "EVAL \"local k = redis.call('KEYS', 'ids:sess:*') return redis.call('PTTL', k[1])\" 0",
    );
    let ttl: i64 = pttl.trim_start_matches(':').parse().unwrap();
    assert!(ttl > 0 && ttl <= 3_600_000, "PTTL {ttl}");
}
