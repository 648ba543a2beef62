//! Channel deliveries as rows ([`DeliveryStore`] for [`PgStore`]): a delivery is inserted
//! once per `(channel, id)` (a second insert within 24 h counts a duplicate), pending work and
//! follows are claimed with an expiry that a live server takes over when it passes, and the
//! continuation keys and reported replies are rows every server reads. Each operation is one
//! statement (or a short loop of them that a concurrent change only sends round again), so no
//! row lock is held across a round trip.

use std::time::Duration;

use folio_protocol::{DeliveryInfo, DeliveryRetry, DeliveryStatus};
use folio_store::{
    Admitted, ChannelRecord, Continuation, DeliveryOutcome, DeliveryStore, Follow, Followed,
    ReceivedDelivery, StoreError,
};
use serde_json::Value;
use sqlx::Row;
use sqlx::postgres::PgRow;

use crate::{PgError, PgStore};

/// A claim's time to live, in milliseconds, as SQL binds it.
fn millis(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX)
}

fn corrupt(what: &str, err: impl std::fmt::Display) -> PgError {
    PgError::Corrupt {
        what: what.to_string(),
        message: err.to_string(),
    }
}

fn json<T: serde::Serialize>(what: &str, value: &T) -> Result<Value, PgError> {
    serde_json::to_value(value).map_err(|err| corrupt(what, err))
}

/// The status as the `status` column keeps it (its JSON name).
pub(crate) fn status_name(status: DeliveryStatus) -> Result<String, PgError> {
    match json("a delivery status", &status)? {
        Value::String(name) => Ok(name),
        other => Err(corrupt("a delivery status", other)),
    }
}

/// The columns [`received`] reads.
const RECEIVED: &str = "id, received_at, route, retry, decision";

pub(crate) fn received(row: &PgRow) -> Result<ReceivedDelivery, PgError> {
    let id: String = row.try_get("id").map_err(PgError::Database)?;
    let what = format!("delivery {id}");
    let retry: Option<Value> = row.try_get("retry").map_err(PgError::Database)?;
    let decision: Value = row.try_get("decision").map_err(PgError::Database)?;
    Ok(ReceivedDelivery {
        received_at: row.try_get("received_at").map_err(PgError::Database)?,
        route: row.try_get("route").map_err(PgError::Database)?,
        retry: retry
            .map(serde_json::from_value)
            .transpose()
            .map_err(|err| corrupt(&what, err))?,
        decision: match decision {
            Value::Object(map) => map,
            other => return Err(corrupt(&what, format!("decision {other} is not an object"))),
        },
        id,
    })
}

/// The columns [`follow`] reads.
const FOLLOW: &str = "session_id, delivery_id, context, queued_check, generation";

fn follow(row: &PgRow) -> Result<Follow, PgError> {
    let queued: Option<i64> = row.try_get("queued_check").map_err(PgError::Database)?;
    let generation: i64 = row.try_get("generation").map_err(PgError::Database)?;
    Ok(Follow {
        session_id: row.try_get("session_id").map_err(PgError::Database)?,
        delivery_id: row.try_get("delivery_id").map_err(PgError::Database)?,
        context: row.try_get("context").map_err(PgError::Database)?,
        queued_check: queued.and_then(|id| u64::try_from(id).ok()),
        generation: u64::try_from(generation).unwrap_or(0),
    })
}

