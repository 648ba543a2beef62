//! Session rows: each session's metadata document, its owner and its times.

use folio_store::{ListQuery, SessionMeta};
use sqlx::{Postgres, QueryBuilder, Row};

use crate::notify::DELETED_CHANNEL;
use crate::{PgError, PgStore};

/// The statement listing `query`'s sessions: only the conditions it sets, run unprepared so
/// that PostgreSQL plans it with the values. A prepared statement's generic plan (which
/// PostgreSQL may pick after five runs) cannot know a status or a time range is rare and walks
/// the primary key instead of the index for it: 0.4-0.8 s for a page of `running` or of the
/// last day's sessions among a million, against 0.1-0.7 ms planned with the values (EXPLAIN
/// ANALYZE figures in bench/RESULTS.md). The metadata key is one of
/// [`folio_store::MetaKey`]'s fixed names, written as a literal so that the expression indexes
/// of migration 9 match.
fn list_statement(query: &ListQuery) -> QueryBuilder<'_, Postgres> {
    let filter = &query.filter;
    let mut sql = QueryBuilder::new("SELECT id, meta::text AS meta FROM folio_sessions WHERE true");
    if let Some(principal) = &query.principal {
        sql.push(" AND principal = ").push_bind(principal.as_str());
    }
    if let Some(before) = &query.before {
        sql.push(" AND id < ").push_bind(before.as_str());
    }
    if let Some(status) = filter.status {
        sql.push(" AND meta->>'status' = ")
            .push_bind(status_name(status));
    }
    for (column, range) in [
        ("created_at", &filter.created),
        ("updated_at", &filter.updated),
    ] {
        if let Some(from) = range.from {
            sql.push(format_args!(" AND {column} >= ")).push_bind(from);
        }
        if let Some(until) = range.until {
            sql.push(format_args!(" AND {column} < ")).push_bind(until);
        }
    }
    if let Some(field) = &filter.field {
        let key = field.key.name();
        debug_assert!(key.bytes().all(|b| b.is_ascii_alphabetic()), "{key}");
        match field.value.as_deref() {
            Some(value) => {
                sql.push(format_args!(" AND meta->>'{key}' = "))
                    .push_bind(value);
            }
            None => {
                sql.push(format_args!(" AND meta->>'{key}' IS NOT NULL"));
            }
        }
    }
    sql.push(" ORDER BY id DESC LIMIT ")
        .push_bind(i64::try_from(query.limit).unwrap_or(i64::MAX));
    sql
}

/// Events deleted per statement when a session goes: small enough that no statement holds
/// many row locks or bloats one transaction, so autovacuum keeps up.
pub(crate) const DELETE_BATCH: i64 = 1000;

impl PgStore {
    /// Stores a new session; [`PgError::AlreadyExists`] when the id is taken (by another
    /// session: a retry after a lost reply finds its own row and succeeds).
    pub(crate) async fn create(&self, meta: &SessionMeta) -> Result<(), PgError> {
        let document = document(meta)?;
        self.retry("create a session", |attempt| {
            let document = &document;
            async move {
                let inserted = sqlx::query(
                    "INSERT INTO folio_sessions (id, principal, created_at, updated_at, meta)
                     VALUES ($1, $2, $3, $4, $5::jsonb) ON CONFLICT (id) DO NOTHING",
                )
                .bind(&meta.session_id)
                .bind(&meta.principal)
                .bind(meta.created_at)
                .bind(meta.updated_at)
                .bind(document)
                .execute(self.pool())
                .await?;
                if inserted.rows_affected() == 1
                    || (attempt > 0
                        && self.load_once(&meta.session_id).await?.as_ref() == Some(meta))
                {
                    return Ok(());
                }
                Err(PgError::AlreadyExists {
                    session_id: meta.session_id.clone(),
                }
                .into())
            }
        })
        .await
    }

    async fn load_once(
        &self,
        session_id: &str,
    ) -> Result<Option<SessionMeta>, crate::retry::Failure> {
        let document: Option<String> =
            sqlx::query_scalar("SELECT meta::text FROM folio_sessions WHERE id = $1")
                .bind(session_id)
                .fetch_optional(self.pool())
                .await?;
        Ok(document
            .map(|document| parse(session_id, &document))
            .transpose()?)
    }

    /// The session's metadata, when it exists.
    pub(crate) async fn load(&self, session_id: &str) -> Result<Option<SessionMeta>, PgError> {
        self.retry("read a session", |_| self.load_once(session_id))
            .await
    }

    /// Replaces the session's metadata; [`PgError::NotFound`] when it does not exist.
    pub(crate) async fn save(&self, meta: &SessionMeta) -> Result<(), PgError> {
        let document = document(meta)?;
        let done = self
            .retry("update a session", |_| {
                let document = &document;
                async move {
                    Ok(sqlx::query(
                        "UPDATE folio_sessions SET meta = $2::jsonb, updated_at = $3 WHERE id = $1",
                    )
                    .bind(&meta.session_id)
                    .bind(document)
                    .bind(meta.updated_at)
                    .execute(self.pool())
                    .await?)
                }
            })
            .await?;
        if done.rows_affected() == 0 {
            return Err(PgError::NotFound {
                session_id: meta.session_id.clone(),
            });
        }
        Ok(())
    }

