//! Where a server keeps its sessions: the [`SessionStore`] trait and the types it speaks.
//!
//! A store keeps, for every session, its metadata ([`SessionMeta`]) and its append-only event
//! log, and, shared between every server using it: the lease that says which server runs a
//! session's turn (with a fencing token checked on every append), the records of idempotent
//! creates, the claims of schedule slots, and the signals (stop, preempt) that reach a turn's
//! owner; beside them, channel deliveries ([`DeliveryStore`]) and the host API's key-value
//! storage ([`StorageStore`], in the [`storage`] module); retention deletes old idle sessions.
//! Two backends implement it: the embedded disk
//! store (`folio_store_disk::DiskStore`, over the state root's files; one process per state root,
//! so its leases and signals live in memory) and PostgreSQL (`folio_store_postgres::PgStore`,
//! any number of servers). Both run the same conformance suite, `suite` (feature `suite`, for backends' tests).
//!
//! What lives in the event log needs no table of its own: queued messages
//! (`message.queued`), approvals (`action.approval_requested`/`resolved`), a follow-up's
//! idempotency key (`clientMessageId` on its message) and the hash of the current continuation
//! token ([`SessionMeta::token_hash`]) are all read from the log or the metadata.
//!
//! The life of a turn on a shared store:
//!
//! ```no_run
//! use std::time::Duration;
//! use folio_protocol::{EventBody, SessionWaiting};
//! use folio_store::{NewEvent, SessionStore, StoreError};
//!
//! # async fn turn(store: &dyn SessionStore, session_id: &str) -> Result<(), StoreError> {
//! // One server owns the turn; another one gets `LeaseHeld` and routes stop/preempt to it.
//! let lease = store.acquire_lease(session_id, "server-a", Duration::from_secs(30)).await?;
//! let next = store.last_event(session_id).await?.map_or(0, |e| e.index + 1);
//! // Refused with `Fenced` once another server took the lease over.
//! store
//!     .append(session_id, next, Some(lease.fence), vec![NewEvent::new(None, EventBody::SessionWaiting(SessionWaiting {}))])
//!     .await?;
//! store.commit(session_id, None).await?; // durable before anything is acknowledged
//! store.release_lease(&lease).await?;
//! # Ok(())
//! # }
//! ```

//! How `folio serve --store` runs on a shared store (decided from `bench/RESULTS.md`, "Session
//! stores"; built in `folio-server`'s `cluster` and `journal` modules):
//! - a live session appends to memory and its streams at once, and writes the buffered events
//!   with one [`SessionStore::append_and_commit`] at each durable point (an acknowledged
//!   message, a turn boundary: the events and the metadata together) and one
//!   [`SessionStore::append`] every 20 ms while a turn runs: on PostgreSQL 24 single-event
//!   appends cost a turn 11.8 ms, one 24-event append 0.74 ms; PostgreSQL writes each of these
//!   as one transaction that notifies once, and gathers those of concurrent sessions into one
//!   transaction (bench/RESULTS.md, "PostgreSQL at the durable points");
//! - a session's actor runs under a lease renewed at a third of its time to live, every append
//!   carries the fencing token, and [`StoreError::Fenced`] ends the turn on the old owner;
//! - every server takes over [`SessionStore::expired_leases`] and records their turns as
//!   `server restarted`;
//! - live sessions on every server [`follow`] the store, so a stream can be read anywhere;
//! - stop and preempt go to the owner as [`SessionStore::signal`]s, repeated until the owner's
//!   lease is free.
//!
//! [`follow`]: SessionStore::follow

#![warn(missing_docs)]

pub mod copy;
mod deliveries;
mod error;
mod filter;
mod meta;
pub mod storage;
#[cfg(feature = "suite")]
pub mod suite;

use std::pin::Pin;
use std::time::Duration;

use chrono::{DateTime, Utc};
use folio_protocol::{ArtifactRecord, Event, EventBody, Reminder};

pub use deliveries::{
    Admitted, ChannelRecord, Continuation, DeliveryOutcome, DeliveryStore, Follow, Followed,
    ReceivedDelivery, dedup_window,
};
pub use error::StoreError;
pub use filter::{FieldFilter, Filterable, MetaKey, SessionFilter, TimeRange};
pub use meta::{
    AcceptedKey, SessionMeta, boundary_status, new_session_id, new_turn_id, valid_session_id,
};
pub use storage::{
    Condition, EntryPage, MAX_KEY_BYTES, MAX_LIST, MAX_VALUE_BYTES, Namespace, StorageStore,
    StorageUsage, Written, check_key, value_text,
};

