//! The embedded migrations and the schema-version check that keeps an older binary off a
//! database a newer one migrated.

use sqlx::PgPool;
use sqlx::migrate::Migrator;

/// The migrations under `migrations/`, compiled into the binary.
pub(crate) static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

/// Where a database's schema stands against this binary (`folio store check --json`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SchemaStatus {
    /// Where the store is, without credentials: `host:port/database`.
    pub location: String,
    /// The newest migration applied to the database (0: none, an empty database).
    pub database: i64,
    /// The newest migration this binary carries.
    pub binary: i64,
}

impl SchemaStatus {
    /// The database is older than the binary: `migrate` (or starting a server) brings it up.
    pub fn pending(&self) -> bool {
        self.database < self.binary
    }

    /// The database was migrated by a newer Folio: this binary must not use it.
    pub fn newer(&self) -> bool {
        self.database > self.binary
    }
}

/// The newest migration this binary carries.
pub(crate) fn binary_version() -> i64 {
    MIGRATOR
        .iter()
        .map(|migration| migration.version)
        .max()
        .unwrap_or(0)
}

/// Reads the database's schema version (0 when nothing was ever migrated).
pub(crate) async fn database_version(pool: &PgPool) -> Result<i64, sqlx::Error> {
    let exists: bool = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
        .fetch_one(pool)
        .await?;
    if !exists {
        return Ok(0);
    }
    let version: Option<i64> =
        sqlx::query_scalar("SELECT max(version) FROM _sqlx_migrations WHERE success")
            .fetch_one(pool)
            .await?;
    Ok(version.unwrap_or(0))
}
