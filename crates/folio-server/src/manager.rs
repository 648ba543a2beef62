//! The [`SessionManager`]: every surface funnels into it. One tokio actor per live session owns
//! the session's turn, its coalesce queue and its execution lock, so admission is sequential code
//! and a session never runs two turns at once. Idle sessions have no task.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock, Weak};

use chrono::Utc;
use folio_agent::turn::pending_approvals;
use folio_agent::workspace::check_workspace_path;
use folio_agent::{Agent, TurnOutcome};
use folio_protocol::{
    ActionApprovalResolved, Admission, ApprovalDecision, Event, EventBody, SessionMode,
    SessionStarted, TurnFailed,
};
use serde::Serialize;
use serde_json::Value;
use subtle::ConstantTimeEq;
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::actor::{Actor, Command, Pending, direct_call, finish_session, open_turn};
use crate::event_log::LogError;
use crate::live::{Live, lock};
use crate::logs::LogBuffer;
use crate::state::{SessionMeta, SessionStatus, StateRoot, new_session_id};

/// The message of a turn that was running when the server died (a contract string).
pub const SERVER_RESTARTED: &str = "server restarted";

/// Why a session operation was refused; each maps to one HTTP status and error code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManagerError {
    /// The body or a parameter is invalid (`400 invalid_request`).
    #[error("{0}")]
    Invalid(String),
    /// No such session, tool or approval (`404 not_found`).
    #[error("{0}")]
    NotFound(String),
    /// The session belongs to another principal (`403 forbidden`).
    #[error("session {0} belongs to another principal")]
    Forbidden(String),
    /// An unscoped direct call of a built-in tool (`403 forbidden`; see `direct.rs`).
    #[error(
        "{0} is a built-in tool and runs only in a session: call POST /v1/session/<id>/tools/{0} on your own session (unscoped calls run authored tools only)"
    )]
    BuiltInUnscoped(String),
    /// The continuation token is not the current one (`409 stale_continuation_token`).
    #[error("the continuation token is stale: use the token returned by the last accepted message")]
    StaleToken,
    /// A follow-up to a task session (`409 session_not_followable`).
    #[error("session {0} is a task session and takes no follow-ups")]
    NotFollowable(String),
    /// A session-bound tool call while a turn runs (`409 session_busy`).
    #[error("session {0} is running a turn; try again when it is waiting")]
    Busy(String),
    /// A second decision on one approval (`409 approval_resolved`).
    #[error("approval {0} is already resolved")]
    ApprovalResolved(String),
    /// Anything else (`500 internal`).
    #[error("{0}")]
    Internal(String),
}

impl ManagerError {
    /// The wire error code.
    pub fn code(&self) -> &'static str {
        match self {
            ManagerError::Invalid(_) => "invalid_request",
            ManagerError::NotFound(_) => "not_found",
            ManagerError::Forbidden(_) | ManagerError::BuiltInUnscoped(_) => "forbidden",
            ManagerError::StaleToken => "stale_continuation_token",
            ManagerError::NotFollowable(_) => "session_not_followable",
            ManagerError::Busy(_) => "session_busy",
            ManagerError::ApprovalResolved(_) => "approval_resolved",
            ManagerError::Internal(_) => "internal",
        }
    }
}

impl From<LogError> for ManagerError {
    fn from(err: LogError) -> Self {
        ManagerError::Internal(err.to_string())
    }
}

pub(crate) fn io_error(what: &str, err: std::io::Error) -> ManagerError {
    ManagerError::Internal(format!("{what}: {err}"))
}

/// A new session's request.
#[derive(Debug, Clone)]
pub struct CreateSession {
    /// The first user message.
    pub message: String,
    /// A title for lists.
    pub title: Option<String>,
    /// Files written into the workspace before the turn (relative path → contents).
    pub workspace_files: BTreeMap<String, String>,
    /// `chat` (default) or `task`.
    pub mode: SessionMode,
    /// The creating channel (`http`, `mcp`, …).
    pub channel: String,
}

