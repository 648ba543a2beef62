//! The embedded disk store as a [`SessionStore`]: the state root's files behind the store
//! interface that the PostgreSQL store implements too, so one conformance suite
//! ([`folio_store::suite`]) holds both to the same promises.
//!
//! What each part of the trait is on disk (docs/http-api.md "Storage and crashes"):
//! - metadata: `sessions/<id>/session.json`, written in place when new and synced with the
//!   session's directories and log at its first [`commit`](SessionStore::commit), rewritten
//!   whole (staged, synced, renamed) when a commit carries metadata;
//! - the event log: `traces/<id>.ndjson` ([`EventLog`]), appends unsynced until the next commit
//!   (one group-commit round);
//! - create keys: `idempotency/<sha256(principal, key)>`, the session id and the request's
//!   digest, synced before the call returns;
//! - slot claims: a `claimed` record in the schedule's slot log (`schedules/<name>.ndjson`),
//!   synced before the call returns;
//! - storage entries: one file each under `storage/` ([`DiskStorage`]), a session's own removed
//!   with it.
//!
//! One process opens a state root at a time (it holds `<state-root>/.lock`), so leases and
//! their fencing tokens live in this process's memory (a lease only orders this process's own
//! writers, and after a restart no lease is held) and signals go from this process to itself.
//! Retention deletes a session's folder and log; slot claims stay in their slot log. Channel
//! deliveries are [`DiskDeliveries`] over the same state root.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use folio_protocol::Event;
use folio_store::{
    Appends, CreateKey, DeliveryStore, Lease, ListQuery, NewEvent, RetentionReport, SessionFilter,
    SessionMeta, SessionStore, Signal, Signals, StorageStore, StoreError, TimeRange,
};
use tokio::sync::{broadcast, watch};

use folio_agent::ArtifactBackend;

use crate::OpenError;
use crate::create_keys::{
    CreateRecord, create_record_name, read_create_record, write_create_record,
};
use crate::deliveries::DiskDeliveries;
use crate::event_log::{EventLog, LogError, last_event, read_events};
use crate::index::{Pause, SessionIndex};
use crate::lock;
use crate::slots::{SlotRecord, log_path, read_records, slots_dir};
use crate::state::{
    MetaFile, StateRoot, SyncTarget, load_meta, lock_state_root, meta_never_written,
    new_session_targets, valid_session_id,
};
use crate::storage::DiskStorage;

/// How many session logs stay open without followers; past it, the least recently used idle
/// ones are closed (and reopened, reading the log once, on their next use).
const OPEN_LOGS: usize = 256;

/// How many signals a slow follower may fall behind.
const SIGNALS: usize = 1024;

/// The embedded disk store over one state root (see the module docs).
pub struct DiskStore {
    state: StateRoot,
    /// Signals, to this process's followers (the only process on the state root).
    signals: broadcast::Sender<Signal>,
    /// The session logs in use, by session id.
    logs: Mutex<HashMap<String, Arc<OpenLog>>>,
    /// The leases, by session id (see the module docs).
    leases: Mutex<Leases>,
    /// How many logs may be open before idle ones are looked for again.
    sweep_at: Mutex<usize>,
    /// Create keys and slot claims are checked and recorded one at a time.
    recording: tokio::sync::Mutex<()>,
    /// `<state-root>/artifacts`, as `folio serve` keeps them.
    artifacts: folio_agent::DirArtifacts,
    /// `<state-root>/channels`, as `folio serve` keeps them.
    deliveries: Arc<DiskDeliveries>,
    /// `<state-root>/storage`.
    storage: Arc<DiskStorage>,
    /// Slots claimed by this process since it opened the state root (see
    /// [`SessionStore::claim_slot`] below).
    claimed: Mutex<std::collections::HashSet<(String, DateTime<Utc>)>>,
    /// `<state-root>/.lock`, held until [`SessionStore::close`].
    lock: Mutex<Option<std::fs::File>>,
    /// The session index (`sessions.index`): lists and opening read it, not every session.
    index: Mutex<SessionIndex>,
}

/// The owner named in the leases of turns a stopped process left open (see [`DiskStore::open`]).
const STOPPED_PROCESS: &str = "the process that had the state root before";

/// One session's open log and what its followers watch.
struct OpenLog {
    log: EventLog,
    /// Appends run one at a time: the index check and the writes of a batch are one step.
    appending: Mutex<()>,
    /// The index of the newest event (`None`: an empty log), for followers.
    newest: watch::Sender<Option<u64>>,
    /// The session was created by this store and its first commit has not happened: that
    /// commit also syncs its `session.json` and the directory entries that make it exist.
    fresh: Mutex<bool>,
    /// When it was last used, for closing idle logs.
    used: Mutex<std::time::Instant>,
    /// The session's metadata as last read or written through this store (`None`: not read
    /// yet): one process has the state root, so while the log is open this is the file.
    meta: Mutex<Option<SessionMeta>>,
    /// The log's last event, kept as appends land.
    last: Mutex<Option<Event>>,
    /// The session's changes to the session index since its last commit, which syncs them.
    indexed: Mutex<bool>,
}

#[derive(Default)]
struct Leases {
    held: HashMap<String, Lease>,
    /// The greatest fencing token issued, per session.
    fences: HashMap<String, u64>,
}

