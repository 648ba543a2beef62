//! Retention (`[store] keep_sessions_days` in `agent.toml`): sessions idle for longer than the
//! period are deleted (metadata, event log, workspace), so a long-running server's state root
//! or database does not grow without bound.
//!
//! The period counts from a session's last change (`updatedAt`), read by the manager's clock;
//! the store deletes, a few at a time, the sessions no server holds a lease on (no turn runs
//! or queues), whose turn is not left open (parked on an approval) and that have no reminder
//! still to deliver. A pass runs when the server starts and then every hour; it also removes
//! the storage entries whose time to live has passed (whatever the period).

use folio_store::RetentionReport;
use std::time::Duration;

use crate::error::{ManagerError, store_error};
use std::sync::Arc;

use crate::engine::Engine;

/// How often a server with a retention period looks for expired sessions.
const RETENTION_INTERVAL: chrono::TimeDelta = chrono::TimeDelta::hours(1);

/// Deletes sessions idle past the agent's retention period.
#[derive(Clone)]
pub struct Retention {
    pub(crate) engine: Arc<Engine>,
}

impl Retention {
    /// Deletes every idle session (see the module docs) of every principal whose last change
    /// is older than `keep`; answers how many sessions and events went.
    pub async fn delete_expired(&self, keep: Duration) -> Result<RetentionReport, ManagerError> {
        let keep = chrono::Duration::from_std(keep).unwrap_or(chrono::Duration::MAX);
        // The store deletes, a few at a time, what no server holds a lease on.
        self.engine
            .store
            .delete_expired_sessions(self.engine.clock().now() - keep)
            .await
            .map_err(|err| store_error("cannot delete expired sessions", err))
    }

    /// Runs a retention pass now and then every hour until shutdown: removes the storage
    /// entries whose time to live has passed, and, when the agent sets
    /// `[store] keep_sessions_days`, the sessions idle for longer (with their session-scope
    /// entries).
    pub async fn run(self) {
        let days = self
            .engine
            .agent()
            .definition
            .config
            .store
            .keep_sessions_days;
        let clock = self.engine.clock();
        let shutdown = self.engine.life.shutdown.clone();
        loop {
            if let Some(days) = days {
                let keep = Duration::from_secs(u64::from(days.get()) * 24 * 3600);
                match self.delete_expired(keep).await {
                    Ok(report) if report.sessions > 0 => tracing::info!(
                        sessions = report.sessions,
                        events = report.events,
                        "retention deleted sessions idle for more than {days} days"
                    ),
                    Ok(_) => {}
                    Err(err) => tracing::error!("retention: {err}"),
                }
            }
            match self.engine.store.storage().purge_expired(clock.now()).await {
                Ok(0) => {}
                Ok(purged) => tracing::info!(purged, "retention removed expired storage entries"),
                Err(err) => {
                    tracing::error!("retention: cannot remove expired storage entries: {err}")
                }
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = clock.sleep_until(clock.now() + RETENTION_INTERVAL) => {}
            }
        }
    }
}