/// A follow-up's request.
#[derive(Debug, Clone)]
pub struct FollowUp {
    /// The current continuation token.
    pub continuation_token: String,
    /// The user message.
    pub message: String,
    /// Busy-session policy (default preempt).
    pub admission: Option<Admission>,
    /// Files written into the workspace before the turn.
    pub workspace_files: BTreeMap<String, String>,
}

/// An accepted message: the session and its (new) continuation token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// `ses_…`.
    pub session_id: String,
    /// `http:…`, rotated per accepted follow-up.
    pub continuation_token: String,
}

/// A session as lists and `GET /v1/session/:id` show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    /// `ses_…`.
    pub session_id: String,
    /// `chat` or `task`.
    pub mode: SessionMode,
    /// `running`, `waiting`, `completed` or `failed`.
    pub status: SessionStatus,
    /// The title (empty when none).
    pub title: String,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
    /// Turns started.
    pub turns: u32,
    /// Index of the last stored event.
    pub last_index: u64,
}

/// One page of sessions, newest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionPage {
    /// The sessions of this page.
    pub data: Vec<SessionSummary>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The result of a direct tool call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DirectResult {
    /// The tool's output, or its error text.
    pub result: Value,
    /// Whether the tool failed.
    pub is_error: bool,
}

/// A stream of a session's events: stored ones from a start index, then live ones.
pub struct EventStream {
    /// Events (and `None` for a keep-alive tick) in index order without gaps.
    pub rx: mpsc::Receiver<Option<Event>>,
}

/// Takes the exclusive lock of a state root (`<state-root>/.lock`): two processes serving or
/// running sessions on one state root would each record the other's running turns as
/// `server restarted`. The kernel releases the lock when the process dies.
fn lock_state_root(state: &StateRoot) -> Result<std::fs::File, String> {
    use std::os::fd::AsRawFd;
    let path = state.path().join(".lock");
    std::fs::create_dir_all(state.path()).map_err(|err| {
        format!(
            "cannot create the state root {}: {err}",
            state.path().display()
        )
    })?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|err| format!("cannot open {}: {err}", path.display()))?;
    // SAFETY: flock on a descriptor this function owns; it only sets an advisory lock.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(format!(
            "the state root {} is in use by another folio process: stop it, or pass --state-root with another directory",
            state.path().display()
        ));
    }
    Ok(file)
}

/// Sessions of one agent under one state root.
#[derive(Clone)]
pub struct SessionManager {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) state: StateRoot,
    pub(crate) agent: RwLock<Arc<Agent>>,
    pub(crate) live: std::sync::Mutex<HashMap<String, Weak<Live>>>,
    pub(crate) slots: Option<Arc<Semaphore>>,
    pub(crate) queued: std::sync::atomic::AtomicU32,
    pub(crate) shutdown: CancellationToken,
    /// Set when shutdown starts: no new sessions or messages.
    pub(crate) closing: std::sync::atomic::AtomicBool,
    pub(crate) tasks: TaskTracker,
    pub(crate) logs: LogBuffer,
    /// Keep-alive interval of streams, in milliseconds.
    pub(crate) keepalive_ms: std::sync::atomic::AtomicU64,
    /// The exclusive lock on the state root, held until shutdown.
    state_lock: std::sync::Mutex<Option<std::fs::File>>,
}

