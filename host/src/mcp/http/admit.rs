//! Which connections the HTTP server takes: at most `max_connections` in
//! all, and at most `max_connections_per_peer` from one address, so one
//! client (a slowloris holding connections open with a byte now and then)
//! cannot take every slot. Behind a proxy the peer is the proxy: give it
//! every slot. A connection over either cap gets a short 503 and is closed.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::net::TcpStream;

/// The connections each peer address holds now.
pub(super) struct Peers {
    limit: usize,
    held: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

/// One connection of a peer; given back when dropped.
pub(super) struct Share {
    ip: IpAddr,
    held: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

fn lock(held: &Mutex<HashMap<IpAddr, usize>>) -> MutexGuard<'_, HashMap<IpAddr, usize>> {
    // Each operation is one count update: a poisoned lock holds consistent data.
    held.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Peers {
    /// At most `limit` connections (at least 1) from one address.
    pub(super) fn new(limit: usize) -> Self {
        Self {
            limit: limit.max(1),
            held: Arc::default(),
        }
    }

    pub(super) fn limit(&self) -> usize {
        self.limit
    }

    /// A connection of `ip`, unless it holds its share already.
    pub(super) fn take(&self, ip: IpAddr) -> Option<Share> {
        let mut held = lock(&self.held);
        let count = held.entry(ip).or_default();
        if *count >= self.limit {
            return None;
        }
        *count += 1;
        Some(Share {
            ip,
            held: Arc::clone(&self.held),
        })
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        let mut held = lock(&self.held);
        if let Some(count) = held.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.ip);
            }
        }
    }
}

/// Which cap a refused connection is over.
#[derive(Debug, Clone, Copy)]
pub(super) enum Over {
    /// `max_connections`: this many are open.
    All(usize),
    /// `max_connections_per_peer`: its address holds this many.
    Peer(usize),
}

/// Refuses connections over a cap: a short 503, then close. Logs the first
/// refusal of a burst and then at most one line a second, with the count.
#[derive(Default)]
pub(super) struct Refusals {
    unlogged: u64,
    logged_at: Option<Instant>,
    /// Refusals still draining what their client sent.
    draining: Arc<AtomicU64>,
}

/// The answer to a connection over `max_connections`.
const REFUSAL: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\ncontent-type: text/plain\r\nretry-after: 1\r\ncontent-length: 57\r\n\r\ntoo many connections to this MCP server; try again later\n";

/// The answer to a connection over `max_connections_per_peer`.
const PEER_REFUSAL: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\ncontent-type: text/plain\r\nretry-after: 1\r\ncontent-length: 76\r\n\r\ntoo many connections from your address to this MCP server; close some first\n";

/// Refusals that may wait (briefly) for their client's request at once.
const DRAINING: u64 = 32;

impl Refusals {
    pub(super) fn refuse(&mut self, stream: TcpStream, addr: SocketAddr, over: Over) {
        // Without waiting: a new socket's send buffer is empty.
        let _ = stream.try_write(match over {
            Over::All(_) => REFUSAL,
            Over::Peer(_) => PEER_REFUSAL,
        });
        if self.draining.load(Ordering::Relaxed) < DRAINING {
            // Read what the client sent before closing: closing on unread
            // bytes resets the connection, and the client might miss the 503.
            let draining = self.draining.clone();
            draining.fetch_add(1, Ordering::Relaxed);
            tokio::spawn(async move {
                let _ = tokio::time::timeout(Duration::from_millis(500), drain(stream)).await;
                draining.fetch_sub(1, Ordering::Relaxed);
            });
        }
        self.unlogged += 1;
        let now = Instant::now();
        if self
            .logged_at
            .is_none_or(|at| now.duration_since(at) >= Duration::from_secs(1))
        {
            let refused = self.unlogged;
            match over {
                Over::All(cap) => tracing::warn!(
                    %addr,
                    refused,
                    "refused HTTP connections: {cap} are open, the most allowed (max_connections)"
                ),
                Over::Peer(cap) => tracing::warn!(
                    %addr,
                    refused,
                    "refused HTTP connections: {} holds {cap}, the most one address may \
                     (max_connections_per_peer; behind a proxy, set it to max_connections)",
                    addr.ip()
                ),
            }
            self.unlogged = 0;
            self.logged_at = Some(now);
        }
    }
}

/// Closes the sending side, then reads until the client closes its own.
async fn drain(mut stream: TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let _ = stream.shutdown().await;
    let mut buffer = [0u8; 4096];
    while matches!(stream.read(&mut buffer).await, Ok(n) if n > 0) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_address_holds_its_share_and_gets_it_back() {
        let peers = Peers::new(2);
        let (one, other): (IpAddr, IpAddr) =
            ("127.0.0.2".parse().unwrap(), "127.0.0.1".parse().unwrap());
        let first = peers.take(one).unwrap();
        let _second = peers.take(one).unwrap();
        assert!(peers.take(one).is_none(), "over its share");
        assert!(
            peers.take(other).is_some(),
            "another address is not held back"
        );
        drop(first);
        assert!(
            peers.take(one).is_some(),
            "a closed connection gives its share back"
        );
    }

    #[test]
    fn the_refusals_say_their_length() {
        for answer in [REFUSAL, PEER_REFUSAL] {
            let text = std::str::from_utf8(answer).unwrap();
            let (head, body) = text.split_once("\r\n\r\n").unwrap();
            assert!(
                head.contains(&format!("content-length: {}", body.len())),
                "{text}"
            );
        }
    }
}
