//! Leases on running turns (one row per session, fencing tokens from a sequence), idempotent
//! create keys and schedule slot claims.

use std::time::Duration;

use chrono::{DateTime, Utc};
use folio_store::{CreateKey, Lease};
use sqlx::Row;

use crate::events::token_of;
use crate::{PgError, PgStore};

/// Takes the lease on `$1` for owner `$2` for `$3` ms, in one statement: the current row is
/// locked (`FOR UPDATE`) and answered (`held_by`, `held_until`), and a new token is written
/// when the lease is free, expired or already `$2`'s (`token`, `expires_at`; null when
/// refused). A lease another server inserted after the snapshot is left alone by the
/// conflict clause's condition.
const ACQUIRE: &str = "
WITH current AS (
    SELECT owner, expires_at, expires_at <= now() AS expired
    FROM folio_leases WHERE session_id = $1 FOR UPDATE
), granted AS (
    INSERT INTO folio_leases (session_id, owner, token, expires_at)
    SELECT $1, $2, nextval('folio_lease_tokens'), now() + $3 * interval '1 millisecond'
    WHERE NOT EXISTS (SELECT 1 FROM current WHERE owner <> $2 AND NOT expired)
    ON CONFLICT (session_id) DO UPDATE
        SET owner = EXCLUDED.owner, token = EXCLUDED.token,
            acquired_at = now(), expires_at = EXCLUDED.expires_at
        WHERE folio_leases.expires_at <= now() OR folio_leases.owner = EXCLUDED.owner
    RETURNING token, expires_at
)
SELECT c.owner AS held_by, c.expires_at AS held_until, g.token, g.expires_at
FROM (SELECT 1) one LEFT JOIN current c ON true LEFT JOIN granted g ON true";

fn ttl_ms(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX)
}

impl PgStore {
    /// Takes the lease on `session_id` for `owner`, for `ttl`: free, already `owner`'s (a new
    /// token), or expired (taken over: [`Lease::took_over`] names the old owner). Another
    /// owner's live lease: [`PgError::LeaseHeld`]. The lease row is locked while deciding, so
    /// two servers racing for an expired lease cannot both take it.
    pub(crate) async fn acquire(
        &self,
        session_id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Lease, PgError> {
        self.retry("acquire a lease", |_| async move {
            // Loops only when a concurrent first acquirer's lease ended between this
            // statement's snapshot and a second look.
            loop {
                let row = sqlx::query(ACQUIRE)
                    .bind(session_id)
                    .bind(owner)
                    .bind(ttl_ms(ttl))
                    .fetch_one(self.pool())
                    .await?;
                let held_by: Option<String> = row.get("held_by");
                if let Some(token) = row.get::<Option<i64>, _>("token") {
                    return Ok(Lease {
                        session_id: session_id.to_string(),
                        owner: owner.to_string(),
                        fence: token as u64,
                        expires_at: row.get("expires_at"),
                        took_over: held_by.filter(|held_by| held_by != owner),
                    });
                }
                if let Some(held_by) = held_by.filter(|held_by| held_by != owner) {
                    return Err(PgError::LeaseHeld {
                        session_id: session_id.to_string(),
                        owner: held_by,
                        expires_at: row.get("held_until"),
                    }
                    .into());
                }
                // Another server inserted a lease after this statement's snapshot found none.
                if let Some(holder) = self.lease_row(session_id).await? {
                    return Err(PgError::LeaseHeld {
                        session_id: session_id.to_string(),
                        owner: holder.owner,
                        expires_at: holder.expires_at,
                    }
                    .into());
                }
            }
        })
        .await
    }

    /// Extends `lease` to now + `ttl`; [`PgError::Fenced`] when it was taken over or released.
    pub(crate) async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Lease, PgError> {
        let token = token_of(lease.fence)?;
        let renewed: Option<DateTime<Utc>> = self
            .retry("renew a lease", |_| async move {
                Ok(sqlx::query_scalar(
                    "UPDATE folio_leases SET expires_at = now() + $3 * interval '1 millisecond'
                     WHERE session_id = $1 AND token = $2 RETURNING expires_at",
                )
                .bind(&lease.session_id)
                .bind(token)
                .bind(ttl_ms(ttl))
                .fetch_optional(self.pool())
                .await?)
            })
            .await?;
        match renewed {
            Some(expires_at) => Ok(Lease {
                expires_at,
                ..lease.clone()
            }),
            None => Err(PgError::Fenced {
                session_id: lease.session_id.clone(),
                token: lease.fence,
            }),
        }
    }

    /// Ends `lease`; one already taken over is left to its new holder.
    pub(crate) async fn release(&self, lease: &Lease) -> Result<(), PgError> {
        let token = token_of(lease.fence)?;
        self.retry("release a lease", |_| async move {
            sqlx::query("DELETE FROM folio_leases WHERE session_id = $1 AND token = $2")
                .bind(&lease.session_id)
                .bind(token)
                .execute(self.pool())
                .await?;
            Ok(())
        })
        .await
    }

    /// The session's lease, live or expired.
    async fn lease_row(&self, session_id: &str) -> Result<Option<Lease>, sqlx::Error> {
        let row = sqlx::query(
            "SELECT session_id, owner, token, expires_at FROM folio_leases WHERE session_id = $1",
        )
        .bind(session_id)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.as_ref().map(lease))
    }

