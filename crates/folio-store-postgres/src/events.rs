//! The event log as rows: appends at a named index under an optional lease's fencing token,
//! reads from an index, and a follower that streams new events on any server.

use std::collections::VecDeque;

use folio_protocol::Event;
use futures::Stream;
use sqlx::Row;
use tokio::sync::broadcast;

use crate::notify::{CONTROL_CHANNEL, Notice};
use crate::retry::Failure;
use crate::{PgError, PgStore};

/// How many events one read returns at most.
const PAGE: i64 = 500;

/// One append, as the statement binds it: columns of equal length.
struct Batch {
    indexes: Vec<i64>,
    kinds: Vec<String>,
    turn_ids: Vec<Option<String>>,
    ats: Vec<chrono::DateTime<chrono::Utc>>,
    lines: Vec<String>,
}

/// Appends the events at their indexes when the log's next index is the first one's and (with a
/// token) the lease still carries it. The lease row is read `FOR SHARE` in the same statement:
/// a takeover (which updates that row) waits for this append to commit, and an append that
/// starts after a takeover sees the new token and inserts nothing.
const APPEND: &str = "
WITH lease AS (
    SELECT 1 FROM folio_leases WHERE session_id = $1 AND token = $7 FOR SHARE
)
INSERT INTO folio_events (session_id, idx, kind, turn_id, at, event)
SELECT $1, e.idx, e.kind, e.turn_id, e.at, e.event
FROM UNNEST($2::bigint[], $3::text[], $4::text[], $5::timestamptz[], $6::text[])
    AS e(idx, kind, turn_id, at, event)
WHERE ($7::bigint IS NULL OR EXISTS (SELECT 1 FROM lease))
  AND $2[1] = COALESCE((SELECT max(idx) + 1 FROM folio_events WHERE session_id = $1), 0)";

impl PgStore {
    /// Appends `events` (consecutive indexes, all of `session_id`) at the end of the log.
    ///
    /// With `token`, the append happens only while that lease is the session's current one
    /// ([`PgError::Fenced`] otherwise). When the log's next index is not the first event's, or a
    /// concurrent append wins the index, nothing is written and [`PgError::Conflict`] says the
    /// actual next index. A retry after a connection dropped mid-append recognizes the rows it
    /// committed before the drop and succeeds.
    pub async fn append(
        &self,
        session_id: &str,
        token: Option<i64>,
        events: &[Event],
    ) -> Result<(), PgError> {
        let Some(first) = events.first() else {
            return Ok(());
        };
        let batch = batch(session_id, events)?;
        self.retry("append events", |attempt| {
            let batch = &batch;
            async move {
                let inserted = sqlx::query(APPEND)
                    .bind(session_id)
                    .bind(&batch.indexes)
                    .bind(&batch.kinds)
                    .bind(&batch.turn_ids)
                    .bind(&batch.ats)
                    .bind(&batch.lines)
                    .bind(token)
                    .execute(self.pool())
                    .await;
                // Zero rows (the index or the token did not match) or a unique violation (a
                // concurrent append took the index): refused, and nothing was written.
                match inserted {
                    Ok(done) if done.rows_affected() == batch.indexes.len() as u64 => {
                        return Ok(());
                    }
                    Ok(_) => {}
                    Err(sqlx::Error::Database(db)) if db.is_unique_violation() => {}
                    Err(err) => return Err(Failure::Db(err)),
                }
                // A retry whose first try committed before its reply was lost finds its own rows.
                if attempt > 0 && self.stored_lines(session_id, first.index, batch).await? {
                    return Ok(());
                }
                if let Some(token) = token
                    && !self.lease_token_is(session_id, token).await?
                {
                    return Err(Failure::Store(PgError::Fenced {
                        session_id: session_id.to_string(),
                        token,
                    }));
                }
                Err(Failure::Store(PgError::Conflict {
                    session_id: session_id.to_string(),
                    expected: first.index,
                    actual: self.next_index_once(session_id).await?,
                }))
            }
        })
        .await
    }

    /// Whether the log holds exactly `batch`'s lines from `from`.
    async fn stored_lines(
        &self,
        session_id: &str,
        from: u64,
        batch: &Batch,
    ) -> Result<bool, sqlx::Error> {
        let stored: Vec<String> = sqlx::query_scalar(
            "SELECT event FROM folio_events WHERE session_id = $1 AND idx >= $2 ORDER BY idx LIMIT $3",
        )
        .bind(session_id)
        .bind(from as i64)
        .bind(batch.lines.len() as i64)
        .fetch_all(self.pool())
        .await?;
        Ok(stored == batch.lines)
    }

    async fn next_index_once(&self, session_id: &str) -> Result<u64, sqlx::Error> {
        let next: i64 = sqlx::query_scalar(
            "SELECT COALESCE(max(idx) + 1, 0) FROM folio_events WHERE session_id = $1",
        )
        .bind(session_id)
        .fetch_one(self.pool())
        .await?;
        Ok(next as u64)
    }

    /// The index the next appended event gets (0 for an empty log).
    pub async fn next_index(&self, session_id: &str) -> Result<u64, PgError> {
        self.retry("read the next index", |_| async {
            Ok(self.next_index_once(session_id).await?)
        })
        .await
    }

