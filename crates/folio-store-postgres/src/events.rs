//! The event log as rows: appends at an expected index under an optional lease's fencing
//! token, reads from an index, and followers woken by notifications from any server.

use chrono::{SubsecRound, Utc};
use folio_protocol::Event;
use std::sync::Arc;

use folio_store::{Appends, NewEvent, SessionMeta};
use sqlx::Row;
use tokio::sync::broadcast;

use crate::group::{Batch, Meta, Point, batch};
use crate::notify::{CONTROL_CHANNEL, Notice};
use crate::{PgError, PgStore};

impl PgStore {
    /// Appends `events` at `expected`, `expected + 1`, … and, with `meta`, replaces the
    /// session's metadata, in one transaction (gathered with other sessions' durable points:
    /// [`crate::group`]); returns the events as stored once committed.
    ///
    /// Refused, writing nothing, with [`PgError::NotFound`] (no such session),
    /// [`PgError::Fenced`] (`fence` is not the session's lease token) or
    /// [`PgError::Conflict`] (the log is not at `expected`, or a concurrent append won it). A
    /// retry after a connection dropped mid-append recognizes the rows it committed before the
    /// drop and succeeds.
    pub(crate) async fn append_events(
        &self,
        session_id: &str,
        expected: u64,
        fence: Option<u64>,
        events: Vec<NewEvent>,
        meta: Option<&SessionMeta>,
    ) -> Result<Vec<Event>, PgError> {
        if events.is_empty() {
            if let Some(meta) = meta {
                self.save_durably(meta).await?;
            }
            return Ok(Vec::new());
        }
        let token = fence.map(token_of).transpose()?;
        // Millisecond time: what the wire carries, so the events read back equal.
        let at = Utc::now().trunc_subsecs(3);
        let stored: Vec<Event> = events
            .into_iter()
            .zip(expected..)
            .map(|(event, index)| Event {
                index,
                session_id: session_id.to_string(),
                turn_id: event.turn_id,
                at: event.at.map_or(at, |given| given.trunc_subsecs(3)),
                body: event.body,
            })
            .collect();
        let point = Arc::new(Point {
            session_id: session_id.to_string(),
            expected: stored[0].index as i64,
            token,
            batch: batch(&stored)?,
            meta: meta.map(point_meta).transpose()?,
        });
        self.retry("append events", |attempt| {
            let point = point.clone();
            async move {
                if self.inner.committer.write(point.clone()).await? {
                    return Ok(());
                }
                // Refused (a condition failed, or a concurrent append took the index): nothing
                // written. Find out which.
                let batch = &point.batch;
                // A retry whose first try committed before its reply was lost finds its rows.
                if attempt > 0 && self.stored_lines(session_id, expected, batch).await? {
                    return Ok(());
                }
                if !self.session_exists(session_id).await? {
                    return Err(PgError::NotFound {
                        session_id: session_id.to_string(),
                    }
                    .into());
                }
                if let (Some(fence), Some(token)) = (fence, token)
                    && !self.lease_token_is(session_id, token).await?
                {
                    return Err(PgError::Fenced {
                        session_id: session_id.to_string(),
                        token: fence,
                    }
                    .into());
                }
                Err(PgError::Conflict {
                    session_id: session_id.to_string(),
                    expected,
                    actual: self.next_index(session_id).await?,
                }
                .into())
            }
        })
        .await?;
        Ok(stored)
    }

    /// Replaces the session's metadata through the group commit (a durable point with no
    /// events); [`PgError::NotFound`] when it does not exist.
    pub(crate) async fn save_durably(&self, meta: &SessionMeta) -> Result<(), PgError> {
        let point = Arc::new(Point {
            session_id: meta.session_id.clone(),
            expected: 0,
            token: None,
            batch: batch(&[])?,
            meta: Some(point_meta(meta)?),
        });
        let landed = self
            .retry("update a session", |_| {
                let point = point.clone();
                async move { Ok(self.inner.committer.write(point).await?) }
            })
            .await?;
        if !landed {
            return Err(PgError::NotFound {
                session_id: meta.session_id.clone(),
            });
        }
        Ok(())
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

    /// The index the next appended event gets (0 for an empty log).
    async fn next_index(&self, session_id: &str) -> Result<u64, sqlx::Error> {
        let next: i64 = sqlx::query_scalar(
            "SELECT COALESCE(max(idx) + 1, 0) FROM folio_events WHERE session_id = $1",
        )
        .bind(session_id)
        .fetch_one(self.pool())
        .await?;
        Ok(next as u64)
    }

    pub(crate) async fn session_exists(&self, session_id: &str) -> Result<bool, sqlx::Error> {
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM folio_sessions WHERE id = $1)")
            .bind(session_id)
            .fetch_one(self.pool())
            .await
    }

