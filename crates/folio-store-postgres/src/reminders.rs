//! Reminders as rows: stored durably, listed per session or by due time, removed once
//! delivered or cancelled.

use chrono::{DateTime, Utc};
use folio_protocol::Reminder;

use crate::{PgError, PgStore};

impl PgStore {
    /// Stores `reminder` (replacing one with its id).
    pub(crate) async fn put_reminder_row(&self, reminder: &Reminder) -> Result<(), PgError> {
        let json = serde_json::to_value(reminder).map_err(|err| PgError::Corrupt {
            what: format!("reminder {}", reminder.reminder_id),
            message: err.to_string(),
        })?;
        self.retry("store a reminder", |_| {
            let json = json.clone();
            async move {
                sqlx::query(
                    "INSERT INTO folio_reminders (id, session_id, at, reminder)
                     VALUES ($1, $2, $3, $4)
                     ON CONFLICT (id) DO UPDATE SET at = EXCLUDED.at, reminder = EXCLUDED.reminder",
                )
                .bind(&reminder.reminder_id)
                .bind(&reminder.session_id)
                .bind(reminder.at)
                .bind(json)
                .execute(self.pool())
                .await?;
                Ok(())
            }
        })
        .await
    }

    /// Removes the reminder; whether it was there.
    pub(crate) async fn remove_reminder_row(
        &self,
        session_id: &str,
        reminder_id: &str,
    ) -> Result<bool, PgError> {
        self.retry("remove a reminder", |_| async move {
            let done = sqlx::query("DELETE FROM folio_reminders WHERE id = $1 AND session_id = $2")
                .bind(reminder_id)
                .bind(session_id)
                .execute(self.pool())
                .await?;
            Ok(done.rows_affected() == 1)
        })
        .await
    }

    /// The reminders of one session (`Some`) or due by `until` (`None` session), earliest
    /// first, at most `limit`.
    pub(crate) async fn reminder_rows(
        &self,
        session_id: Option<&str>,
        until: Option<DateTime<Utc>>,
        limit: usize,
    ) -> Result<Vec<Reminder>, PgError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows: Vec<serde_json::Value> = self
            .retry("read reminders", |_| async move {
                Ok(sqlx::query_scalar(
                    "SELECT reminder FROM folio_reminders
                     WHERE ($1::text IS NULL OR session_id = $1)
                       AND ($2::timestamptz IS NULL OR at <= $2)
                     ORDER BY at, id LIMIT $3",
                )
                .bind(session_id)
                .bind(until)
                .bind(limit)
                .fetch_all(self.pool())
                .await?)
            })
            .await?;
        rows.into_iter()
            .map(|row| {
                serde_json::from_value(row).map_err(|err| PgError::Corrupt {
                    what: "a row of folio_reminders".into(),
                    message: err.to_string(),
                })
            })
            .collect()
    }
}