impl SessionManager {
    /// Opens the sessions under `state` for `agent`; turns that were running when the process
    /// died are recorded as failed (`server restarted`), parked approvals stay parked.
    pub fn open(state: StateRoot, agent: Arc<Agent>, logs: LogBuffer) -> Result<Self, String> {
        let cap = agent.definition.config.concurrency.max_running_turns;
        let state_lock = lock_state_root(&state)?;
        let manager = SessionManager {
            inner: Arc::new(Inner {
                state,
                agent: RwLock::new(agent),
                live: std::sync::Mutex::new(HashMap::new()),
                slots: cap.map(|n| Arc::new(Semaphore::new(n.max(1) as usize))),
                queued: std::sync::atomic::AtomicU32::new(0),
                shutdown: CancellationToken::new(),
                closing: std::sync::atomic::AtomicBool::new(false),
                tasks: TaskTracker::new(),
                logs,
                keepalive_ms: std::sync::atomic::AtomicU64::new(15_000),
                state_lock: std::sync::Mutex::new(Some(state_lock)),
            }),
        };
        manager.recover()?;
        Ok(manager)
    }

    /// The agent new turns run with.
    pub fn agent(&self) -> Arc<Agent> {
        self.inner
            .agent
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Swaps the agent definition (`folio dev`); turns in flight finish on the old one.
    pub fn set_agent(&self, agent: Arc<Agent>) {
        *self.inner.agent.write().unwrap_or_else(|p| p.into_inner()) = agent;
    }

    /// The server log buffer of this agent.
    pub fn logs(&self) -> &LogBuffer {
        &self.inner.logs
    }

    /// Sets how often an idle stream sends its keep-alive empty line (default 15 s).
    pub fn set_keepalive(&self, interval: std::time::Duration) {
        self.inner.keepalive_ms.store(
            interval.as_millis() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// Fires when the manager shuts down.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.inner.shutdown.clone()
    }

    /// The state root.
    pub fn state(&self) -> &StateRoot {
        &self.inner.state
    }

    fn recover(&self) -> Result<(), String> {
        let dir = self.inner.state.path().join("sessions");
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(err) => return Err(format!("cannot read {}: {err}", dir.display())),
        };
        for entry in entries.flatten() {
            let id = entry.file_name().to_string_lossy().to_string();
            if !valid_session_id(&id) {
                continue;
            }
            let Ok(Some(meta)) = SessionMeta::load(&self.inner.state, &id) else {
                continue;
            };
            if meta.status != SessionStatus::Running {
                continue;
            }
            if let Err(err) = self.recover_session(meta) {
                self.inner
                    .logs
                    .about(&id)
                    .error(format!("could not recover session {id}: {err}"));
            }
        }
        Ok(())
    }

    fn recover_session(&self, meta: SessionMeta) -> Result<(), ManagerError> {
        let (live, events) = Live::open(&self.inner.state, meta)?;
        live.bind_hooks(&self.agent().hooks);
        let Some(turn_id) = open_turn(&events) else {
            finish_session(&live, None, &self.inner.state)?;
            return Ok(());
        };
        if !pending_approvals(&events, &turn_id).is_empty() {
            self.inner.logs.about(&live.id).info(format!(
                "session {} stays parked on an approval after the restart",
                live.id
            ));
            return Ok(());
        }
        live.append(
            Some(&turn_id),
            EventBody::TurnFailed(TurnFailed {
                message: SERVER_RESTARTED.to_string(),
            }),
        )?;
        let outcome = TurnOutcome::Failed {
            message: SERVER_RESTARTED.to_string(),
        };
        finish_session(&live, Some(&outcome), &self.inner.state)?;
        self.inner.logs.about(&live.id).warn(format!(
            "session {}: turn {turn_id} was running when the server stopped; recorded as failed",
            live.id
        ));
        Ok(())
    }

    /// Creates a session for `principal` and starts its first turn; returns once accepted.
    pub async fn create(
        &self,
        principal: &str,
        request: CreateSession,
    ) -> Result<Accepted, ManagerError> {
        self.refuse_when_shutting_down()?;
        check_workspace_files(&request.workspace_files)?;
        let session_id = new_session_id();
        let token = new_token();
        let now = Utc::now();
        let meta = SessionMeta {
            session_id: session_id.clone(),
            mode: request.mode,
            status: SessionStatus::Running,
            channel: request.channel.clone(),
            principal: principal.to_string(),
            title: request.title.clone(),
            created_at: now,
            updated_at: now,
            token_hash: Some(hash_token(&token)),
            turns: 0,
            last_index: 0,
        };
        let state = &self.inner.state;
        let workspace = state.workspace_dir(&session_id);
        std::fs::create_dir_all(&workspace).map_err(|e| io_error("cannot create workspace", e))?;
        meta.save(state)
            .map_err(|e| io_error("cannot save session.json", e))?;
        let (live, _) = Live::open(state, meta)?;
        let live = Arc::new(live);
        live.bind_hooks(&self.agent().hooks);
        live.append(
            None,
            EventBody::SessionStarted(SessionStarted {
                mode: request.mode,
                channel: request.channel,
                title: request.title,
                principal: principal.to_string(),
            }),
        )?;
        remember(&mut lock(&self.inner.live), &session_id, &live);
        self.inner
            .logs
            .info(format!("session {session_id} created by {principal}"));
        self.command(&live, |reply| Command::Send {
            message: Pending {
                text: request.message,
                files: request.workspace_files,
            },
            admission: None,
            reply,
        })
        .await??;
        Ok(Accepted {
            session_id,
            continuation_token: token,
        })
    }

    /// Sends a follow-up through the HTTP channel: checks the token, rotates it, admits the
    /// message (preempt by default, or coalesce).
    pub async fn follow_up(
        &self,
        principal: &str,
        session_id: &str,
        request: FollowUp,
    ) -> Result<Accepted, ManagerError> {
        self.refuse_when_shutting_down()?;
        let live = self.owned(principal, session_id)?;
        let token = {
            let mut meta = lock(&live.meta);
            let current = meta.token_hash.as_deref().unwrap_or("");
            let presented = hash_token(&request.continuation_token);
            if !bool::from(current.as_bytes().ct_eq(presented.as_bytes())) {
                return Err(ManagerError::StaleToken);
            }
            if meta.mode == SessionMode::Task {
                return Err(ManagerError::NotFollowable(session_id.to_string()));
            }
            check_workspace_files(&request.workspace_files)?;
            let token = new_token();
            meta.token_hash = Some(hash_token(&token));
            meta.updated_at = Utc::now();
            meta.save(&self.inner.state)
                .map_err(|e| io_error("cannot save session.json", e))?;
            token
        };
        self.command(&live, |reply| Command::Send {
            message: Pending {
                text: request.message,
                files: request.workspace_files,
            },
            admission: request.admission,
            reply,
        })
        .await??;
        Ok(Accepted {
            session_id: session_id.to_string(),
            continuation_token: token,
        })
    }

    /// Sends a message to a session without a token (in-process channels and tests).
    pub async fn send(
        &self,
        principal: &str,
        session_id: &str,
        message: &str,
        admission: Option<Admission>,
    ) -> Result<(), ManagerError> {
        let live = self.owned(principal, session_id)?;
        if lock(&live.meta).mode == SessionMode::Task {
            return Err(ManagerError::NotFollowable(session_id.to_string()));
        }
        self.command(&live, |reply| Command::Send {
            message: Pending {
                text: message.to_string(),
                files: BTreeMap::new(),
            },
            admission,
            reply,
        })
        .await?
    }

    /// Cancels the running turn (`turn interrupted`) and clears queued messages; idle → no-op.
    pub async fn stop(&self, principal: &str, session_id: &str) -> Result<(), ManagerError> {
        let live = self.owned(principal, session_id)?;
        self.command(&live, |reply| Command::Stop { reply }).await
    }

    /// Stops the session's turn and removes the session from disk.
    pub async fn delete(&self, principal: &str, session_id: &str) -> Result<(), ManagerError> {
        let live = self.owned(principal, session_id)?;
        self.command(&live, |reply| Command::Close {
            delete: true,
            reply,
        })
        .await?;
        lock(&self.inner.live).remove(session_id);
        self.inner
            .logs
            .info(format!("session {session_id} deleted by {principal}"));
        Ok(())
    }

    /// The session's summary.
    pub fn get(&self, principal: &str, session_id: &str) -> Result<SessionSummary, ManagerError> {
        let meta = self.owned_meta(principal, session_id)?;
        let events = crate::event_log::read_events(&self.inner.state.trace_path(session_id))?;
        let mut summary = summary(&meta);
        summary.last_index = events.last().map_or(0, |e| e.index);
        Ok(summary)
    }

    /// The caller's sessions, newest first; `q` filters title or id (case-insensitive).
    pub fn list(
        &self,
        principal: &str,
        limit: usize,
        cursor: Option<&str>,
        q: Option<&str>,
    ) -> Result<SessionPage, ManagerError> {
        self.list_owned_by(Some(principal), limit, cursor, q)
    }

    /// Every principal's sessions, newest first: the Runs list of `folio dev` on loopback.
    /// Reading or continuing one of them still needs its owner.
    pub fn list_every_principal(
        &self,
        limit: usize,
        cursor: Option<&str>,
        q: Option<&str>,
    ) -> Result<SessionPage, ManagerError> {
        self.list_owned_by(None, limit, cursor, q)
    }

    fn list_owned_by(
        &self,
        principal: Option<&str>,
        limit: usize,
        cursor: Option<&str>,
        q: Option<&str>,
    ) -> Result<SessionPage, ManagerError> {
        let dir = self.inner.state.path().join("sessions");
        let mut ids: Vec<String> = match std::fs::read_dir(&dir) {
            Ok(entries) => entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|id| valid_session_id(id))
                .collect(),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(err) => return Err(io_error("cannot list sessions", err)),
        };
        // ULIDs sort by creation time.
        ids.sort_unstable_by(|a, b| b.cmp(a));
        let q = q.map(str::to_lowercase).filter(|q| !q.is_empty());
        let limit = limit.clamp(1, 200);
        let mut data = Vec::new();
        let mut next_cursor = None;
        for id in ids {
            if cursor.is_some_and(|cursor| id.as_str() >= cursor) {
                continue;
            }
            let Ok(Some(meta)) = SessionMeta::load(&self.inner.state, &id) else {
                continue;
            };
            if principal.is_some_and(|principal| meta.principal != principal) {
                continue;
            }
            if let Some(q) = &q {
                let title = meta.title.as_deref().unwrap_or("").to_lowercase();
                if !title.contains(q) && !id.to_lowercase().contains(q) {
                    continue;
                }
            }
            if data.len() == limit {
                next_cursor = data.last().map(|s: &SessionSummary| s.session_id.clone());
                break;
            }
            data.push(summary(&meta));
        }
        Ok(SessionPage { data, next_cursor })
    }