impl PgStore {
    /// Receives `delivery` with the first of the [`RECEIVE`] statements that applies.
    async fn receive_row(
        &self,
        channel: &str,
        delivery: &ReceivedDelivery,
        owner: &str,
        ttl: Duration,
    ) -> Result<Admitted, PgError> {
        let what = format!("delivery {}", delivery.id);
        let retry = delivery
            .retry
            .as_ref()
            .map(|r| json(&what, r))
            .transpose()?;
        let retries = json(&what, &delivery.retry.iter().collect::<Vec<_>>())?;
        let decision = Value::Object(delivery.decision.clone());
        self.retry("record a channel delivery", |_| {
            let (retry, retries, decision) = (retry.clone(), retries.clone(), decision.clone());
            async move {
                loop {
                    for (statement, admitted) in RECEIVE {
                        let done = sqlx::query(statement)
                            .bind(channel)
                            .bind(&delivery.id)
                            .bind(delivery.received_at)
                            .bind(&delivery.route)
                            .bind(&retry)
                            .bind(&retries)
                            .bind(&decision)
                            .bind(owner)
                            .bind(millis(ttl))
                            .execute(self.pool())
                            .await?;
                        if done.rows_affected() == 1 {
                            return Ok(admitted);
                        }
                    }
                    // Another server changed the row between the statements: look again.
                }
            }
        })
        .await
    }
}

/// The statements of a receipt, tried in turn until one changes a row, and what that makes
/// the delivery: a first insert; a count on a row received within 24 h before it; a row older
/// than that received anew. Each binds channel, id, received at, route, the request's retry,
/// its retries (a list), the decision, the receiving server and the claim's milliseconds.
const RECEIVE: [(&str, Admitted); 3] = [
    (
        "INSERT INTO folio_channel_deliveries
             (channel, id, received_at, route, retry, retries, decision, claimed_by,
              claimed_until)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now() + $9 * interval '1 millisecond')
         ON CONFLICT (channel, id) DO NOTHING",
        Admitted::New,
    ),
    (
        "UPDATE folio_channel_deliveries
         SET duplicates = duplicates + 1, retries = retries || $6
         WHERE channel = $1 AND id = $2 AND received_at > $3 - interval '24 hours'",
        Admitted::Duplicate,
    ),
    (
        "UPDATE folio_channel_deliveries
         SET received_at = $3, route = $4, retry = $5, retries = $6, decision = $7,
             status = 'pending', session_id = NULL, message = NULL, duplicates = 0,
             claimed_by = $8, claimed_until = now() + $9 * interval '1 millisecond'
         WHERE channel = $1 AND id = $2 AND received_at <= $3 - interval '24 hours'",
        Admitted::New,
    ),
];

#[async_trait::async_trait]
impl DeliveryStore for PgStore {
    async fn receive_delivery(
        &self,
        channel: &str,
        delivery: &ReceivedDelivery,
        owner: &str,
        ttl: Duration,
    ) -> Result<Admitted, StoreError> {
        Ok(self.receive_row(channel, delivery, owner, ttl).await?)
    }

    async fn finish_delivery(
        &self,
        channel: &str,
        id: &str,
        outcome: &DeliveryOutcome,
    ) -> Result<(), StoreError> {
        let status = status_name(outcome.status)?;
        self.retry("record a delivery's outcome", |_| {
            let status = status.clone();
            async move {
                sqlx::query(
                    "UPDATE folio_channel_deliveries
                     SET status = $3, session_id = $4, message = $5,
                         claimed_by = NULL, claimed_until = NULL
                     WHERE channel = $1 AND id = $2",
                )
                .bind(channel)
                .bind(id)
                .bind(status)
                .bind(&outcome.session_id)
                .bind(&outcome.message)
                .execute(self.pool())
                .await?;
                Ok(())
            }
        })
        .await?;
        Ok(())
    }

    async fn claim_deliveries(
        &self,
        channel: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Vec<ReceivedDelivery>, StoreError> {
        let rows = self
            .retry("claim pending deliveries", |_| async move {
                Ok(sqlx::query(&format!(
                    "WITH claimed AS (
                         UPDATE folio_channel_deliveries
                         SET claimed_by = $2,
                             claimed_until = now() + $3 * interval '1 millisecond'
                         WHERE channel = $1 AND status = 'pending'
                           AND (claimed_until IS NULL OR claimed_until < now())
                         RETURNING seq, {RECEIVED})
                     SELECT {RECEIVED} FROM claimed ORDER BY seq"
                ))
                .bind(channel)
                .bind(owner)
                .bind(millis(ttl))
                .fetch_all(self.pool())
                .await?)
            })
            .await?;
        Ok(rows.iter().map(received).collect::<Result<_, _>>()?)
    }

