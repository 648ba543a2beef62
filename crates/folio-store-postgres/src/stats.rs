//! `folio store stats`: row counts and sizes of the store's tables.

use sqlx::Row;

use crate::{PgError, PgStore};

/// Counts and sizes of the store's tables (`folio store stats --json`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoreStats {
    /// Where the store is, without credentials: `host:port/database`.
    pub location: String,
    /// Sessions stored.
    pub sessions: i64,
    /// Events stored, over every session.
    pub events: i64,
    /// Leases whose holders still renew them (turns running now).
    pub live_leases: i64,
    /// Leases whose holders stopped renewing them (to be taken over).
    pub expired_leases: i64,
    /// Schedule slots claimed.
    pub slot_claims: i64,
    /// Creates recorded with an idempotency key.
    pub create_keys: i64,
    /// Reminders still to deliver.
    pub reminders: i64,
    /// Artifact records.
    pub artifacts: i64,
    /// Channel deliveries recorded.
    pub deliveries: i64,
    /// Storage entries (the host API's key-value storage; expired ones not yet purged
    /// included).
    pub storage_entries: i64,
    /// The bytes of the storage entries' keys and values.
    pub storage_bytes: i64,
    /// Each table's size on disk, indexes and TOAST included.
    pub tables: Vec<TableStats>,
    /// The whole database's size in bytes.
    pub database_bytes: i64,
}

/// One table's size.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TableStats {
    /// The table.
    pub name: String,
    /// Bytes on disk, indexes and TOAST included.
    pub bytes: i64,
}

const TABLES: [&str; 13] = [
    "folio_sessions",
    "folio_events",
    "folio_leases",
    "folio_create_keys",
    "folio_slot_claims",
    "folio_reminders",
    "folio_artifacts",
    "folio_channel_deliveries",
    "folio_channel_continuations",
    "folio_channel_replies",
    "folio_channel_follows",
    "folio_mcp_credentials",
    "folio_storage",
];

impl PgStore {
    /// Counts rows and measures the tables (exact counts: this scans the tables).
    pub async fn stats(&self) -> Result<StoreStats, PgError> {
        let row = self
            .retry("read store statistics", |_| async move {
                Ok(sqlx::query(
                    "SELECT (SELECT count(*) FROM folio_sessions) AS sessions,
                            (SELECT count(*) FROM folio_events) AS events,
                            (SELECT count(*) FROM folio_leases WHERE expires_at > now()) AS live,
                            (SELECT count(*) FROM folio_leases WHERE expires_at <= now()) AS expired,
                            (SELECT count(*) FROM folio_slot_claims) AS slots,
                            (SELECT count(*) FROM folio_create_keys) AS keys,
                            (SELECT count(*) FROM folio_reminders) AS reminders,
                            (SELECT count(*) FROM folio_artifacts) AS artifacts,
                            (SELECT count(*) FROM folio_channel_deliveries) AS deliveries,
                            (SELECT count(*) FROM folio_storage) AS storage_entries,
                            (SELECT coalesce(sum(bytes), 0)::bigint FROM folio_storage) AS storage_bytes,
                            pg_database_size(current_database()) AS database_bytes,
                            ARRAY(SELECT pg_total_relation_size(t::regclass) FROM unnest($1::text[]) t) AS sizes",
                )
                .bind(&TABLES[..])
                .fetch_one(self.pool())
                .await?)
            })
            .await?;
        let sizes: Vec<i64> = row.get("sizes");
        Ok(StoreStats {
            location: self.location(),
            sessions: row.get("sessions"),
            events: row.get("events"),
            live_leases: row.get("live"),
            expired_leases: row.get("expired"),
            slot_claims: row.get("slots"),
            create_keys: row.get("keys"),
            reminders: row.get("reminders"),
            artifacts: row.get("artifacts"),
            deliveries: row.get("deliveries"),
            storage_entries: row.get("storage_entries"),
            storage_bytes: row.get("storage_bytes"),
            tables: TABLES
                .iter()
                .zip(sizes)
                .map(|(name, bytes)| TableStats {
                    name: (*name).to_string(),
                    bytes,
                })
                .collect(),
            database_bytes: row.get("database_bytes"),
        })
    }
}
