//! The [`SessionManager`]: every surface funnels into it. One tokio actor per live session owns
//! the session's turn, its coalesce queue and its execution lock, so admission is sequential code
//! and a session never runs two turns at once. Idle sessions have no task.
//!
//! The manager opens and shuts down the engine, holds the settings a server changes while it
//! runs, and hands out one handle per concern: [`Sessions`], [`Turns`], [`Events`],
//! [`Approvals`], [`Tools`], [`Reminders`], [`Peers`], [`Evals`], [`Retention`] and
//! [`Channels`]. Each handle is cheap to clone and can be given alone to the code that needs
//! only that concern.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, SecondsFormat, Utc};
use folio_agent::Agent;
use folio_project::ScheduleSummary;
use folio_protocol::{CreateSession, SessionMode, SessionStatus};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::approvals::Approvals;
use crate::channels::Channels;
use crate::clock::Clock;
use crate::command::Command;
use crate::direct::Tools;
use crate::engine::Engine;
use crate::error::{ManagerError, OpenError, store_error};
use crate::eval_case::Evals;
use crate::events::Events;
use crate::fault::FaultPoint;
use crate::logs::LogBuffer;
use crate::peer::Peers;
use crate::reminders::Reminders;
use crate::retention::Retention;
use crate::schedule::{Launcher, SCHEDULE_CHANNEL, schedule_principal};
use crate::sessions::Sessions;
use crate::state::{StateRoot, lock_state_root};
use crate::sync::lock;
use crate::turns::Turns;
use crate::workspace_root::WorkspaceRoot;

/// Sessions of one agent under one state root (or in a store several servers share).
#[derive(Clone)]
pub struct SessionManager {
    engine: Arc<Engine>,
    sessions: Sessions,
    turns: Turns,
    events: Events,
    approvals: Approvals,
    tools: Tools,
    reminders: Reminders,
    peers: Peers,
    evals: Evals,
    retention: Retention,
    channels: Channels,
}

impl SessionManager {
    /// Opens the sessions under `state` for `agent`, in the state root's own files (the disk
    /// store, [`folio_store_disk::DiskStore`]); turns that were running when the process died
    /// are recorded as failed (`server restarted`) before this returns, parked approvals stay
    /// parked. Needs a tokio runtime.
    pub async fn open(
        state: StateRoot,
        agent: Arc<Agent>,
        logs: LogBuffer,
    ) -> Result<Self, OpenError> {
        let store = folio_store_disk::DiskStore::open(state.clone())?;
        Self::start(
            state,
            agent,
            logs,
            Arc::new(store),
            None,
            crate::DEFAULT_LEASE_TTL,
        )
        .await
    }

    /// Opens `agent`'s sessions in a session `store` that other servers share (`folio serve
    /// --store`): sessions, event logs, idempotency records and schedule claims live there;
    /// `state` keeps what stays on this server (the operator's MCP login, eval runs), locked
    /// for this process. A turn runs under a lease living `lease_ttl` unless renewed; a dead
    /// server's turns are taken over after it (see the `cluster` module). Needs a tokio runtime.
    pub async fn open_on_store(
        state: StateRoot,
        agent: Arc<Agent>,
        logs: LogBuffer,
        store: Arc<dyn folio_store::SessionStore>,
        lease_ttl: Duration,
    ) -> Result<Self, OpenError> {
        let state_lock = lock_state_root(&state)?;
        Self::start(state, agent, logs, store, Some(state_lock), lease_ttl).await
    }

