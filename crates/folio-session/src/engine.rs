//! The [`Engine`]: what a [`SessionManager`](crate::SessionManager), its handles, actors, turns
//! and streams share, grouped by concern. Its operations on live sessions (opening one, taking
//! its lease, sending its actor a command) are in the `dispatch` module.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use folio_agent::Agent;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::authorize::Relays;
use crate::clock::Clock;
use crate::error::{ManagerError, store_error};
use crate::fault::FaultPoint;
use crate::live::Live;
use crate::logs::LogBuffer;
use crate::state::{SessionMeta, StateRoot};
use crate::sync::{KeyLocks, lock};
use crate::turn_slots::{TurnSlots, TurnTicket};
use crate::workspace_root::WorkspaceRoot;

/// The state of one agent's sessions, shared by the manager's handles, its actors and its
/// streams.
pub(crate) struct Engine {
    /// Where sessions, their logs, create keys, reminders, slot claims and deliveries are kept:
    /// the state root's files ([`folio_store_disk::DiskStore`]) or a store several servers
    /// share. The engine speaks only to this trait.
    pub(crate) store: Arc<dyn folio_store::SessionStore>,
    /// What stays on this server's disk whatever the store: the direct-call workspace, session
    /// workspaces (unless a workspace root is set), the operator's MCP login, eval runs.
    pub(crate) state: StateRoot,
    /// The agent new turns run with.
    pub(crate) agent: AgentSlot,
    /// The sessions open on this server.
    pub(crate) live: LiveSessions,
    /// The cap on turns running at once and the turns admitted (`[concurrency]`).
    pub(crate) turns: TurnSlots,
    /// Shutdown and the background tasks it waits for.
    pub(crate) life: Lifecycle,
    /// This server as a lease holder among the servers sharing the store.
    pub(crate) lease: LeaseHolder,
    /// MCP authorization redirects this server passed on to the server whose turn waits for
    /// them (see the `approvals` module).
    pub(crate) relays: Relays,
    /// Creates under way with an idempotency key, one at a time per key.
    pub(crate) creating: KeyLocks,
    /// The clock schedules, reminders and retention read, and the reminders' order.
    pub(crate) timers: Timers,
    /// What the server sets after opening (streams' keep-alive, crash-test faults, the
    /// workspace root).
    pub(crate) settings: Settings,
    /// The server log of this agent.
    pub(crate) logs: LogBuffer,
    /// The host API's live tokens and call budgets.
    pub(crate) host: crate::host_grants::HostGrants,
    /// Per-principal quotas and rate limits.
    pub(crate) quotas: crate::quotas::Quotas,
}

/// The agent new turns run with, swapped by `folio dev`.
pub(crate) struct AgentSlot {
    current: RwLock<Arc<Agent>>,
    /// Whether a task retries the agent's failed MCP connections.
    pub(crate) reconnecting: AtomicBool,
}

impl AgentSlot {
    pub(crate) fn new(agent: Arc<Agent>) -> Self {
        AgentSlot {
            current: RwLock::new(agent),
            reconnecting: AtomicBool::new(false),
        }
    }

    /// The agent new turns run with.
    pub(crate) fn get(&self) -> Arc<Agent> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Replaces the agent (turns in flight finish on the old one).
    pub(crate) fn set(&self, agent: Arc<Agent>) {
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = agent;
    }

    /// Replaces `was` by `next`, unless another agent replaced `was` meanwhile (a reload
    /// wins over a reconnect).
    pub(crate) fn replace(&self, was: &Arc<Agent>, next: Agent) {
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        if Arc::ptr_eq(&current, was) {
            *current = Arc::new(next);
        }
    }
}

/// The sessions open on this server, by id (weak: a session nobody uses closes).
#[derive(Default)]
pub(crate) struct LiveSessions(Mutex<HashMap<String, Weak<Live>>>);

impl LiveSessions {
    /// The live session of `session_id`, when one is open.
    pub(crate) fn get(&self, session_id: &str) -> Option<Arc<Live>> {
        lock(&self.0).get(session_id).and_then(Weak::upgrade)
    }

    /// Every open session.
    pub(crate) fn all(&self) -> Vec<Arc<Live>> {
        lock(&self.0).values().filter_map(Weak::upgrade).collect()
    }