    /// The session's events from `start_index`, in order, at most `limit`;
    /// [`PgError::NotFound`] when the session does not exist.
    pub(crate) async fn read_events_from(
        &self,
        session_id: &str,
        start_index: u64,
        limit: Option<usize>,
    ) -> Result<Vec<Event>, PgError> {
        let limit = limit.map_or(i64::MAX, |limit| i64::try_from(limit).unwrap_or(i64::MAX));
        let lines = self
            .retry("read events", |_| async move {
                // One row of nulls: the session exists with no such events; no row: it
                // does not exist (one round trip either way).
                let rows: Vec<(Option<i64>, Option<String>)> = sqlx::query_as(
                    "SELECT e.idx, e.event FROM folio_sessions s
                     LEFT JOIN LATERAL (
                         SELECT idx, event FROM folio_events
                         WHERE session_id = s.id AND idx >= $2 ORDER BY idx LIMIT $3
                     ) e ON true
                     WHERE s.id = $1",
                )
                .bind(session_id)
                .bind(i64::try_from(start_index).unwrap_or(i64::MAX))
                .bind(limit)
                .fetch_all(self.pool())
                .await?;
                found(session_id, rows)
            })
            .await?;
        lines
            .iter()
            .map(|(index, line)| parse(session_id, *index, line))
            .collect()
    }

    /// The session's metadata and its events from `start_index`, in one query; `None` when
    /// the session does not exist.
    pub(crate) async fn read_back_from(
        &self,
        session_id: &str,
        start_index: u64,
    ) -> Result<Option<(SessionMeta, Vec<Event>)>, PgError> {
        let rows = self
            .retry("read a session back", |_| async move {
                // The metadata on every row; one row of nulls when no event is that recent.
                let rows: Vec<(String, Option<i64>, Option<String>)> = sqlx::query_as(
                    "SELECT s.meta::text, e.idx, e.event FROM folio_sessions s
                     LEFT JOIN LATERAL (
                         SELECT idx, event FROM folio_events
                         WHERE session_id = s.id AND idx >= $2 ORDER BY idx
                     ) e ON true
                     WHERE s.id = $1",
                )
                .bind(session_id)
                .bind(i64::try_from(start_index).unwrap_or(i64::MAX))
                .fetch_all(self.pool())
                .await?;
                Ok(rows)
            })
            .await?;
        let Some((document, ..)) = rows.first() else {
            return Ok(None);
        };
        let meta = crate::sessions::parse(session_id, document)?;
        let events = rows
            .iter()
            .filter_map(|(_, index, line)| index.zip(line.as_deref()))
            .map(|(index, line)| parse(session_id, index, line))
            .collect::<Result<_, _>>()?;
        Ok(Some((meta, events)))
    }

    /// The session's last event; [`PgError::NotFound`] when the session does not exist.
    pub(crate) async fn last_event_of(&self, session_id: &str) -> Result<Option<Event>, PgError> {
        let last = self
            .retry("read the last event", |_| async move {
                let rows: Vec<(Option<i64>, Option<String>)> = sqlx::query_as(
                    "SELECT e.idx, e.event FROM folio_sessions s
                     LEFT JOIN LATERAL (
                         SELECT idx, event FROM folio_events
                         WHERE session_id = s.id ORDER BY idx DESC LIMIT 1
                     ) e ON true
                     WHERE s.id = $1",
                )
                .bind(session_id)
                .fetch_all(self.pool())
                .await?;
                Ok(found(session_id, rows)?.pop())
            })
            .await?;
        last.map(|(index, line)| parse(session_id, index, &line))
            .transpose()
    }

    /// The log's last index and whether the session exists: what a follower polls.
    async fn poll(&self, session_id: &str) -> Result<(Option<u64>, bool), PgError> {
        self.retry("poll a session", |_| async move {
            let row = sqlx::query(
                "SELECT (SELECT max(idx) FROM folio_events WHERE session_id = $1) AS last,
                        EXISTS (SELECT 1 FROM folio_sessions WHERE id = $1) AS exists",
            )
            .bind(session_id)
            .fetch_one(self.pool())
            .await?;
            let last: Option<i64> = row.get("last");
            Ok((last.map(|last| last as u64), row.get("exists")))
        })
        .await
    }

