//! [`Launcher`]: how the scheduler starts a slot's task session and learns when it ended; the
//! [`SessionManager`](crate::SessionManager) is the launcher of `serve`.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use folio_project::ScheduleSummary;

use crate::error::ManagerError;

/// The channel of sessions opened by schedules.
pub const SCHEDULE_CHANNEL: &str = "schedule";

/// The principal a schedule's sessions run as: `schedule:<name>`.
pub fn schedule_principal(name: &str) -> String {
    format!("schedule:{name}")
}

/// Starts the task sessions of slots.
#[async_trait]
pub trait Launcher: Send + Sync + 'static {
    /// Starts the task session of `schedule` for `slot`; returns the session id once the
    /// session is durable.
    async fn start(
        &self,
        schedule: &ScheduleSummary,
        slot: DateTime<Utc>,
    ) -> Result<String, ManagerError>;

    /// Whether the session `session_id` of schedule `name` is still running.
    async fn running(&self, name: &str, session_id: &str) -> bool;

    /// Claims `slot` of schedule `name` among the servers sharing the sessions: `false` when
    /// another server fired it (a server alone always wins).
    async fn claim(&self, _name: &str, _slot: DateTime<Utc>) -> Result<bool, ManagerError> {
        Ok(true)
    }
}
