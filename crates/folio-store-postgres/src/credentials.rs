//! The principals' MCP OAuth credentials as rows, one per principal and connection, replaced
//! whole by each save.

use serde_json::Value;

use crate::{PgError, PgStore};

impl PgStore {
    /// The credentials of `principal` for `connection`.
    pub(crate) async fn credentials_row(
        &self,
        principal: &str,
        connection: &str,
    ) -> Result<Option<Value>, PgError> {
        self.retry("read MCP credentials", |_| async move {
            Ok(sqlx::query_scalar(
                "SELECT credentials FROM folio_mcp_credentials
                 WHERE principal = $1 AND connection = $2",
            )
            .bind(principal)
            .bind(connection)
            .fetch_optional(self.pool())
            .await?)
        })
        .await
    }

    /// Stores (`Some`) or removes (`None`) the credentials of `principal` for `connection`.
    pub(crate) async fn put_credentials_row(
        &self,
        principal: &str,
        connection: &str,
        credentials: Option<&Value>,
    ) -> Result<(), PgError> {
        self.retry("store MCP credentials", |_| async move {
            match credentials {
                Some(credentials) => sqlx::query(
                    "INSERT INTO folio_mcp_credentials (principal, connection, credentials)
                     VALUES ($1, $2, $3)
                     ON CONFLICT (principal, connection) DO UPDATE SET
                         credentials = EXCLUDED.credentials, updated_at = now()",
                )
                .bind(principal)
                .bind(connection)
                .bind(credentials),
                None => sqlx::query(
                    "DELETE FROM folio_mcp_credentials WHERE principal = $1 AND connection = $2",
                )
                .bind(principal)
                .bind(connection),
            }
            .execute(self.pool())
            .await?;
            Ok(())
        })
        .await
    }
}
