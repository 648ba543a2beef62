//! What a [`SessionManager`](crate::SessionManager), its actors, turns and streams share.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
use std::sync::{Arc, Mutex, RwLock, Weak};

use folio_agent::Agent;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::fault::FaultPoint;
use crate::live::{Live, lock};
use crate::logs::LogBuffer;
use crate::state::StateRoot;

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
    /// The exclusive lock on the state root, held until shutdown.
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

    /// The live session of `session_id`, when one is open.
    pub(crate) fn live(&self, session_id: &str) -> Option<Arc<Live>> {
        lock(&self.live).get(session_id).and_then(Weak::upgrade)
    }
}
