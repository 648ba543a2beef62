//! What a [`SessionManager`](crate::SessionManager), its actors, turns and streams share.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
use std::sync::{Arc, Mutex, RwLock, Weak};

use folio_agent::Agent;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::error::{ManagerError, store_error};
use crate::fault::FaultPoint;
use crate::live::{Live, lock};
use crate::logs::LogBuffer;
use crate::state::{SessionMeta, StateRoot};

/// The state of one agent's sessions, shared by the manager, its actors and its streams.
pub(crate) struct Inner {
    pub(crate) state: StateRoot,
    pub(crate) agent: RwLock<Arc<Agent>>,
    pub(crate) live: Mutex<HashMap<String, Weak<Live>>>,
    pub(crate) slots: Option<Arc<Semaphore>>,
    pub(crate) queued: AtomicU32,
    pub(crate) shutdown: CancellationToken,
    /// Set when shutdown starts: no new sessions or messages.
    pub(crate) closing: AtomicBool,
    pub(crate) tasks: TaskTracker,
    pub(crate) logs: LogBuffer,
    /// Keep-alive interval of streams, in milliseconds.
    pub(crate) keepalive_ms: AtomicU64,
    /// The exclusive lock on the state root, held until shutdown, when the session store
    /// lives elsewhere (with the disk store, the store holds it).
    pub(crate) state_lock: Mutex<Option<std::fs::File>>,
    /// The time schedules and reminders read (the system clock unless a test or
    /// `FOLIO_TEST_CLOCK_START` set another).
    pub(crate) clock: RwLock<Arc<dyn crate::schedule::Clock>>,
    /// Orders reminder changes and deliveries.
    pub(crate) reminders: tokio::sync::Mutex<()>,
    /// Wakes the reminder loop when a reminder is set or cancelled.
    pub(crate) reminders_changed: tokio::sync::Notify,
    /// The armed fault point of a crash test (`FOLIO_FAULT`); `None` in normal use.
    pub(crate) fault: Mutex<Option<FaultPoint>>,
    /// Whether a task retries the agent's failed MCP connections.
    pub(crate) reconnecting: AtomicBool,
    /// Creates under way with an idempotency key, one at a time per key.
    pub(crate) creating: KeyLocks,
    /// Where new sessions' host workspaces go (`None`: under the state root).
    pub(crate) workspace_root: RwLock<Option<Arc<crate::workspace_root::WorkspaceRoot>>>,
    /// Where sessions, their logs, create keys, reminders, slot claims and deliveries are kept:
    /// the state root's files ([`folio_store_disk::DiskStore`]) or a store several servers
    /// share. The engine speaks only to this trait.
    pub(crate) store: Arc<dyn folio_store::SessionStore>,
    /// This server's id as a lease owner and claimer: `srv_<ULID>`, new per process.
    pub(crate) server: String,
    /// How long a lease this server takes lives unless renewed.
    pub(crate) ttl: std::time::Duration,
    /// The authorization redirects this server passed on to the server whose turn waits for
    /// them, by relay id (see the `cluster` module).
    pub(crate) authorizing: std::sync::Mutex<
        HashMap<String, tokio::sync::mpsc::UnboundedSender<crate::cluster::AuthorizeStep>>,
    >,
    /// Lease acquisitions under way, one at a time per session.
    pub(crate) owning: KeyLocks,
}

/// One lock per key, held while a keyed create runs: a concurrent create with the same key
/// waits for the first and then gets its answer, instead of making a second session.
#[derive(Default)]
pub(crate) struct KeyLocks(Mutex<HashMap<String, Weak<tokio::sync::Mutex<()>>>>);

impl KeyLocks {
    /// Waits until no other holder has `key`; the key is free again when the guard drops.
    pub(crate) async fn lock(&self, key: &str) -> tokio::sync::OwnedMutexGuard<()> {
        let mutex = {
            let mut held = lock(&self.0);
            held.retain(|_, mutex| mutex.strong_count() > 0);
            match held.get(key).and_then(Weak::upgrade) {
                Some(mutex) => mutex,
                None => {
                    let mutex = Arc::new(tokio::sync::Mutex::new(()));
                    held.insert(key.to_string(), Arc::downgrade(&mutex));
                    mutex
                }
            }
        };
        mutex.lock_owned().await
    }
}

impl Inner {
    /// The agent new turns run with.
    pub(crate) fn agent(&self) -> Arc<Agent> {
        self.agent.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Aborts the process when `point` is the armed fault point (crash tests only).
    pub(crate) fn fault(&self, point: FaultPoint) {
        crate::fault::check(*lock(&self.fault), point);
    }

    /// The clock schedules and reminders read.
    pub(crate) fn clock(&self) -> Arc<dyn crate::schedule::Clock> {
        self.clock.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The live session of `session_id`, when one is open.
    pub(crate) fn live(&self, session_id: &str) -> Option<Arc<Live>> {
        lock(&self.live).get(session_id).and_then(Weak::upgrade)
    }

    /// The session's metadata as stored (`None`: no such session).
    pub(crate) async fn load_meta(
        &self,
        session_id: &str,
    ) -> Result<Option<SessionMeta>, ManagerError> {
        self.store
            .load_session(session_id)
            .await
            .map_err(|err| store_error(&format!("cannot read session {session_id}"), err))
    }

    /// The host workspace of the session `meta` describes, or `Refused` when it lives under a
    /// workspace root this server does not see.
    pub(crate) fn workspace_of(&self, meta: &SessionMeta) -> Result<PathBuf, ManagerError> {
        let root = self
            .workspace_root
            .read()
            .unwrap_or_else(|poison| poison.into_inner())
            .clone();
        crate::workspace_root::session_workspace(&self.state, root.as_deref(), meta)
    }
}
