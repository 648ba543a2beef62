//! Retention (`[store] keep_sessions_days`): sessions untouched for longer go, in small batches.

use chrono::{DateTime, Utc};

use folio_store::RetentionReport;

use crate::sessions::DELETE_BATCH;
use crate::{PgError, PgStore};

/// Sessions picked per round of [`PgStore::delete_expired_sessions`].
const SESSIONS_PER_ROUND: i64 = 50;

impl PgStore {
    /// Deletes every session last updated before `before`, not running a turn (no lease row) and
    /// with no reminder to deliver,
    /// with its events, and slot claims, finished channel deliveries and reported replies
    /// older than `before`: a few sessions per round, rows in batches, so no statement locks or rewrites much at once and autovacuum
    /// keeps up.
    pub async fn delete_expired_sessions(
        &self,
        before: DateTime<Utc>,
    ) -> Result<RetentionReport, PgError> {
        let mut report = RetentionReport::default();
        loop {
            let ids: Vec<String> = self
                .retry("pick expired sessions", |_| async move {
                    Ok(sqlx::query_scalar(
                        "SELECT id FROM folio_sessions s
                         WHERE updated_at < $1
                           AND NOT EXISTS (SELECT 1 FROM folio_leases l WHERE l.session_id = s.id)
                           AND NOT EXISTS (SELECT 1 FROM folio_reminders r WHERE r.session_id = s.id)
                         ORDER BY updated_at LIMIT $2",
                    )
                    .bind(before)
                    .bind(SESSIONS_PER_ROUND)
                    .fetch_all(self.pool())
                    .await?)
                })
                .await?;
            for id in &ids {
                report.events += self.delete_events(id).await?;
                match self.delete(id).await {
                    Ok(()) => report.sessions += 1,
                    // Deleted meanwhile by its owner or another server's retention pass.
                    Err(PgError::NotFound { .. }) => {}
                    Err(err) => return Err(err),
                }
            }
            if (ids.len() as i64) < SESSIONS_PER_ROUND {
                break;
            }
        }
        report.slot_claims = self
            .delete_older(
                "delete old slot claims",
                "DELETE FROM folio_slot_claims WHERE ctid IN (
                     SELECT ctid FROM folio_slot_claims
                     WHERE claimed_at < $1 LIMIT $2)",
                before,
            )
            .await?;
        report.deliveries = self
            .delete_older(
                "delete old channel deliveries",
                "DELETE FROM folio_channel_deliveries WHERE ctid IN (
                     SELECT ctid FROM folio_channel_deliveries
                     WHERE received_at < $1
                       AND status <> 'pending' LIMIT $2)",
                before,
            )
            .await?;
        self.delete_older(
            "delete old reported replies",
            "DELETE FROM folio_channel_replies WHERE ctid IN (
                 SELECT ctid FROM folio_channel_replies
                 WHERE at < $1 LIMIT $2)",
            before,
        )
        .await?;
        Ok(report)
    }

    /// Runs `delete` (binding the cutoff instant and a batch size) until a batch deletes
    /// fewer rows than the batch size; how many rows it deleted.
    pub(crate) async fn delete_older(
        &self,
        what: &str,
        delete: &str,
        before: DateTime<Utc>,
    ) -> Result<u64, PgError> {
        let mut deleted = 0;
        loop {
            let done = self
                .retry(what, |_| async move {
                    Ok(sqlx::query(delete)
                        .bind(before)
                        .bind(DELETE_BATCH)
                        .execute(self.pool())
                        .await?)
                })
                .await?;
            deleted += done.rows_affected();
            if done.rows_affected() < DELETE_BATCH as u64 {
                return Ok(deleted);
            }
        }
    }
}
