//! Group commit: the writes of concurrent sessions' durable points (their appended events and
//! metadata) gathered into one statement, so one transaction, one WAL flush and one `NOTIFY`
//! serve them all. PostgreSQL serializes the commits of notifying transactions,
//! so one transaction per append stopped at about 2,500 appends/s (bench/RESULTS.md, "Session
//! stores"); a group is bounded by how many points wait, not by that lock.
//!
//! A few committer tasks share one queue: each takes whatever waits (at most one point per
//! session, at most [`MAX_GROUP`]), writes it and answers each caller whether its point landed.
//! Every point is checked on its own in the statement (the session exists, the lease still
//! carries its token, the log is at its expected index), so a refused point is left out while
//! the others land; the caller then finds out why. A point that waits alone is written by a
//! statement for one session ([`WRITE_ONE`]): no cheaper to run, but much cheaper for a fresh
//! connection to parse and plan, which is what a write retried after a dropped connection
//! pays before it can commit.
//!
//! When a group's statement fails, its outcome decides what each caller hears:
//! - a transient failure (a dropped connection, a failover): the statement may have committed
//!   before its answer was lost, so every caller gets a retryable error and its own retry
//!   recognizes the rows that landed (nothing lost, nothing written twice);
//! - any other failure rolled the whole statement back (a writer on another server won an
//!   index: a unique violation), so each point is written again alone and only the one at
//!   fault gets the error.

use std::collections::HashSet;
use std::io;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use folio_protocol::Event;
use sqlx::PgPool;
use sqlx::postgres::PgConnectOptions;
use tokio::sync::{Mutex, mpsc, oneshot};

use crate::retry::is_transient;
use crate::{PgError, PgOptions};

/// The most durable points written in one statement.
const MAX_GROUP: usize = 256;
/// Statements in flight at once: one commits while the next gathers.
const COMMITTERS: usize = 2;

/// Writes every accepted point: its events (when the session exists, the log is at its first
/// index and, with a token, the lease still carries it: the lease row is held `FOR SHARE`, so a
/// takeover waits for this statement) and its metadata (when the session exists); notifies
/// `folio_events` once with `<session id>:<last index>` per session that appended, one a line
/// (one notification per 7,000 bytes of payload: PostgreSQL's limit is 8,000). Answers the
/// sessions whose points were accepted (the final `WHERE` makes the notifying part run).
const WRITE: &str = "
WITH point AS (
    SELECT * FROM UNNEST($1::text[], $2::bigint[], $3::bigint[], $4::int[], $5::text[],
                         $6::timestamptz[])
        AS p(session_id, expected, token, events, meta, updated_at)
), session AS (
    SELECT id FROM folio_sessions WHERE id IN (SELECT session_id FROM point) FOR KEY SHARE
), lease AS (
    SELECT session_id FROM folio_leases
    WHERE (session_id, token) IN (SELECT session_id, token FROM point WHERE token IS NOT NULL)
    FOR SHARE
), accepted AS MATERIALIZED (
    SELECT p.* FROM point p
    WHERE p.session_id IN (SELECT id FROM session)
      AND (p.token IS NULL OR p.session_id IN (SELECT session_id FROM lease))
      AND (p.events = 0 OR p.expected = COALESCE(
          (SELECT max(idx) + 1 FROM folio_events e WHERE e.session_id = p.session_id), 0))
), inserted AS (
    INSERT INTO folio_events (session_id, idx, kind, turn_id, at, event)
    SELECT e.session_id, e.idx, e.kind, e.turn_id, e.at, e.event
    FROM UNNEST($7::text[], $8::bigint[], $9::text[], $10::text[], $11::timestamptz[],
                $12::text[]) AS e(session_id, idx, kind, turn_id, at, event)
    WHERE e.session_id IN (SELECT session_id FROM accepted)
    RETURNING 1
), updated AS (
    UPDATE folio_sessions s SET meta = a.meta::jsonb, updated_at = a.updated_at
    FROM accepted a WHERE s.id = a.session_id AND a.meta IS NOT NULL
    RETURNING 1
), notified AS (
    SELECT pg_notify('folio_events', string_agg(entry, E'\n'))
    FROM (
        SELECT a.session_id || ':' || (a.expected + a.events - 1) AS entry,
               sum(octet_length(a.session_id) + 21) OVER (ORDER BY a.session_id) / 7000 AS chunk
        FROM accepted a WHERE a.events > 0
    ) entries
    GROUP BY chunk
)
SELECT session_id FROM accepted WHERE (SELECT count(*) FROM notified) >= 0";

