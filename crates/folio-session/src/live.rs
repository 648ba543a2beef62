//! A live session: its open event log and the events in it (read from the store once, when
//! the session opens, then kept in memory), the broadcast that fans appends out to streams, its
//! metadata, and the approvals its turn waits on. At most one exists per session at a time.

use std::collections::{HashMap, HashSet};
use std::ops::RangeInclusive;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use folio_agent::HookDispatcher;
use folio_agent::{AuthorizationRedirect, EventSink, SinkError};
use folio_protocol::{ActionApprovalResolved, Event, EventBody};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::command::Command;
use crate::error::{ManagerError, store_error};
use crate::journal::Journal;
use crate::state::{SessionMeta, reported_usage};
use crate::stream_event::StreamEvent;
use crate::sync::lock;
use folio_store_disk::LogError;

/// How many events a slow stream may fall behind before it catches up from the stored events
/// (`Lagged`: correct, only slower). Every session that opens allocates and initializes this
/// many slots up front, so it stays small: at 4,096 the buffer (~1 MiB) cost more CPU per turn
/// than the turn itself (page faults, zeroing and freeing on each open and close).
const BROADCAST_CAPACITY: usize = 256;

/// One session with an open log; shared by its actor, its turn and its streams.
pub(crate) struct Live {
    pub(crate) id: String,
    pub(crate) log: Journal,
    /// Serializes append + broadcast so the wire order is the log order.
    append: Mutex<()>,
    /// Every event of the log, in order: loaded once by [`Live::new`], then appended to.
    events: Mutex<Vec<Event>>,
    pub(crate) tx: broadcast::Sender<std::sync::Arc<StreamEvent>>,
    pub(crate) meta: Mutex<SessionMeta>,
    /// The turn count `session.json` holds (the log settles status and last index, not this).
    saved_turns: AtomicU32,
    /// The actor's mailbox while it runs (`None` when the session is idle).
    pub(crate) mailbox: Mutex<Option<mpsc::UnboundedSender<Command>>>,
    pub(crate) approvals: Mutex<Approvals>,
    /// Fires when the session is deleted: streams end.
    pub(crate) closed: CancellationToken,
    /// Fires when this live session is dropped (the task following the store ends with it).
    pub(crate) dropped: CancellationToken,
    /// Answered once the actor settled the turn of a dead owner it took over
    /// ([`Command::Recover`]); taken by whoever waits for that.
    pub(crate) recovering: Mutex<Option<oneshot::Receiver<()>>>,
    /// The agent's hooks, bound to this session's channel; they see every appended event.
    hooks: Mutex<Option<HookDispatcher>>,
    /// Set while this copy is the whole stored session because this server created it and
    /// has not taken its lease yet ([`Live::take_fresh`]).
    fresh: AtomicBool,
}

/// Decisions waiting for a parked call, and calls already decided.
#[derive(Default)]
pub(crate) struct Approvals {
    /// A parked turn waiting for `callId`.
    waiting: HashMap<String, oneshot::Sender<ActionApprovalResolved>>,
    /// Decisions that arrived before the turn asked (a turn resumed after a restart).
    ready: HashMap<String, ActionApprovalResolved>,
    /// Every call decided in this process (decisions are single-use).
    pub(crate) decided: HashSet<String>,
    /// Parked MCP authorizations, by the `state` of their authorization request: where the
    /// OAuth redirect carrying it goes (single-use: taken by the first redirect).
    authorizations: HashMap<String, oneshot::Sender<AuthorizationRedirect>>,
}

impl Approvals {
    /// Whether a turn waits for a decision.
    pub(crate) fn is_parked(&self) -> bool {
        self.waiting.values().any(|waiter| !waiter.is_closed())
            || self
                .authorizations
                .values()
                .any(|waiter| !waiter.is_closed())
    }

    /// Takes the parked authorization whose request carried `state`, if this session has it.
    pub(crate) fn take_authorization(
        &mut self,
        state: &str,
    ) -> Option<oneshot::Sender<AuthorizationRedirect>> {
        self.authorizations.retain(|_, waiter| !waiter.is_closed());
        self.authorizations.remove(state)
    }