    /// Opens the manager on `store`, takes over the turns dead owners left (before it answers
    /// anything), and starts the tasks that follow signals and take over expired leases.
    async fn start(
        state: StateRoot,
        agent: Arc<Agent>,
        logs: LogBuffer,
        store: Arc<dyn folio_store::SessionStore>,
        state_lock: Option<std::fs::File>,
        lease_ttl: Duration,
    ) -> Result<Self, OpenError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(OpenError::Unusable(
                "a SessionManager is opened inside a tokio runtime: open it from async code".into(),
            ));
        }
        let engine = Arc::new(Engine::new(
            state, agent, logs, store, state_lock, lease_ttl,
        ));
        crate::cluster::start(&engine).await;
        let manager = SessionManager {
            sessions: Sessions {
                engine: engine.clone(),
            },
            turns: Turns {
                engine: engine.clone(),
            },
            events: Events {
                engine: engine.clone(),
            },
            approvals: Approvals {
                engine: engine.clone(),
            },
            tools: Tools {
                engine: engine.clone(),
            },
            reminders: Reminders {
                engine: engine.clone(),
            },
            peers: Peers {
                engine: engine.clone(),
            },
            evals: Evals {
                engine: engine.clone(),
            },
            retention: Retention {
                engine: engine.clone(),
            },
            channels: Channels {
                engine: engine.clone(),
            },
            engine,
        };
        manager.retry_failed_connections();
        Ok(manager)
    }

    /// Creating, reading, forking and deleting sessions.
    pub fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    /// Messages to existing sessions, and stopping their turns.
    pub fn turns(&self) -> &Turns {
        &self.turns
    }

    /// Sessions' stored events and live streams.
    pub fn events(&self) -> &Events {
        &self.events
    }

    /// Decisions on what turns wait for: approvals, elicitations, MCP authorizations.
    pub fn approvals(&self) -> &Approvals {
        &self.approvals
    }

    /// Direct tool calls, outside a turn.
    pub fn tools(&self) -> &Tools {
        &self.tools
    }

    /// Reminders: set, list, cancel, and their delivery loop.
    pub fn reminders(&self) -> &Reminders {
        &self.reminders
    }

    /// `ask`: one message to this agent, waiting for the reply (MCP, peer agents).
    pub fn peers(&self) -> &Peers {
        &self.peers
    }

    /// Sessions saved as eval cases.
    pub fn evals(&self) -> &Evals {
        &self.evals
    }

    /// Deleting sessions idle past the retention period.
    pub fn retention(&self) -> &Retention {
        &self.retention
    }

    /// What channels keep and record beside the sessions.
    pub fn channels(&self) -> &Channels {
        &self.channels
    }

    /// The host API: what a session's tools and hooks may do through their token.
    pub fn host(&self) -> crate::host::Host {
        crate::host::Host {
            engine: self.engine.clone(),
        }
    }

    /// The key-value entries of the store the sessions are in, for front ends that keep their
    /// own records beside the sessions (the Agent Protocol's threads and runs).
    pub fn storage(&self) -> Arc<dyn folio_store::StorageStore> {
        self.engine.store.storage()
    }

    /// What the agent keeps in the store the sessions are in (artifacts, MCP credentials), for
    /// an agent reloaded by `folio dev`.
    pub fn shared_backends(&self) -> folio_agent::SharedBackends {
        crate::shared_backends(&self.engine.store)
    }

    /// The agent new turns run with.
    pub fn agent(&self) -> Arc<Agent> {
        self.engine.agent()
    }

    /// Swaps the agent definition (`folio dev`); turns in flight finish on the old one.
    pub fn set_agent(&self, agent: Arc<Agent>) {
        self.engine.agent.set(agent);
        self.retry_failed_connections();
    }

    /// Logs the agent's MCP connections that could not start and retries them in the
    /// background (1 s, doubling up to 60 s, until each starts or the manager shuts down); the
    /// tools of one that starts are offered from the next turn. Needs a tokio runtime.
    fn retry_failed_connections(&self) {
        let agent = self.agent();
        if agent.failed_connections.is_empty() {
            return;
        }
        for err in agent.failed_connections.values() {
            self.engine
                .logs
                .warn(format!("{err}; retrying it in the background"));
        }
        if tokio::runtime::Handle::try_current().is_err() {
            self.engine.logs.warn(
                "MCP connections are not retried: the SessionManager was opened outside a tokio runtime"
                    .into(),
            );
            return;
        }
        if self.engine.agent.reconnecting.swap(true, Ordering::SeqCst) {
            return;
        }
        let engine = self.engine.clone();
        self.engine.life.tasks.spawn(async move {
            reconnect(&engine).await;
            engine.agent.reconnecting.store(false, Ordering::SeqCst);
        });
    }

    /// The server log buffer of this agent.
    pub fn logs(&self) -> &LogBuffer {
        &self.engine.logs
    }

    /// Sets each principal's own quotas (from the tokens file), over `[limits]`.
    pub fn set_principal_limits(
        &self,
        own: std::collections::BTreeMap<String, folio_project::PrincipalLimits>,
    ) {
        self.engine.quotas.set_own(own);
    }

    /// `principal`'s limits and what it uses of them now (`GET /v1/limits`).
    pub async fn limits(
        &self,
        principal: &str,
    ) -> Result<folio_protocol::LimitsResponse, ManagerError> {
        let (limits, usage) = self.engine.quotas.report(&self.engine, principal).await?;
        Ok(folio_protocol::LimitsResponse {
            ok: folio_protocol::OkTrue,
            principal: principal.to_string(),
            limits,
            usage,
        })
    }

    /// Sets how often an idle stream sends its keep-alive empty line (default 15 s).
    pub fn set_keepalive(&self, interval: Duration) {
        self.engine.settings.set_keepalive(interval);
    }

    /// Arms a crash-test fault point: the process aborts when it gets there (`folio serve`
    /// arms it from `FOLIO_FAULT`; never armed otherwise).
    pub fn set_fault(&self, point: Option<FaultPoint>) {
        self.engine.settings.set_fault(point);
    }

    /// Whether the crash-test fault `point` is armed (channels withhold work at theirs).
    pub fn fault_armed(&self, point: FaultPoint) -> bool {
        self.engine.settings.fault() == Some(point)
    }

    /// Aborts the process when the crash-test fault `point` is armed (code outside this crate
    /// marks its own points with it).
    pub fn fault(&self, point: FaultPoint) {
        self.engine.fault(point);
    }

    /// Sets the clock schedules and reminders read (tests move a [`ManualClock`]).
    ///
    /// [`ManualClock`]: crate::schedule::ManualClock
    pub fn set_clock(&self, clock: Arc<dyn Clock>) {
        self.engine.timers.set_clock(clock);
    }

    /// The clock schedules and reminders read.
    pub fn clock(&self) -> Arc<dyn Clock> {
        self.engine.clock()
    }

    /// Fires when the manager shuts down.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.engine.life.shutdown.clone()
    }

    /// The state root.
    pub fn state(&self) -> &StateRoot {
        &self.engine.state
    }

    /// Keeps new sessions' host workspaces under `root` (`folio serve --workspace-root`) instead
    /// of the state root; sessions made under another root are refused their host-default
    /// turns (see [`WorkspaceRoot`]).
    pub fn set_workspace_root(&self, root: WorkspaceRoot) {
        self.engine.settings.set_workspace_root(root);
    }

    /// The workspace root new sessions' workspaces go under, when the server has one.
    pub fn workspace_root(&self) -> Option<Arc<WorkspaceRoot>> {
        self.engine.settings.workspace_root()
    }

    /// Notes that the agent's sessions are recorded as replay fixtures in `dir` (`folio serve
    /// --record-dir`, see [`crate::session_fixture`]), so a case saved from a session replays its
    /// recording ([`crate::Evals::save_case`]).
    pub fn set_record_dir(&self, dir: PathBuf) {
        self.engine.settings.set_record_dir(dir);
    }

    /// Graceful shutdown: running turns are recorded as interrupted (parked approvals stay
    /// parked), logs are synced, streams end.
    pub async fn shutdown(&self) {
        self.engine.life.closing.store(true, Ordering::SeqCst);
        for live in self.engine.live.all() {
            let sender = lock(&live.mailbox).clone();
            if let Some(sender) = sender {
                let (reply, done) = oneshot::channel();
                if sender
                    .send(Command::Close {
                        delete: false,
                        reply,
                    })
                    .is_ok()
                {
                    let _ = done.await;
                }
            }
        }
        // Streams end after they forwarded what the shutdown recorded.
        self.engine.life.shutdown.cancel();
        self.engine.life.tasks.close();
        // Another process (or a restarted manager) may now own the state root.
        self.engine.store.close().await;
        lock(&self.engine.life.state_lock).take();
    }
}

