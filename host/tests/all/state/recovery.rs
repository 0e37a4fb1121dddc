//! Redis killed (SIGKILL) and started again on its port: the first call
//! that needs it afterwards works, whether or not calls failed while it was
//! down. The calls here are approvals, in the two shapes the MCP revisions
//! give them: a retry that carries the decision (2026-07-28's round trip:
//! the single-use record is the first thing it asks of Redis) and a call
//! whose approver answers while it waits (2025-11-25's elicitation: a
//! lookup of the record, then the record).

use std::time::Duration;

use serde_json::json;
use toolhost::toolset::{ApproveAll, Confirm, SinglePlugin, call};
use toolhost::{CallError, Context, ToolsetExt as _};

use super::{HOUR, Redis, Replica, approve, refused_as_used, replica};

/// `add` behind a `Confirm` layer keeping approvals in the engine's store.
pub(super) fn confirmed(replica: &Replica) -> Confirm<SinglePlugin> {
    Confirm::new(SinglePlugin::new(replica.echo.clone()))
        .require("add")
        .with_store(replica.engine.state().clone())
}

/// The sum `add` answered.
pub(super) fn sum(output: Result<toolhost::ToolOutput, CallError>) -> i64 {
    let output = output.unwrap();
    output.result.unwrap()["result"].as_i64().unwrap()
}

/// A retry of call `id` carrying its approval (the model's round trip).
pub(super) async fn approved_retry(
    replica: &Replica,
    id: &str,
) -> Result<toolhost::ToolOutput, CallError> {
    let args = json!({"a": 2, "b": 3});
    let cx = Context::new()
        .with_call_id(id)
        .with_decision(id, approve(args.clone()));
    confirmed(replica).invoke(&cx, "add", args).await
}

/// Call `id` approved while it waits (an elicitation answered yes).
pub(super) async fn approved_at_once(
    replica: &Replica,
    id: &str,
) -> Result<toolhost::ToolOutput, CallError> {
    let cx = Context::new().with_call_id(id);
    call(
        &confirmed(replica),
        &cx,
        "add",
        json!({"a": 2, "b": 3}),
        &ApproveAll,
    )
    .await
}

/// Two replicas, each with its connection made (an approval of each shape).
async fn connected(redis: &Redis, prefix: &str) -> (Replica, Replica) {
    let (a, b) = (
        replica(redis, prefix, HOUR).await,
        replica(redis, prefix, HOUR).await,
    );
    assert_eq!(sum(approved_retry(&a, "a-before").await), 5);
    assert_eq!(sum(approved_at_once(&b, "b-before").await), 5);
    (a, b)
}

/// Calls failed while Redis was down (a readiness probe's ping on each
/// replica); the first approval of either shape after it returns is
/// recorded and runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_approval_after_redis_returns_runs() {
    let mut redis = Redis::start();
    let (a, b) = connected(&redis, "back:").await;
    redis.stop();
    let (down_a, down_b) = tokio::join!(a.engine.state().ping(), b.engine.state().ping());
    assert!(down_a.is_err() && down_b.is_err(), "{down_a:?} {down_b:?}");
    // Long enough for a reconnect that gives up to have given up.
    tokio::time::sleep(Duration::from_secs(2)).await;
    redis.restart();
    assert_eq!(sum(approved_retry(&a, "a-after").await), 5);
    assert_eq!(sum(approved_at_once(&b, "b-after").await), 5);
    // Still single-use.
    refused_as_used(approved_retry(&a, "a-after").await);
}

/// Nothing needed Redis while it was down; the first approval of either
/// shape after it returns is recorded and runs (not sent on the connection
/// the dead server closed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_approval_after_an_unnoticed_restart_runs() {
    let mut redis = Redis::start();
    let (a, b) = connected(&redis, "quiet:").await;
    redis.stop();
    tokio::time::sleep(Duration::from_secs(2)).await;
    redis.restart();
    assert_eq!(sum(approved_retry(&a, "a-after").await), 5);
    assert_eq!(sum(approved_at_once(&b, "b-after").await), 5);
}

/// The store's epoch is one on every replica and across a reconnect to the
/// same data; a Redis that comes back empty has a new one (which the
/// replicas then agree on), so approvals sealed before it are refused
/// (`tests/cluster/test_cluster_faults.py`). In process, each store has its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_comes_back_empty_has_a_new_epoch() {
    let mut redis = Redis::start();
    let (a, b) = connected(&redis, "epoch:").await;
    let before = a.engine.state().epoch().await.unwrap();
    assert_eq!(before.len(), 32, "{before}");
    assert_eq!(b.engine.state().epoch().await.unwrap(), before);
    redis.stop();
    redis.restart();
    let after = b.engine.state().epoch().await.unwrap();
    assert_ne!(after, before, "Redis came back empty");
    assert_eq!(a.engine.state().epoch().await.unwrap(), after);
    assert_eq!(
        b.engine.state().epoch().await.unwrap(),
        after,
        "kept once made"
    );

    let (one, other) = (
        toolhost::state::StateStore::embedded(),
        toolhost::state::StateStore::embedded(),
    );
    let first = one.epoch().await.unwrap();
    assert_eq!(one.epoch().await.unwrap(), first);
    assert_ne!(other.epoch().await.unwrap(), first);
}