    /// Follows the session's appends on every server: the index of the newest event after
    /// each append from now on. Woken by notifications; re-reads the log's end when the
    /// `LISTEN` connection was lost or lagged, and every
    /// [`PgOptions::poll_interval`](crate::PgOptions::poll_interval) in case a notification
    /// never came. Ends when the session is deleted (or the store fails for good). `known`:
    /// the log's last index when the caller knows it (a session it just created), so that
    /// it need not be read.
    pub(crate) async fn follow_appends(
        &self,
        session_id: &str,
        known: Option<Option<u64>>,
    ) -> Result<Appends, PgError> {
        let notices = self.inner.notices.subscribe();
        let last = match known {
            Some(last) => last,
            None => match self.poll(session_id).await? {
                (last, true) => last,
                (_, false) => {
                    return Err(PgError::NotFound {
                        session_id: session_id.to_string(),
                    });
                }
            },
        };
        let state = Follow {
            store: self.clone(),
            session_id: session_id.to_string(),
            last,
            notices,
        };
        Ok(Box::pin(futures::stream::unfold(
            state,
            |mut state| async move {
                let index = state.next_index().await?;
                Some((index, state))
            },
        )))
    }

    /// Subscribes to this process's view of every notification (appends, control messages,
    /// deletions).
    pub fn notices(&self) -> broadcast::Receiver<Notice> {
        self.inner.notices.subscribe()
    }

    /// Sends a control message (stop, preempt…) about a session to every server: the one
    /// owning its turn (the lease holder) acts on it, as a [`Notice::Control`].
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

/// A follower's position: the last index it reported.
struct Follow {
    store: PgStore,
    session_id: String,
    last: Option<u64>,
    notices: broadcast::Receiver<Notice>,
}

impl Follow {
    /// The next index to report, or `None` when the session is gone.
    async fn next_index(&mut self) -> Option<u64> {
        let poll = tokio::time::sleep(self.store.inner.options.poll_interval);
        tokio::pin!(poll);
        loop {
            let reread = tokio::select! {
                _ = &mut poll => true,
                notice = self.notices.recv() => match notice {
                    Ok(Notice::Appended { session_id, index }) if session_id == self.session_id => {
                        if self.last.is_none_or(|last| index > last) {
                            self.last = Some(index);
                            return Some(index);
                        }
                        false
                    }
                    Ok(Notice::Deleted { session_id }) if session_id == self.session_id => return None,
                    Ok(Notice::Lost) | Err(broadcast::error::RecvError::Lagged(_)) => true,
                    Ok(_) => false,
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
            };
            if !reread {
                continue;
            }
            poll.as_mut()
                .reset(tokio::time::Instant::now() + self.store.inner.options.poll_interval);
            match self.store.poll(&self.session_id).await {
                Ok((_, false)) => return None,
                Ok((Some(index), true)) if self.last.is_none_or(|last| index > last) => {
                    self.last = Some(index);
                    return Some(index);
                }
                Ok(_) => {}
                Err(err) => {
                    tracing::warn!(session_id = %self.session_id, error = %err, "following a session: the store stayed unreachable; the stream ends");
                    return None;
                }
            }
        }
    }
}

/// The fencing token as stored.
pub(crate) fn token_of(fence: u64) -> Result<i64, PgError> {
    i64::try_from(fence).map_err(|_| PgError::Corrupt {
        what: "a fencing token".into(),
        message: format!("{fence} is out of range"),
    })
}

fn parse(session_id: &str, index: i64, line: &str) -> Result<Event, PgError> {
    serde_json::from_str(line).map_err(|err| PgError::Corrupt {
        what: format!("event {index} of session {session_id}"),
        message: err.to_string(),
    })
}

/// The metadata of a durable point, as the session row stores it.
fn point_meta(meta: &SessionMeta) -> Result<Meta, PgError> {
    Ok(Meta {
        document: crate::sessions::document(meta)?,
        updated_at: meta.updated_at,
    })
}

/// The events a read of a session's row joined with its events found: [`PgError::NotFound`]
/// when there was no row (no session), none for one row of nulls (no such events).
fn found(
    session_id: &str,
    rows: Vec<(Option<i64>, Option<String>)>,
) -> Result<Vec<(i64, String)>, crate::retry::Failure> {
    if rows.is_empty() {
        return Err(PgError::NotFound {
            session_id: session_id.to_string(),
        }
        .into());
    }
    Ok(rows
        .into_iter()
        .filter_map(|(index, line)| index.zip(line))
        .collect())
}
