//! Storage entries as rows ([`StorageStore`] for [`PgStore`]): one row per
//! `(scope, agent, owner, key)` in `folio_storage`, keys in the "C" collation (byte order).
//!
//! Each write is one statement, so compare-and-set holds across servers without a lock held
//! over a round trip: `INSERT … ON CONFLICT DO UPDATE … WHERE` the row expired (`Absent`),
//! `UPDATE … WHERE version = $n` (`Version`), an upsert that starts an expired row again at
//! version 1 (`Any`). When a condition does not hold, the row there now is read for the
//! answer. Times are kept to the microsecond, so the store rounds `now` and expiries down to
//! it before writing and an entry answered equals the entry read back. A write retried after
//! its reply was lost recognizes its own row (same version, value and time) instead of
//! answering a conflict with itself.

use chrono::{DateTime, SubsecRound, Utc};
use folio_protocol::StorageEntry;
use folio_store::{
    Condition, EntryPage, MAX_LIST, Namespace, StorageStore, StorageUsage, StoreError, Written,
    check_key, value_text,
};
use sqlx::Row;
use sqlx::postgres::PgRow;

use crate::{PgError, PgStore};

/// What every statement that answers an entry returns.
const ENTRY: &str = "key, value, version, updated_at, expires_at";

/// Binds scope, agent, owner, key, value (JSON text), now, expiry and bytes; writes over a
/// live row, or starts an expired one again at 1.
const PUT_ANY: &str = "
INSERT INTO folio_storage AS s
    (scope, agent, owner, key, value, version, updated_at, expires_at, bytes)
VALUES ($1, $2, $3, $4, $5::jsonb, 1, $6, $7, $8)
ON CONFLICT (scope, agent, owner, key) DO UPDATE SET
    value = EXCLUDED.value,
    version = CASE WHEN s.expires_at <= EXCLUDED.updated_at THEN 1 ELSE s.version + 1 END,
    updated_at = EXCLUDED.updated_at,
    expires_at = EXCLUDED.expires_at,
    bytes = EXCLUDED.bytes
RETURNING key, value, version, updated_at, expires_at";

/// As [`PUT_ANY`], only where there is no row or an expired one.
const PUT_ABSENT: &str = "
INSERT INTO folio_storage AS s
    (scope, agent, owner, key, value, version, updated_at, expires_at, bytes)
VALUES ($1, $2, $3, $4, $5::jsonb, 1, $6, $7, $8)
ON CONFLICT (scope, agent, owner, key) DO UPDATE SET
    value = EXCLUDED.value,
    version = 1,
    updated_at = EXCLUDED.updated_at,
    expires_at = EXCLUDED.expires_at,
    bytes = EXCLUDED.bytes
WHERE s.expires_at <= EXCLUDED.updated_at
RETURNING key, value, version, updated_at, expires_at";

/// As [`PUT_ANY`]'s binds, and the version ($9) the live row must have.
const PUT_VERSION: &str = "
UPDATE folio_storage SET
    value = $5::jsonb, version = version + 1, updated_at = $6, expires_at = $7, bytes = $8
WHERE scope = $1 AND agent = $2 AND owner = $3 AND key = $4 AND version = $9
  AND (expires_at IS NULL OR expires_at > $6)
RETURNING key, value, version, updated_at, expires_at";

/// The entry a row holds.
pub(crate) fn entry(row: &PgRow) -> Result<StorageEntry, PgError> {
    let version: i64 = row.try_get("version").map_err(PgError::Database)?;
    Ok(StorageEntry {
        key: row.try_get("key").map_err(PgError::Database)?,
        value: row.try_get("value").map_err(PgError::Database)?,
        version: u64::try_from(version).map_err(|err| PgError::Corrupt {
            what: "a row of folio_storage".into(),
            message: err.to_string(),
        })?,
        updated_at: row.try_get("updated_at").map_err(PgError::Database)?,
        expires_at: row.try_get("expires_at").map_err(PgError::Database)?,
    })
}

