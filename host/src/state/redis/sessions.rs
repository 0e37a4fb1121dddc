//! Sessions in Redis: one hash per session, `PREFIXsess:DIGEST` (a digest of
//! the session ID, never the ID), with the fields below, expiring an idle
//! timeout after its creation or last touch. Creating (the store's
//! `CREATE_HASH`), setting and ending are Lua scripts, each one atomic step:
//! of two replicas creating one session exactly one stores it, a setting
//! never brings an ended session back, and only the owner's end deletes it.

use std::collections::HashMap;
use std::sync::LazyLock;

use ::redis::Script;

use super::Redis;
use crate::state::StateError;
use crate::state::sessions::{Ended, SessionRecord, Set, Setting};

/// The hash's fields.
mod field {
    pub(super) const INITIALIZE: &str = "initialize";
    pub(super) const OWNER: &str = "owner";
    pub(super) const CREATED_AT: &str = "created_at";
    pub(super) const LOG_LEVEL: &str = "log_level";
    /// Before each subscribed resource's URI, one field each (`SET` counts
    /// them by this prefix).
    pub(super) const SUBSCRIBED: &str = "sub:";
}

/// `KEYS[1]` the session's hash; `ARGV[1]` a field, `ARGV[2]` its value
/// (none: the field is deleted), `ARGV[3]` (a subscription's) the most
/// subscriptions the session may have unless it has this one. Returns 1
/// (done), 0 (no such session) or -1 (full: nothing changed).
static SET: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if not ARGV[2] then
  redis.call('HDEL', KEYS[1], ARGV[1])
  return 1
end
if ARGV[3] and redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  local subscriptions = 0
  for _, name in ipairs(redis.call('HKEYS', KEYS[1])) do
    if string.sub(name, 1, 4) == 'sub:' then subscriptions = subscriptions + 1 end
  end
  if subscriptions >= tonumber(ARGV[3]) then return -1 end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
",
    )
});

/// `KEYS[1]` the session's hash; `ARGV[1]` the principal ending it. Returns
/// 1 (its owner's: deleted), 0 (no such session) or -1 (another's: kept).
static END: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner then return 0 end
if owner ~= ARGV[1] then return -1 end
redis.call('DEL', KEYS[1])
return 1
",
    )
});

impl Redis {
    fn session_key(&self, digest: &str) -> String {
        format!("{}sess:{digest}", self.prefix)
    }

    pub(crate) async fn create_session(
        &self,
        digest: &str,
        record: &SessionRecord,
        idle_ms: u64,
    ) -> Result<bool, StateError> {
        let fields = vec![
            (field::INITIALIZE, record.initialize.clone()),
            (field::OWNER, record.owner.clone()),
            (field::CREATED_AT, record.created_at_ms.to_string()),
        ];
        self.create_hash("create_session", self.session_key(digest), idle_ms, fields)
            .await
    }

    pub(crate) async fn get_session(
        &self,
        digest: &str,
    ) -> Result<Option<SessionRecord>, StateError> {
        let fields = self.hash("get_session", self.session_key(digest)).await?;
        if fields.is_empty() {
            return Ok(None);
        }
        record(digest, &fields).map(Some)
    }

    pub(crate) async fn touch_session(
        &self,
        digest: &str,
        idle_ms: u64,
    ) -> Result<bool, StateError> {
        let hash = self.session_key(digest);
        let touched: i64 = self
            .run("touch_session", |mut c| async move {
                ::redis::cmd("PEXPIRE")
                    .arg(hash)
                    .arg(idle_ms)
                    .query_async(&mut c)
                    .await
            })
            .await?;
        Ok(touched == 1)
    }

    pub(crate) async fn set_in_session(
        &self,
        digest: &str,
        setting: Setting<'_>,
    ) -> Result<Set, StateError> {
        let hash = self.session_key(digest);
        let (name, value, limit) = match setting {
            Setting::LogLevel(level) => (field::LOG_LEVEL.to_owned(), Some(level), None),
            Setting::Subscribe { uri, limit } => (
                format!("{}{uri}", field::SUBSCRIBED),
                Some("1"),
                Some(limit),
            ),
            Setting::Unsubscribe(uri) => (format!("{}{uri}", field::SUBSCRIBED), None, None),
        };
        let value = value.map(str::to_owned);
        let set: i64 = self
            .run("set_in_session", |mut c| async move {
                let mut invocation = SET.key(hash);
                invocation.arg(name);
                if let Some(value) = value {
                    invocation.arg(value);
                    if let Some(limit) = limit {
                        invocation.arg(limit);
                    }
                }
                invocation.invoke_async(&mut c).await
            })
            .await?;
        Ok(match set {
            1 => Set::Set,
            -1 => Set::Full,
            _ => Set::Missing,
        })
    }

    pub(crate) async fn end_session(&self, digest: &str, owner: &str) -> Result<Ended, StateError> {
        let hash = self.session_key(digest);
        let ended: i64 = self
            .run("end_session", |mut c| async move {
                END.key(hash).arg(owner).invoke_async(&mut c).await
            })
            .await?;
        Ok(match ended {
            1 => Ended::Ended,
            -1 => Ended::NotOwner,
            _ => Ended::Missing,
        })
    }
}

fn record(digest: &str, fields: &HashMap<String, String>) -> Result<SessionRecord, StateError> {
    let malformed = |name: &str| StateError::Unavailable {
        reason: format!("session record `{digest}` has no valid `{name}` field in Redis"),
    };
    let text = |name: &'static str| fields.get(name).cloned().ok_or_else(|| malformed(name));
    Ok(SessionRecord {
        initialize: text(field::INITIALIZE)?,
        owner: text(field::OWNER)?,
        created_at_ms: fields
            .get(field::CREATED_AT)
            .and_then(|value| value.parse().ok())
            .ok_or_else(|| malformed(field::CREATED_AT))?,
        log_level: fields.get(field::LOG_LEVEL).cloned(),
        subscriptions: {
            let mut uris: Vec<String> = fields
                .keys()
                .filter_map(|name| name.strip_prefix(field::SUBSCRIBED))
                .map(str::to_owned)
                .collect();
            uris.sort();
            uris
        },
    })
}
