//! Tasks in Redis: one hash per task, `PREFIXtask:ID`, with the fields
//! below, set to expire `ttl_ms` after every write (`PEXPIRE`). Every write
//! is one Lua script, so a transition checks and changes the status in one
//! atomic step and terminal statuses stay final whichever replica writes.

use std::collections::HashMap;
use std::sync::LazyLock;

use ::redis::Script;

use super::Redis;
use crate::state::StateError;
use crate::state::tasks::{Beat, Change, TaskRecord, TaskStatus, Transition};

/// The hash's fields (the record's, plus `input_responses`, the responses
/// the owner has not taken yet).
mod field {
    pub(super) const STATUS: &str = "status";
    pub(super) const STATUS_MESSAGE: &str = "status_message";
    pub(super) const CREATED_AT: &str = "created_at";
    pub(super) const LAST_UPDATED_AT: &str = "last_updated_at";
    pub(super) const TTL_MS: &str = "ttl_ms";
    pub(super) const POLL_MS: &str = "poll_ms";
    pub(super) const OWNER: &str = "owner";
    pub(super) const PRINCIPAL: &str = "principal";
    pub(super) const TOOL: &str = "tool";
    pub(super) const PAYLOAD: &str = "payload";
    pub(super) const HEARTBEAT: &str = "heartbeat";
}

/// The statuses a task never leaves, as the scripts test them (the names
/// of [`TaskStatus::is_terminal`]'s statuses; a unit test checks).
const TERMINAL: &str = "local terminal = {completed = true, failed = true, cancelled = true}\n";

/// `KEYS[1]` the task's hash; `ARGV` the new status, now (ms), '1' if a
/// message follows (else '0'), the message, '1' if a payload follows, the
/// payload. Returns nil (no task), `{0, HGETALL}` (terminal: unchanged) or
/// `{1, HGETALL}` (applied; untaken responses dropped, TTL refreshed).
static TRANSITION: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{TERMINAL}{}",
        r"
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return nil end
if terminal[status] then return {0, redis.call('HGETALL', KEYS[1])} end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'last_updated_at', ARGV[2])
if ARGV[3] == '1' then
  redis.call('HSET', KEYS[1], 'status_message', ARGV[4])
else
  redis.call('HDEL', KEYS[1], 'status_message')
end
if ARGV[5] == '1' then
  redis.call('HSET', KEYS[1], 'payload', ARGV[6])
else
  redis.call('HDEL', KEYS[1], 'payload')
end
redis.call('HDEL', KEYS[1], 'input_responses')
redis.call('PEXPIRE', KEYS[1], redis.call('HGET', KEYS[1], 'ttl_ms'))
return {1, redis.call('HGETALL', KEYS[1])}
"
    ))
});

/// `KEYS[1]` the task's hash; `ARGV` the responses. Stores them (TTL
/// refreshed) and returns 1 if the task waits for input; else 0.
static RESPOND: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('HGET', KEYS[1], 'status') ~= 'input_required' then return 0 end
redis.call('HSET', KEYS[1], 'input_responses', ARGV[1])
redis.call('PEXPIRE', KEYS[1], redis.call('HGET', KEYS[1], 'ttl_ms'))
return 1
",
    )
});

/// `KEYS[1]` the task's hash; `ARGV` now (ms). Returns nil (no task),
/// `{status}` or `{status, responses}`; unless the task is terminal, stamps
/// the heartbeat, takes the responses and refreshes the TTL.
static BEAT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{TERMINAL}{}",
        r"
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return nil end
if terminal[status] then return {status} end
redis.call('HSET', KEYS[1], 'heartbeat', ARGV[1])
redis.call('PEXPIRE', KEYS[1], redis.call('HGET', KEYS[1], 'ttl_ms'))
local responses = redis.call('HGET', KEYS[1], 'input_responses')
if not responses then return {status} end
redis.call('HDEL', KEYS[1], 'input_responses')
return {status, responses}
"
    ))
});

impl Redis {
    fn task_key(&self, id: &str) -> String {
        format!("{}task:{id}", self.prefix)
    }

    pub(crate) async fn create_task(&self, record: &TaskRecord) -> Result<(), StateError> {
        let hash = self.task_key(&record.id);
        let mut fields = vec![
            (field::STATUS, record.status.as_str().to_owned()),
            (field::CREATED_AT, record.created_at_ms.to_string()),
            (field::LAST_UPDATED_AT, record.updated_at_ms.to_string()),
            (field::TTL_MS, record.ttl_ms.to_string()),
            (field::POLL_MS, record.poll_ms.to_string()),
            (field::OWNER, record.owner.clone()),
            (field::PRINCIPAL, record.principal.clone()),
            (field::TOOL, record.tool.clone()),
            (field::HEARTBEAT, record.heartbeat_ms.to_string()),
        ];
        if let Some(message) = &record.status_message {
            fields.push((field::STATUS_MESSAGE, message.clone()));
        }
        if let Some(payload) = &record.payload {
            fields.push((field::PAYLOAD, payload.clone()));
        }
        if self
            .create_hash("create_task", hash, record.ttl_ms, fields)
            .await?
        {
            Ok(())
        } else {
            Err(StateError::TaskExists {
                id: record.id.clone(),
            })
        }
    }