/// An event to append: the store gives it its index, session and time.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// The turn it belongs to, for turn-scoped events.
    pub turn_id: Option<String>,
    /// The event type and its data.
    pub body: EventBody,
    /// When it happened, in whole milliseconds (`None`: when it is appended). A server that
    /// streamed the event before appending it (a live session) passes the time it showed.
    pub at: Option<DateTime<Utc>>,
}

impl NewEvent {
    /// An event of `turn_id` (or of the session) with `body`, timed when it is appended.
    pub fn new(turn_id: Option<&str>, body: EventBody) -> Self {
        NewEvent {
            turn_id: turn_id.map(str::to_string),
            body,
            at: None,
        }
    }
}

/// Which sessions [`SessionStore::list_sessions`] returns, newest first (session ids sort by
/// creation time, so newest first is descending id).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListQuery {
    /// Only this principal's sessions (`None`: every principal's).
    pub principal: Option<String>,
    /// Only sessions older than this id (the previous page's last id: the cursor).
    pub before: Option<String>,
    /// At most this many.
    pub limit: usize,
    /// What else they must match (the default: nothing else). Served by the backend's session
    /// index: a page costs about `limit` sessions read, not the stored set.
    pub filter: SessionFilter,
}

/// The right to run a session's turn until `expires_at`, renewed while the turn runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The session.
    pub session_id: String,
    /// Who holds it (a server's id).
    pub owner: String,
    /// The fencing token: greater than every token issued for the session before. An append
    /// presenting it is refused once the lease is taken over or released.
    pub fence: u64,
    /// When it expires unless renewed.
    pub expires_at: DateTime<Utc>,
    /// The owner of the expired lease this one took over (whose turn the taker records as
    /// `server restarted`); `None` when the session was free.
    pub took_over: Option<String>,
}

/// The session a create with an idempotency key made: a retry of the create answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateKey {
    /// The principal that created it (keys are per principal).
    pub principal: String,
    /// The `clientMessageId` / `Idempotency-Key`.
    pub key: String,
    /// The session the first create made.
    pub session_id: String,
    /// The digest of the first create's request: a retry with another request is refused.
    pub digest: String,
}

/// The indexes of a session's new events as they are appended ([`SessionStore::follow`]).
pub type Appends = Pin<Box<dyn futures::Stream<Item = u64> + Send>>;

/// A request for the server that owns a session's turn ([`SessionStore::signal`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signal {
    /// The session.
    pub session_id: String,
    /// What is asked (`stop`, `preempt`…: the server defines the words).
    pub message: String,
}

/// The signals sent, about any session, once [`SessionStore::signals`] returned.
pub type Signals = Pin<Box<dyn futures::Stream<Item = Signal> + Send>>;

/// What one retention pass deleted ([`SessionStore::delete_expired_sessions`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RetentionReport {
    /// Sessions deleted.
    pub sessions: u64,
    /// Their events deleted.
    pub events: u64,
    /// Schedule slot claims older than the retention period deleted.
    pub slot_claims: u64,
    /// Finished channel deliveries older than the retention period deleted.
    pub deliveries: u64,
}

/// Where sessions, event logs, leases, idempotent creates, schedule claims, reminders, the
/// agent's artifacts, the principals' MCP credentials and (through
/// [`SessionStore::deliveries`] and [`SessionStore::storage`]) channel deliveries and storage
/// entries are kept.
///
/// Object-safe: servers hold an `Arc<dyn SessionStore>`. Every method may fail with
/// [`StoreError::Unavailable`] (retryable) or a backend error besides those it lists.
#[async_trait::async_trait]
pub trait SessionStore: Send + Sync {
    /// The backend's name for messages (`disk`, `postgres`).
    fn backend(&self) -> &'static str;

    /// The channel deliveries kept beside the sessions.
    fn deliveries(&self) -> std::sync::Arc<dyn DeliveryStore>;

    /// The storage entries (the host API's key-value storage) kept beside the sessions; a
    /// session's own entries go with it ([`delete_session`](SessionStore::delete_session) and
    /// retention).
    fn storage(&self) -> std::sync::Arc<dyn StorageStore>;

