//! [`Launcher`]: how the scheduler starts a slot's task session and learns when it ended; the
//! [`SessionManager`] is the launcher of `serve`.

use async_trait::async_trait;
use chrono::{DateTime, SecondsFormat, Utc};
use folio_project::ScheduleSummary;
use folio_protocol::{CreateSession, SessionMode, SessionStatus};

use crate::error::{ManagerError, store_error};
use crate::manager::SessionManager;

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

#[async_trait]
impl Launcher for SessionManager {
    async fn start(
        &self,
        schedule: &ScheduleSummary,
        slot: DateTime<Utc>,
    ) -> Result<String, ManagerError> {
        let request = CreateSession {
            title: Some(format!(
                "{} {}",
                schedule.name,
                slot.to_rfc3339_opts(SecondsFormat::Secs, true)
            )),
            mode: Some(SessionMode::Task),
            ..CreateSession::message(schedule.prompt.clone())
        };
        let accepted = self
            .create(
                &schedule_principal(&schedule.name),
                SCHEDULE_CHANNEL,
                request,
            )
            .await?;
        Ok(accepted.session_id)
    }

    async fn running(&self, name: &str, session_id: &str) -> bool {
        match self.owned_meta(&schedule_principal(name), session_id).await {
            Ok(meta) => self.current_meta(meta).await.status == SessionStatus::Running,
            Err(_) => false,
        }
    }

    async fn claim(&self, name: &str, slot: DateTime<Utc>) -> Result<bool, ManagerError> {
        self.inner
            .store
            .claim_slot(name, slot, &self.inner.server)
            .await
            .map_err(|err| store_error("cannot claim the slot", err))
    }
}
