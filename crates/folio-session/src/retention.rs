//! Retention (`[store] keep_sessions_days` in `agent.toml`): sessions idle for longer than the
//! period are deleted (metadata, event log, workspace), so a long-running server's state root
//! does not grow without bound.
//!
//! A session is idle when its last turn ended (status `waiting`, `completed` or `failed`) and
//! nothing is queued; the period counts from its last change (`updatedAt`), read by the
//! manager's clock. The session's own actor makes the last check and the deletion as one of its
//! commands, so a message admitted meanwhile keeps the session. A session whose turn runs,
//! queues or waits for an approval, or that has a reminder still to deliver, is never deleted,
//! however old. A pass runs when the server
//! starts and then every hour.

use std::time::Duration;

use folio_store::RetentionReport;

use crate::command::Command;
use crate::error::{ManagerError, io_error, store_error};
use crate::live::lock;
use crate::manager::SessionManager;
use crate::schedule::has_reminders;
use crate::state::{load_meta, session_ids};
use folio_store_disk::last_event;

/// How often a server with a retention period looks for expired sessions.
const RETENTION_INTERVAL: chrono::TimeDelta = chrono::TimeDelta::hours(1);

impl SessionManager {
    /// Deletes every idle session (see the module docs) of every principal whose last change
    /// is older than `keep`; answers how many sessions and events went.
    pub async fn delete_expired_sessions(
        &self,
        keep: Duration,
    ) -> Result<RetentionReport, ManagerError> {
        if let Some(shared) = &self.inner.shared {
            // The store deletes, a few at a time, what no server holds a lease on.
            return shared
                .store
                .delete_expired_sessions(keep)
                .await
                .map_err(|err| store_error("cannot delete expired sessions", err));
        }
        let keep = chrono::Duration::from_std(keep).unwrap_or(chrono::Duration::MAX);
        let cutoff = self.clock().now() - keep;
        let ids = session_ids(&self.inner.state)
            .map_err(|err| io_error("cannot list sessions for retention", err))?;
        let mut report = RetentionReport::default();
        for id in ids {
            let Ok(Some(stored)) = load_meta(&self.inner.state, &id) else {
                continue;
            };
            // Whether a turn runs is for the actor to say (a turn's end is in the log before
            // the status is): here only what changed recently is passed over.
            let meta = self.current_meta(stored);
            if meta.updated_at >= cutoff || has_reminders(&self.inner.state, &id) {
                continue;
            }
            let events = last_event(&self.inner.state.trace_path(&id))
                .ok()
                .flatten()
                .map_or(0, |last| last.index + 1);
            // The session's actor decides, between its other commands: a message that
            // arrived since this check keeps the session.
            let live = match self.owned(&meta.principal, &id).await {
                Ok(live) => live,
                // Deleted meanwhile by its owner.
                Err(ManagerError::NotFound(_)) => continue,
                Err(err) => return Err(err),
            };
            let expired = self
                .command(&live, &crate::cluster::Remote::Busy, |reply| {
                    Command::Expire {
                        before: cutoff,
                        reply,
                    }
                })
                .await?;
            if expired {
                lock(&self.inner.live).remove(&id);
                report.sessions += 1;
                report.events += events;
                self.inner.logs.about(&id).info(format!(
                    "session {id} deleted by retention: idle since {}",
                    folio_protocol::format_at(&meta.updated_at)
                ));
            }
        }
        Ok(report)
    }

    /// Runs a retention pass now and then every hour until shutdown, when the agent sets
    /// `[store] keep_sessions_days`; returns at once when it keeps sessions forever.
    pub async fn run_retention(self) {
        let Some(days) = self.agent().definition.config.store.keep_sessions_days else {
            return;
        };
        let keep = Duration::from_secs(u64::from(days.get()) * 24 * 3600);
        let clock = self.clock();
        let shutdown = self.inner.shutdown.clone();
        loop {
            match self.delete_expired_sessions(keep).await {
                Ok(report) if report.sessions > 0 => tracing::info!(
                    sessions = report.sessions,
                    events = report.events,
                    "retention deleted sessions idle for more than {days} days"
                ),
                Ok(_) => {}
                Err(err) => tracing::error!("retention: {err}"),
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = clock.sleep_until(clock.now() + RETENTION_INTERVAL) => {}
            }
        }
    }
}
