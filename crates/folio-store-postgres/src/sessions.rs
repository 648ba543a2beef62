//! Session rows: the metadata document of each session, its owner and its idempotency key.

use chrono::{DateTime, Utc};
use sqlx::Row;

use crate::{PgError, PgStore};

/// Events deleted per statement when a session goes: small enough that no statement holds
/// many row locks or bloats one transaction (vacuum reclaims the space as it goes).
pub(crate) const DELETE_BATCH: i64 = 1000;

/// One session as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRow {
    /// `ses_…`.
    pub id: String,
    /// The principal that owns it.
    pub principal: String,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed (retention counts from here).
    pub updated_at: DateTime<Utc>,
    /// The creator's idempotency key, unique per principal.
    pub idempotency_key: Option<String>,
    /// The metadata document.
    pub meta: serde_json::Value,
}

const COLUMNS: &str = "id, principal, created_at, updated_at, idempotency_key, meta::text AS meta";

impl PgStore {
    /// Stores a new session. With an idempotency key the principal already used, nothing is
    /// written and the existing session is returned with `false`.
    pub async fn create_session(&self, row: &SessionRow) -> Result<(SessionRow, bool), PgError> {
        let meta = row.meta.to_string();
        self.retry("create a session", |_| {
            let meta = &meta;
            async move {
                let inserted = sqlx::query(
                    "INSERT INTO folio_sessions (id, principal, created_at, updated_at, idempotency_key, meta)
                     VALUES ($1, $2, $3, $4, $5, $6::jsonb) ON CONFLICT DO NOTHING",
                )
                .bind(&row.id)
                .bind(&row.principal)
                .bind(row.created_at)
                .bind(row.updated_at)
                .bind(&row.idempotency_key)
                .bind(meta)
                .execute(self.pool())
                .await?;
                if inserted.rows_affected() == 1 {
                    return Ok((row.clone(), true));
                }
                // The id (a retry after a lost reply) or the key exists: return what is stored.
                let existing = sqlx::query(&format!(
                    "SELECT {COLUMNS} FROM folio_sessions
                     WHERE id = $1 OR (principal = $2 AND idempotency_key = $3)"
                ))
                .bind(&row.id)
                .bind(&row.principal)
                .bind(&row.idempotency_key)
                .fetch_one(self.pool())
                .await?;
                let existing = session_row(&existing)?;
                let created = existing.id == row.id;
                Ok((existing, created))
            }
        })
        .await
    }

    /// The session, when it exists.
    pub async fn session(&self, id: &str) -> Result<Option<SessionRow>, PgError> {
        let row = self
            .retry("read a session", |_| async move {
                Ok(sqlx::query(&format!(
                    "SELECT {COLUMNS} FROM folio_sessions WHERE id = $1"
                ))
                .bind(id)
                .fetch_optional(self.pool())
                .await?)
            })
            .await?;
        row.as_ref().map(session_row).transpose()
    }

    /// Replaces a session's metadata document and `updated_at`.
    pub async fn update_session(
        &self,
        id: &str,
        updated_at: DateTime<Utc>,
        meta: &serde_json::Value,
    ) -> Result<(), PgError> {
        let meta = meta.to_string();
        let done = self
            .retry("update a session", |_| {
                let meta = &meta;
                async move {
                    Ok(sqlx::query(
                        "UPDATE folio_sessions SET meta = $2::jsonb, updated_at = $3 WHERE id = $1",
                    )
                    .bind(id)
                    .bind(meta)
                    .bind(updated_at)
                    .execute(self.pool())
                    .await?)
                }
            })
            .await?;
        if done.rows_affected() == 0 {
            return Err(PgError::NotFound {
                session_id: id.to_string(),
            });
        }
        Ok(())
    }

    /// A principal's sessions, newest first (by creation, then id), up to `limit`, starting
    /// after the session `after` when given (a page cursor).
    pub async fn list_sessions(
        &self,
        principal: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SessionRow>, PgError> {
        let rows = self
            .retry("list sessions", |_| async move {
                Ok(sqlx::query(&format!(
                    "SELECT {COLUMNS} FROM folio_sessions s
                     WHERE principal = $1
                       AND ($2::text IS NULL OR (created_at, id) <
                            (SELECT created_at, id FROM folio_sessions WHERE id = $2))
                     ORDER BY created_at DESC, id DESC LIMIT $3"
                ))
                .bind(principal)
                .bind(after)
                .bind(i64::try_from(limit).unwrap_or(i64::MAX))
                .fetch_all(self.pool())
                .await?)
            })
            .await?;
        rows.iter().map(session_row).collect()
    }

    /// Deletes a session, its events (in batches of [`DELETE_BATCH`]) and its lease. Returns
    /// whether it existed.
    pub async fn delete_session(&self, id: &str) -> Result<bool, PgError> {
        self.delete_events(id).await?;
        self.retry("delete a session", |_| async move {
            let mut tx = self.pool().begin().await?;
            sqlx::query("DELETE FROM folio_leases WHERE session_id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await?;
            // Events appended while the batches ran go with the row, in the same transaction.
            sqlx::query("DELETE FROM folio_events WHERE session_id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await?;
            let done = sqlx::query("DELETE FROM folio_sessions WHERE id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(done.rows_affected() == 1)
        })
        .await
    }

    /// Deletes a session's events, newest first, [`DELETE_BATCH`] rows per statement; returns
    /// how many went.
    pub(crate) async fn delete_events(&self, id: &str) -> Result<u64, PgError> {
        let mut deleted = 0;
        loop {
            let done = self
                .retry("delete events", |_| async move {
                    Ok(sqlx::query(
                        "DELETE FROM folio_events WHERE session_id = $1 AND idx IN (
                            SELECT idx FROM folio_events WHERE session_id = $1
                            ORDER BY idx DESC LIMIT $2)",
                    )
                    .bind(id)
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

fn session_row(row: &sqlx::postgres::PgRow) -> Result<SessionRow, PgError> {
    let id: String = row.get("id");
    let meta: &str = row.get("meta");
    Ok(SessionRow {
        meta: serde_json::from_str(meta).map_err(|err| PgError::Corrupt {
            what: format!("session {id}"),
            message: err.to_string(),
        })?,
        principal: row.get("principal"),
        created_at: row.get("created_at"),
        updated_at: row.get("updated_at"),
        idempotency_key: row.get("idempotency_key"),
        id,
    })
}