    /// Every stored event of the session.
    pub fn events(&self, principal: &str, session_id: &str) -> Result<Vec<Event>, ManagerError> {
        self.owned_meta(principal, session_id)?;
        Ok(crate::event_log::read_events(
            &self.inner.state.trace_path(session_id),
        )?)
    }

    /// Streams events with `index >= start_index`: subscribes to live appends first, then
    /// replays stored events, then forwards live ones skipping any index already sent.
    pub fn stream(
        &self,
        principal: &str,
        session_id: &str,
        start_index: u64,
    ) -> Result<EventStream, ManagerError> {
        let live = self.owned(principal, session_id)?;
        let mut rx = live.tx.subscribe();
        let stored = live.events()?;
        let (tx, out) = mpsc::channel(256);
        let shutdown = self.inner.shutdown.clone();
        let keepalive = std::time::Duration::from_millis(
            self.inner
                .keepalive_ms
                .load(std::sync::atomic::Ordering::Relaxed)
                .max(1),
        );
        let task = live.clone();
        self.inner.tasks.spawn(async move {
            let live = task;
            let task_mode = lock(&live.meta).mode == SessionMode::Task;
            let mut next = start_index;
            let send_from = |events: Vec<Event>, next: &mut u64| {
                let mut batch = Vec::new();
                for event in events {
                    if event.index >= *next {
                        *next = event.index + 1;
                        let last = task_mode && is_final(&event);
                        batch.push(event);
                        if last {
                            return (batch, true);
                        }
                    }
                }
                (batch, false)
            };
            let (batch, done) = send_from(stored, &mut next);
            for event in batch {
                if tx.send(Some(event)).await.is_err() {
                    return;
                }
            }
            let ended = task_mode
                && matches!(
                    lock(&live.meta).status,
                    SessionStatus::Completed | SessionStatus::Failed
                );
            if done || ended {
                return;
            }
            let mut tick = tokio::time::interval(keepalive);
            tick.tick().await;
            loop {
                let events = tokio::select! {
                    biased;
                    received = rx.recv() => match received {
                        Ok(event) if event.index < next => continue,
                        Ok(event) if event.index == next => vec![event],
                        // A gap or a lag: catch up from disk.
                        Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                            match live.events() {
                                Ok(events) => events,
                                Err(_) => return,
                            }
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                    },
                    _ = tick.tick() => {
                        if tx.send(None).await.is_err() {
                            return;
                        }
                        continue;
                    }
                    () = live.closed.cancelled() => return,
                    () = shutdown.cancelled() => return,
                    () = tx.closed() => return,
                };
                let (batch, done) = send_from(events, &mut next);
                for event in batch {
                    if tx.send(Some(event)).await.is_err() {
                        return;
                    }
                }
                if done {
                    return;
                }
            }
        });
        Ok(EventStream { rx: out })
    }

