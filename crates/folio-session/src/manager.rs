//! The [`SessionManager`]: every surface funnels into it. One tokio actor per live session owns
//! the session's turn, its coalesce queue and its execution lock, so admission is sequential code
//! and a session never runs two turns at once. Idle sessions have no task.
//!
//! This module holds the sessions' life (create, send, stop, delete, approvals, direct tool
//! calls, shutdown); `recovery` opens a state root, `queries` reads sessions, `stream` follows
//! them.

use std::collections::{BTreeMap, HashMap};
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use chrono::Utc;
use folio_agent::Agent;
use folio_agent::check_workspace_path;
use folio_agent::tools::{SessionContext, TodoList};
use folio_protocol::{
    ActionApprovalResolved, Admission, ApprovalRequest, CreateSession, Event, EventBody, FollowUp,
    ForkOrigin, SessionMode, SessionStarted, SessionStatus, ToolCallResult,
};
use serde_json::Value;
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::actor::{Actor, direct_call};
use crate::cluster::{Owner, Remote};
use crate::command::{Admit, Command, Pending};
use crate::error::{ManagerError, OpenError, io_error, store_error};
use crate::fault::FaultPoint;
use crate::live::{Live, lock};
use crate::logs::LogBuffer;
use crate::shared::Inner;
use crate::state::{
    SessionMeta, SessionOptions, StateRoot, lock_state_root, new_session_id, reported_usage,
    valid_session_id,
};
use crate::token;
use crate::workspace_root::WorkspaceRoot;

/// An accepted message: the session and its (new) continuation token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// `ses_…`.
    pub session_id: String,
    /// `http:…`, rotated per accepted follow-up.
    pub continuation_token: String,
    /// The indexes of the events the session's log gained while the message was accepted
    /// (`None` when it gained none): the range its request's span covers. Not part of the
    /// answer a client sees: a retried request may append nothing.
    pub events: Option<RangeInclusive<u64>>,
}

/// What a new session starts with (see [`SessionManager::open_new`]).
pub(crate) struct NewSession<'a> {
    pub(crate) session_id: &'a str,
    /// The first continuation token (only its hash is stored).
    pub(crate) token: &'a str,
    pub(crate) principal: &'a str,
    pub(crate) channel: &'a str,
    pub(crate) mode: SessionMode,
    pub(crate) title: Option<String>,
    pub(crate) forked_from: Option<ForkOrigin>,
    /// Its purpose and dry-run flag.
    pub(crate) options: SessionOptions,
}

/// A message an in-process channel sends to an existing session ([`SessionManager::send_message`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChannelMessage {
    /// The message text.
    pub text: String,
    /// Files written into the session workspace before the turn (relative path → contents).
    pub workspace_files: BTreeMap<String, String>,
    /// What a busy session does with it (default preempt).
    pub admission: Option<Admission>,
    /// The idempotency key: a message with a recorded key is not admitted twice.
    pub key: Option<String>,
}