    /// Hands a decision to the turn waiting for it, or keeps it for the turn to pick up.
    pub(crate) fn deliver(&mut self, resolved: ActionApprovalResolved) {
        self.decided.insert(resolved.call_id.clone());
        let resolved = match self.waiting.remove(&resolved.call_id) {
            Some(waiter) => match waiter.send(resolved) {
                Ok(()) => return,
                Err(resolved) => resolved,
            },
            None => resolved,
        };
        self.ready.insert(resolved.call_id.clone(), resolved);
    }
}

impl Live {
    /// The live session of `meta` in `store`, whose stored `events` were read after its
    /// appends were followed (so that none is missed: see [`Live::ingest`]); its metadata is
    /// settled from the log's end ([`SessionMeta::settle`]). `fresh`: this server just created
    /// it and no other server can know its id yet (see [`Live::take_fresh`]).
    pub(crate) fn new(
        store: std::sync::Arc<dyn folio_store::SessionStore>,
        mut meta: SessionMeta,
        events: Vec<Event>,
        fresh: bool,
    ) -> Live {
        let next = events.last().map_or(0, |event| event.index + 1);
        let log = Journal::new(store, &meta.session_id, next);
        let id = meta.session_id.clone();
        meta.settle(events.last());
        meta.usage = reported_usage(&events);
        let (tx, _) = broadcast::channel(BROADCAST_CAPACITY);
        Live {
            id,
            log,
            append: Mutex::new(()),
            events: Mutex::new(events),
            tx,
            saved_turns: AtomicU32::new(meta.turns),
            meta: Mutex::new(meta),
            mailbox: Mutex::new(None),
            approvals: Mutex::new(Approvals::default()),
            closed: CancellationToken::new(),
            recovering: Mutex::new(None),
            dropped: CancellationToken::new(),
            hooks: Mutex::new(None),
            fresh: AtomicBool::new(fresh),
        }
    }

    /// Whether this copy is still the whole stored session because this server created it
    /// (then its first lease needs no read back); answers `true` once at most.
    pub(crate) fn take_fresh(&self) -> bool {
        self.fresh.swap(false, Ordering::SeqCst)
    }

    /// Takes events another server appended to the store (read back in order) into the
    /// session and its streams on this server; those already here are skipped. Hooks do not
    /// see them: they ran on the server that appended.
    pub(crate) fn ingest(&self, events: Vec<Event>) {
        let _order = lock(&self.append);
        for event in events {
            if !self.log.ingest(&event) {
                continue;
            }
            lock(&self.meta).settle(Some(&event));
            lock(&self.events).push(event.clone());
            self.broadcast(event);
        }
    }

    /// Appends one event; streams see it once it is written to the store (at once where the
    /// store's appends are local writes, else at [`Live::publish`] or [`Live::commit`]). It is
    /// exported as a log record in the current span (the logs signal).
    pub(crate) fn append(&self, turn_id: Option<&str>, body: EventBody) -> Result<Event, LogError> {
        let _order = lock(&self.append);
        let (event, written) = self.log.append(turn_id, body);
        // Stored before it is broadcast: a stream that subscribed, then copied the events,
        // misses nothing.
        lock(&self.events).push(event.clone());
        if written {
            self.broadcast(event.clone());
        }
        if let Some(hooks) = &*lock(&self.hooks) {
            hooks.dispatch(&event);
        }
        crate::event_records::export(&event);
        Ok(event)
    }

    /// Writes the appends so far to the store and shows them to the streams.
    pub(crate) async fn publish(&self) -> Result<(), LogError> {
        let written = self.log.publish().await?;
        self.show(written);
        Ok(())
    }

    /// Makes the appends so far durable (with `meta`, when given, in the same round) and
    /// shows them to the streams.
    pub(crate) async fn commit_with(&self, meta: Option<&SessionMeta>) -> Result<(), LogError> {
        let written = self.log.commit(meta).await?;
        self.show(written);
        Ok(())
    }

