//! The state store's bus (issue 37) on a real `redis-server`: what one
//! store ("replica") publishes, another subscribed to the channel receives,
//! under its prefix only; the subscription is remade after Redis restarts;
//! an in-process store has no bus.

use std::time::{Duration, Instant};

use toolhost::state::StateStore;
use toolhost::state::bus::BusMessage;

use super::Redis;
use super::tasks::shared;

/// Publishes `payload` until a subscriber hears it (a subscription is made
/// on a task of its own, a little after `subscribe` returns).
async fn publish_until_heard(store: &StateStore, channel: &str, payload: &str) {
    let started = Instant::now();
    loop {
        match store.publish(channel, payload).await {
            Ok(heard) if heard > 0 => return,
            Ok(_) | Err(_) if started.elapsed() < Duration::from_secs(15) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => panic!("nobody subscribed to {channel} within 15 s: {other:?}"),
        }
    }
}

async fn next(messages: &mut tokio::sync::mpsc::Receiver<BusMessage>) -> BusMessage {
    tokio::time::timeout(Duration::from_secs(15), messages.recv())
        .await
        .expect("a message within 15 s")
        .expect("the subscription goes on")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_hear_each_other_on_the_bus_and_after_redis_restarts() {
    let mut redis = Redis::start();
    let (a, b) = (shared(&redis, "fleet:"), shared(&redis, "fleet:"));
    let other_fleet = shared(&redis, "other:");
    let mut heard = a
        .subscribe(vec!["rt:a".to_owned(), "sessions".to_owned()])
        .expect("Redis has a bus");
    publish_until_heard(&b, "rt:a", "first").await;
    let first = next(&mut heard).await;
    assert_eq!(
        first,
        BusMessage {
            channel: "rt:a".to_owned(),
            payload: "first".to_owned()
        }
    );
    // Who hears a channel (how a replica tells that another is gone).
    assert_eq!(b.listeners("rt:a").await.unwrap(), 1);
    assert_eq!(b.listeners("rt:b").await.unwrap(), 0);
    assert_eq!(other_fleet.listeners("rt:a").await.unwrap(), 0);
    // Another prefix is another fleet; an unsubscribed channel, nobody.
    assert_eq!(other_fleet.publish("rt:a", "not ours").await.unwrap(), 0);
    assert_eq!(b.publish("rt:b", "nobody's").await.unwrap(), 0);
    assert_eq!(b.publish("sessions", "to all").await.unwrap(), 1);
    assert_eq!(next(&mut heard).await.payload, "to all");

    // Redis restarts: the subscription is remade by itself.
    redis.stop();
    redis.restart();
    publish_until_heard(&b, "sessions", "after").await;
    // Only the publish that was heard arrives (those before it reached nobody).
    assert_eq!(next(&mut heard).await.payload, "after");

    // A dropped subscription is gone from Redis.
    drop(heard);
    let started = Instant::now();
    while b.publish("sessions", "gone").await.unwrap() > 0 || b.listeners("rt:a").await.unwrap() > 0
    {
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "still subscribed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn an_in_process_store_has_no_bus() {
    let store = StateStore::embedded();
    assert!(store.subscribe(vec!["sessions".to_owned()]).is_none());
    assert_eq!(store.publish("sessions", "x").await.unwrap(), 0);
    assert_eq!(store.listeners("sessions").await.unwrap(), 0);
}
