//! Tokens already verified: a client sends the same token with every
//! request, and checking its signature again each time costs far more than
//! the rest of a call (an ES256 verification is ~0.3 ms). A verified token's
//! principal is kept under a digest of the token (never the token itself)
//! until the token expires or the issuer's keys are due for a refresh,
//! whichever is first, so a key the issuer withdrew stops working within one
//! key-cache period. Bounded: past the capacity, expired entries go, then
//! all.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sha2::{Digest as _, Sha256};

use crate::toolset::Principal;

/// The most tokens kept.
const CAPACITY: usize = 4096;

struct Entry {
    principal: Principal,
    /// Unix seconds after which the token is no longer valid (leeway included).
    expires: u64,
    verified: Instant,
}

pub(super) struct Verified {
    entries: Mutex<HashMap<[u8; 32], Entry>>,
    max_age: Duration,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn key(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl Verified {
    /// Keeps verified tokens at most `max_age` (the key cache's period).
    pub(super) fn new(max_age: Duration) -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
            max_age,
        }
    }

    /// The principal of `token`, if it was verified and is still valid.
    pub(super) fn get(&self, token: &str) -> Option<Principal> {
        let entries = self.entries.lock().ok()?;
        let entry = entries.get(&key(token))?;
        (now() <= entry.expires && entry.verified.elapsed() < self.max_age)
            .then(|| entry.principal.clone())
    }

    /// Remembers that `token`, valid until `expires` (Unix seconds, leeway
    /// included), is `principal`.
    pub(super) fn put(&self, token: &str, principal: &Principal, expires: u64) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        if entries.len() >= CAPACITY {
            let now = now();
            let max_age = self.max_age;
            entries.retain(|_, e| now <= e.expires && e.verified.elapsed() < max_age);
            if entries.len() >= CAPACITY {
                entries.clear();
            }
        }
        entries.insert(
            key(token),
            Entry {
                principal: principal.clone(),
                expires,
                verified: Instant::now(),
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verified_tokens_are_kept_until_they_expire_and_never_past_the_bound() {
        let verified = Verified::new(Duration::from_secs(60));
        let ana = Principal::new("idp", "ana");
        verified.put("t1", &ana, now() + 60);
        verified.put("expired", &ana, now().saturating_sub(1));
        assert_eq!(verified.get("t1"), Some(ana.clone()));
        assert_eq!(verified.get("expired"), None);
        assert_eq!(verified.get("t2"), None);
        let stale = Verified::new(Duration::ZERO);
        stale.put("t1", &ana, now() + 60);
        assert_eq!(stale.get("t1"), None, "past the key cache's period");
        for n in 0..CAPACITY + 10 {
            verified.put(&format!("token-{n}"), &ana, now() + 60);
        }
        assert!(verified.entries.lock().unwrap().len() <= CAPACITY);
    }
}