    /// Makes the appends so far durable (see [`Journal::commit`]).
    pub(crate) async fn commit(&self) -> Result<(), LogError> {
        self.commit_with(None).await
    }

    /// Broadcasts events just written to the store, in index order: one write at a time, and
    /// the append lock keeps followers' ingests (none on the owner) apart.
    fn show(&self, written: Vec<Event>) {
        if written.is_empty() {
            return;
        }
        let _order = lock(&self.append);
        for event in written {
            self.broadcast(event);
        }
    }

    /// Hands a stored event to the session's streams, if any is open. One that opens after
    /// the check reads the event from the stored ones (it subscribes before it reads them, and
    /// the event was stored before this call).
    fn broadcast(&self, event: Event) {
        if self.tx.receiver_count() > 0 {
            let _ = self.tx.send(StreamEvent::shared(event));
        }
    }

    /// The stored events streams may show: those written to the store.
    pub(crate) fn visible_events(&self) -> Vec<Event> {
        self.visible_events_from(0, usize::MAX)
    }

    /// At most `max` of the stored events streams may show, from index `start` on: a copy of
    /// those alone, found by index (the log is in index order), not of the whole log.
    pub(crate) fn visible_events_from(&self, start: u64, max: usize) -> Vec<Event> {
        let end = self.log.visible_end();
        let events = lock(&self.events);
        let first = events.partition_point(|event| event.index < start);
        events[first..]
            .iter()
            .take_while(|event| event.index < end)
            .take(max)
            .cloned()
            .collect()
    }

    /// Whether the last of the stored events streams may show passes `test`.
    pub(crate) fn last_visible_is(&self, test: impl FnOnce(&Event) -> bool) -> bool {
        let end = self.log.visible_end();
        let events = lock(&self.events);
        let visible = events.partition_point(|event| event.index < end);
        visible
            .checked_sub(1)
            .and_then(|last| events.get(last))
            .is_some_and(test)
    }

    /// The index of the last event appended, if any.
    pub(crate) fn last_index(&self) -> Option<u64> {
        lock(&self.events).last().map(|event| event.index)
    }

    /// The indexes appended since the last index was `before` (see [`Live::last_index`]);
    /// `None` when nothing was.
    pub(crate) fn appended_since(&self, before: Option<u64>) -> Option<RangeInclusive<u64>> {
        let last = self.last_index()?;
        let first = before.map_or(0, |index| index + 1);
        (first <= last).then_some(first..=last)
    }

    /// Changes the metadata and commits it with the log, durably.
    pub(crate) async fn update_meta(
        &self,
        change: impl FnOnce(&mut SessionMeta),
    ) -> Result<(), ManagerError> {
        self.commit_meta(change)
            .await
            .map_err(|err| ManagerError::internal_from("cannot save the session", err))
    }

    /// Makes the appends so far durable with the metadata `change` makes, in one durable
    /// point, then keeps that metadata.
    pub(crate) async fn commit_meta(
        &self,
        change: impl FnOnce(&mut SessionMeta),
    ) -> Result<(), LogError> {
        let mut meta = lock(&self.meta).clone();
        change(&mut meta);
        meta.updated_at = chrono::Utc::now();
        self.commit_with(Some(&meta)).await?;
        self.saved_turns.store(meta.turns, Ordering::SeqCst);
        *lock(&self.meta) = meta;
        Ok(())
    }

    /// Changes fields the log settles (status, turns, last index, token totals) and saves
    /// them without waiting for durability ([`save_session`](folio_store::SessionStore::save_session)).
    pub(crate) async fn repair_meta(
        &self,
        change: impl FnOnce(&mut SessionMeta),
    ) -> Result<(), ManagerError> {
        let meta = self.change_meta(change);
        self.log
            .store
            .save_session(&meta)
            .await
            .map_err(|e| store_error("cannot save the session", e))?;
        self.saved_turns.store(meta.turns, Ordering::SeqCst);
        Ok(())
    }