    pub(crate) async fn lease_token_is(
        &self,
        session_id: &str,
        token: i64,
    ) -> Result<bool, sqlx::Error> {
        Ok(self
            .lease_row(session_id)
            .await?
            .is_some_and(|lease| lease.fence == token as u64))
    }

    /// The leases whose holders stopped renewing them (their servers died), oldest first.
    pub(crate) async fn expired(&self) -> Result<Vec<Lease>, PgError> {
        let rows = self
            .retry("list expired leases", |_| async move {
                Ok(sqlx::query(
                    "SELECT session_id, owner, token, expires_at FROM folio_leases
                     WHERE expires_at <= now() ORDER BY expires_at",
                )
                .fetch_all(self.pool())
                .await?)
            })
            .await?;
        Ok(rows.iter().map(lease).collect())
    }

    /// Records a create's idempotency key unless its principal used it before; returns the
    /// earlier record then. A retry after a lost reply finds its own record and returns `None`.
    pub(crate) async fn record_key(
        &self,
        record: &CreateKey,
    ) -> Result<Option<CreateKey>, PgError> {
        self.retry("record a create key", |attempt| async move {
            let done = sqlx::query(
                "INSERT INTO folio_create_keys (principal, key, session_id, digest)
                 VALUES ($1, $2, $3, $4) ON CONFLICT (principal, key) DO NOTHING",
            )
            .bind(&record.principal)
            .bind(&record.key)
            .bind(&record.session_id)
            .bind(&record.digest)
            .execute(self.pool())
            .await?;
            if done.rows_affected() == 1 {
                return Ok(None);
            }
            let (session_id, digest): (String, String) = sqlx::query_as(
                "SELECT session_id, digest FROM folio_create_keys WHERE principal = $1 AND key = $2",
            )
            .bind(&record.principal)
            .bind(&record.key)
            .fetch_one(self.pool())
            .await?;
            let kept = CreateKey {
                principal: record.principal.clone(),
                key: record.key.clone(),
                session_id,
                digest,
            };
            Ok((attempt == 0 || kept != *record).then_some(kept))
        })
        .await
    }

    /// Claims `slot` of `schedule` for `owner`: true for exactly one caller across every server.
    pub(crate) async fn claim(
        &self,
        schedule: &str,
        slot: DateTime<Utc>,
        owner: &str,
    ) -> Result<bool, PgError> {
        self.retry("claim a schedule slot", |attempt| async move {
            let done = sqlx::query(
                "INSERT INTO folio_slot_claims (schedule, slot, owner) VALUES ($1, $2, $3)
                 ON CONFLICT (schedule, slot) DO NOTHING",
            )
            .bind(schedule)
            .bind(slot)
            .bind(owner)
            .execute(self.pool())
            .await?;
            if done.rows_affected() == 1 {
                return Ok(true);
            }
            // A retry whose first insert committed before the reply was lost: the claim is ours.
            if attempt > 0 {
                let holder: Option<String> = sqlx::query_scalar(
                    "SELECT owner FROM folio_slot_claims WHERE schedule = $1 AND slot = $2",
                )
                .bind(schedule)
                .bind(slot)
                .fetch_optional(self.pool())
                .await?;
                return Ok(holder.as_deref() == Some(owner));
            }
            Ok(false)
        })
        .await
    }
}

fn lease(row: &sqlx::postgres::PgRow) -> Lease {
    let token: i64 = row.get("token");
    Lease {
        session_id: row.get("session_id"),
        owner: row.get("owner"),
        fence: token as u64,
        expires_at: row.get("expires_at"),
        took_over: None,
    }
}
