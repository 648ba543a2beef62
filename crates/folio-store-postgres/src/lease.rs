//! Leases on running turns (one row per session, a fencing token from a sequence) and schedule
//! slot claims.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::Row;

use crate::retry::Failure;
use crate::{PgError, PgStore};

/// A lease this server holds on a session's running turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The session.
    pub session_id: String,
    /// The fencing token every append under this lease carries; larger than any earlier one.
    pub token: i64,
    /// When it expires unless renewed (the database's clock).
    pub expires_at: DateTime<Utc>,
    /// Set when this lease replaced an expired one: that holder died mid-turn, and the taker
    /// records that turn as failed (`server restarted`).
    pub took_over: Option<LeaseTakeover>,
}

/// The expired lease a new one replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseTakeover {
    /// The server that held it.
    pub owner: String,
    /// The turn it was running.
    pub turn_id: Option<String>,
    /// Its (now stale) fencing token.
    pub token: i64,
}

/// A lease row as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRow {
    /// The session.
    pub session_id: String,
    /// The server holding it.
    pub owner: String,
    /// The turn it runs.
    pub turn_id: Option<String>,
    /// Its fencing token.
    pub token: i64,
    /// When it expires unless renewed.
    pub expires_at: DateTime<Utc>,
}

fn ttl_ms(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX)
}

impl PgStore {
    /// Takes the lease on `session_id` for `owner`'s turn, for `ttl`.
    ///
    /// Free: a new lease. Held by `owner` for the same turn (a retry after a lost reply): the
    /// same lease, extended. Held and expired: taken over, with the old holder in
    /// [`Lease::took_over`]. Held and live: [`PgError::LeaseHeld`].
    pub async fn acquire_lease(
        &self,
        session_id: &str,
        owner: &str,
        turn_id: Option<&str>,
        ttl: Duration,
    ) -> Result<Lease, PgError> {
        self.retry("acquire a lease", |_| async move {
            // Loops only when a concurrent acquirer's lease ended between our two statements.
            loop {
            let mut tx = self.pool().begin().await?;
            let current = sqlx::query(
                "SELECT owner, turn_id, token, expires_at, expires_at <= now() AS expired
                 FROM folio_leases WHERE session_id = $1 FOR UPDATE",
            )
            .bind(session_id)
            .fetch_optional(&mut *tx)
            .await?;
            let mut took_over = None;
            if let Some(row) = &current {
                let held_by: String = row.get("owner");
                let held_turn: Option<String> = row.get("turn_id");
                let token: i64 = row.get("token");
                let expires_at: DateTime<Utc> = row.get("expires_at");
                let expired: bool = row.get("expired");
                if held_by == owner && held_turn.as_deref() == turn_id {
                    let expires_at: DateTime<Utc> = sqlx::query_scalar(
                        "UPDATE folio_leases SET expires_at = now() + $2 * interval '1 millisecond'
                         WHERE session_id = $1 RETURNING expires_at",
                    )
                    .bind(session_id)
                    .bind(ttl_ms(ttl))
                    .fetch_one(&mut *tx)
                    .await?;
                    tx.commit().await?;
                    return Ok(Lease {
                        session_id: session_id.to_string(),
                        token,
                        expires_at,
                        took_over: None,
                    });
                }
                if !expired {
                    return Err(Failure::Store(PgError::LeaseHeld {
                        session_id: session_id.to_string(),
                        owner: held_by,
                        expires_at,
                    }));
                }
                took_over = Some(LeaseTakeover {
                    owner: held_by,
                    turn_id: held_turn,
                    token,
                });
            }
            // ON CONFLICT DO NOTHING: a concurrent first acquirer that inserted meanwhile wins.
            let granted = sqlx::query(
                "INSERT INTO folio_leases (session_id, owner, turn_id, token, expires_at)
                 VALUES ($1, $2, $3, nextval('folio_lease_tokens'), now() + $4 * interval '1 millisecond')
                 ON CONFLICT (session_id) DO UPDATE
                    SET owner = EXCLUDED.owner, turn_id = EXCLUDED.turn_id, token = EXCLUDED.token,
                        acquired_at = now(), expires_at = EXCLUDED.expires_at
                    WHERE folio_leases.expires_at <= now()
                 RETURNING token, expires_at",
            )
            .bind(session_id)
            .bind(owner)
            .bind(turn_id)
            .bind(ttl_ms(ttl))
            .fetch_optional(&mut *tx)
            .await?;
            let Some(granted) = granted else {
                drop(tx);
                let holder = self.lease_once(session_id).await?;
                match holder {
                    Some(holder) => {
                        return Err(Failure::Store(PgError::LeaseHeld {
                            session_id: session_id.to_string(),
                            owner: holder.owner,
                            expires_at: holder.expires_at,
                        }));
                    }
                    None => continue,
                }
            };
            tx.commit().await?;
            return Ok(Lease {
                session_id: session_id.to_string(),
                token: granted.get("token"),
                expires_at: granted.get("expires_at"),
                took_over,
            });
            }
        })
        .await
    }