/// A count or version as SQL binds it.
fn int(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

impl PgStore {
    /// The live entry at `key` at `now` (the connection's pool, one statement).
    async fn live_row(
        &self,
        namespace: &Namespace,
        key: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<StorageEntry>, crate::retry::Failure> {
        let row = sqlx::query(&format!(
            "SELECT {ENTRY} FROM folio_storage
             WHERE scope = $1 AND agent = $2 AND owner = $3 AND key = $4
               AND (expires_at IS NULL OR expires_at > $5)"
        ))
        .bind(namespace.scope.as_str())
        .bind(&namespace.agent)
        .bind(&namespace.owner)
        .bind(key)
        .bind(now)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.as_ref().map(entry).transpose()?)
    }

    /// Writes the entry under `condition` (see the module docs).
    async fn put_row(
        &self,
        namespace: &Namespace,
        key: &str,
        value: &serde_json::Value,
        condition: Condition,
        expires_at: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Result<Written, StoreError> {
        check_key(key)?;
        let text = value_text(value)?;
        let (now, expires_at) = (
            now.trunc_subsecs(6),
            expires_at.map(|at| at.trunc_subsecs(6)),
        );
        let bytes = int(key.len() + text.len());
        let (statement, expected) = match condition {
            Condition::Any => (PUT_ANY, None),
            Condition::Absent => (PUT_ABSENT, Some(1)),
            Condition::Version(version) => (PUT_VERSION, version.checked_add(1)),
        };
        let written = self
            .retry("write a storage entry", |attempt| {
                let text = &text;
                async move {
                    let mut query = sqlx::query(statement)
                        .bind(namespace.scope.as_str())
                        .bind(&namespace.agent)
                        .bind(&namespace.owner)
                        .bind(key)
                        .bind(text)
                        .bind(now)
                        .bind(expires_at)
                        .bind(bytes);
                    if let Condition::Version(version) = condition {
                        query = query.bind(int(version));
                    }
                    if let Some(row) = query.fetch_optional(self.pool()).await? {
                        return Ok(Written::Done(Some(entry(&row)?)));
                    }
                    let current = self.live_row(namespace, key, now).await?;
                    // A retry after a lost reply: the row there is this write's.
                    let mine = current.as_ref().is_some_and(|current| {
                        attempt > 0
                            && Some(current.version) == expected
                            && current.value == *value
                            && current.updated_at == now
                            && current.expires_at == expires_at
                    });
                    Ok(if mine {
                        Written::Done(current)
                    } else {
                        Written::Conflict(current)
                    })
                }
            })
            .await?;
        Ok(written)
    }

    /// Removes the entry under `condition` (`Absent` as `Any`).
    async fn delete_row(
        &self,
        namespace: &Namespace,
        key: &str,
        condition: Condition,
        now: DateTime<Utc>,
    ) -> Result<Written, StoreError> {
        check_key(key)?;
        let version = match condition {
            Condition::Any | Condition::Absent => None,
            Condition::Version(version) => Some(int(version)),
        };
        let written = self
            .retry("delete a storage entry", |attempt| async move {
                let row = sqlx::query(&format!(
                    "DELETE FROM folio_storage
                     WHERE scope = $1 AND agent = $2 AND owner = $3 AND key = $4
                       AND ($6::bigint IS NULL
                            OR (version = $6 AND (expires_at IS NULL OR expires_at > $5)))
                     RETURNING {ENTRY}, (expires_at IS NULL OR expires_at > $5) AS live"
                ))
                .bind(namespace.scope.as_str())
                .bind(&namespace.agent)
                .bind(&namespace.owner)
                .bind(key)
                .bind(now)
                .bind(version)
                .fetch_optional(self.pool())
                .await?;
                if let Some(row) = row {
                    let live: bool = row.try_get("live")?;
                    return Ok(Written::Done(live.then(|| entry(&row)).transpose()?));
                }
                if version.is_none() {
                    return Ok(Written::Done(None));
                }
                let current = self.live_row(namespace, key, now).await?;
                // A retry after a lost reply finds the entry gone: this delete's doing.
                Ok(if attempt > 0 && current.is_none() {
                    Written::Done(None)
                } else {
                    Written::Conflict(current)
                })
            })
            .await?;
        Ok(written)
    }

    /// A page of the namespace's live entries under `prefix`, after `after`.
    async fn list_rows(
        &self,
        namespace: &Namespace,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
        now: DateTime<Utc>,
    ) -> Result<EntryPage, PgError> {
        let limit = limit.min(MAX_LIST);
        let rows = self
            .retry("list storage entries", |_| async move {
                Ok(sqlx::query(&format!(
                    "SELECT {ENTRY} FROM folio_storage
                     WHERE scope = $1 AND agent = $2 AND owner = $3
                       AND key >= $4 AND starts_with(key, $4)
                       AND ($5::text IS NULL OR key > $5)
                       AND (expires_at IS NULL OR expires_at > $6)
                     ORDER BY key LIMIT $7"
                ))
                .bind(namespace.scope.as_str())
                .bind(&namespace.agent)
                .bind(&namespace.owner)
                .bind(prefix)
                .bind(after)
                .bind(now)
                .bind(int(limit + 1))
                .fetch_all(self.pool())
                .await?)
            })
            .await?;
        let more = rows.len() > limit;
        let entries = rows
            .iter()
            .take(limit)
            .map(entry)
            .collect::<Result<Vec<_>, _>>()?;
        let next = if more {
            entries.last().map(|entry| entry.key.clone())
        } else {
            None
        };
        Ok(EntryPage { entries, next })
    }

    /// The entries and bytes of one namespace (`Some`) or of every one.
    async fn usage_rows(&self, namespace: Option<&Namespace>) -> Result<StorageUsage, PgError> {
        let row = self
            .retry("count storage entries", |_| async move {
                Ok(sqlx::query(
                    "SELECT count(*) AS entries, coalesce(sum(bytes), 0)::bigint AS bytes
                     FROM folio_storage
                     WHERE $1::text IS NULL
                        OR (scope = $1 AND agent = $2 AND owner = $3)",
                )
                .bind(namespace.map(|namespace| namespace.scope.as_str()))
                .bind(namespace.map(|namespace| namespace.agent.as_str()))
                .bind(namespace.map(|namespace| namespace.owner.as_str()))
                .fetch_one(self.pool())
                .await?)
            })
            .await?;
        let entries: i64 = row.get("entries");
        let bytes: i64 = row.get("bytes");
        Ok(StorageUsage {
            entries: u64::try_from(entries).unwrap_or(0),
            bytes: u64::try_from(bytes).unwrap_or(0),
        })
    }

    /// Deletes the session-scope entries of `session_id`; how many.
    async fn delete_session_rows(&self, session_id: &str) -> Result<u64, PgError> {
        let done = self
            .retry("delete a session's storage entries", |_| async move {
                Ok(
                    sqlx::query("DELETE FROM folio_storage WHERE scope = 'session' AND owner = $1")
                        .bind(session_id)
                        .execute(self.pool())
                        .await?,
                )
            })
            .await?;
        Ok(done.rows_affected())
    }
}

#[async_trait::async_trait]
impl StorageStore for PgStore {
    async fn get(
        &self,
        namespace: &Namespace,
        key: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<StorageEntry>, StoreError> {
        check_key(key)?;
        Ok(self
            .retry("read a storage entry", |_| {
                self.live_row(namespace, key, now)
            })
            .await?)
    }

    async fn put(
        &self,
        namespace: &Namespace,
        key: &str,
        value: &serde_json::Value,
        condition: Condition,
        expires_at: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Result<Written, StoreError> {
        self.put_row(namespace, key, value, condition, expires_at, now)
            .await
    }

    async fn delete(
        &self,
        namespace: &Namespace,
        key: &str,
        condition: Condition,
        now: DateTime<Utc>,
    ) -> Result<Written, StoreError> {
        self.delete_row(namespace, key, condition, now).await
    }

    async fn list(
        &self,
        namespace: &Namespace,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
        now: DateTime<Utc>,
    ) -> Result<EntryPage, StoreError> {
        Ok(self.list_rows(namespace, prefix, after, limit, now).await?)
    }

    async fn usage(&self, namespace: &Namespace) -> Result<StorageUsage, StoreError> {
        Ok(self.usage_rows(Some(namespace)).await?)
    }

    async fn total_usage(&self) -> Result<StorageUsage, StoreError> {
        Ok(self.usage_rows(None).await?)
    }

    async fn delete_session_entries(&self, session_id: &str) -> Result<u64, StoreError> {
        Ok(self.delete_session_rows(session_id).await?)
    }

    async fn export(
        &self,
        after: Option<&(Namespace, String)>,
        limit: usize,
    ) -> Result<Vec<(Namespace, StorageEntry)>, StoreError> {
        Ok(self.export_rows(after, limit).await?)
    }

    async fn import(&self, namespace: &Namespace, entry: &StorageEntry) -> Result<(), StoreError> {
        self.import_row(namespace, entry).await
    }

    /// In batches, as retention deletes old rows.
    async fn purge_expired(&self, now: DateTime<Utc>) -> Result<u64, StoreError> {
        Ok(self
            .delete_older(
                "purge expired storage entries",
                "DELETE FROM folio_storage WHERE ctid IN (
                     SELECT ctid FROM folio_storage
                     WHERE expires_at <= $1 LIMIT $2)",
                now,
            )
            .await?)
    }
}
