//! Redis answering late: a loopback proxy in front of it holds back every
//! answer, so commands are applied at once and their answers arrive after
//! the replica's timeout (`[state] timeout_ms`). An approval whose record is
//! not confirmed in time does not run, says so, and stays valid: the record
//! that reached Redis anyway is undone, so the retry of the same approved
//! call runs it, once. Both approval shapes (see [`super::recovery`]).

use std::io::{Read as _, Write as _};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use toolhost::state::StateError;
use toolhost::{CallError, ToolOutput};

use super::recovery::{approved_at_once, approved_retry, sum};
use super::{HOUR, Redis, refused_as_used, replica, replica_at};

/// A TCP proxy on a free loopback port to `upstream`, passing requests on at
/// once and each answer after the delay set when it was read. Stops
/// accepting when dropped.
struct DelayingProxy {
    port: u16,
    delay_ms: Arc<AtomicU64>,
    stopped: Arc<AtomicBool>,
}

impl DelayingProxy {
    fn start(upstream: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let delay_ms = Arc::new(AtomicU64::new(0));
        let stopped = Arc::new(AtomicBool::new(false));
        let (delay, stop) = (Arc::clone(&delay_ms), Arc::clone(&stopped));
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { break };
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    continue;
                };
                relay(client, server, Arc::clone(&delay));
            }
        });
        Self {
            port,
            delay_ms,
            stopped,
        }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Answers read from now on are held back `delay`.
    fn delay(&self, delay: Duration) {
        let ms = u64::try_from(delay.as_millis()).unwrap();
        self.delay_ms.store(ms, Ordering::SeqCst);
    }
}

impl Drop for DelayingProxy {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        // Wakes the accepting thread so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Copies `client` to `server` as it comes, and `server` to `client` with
/// each chunk held back the delay in force when it was read, in order.
fn relay(client: TcpStream, server: TcpStream, delay: Arc<AtomicU64>) {
    let (mut requests, mut upstream) = (client.try_clone().unwrap(), server.try_clone().unwrap());
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut requests, &mut upstream);
        let _ = upstream.shutdown(Shutdown::Write);
    });
    let (held, due) = mpsc::channel::<(Instant, Vec<u8>)>();
    let mut answers = server;
    std::thread::spawn(move || {
        let mut buffer = [0; 16 * 1024];
        while let Ok(n @ 1..) = answers.read(&mut buffer) {
            let at = Instant::now() + Duration::from_millis(delay.load(Ordering::SeqCst));
            if held.send((at, buffer[..n].to_vec())).is_err() {
                break;
            }
        }
    });
    let mut client = client;
    std::thread::spawn(move || {
        for (at, chunk) in due {
            std::thread::sleep(at.saturating_duration_since(Instant::now()));
            if client.write_all(&chunk).is_err() {
                break;
            }
        }
        let _ = client.shutdown(Shutdown::Both);
    });
}

/// The call did not run because its approval could not be recorded, and
/// the answer says so.
fn not_recorded(result: Result<ToolOutput, CallError>) {
    match &result {
        Err(
            err @ CallError::State {
                reason: StateError::Unrecorded { reason, .. },
                ..
            },
        ) => {
            assert!(matches!(**reason, StateError::Timeout { .. }), "{reason:?}");
            let text = err.to_string();
            assert!(
                text.contains("did not run") && text.contains("approval stays valid"),
                "{text}"
            );
            assert!(err.is_retryable());
        }
        other => panic!("an approval not recorded in time: {other:?}"),
    }
}

/// Tries `attempt` until it is not a state-store error (answers still held
/// back, or an undo still unconfirmed, ask to retry), for at most 20 s.
async fn retried<F, Fut>(mut attempt: F) -> Result<ToolOutput, CallError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<ToolOutput, CallError>>,
{
    let started = Instant::now();
    loop {
        match attempt().await {
            Err(CallError::State { .. }) if started.elapsed() < Duration::from_secs(20) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            other => return other,
        }
    }
}

/// Without the undo, the retry found the record the late `SET` left and was
/// refused as "already decided": the user approved, and nothing ever ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_not_recorded_in_time_stays_valid_and_runs_once() {
    let redis = Redis::start();
    let proxy = DelayingProxy::start(redis.port);
    let late = replica_at(proxy.url(), "late:", HOUR, Duration::from_millis(300)).await;
    let direct = replica(&redis, "late:", HOUR).await;
    assert_eq!(sum(approved_retry(&late, "warm").await), 5);

    proxy.delay(Duration::from_secs(2));
    not_recorded(approved_retry(&late, "retried").await);
    not_recorded(approved_at_once(&late, "answered").await);
    proxy.delay(Duration::ZERO);

    assert_eq!(sum(retried(|| approved_retry(&late, "retried")).await), 5);
    assert_eq!(
        sum(retried(|| approved_at_once(&late, "answered")).await),
        5
    );
    // Each ran once: used now, on this replica and on the other.
    for id in ["retried", "answered"] {
        refused_as_used(approved_retry(&late, id).await);
        refused_as_used(approved_retry(&direct, id).await);
    }
}
