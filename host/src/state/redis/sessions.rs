//! Sessions in Redis: one hash per session, `PREFIXsess:DIGEST` (a digest of
//! the session ID, never the ID), with the fields below, expiring an idle
//! timeout after its creation or last touch. Creating (the store's
//! `CREATE_HASH`) and ending are Lua scripts, each one atomic step: of two
//! replicas creating one session exactly one stores it, and only the owner's
//! end deletes it.

use std::collections::HashMap;
use std::sync::LazyLock;

use ::redis::Script;

use super::Redis;
use crate::state::StateError;
use crate::state::sessions::{Ended, SessionRecord};

/// The hash's fields.
mod field {
    pub(super) const INITIALIZE: &str = "initialize";
    pub(super) const OWNER: &str = "owner";
    pub(super) const CREATED_AT: &str = "created_at";
}

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
    })
}