    /// Records `live` as the open session of its id, unless one is open already: answers the
    /// one that stays.
    pub(crate) fn keep(&self, live: Arc<Live>) -> Arc<Live> {
        let mut map = lock(&self.0);
        if let Some(open) = map.get(&live.id).and_then(Weak::upgrade) {
            return open;
        }
        // Entries of sessions that closed are dropped now and then, so the map stays bounded
        // by active work, not by history.
        if map.len() >= 64 && map.len().is_power_of_two() {
            map.retain(|_, weak| weak.strong_count() > 0);
        }
        map.insert(live.id.clone(), Arc::downgrade(&live));
        live
    }

    /// Forgets the open session of `session_id` (deleted).
    pub(crate) fn remove(&self, session_id: &str) {
        lock(&self.0).remove(session_id);
    }

    /// Forgets `live` when it is still the open session of its id (its actor lost the lease).
    pub(crate) fn remove_if(&self, live: &Arc<Live>) {
        let mut map = lock(&self.0);
        if map
            .get(&live.id)
            .and_then(Weak::upgrade)
            .is_some_and(|open| Arc::ptr_eq(&open, live))
        {
            map.remove(&live.id);
        }
    }
}

/// Shutdown and the background tasks it waits for.
pub(crate) struct Lifecycle {
    /// Fires when shutdown is done with the sessions: streams end, loops return.
    pub(crate) shutdown: CancellationToken,
    /// Set when shutdown starts: no new sessions or messages.
    pub(crate) closing: AtomicBool,
    /// Actors, followers, streams and loops.
    pub(crate) tasks: TaskTracker,
    /// The exclusive lock on the state root, held until shutdown, when the session store
    /// lives elsewhere (with the disk store, the store holds it).
    pub(crate) state_lock: Mutex<Option<std::fs::File>>,
}

impl Lifecycle {
    pub(crate) fn new(state_lock: Option<std::fs::File>) -> Self {
        Lifecycle {
            shutdown: CancellationToken::new(),
            closing: AtomicBool::new(false),
            tasks: TaskTracker::new(),
            state_lock: Mutex::new(state_lock),
        }
    }

    /// Refuses new work once shutdown started.
    pub(crate) fn refuse_when_closing(&self) -> Result<(), ManagerError> {
        if self.closing.load(Ordering::SeqCst) {
            return Err(ManagerError::internal("the server is shutting down"));
        }
        Ok(())
    }
}

/// This server as a lease holder among the servers sharing the store.
pub(crate) struct LeaseHolder {
    /// This server's id as a lease owner and claimer: `srv_<ULID>`, new per process.
    pub(crate) server: String,
    /// How long a lease this server takes lives unless renewed.
    pub(crate) ttl: Duration,
    /// Lease acquisitions under way, one at a time per session.
    pub(crate) owning: KeyLocks,
}

impl LeaseHolder {
    /// A new server id, holding leases for `ttl` (at least 300 ms).
    pub(crate) fn new(ttl: Duration) -> Self {
        LeaseHolder {
            server: format!("srv_{}", ulid::Ulid::generate()),
            ttl: ttl.max(Duration::from_millis(300)),
            owning: KeyLocks::default(),
        }
    }
}

/// The clock schedules, reminders and retention read, and the reminders' order.
pub(crate) struct Timers {
    /// The system clock unless a test or `FOLIO_TEST_CLOCK_START` set another.
    clock: RwLock<Arc<dyn Clock>>,
    /// Orders reminder changes and deliveries.
    pub(crate) reminders: tokio::sync::Mutex<()>,
    /// Wakes the reminder loop when a reminder is set or cancelled.
    pub(crate) reminders_changed: tokio::sync::Notify,
}

impl Timers {
    pub(crate) fn new() -> Self {
        Timers {
            clock: RwLock::new(Arc::new(crate::clock::SystemClock::new())),
            reminders: tokio::sync::Mutex::new(()),
            reminders_changed: tokio::sync::Notify::new(),
        }
    }