/// [`WRITE`] for one session's point, its columns bound as scalars and arrays of its events:
/// answers 1 when the point was accepted, else 0.
const WRITE_ONE: &str = "
WITH session AS (
    SELECT 1 FROM folio_sessions WHERE id = $1 FOR KEY SHARE
), lease AS (
    SELECT 1 FROM folio_leases WHERE session_id = $1 AND token = $2 FOR SHARE
), accepted AS MATERIALIZED (
    SELECT 1 WHERE EXISTS (SELECT 1 FROM session)
      AND ($2::bigint IS NULL OR EXISTS (SELECT 1 FROM lease))
      AND (cardinality($3::bigint[]) = 0 OR $3[1] = COALESCE(
          (SELECT max(idx) + 1 FROM folio_events WHERE session_id = $1), 0))
), inserted AS (
    INSERT INTO folio_events (session_id, idx, kind, turn_id, at, event)
    SELECT $1, e.idx, e.kind, e.turn_id, e.at, e.event
    FROM UNNEST($3::bigint[], $4::text[], $5::text[], $6::timestamptz[], $7::text[])
        AS e(idx, kind, turn_id, at, event)
    WHERE EXISTS (SELECT 1 FROM accepted)
    RETURNING idx
), updated AS (
    UPDATE folio_sessions SET meta = $8::text::jsonb, updated_at = $9
    WHERE id = $1 AND $8::text IS NOT NULL AND EXISTS (SELECT 1 FROM accepted)
    RETURNING 1
), notified AS (
    SELECT pg_notify('folio_events', $1 || ':' || max(idx)) FROM inserted HAVING count(*) > 0
)
SELECT count(*)::int FROM accepted WHERE (SELECT count(*) FROM notified) >= 0";

/// One session's durable point: events to append at `expected` (none: a commit of metadata
/// only) under `token`, and the metadata to write with them.
pub(crate) struct Point {
    pub(crate) session_id: String,
    pub(crate) expected: i64,
    pub(crate) token: Option<i64>,
    pub(crate) batch: Batch,
    pub(crate) meta: Option<Meta>,
}

/// Metadata as the session row stores it.
pub(crate) struct Meta {
    pub(crate) document: String,
    pub(crate) updated_at: DateTime<Utc>,
}

/// Whether a point landed (`false`: refused, nothing written), or why its statement failed.
type Answer = Result<bool, sqlx::Error>;

struct Request {
    point: Arc<Point>,
    reply: oneshot::Sender<Answer>,
}

struct Queue {
    requests: mpsc::UnboundedReceiver<Request>,
    /// A point taken from the queue whose session already had one in the group: the next
    /// group's first.
    held: Option<Request>,
}

/// The queue of points waiting to be written, and its committer tasks (they end when the
/// store's last handle is dropped).
#[derive(Debug)]
pub(crate) struct Committer {
    requests: mpsc::UnboundedSender<Request>,
}

impl Committer {
    /// Starts the committer tasks, writing through connections of their own made with
    /// `connect`. Those plan [`WRITE`] and [`WRITE_ONE`] once (PostgreSQL's generic plans):
    /// left to choose, PostgreSQL planned each group's statement anew for its array lengths,
    /// and that planning was most of a group's cost (store_append, 32 writers: 9,468 durable
    /// appends/s planned each time, 14,218–19,019/s planned once; bench/RESULTS.md). The
    /// store's other queries keep PostgreSQL's choice: their plans depend on their filters.
    pub(crate) fn start(options: &PgOptions, connect: &PgConnectOptions) -> Committer {
        let connect = connect
            .clone()
            .options([("plan_cache_mode", "force_generic_plan")]);
        let pool = crate::pool(options, COMMITTERS as u32, connect);
        let (requests, receiver) = mpsc::unbounded_channel();
        let queue = Arc::new(Mutex::new(Queue {
            requests: receiver,
            held: None,
        }));
        for _ in 0..COMMITTERS {
            tokio::spawn(commit_groups(pool.clone(), queue.clone()));
        }
        Committer { requests }
    }