    /// How long a session's owner gathers a running turn's appends before it writes them in
    /// one [`append`](SessionStore::append) (what streams on other servers wait at most);
    /// longer where an append is a round trip. Zero declares appends local writes: an
    /// [`append`](SessionStore::append) completes when first polled, so the owner writes each
    /// event in the call that makes it (the disk store).
    fn publish_interval(&self) -> Duration {
        Duration::ZERO
    }

    /// Whether metadata given to a durable point costs nothing more than the point (a
    /// database writes both in one transaction). Where it does not (the disk store syncs its
    /// metadata file apart from its log), the engine writes what a turn's end settles in the
    /// metadata (status, last index, token totals: recovery rebuilds them from the log) after
    /// the point, without a sync.
    fn metadata_rides_durable_points(&self) -> bool {
        false
    }

    /// Whether every delete of a session goes through the store and ends its followers
    /// ([`SessionStore::follow`]), so that a server holding a session open knows it exists
    /// without asking. Not for the disk store: removing a session's folder deletes it.
    fn deletes_end_followers(&self) -> bool {
        false
    }

    /// Releases what this process holds of the store (the disk store's lock on its state
    /// root), so that another process, or a manager opened later, can open it; called once
    /// the engine has shut down. Nothing may be written through the store after it.
    async fn close(&self) {}

    /// Stores a new session's metadata and an empty log. Durable with the session's first
    /// [`commit`](SessionStore::commit), which the create must await before acknowledging
    /// anything; a session whose first commit never happened may be dropped by recovery.
    /// Fails with [`StoreError::AlreadyExists`] when the id is taken.
    async fn create_session(&self, meta: &SessionMeta) -> Result<(), StoreError>;

    /// The session's metadata as last written; `None` when it does not exist.
    async fn load_session(&self, session_id: &str) -> Result<Option<SessionMeta>, StoreError>;

    /// Replaces the session's metadata without waiting for durability: only for what
    /// recovery can rebuild from the log (status, last index, turn count, token totals).
    /// Metadata a reply depends on goes through [`commit`](SessionStore::commit).
    /// [`StoreError::NotFound`] when the session does not exist.
    async fn save_session(&self, meta: &SessionMeta) -> Result<(), StoreError>;

    /// Sessions matching `query`, newest first (descending session id).
    async fn list_sessions(&self, query: &ListQuery) -> Result<Vec<SessionMeta>, StoreError>;

    /// Removes the session: its metadata, log, lease and session-scope storage entries. Its
    /// followers' streams end.
    /// [`StoreError::NotFound`] when it does not exist.
    async fn delete_session(&self, session_id: &str) -> Result<(), StoreError>;

    /// Appends `events` as one contiguous run starting at index `expected` (the log's next
    /// index as the caller knows it) and returns them as stored. With `fence`, the append is
    /// refused ([`StoreError::Fenced`]) unless the session's lease still carries that token
    /// (an expired lease nobody took over still does). Fails with [`StoreError::Conflict`]
    /// when the log is not at `expected` (nothing is appended), [`StoreError::NotFound`]
    /// when the session does not exist. Durable at the next [`commit`](SessionStore::commit).
    async fn append(
        &self,
        session_id: &str,
        expected: u64,
        fence: Option<u64>,
        events: Vec<NewEvent>,
    ) -> Result<Vec<Event>, StoreError>;

    /// Makes the session's appends so far durable and, with `meta`, replaces its metadata in
    /// the same round (on disk: one group-commit round; in a database: one transaction).
    async fn commit(&self, session_id: &str, meta: Option<&SessionMeta>) -> Result<(), StoreError>;

    /// A durable point in one call: [`append`](SessionStore::append) `events` (same checks,
    /// same errors, nothing written when refused), then [`commit`](SessionStore::commit) with
    /// `meta`; returns the events as stored once they and the metadata are durable. What the
    /// engine calls at a create, a follow-up, a turn's end and each step's batch. The default
    /// makes the two calls (the disk store: its appends are local writes and its commit one
    /// group-commit round); PostgreSQL writes both in one transaction that notifies once, and
    /// gathers concurrent durable points of different sessions into one transaction.
    async fn append_and_commit(
        &self,
        session_id: &str,
        expected: u64,
        fence: Option<u64>,
        events: Vec<NewEvent>,
        meta: Option<&SessionMeta>,
    ) -> Result<Vec<Event>, StoreError> {
        let stored = self.append(session_id, expected, fence, events).await?;
        self.commit(session_id, meta).await?;
        Ok(stored)
    }