impl DiskStore {
    /// Opens the store over `state`, taking the state root's lock (refused with
    /// [`OpenError::InUse`] when another process has it).
    ///
    /// One process has a state root at a time, so whatever a process that stopped left
    /// between two durable steps is settled here, before anything else reads the store:
    /// - a create it never acknowledged (`session.json` never written out: it is synced with
    ///   the first message, before the `201`) is removed with its log;
    /// - a session whose turn it left open (status `running`), or whose log moved past its
    ///   `session.json`, is held under an expired lease of that process, so that the engine
    ///   takes it over ([`SessionStore::expired_leases`]) as it takes over a dead server's
    ///   turns: the open turn is recorded as `server restarted` (one parked on an approval
    ///   stays parked), queued messages run, and the metadata is repaired from the log.
    ///
    /// Only the sessions the session index marks active are visited (see `index.rs`); an index
    /// that is missing, torn or stale is rebuilt from every `session.json` first.
    pub fn open(state: StateRoot) -> Result<DiskStore, OpenError> {
        Self::open_with(state, None)
    }

    /// [`DiskStore::open`], pausing a rebuild of the index where a crash test kills it.
    pub(crate) fn open_with(
        state: StateRoot,
        pause: Option<Pause>,
    ) -> Result<DiskStore, OpenError> {
        let lock = lock_state_root(&state)?;
        let opened = SessionIndex::open(&state, pause).map_err(|err| {
            OpenError::io(
                format!(
                    "cannot open the session index of {} (remove sessions.index and sessions.index.log there to rebuild it from the sessions)",
                    state.path().display()
                ),
                err,
            )
        })?;
        // A new state root has no index yet, and nothing to say about it.
        if let Some(reason) = &opened.rebuilt
            && opened.index.len() > 0
        {
            tracing::warn!(
                sessions = opened.index.len(),
                "rebuilt the session index of {} from the sessions' session.json files: {reason}",
                state.path().display()
            );
        }
        for id in &opened.unwritten {
            forget_unacknowledged(&state, id);
        }
        let mut index = opened.index;
        if !opened.unwritten.is_empty() {
            index
                .folders_changed()
                .map_err(|err| index_write_error(&state, err))?;
        }
        let store = DiskStore {
            index: Mutex::new(index),
            artifacts: folio_agent::DirArtifacts::new(state.path().join("artifacts")),
            deliveries: Arc::new(DiskDeliveries::new(state.path())),
            storage: Arc::new(DiskStorage::new(state.path())),
            state,
            signals: broadcast::Sender::new(SIGNALS),
            logs: Mutex::new(HashMap::new()),
            leases: Mutex::new(Leases::default()),
            sweep_at: Mutex::new(OPEN_LOGS),
            recording: tokio::sync::Mutex::new(()),
            claimed: Mutex::new(std::collections::HashSet::new()),
            lock: Mutex::new(Some(lock)),
        };
        store.settle_stopped_process()?;
        Ok(store)
    }

    /// What [`DiskStore::open`] settles of the process that had the state root before: the
    /// sessions the index marks active, each settled from its `session.json` and log's end.
    fn settle_stopped_process(&self) -> Result<(), OpenError> {
        let state = &self.state;
        let index_error = |err| index_write_error(state, err);
        let stopped = Utc::now() - chrono::Duration::seconds(1);
        let active = lock(&self.index).active();
        let mut leases = lock(&self.leases);
        for id in active {
            let meta = match load_meta(state, &id) {
                Ok(Some(meta)) => meta,
                Ok(None) => {
                    if meta_never_written(state, &id) {
                        forget_unacknowledged(state, &id);
                    }
                    if !state.session_dir(&id).exists() {
                        lock(&self.index).remove(&id).map_err(index_error)?;
                    }
                    continue;
                }
                Err(err) => {
                    tracing::error!(
                        "could not recover session {id}: cannot read session.json: {err}"
                    );
                    continue;
                }
            };
            let moved = match last_event(&state.trace_path(&id)) {
                Ok(last) => last.is_some_and(|last| last.index > meta.last_index),
                Err(err) => {
                    tracing::error!("could not recover session {id}: {err}");
                    continue;
                }
            };
            let running = meta.status == folio_protocol::SessionStatus::Running;
            lock(&self.index)
                .put(&meta, running || moved)
                .map_err(index_error)?;
            if !running && !moved {
                continue;
            }
            leases.held.insert(
                id.clone(),
                Lease {
                    session_id: id,
                    owner: STOPPED_PROCESS.to_string(),
                    fence: 0,
                    expires_at: stopped,
                    took_over: None,
                },
            );
        }
        let mut index = lock(&self.index);
        if index.wants_snapshot() {
            index.snapshot(None).map_err(index_error)?;
        }
        Ok(())
    }

    /// Records `meta` in the session index: active while running or while the log is past
    /// its last recorded boundary. The session's next commit syncs the change.
    fn index_meta(&self, meta: &SessionMeta, open: Option<&OpenLog>) -> Result<(), StoreError> {
        let moved = open.map(|open| {
            lock(&open.last)
                .as_ref()
                .is_some_and(|last| last.index > meta.last_index)
        });
        let mut index = lock(&self.index);
        let moved = moved.unwrap_or_else(|| index.is_active(&meta.session_id));
        let active = meta.status == folio_protocol::SessionStatus::Running || moved;
        index.put(meta, active).map_err(index_error)?;
        self.compact(&mut index)?;
        if let Some(open) = open {
            *lock(&open.indexed) = true;
        }
        Ok(())
    }

