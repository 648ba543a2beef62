//! Where a live session's events are written: its session store, through [`Journal`].
//!
//! Appends are taken synchronously (a turn's sink never waits on I/O per event) and wait in
//! memory until the session's actor writes them to the store: at once where appends are local
//! writes (the disk store), gathered for [`SessionStore::publish_interval`] where they are
//! round trips (PostgreSQL: one 24-event append 0.74 ms against 11.8 ms for 24 single ones,
//! bench/RESULTS.md "Session stores"). Every write presents the session's lease (its fencing
//! token), so a server whose turn was taken over cannot write again. The session's durable
//! points ([`Journal::commit`]) write what is pending and make it durable with the metadata
//! when it changed, in one [`SessionStore::append_and_commit`] (on disk an append and one
//! group-commit round; on PostgreSQL one transaction, gathered with other sessions' durable
//! points).
//!
//! Streams show an event only once it is written where every reader finds it, so a server
//! taking a dead one's turn over never reuses an index a client saw.

use std::sync::{Arc, Mutex};

use futures::FutureExt;

use folio_protocol::{Event, EventBody};
use folio_store::{NewEvent, SessionMeta, SessionStore};
use folio_store_disk::{LogError, now_millis};

use crate::sync::lock;

/// A session's log: appends wait in memory until [`Journal::publish`] writes them in one
/// append under the lease's fencing token.
pub(crate) struct Journal {
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) session_id: String,
    pub(crate) writer: Mutex<Writer>,
    /// One write at a time, so buffered runs reach the store in index order.
    flushing: tokio::sync::Mutex<()>,
    /// Signalled on each append left pending: the actor publishes what waits.
    pub(crate) appended: tokio::sync::Notify,
    /// Whether appends are written as they are made (the store's appends are local writes).
    immediate: bool,
}

/// What waits to be written: the events, the fencing token to present, and the events as the
/// store takes them.
type Pending = (Vec<Event>, u64, Vec<NewEvent>);

pub(crate) struct Writer {
    /// The index the next event gets: the store log's length plus what is buffered.
    next_index: u64,
    /// Appended here, not yet in the store.
    pending: Vec<Event>,
    /// The fencing token of this server's lease on the session (`None`: not the owner).
    fence: Option<u64>,
}

impl Journal {
    /// The log of `session_id` in `store`, whose stored events end before `next_index`.
    pub(crate) fn new(store: Arc<dyn SessionStore>, session_id: &str, next_index: u64) -> Self {
        Journal {
            session_id: session_id.to_string(),
            writer: Mutex::new(Writer {
                next_index,
                pending: Vec::new(),
                fence: None,
            }),
            flushing: tokio::sync::Mutex::new(()),
            appended: tokio::sync::Notify::new(),
            immediate: store.publish_interval().is_zero(),
            store,
        }
    }

    /// Appends one event with the next index, durable at the next commit; answers it and
    /// whether it is written to the store already. Where the store's appends are local writes
    /// ([`SessionStore::publish_interval`] zero) and nothing waits before it, it is written
    /// here, at once (a store append that would wait is not started); otherwise at the next
    /// [`Journal::publish`].
    pub(crate) fn append(&self, turn_id: Option<&str>, body: EventBody) -> (Event, bool) {
        let mut writer = lock(&self.writer);
        let event = Event {
            index: writer.next_index,
            session_id: self.session_id.clone(),
            turn_id: turn_id.map(str::to_string),
            at: now_millis(),
            body,
        };
        writer.next_index += 1;
        if self.immediate
            && writer.pending.is_empty()
            && let Some(fence) = writer.fence
        {
            let new = vec![NewEvent {
                turn_id: event.turn_id.clone(),
                body: event.body.clone(),
                at: Some(event.at),
            }];
            let write = self
                .store
                .append(&self.session_id, event.index, Some(fence), new);
            if let Some(Ok(_)) = write.now_or_never() {
                return (event, true);
            }
        }
        writer.pending.push(event.clone());
        drop(writer);
        self.appended.notify_one();
        (event, false)
    }

    /// The index up to which events are written to the store, which streams may show.
    pub(crate) fn visible_end(&self) -> u64 {
        let writer = lock(&self.writer);
        writer.next_index - writer.pending.len() as u64
    }

    /// Writes what is pending and makes the log durable with `meta` when given, in one
    /// [`SessionStore::append_and_commit`] (on PostgreSQL one transaction); returns the events
    /// written now. They stay buffered when the store refuses them.
    pub(crate) async fn commit(&self, meta: Option<&SessionMeta>) -> Result<Vec<Event>, LogError> {
        let _one = self.flushing.lock().await;
        let Some((events, fence, new)) = self.pending()? else {
            self.store.commit(&self.session_id, meta).await?;
            return Ok(Vec::new());
        };
        self.store
            .append_and_commit(&self.session_id, events[0].index, Some(fence), new, meta)
            .await?;
        lock(&self.writer).pending.drain(..events.len());
        Ok(events)
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
    pub(crate) async fn publish(&self) -> Result<Vec<Event>, LogError> {
        let _one = self.flushing.lock().await;
        let Some((events, fence, new)) = self.pending()? else {
            return Ok(Vec::new());
        };
        self.store
            .append(&self.session_id, events[0].index, Some(fence), new)
            .await?;
        lock(&self.writer).pending.drain(..events.len());
        Ok(events)
    }

    /// What waits to be written (`None`: nothing), the fencing token to present and the
    /// events as the store takes them; an error when this server holds no lease to write with.
    /// Called under `flushing`.
    fn pending(&self) -> Result<Option<Pending>, LogError> {
        let (events, fence) = {
            let writer = lock(&self.writer);
            (writer.pending.clone(), writer.fence)
        };
        if events.is_empty() {
            return Ok(None);
        }
        let Some(fence) = fence else {
            return Err(LogError::Store(folio_store::StoreError::backend(format!(
                "session {}: this server holds no lease on the session, so it cannot write its log",
                self.session_id
            ))));
        };
        let new = events
            .iter()
            .map(|event| NewEvent {
                turn_id: event.turn_id.clone(),
                body: event.body.clone(),
                at: Some(event.at),
            })
            .collect();
        Ok(Some((events, fence, new)))
    }
}