    /// The session's events with `index >= start_index`, in order, at most `limit` of them.
    /// [`StoreError::NotFound`] when the session does not exist.
    async fn read_events(
        &self,
        session_id: &str,
        start_index: u64,
        limit: Option<usize>,
    ) -> Result<Vec<Event>, StoreError>;

    /// The session's last event (`None`: an empty log). [`StoreError::NotFound`] when the
    /// session does not exist.
    async fn last_event(&self, session_id: &str) -> Result<Option<Event>, StoreError>;

    /// The session's metadata and its events from `start_index` (none past the log's end);
    /// `None` when the session does not exist: what a server reads back before it takes the
    /// turn of a session it kept open. By default the log's end is read first, and the events
    /// only when the log reaches `start_index`; a store may answer in one read.
    async fn read_back(
        &self,
        session_id: &str,
        start_index: u64,
    ) -> Result<Option<(SessionMeta, Vec<Event>)>, StoreError> {
        let last = match self.last_event(session_id).await {
            Ok(last) => last,
            Err(StoreError::NotFound(_)) => return Ok(None),
            Err(err) => return Err(err),
        };
        let events = match last {
            Some(last) if last.index >= start_index => {
                self.read_events(session_id, start_index, None).await?
            }
            _ => Vec::new(),
        };
        Ok(self
            .load_session(session_id)
            .await?
            .map(|meta| (meta, events)))
    }

    /// Follows the session's appends, from any writer: the stream yields the index of the
    /// newest event after each append that happens once this returns (several appends may be
    /// reported by one index, never lost: the last index yielded is, eventually, the log's
    /// last). A follower subscribes, reads from its start index, then reads up to each index
    /// yielded. The stream ends when the session is deleted.
    async fn follow(&self, session_id: &str) -> Result<Appends, StoreError>;

    /// [`SessionStore::follow`] for a session the caller just created (it exists, its log is
    /// empty): a store may skip looking at the log's end.
    async fn follow_created(&self, session_id: &str) -> Result<Appends, StoreError> {
        self.follow(session_id).await
    }

