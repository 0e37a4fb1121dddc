//! The Redis store: one hash per invocation (`PREFIXinv:ID`, the guest's keys
//! as fields `k:KEY` beside a byte counter `#bytes`, so one key carries the
//! whole invocation and its TTL), written by Lua scripts that check the
//! budget and write in one step; used nonces in [`claims`]; tasks in
//! [`tasks`]. Every operation is bounded by the timeout.
//!
//! Every facet (state, used approvals, tasks, the readiness ping) goes
//! through one [`ConnectionManager`], and so one reconnect policy
//! ([`manager_config`]): a restarted Redis is used again by the first call
//! that needs it, whichever facet it is.

mod bus;
mod claims;
mod sessions;
mod tasks;

use std::collections::HashMap;
use std::time::Duration;

use ::redis::aio::{ConnectionManager, ConnectionManagerConfig};
use ::redis::io::tcp::TcpSettings;
use ::redis::{Client, IntoConnectionInfo as _, ProtocolVersion, RedisError, Script};
use sha2::{Digest as _, Sha256};
use tokio::sync::OnceCell;

use super::{
    ENTRY_OVERHEAD, MAX_INVOCATION_BYTES, MAX_INVOCATION_KEYS, StateError, StateOptions, redact,
};

/// The byte counter's field; guest keys are `k:KEY`, so none can clash with it.
const BYTES_FIELD: &str = "#bytes";

/// `KEYS[1]` the invocation's hash; `ARGV` key, value, byte limit, key
/// limit, overhead per key, TTL in ms. Returns 0 (set), 1 (too many keys) or
/// 2 (too many bytes); refuses without changing anything.
const SET: &str = r"
local field = 'k:' .. ARGV[1]
local overhead = tonumber(ARGV[5])
local bytes = tonumber(redis.call('HGET', KEYS[1], '#bytes') or '0')
local old = redis.call('HGET', KEYS[1], field)
local freed = 0
if old then
  freed = #ARGV[1] + #old + overhead
else
  local count = redis.call('HLEN', KEYS[1])
  if count > 0 then count = count - 1 end
  if count >= tonumber(ARGV[4]) then return 1 end
end
local total = bytes - freed + #ARGV[1] + #ARGV[2] + overhead
if total > tonumber(ARGV[3]) then return 2 end
redis.call('HSET', KEYS[1], field, ARGV[2], '#bytes', total)
redis.call('PEXPIRE', KEYS[1], ARGV[6])
return 0
";

/// `KEYS[1]` the invocation's hash; `ARGV` key, overhead per key, TTL in
/// ms. Removes the key and its bytes; the hash goes when it holds no key.
const DELETE: &str = r"
local field = 'k:' .. ARGV[1]
local old = redis.call('HGET', KEYS[1], field)
if not old then return 0 end
redis.call('HDEL', KEYS[1], field)
if redis.call('HLEN', KEYS[1]) <= 1 then
  redis.call('DEL', KEYS[1])
