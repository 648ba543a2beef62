//! What `folio store copy` writes into (and reads from) the database beside the live
//! operations: whole sessions in one transaction, the records of keyed creates in key order,
//! storage entries as another store kept them, channels' records, and the copy marker
//! (`folio_copy_marker`).

use folio_protocol::{DeliveryInfo, DeliveryRetry, Event, StorageEntry, StorageScope};
use folio_store::{ChannelRecord, CreateKey, Namespace, SessionMeta, value_text};
use serde_json::Value;
use sqlx::Row;

use crate::{PgError, PgStore};

/// Inserts a session's events whatever the log holds (the caller emptied it).
const INSERT_EVENTS: &str = "
INSERT INTO folio_events (session_id, idx, kind, turn_id, at, event)
SELECT $1, e.idx, e.kind, e.turn_id, e.at, e.event
FROM UNNEST($2::bigint[], $3::text[], $4::text[], $5::timestamptz[], $6::text[])
    AS e(idx, kind, turn_id, at, event)";

/// Writes an entry with its own version and times in place of the key's.
const IMPORT_ENTRY: &str = "
INSERT INTO folio_storage
    (scope, agent, owner, key, value, version, updated_at, expires_at, bytes)
VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9)
ON CONFLICT (scope, agent, owner, key) DO UPDATE SET
    value = EXCLUDED.value,
    version = EXCLUDED.version,
    updated_at = EXCLUDED.updated_at,
    expires_at = EXCLUDED.expires_at,
    bytes = EXCLUDED.bytes";

impl PgStore {
    /// Replaces session `meta`'s row, log and lease with `meta` and `events`, in one
    /// transaction.
    pub(crate) async fn import_session_rows(
        &self,
        meta: &SessionMeta,
        events: &[Event],
    ) -> Result<(), PgError> {
        let document = crate::sessions::document(meta)?;
        let batch = crate::group::batch(events)?;
        let id = &meta.session_id;
        self.retry("import a session", |_| {
            let (document, batch) = (&document, &batch);
            async move {
                let mut tx = self.pool().begin().await?;
                for statement in [
                    "DELETE FROM folio_events WHERE session_id = $1",
                    "DELETE FROM folio_leases WHERE session_id = $1",
                ] {
                    sqlx::query(statement).bind(id).execute(&mut *tx).await?;
                }
                sqlx::query(
                    "INSERT INTO folio_sessions (id, principal, created_at, updated_at, meta)
                     VALUES ($1, $2, $3, $4, $5::jsonb)
                     ON CONFLICT (id) DO UPDATE SET principal = EXCLUDED.principal,
                        created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at,
                        meta = EXCLUDED.meta",
                )
                .bind(id)
                .bind(&meta.principal)
                .bind(meta.created_at)
                .bind(meta.updated_at)
                .bind(document)
                .execute(&mut *tx)
                .await?;
                sqlx::query(INSERT_EVENTS)
                    .bind(id)
                    .bind(&batch.indexes)
                    .bind(&batch.kinds)
                    .bind(&batch.turn_ids)
                    .bind(&batch.ats)
                    .bind(&batch.lines)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(())
            }
        })
        .await
    }