    /// Extends a held lease by `ttl` from now; [`PgError::Fenced`] when it was taken over.
    pub async fn renew_lease(
        &self,
        session_id: &str,
        token: i64,
        ttl: Duration,
    ) -> Result<DateTime<Utc>, PgError> {
        let renewed = self
            .retry("renew a lease", |_| async move {
                Ok(sqlx::query_scalar(
                    "UPDATE folio_leases SET expires_at = now() + $3 * interval '1 millisecond'
                     WHERE session_id = $1 AND token = $2 RETURNING expires_at",
                )
                .bind(session_id)
                .bind(token)
                .bind(ttl_ms(ttl))
                .fetch_optional(self.pool())
                .await?)
            })
            .await?;
        renewed.ok_or_else(|| PgError::Fenced {
            session_id: session_id.to_string(),
            token,
        })
    }

    /// Ends a lease (the turn finished); a lease already taken over is left to its new holder.
    /// Returns whether this token still held it.
    pub async fn release_lease(&self, session_id: &str, token: i64) -> Result<bool, PgError> {
        self.retry("release a lease", |_| async move {
            let done = sqlx::query("DELETE FROM folio_leases WHERE session_id = $1 AND token = $2")
                .bind(session_id)
                .bind(token)
                .execute(self.pool())
                .await?;
            Ok(done.rows_affected() == 1)
        })
        .await
    }

    /// The session's lease row, live or expired.
    pub async fn lease(&self, session_id: &str) -> Result<Option<LeaseRow>, PgError> {
        self.retry("read a lease", |_| async move {
            Ok(self.lease_once(session_id).await?)
        })
        .await
    }

    async fn lease_once(&self, session_id: &str) -> Result<Option<LeaseRow>, sqlx::Error> {
        let row = sqlx::query(
            "SELECT session_id, owner, turn_id, token, expires_at FROM folio_leases WHERE session_id = $1",
        )
        .bind(session_id)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.as_ref().map(lease_row))
    }

    pub(crate) async fn lease_token_is(
        &self,
        session_id: &str,
        token: i64,
    ) -> Result<bool, sqlx::Error> {
        Ok(self
            .lease_once(session_id)
            .await?
            .is_some_and(|lease| lease.token == token))
    }

    /// Up to `limit` leases whose holders stopped renewing them (their servers died): the
    /// sessions whose turns a live server should take over, oldest expiry first.
    pub async fn expired_leases(&self, limit: usize) -> Result<Vec<LeaseRow>, PgError> {
        let rows = self
            .retry("list expired leases", |_| async move {
                Ok(sqlx::query(
                    "SELECT session_id, owner, turn_id, token, expires_at FROM folio_leases
                     WHERE expires_at <= now() ORDER BY expires_at LIMIT $1",
                )
                .bind(i64::try_from(limit).unwrap_or(i64::MAX))
                .fetch_all(self.pool())
                .await?)
            })
            .await?;
        Ok(rows.iter().map(lease_row).collect())
    }

    /// Claims a schedule's slot for `owner`: true for exactly one caller across every server.
    pub async fn claim_slot(
        &self,
        schedule: &str,
        slot: &str,
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

fn lease_row(row: &sqlx::postgres::PgRow) -> LeaseRow {
    LeaseRow {
        session_id: row.get("session_id"),
        owner: row.get("owner"),
        turn_id: row.get("turn_id"),
        token: row.get("token"),
        expires_at: row.get("expires_at"),
    }
}