    /// Resolves a parked approval as `by`; a second decision is refused.
    pub async fn resolve_approval(
        &self,
        principal: &str,
        session_id: &str,
        call_id: &str,
        decision: ApprovalDecision,
        reason: Option<String>,
    ) -> Result<(), ManagerError> {
        let live = self.owned(principal, session_id)?;
        let resolved = ActionApprovalResolved {
            call_id: call_id.to_string(),
            decision,
            reason,
            by: principal.to_string(),
        };
        self.command(&live, |reply| Command::Resolve { resolved, reply })
            .await?
    }

    /// A direct call of `name`, bound to a session (sharing its execution lock) or unscoped.
    /// Skips the approval gate; still validates the input.
    pub async fn call_tool(
        &self,
        principal: &str,
        session_id: Option<&str>,
        name: &str,
        input: Value,
    ) -> Result<DirectResult, ManagerError> {
        match session_id {
            Some(session_id) => {
                let live = self.owned(principal, session_id)?;
                let name = name.to_string();
                self.command(&live, |reply| Command::Tool { name, input, reply })
                    .await?
            }
            None => {
                crate::direct::check_unscoped(name)?;
                let workspace = self.inner.state.path().join("direct").join("workspace");
                std::fs::create_dir_all(&workspace)
                    .map_err(|e| io_error("cannot create the direct-call workspace", e))?;
                direct_call(
                    &self.agent(),
                    name,
                    input,
                    &workspace,
                    "direct",
                    self.inner.shutdown.child_token(),
                )
                .await
            }
        }
    }