    /// The records of keyed creates by principal then key (byte order), after `after`.
    pub(crate) async fn create_key_rows(
        &self,
        after: Option<(&str, &str)>,
        limit: usize,
    ) -> Result<Vec<CreateKey>, PgError> {
        let rows = self
            .retry("list create keys", |_| async move {
                Ok(sqlx::query(
                    "SELECT principal, key, session_id, digest FROM folio_create_keys
                     WHERE $1::text IS NULL
                        OR (principal COLLATE \"C\", key COLLATE \"C\") > ($1, $2)
                     ORDER BY principal COLLATE \"C\", key COLLATE \"C\" LIMIT $3",
                )
                .bind(after.map(|(principal, _)| principal))
                .bind(after.map(|(_, key)| key))
                .bind(i64::try_from(limit).unwrap_or(i64::MAX))
                .fetch_all(self.pool())
                .await?)
            })
            .await?;
        Ok(rows
            .iter()
            .map(|row| CreateKey {
                principal: row.get("principal"),
                key: row.get("key"),
                session_id: row.get("session_id"),
                digest: row.get("digest"),
            })
            .collect())
    }

    /// The copy marker's text, when there is one.
    pub(crate) async fn copy_marker_row(&self) -> Result<Option<String>, PgError> {
        self.retry("read the copy marker", |_| async move {
            Ok(sqlx::query_scalar("SELECT marker FROM folio_copy_marker")
                .fetch_optional(self.pool())
                .await?)
        })
        .await
    }

    /// Writes (`None`: deletes) the copy marker.
    pub(crate) async fn set_copy_marker_row(&self, marker: Option<&str>) -> Result<(), PgError> {
        self.retry("write the copy marker", |_| async move {
            match marker {
                Some(marker) => {
                    sqlx::query(
                        "INSERT INTO folio_copy_marker (marker) VALUES ($1)
                     ON CONFLICT (one) DO UPDATE SET marker = EXCLUDED.marker, written_at = now()",
                    )
                    .bind(marker)
                    .execute(self.pool())
                    .await?
                }
                None => {
                    sqlx::query("DELETE FROM folio_copy_marker")
                        .execute(self.pool())
                        .await?
                }
            };
            Ok(())
        })
        .await
    }

    /// Every entry ordered by scope, agent, owner (byte order) and key, after `after`.
    pub(crate) async fn export_rows(
        &self,
        after: Option<&(Namespace, String)>,
        limit: usize,
    ) -> Result<Vec<(Namespace, StorageEntry)>, PgError> {
        let limit = limit.min(folio_store::MAX_LIST);
        let rows = self
            .retry("read storage entries", |_| async move {
                Ok(sqlx::query(
                    "SELECT scope, agent, owner, key, value, version, updated_at, expires_at
                     FROM folio_storage
                     WHERE $1::text IS NULL
                        OR (scope COLLATE \"C\", agent COLLATE \"C\", owner COLLATE \"C\", key)
                           > ($1, $2, $3, $4)
                     ORDER BY scope COLLATE \"C\", agent COLLATE \"C\", owner COLLATE \"C\", key
                     LIMIT $5",
                )
                .bind(after.map(|(namespace, _)| namespace.scope.as_str()))
                .bind(after.map(|(namespace, _)| namespace.agent.as_str()))
                .bind(after.map(|(namespace, _)| namespace.owner.as_str()))
                .bind(after.map(|(_, key)| key.as_str()))
                .bind(i64::try_from(limit).unwrap_or(i64::MAX))
                .fetch_all(self.pool())
                .await?)
            })
            .await?;
        rows.iter()
            .map(|row| {
                let scope: &str = row.get("scope");
                let scope = match scope {
                    "session" => StorageScope::Session,
                    "agent" => StorageScope::Agent,
                    "principal" => StorageScope::Principal,
                    other => {
                        return Err(PgError::Corrupt {
                            what: "a row of folio_storage".into(),
                            message: format!("{other:?} is not a scope"),
                        });
                    }
                };
                let namespace = Namespace {
                    scope,
                    agent: row.get("agent"),
                    owner: row.get("owner"),
                };
                Ok((namespace, crate::storage::entry(row)?))
            })
            .collect()
    }

    /// Writes `entry` with its own version and times in place of its key's.
    pub(crate) async fn import_row(
        &self,
        namespace: &Namespace,
        entry: &StorageEntry,
    ) -> Result<(), folio_store::StoreError> {
        folio_store::check_key(&entry.key)?;
        let text = value_text(&entry.value)?;
        let version = i64::try_from(entry.version).map_err(|_| PgError::Corrupt {
            what: format!("the storage entry {:?}", entry.key),
            message: format!("version {} is out of range", entry.version),
        })?;
        let bytes = (entry.key.len() + text.len()) as i64;
        self.retry("import a storage entry", |_| {
            let text = &text;
            async move {
                sqlx::query(IMPORT_ENTRY)
                    .bind(namespace.scope.as_str())
                    .bind(&namespace.agent)
                    .bind(&namespace.owner)
                    .bind(&entry.key)
                    .bind(text)
                    .bind(version)
                    .bind(entry.updated_at)
                    .bind(entry.expires_at)
                    .bind(bytes)
                    .execute(self.pool())
                    .await?;
                Ok(())
            }
        })
        .await?;
        Ok(())
    }

    /// Every channel with a delivery, a continuation key or a reply, by id.
    pub(crate) async fn channel_names(&self) -> Result<Vec<String>, PgError> {
        self.retry("list channels", |_| async move {
            Ok(sqlx::query_scalar(
                "SELECT channel FROM (
                     SELECT channel FROM folio_channel_deliveries
                     UNION SELECT channel FROM folio_channel_continuations
                     UNION SELECT channel FROM folio_channel_replies
                 ) AS c ORDER BY channel COLLATE \"C\"",
            )
            .fetch_all(self.pool())
            .await?)
        })
        .await
    }

    /// The channel's deliveries in arrival order, bound keys and replies.
    pub(crate) async fn channel_rows(&self, channel: &str) -> Result<ChannelRecord, PgError> {
        let (rows, continuations, replies) = self
            .retry("read a channel's record", |_| async move {
                let rows = sqlx::query(
                    "SELECT id, received_at, route, retry, decision, status, session_id,
                            message, duplicates, retries
                     FROM folio_channel_deliveries WHERE channel = $1 ORDER BY seq",
                )
                .bind(channel)
                .fetch_all(self.pool())
                .await?;
                let continuations: Vec<(String, String)> = sqlx::query_as(
                    "SELECT key, session_id FROM folio_channel_continuations
                     WHERE channel = $1 AND session_id IS NOT NULL ORDER BY key COLLATE \"C\"",
                )
                .bind(channel)
                .fetch_all(self.pool())
                .await?;
                let replies: Vec<(String, String)> = sqlx::query_as(
                    "SELECT session_id, turn_id FROM folio_channel_replies WHERE channel = $1
                     ORDER BY session_id COLLATE \"C\", turn_id COLLATE \"C\"",
                )
                .bind(channel)
                .fetch_all(self.pool())
                .await?;
                Ok((rows, continuations, replies))
            })
            .await?;
        let mut deliveries = Vec::with_capacity(rows.len());
        for row in &rows {
            let received = crate::deliveries::received(row)?;
            let corrupt = |err: serde_json::Error| PgError::Corrupt {
                what: format!("delivery {}", received.id),
                message: err.to_string(),
            };
            let status: String = row.try_get("status").map_err(PgError::Database)?;
            let retries: Value = row.try_get("retries").map_err(PgError::Database)?;
            let duplicates: i32 = row.try_get("duplicates").map_err(PgError::Database)?;
            let info = DeliveryInfo {
                id: received.id.clone(),
                channel: channel.to_string(),
                received_at: received.received_at,
                route: received.route.clone(),
                status: serde_json::from_value(Value::String(status)).map_err(corrupt)?,
                session_id: row.try_get("session_id").map_err(PgError::Database)?,
                message: row.try_get("message").map_err(PgError::Database)?,
                duplicates: u32::try_from(duplicates).unwrap_or(0),
                retries: serde_json::from_value::<Vec<DeliveryRetry>>(retries).map_err(corrupt)?,
            };
            deliveries.push((received, info));
        }
        Ok(ChannelRecord {
            deliveries,
            continuations,
            replies,
        })
    }

    /// Inserts what `record` holds that the channel lacks, in one transaction.
    pub(crate) async fn import_channel_rows(
        &self,
        channel: &str,
        record: &ChannelRecord,
    ) -> Result<(), PgError> {
        let mut rows = Vec::with_capacity(record.deliveries.len());
        for (received, info) in &record.deliveries {
            let encoded = |value: serde_json::Result<Value>| {
                value.map_err(|err| PgError::Corrupt {
                    what: format!("delivery {}", received.id),
                    message: err.to_string(),
                })
            };
            rows.push((
                received
                    .retry
                    .as_ref()
                    .map(|retry| encoded(serde_json::to_value(retry)))
                    .transpose()?,
                encoded(serde_json::to_value(&info.retries))?,
                Value::Object(received.decision.clone()),
                crate::deliveries::status_name(info.status)?,
                i32::try_from(info.duplicates).unwrap_or(i32::MAX),
            ));
        }
        self.retry("import a channel's record", |_| {
            let rows = &rows;
            async move {
                let mut tx = self.pool().begin().await?;
                for ((received, info), (retry, retries, decision, status, duplicates)) in
                    record.deliveries.iter().zip(rows)
                {
                    sqlx::query(
                        "INSERT INTO folio_channel_deliveries
                             (channel, id, received_at, route, retry, retries, decision, status,
                              session_id, message, duplicates)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                         ON CONFLICT (channel, id) DO NOTHING",
                    )
                    .bind(channel)
                    .bind(&received.id)
                    .bind(received.received_at)
                    .bind(&received.route)
                    .bind(retry)
                    .bind(retries)
                    .bind(decision)
                    .bind(status)
                    .bind(&info.session_id)
                    .bind(&info.message)
                    .bind(duplicates)
                    .execute(&mut *tx)
                    .await?;
                }
                for (key, session_id) in &record.continuations {
                    sqlx::query(
                        "INSERT INTO folio_channel_continuations (channel, key, session_id)
                         VALUES ($1, $2, $3)
                         ON CONFLICT (channel, key) DO UPDATE SET session_id = EXCLUDED.session_id,
                             reserved_by = NULL, reserved_until = NULL",
                    )
                    .bind(channel)
                    .bind(key)
                    .bind(session_id)
                    .execute(&mut *tx)
                    .await?;
                }
                for (session_id, turn_id) in &record.replies {
                    sqlx::query(
                        "INSERT INTO folio_channel_replies (channel, session_id, turn_id)
                         VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                    )
                    .bind(channel)
                    .bind(session_id)
                    .bind(turn_id)
                    .execute(&mut *tx)
                    .await?;
                }
                tx.commit().await?;
                Ok(())
            }
        })
        .await
    }
}