    /// Writes `point` with whatever other sessions' points wait; answers once its
    /// transaction committed.
    pub(crate) async fn write(&self, point: Arc<Point>) -> Answer {
        let (reply, answer) = oneshot::channel();
        if self.requests.send(Request { point, reply }).is_err() {
            return Err(sqlx::Error::PoolClosed);
        }
        // A committer that stopped mid-way (the runtime shutting down): worth a retry.
        answer.await.unwrap_or(Err(sqlx::Error::WorkerCrashed))
    }
}

/// One committer: gathers a group, writes it, answers, until the queue closes.
async fn commit_groups(pool: PgPool, queue: Arc<Mutex<Queue>>) {
    while let Some(group) = gather(&queue).await {
        if group.len() == 1 {
            for request in group {
                answer_alone(&pool, request).await;
            }
            continue;
        }
        let points: Vec<&Point> = group.iter().map(|request| &*request.point).collect();
        match write_group(&pool, &points).await {
            Ok(accepted) => {
                for request in group {
                    let landed = accepted.contains(request.point.session_id.as_str());
                    let _ = request.reply.send(Ok(landed));
                }
            }
            Err(err) if is_transient(&err) => {
                for request in group {
                    let _ = request.reply.send(Err(outcome_unknown(&err)));
                }
            }
            Err(err) => {
                tracing::debug!(points = group.len(), error = %err, "a group commit failed; writing its points one by one");
                for request in group {
                    answer_alone(&pool, request).await;
                }
            }
        }
    }
}

/// Writes a request's point alone and answers it.
async fn answer_alone(pool: &PgPool, request: Request) {
    let answer = write_one(pool, &request.point).await;
    let _ = request.reply.send(answer.or_else(refused_or_failed));
}

/// The answer to each point of a group whose statement failed transiently: retryable, as the
/// failure was, and saying that the points may have landed (the caller's retry finds out).
fn outcome_unknown(err: &sqlx::Error) -> sqlx::Error {
    sqlx::Error::Io(io::Error::new(
        io::ErrorKind::ConnectionAborted,
        format!("a group commit failed, so whether this write landed is unknown: {err}"),
    ))
}

/// The answer to a point whose statement failed alone: refused when a concurrent writer on
/// another server took one of its indexes (a unique violation), else the error.
fn refused_or_failed(err: sqlx::Error) -> Answer {
    match err {
        sqlx::Error::Database(db) if db.is_unique_violation() => Ok(false),
        err => Err(err),
    }
}

/// The next group: the first point to come (`None`: the store is gone), then whatever else
/// waits, one point per session.
async fn gather(queue: &Mutex<Queue>) -> Option<Vec<Request>> {
    let mut queue = queue.lock().await;
    let first = match queue.held.take() {
        Some(held) => held,
        None => queue.requests.recv().await?,
    };
    let mut sessions = HashSet::from([first.point.session_id.clone()]);
    let mut group = vec![first];
    while group.len() < MAX_GROUP {
        let Ok(next) = queue.requests.try_recv() else {
            break;
        };
        if !sessions.insert(next.point.session_id.clone()) {
            queue.held = Some(next);
            break;
        }
        group.push(next);
    }
    Some(group)
}

/// Writes one point alone; answers whether it was accepted.
async fn write_one(pool: &PgPool, point: &Point) -> Result<bool, sqlx::Error> {
    let batch = &point.batch;
    let meta = point.meta.as_ref();
    let accepted: i32 = sqlx::query_scalar(WRITE_ONE)
        .bind(&point.session_id)
        .bind(point.token)
        .bind(&batch.indexes)
        .bind(&batch.kinds)
        .bind(&batch.turn_ids)
        .bind(&batch.ats)
        .bind(&batch.lines)
        .bind(meta.map(|meta| meta.document.as_str()))
        .bind(meta.map(|meta| meta.updated_at))
        .fetch_one(pool)
        .await?;
    Ok(accepted > 0)
}

