//! One session on disk: its metadata, its event log, and running a turn in it.

use std::path::PathBuf;

use chrono::Utc;
use folio_agent::tools::TodoList;
use folio_agent::{Agent, EventSink, Turn, TurnOutcome};
use folio_protocol::{
    Event, EventBody, MessageReceived, SessionMode, SessionStarted, SessionWaiting,
};
use tokio_util::sync::CancellationToken;

use crate::event_log::{EventLog, LogError};
use crate::state::{SessionMeta, SessionStatus, StateRoot, new_session_id, new_turn_id};

/// A live session: metadata plus its open event log.
pub struct Session {
    /// The session's metadata (`session.json`).
    pub meta: SessionMeta,
    /// The append-only event log.
    pub log: EventLog,
    /// Every event stored so far.
    pub events: Vec<Event>,
    state: StateRoot,
    todos: TodoList,
}

/// Why a session could not be created or a turn could not start.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The event log failed.
    #[error(transparent)]
    Log(#[from] LogError),
    /// Host I/O on the state root failed.
    #[error("state root {path}: {source}")]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The turn's FileSystem could not be bound.
    #[error("{0}")]
    Bind(String),
}

impl Session {
    /// Creates a new session under `state` and records `session.started`.
    pub fn create(
        state: &StateRoot,
        mode: SessionMode,
        channel: &str,
        principal: &str,
        title: Option<String>,
    ) -> Result<Session, SessionError> {
        let session_id = new_session_id();
        let now = Utc::now();
        let meta = SessionMeta {
            session_id: session_id.clone(),
            mode,
            status: SessionStatus::Waiting,
            channel: channel.to_string(),
            principal: principal.to_string(),
            title: title.clone(),
            created_at: now,
            updated_at: now,
            token_hash: None,
            turns: 0,
            last_index: 0,
        };
        let workspace = state.workspace_dir(&session_id);
        std::fs::create_dir_all(&workspace).map_err(|source| SessionError::Io {
            path: workspace.clone(),
            source,
        })?;
        meta.save(state).map_err(|source| SessionError::Io {
            path: state.meta_path(&session_id),
            source,
        })?;
        let (log, events) = EventLog::open(&state.trace_path(&session_id), &session_id)?;
        let mut session = Session {
            meta,
            log,
            events,
            state: state.clone(),
            todos: TodoList::default(),
        };
        let started = session.log.append(
            None,
            EventBody::SessionStarted(SessionStarted {
                mode,
                channel: channel.to_string(),
                title,
                principal: principal.to_string(),
            }),
        )?;
        session.events.push(started);
        Ok(session)
    }

    /// Records `message.received`, runs one turn of `agent`, then parks the session;
    /// `observer` sees every event as it is appended.
    pub async fn run_turn(
        &mut self,
        agent: &Agent,
        message: &str,
        cancel: CancellationToken,
        observer: &(dyn Fn(&Event) + Send + Sync),
    ) -> Result<TurnOutcome, SessionError> {
        self.set_status(SessionStatus::Running)?;
        let turn_id = new_turn_id();
        let workspace = self.state.workspace_dir(&self.meta.session_id);
        // Hooks observe every event after it is recorded (they run in the background).
        let hooks = agent.hooks.for_session(Some(&self.meta.channel), None);
        let observed = |event: &Event| {
            hooks.dispatch(event);
            observer(event);
        };
        let sink = ObservedLog {
            log: &self.log,
            observer: &observed,
        };
        let received = sink.record(
            Some(&turn_id),
            EventBody::MessageReceived(MessageReceived {
                text: message.to_string(),
                admission: None,
                coalesced: None,
            }),
        )?;
        self.events.push(received);
        let (fs, scratch) = agent
            .bind_turn_fs(&workspace)
            .await
            .map_err(SessionError::Bind)?;
        let turn = Turn {
            session_id: self.meta.session_id.clone(),
            turn_id,
            events: self.events.clone(),
            fs,
            workspace,
            scratch,
            cancel,
            todos: self.todos.clone(),
            context: Default::default(),
        };
        let outcome = agent.harness.run_turn(turn, &sink).await;
        sink.record(None, EventBody::SessionWaiting(SessionWaiting {}))?;
        self.log.sync()?;
        self.events = crate::read_events(self.log.path())?;
        self.set_status(SessionStatus::Waiting)?;
        Ok(outcome)
    }

    fn set_status(&mut self, status: SessionStatus) -> Result<(), SessionError> {
        self.meta.status = status;
        self.meta.updated_at = Utc::now();
        self.meta
            .save(&self.state)
            .map_err(|source| SessionError::Io {
                path: self.state.meta_path(&self.meta.session_id),
                source,
            })
    }
}

/// The session's log as an [`EventSink`] that also shows each event to an observer.
struct ObservedLog<'a> {
    log: &'a EventLog,
    observer: &'a (dyn Fn(&Event) + Send + Sync),
}

impl ObservedLog<'_> {
    fn record(&self, turn_id: Option<&str>, body: EventBody) -> Result<Event, LogError> {
        let event = self.log.append(turn_id, body)?;
        (self.observer)(&event);
        Ok(event)
    }
}

#[async_trait::async_trait]
impl EventSink for ObservedLog<'_> {
    async fn emit(&self, turn_id: Option<&str>, body: EventBody) -> Result<Event, String> {
        self.record(turn_id, body).map_err(|err| err.to_string())
    }

    async fn checkpoint(&self) -> Result<(), String> {
        self.log.sync().map_err(|err| err.to_string())
    }
}