/// Sessions of one agent under one state root.
#[derive(Clone)]
pub struct SessionManager {
    pub(crate) inner: Arc<Inner>,
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
            return Err(OpenError::Io(
                "a SessionManager is opened inside a tokio runtime".into(),
            ));
        }
        let cap = agent.definition.config.concurrency.max_running_turns;
        let manager = SessionManager {
            inner: Arc::new(Inner {
                state,
                agent: RwLock::new(agent),
                live: std::sync::Mutex::new(HashMap::new()),
                slots: cap.map(|n| Arc::new(Semaphore::new(n.max(1) as usize))),
                queued: std::sync::atomic::AtomicU32::new(0),
                fault: std::sync::Mutex::new(None),
                clock: RwLock::new(Arc::new(crate::schedule::SystemClock::new())),
                reminders: tokio::sync::Mutex::new(()),
                reminders_changed: tokio::sync::Notify::new(),
                shutdown: CancellationToken::new(),
                closing: std::sync::atomic::AtomicBool::new(false),
                tasks: TaskTracker::new(),
                logs,
                keepalive_ms: std::sync::atomic::AtomicU64::new(15_000),
                state_lock: std::sync::Mutex::new(state_lock),
                workspace_root: RwLock::new(None),
                reconnecting: std::sync::atomic::AtomicBool::new(false),
                creating: Default::default(),
                store,
                server: crate::cluster::new_server_id(),
                ttl: lease_ttl.max(Duration::from_millis(300)),
                authorizing: Default::default(),
                owning: Default::default(),
            }),
        };
        manager.take_over_expired().await;
        manager.inner.tasks.spawn(manager.clone().run_signals());
        manager.inner.tasks.spawn(manager.clone().run_takeover());
        manager.retry_failed_connections();
        Ok(manager)
    }

    /// What the agent keeps in the store the sessions are in (artifacts, MCP credentials), for
    /// an agent reloaded by `folio dev`.
    pub fn shared_backends(&self) -> folio_agent::SharedBackends {
        crate::shared_backends(&self.inner.store)
    }

    /// Where the agent's channels keep their deliveries: beside the sessions, in their store.
    pub fn deliveries(&self) -> Arc<dyn folio_store::DeliveryStore> {
        self.inner.store.deliveries()
    }

    /// This server's id in the claims it takes in the store.
    pub fn server_id(&self) -> &str {
        &self.inner.server
    }

    /// How long a claim this server takes lives unless renewed: the lease time to live.
    pub fn claim_ttl(&self) -> Duration {
        self.inner.ttl
    }

    /// The agent new turns run with.
    pub fn agent(&self) -> Arc<Agent> {
        self.inner.agent()
    }

    /// Swaps the agent definition (`folio dev`); turns in flight finish on the old one.
    pub fn set_agent(&self, agent: Arc<Agent>) {
        *self.inner.agent.write().unwrap_or_else(|p| p.into_inner()) = agent;
        self.retry_failed_connections();
    }

    /// Logs the agent's MCP connections that could not start and retries them in the
    /// background (1 s, doubling up to 60 s, until each starts or the manager shuts down); the
    /// tools of one that starts are offered from the next turn. Needs a tokio runtime.
    fn retry_failed_connections(&self) {
        use std::sync::atomic::Ordering;
        let agent = self.agent();
        if agent.failed_connections.is_empty() {
            return;
        }
        for err in agent.failed_connections.values() {
            self.inner
                .logs
                .warn(format!("{err}; retrying it in the background"));
        }
        if tokio::runtime::Handle::try_current().is_err() {
            self.inner.logs.warn(
                "MCP connections are not retried: the SessionManager was opened outside a tokio runtime"
                    .into(),
            );
            return;
        }
        if self.inner.reconnecting.swap(true, Ordering::SeqCst) {
            return;
        }
        let inner = self.inner.clone();
        self.inner.tasks.spawn(async move {
            reconnect(&inner).await;
            inner.reconnecting.store(false, Ordering::SeqCst);
        });
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

    /// Arms a crash-test fault point: the process aborts when it gets there (`folio serve`
    /// arms it from `FOLIO_FAULT`; never armed otherwise).
    pub fn set_fault(&self, point: Option<FaultPoint>) {
        *lock(&self.inner.fault) = point;
    }

    /// Whether the crash-test fault `point` is armed (channels withhold work at theirs).
    pub fn fault_armed(&self, point: FaultPoint) -> bool {
        *lock(&self.inner.fault) == Some(point)
    }

    /// Aborts the process when the crash-test fault `point` is armed (code outside this crate
    /// marks its own points with it).
    pub fn fault(&self, point: FaultPoint) {
        self.inner.fault(point);
    }

    /// Sets the clock schedules and reminders read (tests move a [`ManualClock`]).
    ///
    /// [`ManualClock`]: crate::schedule::ManualClock
    pub fn set_clock(&self, clock: Arc<dyn crate::schedule::Clock>) {
        *self.inner.clock.write().unwrap_or_else(|p| p.into_inner()) = clock;
    }

    /// The clock schedules and reminders read.
    pub fn clock(&self) -> Arc<dyn crate::schedule::Clock> {
        self.inner
            .clock
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Fires when the manager shuts down.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.inner.shutdown.clone()
    }

    /// The state root.
    pub fn state(&self) -> &StateRoot {
        &self.inner.state
    }

    /// Keeps new sessions' host workspaces under `root` (`folio serve --workspace-root`) instead
    /// of the state root; sessions made under another root are refused their host-default
    /// turns (see [`WorkspaceRoot`]).
    pub fn set_workspace_root(&self, root: WorkspaceRoot) {
        *self
            .inner
            .workspace_root
            .write()
            .unwrap_or_else(|poison| poison.into_inner()) = Some(Arc::new(root));
    }

    /// The workspace root new sessions' workspaces go under, when the server has one.
    pub fn workspace_root(&self) -> Option<Arc<WorkspaceRoot>> {
        self.inner
            .workspace_root
            .read()
            .unwrap_or_else(|poison| poison.into_inner())
            .clone()
    }

    /// The host workspace of `principal`'s session `session_id` on this server.
    pub async fn workspace_dir(
        &self,
        principal: &str,
        session_id: &str,
    ) -> Result<PathBuf, ManagerError> {
        self.inner
            .workspace_of(&self.owned_meta(principal, session_id).await?)
    }

    /// Creates a session for `principal` through `channel` (`http`, `mcp`, `cli`, …) and starts
    /// its first turn; returns once the message is durable. With an idempotency key
    /// (`clientMessageId`), a retry of the same request answers the session the key created
    /// (a concurrent one waits for the first), and the key with another request is refused
    /// (`idempotency_key_reused`).
    pub async fn create(
        &self,
        principal: &str,
        channel: &str,
        request: CreateSession,
    ) -> Result<Accepted, ManagerError> {
        self.create_with(principal, channel, request, SessionOptions::default())
            .await
    }

    /// [`create`](Self::create) with the session's purpose and dry-run flag, which its tools
    /// and hooks see on every turn (`folio eval` creates its cases with purpose `eval`).
    pub async fn create_with(
        &self,
        principal: &str,
        channel: &str,
        request: CreateSession,
        options: SessionOptions,
    ) -> Result<Accepted, ManagerError> {
        let mode = request.mode.unwrap_or(SessionMode::Chat);
        self.refuse_when_shutting_down()?;
        check_workspace_files(&request.workspace_files)?;
        let mut options = options;
        if let Some(key) = &request.continuation_key {
            check_continuation_key(key)?;
            options.continuation_key = Some(key.clone());
        }
        let key = request.client_message_id.clone();
        let (record, digest) = match &key {
            Some(key) => {
                token::check_key(key)?;
                let name = token::create_record_name(principal, key);
                let digest = token::request_digest(&CreateSession {
                    client_message_id: None,
                    ..request.clone()
                })?;
                (Some(name), Some(digest))
            }
            None => (None, None),
        };
        // Keyed creates run one at a time per key: a concurrent retry waits here, then finds
        // the first one's record.
        let _creating = match &record {
            Some(name) => Some(self.inner.creating.lock(name).await),
            None => None,
        };
        let message = Pending {
            text: request.message,
            files: request.workspace_files,
            trace_parent: folio_telemetry::incoming_traceparent(),
        };
        let mut session_id = new_session_id();
        if let (Some(key), Some(digest)) = (&key, &digest) {
            // Durable before the session exists, so a retry after a crash finds it.
            let before = self
                .inner
                .store
                .record_create_key(&folio_store::CreateKey {
                    principal: principal.to_string(),
                    key: key.clone(),
                    session_id: session_id.clone(),
                    digest: digest.clone(),
                })
                .await
                .map_err(|e| store_error("cannot record the idempotency key", e))?
                .map(|kept| (kept.session_id, Some(kept.digest)));
            if let Some((first, recorded)) = before {
                if let Some(accepted) = self
                    .created_before(
                        principal,
                        (&first, recorded.as_deref()),
                        key,
                        digest,
                        &message,
                    )
                    .await?
                {
                    self.inner.fault(FaultPoint::BeforeReply);
                    return Ok(accepted);
                }
                // Recorded, but the session was never made (a crash between the two) or was
                // deleted since: the store keeps the first record, so its id is made now.
                if valid_session_id(&first) {
                    session_id = first;
                }
            }
        }
        let token = match &key {
            Some(key) => token::derived_token(&session_id, key),
            None => token::new_token(),
        };
        let live = self
            .open_new(
                NewSession {
                    session_id: &session_id,
                    token: &token,
                    principal,
                    channel,
                    mode,
                    title: request.title,
                    forked_from: None,
                    options,
                },
                &[],
            )
            .await?;
        let admit = Admit {
            message,
            admission: None,
            token: None,
            key,
            digest,
        };
        self.command(&live, &Remote::Busy, |reply| Command::Send { admit, reply })
            .await??;
        self.inner.fault(FaultPoint::BeforeReply);
        Ok(Accepted {
            session_id,
            continuation_token: token,
            events: live.appended_since(None),
        })
    }

    /// Creates a session in the store (metadata, workspace, log with `session.started` and the
    /// `copied` events of a fork after it) and makes it live. Nothing is durable yet: the
    /// caller admits the first message, whose commit makes the session (on disk: its files and
    /// directories) and the message durable in one round before anything is acknowledged.
    pub(crate) async fn open_new(
        &self,
        new: NewSession<'_>,
        copied: &[Event],
    ) -> Result<Arc<Live>, ManagerError> {
        let NewSession {
            session_id,
            token,
            principal,
            channel,
            mode,
            title,
            forked_from,
            options,
        } = new;
        let now = Utc::now();
        let turns = copied
            .iter()
            .filter(|e| matches!(e.body, EventBody::MessageReceived(_)))
            .count() as u32;
        let meta = SessionMeta {
            session_id: session_id.to_string(),
            mode,
            status: SessionStatus::Running,
            channel: channel.to_string(),
            principal: principal.to_string(),
            title: title.clone(),
            created_at: now,
            updated_at: now,
            token_hash: Some(token::hash_token(token)),
            // The first message starts the next turn: written now, so its end need not rewrite
            // this.
            turns: turns + 1,
            last_index: 0,
            usage: reported_usage(copied),
            accepted_keys: Vec::new(),
            purpose: options.purpose,
            dry_run: options.dry_run,
            peer_depth: options.peer_depth,
            continuation_key: options.continuation_key,
            workspace_root: self.workspace_root().map(|root| root.id().to_string()),
        };
        self.inner
            .store
            .create_session(&meta)
            .await
            .map_err(|e| store_error("cannot create the session", e))?;
        let workspace = self.inner.workspace_of(&meta)?;
        std::fs::create_dir_all(&workspace).map_err(|e| io_error("cannot create workspace", e))?;
        self.inner.fault(FaultPoint::SessionCreated);
        let live = self.open_live(meta).await?;
        folio_telemetry::metrics::session(&self.agent().definition.name, channel);
        live.bind_hooks(&self.agent().hooks);
        live.append(
            None,
            EventBody::SessionStarted(SessionStarted {
                mode,
                channel: channel.to_string(),
                title,
                principal: principal.to_string(),
                forked_from,
            }),
        )?;
        for event in copied {
            live.append(event.turn_id.as_deref(), event.body.clone())?;
        }
        remember(&mut lock(&self.inner.live), session_id, &live);
        self.inner
            .logs
            .about(session_id)
            .info(format!("session {session_id} created by {principal}"));
        Ok(live)
    }

    /// The answer to a create retried with `key`: the session the key's `record` names (its
    /// first line; the request's `digest` is the second), after admitting `message` to it when
    /// the first attempt died before recording it; `idempotency_key_reused` when the first
    /// request differs. `None` when no such session exists (never created, or deleted since).
    async fn created_before(
        &self,
        principal: &str,
        (session_id, recorded): (&str, Option<&str>),
        key: &str,
        digest: &str,
        message: &Pending,
    ) -> Result<Option<Accepted>, ManagerError> {
        if !valid_session_id(session_id) {
            return Ok(None);
        }
        token::check_same_request(key, recorded, Some(digest))?;
        let session_id = session_id.to_string();
        let live = match self.owned(principal, &session_id).await {
            Ok(live) => live,
            Err(ManagerError::NotFound(_)) => return Ok(None),
            Err(err) => return Err(err),
        };
        let admit = Admit {
            message: Pending {
                text: message.text.clone(),
                files: message.files.clone(),
                trace_parent: message.trace_parent.clone(),
            },
            admission: None,
            token: None,
            key: Some(key.to_string()),
            digest: Some(digest.to_string()),
            // The first attempt may have died before its create was synced.
        };
        let before = live.last_index();
        // The first attempt's turn may run on another server: waited for, never preempted.
        self.command(&live, &Remote::Wait, |reply| Command::Send { admit, reply })
            .await??;
        Ok(Some(Accepted {
            continuation_token: token::derived_token(&session_id, key),
            session_id,
            events: live.appended_since(before),
        }))
    }

    /// Sends a follow-up through the HTTP channel: checks the token, admits the message
    /// (preempt by default, or coalesce), records it durably, then rotates the token. With an
    /// idempotency key (`clientMessageId`), a retry of the same request gets the first answer
    /// and the key with another request is refused (`idempotency_key_reused`).
    pub async fn follow_up(
        &self,
        principal: &str,
        session_id: &str,
        request: FollowUp,
    ) -> Result<Accepted, ManagerError> {
        self.refuse_when_shutting_down()?;
        let digest = match &request.client_message_id {
            Some(key) => {
                token::check_key(key)?;
                // The token is not part of the request a retry repeats: it is checked apart.
                Some(token::request_digest(&FollowUp {
                    continuation_token: String::new(),
                    client_message_id: None,
                    ..request.clone()
                })?)
            }
            None => None,
        };
        let live = self.owned(principal, session_id).await?;
        if lock(&live.meta).mode == SessionMode::Task {
            return Err(ManagerError::NotFollowable(session_id.to_string()));
        }
        check_workspace_files(&request.workspace_files)?;
        let coalesce = request.admission == Some(Admission::Coalesce);
        // A coalesced message may be relayed to the server running the turn; one without a key
        // gets one for the relay, so that its answer's token is known here and repeats are
        // harmless.
        let relay_key = match &request.client_message_id {
            None if coalesce => Some(format!("relay:{}", ulid::Ulid::generate())),
            _ => None,
        };
        let key = request.client_message_id.clone().or(relay_key.clone());
        let mut remote = remote_for(&live, request.admission, key.as_deref());
        if let (true, Remote::Wait, Some(key)) = (coalesce, &remote, &key) {
            let relayed = crate::cluster::Relayed {
                text: request.message.clone(),
                workspace_files: request.workspace_files.clone(),
                token: request.continuation_token.clone(),
                key: key.clone(),
                digest: digest.clone(),
            };
            remote = Remote::relay(&relayed).unwrap_or(Remote::Wait);
        }
        let owner = self.own(&live, &remote).await?;
        // Queued by the owner (seen in the log; or found there once the owner's turn ended and
        // this server took the session: a relay key is nobody else's).
        let relayed = matches!(owner, Owner::Done)
            || relay_key.as_ref().is_some_and(|key| {
                live.with_events(|events| token::recorded(events, key).is_some())
            });
        if let (true, Some(key)) = (relayed, &key) {
            self.inner.fault(FaultPoint::BeforeReply);
            return Ok(Accepted {
                session_id: session_id.to_string(),
                continuation_token: token::derived_token(&request.continuation_token, key),
                events: None,
            });
        }
        let admit = Admit {
            message: Pending {
                text: request.message,
                files: request.workspace_files,
                trace_parent: folio_telemetry::incoming_traceparent(),
            },
            admission: request.admission,
            token: Some(request.continuation_token),
            key: request.client_message_id,
            digest,
        };
        let before = live.last_index();
        let token = self
            .command(&live, &Remote::Busy, |reply| Command::Send { admit, reply })
            .await??
            .ok_or_else(|| {
                ManagerError::Internal("the session accepted the message without a token".into())
            })?;
        self.inner.fault(FaultPoint::BeforeReply);
        Ok(Accepted {
            session_id: session_id.to_string(),
            continuation_token: token,
            events: live.appended_since(before),
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
        let message = ChannelMessage {
            text: message.to_string(),
            workspace_files: BTreeMap::new(),
            admission,
            key: None,
        };
        self.send_message(principal, session_id, message).await
    }

    /// Records a `channel.delivery` event on `principal`'s session (`turn_id`: the turn whose
    /// answer it reports).
    pub async fn record_channel_delivery(
        &self,
        principal: &str,
        session_id: &str,
        turn_id: Option<&str>,
        delivery: folio_protocol::ChannelDelivery,
    ) -> Result<(), ManagerError> {
        let live = self.owned(principal, session_id).await?;
        let body = EventBody::ChannelDelivery(delivery);
        self.record_event(&live, turn_id.map(str::to_string), body, None)
            .await
    }

    /// Appends one event to the session outside a turn, unless `unless` holds for its log,
    /// through the owner's actor (only the owner writes the log), which commits it.
    pub(crate) async fn record_event(
        &self,
        live: &Arc<Live>,
        turn_id: Option<String>,
        body: EventBody,
        unless: Option<crate::cluster::Done>,
    ) -> Result<(), ManagerError> {
        self.command(live, &Remote::Wait, |reply| Command::Record {
            turn_id,
            body,
            unless,
            reply,
        })
        .await?
    }

    /// Sends a message from an in-process channel (no token): its workspace files are written
    /// before the turn, and a message whose `key` is already recorded is not admitted again.
    pub async fn send_message(
        &self,
        principal: &str,
        session_id: &str,
        message: ChannelMessage,
    ) -> Result<(), ManagerError> {
        self.refuse_when_shutting_down()?;
        if let Some(key) = &message.key {
            token::check_key(key)?;
        }
        check_workspace_files(&message.workspace_files)?;
        let live = self.owned(principal, session_id).await?;
        if lock(&live.meta).mode == SessionMode::Task {
            return Err(ManagerError::NotFollowable(session_id.to_string()));
        }
        let remote = remote_for(&live, message.admission, message.key.as_deref());
        let admit = Admit {
            message: Pending {
                text: message.text,
                files: message.workspace_files,
                trace_parent: folio_telemetry::incoming_traceparent(),
            },
            admission: message.admission,
            token: None,
            key: message.key,
            digest: None,
        };
        self.command(&live, &remote, |reply| Command::Send { admit, reply })
            .await??;
        Ok(())
    }

    /// Cancels the running turn (`turn interrupted`) and clears queued messages; idle → no-op.
    pub async fn stop(&self, principal: &str, session_id: &str) -> Result<(), ManagerError> {
        let live = self.owned(principal, session_id).await?;
        self.command(&live, &Remote::stop(), |reply| Command::Stop { reply })
            .await
    }

    /// Stops the session's turn and removes the session from disk.
    pub async fn delete(&self, principal: &str, session_id: &str) -> Result<(), ManagerError> {
        let live = self.owned(principal, session_id).await?;
        self.command(&live, &Remote::stop(), |reply| Command::Close {
            delete: true,
            reply,
        })
        .await?;
        lock(&self.inner.live).remove(session_id);
        self.inner
            .logs
            .about(session_id)
            .info(format!("session {session_id} deleted by {principal}"));
        Ok(())
    }

    /// Resolves a parked approval (or answers an elicitation) as `principal`; a second
    /// decision is refused.
    pub async fn resolve_approval(
        &self,
        principal: &str,
        session_id: &str,
        call_id: &str,
        request: ApprovalRequest,
    ) -> Result<(), ManagerError> {
        let live = self.owned(principal, session_id).await?;
        let resolved = ActionApprovalResolved {
            call_id: call_id.to_string(),
            decision: request.decision,
            reason: request.reason,
            by: principal.to_string(),
            content: request.content,
        };
        // A turn parked on another server gets the decision there.
        if let Owner::Done = self.own(&live, &Remote::resolve(&resolved)?).await? {
            return Ok(());
        }
        self.command(&live, &Remote::Busy, |reply| Command::Resolve {
            resolved,
            reply,
        })
        .await?
    }

    /// Hands an MCP OAuth redirect (`query`, of `GET /v1/mcp-auth/callback`) to the turn
    /// parked on the authorization whose request carried `state`, and waits for the code
    /// exchange. The `state` is the capability: unguessable, single-use, and shown only in the
    /// owning session's events; whoever brings it back, the tokens go to that session's
    /// principal (the turn's own client stores them). On a shared store, a redirect reaching a
    /// server whose turns do not wait for it is passed to the server whose turn does (a signal
    /// every server hears), and answered once that server completed it. `NotFound`: no turn of
    /// this agent waits for that `state` (already used, or the server restarted: the turn asks
    /// again);
    /// `Invalid`: the authorization failed, saying why.
    pub async fn mcp_authorization_redirect(
        &self,
        state: &str,
        query: &str,
    ) -> Result<(), ManagerError> {
        match self.take_authorization(state) {
            Some(waiter) => Self::complete_authorization(waiter, query).await,
            // On a shared store the turn may wait on another server.
            None => self.relay_authorization(state, query).await,
        }
    }

    /// The waiter of the authorization `state` names, if a turn of this server waits for it.
    pub(crate) fn take_authorization(
        &self,
        state: &str,
    ) -> Option<tokio::sync::oneshot::Sender<folio_agent::AuthorizationRedirect>> {
        let lives: Vec<Arc<Live>> = lock(&self.inner.live)
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        lives
            .iter()
            .find_map(|live| lock(&live.approvals).take_authorization(state))
    }

    /// Hands the redirect's `query` to the turn waiting for it and waits until the
    /// authorization completed.
    pub(crate) async fn complete_authorization(
        waiter: tokio::sync::oneshot::Sender<folio_agent::AuthorizationRedirect>,
        query: &str,
    ) -> Result<(), ManagerError> {
        let (done, outcome) = tokio::sync::oneshot::channel();
        let redirect = folio_agent::AuthorizationRedirect {
            query: query.to_string(),
            done,
        };
        if waiter.send(redirect).is_err() {
            return Err(ManagerError::NotFound(
                "the turn that waited for this authorization ended".into(),
            ));
        }
        match outcome.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(why)) => Err(ManagerError::Invalid(why.to_string())),
            Err(_) => Err(ManagerError::NotFound(
                "the turn that waited for this authorization ended before it completed".into(),
            )),
        }
    }

    /// A direct call of `name`, bound to a session (sharing its execution lock) or unscoped.
    /// Skips the approval gate; still validates the input.
    pub async fn call_tool(
        &self,
        principal: &str,
        session_id: Option<&str>,
        name: &str,
        input: Value,
    ) -> Result<ToolCallResult, ManagerError> {
        match session_id {
            Some(session_id) => {
                let live = self.owned(principal, session_id).await?;
                let name = name.to_string();
                // The actor runs the call in its own task: the request's trace context goes along.
                let trace_parent = folio_telemetry::incoming_traceparent();
                self.command(&live, &Remote::Busy, |reply| Command::Tool {
                    name,
                    input,
                    trace_parent,
                    reply,
                })
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
                    (
                        "direct",
                        SessionContext {
                            principal: principal.to_string(),
                            ..SessionContext::default()
                        },
                    ),
                    TodoList::default(),
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
        self.inner.store.close().await;
        lock(&self.inner.state_lock).take();
    }

    fn refuse_when_shutting_down(&self) -> Result<(), ManagerError> {
        if self.inner.closing.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(ManagerError::Internal("the server is shutting down".into()));
        }
        Ok(())
    }

    pub(crate) async fn owned_meta(
        &self,
        principal: &str,
        session_id: &str,
    ) -> Result<SessionMeta, ManagerError> {
        let not_found = || ManagerError::NotFound(format!("no session {session_id}"));
        if !valid_session_id(session_id) {
            return Err(not_found());
        }
        let meta = self
            .inner
            .load_meta(session_id)
            .await?
            .ok_or_else(not_found)?;
        if meta.principal != principal {
            return Err(ManagerError::Forbidden(session_id.to_string()));
        }
        Ok(meta)
    }

    /// The live session of `session_id`, opening it when idle, after the ownership check.
    pub(crate) async fn owned(
        &self,
        principal: &str,
        session_id: &str,
    ) -> Result<Arc<Live>, ManagerError> {
        let meta = self.owned_meta(principal, session_id).await?;
        self.open_live(meta).await
    }

    /// The live session `meta` describes: the one open, or opened now (it starts following
    /// the store's appends before its log is read).
    pub(crate) async fn open_live(&self, meta: SessionMeta) -> Result<Arc<Live>, ManagerError> {
        let id = meta.session_id.clone();
        if let Some(live) = self.inner.live(&id) {
            return Ok(live);
        }
        let what = format!("cannot read session {id}");
        let appends = self
            .inner
            .store
            .follow(&id)
            .await
            .map_err(|err| store_error(&what, err))?;
        let events = self
            .inner
            .store
            .read_events(&id, 0, None)
            .await
            .map_err(|err| store_error(&what, err))?;
        let live = Arc::new(Live::new(self.inner.store.clone(), meta, events));
        live.bind_hooks(&self.agent().hooks);
        let mut map = lock(&self.inner.live);
        if let Some(open) = map.get(&id).and_then(Weak::upgrade) {
            return Ok(open);
        }
        remember(&mut map, &id, &live);
        self.inner.tasks.spawn(crate::cluster::follow(
            self.inner.clone(),
            Arc::downgrade(&live),
            appends,
        ));
        Ok(live)
    }

    /// Sends a command to the session's actor and waits for its answer. When the session is
    /// idle, this server first takes the session's lease and spawns its actor, doing what
    /// `remote` says while another server owns its turn.
    pub(crate) async fn command<T>(
        &self,
        live: &Arc<Live>,
        remote: &Remote,
        make: impl FnOnce(oneshot::Sender<T>) -> Command,
    ) -> Result<T, ManagerError> {
        if let Owner::Done = self.own(live, remote).await? {
            return Err(ManagerError::Internal(
                "the server running the turn did it already".into(),
            ));
        }
        let (reply, answer) = oneshot::channel();
        self.post(live, make(reply))?;
        answer
            .await
            .map_err(|_| ManagerError::Internal("the session's actor stopped".into()))
    }

    /// Puts a command in the mailbox of the session's actor (only [`SessionManager::own`]
    /// spawns one, under the session's lease).
    pub(crate) fn post(&self, live: &Arc<Live>, command: Command) -> Result<(), ManagerError> {
        let sender = match lock(&live.mailbox).as_ref() {
            Some(sender) if !sender.is_closed() => sender.clone(),
            _ => {
                return Err(ManagerError::Internal(format!(
                    "session {}: this server no longer owns the session's turn; try again",
                    live.id
                )));
            }
        };
        sender
            .send(command)
            .map_err(|_| ManagerError::Internal("the session's actor stopped".into()))
    }

    /// Spawns the session's actor, holding `lease`.
    pub(crate) fn spawn_actor(&self, live: &Arc<Live>, lease: folio_store::Lease) {
        let (sender, rx) = mpsc::unbounded_channel();
        *lock(&live.mailbox) = Some(sender);
        live.log.set_fence(Some(lease.fence));
        let actor = Actor::new(self.inner.clone(), live.clone(), rx, Some(lease));
        self.inner.tasks.spawn(actor.run());
    }
}

/// What a message does when another server runs the session's turn, by its admission
/// (preempt: stop it first; coalesce: wait for its end, unless the caller relays it); a retry of a message whose key the log holds waits (it must not stop its own first turn).
fn remote_for(live: &Live, admission: Option<Admission>, key: Option<&str>) -> Remote {
    if key.is_some_and(|key| live.with_events(|events| token::recorded(events, key).is_some())) {
        return Remote::Wait;
    }
    match admission.unwrap_or(Admission::Preempt) {
        Admission::Coalesce => Remote::Wait,
        Admission::Preempt => Remote::stop(),
    }
}

/// First wait before retrying the MCP connections that could not start.
const FIRST_RECONNECT: Duration = Duration::from_secs(1);
/// The longest wait between two retries (the wait doubles per failed retry).
const MAX_RECONNECT: Duration = Duration::from_secs(60);

/// Retries the agent's failed MCP connections with exponential backoff until none is left, the
/// manager shuts down, or (after a `folio dev` reload) the new agent has none.
async fn reconnect(inner: &Inner) {
    let mut wait = FIRST_RECONNECT;
    loop {
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = inner.shutdown.cancelled() => return,
        }
        let agent = inner.agent();
        if agent.failed_connections.is_empty() {
            return;
        }
        wait = (wait * 2).min(MAX_RECONNECT);
        let next = tokio::select! {
            next = agent.reconnect() => next,
            () = inner.shutdown.cancelled() => return,
        };
        for name in agent.failed_connections.keys() {
            match next.failed_connections.get(name) {
                None => inner.logs.info(format!(
                    "MCP server \"{name}\" started after a retry; its tools are offered from the next turn"
                )),
                Some(err) => inner.logs.warn(format!(
                    "{err}; retrying in {} s",
                    wait.as_secs()
                )),
            }
        }
        let mut current = inner.agent.write().unwrap_or_else(|p| p.into_inner());
        // A reload (`folio dev`) that swapped the agent meanwhile wins.
        if Arc::ptr_eq(&current, &agent) {
            *current = Arc::new(next);
        }
    }
}