    async fn list_deliveries(&self, channel: &str) -> Result<Vec<DeliveryInfo>, StoreError> {
        let rows = self
            .retry("list deliveries", |_| async move {
                Ok(sqlx::query(
                    "SELECT id, received_at, route, status, session_id, message, duplicates,
                            retries
                     FROM folio_channel_deliveries WHERE channel = $1 ORDER BY seq DESC",
                )
                .bind(channel)
                .fetch_all(self.pool())
                .await?)
            })
            .await?;
        let info = |row: &PgRow| -> Result<DeliveryInfo, PgError> {
            let id: String = row.try_get("id").map_err(PgError::Database)?;
            let what = format!("delivery {id}");
            let status: String = row.try_get("status").map_err(PgError::Database)?;
            let retries: Value = row.try_get("retries").map_err(PgError::Database)?;
            let duplicates: i32 = row.try_get("duplicates").map_err(PgError::Database)?;
            Ok(DeliveryInfo {
                channel: channel.to_string(),
                received_at: row.try_get("received_at").map_err(PgError::Database)?,
                route: row.try_get("route").map_err(PgError::Database)?,
                status: serde_json::from_value(Value::String(status))
                    .map_err(|err| corrupt(&what, err))?,
                session_id: row.try_get("session_id").map_err(PgError::Database)?,
                message: row.try_get("message").map_err(PgError::Database)?,
                duplicates: u32::try_from(duplicates).unwrap_or(0),
                retries: serde_json::from_value::<Vec<DeliveryRetry>>(retries)
                    .map_err(|err| corrupt(&what, err))?,
                id,
            })
        };
        Ok(rows.iter().map(info).collect::<Result<_, _>>()?)
    }

    async fn continuation(&self, channel: &str, key: &str) -> Result<Option<String>, StoreError> {
        let session: Option<Option<String>> = self
            .retry("read a continuation key", |_| async move {
                Ok(sqlx::query_scalar(
                    "SELECT session_id FROM folio_channel_continuations
                     WHERE channel = $1 AND key = $2",
                )
                .bind(channel)
                .bind(key)
                .fetch_optional(self.pool())
                .await?)
            })
            .await?;
        Ok(session.flatten())
    }

    async fn reserve_continuation(
        &self,
        channel: &str,
        key: &str,
        stale: Option<&str>,
        owner: &str,
        ttl: Duration,
    ) -> Result<Continuation, StoreError> {
        Ok(self
            .retry("reserve a continuation key", |_| async move {
                let reserved = sqlx::query(
                    "INSERT INTO folio_channel_continuations AS c
                         (channel, key, reserved_by, reserved_until)
                     VALUES ($1, $2, $4, now() + $5 * interval '1 millisecond')
                     ON CONFLICT (channel, key) DO UPDATE SET
                         session_id = NULL,
                         reserved_by = EXCLUDED.reserved_by,
                         reserved_until = EXCLUDED.reserved_until
                     WHERE c.session_id = $3
                        OR (c.session_id IS NULL
                            AND (c.reserved_by = $4 OR c.reserved_until IS NULL
                                 OR c.reserved_until < now()))",
                )
                .bind(channel)
                .bind(key)
                .bind(stale)
                .bind(owner)
                .bind(millis(ttl))
                .execute(self.pool())
                .await?;
                if reserved.rows_affected() == 1 {
                    return Ok(Continuation::Reserved);
                }
                let session: Option<Option<String>> = sqlx::query_scalar(
                    "SELECT session_id FROM folio_channel_continuations
                     WHERE channel = $1 AND key = $2",
                )
                .bind(channel)
                .bind(key)
                .fetch_optional(self.pool())
                .await?;
                Ok(match session.flatten() {
                    Some(session) => Continuation::Bound(session),
                    None => Continuation::Busy,
                })
            })
            .await?)
    }