/// Writes `points` in one statement; answers the sessions whose points were accepted.
async fn write_group(pool: &PgPool, points: &[&Point]) -> Result<HashSet<String>, sqlx::Error> {
    let events: usize = points.iter().map(|point| point.batch.indexes.len()).sum();
    let mut columns = Columns::with_capacity(points.len(), events);
    for point in points {
        columns.push(point);
    }
    let accepted: Vec<String> = sqlx::query_scalar(WRITE)
        .bind(&columns.sessions)
        .bind(&columns.expected)
        .bind(&columns.tokens)
        .bind(&columns.counts)
        .bind(&columns.metas)
        .bind(&columns.updated)
        .bind(&columns.event_sessions)
        .bind(&columns.indexes)
        .bind(&columns.kinds)
        .bind(&columns.turn_ids)
        .bind(&columns.ats)
        .bind(&columns.lines)
        .fetch_all(pool)
        .await?;
    Ok(accepted.into_iter().collect())
}

/// A group's points as the statement binds them: one array per column.
struct Columns<'a> {
    sessions: Vec<&'a str>,
    expected: Vec<i64>,
    tokens: Vec<Option<i64>>,
    counts: Vec<i32>,
    metas: Vec<Option<&'a str>>,
    updated: Vec<Option<DateTime<Utc>>>,
    event_sessions: Vec<&'a str>,
    indexes: Vec<i64>,
    kinds: Vec<&'a str>,
    turn_ids: Vec<Option<&'a str>>,
    ats: Vec<DateTime<Utc>>,
    lines: Vec<&'a str>,
}

impl<'a> Columns<'a> {
    fn with_capacity(points: usize, events: usize) -> Self {
        Columns {
            sessions: Vec::with_capacity(points),
            expected: Vec::with_capacity(points),
            tokens: Vec::with_capacity(points),
            counts: Vec::with_capacity(points),
            metas: Vec::with_capacity(points),
            updated: Vec::with_capacity(points),
            event_sessions: Vec::with_capacity(events),
            indexes: Vec::with_capacity(events),
            kinds: Vec::with_capacity(events),
            turn_ids: Vec::with_capacity(events),
            ats: Vec::with_capacity(events),
            lines: Vec::with_capacity(events),
        }
    }

    fn push(&mut self, point: &'a Point) {
        let batch = &point.batch;
        self.sessions.push(&point.session_id);
        self.expected.push(point.expected);
        self.tokens.push(point.token);
        self.counts
            .push(i32::try_from(batch.indexes.len()).unwrap_or(i32::MAX));
        self.metas
            .push(point.meta.as_ref().map(|meta| meta.document.as_str()));
        self.updated
            .push(point.meta.as_ref().map(|meta| meta.updated_at));
        self.event_sessions.extend(std::iter::repeat_n(
            point.session_id.as_str(),
            batch.indexes.len(),
        ));
        self.indexes.extend_from_slice(&batch.indexes);
        self.kinds.extend(batch.kinds.iter().map(String::as_str));
        self.turn_ids
            .extend(batch.turn_ids.iter().map(Option::as_deref));
        self.ats.extend_from_slice(&batch.ats);
        self.lines.extend(batch.lines.iter().map(String::as_str));
    }
}

/// One append, as the statement binds it: columns of equal length.
pub(crate) struct Batch {
    pub(crate) indexes: Vec<i64>,
    pub(crate) kinds: Vec<String>,
    pub(crate) turn_ids: Vec<Option<String>>,
    pub(crate) ats: Vec<DateTime<Utc>>,
    pub(crate) lines: Vec<String>,
}

/// The columns of an append.
pub(crate) fn batch(events: &[Event]) -> Result<Batch, PgError> {
    let mut batch = Batch {
        indexes: Vec::with_capacity(events.len()),
        kinds: Vec::with_capacity(events.len()),
        turn_ids: Vec::with_capacity(events.len()),
        ats: Vec::with_capacity(events.len()),
        lines: Vec::with_capacity(events.len()),
    };
    for event in events {
        let what = || format!("event {} of session {}", event.index, event.session_id);
        batch
            .indexes
            .push(i64::try_from(event.index).map_err(|_| PgError::Corrupt {
                what: what(),
                message: "the index is out of range".into(),
            })?);
        batch.kinds.push(event.event_type().to_string());
        batch.turn_ids.push(event.turn_id.clone());
        batch.ats.push(event.at);
        batch.lines.push(
            serde_json::to_string(event).map_err(|err| PgError::Corrupt {
                what: what(),
                message: err.to_string(),
            })?,
        );
    }
    Ok(batch)
}