    /// Sessions matching `query`, newest first (descending id): the table and its indexes
    /// (migration 8) are the session index.
    pub(crate) async fn list(&self, query: &ListQuery) -> Result<Vec<SessionMeta>, PgError> {
        let rows = self
            .retry("list sessions", |_| async move {
                Ok(list_statement(query)
                    .build()
                    // Unnamed, so planned with its values each time (see `list_statement`).
                    .persistent(false)
                    .fetch_all(self.pool())
                    .await?)
            })
            .await?;
        rows.iter()
            .map(|row| parse(row.get("id"), row.get("meta")))
            .collect()
    }

    /// Deletes a session: its events (in batches of [`DELETE_BATCH`]), lease, create keys,
    /// reminders, session-scope storage entries and row, then tells its followers on every
    /// server. [`PgError::NotFound`] when it does not exist.
    pub(crate) async fn delete(&self, session_id: &str) -> Result<(), PgError> {
        self.delete_events(session_id).await?;
        let deleted = self
            .retry("delete a session", |_| async move {
                let mut tx = self.pool().begin().await?;
                // The row first: its lock makes a concurrent append wait, then find it gone.
                let done = sqlx::query("DELETE FROM folio_sessions WHERE id = $1")
                    .bind(session_id)
                    .execute(&mut *tx)
                    .await?;
                for statement in [
                    "DELETE FROM folio_events WHERE session_id = $1",
                    "DELETE FROM folio_leases WHERE session_id = $1",
                    "DELETE FROM folio_create_keys WHERE session_id = $1",
                    "DELETE FROM folio_reminders WHERE session_id = $1",
                    "DELETE FROM folio_storage WHERE scope = 'session' AND owner = $1",
                ] {
                    sqlx::query(statement)
                        .bind(session_id)
                        .execute(&mut *tx)
                        .await?;
                }
                sqlx::query("SELECT pg_notify($1, $2)")
                    .bind(DELETED_CHANNEL)
                    .bind(session_id)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(done.rows_affected() == 1)
            })
            .await?;
        if !deleted {
            return Err(PgError::NotFound {
                session_id: session_id.to_string(),
            });
        }
        Ok(())
    }

    /// Deletes the sessions created in the hour before `older_than_ms` ago whose log is empty
    /// and that no lease holds (with their session-scope storage entries), and tells their
    /// followers; their metadata.
    pub(crate) async fn delete_unacknowledged(
        &self,
        older_than_ms: i64,
    ) -> Result<Vec<SessionMeta>, PgError> {
        let rows = self
            .retry("delete unacknowledged creates", |_| async move {
                let mut tx = self.pool().begin().await?;
                let rows = sqlx::query(
                    "DELETE FROM folio_sessions s
                     WHERE created_at < now() - $1 * interval '1 millisecond'
                       AND created_at > now() - $1 * interval '1 millisecond' - interval '1 hour'
                       AND NOT EXISTS (SELECT 1 FROM folio_events e WHERE e.session_id = s.id)
                       AND NOT EXISTS (SELECT 1 FROM folio_leases l WHERE l.session_id = s.id)
                     RETURNING id, meta::text AS meta",
                )
                .bind(older_than_ms)
                .fetch_all(&mut *tx)
                .await?;
                for row in &rows {
                    let id: &str = row.get("id");
                    sqlx::query("DELETE FROM folio_storage WHERE scope = 'session' AND owner = $1")
                        .bind(id)
                        .execute(&mut *tx)
                        .await?;
                    sqlx::query("SELECT pg_notify($1, $2)")
                        .bind(DELETED_CHANNEL)
                        .bind(id)
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await?;
                Ok(rows)
            })
            .await?;
        rows.iter()
            .map(|row| parse(row.get("id"), row.get("meta")))
            .collect()
    }

    /// Deletes a session's events, newest first, [`DELETE_BATCH`] rows per statement; returns
    /// how many went.
    pub(crate) async fn delete_events(&self, session_id: &str) -> Result<u64, PgError> {
        let mut deleted = 0;
        loop {
            let done = self
                .retry("delete events", |_| async move {
                    Ok(sqlx::query(
                        "DELETE FROM folio_events WHERE session_id = $1 AND idx IN (
                            SELECT idx FROM folio_events WHERE session_id = $1
                            ORDER BY idx DESC LIMIT $2)",
                    )
                    .bind(session_id)
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

pub(crate) fn document(meta: &SessionMeta) -> Result<String, PgError> {
    serde_json::to_string(meta).map_err(|err| PgError::Corrupt {
        what: format!("session {}", meta.session_id),
        message: err.to_string(),
    })
}

pub(crate) fn parse(session_id: &str, document: &str) -> Result<SessionMeta, PgError> {
    serde_json::from_str(document).map_err(|err| PgError::Corrupt {
        what: format!("session {session_id}"),
        message: err.to_string(),
    })
}

/// A status as `session.json` and the `meta` document spell it.
fn status_name(status: folio_protocol::SessionStatus) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|value| value.as_str().map(str::to_string))
        .unwrap_or_default()
}