    async fn bind_continuation(
        &self,
        channel: &str,
        key: &str,
        session_id: &str,
    ) -> Result<(), StoreError> {
        self.retry("bind a continuation key", |_| async move {
            sqlx::query(
                "INSERT INTO folio_channel_continuations (channel, key, session_id)
                 VALUES ($1, $2, $3)
                 ON CONFLICT (channel, key) DO UPDATE SET
                     session_id = EXCLUDED.session_id, reserved_by = NULL,
                     reserved_until = NULL",
            )
            .bind(channel)
            .bind(key)
            .bind(session_id)
            .execute(self.pool())
            .await?;
            Ok(())
        })
        .await?;
        Ok(())
    }

    async fn replied(
        &self,
        channel: &str,
        session_id: &str,
        turn_id: &str,
    ) -> Result<bool, StoreError> {
        Ok(self
            .retry("read a reported reply", |_| async move {
                Ok(sqlx::query_scalar(
                    "SELECT EXISTS (SELECT 1 FROM folio_channel_replies
                     WHERE channel = $1 AND session_id = $2 AND turn_id = $3)",
                )
                .bind(channel)
                .bind(session_id)
                .bind(turn_id)
                .fetch_one(self.pool())
                .await?)
            })
            .await?)
    }

    async fn record_reply(
        &self,
        channel: &str,
        session_id: &str,
        turn_id: &str,
        failed: Option<&str>,
    ) -> Result<(), StoreError> {
        self.retry("record a reported reply", |_| async move {
            sqlx::query(
                "INSERT INTO folio_channel_replies (channel, session_id, turn_id, failed)
                 VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
            )
            .bind(channel)
            .bind(session_id)
            .bind(turn_id)
            .bind(failed)
            .execute(self.pool())
            .await?;
            Ok(())
        })
        .await?;
        Ok(())
    }

    async fn follow_session(
        &self,
        channel: &str,
        session_id: &str,
        delivery_id: &str,
        context: &Value,
        queued_check: Option<u64>,
        owner: &str,
        ttl: Duration,
    ) -> Result<Followed, StoreError> {
        let queued = queued_check.and_then(|id| i64::try_from(id).ok());
        Ok(self
            .retry("follow a session", |_| async move {
                loop {
                    // Nobody follows it, or its follower's claim expired: the caller does.
                    let started = sqlx::query(&format!(
                        "INSERT INTO folio_channel_follows AS f
                             (channel, session_id, delivery_id, context, queued_check, owner,
                              until)
                         VALUES ($1, $2, $3, $4, $5, $6, now() + $7 * interval '1 millisecond')
                         ON CONFLICT (channel, session_id) DO UPDATE SET
                             delivery_id = EXCLUDED.delivery_id, context = EXCLUDED.context,
                             queued_check = coalesce(EXCLUDED.queued_check, f.queued_check),
                             generation = f.generation + 1, owner = EXCLUDED.owner,
                             until = EXCLUDED.until
                         WHERE f.until < now()
                         RETURNING {FOLLOW}"
                    ))
                    .bind(channel)
                    .bind(session_id)
                    .bind(delivery_id)
                    .bind(context)
                    .bind(queued)
                    .bind(owner)
                    .bind(millis(ttl))
                    .fetch_optional(self.pool())
                    .await?;
                    if let Some(row) = started {
                        return Ok(Followed::Started(follow(&row)?));
                    }
                    // A live follower: it sees the new context and a newer generation.
                    let told = sqlx::query(
                        "UPDATE folio_channel_follows AS f SET
                             context = $3, queued_check = coalesce($4, f.queued_check),
                             generation = f.generation + 1
                         WHERE channel = $1 AND session_id = $2 AND until >= now()",
                    )
                    .bind(channel)
                    .bind(session_id)
                    .bind(context)
                    .bind(queued)
                    .execute(self.pool())
                    .await?;
                    if told.rows_affected() == 1 {
                        return Ok(Followed::Running);
                    }
                    // Its follow ended or expired between the statements: look again.
                }
            })
            .await?)
    }

    async fn renew_follow(
        &self,
        channel: &str,
        session_id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Option<Follow>, StoreError> {
        let row = self
            .retry("renew a follow", |_| async move {
                Ok(sqlx::query(&format!(
                    "UPDATE folio_channel_follows
                     SET until = now() + $4 * interval '1 millisecond'
                     WHERE channel = $1 AND session_id = $2 AND owner = $3
                     RETURNING {FOLLOW}"
                ))
                .bind(channel)
                .bind(session_id)
                .bind(owner)
                .bind(millis(ttl))
                .fetch_optional(self.pool())
                .await?)
            })
            .await?;
        Ok(row.as_ref().map(follow).transpose()?)
    }

    async fn take_queued_check(
        &self,
        channel: &str,
        session_id: &str,
        owner: &str,
    ) -> Result<Option<u64>, StoreError> {
        let taken: Option<Option<i64>> = self
            .retry("take a queued check run", |_| async move {
                Ok(sqlx::query_scalar(
                    "UPDATE folio_channel_follows AS f SET queued_check = NULL
                     FROM (SELECT queued_check FROM folio_channel_follows
                           WHERE channel = $1 AND session_id = $2 AND owner = $3
                           FOR UPDATE) AS old
                     WHERE f.channel = $1 AND f.session_id = $2 AND f.owner = $3
                     RETURNING old.queued_check",
                )
                .bind(channel)
                .bind(session_id)
                .bind(owner)
                .fetch_optional(self.pool())
                .await?)
            })
            .await?;
        Ok(taken.flatten().and_then(|id| u64::try_from(id).ok()))
    }

    async fn end_follow(
        &self,
        channel: &str,
        session_id: &str,
        owner: &str,
        generation: u64,
    ) -> Result<bool, StoreError> {
        let generation = i64::try_from(generation).unwrap_or(i64::MAX);
        Ok(self
            .retry("end a follow", |_| async move {
                let ended = sqlx::query(
                    "DELETE FROM folio_channel_follows
                     WHERE channel = $1 AND session_id = $2 AND owner = $3
                       AND generation = $4",
                )
                .bind(channel)
                .bind(session_id)
                .bind(owner)
                .bind(generation)
                .execute(self.pool())
                .await?;
                Ok(ended.rows_affected() == 1)
            })
            .await?)
    }

    async fn channels(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.channel_names().await?)
    }

    async fn export_channel(&self, channel: &str) -> Result<ChannelRecord, StoreError> {
        Ok(self.channel_rows(channel).await?)
    }

    async fn import_channel(
        &self,
        channel: &str,
        record: &ChannelRecord,
    ) -> Result<(), StoreError> {
        Ok(self.import_channel_rows(channel, record).await?)
    }

    async fn claim_follows(
        &self,
        channel: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Vec<Follow>, StoreError> {
        let rows = self
            .retry("claim expired follows", |_| async move {
                Ok(sqlx::query(&format!(
                    "WITH claimed AS (
                         UPDATE folio_channel_follows
                         SET owner = $2, until = now() + $3 * interval '1 millisecond'
                         WHERE channel = $1 AND until < now()
                         RETURNING {FOLLOW})
                     SELECT {FOLLOW} FROM claimed ORDER BY session_id"
                ))
                .bind(channel)
                .bind(owner)
                .bind(millis(ttl))
                .fetch_all(self.pool())
                .await?)
            })
            .await?;
        Ok(rows.iter().map(follow).collect::<Result<_, _>>()?)
    }
}