    /// Graceful shutdown: running turns are recorded as interrupted (parked approvals stay
    /// parked), logs are synced, streams end.
    pub async fn shutdown(&self) {
        self.inner
            .closing
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let lives: Vec<Arc<Live>> = lock(&self.inner.live)
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        for live in lives {
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
        self.inner.shutdown.cancel();
        self.inner.tasks.close();
        // Another process (or a restarted manager) may now own the state root.
        lock(&self.inner.state_lock).take();
    }

    fn refuse_when_shutting_down(&self) -> Result<(), ManagerError> {
        if self.inner.closing.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(ManagerError::Internal("the server is shutting down".into()));
        }
        Ok(())
    }

    fn owned_meta(&self, principal: &str, session_id: &str) -> Result<SessionMeta, ManagerError> {
        let not_found = || ManagerError::NotFound(format!("no session {session_id}"));
        if !valid_session_id(session_id) {
            return Err(not_found());
        }
        let meta = SessionMeta::load(&self.inner.state, session_id)
            .map_err(|e| io_error("cannot read session.json", e))?
            .ok_or_else(not_found)?;
        if meta.principal != principal {
            return Err(ManagerError::Forbidden(session_id.to_string()));
        }
        Ok(meta)
    }

    /// The live session of `session_id`, opening it when idle, after the ownership check.
    fn owned(&self, principal: &str, session_id: &str) -> Result<Arc<Live>, ManagerError> {
        let meta = self.owned_meta(principal, session_id)?;
        let mut map = lock(&self.inner.live);
        if let Some(live) = map.get(session_id).and_then(Weak::upgrade) {
            return Ok(live);
        }
        let (live, _) = Live::open(&self.inner.state, meta)?;
        let live = Arc::new(live);
        live.bind_hooks(&self.agent().hooks);
        remember(&mut map, session_id, &live);
        Ok(live)
    }

