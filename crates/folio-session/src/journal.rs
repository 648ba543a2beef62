//! Where a live session's events are written: the state root's NDJSON log ([`EventLog`], the
//! embedded default) or a session store that several servers share ([`StoreLog`], `folio serve
//! --store`).
//!
//! Both take appends synchronously (a turn's sink never waits on I/O per event) and make them
//! durable at the session's durable points ([`Journal::commit_with`]): the disk log syncs
//! through the group commit; the store log sends the events buffered since the last commit as
//! one [`SessionStore::append`] under the session's lease (its fencing token), which the bench
//! in `bench/RESULTS.md` ("Session stores") measured at 0.74 ms for a 24-event turn against
//! 11.8 ms for 24 single appends. While a turn runs, its actor also commits every
//! `PUBLISH_EVERY` (20 ms), so streams on every server follow it.
//!
//! Streams show an event only once it is written where every reader finds it: on disk at once
//! (a killed process leaves what it wrote in the page cache), in a store only after its append
//! (a killed server loses what it buffered, and the server taking its turn over reuses those
//! indexes: no client may have seen them).

use std::sync::{Arc, Mutex};

use folio_protocol::{Event, EventBody};
use folio_store::{NewEvent, SessionStore};

use crate::live::lock;
use crate::state::SyncTarget;
use folio_store_disk::{EventLog, LogError, now_millis};

/// A live session's event log.
pub(crate) enum Journal {
    /// `traces/<id>.ndjson` under the state root.
    Disk(EventLog),
    /// Rows of a shared session store.
    Store(StoreLog),
}

impl Journal {
    /// Appends one event with the next index (durable at the next commit).
    pub(crate) fn append(&self, turn_id: Option<&str>, body: EventBody) -> Result<Event, LogError> {
        match self {
            Journal::Disk(log) => log.append(turn_id, body),
            Journal::Store(log) => Ok(log.append(turn_id, body)),
        }
    }

    /// Makes the appends so far durable together with `others` (disk files synced in the same
    /// group-commit round; a store session has none); returns the events a store session
    /// wrote now (none on disk, where streams see each event as it is appended).
    pub(crate) async fn commit_with(
        &self,
        others: Vec<SyncTarget>,
    ) -> Result<Vec<Event>, LogError> {
        match self {
            Journal::Disk(log) => log.commit_with(others).await.map(|()| Vec::new()),
            Journal::Store(log) => log.flush().await,
        }
    }

    /// The index up to which events are durable or about to be (on disk: every appended one;
    /// in a store: those written to it), which streams may show.
    pub(crate) fn visible_end(&self) -> u64 {
        match self {
            Journal::Disk(log) => log.next_index(),
            Journal::Store(log) => {
                let writer = lock(&log.writer);
                writer.next_index - writer.pending.len() as u64
            }
        }
    }

    /// Flushes the disk log on this thread (recovery of a state root, outside the group
    /// commit). A store session is recovered by its actor, which commits asynchronously.
    pub(crate) fn sync(&self) -> Result<(), LogError> {
        match self {
            Journal::Disk(log) => log.sync(),
            Journal::Store(log) => Err(LogError::Store(folio_store::StoreError::Backend(format!(
                "session {}: a shared store's appends are committed by the session's actor",
                log.session_id
            )))),
        }
    }

    /// The store log, when the session lives in a shared store.
    pub(crate) fn store(&self) -> Option<&StoreLog> {
        match self {
            Journal::Disk(_) => None,
            Journal::Store(log) => Some(log),
        }
    }
}

/// A session's log in a shared store: appends wait in memory (already shown to the session's
/// streams on this server) until [`StoreLog::flush`] writes them in one append under the
/// lease's fencing token.
pub(crate) struct StoreLog {
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) session_id: String,
    pub(crate) writer: Mutex<Writer>,
    /// One flush at a time, so buffered runs reach the store in index order.
    flushing: tokio::sync::Mutex<()>,
}

pub(crate) struct Writer {
    /// The index the next event gets: the store log's length plus what is buffered.
    next_index: u64,
    /// Appended here, not yet in the store.
    pending: Vec<Event>,
    /// The fencing token of this server's lease on the session (`None`: not the owner).
    fence: Option<u64>,
}

impl StoreLog {
    /// The log of `session_id` in `store`, whose stored events end before `next_index`.
    pub(crate) fn new(store: Arc<dyn SessionStore>, session_id: &str, next_index: u64) -> Self {
        StoreLog {
            store,
            session_id: session_id.to_string(),
            writer: Mutex::new(Writer {
                next_index,
                pending: Vec::new(),
                fence: None,
            }),
            flushing: tokio::sync::Mutex::new(()),
        }
    }

    fn append(&self, turn_id: Option<&str>, body: EventBody) -> Event {
        let mut writer = lock(&self.writer);
        let event = Event {
            index: writer.next_index,
            session_id: self.session_id.clone(),
            turn_id: turn_id.map(str::to_string),
            at: now_millis(),
            body,
        };
        writer.next_index += 1;
        writer.pending.push(event.clone());
        event
    }

    /// Takes an event another server appended (read back from the store) as the next one;
    /// false when it is not the next index (already known) or this server has appends of its
    /// own waiting (a second writer: the flush of those is refused).
    pub(crate) fn ingest(&self, event: &Event) -> bool {
        let mut writer = lock(&self.writer);
        if event.index != writer.next_index || !writer.pending.is_empty() {
            return false;
        }
        writer.next_index += 1;
        true
    }

    /// The index the next append gets.
    pub(crate) fn next_index(&self) -> u64 {
        lock(&self.writer).next_index
    }

    /// Sets the fencing token every flush presents (`None`: this server gave the lease up).
    pub(crate) fn set_fence(&self, fence: Option<u64>) {
        lock(&self.writer).fence = fence;
    }

    /// Forgets the fencing token `fence` when it is still the one set (an actor giving its
    /// lease up; a newer actor's token stays).
    pub(crate) fn clear_fence(&self, fence: u64) {
        let mut writer = lock(&self.writer);
        if writer.fence == Some(fence) {
            writer.fence = None;
        }
    }

    /// Writes the buffered events as one append at their first index, under the lease's
    /// fencing token, and returns them; they stay buffered when the store refuses them (the
    /// error says why: `Fenced` when another server took the session over).
    pub(crate) async fn flush(&self) -> Result<Vec<Event>, LogError> {
        let _one = self.flushing.lock().await;
        let (events, fence) = {
            let writer = lock(&self.writer);
            (writer.pending.clone(), writer.fence)
        };
        let Some(first) = events.first() else {
            return Ok(Vec::new());
        };
        let Some(fence) = fence else {
            return Err(LogError::Store(folio_store::StoreError::Backend(format!(
                "session {}: this server holds no lease on the session, so it cannot write its log",
                self.session_id
            ))));
        };
        let started = std::time::Instant::now();
        let expected = first.index;
        let new = events
            .iter()
            .map(|event| NewEvent {
                turn_id: event.turn_id.clone(),
                body: event.body.clone(),
                at: Some(event.at),
            })
            .collect();
        self.store
            .append(&self.session_id, expected, Some(fence), new)
            .await?;
        self.store.commit(&self.session_id, None).await?;
        lock(&self.writer).pending.drain(..events.len());
        folio_telemetry::metrics::event_log("fsync", started.elapsed());
        Ok(events)
    }
}