    /// Takes the lease on the session's turn for `owner`, for `ttl`: free, expired (taken over:
    /// [`Lease::took_over`] names the old owner, whose fencing token stops working) or already
    /// `owner`'s (a new token). [`StoreError::LeaseHeld`] when another owner's lease is live.
    async fn acquire_lease(
        &self,
        session_id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Lease, StoreError>;

    /// Extends `lease` to now + `ttl`. [`StoreError::Fenced`] when it was taken over or released.
    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError>;

    /// Gives `lease` up (nothing happens when it was taken over already).
    async fn release_lease(&self, lease: &Lease) -> Result<(), StoreError>;

    /// The leases that expired without being renewed or released: their owners are presumed
    /// dead, and their turns are for another server to take over.
    async fn expired_leases(&self) -> Result<Vec<Lease>, StoreError>;

    /// Records `record` unless its principal already created a session with its key; returns
    /// the record kept before (whose session a retry answers), `None` when this one was
    /// recorded. Durable when it returns.
    async fn record_create_key(&self, record: &CreateKey) -> Result<Option<CreateKey>, StoreError>;

    /// Claims `slot` of `schedule` for `owner`: `true` for exactly one claimer of each
    /// (schedule, slot), however many servers race; durable when it returns.
    async fn claim_slot(
        &self,
        schedule: &str,
        slot: DateTime<Utc>,
        owner: &str,
    ) -> Result<bool, StoreError>;

    /// Sends `message` about the session to every server following signals: the one owning
    /// its turn (the lease holder) acts on it. Not durable: a server whose connection to the
    /// store is down when it is sent misses it, so a sender repeats a request until its effect
    /// shows (a stop: until the turn ends).
    async fn signal(&self, session_id: &str, message: &str) -> Result<(), StoreError>;

    /// Follows the signals sent from now on, by any server, about any session.
    async fn signals(&self) -> Result<Signals, StoreError>;

    /// Retention (`[store] keep_sessions_days`): deletes every session whose metadata was last
    /// updated before `before` (the caller's clock less the period), whose turn no server holds
    /// a lease on and that has no reminder to deliver, with its events and session-scope storage
    /// entries (and, where the backend keeps them apart, slot claims from before `before`), a
    /// few at a time so that no single step holds much. Expired storage entries of live
    /// sessions are [`StorageStore::purge_expired`]'s.
    async fn delete_expired_sessions(
        &self,
        before: DateTime<Utc>,
    ) -> Result<RetentionReport, StoreError>;

    /// Stores `reminder` durably (replacing one with its id): a one-off wake of its session,
    /// which any server may deliver once it is due.
    async fn put_reminder(&self, reminder: &Reminder) -> Result<(), StoreError>;

    /// Removes the session's reminder (delivered or cancelled); `false` when it was not there.
    async fn remove_reminder(
        &self,
        session_id: &str,
        reminder_id: &str,
    ) -> Result<bool, StoreError>;

    /// The session's reminders, earliest first.
    async fn session_reminders(&self, session_id: &str) -> Result<Vec<Reminder>, StoreError>;

    /// Every session's reminders due at or before `until` (`None`: all of them), earliest
    /// first, at most `limit`.
    async fn due_reminders(
        &self,
        until: Option<DateTime<Utc>>,
        limit: usize,
    ) -> Result<Vec<Reminder>, StoreError>;

    /// Deletes the sessions created more than `older_than` ago (and less than an hour before
    /// that) whose event log is still empty and that no lease holds: creates their server
    /// stopped before acknowledging (a create appends its first events before it answers).
    /// Their metadata, for what else they had (a workspace).
    async fn delete_unacknowledged_sessions(
        &self,
        older_than: Duration,
    ) -> Result<Vec<SessionMeta>, StoreError>;

    /// Stores an artifact record with its `contents` (`None`: none) in place of the record of
    /// the same kind and key, whose id and creation time it keeps; then keeps only the `max`
    /// most recently updated records. Returns the record as stored; durable when it returns.
    async fn put_artifact(
        &self,
        record: &ArtifactRecord,
        contents: Option<&[u8]>,
        max: usize,
    ) -> Result<ArtifactRecord, StoreError>;

    /// Every artifact record, most recently updated first (then the greater id first).
    async fn list_artifacts(&self) -> Result<Vec<ArtifactRecord>, StoreError>;

    /// The artifact record `id` (`None`: no such record).
    async fn get_artifact(&self, id: &str) -> Result<Option<ArtifactRecord>, StoreError>;

    /// The contents of artifact `id` (`None`: no such record, or it has none).
    async fn artifact_content(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// The MCP OAuth credentials of `principal`'s client of MCP connection `connection`, as
    /// the client stored them (`None`: none).
    async fn mcp_credentials(
        &self,
        principal: &str,
        connection: &str,
    ) -> Result<Option<serde_json::Value>, StoreError>;

    /// Stores `principal`'s credentials for `connection` in place of any before, durably.
    async fn put_mcp_credentials(
        &self,
        principal: &str,
        connection: &str,
        credentials: &serde_json::Value,
    ) -> Result<(), StoreError>;

    /// Removes `principal`'s credentials for `connection` (none: nothing to do).
    async fn clear_mcp_credentials(
        &self,
        principal: &str,
        connection: &str,
    ) -> Result<(), StoreError>;

    /// Writes a whole session as another store keeps it (`folio store copy`): `meta` and its
    /// `events` (indexes 0, 1, … with their turn ids and times), in place of any session with
    /// its id (a copy that stopped half way through it is redone), durably when it returns.
    /// Never while a server runs on the store: no follower or lease is told.
    async fn import_session(&self, meta: &SessionMeta, events: &[Event]) -> Result<(), StoreError>;

    /// The records of idempotent creates, by principal then key (byte order), after `after`
    /// (`(principal, key)`, exclusive), at most `limit`.
    async fn list_create_keys(
        &self,
        after: Option<(&str, &str)>,
        limit: usize,
    ) -> Result<Vec<CreateKey>, StoreError>;

    /// The copy into this store that has not finished (`folio store copy` writes it before
    /// anything else and removes it once the copy is verified): its description; `None` when
    /// no copy is under way. A server refuses to start on a store that has one.
    async fn copy_marker(&self) -> Result<Option<String>, StoreError>;

    /// Records `marker` as the copy under way (`None`: removes it), durably.
    async fn set_copy_marker(&self, marker: Option<&str>) -> Result<(), StoreError>;
}
