//! Tasks in Redis: one hash per task, `PREFIXtask:ID` (work in progress:
//! every operation fails as unavailable until the scripts land).

use super::Redis;
use crate::state::StateError;
use crate::state::tasks::{Beat, Change, TaskRecord, Transition};

fn not_yet() -> StateError {
    StateError::Unavailable {
        reason: "tasks in Redis are not implemented yet".to_owned(),
    }
}

impl Redis {
    pub(crate) async fn create_task(&self, _record: &TaskRecord) -> Result<(), StateError> {
        Err(not_yet())
    }

    pub(crate) async fn get_task(&self, _id: &str) -> Result<Option<TaskRecord>, StateError> {
        Err(not_yet())
    }

    pub(crate) async fn transition_task(
        &self,
        _id: &str,
        _change: &Change<'_>,
    ) -> Result<Transition, StateError> {
        Err(not_yet())
    }

    pub(crate) async fn respond_task(
        &self,
        _id: &str,
        _responses: &str,
    ) -> Result<bool, StateError> {
        Err(not_yet())
    }

    pub(crate) async fn beat_task(
        &self,
        _id: &str,
        _now_ms: u64,
    ) -> Result<Option<Beat>, StateError> {
        Err(not_yet())
    }
}
