//! The agent's artifact records as rows: upserted by `(kind, key)` in one statement (so two
//! servers tagging the same artifact at once make one record), evicted past the cap in the
//! same transaction.

use folio_protocol::ArtifactRecord;

use crate::{PgError, PgStore};

/// Inserts the record, or updates the one of the same kind and key, keeping its id and
/// creation time (both written into the stored document too).
const UPSERT: &str = "
INSERT INTO folio_artifacts AS a (id, kind, key, updated_at, record, content)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (kind, key) DO UPDATE SET
    updated_at = EXCLUDED.updated_at,
    record = EXCLUDED.record
        || jsonb_build_object('id', a.id, 'createdAt', a.record -> 'createdAt'),
    content = EXCLUDED.content
RETURNING record";

impl PgStore {
    /// Upserts `record` with `contents`, then deletes all but the `max` most recent records.
    pub(crate) async fn put_artifact_row(
        &self,
        record: &ArtifactRecord,
        contents: Option<&[u8]>,
        max: usize,
    ) -> Result<ArtifactRecord, PgError> {
        let json = serde_json::to_value(record).map_err(|err| corrupt(&record.id, err))?;
        let max = i64::try_from(max).unwrap_or(i64::MAX);
        let stored: serde_json::Value = self
            .retry("store an artifact", |_| {
                let json = json.clone();
                async move {
                    let mut tx = self.pool().begin().await?;
                    let stored: serde_json::Value = sqlx::query_scalar(UPSERT)
                        .bind(&record.id)
                        .bind(&record.kind)
                        .bind(&record.key)
                        .bind(record.updated_at)
                        .bind(json)
                        .bind(contents)
                        .fetch_one(&mut *tx)
                        .await?;
                    sqlx::query(
                        "DELETE FROM folio_artifacts WHERE id IN (
                            SELECT id FROM folio_artifacts
                            ORDER BY updated_at DESC, id DESC OFFSET $1)",
                    )
                    .bind(max)
                    .execute(&mut *tx)
                    .await?;
                    tx.commit().await?;
                    Ok(stored)
                }
            })
            .await?;
        serde_json::from_value(stored).map_err(|err| corrupt(&record.id, err))
    }

    /// Every record, most recently updated first.
    pub(crate) async fn artifact_rows(&self) -> Result<Vec<ArtifactRecord>, PgError> {
        let rows: Vec<(String, serde_json::Value)> = self
            .retry("list artifacts", |_| async move {
                Ok(sqlx::query_as(
                    "SELECT id, record FROM folio_artifacts ORDER BY updated_at DESC, id DESC",
                )
                .fetch_all(self.pool())
                .await?)
            })
            .await?;
        rows.into_iter()
            .map(|(id, row)| serde_json::from_value(row).map_err(|err| corrupt(&id, err)))
            .collect()
    }

    /// The record `id`.
    pub(crate) async fn artifact_row(&self, id: &str) -> Result<Option<ArtifactRecord>, PgError> {
        let row: Option<serde_json::Value> = self
            .retry("read an artifact", |_| async move {
                Ok(
                    sqlx::query_scalar("SELECT record FROM folio_artifacts WHERE id = $1")
                        .bind(id)
                        .fetch_optional(self.pool())
                        .await?,
                )
            })
            .await?;
        row.map(|row| serde_json::from_value(row).map_err(|err| corrupt(id, err)))
            .transpose()
    }

    /// The contents of record `id`.
    pub(crate) async fn artifact_content_row(&self, id: &str) -> Result<Option<Vec<u8>>, PgError> {
        let row: Option<Option<Vec<u8>>> = self
            .retry("read an artifact's contents", |_| async move {
                Ok(
                    sqlx::query_scalar("SELECT content FROM folio_artifacts WHERE id = $1")
                        .bind(id)
                        .fetch_optional(self.pool())
                        .await?,
                )
            })
            .await?;
        Ok(row.flatten())
    }
}

fn corrupt(id: &str, err: serde_json::Error) -> PgError {
    PgError::Corrupt {
        what: format!("artifact {id}"),
        message: err.to_string(),
    }
}