    /// Writes the index as a new snapshot once its log holds enough changes.
    fn compact(&self, index: &mut SessionIndex) -> Result<(), StoreError> {
        if index.wants_snapshot() {
            index.snapshot(None).map_err(index_error)?;
        }
        Ok(())
    }

    /// The credentials file of `principal` for MCP connection `connection`
    /// (`mcp-auth/<principal>/<connection>.json`, as `folio serve` keeps them).
    fn credentials(
        &self,
        principal: &str,
        connection: &str,
    ) -> Result<folio_agent::mcp::McpCredentialStore, StoreError> {
        if connection.is_empty() || connection.contains(['/', '\\']) || connection.starts_with('.')
        {
            return Err(StoreError::backend(format!(
                "{connection:?} is not an MCP connection name"
            )));
        }
        let dir = self.state.mcp_auth_dir(principal);
        Ok(folio_agent::mcp::McpCredentialStore::file(
            dir.join(format!("{connection}.json")),
        ))
    }

    /// The session's open log; `NotFound` when the session does not exist.
    fn open_log(&self, session_id: &str) -> Result<Arc<OpenLog>, StoreError> {
        if let Some(open) = lock(&self.logs).get(session_id) {
            *lock(&open.used) = std::time::Instant::now();
            return Ok(open.clone());
        }
        if !self.exists(session_id)? {
            return Err(StoreError::NotFound(format!("session {session_id}")));
        }
        self.insert_log(session_id, None)
    }

    /// Opens the log of `session_id` and keeps it, closing idle logs past [`OPEN_LOGS`].
    fn insert_log(
        &self,
        session_id: &str,
        fresh: Option<&SessionMeta>,
    ) -> Result<Arc<OpenLog>, StoreError> {
        let (log, mut events) =
            EventLog::open(&self.state.trace_path(session_id), session_id).map_err(log_error)?;
        let last = events.pop();
        let open = Arc::new(OpenLog {
            log,
            appending: Mutex::new(()),
            newest: watch::Sender::new(last.as_ref().map(|event| event.index)),
            fresh: Mutex::new(fresh.is_some()),
            used: Mutex::new(std::time::Instant::now()),
            meta: Mutex::new(fresh.cloned()),
            last: Mutex::new(last),
            indexed: Mutex::new(fresh.is_some()),
        });
        let mut logs = lock(&self.logs);
        let open = logs.entry(session_id.to_string()).or_insert(open).clone();
        // Closing is one pass over the open logs, so it runs only once a quarter of the limit
        // more is open than after the last pass (logs still followed stay open).
        let mut sweep = lock(&self.sweep_at);
        if logs.len() > (*sweep).max(OPEN_LOGS) {
            let mut idle: Vec<(std::time::Instant, String)> = logs
                .iter()
                .filter(|(_, log)| log.newest.receiver_count() == 0 && !*lock(&log.fresh))
                .map(|(id, log)| (*lock(&log.used), id.clone()))
                .collect();
            idle.sort_unstable();
            let excess = logs.len().saturating_sub(OPEN_LOGS * 3 / 4);
            for (_, id) in idle.into_iter().take(excess) {
                logs.remove(&id);
            }
            *sweep = logs.len() + OPEN_LOGS / 4;
        }
        Ok(open)
    }

    /// Whether the session's `session.json` exists and was written (for a session whose log
    /// this store has open, whether the file is still there: deleting a session's folder by
    /// hand deletes the session).
    fn exists(&self, session_id: &str) -> Result<bool, StoreError> {
        if !valid_session_id(session_id) {
            return Ok(false);
        }
        if lock(&self.logs).contains_key(session_id) {
            return Ok(self.state.meta_path(session_id).exists());
        }
        Ok(load_meta(&self.state, session_id)
            .map_err(|source| io("cannot read session.json", source))?
            .is_some())
    }

    /// The lease of `session_id` when it carries `fence`; `Fenced` otherwise.
    fn check_fence(&self, session_id: &str, fence: u64) -> Result<(), StoreError> {
        match lock(&self.leases).held.get(session_id) {
            Some(lease) if lease.fence == fence => Ok(()),
            _ => Err(StoreError::Fenced {
                session_id: session_id.to_string(),
                fence,
            }),
        }
    }
}

/// What opening a state root answers when its session index cannot be written.
fn index_write_error(state: &StateRoot, err: std::io::Error) -> OpenError {
    OpenError::io(
        format!(
            "cannot write the session index of {}",
            state.path().display()
        ),
        err,
    )
}

/// Removes a session whose create a stopped process never acknowledged: its `session.json`
/// was never written out, so no client knows it and nothing in it was acknowledged.
fn forget_unacknowledged(state: &StateRoot, id: &str) {
    let removed = std::fs::remove_dir_all(state.session_dir(id)).and_then(|()| {
        match std::fs::remove_file(state.trace_path(id)) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => Err(err),
            _ => Ok(()),
        }
    });
    match removed {
        Ok(()) => tracing::warn!(
            "session {id}: removed a create the server stopped before acknowledging (its session.json was never written)"
        ),
        Err(err) => tracing::error!(
            "session {id}: cannot remove a create the server stopped before acknowledging: {err}; remove {} by hand",
            state.session_dir(id).display()
        ),
    }
}

/// A session index write's error, as the store reports it.
fn index_error(source: std::io::Error) -> StoreError {
    io(
        "cannot write the session index (sessions.index.log in the state root; check the disk, or remove sessions.index and sessions.index.log to rebuild it at the next start)",
        source,
    )
}