/// The manager is the launcher of `serve`'s scheduler: a slot's session is a task session of
/// principal `schedule:<name>`.
#[async_trait]
impl Launcher for SessionManager {
    async fn start(
        &self,
        schedule: &ScheduleSummary,
        slot: DateTime<Utc>,
    ) -> Result<String, ManagerError> {
        let request = CreateSession {
            title: Some(format!(
                "{} {}",
                schedule.name,
                slot.to_rfc3339_opts(SecondsFormat::Secs, true)
            )),
            mode: Some(SessionMode::Task),
            ..CreateSession::message(schedule.prompt.clone())
        };
        let accepted = self
            .sessions
            .create(
                &schedule_principal(&schedule.name),
                SCHEDULE_CHANNEL,
                request,
            )
            .await?;
        Ok(accepted.session_id)
    }

    async fn running(&self, name: &str, session_id: &str) -> bool {
        match self
            .engine
            .owned_meta(&schedule_principal(name), session_id)
            .await
        {
            Ok(meta) => {
                crate::queries::current_meta(&self.engine, meta)
                    .await
                    .status
                    == SessionStatus::Running
            }
            Err(_) => false,
        }
    }

    async fn claim(&self, name: &str, slot: DateTime<Utc>) -> Result<bool, ManagerError> {
        self.engine
            .store
            .claim_slot(name, slot, &self.engine.lease.server)
            .await
            .map_err(|err| store_error("cannot claim the slot", err))
    }
}

/// First wait before retrying the MCP connections that could not start.
const FIRST_RECONNECT: Duration = Duration::from_secs(1);
/// The longest wait between two retries (the wait doubles per failed retry).
const MAX_RECONNECT: Duration = Duration::from_secs(60);

/// Retries the agent's failed MCP connections with exponential backoff until none is left, the
/// manager shuts down, or (after a `folio dev` reload) the new agent has none.
async fn reconnect(engine: &Engine) {
    let mut wait = FIRST_RECONNECT;
    loop {
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = engine.life.shutdown.cancelled() => return,
        }
        let agent = engine.agent();
        if agent.failed_connections.is_empty() {
            return;
        }
        wait = (wait * 2).min(MAX_RECONNECT);
        let next = tokio::select! {
            next = agent.reconnect() => next,
            () = engine.life.shutdown.cancelled() => return,
        };
        for name in agent.failed_connections.keys() {
            match next.failed_connections.get(name) {
                None => engine.logs.info(format!(
                    "MCP server \"{name}\" started after a retry; its tools are offered from the next turn"
                )),
                Some(err) => engine.logs.warn(format!(
                    "{err}; retrying in {} s",
                    wait.as_secs()
                )),
            }
        }
        // A reload (`folio dev`) that swapped the agent meanwhile wins.
        engine.agent.replace(&agent, next);
    }
}