    /// Up to `limit` events of the session from index `from`, in order.
    pub async fn read(
        &self,
        session_id: &str,
        from: u64,
        limit: usize,
    ) -> Result<Vec<Event>, PgError> {
        let rows = self
            .retry("read events", |_| async {
                Ok(sqlx::query(
                    "SELECT idx, event FROM folio_events WHERE session_id = $1 AND idx >= $2 ORDER BY idx LIMIT $3",
                )
                .bind(session_id)
                .bind(i64::try_from(from).unwrap_or(i64::MAX))
                .bind(i64::try_from(limit).unwrap_or(i64::MAX))
                .fetch_all(self.pool())
                .await?)
            })
            .await?;
        rows.iter()
            .map(|row| {
                let index: i64 = row.get(0);
                let line: &str = row.get(1);
                serde_json::from_str(line).map_err(|err| PgError::Corrupt {
                    what: format!("event {index} of session {session_id}"),
                    message: err.to_string(),
                })
            })
            .collect()
    }

    /// Every event of the session from index `from`.
    pub async fn read_all(&self, session_id: &str, from: u64) -> Result<Vec<Event>, PgError> {
        let mut events = Vec::new();
        loop {
            let next = events.last().map_or(from, |e: &Event| e.index + 1);
            let page = self.read(session_id, next, PAGE as usize).await?;
            let done = page.len() < PAGE as usize;
            events.extend(page);
            if done {
                return Ok(events);
            }
        }
    }

    /// The session's events from index `from`, then each new one as any server appends it;
    /// never a gap or a duplicate. Woken by notifications, and by polling every
    /// [`PgOptions::poll_interval`](crate::PgOptions::poll_interval) in case one was lost.
    /// Ends after yielding an error.
    pub fn follow(
        &self,
        session_id: &str,
        from: u64,
    ) -> impl Stream<Item = Result<Event, PgError>> + Send + 'static {
        let state = Follow {
            store: self.clone(),
            session_id: session_id.to_string(),
            next: from,
            buffered: VecDeque::new(),
            notices: self.inner.notices.subscribe(),
            failed: false,
        };
        futures::stream::unfold(state, |mut state| async move {
            let item = state.next_event().await?;
            Some((item, state))
        })
    }

    /// Subscribes to this process's view of every notification (appends and control messages).
    pub fn notices(&self) -> broadcast::Receiver<Notice> {
        self.inner.notices.subscribe()
    }

    /// Sends a control message (stop, preempt…) about a session to every server; the one
    /// owning its turn acts on it. The message must not be empty.
    pub async fn signal(&self, session_id: &str, message: &str) -> Result<(), PgError> {
        let payload = format!("{session_id}:{message}");
        self.retry("send a control message", |_| async {
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(CONTROL_CHANNEL)
                .bind(&payload)
                .execute(self.pool())
                .await?;
            Ok(())
        })
        .await
    }
}

/// A follower's position.
struct Follow {
    store: PgStore,
    session_id: String,
    next: u64,
    buffered: VecDeque<Event>,
    notices: broadcast::Receiver<Notice>,
    failed: bool,
}

impl Follow {
    async fn next_event(&mut self) -> Option<Result<Event, PgError>> {
        if self.failed {
            return None;
        }
        loop {
            if let Some(event) = self.buffered.pop_front() {
                self.next = event.index + 1;
                return Some(Ok(event));
            }
            match self
                .store
                .read(&self.session_id, self.next, PAGE as usize)
                .await
            {
                Ok(page) if !page.is_empty() => {
                    self.buffered.extend(page);
                    continue;
                }
                Ok(_) => {}
                Err(err) => {
                    self.failed = true;
                    return Some(Err(err));
                }
            }
            self.wait().await;
        }
    }

    /// Waits for a notification that may concern this session, or the poll interval.
    async fn wait(&mut self) {
        let poll = tokio::time::sleep(self.store.inner.options.poll_interval);
        tokio::pin!(poll);
        loop {
            tokio::select! {
                _ = &mut poll => return,
                notice = self.notices.recv() => match notice {
                    Ok(Notice::Appended { session_id, index })
                        if session_id == self.session_id && index >= self.next => return,
                    Ok(Notice::Lost) | Err(broadcast::error::RecvError::Lagged(_)) => return,
                    Ok(_) => {}
                    // The store is gone: polling is all that is left.
                    Err(broadcast::error::RecvError::Closed) => {
                        (&mut poll).await;
                        return;
                    }
                },
            }
        }
    }
}

/// The columns of an append; every event must belong to the session, indexes consecutive.
fn batch(session_id: &str, events: &[Event]) -> Result<Batch, PgError> {
    let mut batch = Batch {
        indexes: Vec::with_capacity(events.len()),
        kinds: Vec::with_capacity(events.len()),
        turn_ids: Vec::with_capacity(events.len()),
        ats: Vec::with_capacity(events.len()),
        lines: Vec::with_capacity(events.len()),
    };
    for (offset, event) in events.iter().enumerate() {
        let first = events[0].index;
        if event.session_id != session_id || event.index != first + offset as u64 {
            return Err(PgError::Corrupt {
                what: format!("append to session {session_id}"),
                message: format!(
                    "event {} of session {} is not the next of a consecutive batch from {first}",
                    event.index, event.session_id
                ),
            });
        }
        batch
            .indexes
            .push(i64::try_from(event.index).map_err(|_| PgError::Corrupt {
                what: format!("append to session {session_id}"),
                message: format!("index {} is out of range", event.index),
            })?);
        batch.kinds.push(event.event_type().to_string());
        batch.turn_ids.push(event.turn_id.clone());
        batch.ats.push(event.at);
        batch.lines.push(
            serde_json::to_string(event).map_err(|err| PgError::Corrupt {
                what: format!("event {} of session {session_id}", event.index),
                message: err.to_string(),
            })?,
        );
    }
    Ok(batch)
}