fn io(context: &str, source: std::io::Error) -> StoreError {
    StoreError::Io {
        context: context.to_string(),
        source,
    }
}

fn log_error(err: LogError) -> StoreError {
    match err {
        LogError::Io { path, source } => io(&format!("event log {}", path.display()), source),
        corrupt @ LogError::Corrupt { .. } => StoreError::Backend {
            message: corrupt.to_string(),
            source: Some(Box::new(corrupt)),
        },
        LogError::Store(err) => err,
    }
}

/// An artifact operation's error, as the store reports it.
fn artifact_error(err: folio_agent::ArtifactError) -> StoreError {
    match err {
        folio_agent::ArtifactError::Io { path, source } => {
            io(&format!("artifact {}", path.display()), source)
        }
        invalid @ (folio_agent::ArtifactError::Invalid(_)
        | folio_agent::ArtifactError::Schema { .. }
        | folio_agent::ArtifactError::Store { .. }) => StoreError::Backend {
            message: invalid.to_string(),
            source: Some(Box::new(invalid)),
        },
    }
}

fn chrono_ttl(ttl: Duration) -> chrono::Duration {
    chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::MAX)
}

#[async_trait::async_trait]
impl SessionStore for DiskStore {
    fn backend(&self) -> &'static str {
        "disk"
    }

    fn deliveries(&self) -> Arc<dyn DeliveryStore> {
        self.deliveries.clone()
    }

    fn storage(&self) -> Arc<dyn StorageStore> {
        self.storage.clone()
    }

    async fn create_session(&self, meta: &SessionMeta) -> Result<(), StoreError> {
        let id = &meta.session_id;
        if !valid_session_id(id) {
            return Err(StoreError::backend(format!(
                "{id} is not a session id (ses_ + 26 ULID characters)"
            )));
        }
        let mut index = lock(&self.index);
        match meta.write_new(&self.state) {
            Ok(()) => {}
            // A `session.json` a crash left unwritten belongs to a create never acknowledged.
            Err(err)
                if err.kind() == std::io::ErrorKind::AlreadyExists
                    && meta_never_written(&self.state, id) =>
            {
                std::fs::remove_file(self.state.meta_path(id))
                    .map_err(|source| io("cannot remove an unwritten session.json", source))?;
                meta.write_new(&self.state)
                    .map_err(|source| io("cannot write session.json", source))?;
            }
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(StoreError::AlreadyExists(id.clone()));
            }
            Err(source) => return Err(io("cannot write session.json", source)),
        }
        index.put(meta, true).map_err(index_error)?;
        self.compact(&mut index)?;
        drop(index);
        self.insert_log(id, Some(meta))?;
        Ok(())
    }

    async fn load_session(&self, session_id: &str) -> Result<Option<SessionMeta>, StoreError> {
        if !valid_session_id(session_id) {
            return Ok(None);
        }
        let open = lock(&self.logs).get(session_id).cloned();
        if let Some(meta) = open.as_ref().and_then(|open| lock(&open.meta).clone())
            && self.state.meta_path(session_id).exists()
        {
            return Ok(Some(meta));
        }
        let meta = load_meta(&self.state, session_id)
            .map_err(|source| io("cannot read session.json", source))?;
        if let Some(open) = open {
            *lock(&open.meta) = meta.clone();
        }
        Ok(meta)
    }

    async fn save_session(&self, meta: &SessionMeta) -> Result<(), StoreError> {
        if !self.exists(&meta.session_id)? {
            return Err(StoreError::NotFound(format!("session {}", meta.session_id)));
        }
        meta.save_repairable(&self.state)
            .map_err(|source| io("cannot save session.json", source))?;
        let open = lock(&self.logs).get(&meta.session_id).cloned();
        if let Some(open) = &open {
            *lock(&open.meta) = Some(meta.clone());
        }
        self.index_meta(meta, open.as_deref())
    }

    /// The index picks the page; each listed session's metadata is then read (a session
    /// whose folder went meanwhile is skipped, and the page filled from further on).
    async fn list_sessions(&self, query: &ListQuery) -> Result<Vec<SessionMeta>, StoreError> {
        let mut page = Vec::new();
        let mut next = query.clone();
        while page.len() < query.limit {
            next.limit = query.limit - page.len();
            let ids = lock(&self.index).list(&next);
            for id in &ids {
                if let Some(meta) = self.load_session(id).await? {
                    page.push(meta);
                }
            }
            if ids.len() < next.limit {
                break;
            }
            next.before = ids.last().cloned();
        }
        Ok(page)
    }

    async fn delete_session(&self, session_id: &str) -> Result<(), StoreError> {
        if !self.exists(session_id)? {
            return Err(StoreError::NotFound(format!("session {session_id}")));
        }
        // Its storage entries first: a crash before the session's folder goes leaves the
        // session, whose next deletion (or retention) removes the rest.
        self.storage.delete_session_entries(session_id).await?;
        // Dropping the open log drops its watch: followers' streams end.
        lock(&self.logs).remove(session_id);
        lock(&self.leases).held.remove(session_id);
        {
            let mut index = lock(&self.index);
            std::fs::remove_dir_all(self.state.session_dir(session_id))
                .map_err(|source| io("cannot delete the session directory", source))?;
            index.remove(session_id).map_err(index_error)?;
            self.compact(&mut index)?;
        }
        match std::fs::remove_dir_all(self.state.path().join("reminders").join(session_id)) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                return Err(io("cannot delete the session's reminders", err));
            }
            _ => {}
        }
        match std::fs::remove_file(self.state.trace_path(session_id)) {
            Ok(()) => Ok(()),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(io("cannot delete the event log", source)),
        }
    }

    async fn append(
        &self,
        session_id: &str,
        expected: u64,
        fence: Option<u64>,
        events: Vec<NewEvent>,
    ) -> Result<Vec<Event>, StoreError> {
        let open = self.open_log(session_id)?;
        let _appending = lock(&open.appending);
        if let Some(fence) = fence {
            self.check_fence(session_id, fence)?;
        }
        let actual = open.log.next_index();
        if actual != expected {
            return Err(StoreError::Conflict {
                session_id: session_id.to_string(),
                expected,
                actual,
            });
        }
        let mut stored = Vec::with_capacity(events.len());
        for event in events {
            stored.push(
                open.log
                    .append_at(
                        event.turn_id.as_deref(),
                        event.body,
                        event.at.unwrap_or_else(crate::event_log::now_millis),
                    )
                    .map_err(log_error)?,
            );
        }
        if let Some(last) = stored.last() {
            *lock(&open.last) = Some(last.clone());
            open.newest.send_replace(Some(last.index));
            if lock(&self.index)
                .set_active(session_id, true)
                .map_err(index_error)?
            {
                *lock(&open.indexed) = true;
            }
        }
        Ok(stored)
    }

    async fn commit(&self, session_id: &str, meta: Option<&SessionMeta>) -> Result<(), StoreError> {
        let open = self.open_log(session_id)?;
        let fresh = *lock(&open.fresh);
        let mut targets = Vec::new();
        if fresh {
            targets.extend(new_session_targets(&self.state, session_id));
        }
        if let Some(meta) = meta {
            self.index_meta(meta, Some(&*open))?;
        }
        let indexed = std::mem::take(&mut *lock(&open.indexed));
        if indexed {
            targets.push(SyncTarget::Data(lock(&self.index).log_file()));
        }
        let staged = match meta {
            Some(meta) => {
                let staged = meta
                    .stage(&self.state)
                    .map_err(|source| io("cannot write session.json", source))?;
                targets.push(staged.target());
                Some(staged)
            }
            None => None,
        };
        if let Err(err) = open.log.commit_with(targets).await {
            *lock(&open.indexed) |= indexed;
            return Err(log_error(err));
        }
        *lock(&open.fresh) = false;
        if let Some(staged) = staged {
            staged
                .install()
                .await
                .map_err(|source| io("cannot save session.json", source))?;
            *lock(&open.meta) = meta.cloned();
        }
        Ok(())
    }

    async fn read_events(
        &self,
        session_id: &str,
        start_index: u64,
        limit: Option<usize>,
    ) -> Result<Vec<Event>, StoreError> {
        if !self.exists(session_id)? {
            return Err(StoreError::NotFound(format!("session {session_id}")));
        }
        // Nothing at or past `start_index` (an open log knows its end): no read.
        if let Some(open) = lock(&self.logs).get(session_id)
            && lock(&open.last)
                .as_ref()
                .is_none_or(|last| last.index < start_index)
        {
            return Ok(Vec::new());
        }
        let path = self.state.trace_path(session_id);
        let events = match read_events(&path) {
            Ok(events) => events,
            Err(LogError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                Vec::new()
            }
            Err(err) => return Err(log_error(err)),
        };
        Ok(events
            .into_iter()
            .filter(|event| event.index >= start_index)
            .take(limit.unwrap_or(usize::MAX))
            .collect())
    }

    async fn last_event(&self, session_id: &str) -> Result<Option<Event>, StoreError> {
        if !self.exists(session_id)? {
            return Err(StoreError::NotFound(format!("session {session_id}")));
        }
        if let Some(open) = lock(&self.logs).get(session_id) {
            return Ok(lock(&open.last).clone());
        }
        last_event(&self.state.trace_path(session_id)).map_err(log_error)
    }

    async fn follow(&self, session_id: &str) -> Result<Appends, StoreError> {
        let mut newest = self.open_log(session_id)?.newest.subscribe();
        newest.mark_unchanged();
        Ok(Box::pin(futures::stream::unfold(
            newest,
            |mut newest| async move {
                loop {
                    newest.changed().await.ok()?;
                    let seen = *newest.borrow_and_update();
                    if let Some(index) = seen {
                        return Some((index, newest));
                    }
                }
            },
        )))
    }

    async fn acquire_lease(
        &self,
        session_id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Lease, StoreError> {
        if !self.exists(session_id)? {
            return Err(StoreError::NotFound(format!("session {session_id}")));
        }
        let now = Utc::now();
        let mut leases = lock(&self.leases);
        let took_over = match leases.held.get(session_id) {
            Some(held) if held.owner != owner && held.expires_at > now => {
                return Err(StoreError::LeaseHeld {
                    session_id: session_id.to_string(),
                    owner: held.owner.clone(),
                    expires_at: held.expires_at,
                });
            }
            Some(held) if held.owner != owner => Some(held.owner.clone()),
            _ => None,
        };
        let fence = leases.fences.entry(session_id.to_string()).or_insert(0);
        *fence += 1;
        let lease = Lease {
            session_id: session_id.to_string(),
            owner: owner.to_string(),
            fence: *fence,
            expires_at: now + chrono_ttl(ttl),
            took_over,
        };
        leases.held.insert(session_id.to_string(), lease.clone());
        Ok(lease)
    }

    async fn renew_lease(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        let mut leases = lock(&self.leases);
        match leases.held.get_mut(&lease.session_id) {
            Some(held) if held.fence == lease.fence => {
                held.expires_at = Utc::now() + chrono_ttl(ttl);
                Ok(held.clone())
            }
            _ => Err(StoreError::Fenced {
                session_id: lease.session_id.clone(),
                fence: lease.fence,
            }),
        }
    }

    async fn release_lease(&self, lease: &Lease) -> Result<(), StoreError> {
        let mut leases = lock(&self.leases);
        if leases
            .held
            .get(&lease.session_id)
            .is_some_and(|held| held.fence == lease.fence)
        {
            leases.held.remove(&lease.session_id);
        }
        Ok(())
    }

    async fn expired_leases(&self) -> Result<Vec<Lease>, StoreError> {
        let now = Utc::now();
        Ok(lock(&self.leases)
            .held
            .values()
            .filter(|lease| lease.expires_at <= now)
            .cloned()
            .collect())
    }

    async fn close(&self) {
        lock(&self.lock).take();
    }

    async fn record_create_key(&self, record: &CreateKey) -> Result<Option<CreateKey>, StoreError> {
        let _recording = self.recording.lock().await;
        let path = self
            .state
            .path()
            .join("idempotency")
            .join(create_record_name(&record.principal, &record.key));
        let recorded = read_create_record(&path)
            .map_err(|source| io("cannot read the idempotency record", source))?;
        if let Some(CreateRecord {
            session_id,
            digest: Some(digest),
            ..
        }) = recorded
            && !session_id.is_empty()
        {
            return Ok(Some(CreateKey {
                principal: record.principal.clone(),
                key: record.key.clone(),
                session_id,
                digest,
            }));
        }
        write_create_record(&path, record)
            .await
            .map_err(|source| io("cannot record the idempotency key", source))?;
        Ok(None)
    }

    /// Slot claims stay: they are lines of the schedule's slot log, one per firing, which
    /// the scheduler reads whole.
    async fn signal(&self, session_id: &str, message: &str) -> Result<(), StoreError> {
        // No follower is fine: no turn of this process waits for it.
        let _ = self.signals.send(Signal {
            session_id: session_id.to_string(),
            message: message.to_string(),
        });
        Ok(())
    }

    /// A follower that falls behind by more than [`SIGNALS`] skips what it missed.
    async fn signals(&self) -> Result<Signals, StoreError> {
        Ok(Box::pin(futures::stream::unfold(
            self.signals.subscribe(),
            |mut signals| async move {
                loop {
                    match signals.recv().await {
                        Ok(signal) => return Some((signal, signals)),
                        Err(broadcast::error::RecvError::Lagged(_)) => {}
                        Err(broadcast::error::RecvError::Closed) => return None,
                    }
                }
            },
        )))
    }

    async fn delete_expired_sessions(
        &self,
        cutoff: DateTime<Utc>,
    ) -> Result<RetentionReport, StoreError> {
        let mut report = RetentionReport::default();
        let mut before = None;
        loop {
            let page = self
                .list_sessions(&ListQuery {
                    principal: None,
                    before: before.clone(),
                    limit: 100,
                    filter: SessionFilter {
                        updated: TimeRange {
                            from: None,
                            until: Some(cutoff),
                        },
                        ..Default::default()
                    },
                })
                .await?;
            before = page.last().map(|meta| meta.session_id.clone());
            for meta in &page {
                let id = &meta.session_id;
                if meta.updated_at >= cutoff
                    || lock(&self.leases).held.contains_key(id)
                    || crate::reminders::has_reminders(&self.state, id)
                {
                    continue;
                }
                let events = self.last_event(id).await?.map_or(0, |last| last.index + 1);
                match self.delete_session(id).await {
                    Ok(()) => {
                        report.sessions += 1;
                        report.events += events;
                    }
                    // Deleted meanwhile by its owner.
                    Err(StoreError::NotFound(_)) => {}
                    Err(err) => return Err(err),
                }
            }
            if page.len() < 100 {
                return Ok(report);
            }
        }
    }

    async fn delete_unacknowledged_sessions(
        &self,
        older_than: Duration,
    ) -> Result<Vec<SessionMeta>, StoreError> {
        let until = Utc::now() - chrono_ttl(older_than);
        let since = until - chrono::Duration::hours(1);
        let mut deleted = Vec::new();
        let mut before = None;
        loop {
            let page = self
                .list_sessions(&ListQuery {
                    principal: None,
                    before: before.clone(),
                    limit: 100,
                    filter: SessionFilter {
                        created: TimeRange {
                            from: Some(since),
                            until: Some(until),
                        },
                        ..Default::default()
                    },
                })
                .await?;
            before = page.last().map(|meta| meta.session_id.clone());
            for meta in &page {
                let id = &meta.session_id;
                if meta.created_at >= until
                    || meta.created_at <= since
                    || lock(&self.leases).held.contains_key(id)
                    || self.last_event(id).await?.is_some()
                {
                    continue;
                }
                match self.delete_session(id).await {
                    Ok(()) => deleted.push(meta.clone()),
                    Err(StoreError::NotFound(_)) => {}
                    Err(err) => return Err(err),
                }
            }
            // Newest first: past the window, nothing older qualifies.
            let past = page.last().is_none_or(|meta| meta.created_at <= since);
            if page.len() < 100 || past {
                return Ok(deleted);
            }
        }
    }

    /// One process has the state root, so a claim only has to hold against this process's
    /// own claims and the slot log: a slot the log records as claimed (the scheduler writes
    /// that record, synced, right after a claim succeeds) or that this process claimed since
    /// it opened is refused. A claim the process died before recording is free again: its
    /// session never started.
    async fn claim_slot(
        &self,
        schedule: &str,
        slot: DateTime<Utc>,
        _owner: &str,
    ) -> Result<bool, StoreError> {
        if !valid_schedule_name(schedule) {
            return Err(StoreError::backend(format!(
                "{schedule:?} is not a schedule name: `/`-separated segments of letters, digits, `_`, `-` and `.`, none of them `.` or `..`"
            )));
        }
        let _recording = self.recording.lock().await;
        if lock(&self.claimed).contains(&(schedule.to_string(), slot)) {
            return Ok(false);
        }
        let path = log_path(&slots_dir(&self.state), schedule);
        let records = read_records(&path).map_err(|err| StoreError::Backend {
            message: err.to_string(),
            source: Some(Box::new(err)),
        })?;
        let recorded = records
            .iter()
            .any(|record| matches!(record, SlotRecord::Claimed { slot: claimed, .. } if *claimed == slot));
        if recorded {
            return Ok(false);
        }
        lock(&self.claimed).insert((schedule.to_string(), slot));
        Ok(true)
    }

    async fn put_reminder(&self, reminder: &folio_protocol::Reminder) -> Result<(), StoreError> {
        crate::reminders::write_reminder_file(&self.state, reminder).await
    }

    async fn remove_reminder(
        &self,
        session_id: &str,
        reminder_id: &str,
    ) -> Result<bool, StoreError> {
        crate::reminders::remove_reminder_file(&self.state, session_id, reminder_id).await
    }

    async fn session_reminders(
        &self,
        session_id: &str,
    ) -> Result<Vec<folio_protocol::Reminder>, StoreError> {
        crate::reminders::stored_reminders_of(&self.state, session_id)
    }

    async fn due_reminders(
        &self,
        until: Option<DateTime<Utc>>,
        limit: usize,
    ) -> Result<Vec<folio_protocol::Reminder>, StoreError> {
        let mut due: Vec<_> = crate::reminders::stored_reminders(&self.state)?
            .into_iter()
            .filter(|reminder| until.is_none_or(|until| reminder.at <= until))
            .collect();
        due.sort_by(|a, b| (a.at, &a.reminder_id).cmp(&(b.at, &b.reminder_id)));
        due.truncate(limit);
        Ok(due)
    }

    async fn put_artifact(
        &self,
        record: &folio_protocol::ArtifactRecord,
        contents: Option<&[u8]>,
        max: usize,
    ) -> Result<folio_protocol::ArtifactRecord, StoreError> {
        self.artifacts
            .put(record.clone(), contents.map(<[u8]>::to_vec), max)
            .await
            .map_err(artifact_error)
    }

    async fn list_artifacts(&self) -> Result<Vec<folio_protocol::ArtifactRecord>, StoreError> {
        self.artifacts.list().await.map_err(artifact_error)
    }

    async fn get_artifact(
        &self,
        id: &str,
    ) -> Result<Option<folio_protocol::ArtifactRecord>, StoreError> {
        self.artifacts.get(id).await.map_err(artifact_error)
    }

    async fn artifact_content(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.artifacts.content(id).await.map_err(artifact_error)
    }

    async fn mcp_credentials(
        &self,
        principal: &str,
        connection: &str,
    ) -> Result<Option<serde_json::Value>, StoreError> {
        self.credentials(principal, connection)?
            .load_json()
            .await
            .map_err(credentials_error)
    }

    async fn put_mcp_credentials(
        &self,
        principal: &str,
        connection: &str,
        credentials: &serde_json::Value,
    ) -> Result<(), StoreError> {
        self.credentials(principal, connection)?
            .save_json(credentials.clone())
            .await
            .map_err(credentials_error)
    }

    async fn clear_mcp_credentials(
        &self,
        principal: &str,
        connection: &str,
    ) -> Result<(), StoreError> {
        self.credentials(principal, connection)?
            .remove()
            .await
            .map_err(credentials_error)
    }

    async fn import_session(&self, meta: &SessionMeta, events: &[Event]) -> Result<(), StoreError> {
        let id = &meta.session_id;
        if !valid_session_id(id) {
            return Err(StoreError::backend(format!(
                "{id} is not a session id (ses_ + 26 ULID characters)"
            )));
        }
        // The log is replaced under an open one: reopened, reading the new file, on next use.
        lock(&self.logs).remove(id);
        lock(&self.leases).held.remove(id);
        crate::import::import_session(&self.state, meta, events).await?;
        // Listed from the session index like any other: recorded there, and synced now (no
        // commit of the session follows an import).
        let moved = events
            .last()
            .is_some_and(|last| last.index > meta.last_index);
        let log = {
            let mut index = lock(&self.index);
            let active = meta.status == folio_protocol::SessionStatus::Running || moved;
            index.put(meta, active).map_err(index_error)?;
            self.compact(&mut index)?;
            index.log_file()
        };
        tokio::task::spawn_blocking(move || log.sync_data())
            .await
            .map_err(|err| StoreError::backend_from("the session index's sync", err))?
            .map_err(|source| io("cannot sync the session index", source))
    }

    async fn list_create_keys(
        &self,
        after: Option<(&str, &str)>,
        limit: usize,
    ) -> Result<Vec<CreateKey>, StoreError> {
        let _recording = self.recording.lock().await;
        crate::import::list_create_keys(&self.state, after, limit)
    }

    async fn copy_marker(&self) -> Result<Option<String>, StoreError> {
        crate::import::copy_marker(&self.state)
            .map_err(|source| io("cannot read the copy marker", source))
    }

    async fn set_copy_marker(&self, marker: Option<&str>) -> Result<(), StoreError> {
        crate::import::set_copy_marker(&self.state, marker).await
    }
}