    pub(crate) async fn get_task(&self, id: &str) -> Result<Option<TaskRecord>, StateError> {
        let fields = self.hash("get_task", self.task_key(id)).await?;
        if fields.is_empty() {
            return Ok(None);
        }
        record(id, &fields).map(Some)
    }

    pub(crate) async fn transition_task(
        &self,
        id: &str,
        change: &Change<'_>,
    ) -> Result<Transition, StateError> {
        let hash = self.task_key(id);
        let flag = |present: bool| if present { "1" } else { "0" };
        let outcome: Option<(i64, HashMap<String, String>)> = self
            .run("transition_task", |mut c| async move {
                TRANSITION
                    .key(hash)
                    .arg(change.to.as_str())
                    .arg(change.now_ms)
                    .arg(flag(change.message.is_some()))
                    .arg(change.message.unwrap_or_default())
                    .arg(flag(change.payload.is_some()))
                    .arg(change.payload.unwrap_or_default())
                    .invoke_async(&mut c)
                    .await
            })
            .await?;
        Ok(match outcome {
            None => Transition::Missing,
            Some((1, fields)) => Transition::Applied(record(id, &fields)?),
            Some((_, fields)) => Transition::Final(record(id, &fields)?),
        })
    }

    pub(crate) async fn respond_task(&self, id: &str, responses: &str) -> Result<bool, StateError> {
        let hash = self.task_key(id);
        let stored: i64 = self
            .run("respond_task", |mut c| async move {
                RESPOND.key(hash).arg(responses).invoke_async(&mut c).await
            })
            .await?;
        Ok(stored == 1)
    }

    pub(crate) async fn beat_task(
        &self,
        id: &str,
        now_ms: u64,
    ) -> Result<Option<Beat>, StateError> {
        let hash = self.task_key(id);
        let answer: Option<Vec<String>> = self
            .run("beat_task", |mut c| async move {
                BEAT.key(hash).arg(now_ms).invoke_async(&mut c).await
            })
            .await?;
        let Some(mut answer) = answer else {
            return Ok(None);
        };
        let responses = (answer.len() > 1).then(|| answer.swap_remove(1));
        let status = answer
            .first()
            .and_then(|status| TaskStatus::parse(status))
            .ok_or_else(|| malformed(id, field::STATUS))?;
        Ok(Some(Beat { status, responses }))
    }
}

/// The record a task's hash holds.
fn record(id: &str, fields: &HashMap<String, String>) -> Result<TaskRecord, StateError> {
    let text = |name: &'static str| fields.get(name).cloned().ok_or_else(|| malformed(id, name));
    let number = |name: &'static str| {
        fields
            .get(name)
            .and_then(|value| value.parse::<u64>().ok())
            .ok_or_else(|| malformed(id, name))
    };
    let status = fields
        .get(field::STATUS)
        .and_then(|status| TaskStatus::parse(status))
        .ok_or_else(|| malformed(id, field::STATUS))?;
    Ok(TaskRecord {
        id: id.to_owned(),
        status,
        status_message: fields.get(field::STATUS_MESSAGE).cloned(),
        created_at_ms: number(field::CREATED_AT)?,
        updated_at_ms: number(field::LAST_UPDATED_AT)?,
        ttl_ms: number(field::TTL_MS)?,
        poll_ms: number(field::POLL_MS)?,
        owner: text(field::OWNER)?,
        principal: text(field::PRINCIPAL)?,
        tool: text(field::TOOL)?,
        payload: fields.get(field::PAYLOAD).cloned(),
        heartbeat_ms: number(field::HEARTBEAT)?,
    })
}

fn malformed(id: &str, name: &str) -> StateError {
    StateError::Unavailable {
        reason: format!("task `{id}` has no valid `{name}` field in Redis"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripts_know_the_terminal_statuses() {
        for status in TaskStatus::ALL {
            let listed = TERMINAL.contains(&format!("{} = true", status.as_str()));
            assert_eq!(listed, status.is_terminal(), "{status}");
        }
    }

    #[test]
    fn a_record_this_host_cannot_read_is_an_error_not_a_panic() {
        let mut fields: HashMap<String, String> = [
            ("status", "working"),
            ("created_at", "1"),
            ("last_updated_at", "2"),
            ("ttl_ms", "3"),
            ("poll_ms", "4"),
            ("owner", "a"),
            ("principal", "p"),
            ("tool", "t"),
            ("heartbeat", "5"),
            ("input_responses", "{}"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let read = record("id", &fields).expect("a whole record reads");
        assert_eq!((read.ttl_ms, read.heartbeat_ms, read.payload), (3, 5, None));
        fields.insert("status".into(), "paused".into());
        let err = record("id", &fields).expect_err("an unknown status");
        assert!(err.to_string().contains("`status`"), "{err}");
        fields.insert("status".into(), "failed".into());
        fields.insert("poll_ms".into(), "soon".into());
        let err = record("id", &fields).expect_err("a bad number");
        assert!(matches!(err, StateError::Unavailable { .. }), "{err:?}");
    }
}