/// Records a live session, dropping entries of sessions that went idle now and then (so the
/// map stays bounded by active work, not by history).
pub(crate) fn remember(map: &mut HashMap<String, Weak<Live>>, session_id: &str, live: &Arc<Live>) {
    if map.len() >= 64 && map.len().is_power_of_two() {
        map.retain(|_, weak| weak.strong_count() > 0);
    }
    map.insert(session_id.to_string(), Arc::downgrade(live));
}

/// The most characters a continuation key set through `POST /v1/session` may have.
const MAX_CONTINUATION_KEY_CHARS: usize = 256;

/// Checks a continuation key a caller sets: 1 to 256 characters, none of them a control
/// character (it is shown in logs and read by live root factories and tools).
fn check_continuation_key(key: &str) -> Result<(), ManagerError> {
    let chars = key.chars().count();
    if chars == 0 || chars > MAX_CONTINUATION_KEY_CHARS || key.chars().any(char::is_control) {
        return Err(ManagerError::Invalid(format!(
            "continuationKey: must be 1 to {MAX_CONTINUATION_KEY_CHARS} characters with no control characters (e.g. \"acme:ticket-7\")"
        )));
    }
    Ok(())
}

/// Checks every per-send workspace path (nothing is written when one is refused).
fn check_workspace_files(files: &BTreeMap<String, String>) -> Result<(), ManagerError> {
    for path in files.keys() {
        check_workspace_path(path)
            .map_err(|err| ManagerError::Invalid(format!("workspaceFiles: {err}")))?;
    }
    Ok(())
}