    /// The clock schedules and reminders read.
    pub(crate) fn clock(&self) -> Arc<dyn Clock> {
        self.clock.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Replaces the clock.
    pub(crate) fn set_clock(&self, clock: Arc<dyn Clock>) {
        *self.clock.write().unwrap_or_else(|p| p.into_inner()) = clock;
    }
}

/// What the server sets after opening.
pub(crate) struct Settings {
    /// Keep-alive interval of streams, in milliseconds.
    keepalive_ms: AtomicU64,
    /// The armed fault point of a crash test (`FOLIO_FAULT`); `None` in normal use.
    fault: Mutex<Option<FaultPoint>>,
    /// Where new sessions' host workspaces go (`None`: under the state root).
    workspace_root: RwLock<Option<Arc<WorkspaceRoot>>>,
    /// Where the agent's sessions are recorded as replay fixtures (`None`: they are not).
    record_dir: RwLock<Option<PathBuf>>,
}

impl Settings {
    pub(crate) fn new() -> Self {
        Settings {
            keepalive_ms: AtomicU64::new(15_000),
            fault: Mutex::new(None),
            workspace_root: RwLock::new(None),
            record_dir: RwLock::new(None),
        }
    }

    /// How often an idle stream sends its keep-alive empty line.
    pub(crate) fn keepalive(&self) -> Duration {
        Duration::from_millis(self.keepalive_ms.load(Ordering::Relaxed))
    }

    pub(crate) fn set_keepalive(&self, interval: Duration) {
        self.keepalive_ms
            .store(interval.as_millis() as u64, Ordering::Relaxed);
    }

    /// The armed crash-test fault point.
    pub(crate) fn fault(&self) -> Option<FaultPoint> {
        *lock(&self.fault)
    }

    pub(crate) fn set_fault(&self, point: Option<FaultPoint>) {
        *lock(&self.fault) = point;
    }

    /// The workspace root new sessions' workspaces go under, when the server has one.
    pub(crate) fn workspace_root(&self) -> Option<Arc<WorkspaceRoot>> {
        self.workspace_root
            .read()
            .unwrap_or_else(|poison| poison.into_inner())
            .clone()
    }

    pub(crate) fn set_workspace_root(&self, root: WorkspaceRoot) {
        *self
            .workspace_root
            .write()
            .unwrap_or_else(|poison| poison.into_inner()) = Some(Arc::new(root));
    }

    /// Where the agent's sessions are recorded, when they are.
    pub(crate) fn record_dir(&self) -> Option<PathBuf> {
        self.record_dir
            .read()
            .unwrap_or_else(|poison| poison.into_inner())
            .clone()
    }

    pub(crate) fn set_record_dir(&self, dir: PathBuf) {
        *self
            .record_dir
            .write()
            .unwrap_or_else(|poison| poison.into_inner()) = Some(dir);
    }
}

impl Engine {
    /// An engine over `store`, with nothing open yet.
    pub(crate) fn new(
        state: StateRoot,
        agent: Arc<Agent>,
        logs: LogBuffer,
        store: Arc<dyn folio_store::SessionStore>,
        state_lock: Option<std::fs::File>,
        lease_ttl: Duration,
    ) -> Self {
        let turns = TurnSlots::new(&agent.definition.config.concurrency);
        Engine {
            store,
            state,
            agent: AgentSlot::new(agent),
            live: LiveSessions::default(),
            turns,
            life: Lifecycle::new(state_lock),
            lease: LeaseHolder::new(lease_ttl),
            relays: Relays::default(),
            creating: KeyLocks::default(),
            timers: Timers::new(),
            settings: Settings::new(),
            logs,
            host: crate::host_grants::HostGrants::default(),
            quotas: crate::quotas::Quotas::default(),
        }
    }

    /// A place for a caller's turn ([`TurnSlots::admit`]), a refusal counted in
    /// `folio.limits.refused` as `max_queued_turns`.
    pub(crate) fn admit_turn(&self) -> Result<TurnTicket, ManagerError> {
        self.turns.admit().inspect_err(|_| {
            folio_telemetry::metrics::limit_refused(
                &self.agent().definition.name,
                "max_queued_turns",
            );
        })
    }

    /// The agent new turns run with.
    pub(crate) fn agent(&self) -> Arc<Agent> {
        self.agent.get()
    }

    /// Aborts the process when `point` is the armed fault point (crash tests only).
    pub(crate) fn fault(&self, point: FaultPoint) {
        crate::fault::check(self.settings.fault(), point);
    }

    /// The clock schedules and reminders read.
    pub(crate) fn clock(&self) -> Arc<dyn Clock> {
        self.timers.clock()
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
        let root = self.settings.workspace_root();
        crate::workspace_root::session_workspace(&self.state, root.as_deref(), meta)
    }
}