/// An MCP credentials operation's error, as the store reports it.
fn credentials_error(err: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::backend_from("MCP credentials", err)
}

/// Whether `name` can name a slot log under the state root: relative, `/`-separated segments
/// of `[A-Za-z0-9_.-]`, none empty, `.` or `..`.
fn valid_schedule_name(name: &str) -> bool {
    name.split('/').all(|segment| {
        !matches!(segment, "" | "." | "..")
            && segment
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slots::append_record;

    #[tokio::test]
    async fn the_disk_store_passes_the_store_suite() {
        let roots = Mutex::new(Vec::new());
        folio_store::suite::run_all(async || -> Arc<dyn SessionStore> {
            let dir = tempfile::tempdir().unwrap();
            let store = DiskStore::open(StateRoot::new(dir.path())).unwrap();
            lock(&roots).push(dir);
            let store: Arc<dyn SessionStore> = Arc::new(store);
            store
        })
        .await;
    }

    #[tokio::test]
    async fn a_slot_of_a_schedule_name_that_leaves_the_slot_logs_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = DiskStore::open(StateRoot::new(dir.path().join("state"))).unwrap();
        let slot = "2026-12-01T09:00:00Z".parse().unwrap();
        for name in ["../escape", "/abs", "a//b", "a/./b", "x\\y", "", "a b"] {
            assert!(
                matches!(
                    store.claim_slot(name, slot, "a").await,
                    Err(StoreError::Backend { .. })
                ),
                "{name:?}"
            );
        }
        assert!(!dir.path().join("escape.ndjson").exists());
        assert!(store.claim_slot("reports/daily", slot, "a").await.unwrap());
    }

    #[tokio::test]
    async fn a_second_store_on_one_state_root_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let _first = DiskStore::open(StateRoot::new(dir.path())).unwrap();
        assert!(matches!(
            DiskStore::open(StateRoot::new(dir.path())),
            Err(OpenError::InUse(_))
        ));
    }

    #[tokio::test]
    async fn what_a_store_commits_is_there_when_the_state_root_is_opened_again() {
        let dir = tempfile::tempdir().unwrap();
        let meta = folio_store::suite::meta("alice");
        let id = meta.session_id.clone();
        {
            let store = DiskStore::open(StateRoot::new(dir.path())).unwrap();
            store.create_session(&meta).await.unwrap();
            store
                .append(
                    &id,
                    0,
                    None,
                    vec![NewEvent::new(
                        None,
                        folio_protocol::EventBody::SessionWaiting(
                            folio_protocol::SessionWaiting {},
                        ),
                    )],
                )
                .await
                .unwrap();
            store.commit(&id, None).await.unwrap();
            let key = CreateKey {
                principal: "alice".into(),
                key: "k".into(),
                session_id: id.clone(),
                digest: "d".into(),
            };
            assert_eq!(store.record_create_key(&key).await.unwrap(), None);
            let slot = "2026-12-01T09:00:00Z".parse().unwrap();
            assert!(store.claim_slot("nightly", slot, "a").await.unwrap());
            assert!(!store.claim_slot("nightly", slot, "a").await.unwrap());
            // The scheduler records the claim it won in the slot log, synced.
            append_record(
                &slots_dir(&StateRoot::new(dir.path())).join("nightly.ndjson"),
                &SlotRecord::Claimed {
                    slot,
                    manual: false,
                },
            )
            .unwrap();
            let unrecorded = "2026-12-01T10:00:00Z".parse().unwrap();
            assert!(store.claim_slot("nightly", unrecorded, "a").await.unwrap());
        }
        let store = DiskStore::open(StateRoot::new(dir.path())).unwrap();
        assert_eq!(store.load_session(&id).await.unwrap(), Some(meta));
        assert_eq!(store.read_events(&id, 0, None).await.unwrap().len(), 1);
        let again = CreateKey {
            principal: "alice".into(),
            key: "k".into(),
            session_id: "ses_other".into(),
            digest: "e".into(),
        };
        let kept = store.record_create_key(&again).await.unwrap().unwrap();
        assert_eq!(
            (kept.session_id, kept.digest),
            (id.clone(), "d".to_string())
        );
        let slot = "2026-12-01T09:00:00Z".parse().unwrap();
        assert!(!store.claim_slot("nightly", slot, "b").await.unwrap());
        // A claim the process died before recording was never fired: it is free again.
        let unrecorded = "2026-12-01T10:00:00Z".parse().unwrap();
        assert!(store.claim_slot("nightly", unrecorded, "b").await.unwrap());
        // The server's own parser reads the claim.
        let records =
            read_records(&slots_dir(&StateRoot::new(dir.path())).join("nightly.ndjson")).unwrap();
        assert_eq!(
            records,
            [SlotRecord::Claimed {
                slot,
                manual: false
            }]
        );
    }
}
