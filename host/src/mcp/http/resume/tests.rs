//! The bookkeeping of resumable streams: who may resume, what is kept.

use super::*;
use tokio_util::sync::CancellationToken;

fn streams() -> Streams {
    Streams::new(Arc::new(Metrics::new()), None)
}

fn event(id: &str) -> ServerSseMessage {
    ServerSseMessage::priming(id, RETRY)
}

/// A stream of session `session`, request `request`, kept in `streams`,
/// owned by `owner`; and the token its call's hangup cancels.
fn kept(
    streams: &Streams,
    session: &str,
    request: u64,
    owner: &str,
) -> (Arc<Replay>, CancellationToken) {
    let token = CancellationToken::new();
    let key: Key = (session.into(), request);
    let replay = Arc::new(Replay::new(
        Some(key.clone()),
        Some(Hangup::new(token.clone(), "test")),
        Some(("https://issuer".to_owned(), owner.to_owned())),
        String::new(),
    ));
    streams.insert(key, replay.clone());
    (replay, token)
}

fn resume_request(session: &str, last: &str, who: Option<&str>) -> axum::extract::Request {
    let mut request = axum::http::Request::get("/mcp")
        .header("mcp-session-id", session)
        .header("last-event-id", last)
        .body(axum::body::Body::empty())
        .expect("a valid request");
    if let Some(who) = who {
        request
            .extensions_mut()
            .insert(Arc::new(Principal::new("https://issuer", who)));
    }
    request
}

#[test]
fn only_the_caller_that_made_a_request_resumes_its_stream() {
    let streams = streams();
    kept(&streams, "s1", 7, "alice");
    let refused = |last: &str, who| refuse_foreign(&streams, &resume_request("s1", last, who));
    assert!(refused("3/7", Some("alice")).is_none());
    let response = refused("3/7", Some("mallory")).expect("refused");
    assert_eq!(response.status(), axum::http::StatusCode::NOT_FOUND);
    assert!(refused("3/7", None).is_some());
    // Not a kept stream: rmcp answers it (an empty stream).
    assert!(refused("3/8", Some("mallory")).is_none());
    assert!(refused("3", Some("mallory")).is_none());
}

#[test]
fn a_stream_keeps_its_newest_events_within_its_bounds() {
    let replay = Replay::new(None, None, None, String::new());
    for index in 0..MAX_EVENTS + 100 {
        replay.push(event(&format!("{index}/0")));
    }
    let state = replay.lock();
    assert_eq!(state.events.len(), MAX_EVENTS);
    assert_eq!(state.events.front().map(|e| e.0), Some(100));
    assert_eq!(state.events.back().map(|e| e.0), Some(MAX_EVENTS + 99));
}

#[test]
fn a_session_keeps_a_bounded_number_of_streams_nobody_reads() {
    let streams = streams();
    let mut all = Vec::new();
    for request in 0..=MAX_DETACHED_PER_SESSION as u64 {
        let (replay, token) = kept(&streams, "s1", request, "alice");
        replay.lock().detached_at = Some(Instant::now());
        all.push((replay, token));
    }
    // Another session's stream counts for its own session only.
    let (other, other_token) = kept(&streams, "s2", 0, "bob");
    other.lock().detached_at = Some(Instant::now());
    streams.trim();
    // The oldest of s1 is given up, its call cancelled; the rest stay.
    assert!(all[0].1.is_cancelled());
    assert!(streams.get(&("s1".into(), 0)).is_none());
    assert!(all[1..].iter().all(|(_, token)| !token.is_cancelled()));
    assert_eq!(streams.lock().len(), MAX_DETACHED_PER_SESSION + 1);
    assert!(!other_token.is_cancelled());
}

#[test]
fn a_session_that_ends_gives_up_its_streams() {
    let streams = streams();
    let (_, token) = kept(&streams, "s1", 0, "alice");
    let (_, kept_token) = kept(&streams, "s2", 0, "alice");
    streams.close_session(&"s1".into());
    assert!(token.is_cancelled());
    assert!(!kept_token.is_cancelled());
    assert!(streams.get(&("s2".into(), 0)).is_some());
}

#[test]
fn event_ids_name_a_request_stream_or_the_sessions_own() {
    assert_eq!(parse_event_id("3/7"), Some((3, Some(7))));
    assert_eq!(parse_event_id("12"), Some((12, None)));
    assert_eq!(parse_event_id("x/7"), None);
    assert_eq!(parse_event_id("3/"), None);
    assert_eq!(parse_event_id(""), None);
}