else
  redis.call('HINCRBY', KEYS[1], '#bytes', -(#ARGV[1] + #old + tonumber(ARGV[2])))
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return 1
";

pub(crate) struct Redis {
    client: Client,
    /// Made at first use, inside the tokio runtime (it spawns tasks there).
    connection: OnceCell<ConnectionManager>,
    url: String,
    prefix: String,
    ttl: Duration,
    timeout: Duration,
    set: Script,
    delete: Script,
    /// The failed claims being undone ([`claims`]).
    undoing: claims::Undoing,
}

impl Redis {
    pub(crate) fn new(url: &str, options: &StateOptions) -> Result<Self, StateError> {
        // The client's own message may quote the URL, password and all.
        let not_a_url = |_| StateError::Settings {
            reason: format!(
                "`{}` is not a Redis URL (redis://[user:password@]host:port/db)",
                redact(url)
            ),
        };
        // TCP_NODELAY: without it, a command written while the previous
        // one's packet is unacknowledged waits for the server's delayed ACK
        // (~40 ms on Linux), and every state round trip took that long.
        let info = url.into_connection_info().map_err(not_a_url)?;
        // RESP3: the connection tells the manager when Redis closes it, so it
        // reconnects at once, not on the next call (which would fail on the
        // dead connection: "broken pipe").
        let settings = info.redis_settings().clone();
        let info = info
            .set_redis_settings(settings.set_protocol(ProtocolVersion::RESP3))
            .set_tcp_settings(TcpSettings::default().set_nodelay(true));
        let client = Client::open(info).map_err(not_a_url)?;
        Ok(Self {
            client,
            connection: OnceCell::new(),
            url: url.to_owned(),
            prefix: options.prefix.clone(),
            ttl: options.ttl,
            timeout: options.timeout,
            set: Script::new(SET),
            delete: Script::new(DELETE),
            undoing: claims::Undoing::default(),
        })
    }

    pub(crate) fn url_redacted(&self) -> String {
        redact(&self.url)
    }

    fn invocation_key(&self, invocation: &str) -> String {
        format!("{}inv:{invocation}", self.prefix)
    }

    fn nonce_key(&self, nonce: &str) -> String {
        let digest = Sha256::digest(nonce.as_bytes());
        format!("{}used:{}", self.prefix, crate::hex::hex(&digest))
    }

    fn ttl_ms(&self) -> u64 {
        u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX)
    }

    /// Runs `op` on the connection, within the timeout, in a span named
    /// after `operation`.
    async fn run<T, F>(
        &self,
        operation: &'static str,
        op: impl FnOnce(ConnectionManager) -> F,
    ) -> Result<T, StateError>
    where
        F: Future<Output = Result<T, RedisError>>,
    {
        let kind = |error: &StateError| match error {
            StateError::Timeout { .. } => "timeout",
            _ => "unavailable",
        };
        crate::spans::within(crate::spans::store(operation), self.run_now(op), kind).await
    }

    async fn run_now<T, F>(&self, op: impl FnOnce(ConnectionManager) -> F) -> Result<T, StateError>
    where
        F: Future<Output = Result<T, RedisError>>,
    {
        let limit = self.timeout;
        let work = async {
            let connection = self
                .connection
                .get_or_try_init(|| async {
                    ConnectionManager::new_lazy_with_config(
                        self.client.clone(),
                        manager_config(limit),
                    )
                })
                .await
                .map_err(|e| unavailable(e, limit))?
                .clone();
            op(connection).await.map_err(|e| unavailable(e, limit))
        };
        match tokio::time::timeout(limit, work).await {
            Ok(result) => result,
            Err(_elapsed) => Err(StateError::Timeout { limit }),
        }
    }

    pub(crate) async fn ping(&self) -> Result<(), StateError> {
        self.run("ping", |mut c| async move {
            ::redis::cmd("PING").query_async::<String>(&mut c).await
        })
        .await
        .map(drop)
    }

    pub(crate) async fn get(
        &self,
        invocation: &str,
        key: &str,
    ) -> Result<Option<String>, StateError> {
        let hash = self.invocation_key(invocation);
        let field = format!("k:{key}");
        self.run("get", |mut c| async move {
            ::redis::cmd("HGET")
                .arg(hash)
                .arg(field)
                .query_async(&mut c)
                .await
        })
        .await
    }

    pub(crate) async fn set(
        &self,
        invocation: &str,
        key: &str,
        value: &str,
    ) -> Result<(), StateError> {
        let hash = self.invocation_key(invocation);
        let ttl = self.ttl_ms();
        let outcome: i64 = self
            .run("set", |mut c| async move {
                self.set
                    .key(hash)
                    .arg(key)
                    .arg(value)
                    .arg(MAX_INVOCATION_BYTES)
                    .arg(MAX_INVOCATION_KEYS)
                    .arg(ENTRY_OVERHEAD)
                    .arg(ttl)
                    .invoke_async(&mut c)
                    .await
            })
            .await?;
        match outcome {
            0 => Ok(()),
            1 => Err(StateError::Keys {
                limit: MAX_INVOCATION_KEYS,
            }),
            _ => Err(StateError::Bytes {
                limit: MAX_INVOCATION_BYTES,
            }),
        }
    }

    pub(crate) async fn delete(&self, invocation: &str, key: &str) -> Result<(), StateError> {
        let hash = self.invocation_key(invocation);
        let ttl = self.ttl_ms();
        self.run("delete", |mut c| async move {
            self.delete
                .key(hash)
                .arg(key)
                .arg(ENTRY_OVERHEAD)
                .arg(ttl)
                .invoke_async::<i64>(&mut c)
                .await
        })
        .await
        .map(drop)
    }

    pub(crate) async fn end(&self, invocation: &str) -> Result<(), StateError> {
        let hash = self.invocation_key(invocation);
        self.run("end_invocation", |mut c| async move {
            ::redis::cmd("DEL")
                .arg(hash)
                .query_async::<i64>(&mut c)
                .await
        })
        .await
        .map(drop)
    }

    pub(crate) async fn snapshot(
        &self,
        invocation: &str,
    ) -> Result<HashMap<String, String>, StateError> {
        let all = self
            .hash("snapshot", self.invocation_key(invocation))
            .await?;
        Ok(all
            .into_iter()
            .filter(|(field, _)| field != BYTES_FIELD)
            .filter_map(|(field, value)| Some((field.strip_prefix("k:")?.to_owned(), value)))
            .collect())
    }

    /// Every field of the hash `key` (`HGETALL`: empty if there is none).
    async fn hash(
        &self,
        operation: &'static str,
        key: String,
    ) -> Result<HashMap<String, String>, StateError> {
        self.run(operation, |mut c| async move {
            ::redis::cmd("HGETALL").arg(key).query_async(&mut c).await
        })
        .await
    }

    /// Stores the hash `key` with `fields`, expiring `ttl_ms` after, unless
    /// it exists: true if stored (one atomic step, [`CREATE_HASH`]).
    async fn create_hash(
        &self,
        operation: &'static str,
        key: String,
        ttl_ms: u64,
        fields: Vec<(&'static str, String)>,
    ) -> Result<bool, StateError> {
        let stored: i64 = self
            .run(operation, |mut c| async move {
                let mut invocation = CREATE_HASH.key(key);
                invocation.arg(ttl_ms);
                for (name, value) in fields {
                    invocation.arg(name).arg(value);
                }
                invocation.invoke_async(&mut c).await
            })
            .await?;
        Ok(stored == 1)
    }
}

/// `KEYS[1]` a hash; `ARGV` its TTL in ms, then field/value pairs. Returns 1
/// (stored) or 0 (the key exists: nothing changes).
static CREATE_HASH: std::sync::LazyLock<::redis::Script> = std::sync::LazyLock::new(|| {
    ::redis::Script::new(
        r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
",
    )
});

/// How the one connection is made and remade, `limit` being the timeout of
/// one operation.
///
/// A reconnect never gives up: it tries again every 100-200 ms (plus
/// jitter) until Redis answers. The manager keeps the outcome of its last
/// reconnect for the next call; one that gave up while Redis was down
/// failed the first call after Redis came back ("Connection refused"), and
/// only that call's failure started a new one. Now the calls made while
/// Redis is down wait on the live attempt, within their timeout
/// ([`StateError::Timeout`]), and the first call after it is back finds the
/// new connection. The attempts stop when one succeeds (one background task
/// per store, also after the store is dropped).
fn manager_config(limit: Duration) -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_connection_timeout(Some(limit))
        .set_response_timeout(Some(limit))
        .set_min_delay(Duration::from_millis(100))
        .set_max_delay(Duration::from_millis(200))
        .set_number_of_retries(usize::MAX)
}

fn unavailable(error: RedisError, limit: Duration) -> StateError {
    if error.is_timeout() {
        return StateError::Timeout { limit };
    }
    StateError::Unavailable {
        reason: error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without TCP_NODELAY a state read took ~40 ms (Nagle's algorithm and
    /// the server's delayed ACK), not ~0.1 ms (the `cluster` bench).
    #[test]
    fn connections_send_at_once() {
        let redis = Redis::new("redis://:pw@127.0.0.1:6379/2", &StateOptions::default()).unwrap();
        let info = redis.client.get_connection_info();
        assert!(info.tcp_settings().nodelay());
        // Everything else the URL says is kept.
        assert_eq!(info.redis_settings().db(), 2);
        assert_eq!(info.redis_settings().password(), Some("pw"));
        // RESP3, so a closed connection is reported and remade at once.
        assert_eq!(info.redis_settings().protocol(), ProtocolVersion::RESP3);
    }
}