    /// Takes the metadata the store holds (another server changed it: token, keys, counts),
    /// settled from the events here.
    pub(crate) fn reload_meta(&self, mut stored: SessionMeta) {
        let usage = self.with_events(|events| {
            stored.settle(events.last());
            // A message the log holds whose count a dead server did not write yet.
            let received = events
                .iter()
                .filter(|e| matches!(e.body, EventBody::MessageReceived(_)))
                .count() as u32;
            stored.turns = stored.turns.max(received);
            reported_usage(events)
        });
        stored.usage = usage;
        self.saved_turns.store(stored.turns, Ordering::SeqCst);
        *lock(&self.meta) = stored;
    }

    /// The turn count `session.json` holds.
    pub(crate) fn saved_turns(&self) -> u32 {
        self.saved_turns.load(Ordering::SeqCst)
    }

    /// Applies `change` (and the update time) to the metadata in memory (what queries of a live
    /// session read); returns the new metadata. Only the session's actor and recovery change
    /// it, one change at a time.
    pub(crate) fn change_meta(&self, change: impl FnOnce(&mut SessionMeta)) -> SessionMeta {
        let mut meta = lock(&self.meta);
        change(&mut meta);
        meta.updated_at = chrono::Utc::now();
        meta.clone()
    }

    /// Binds the agent's hooks to this session.
    pub(crate) fn bind_hooks(
        &self,
        hooks: &HookDispatcher,
        host: Option<std::sync::Arc<dyn folio_agent::HostBroker>>,
    ) {
        let (channel, purpose, dry_run) = {
            let meta = lock(&self.meta);
            (meta.channel.clone(), meta.purpose.clone(), meta.dry_run)
        };
        *lock(&self.hooks) = Some(
            hooks
                .for_session(Some(&channel), purpose.as_deref())
                .with_dry_run(dry_run)
                .with_host(host),
        );
    }

    /// Answers `read` from the stored events without copying them.
    pub(crate) fn with_events<T>(&self, read: impl FnOnce(&[Event]) -> T) -> T {
        read(&lock(&self.events))
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.dropped.cancel();
    }
}

/// A live session as the sink of its turn's events and the source of its approvals.
pub(crate) struct LiveSink(pub(crate) std::sync::Arc<Live>);

#[async_trait::async_trait]
impl EventSink for LiveSink {
    async fn emit(&self, turn_id: Option<&str>, body: EventBody) -> Result<Event, SinkError> {
        self.0.append(turn_id, body).map_err(SinkError::new)
    }

    /// Nothing to do here: the session's actor syncs the log at the turn boundary right after
    /// the turn returns (with `session.waiting`, or the next message), in one group-commit
    /// round, before anything that depends on it is acknowledged.
    async fn checkpoint(&self) -> Result<(), SinkError> {
        Ok(())
    }

    async fn await_approval(&self, call_id: &str) -> ActionApprovalResolved {
        let waiter = {
            let mut approvals = lock(&self.0.approvals);
            if let Some(resolved) = approvals.ready.remove(call_id) {
                return resolved;
            }
            let (tx, rx) = oneshot::channel();
            approvals.waiting.insert(call_id.to_string(), tx);
            rx
        };
        match waiter.await {
            Ok(resolved) => resolved,
            // The session went away while parked; the turn is cancelled right after.
            Err(_) => std::future::pending().await,
        }
    }

    async fn expire_approval(&self, call_id: &str) -> bool {
        let mut approvals = lock(&self.0.approvals);
        approvals.waiting.remove(call_id);
        if approvals.decided.contains(call_id) {
            return false;
        }
        // Decisions are single-use: one arriving from now on is refused (`approval_resolved`).
        approvals.decided.insert(call_id.to_string());
        true
    }

    async fn await_authorization(
        &self,
        _call_id: &str,
        state: &str,
    ) -> Option<AuthorizationRedirect> {
        let waiter = {
            let (tx, rx) = oneshot::channel();
            lock(&self.0.approvals)
                .authorizations
                .insert(state.to_string(), tx);
            rx
        };
        match waiter.await {
            Ok(redirect) => Some(redirect),
            // The session went away while parked; the turn is cancelled right after.
            Err(_) => std::future::pending().await,
        }
    }
}