    /// Sends a command to the session's actor, spawning the actor when the session is idle.
    async fn command<T>(
        &self,
        live: &Arc<Live>,
        make: impl FnOnce(oneshot::Sender<T>) -> Command,
    ) -> Result<T, ManagerError> {
        let (reply, answer) = oneshot::channel();
        {
            let mut mailbox = lock(&live.mailbox);
            let sender = match mailbox.as_ref() {
                Some(sender) if !sender.is_closed() => sender.clone(),
                _ => {
                    let (sender, rx) = mpsc::unbounded_channel();
                    *mailbox = Some(sender.clone());
                    let actor = Actor::new(self.inner.clone(), live.clone(), rx);
                    self.inner.tasks.spawn(actor.run());
                    sender
                }
            };
            sender
                .send(make(reply))
                .map_err(|_| ManagerError::Internal("the session's actor stopped".into()))?;
        }
        answer
            .await
            .map_err(|_| ManagerError::Internal("the session's actor stopped".into()))
    }
}

/// A task session's last event.
fn is_final(event: &Event) -> bool {
    matches!(
        event.body,
        EventBody::SessionCompleted(_) | EventBody::SessionFailed(_)
    )
}

fn summary(meta: &SessionMeta) -> SessionSummary {
    SessionSummary {
        session_id: meta.session_id.clone(),
        mode: meta.mode,
        status: meta.status,
        title: meta.title.clone().unwrap_or_default(),
        created_at: folio_protocol::format_at(&meta.created_at),
        updated_at: folio_protocol::format_at(&meta.updated_at),
        turns: meta.turns,
        last_index: meta.last_index,
    }
}

/// Records a live session, dropping entries of sessions that went idle now and then (so the
/// map stays bounded by active work, not by history).
fn remember(map: &mut HashMap<String, Weak<Live>>, session_id: &str, live: &Arc<Live>) {
    if map.len() >= 64 && map.len().is_power_of_two() {
        map.retain(|_, weak| weak.strong_count() > 0);
    }
    map.insert(session_id.to_string(), Arc::downgrade(live));
}

/// Whether `id` has the form `ses_` + 26 ULID characters (and so is safe as a path component).
pub fn valid_session_id(id: &str) -> bool {
    id.strip_prefix("ses_")
        .is_some_and(|rest| rest.len() == 26 && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// A new HTTP continuation token: `http:` + 244 random bits.
fn new_token() -> String {
    format!(
        "http:{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// SHA-256 of a token, hex (what `session.json` stores).
fn hash_token(token: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Checks every per-send workspace path (nothing is written when one is refused).
fn check_workspace_files(files: &BTreeMap<String, String>) -> Result<(), ManagerError> {
    for path in files.keys() {
        check_workspace_path(path)
            .map_err(|err| ManagerError::Invalid(format!("workspaceFiles: {err}")))?;
    }
    Ok(())
}
