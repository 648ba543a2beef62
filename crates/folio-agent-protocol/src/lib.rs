//! The core of the [Agent Protocol](https://github.com/langchain-ai/agent-protocol) — what
//! LangGraph's `langgraph-sdk` speaks — over the session engine, so
//! `langgraph_sdk.get_client(url=<agent base URL>)` works against `folio serve`
//! (docs/agent-protocol.md has the routes, the stream-mode table and what is not supported).
//!
//! - **Assistants**: one per agent; its `assistant_id` (and `graph_id`) is the agent's slug.
//! - **Threads** are records of this server, kept in memory: a thread starts with no message,
//!   and Folio's sessions start with one, so a thread gets its session on its first run (then
//!   thread → session is fixed). The session and its log are durable as always; the thread
//!   record and its run list are not: after a restart the sessions remain (Folio's own routes
//!   read them) but their threads are gone. Several servers sharing a store do not share
//!   threads.
//! - **Runs** are turns: a run with `input` sends its human messages (joined) to the session as
//!   one message; its events are those of the turn that message started (found by the turn id
//!   of the first `message.received` at or after the log index where the run began). A run
//!   ends with its turn, or when the turn parks on an approval (`action.approval_requested`):
//!   the run is then `interrupted` and the thread's state lists the interrupt; a run with
//!   `command = {"resume": {"decision": "approve" | "deny", "reason": …}}` answers it through
//!   the engine's approvals handle and follows the rest of that turn. A run's status is read
//!   from the log each time, never stored.
//! - **Busy threads** (a run pending or running): `multitask_strategy` `reject` (default) →
//!   409, `enqueue` → Folio's coalesce admission, `interrupt` → preempt; `rollback` → 422.
//!
//! A crate of its own (folio-server merges its router under each agent's prefix, behind the
//! same auth, guard, body limit and timeouts as Folio's routes): it depends only on the engine
//! and the protocol types, and reads the caller from the [`Caller`] request extension the
//! server's auth layer sets. These routes are not part of Folio's OpenAPI document.

#![warn(missing_docs)]

mod runs;
mod stream;
mod threads;
mod transcript;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use chrono::{DateTime, Utc};
use folio_protocol::{Admission, ApprovalRequest, CreateSession, Event};
use folio_session::{ManagerError, SessionManager};
use serde_json::{Value, json};

use crate::runs::{Run, Status, Step};
use crate::stream::{FrameId, Frames, MODES};
use crate::threads::{Thread, Threads};
use crate::transcript::Transcript;

/// The authenticated principal of a request: the server's auth layer sets it as a request
/// extension before these routes run.
#[derive(Debug, Clone)]
pub struct Caller(pub String);

/// The agent an Agent Protocol router serves.
#[derive(Clone)]
pub struct AgentMount {
    /// The agent's slug: its assistant id and graph id.
    pub slug: String,
    /// Its display name.
    pub name: String,
    /// Its description.
    pub description: Option<String>,
    /// Its sessions.
    pub manager: SessionManager,
}

/// The Agent Protocol routes of one agent (mount them under the agent's prefix, behind auth).
pub fn router(mount: AgentMount) -> Router {
    let state = Arc::new(Inner {
        threads: Threads::new(mount.manager.storage(), &mount.slug),
        mount,
        created_at: Utc::now(),
        starting: std::sync::Mutex::default(),
    });
    Router::new()
        .route("/assistants", post(create_assistant))
        .route("/assistants/search", post(search_assistants))
        .route("/assistants/{assistant_id}", get(get_assistant))
        .route("/threads", post(create_thread))
        .route("/threads/search", post(search_threads))
        .route(
            "/threads/{thread_id}",
            get(get_thread).delete(delete_thread),
        )
        .route(
            "/threads/{thread_id}/state",
            get(thread_state).post(update_state),
        )
        .route(
            "/threads/{thread_id}/state/checkpoint",
            post(checkpoint_state_post),
        )
        .route(
            "/threads/{thread_id}/state/{checkpoint_id}",
            get(checkpoint_state),
        )
        .route(
            "/threads/{thread_id}/history",
            get(thread_history).post(thread_history),
        )
        .route("/threads/{thread_id}/runs", post(create_run).get(list_runs))
        .route("/threads/{thread_id}/runs/stream", post(stream_run))
        .route("/threads/{thread_id}/runs/wait", post(wait_run))
        .route("/threads/{thread_id}/runs/{run_id}", get(get_run))
        .route("/threads/{thread_id}/runs/{run_id}/join", get(join_run))
        .route(
            "/threads/{thread_id}/runs/{run_id}/stream",
            get(join_stream),
        )
        .route(
            "/threads/{thread_id}/runs/{run_id}/cancel",
            post(cancel_run),
        )
        .route("/runs", post(stateless_create))
        .route("/runs/stream", post(stateless_stream))
        .route("/runs/wait", post(stateless_wait))
        .with_state(state)
}

type Shared = Arc<Inner>;

struct Inner {
    mount: AgentMount,
    created_at: DateTime<Utc>,
    /// The thread and run records, in the store.
    threads: Threads,
    /// Per (principal, thread): held while a run starts, so that runs of one thread start one
    /// at a time on this server (across servers the engine's admission decides).
    starting: std::sync::Mutex<HashMap<(String, String), StartLock>>,
}

/// The lock a thread's run holds while it starts.
type StartLock = Arc<tokio::sync::Mutex<()>>;

/// An error answer, `{"detail": "..."}` as LangGraph servers answer, with `Retry-After`
/// (whole seconds, at least 1) when waiting helps.
#[derive(Debug)]
struct ApError(StatusCode, String, Option<std::time::Duration>);

impl ApError {
    fn new(status: StatusCode, message: impl Into<String>) -> ApError {
        ApError(status, message.into(), None)
    }

    fn invalid(message: impl Into<String>) -> ApError {
        ApError::new(StatusCode::UNPROCESSABLE_ENTITY, message)
    }

    fn no_thread(thread_id: &str) -> ApError {
        ApError::new(
            StatusCode::NOT_FOUND,
            format!("thread {thread_id} not found: create it with POST /threads"),
        )
    }
}

impl From<ManagerError> for ApError {
    fn from(err: ManagerError) -> ApError {
        let status =
            StatusCode::from_u16(err.code().status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        ApError(status, err.to_string(), err.retry_after())
    }
}

impl IntoResponse for ApError {
    fn into_response(self) -> Response {
        let mut response = (self.0, Json(json!({"detail": self.1}))).into_response();
        if let Some(wait) = self.2 {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                folio_protocol::retry_after_seconds(wait).into(),
            );
        }
        response
    }
}

type ApResult = Result<Response, ApError>;

/// A JSON body; an empty body is `{}`.
fn body_json(bytes: &Bytes) -> Result<Value, ApError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|err| ApError::invalid(format!("body: not JSON: {err}")))?;
    if value.is_object() {
        Ok(value)
    } else {
        Err(ApError::invalid("body: must be a JSON object"))
    }
}

/// A string field of `body`, when present.
fn string_field<'a>(body: &'a Value, name: &str) -> Result<Option<&'a str>, ApError> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ApError::invalid(format!("{name}: must be a string"))),
    }
}

/// `limit` and `offset` of a search.
fn page(body: &Value) -> (usize, usize) {
    let read = |name: &str, default: u64| {
        body.get(name)
            .and_then(Value::as_u64)
            .unwrap_or(default)
            .min(10_000) as usize
    };
    (read("limit", 10), read("offset", 0))
}

/// Whether `metadata` holds every key of `filter` with its value.
fn matches(metadata: &Value, filter: Option<&Value>) -> bool {
    match filter.and_then(Value::as_object) {
        None => true,
        Some(filter) => filter.iter().all(|(k, v)| metadata.get(k) == Some(v)),
    }
}

impl Inner {
    fn assistant(&self) -> Value {
        let m = &self.mount;
        json!({
            "assistant_id": m.slug,
            "graph_id": m.slug,
            "name": m.name,
            "description": m.description,
            "config": {},
            "context": {},
            "metadata": {"created_by": "folio"},
            "version": 1,
            "created_at": self.created_at,
            "updated_at": self.created_at,
        })
    }

    fn check_assistant(&self, id: &str) -> Result<(), ApError> {
        if id == self.mount.slug {
            Ok(())
        } else {
            Err(ApError::new(
                StatusCode::NOT_FOUND,
                format!(
                    "assistant {id} not found: this agent's assistant is {:?} (its slug)",
                    self.mount.slug
                ),
            ))
        }
    }

    /// The log of a thread's session (empty before its first run).
    async fn events(&self, caller: &str, thread: &Thread) -> Result<Vec<Event>, ApError> {
        match &thread.session_id {
            None => Ok(Vec::new()),
            Some(id) => Ok(self.mount.manager.events().read(caller, id).await?),
        }
    }

    /// The caller's thread, with its runs.
    async fn thread(&self, caller: &str, thread_id: &str) -> Result<Thread, ApError> {
        self.threads
            .get(caller, thread_id)
            .await?
            .ok_or_else(|| ApError::no_thread(thread_id))
    }

    /// The lock a run of the caller's thread holds while it starts.
    fn start_lock(&self, caller: &str, thread_id: &str) -> StartLock {
        let mut starting = self.starting.lock().unwrap_or_else(|e| e.into_inner());
        starting
            .entry((caller.to_string(), thread_id.to_string()))
            .or_default()
            .clone()
    }

    /// The caller's thread and run.
    async fn run(
        &self,
        caller: &str,
        thread_id: &str,
        run_id: &str,
    ) -> Result<(Thread, Run), ApError> {
        let thread = self.thread(caller, thread_id).await?;
        let run = thread
            .runs
            .iter()
            .find(|r| r.run_id == run_id)
            .cloned()
            .ok_or_else(|| {
                ApError::new(
                    StatusCode::NOT_FOUND,
                    format!("run {run_id} not found on thread {thread_id}"),
                )
            })?;
        Ok((thread, run))
    }

    /// Creates a thread record for `caller`.
    async fn create_thread(&self, caller: &str, body: &Value) -> Result<Thread, ApError> {
        let id = match string_field(body, "thread_id")? {
            Some(id) => {
                let valid = (1..=128).contains(&id.len())
                    && id
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
                if !valid {
                    return Err(ApError::invalid(
                        "thread_id: 1 to 128 letters, digits, '-', '_' or '.'",
                    ));
                }
                id.to_string()
            }
            None => uuid::Uuid::new_v4().to_string(),
        };
        let keep = string_field(body, "if_exists")? == Some("do_nothing");
        let now = Utc::now();
        let thread = Thread {
            thread_id: id.clone(),
            session_id: None,
            created_at: now,
            updated_at: now,
            metadata: body.get("metadata").cloned().unwrap_or_else(|| json!({})),
            runs: Vec::new(),
        };
        if self.threads.create(caller, &thread).await? {
            return Ok(thread);
        }
        match self.threads.get(caller, &id).await? {
            Some(existing) if keep => Ok(existing),
            _ => Err(ApError::new(
                StatusCode::CONFLICT,
                format!("thread {id} exists already (send if_exists=\"do_nothing\" to reuse it)"),
            )),
        }
    }

    /// Starts a run on the caller's thread (see the crate docs).
    async fn start_run(&self, caller: &str, thread_id: &str, body: &Value) -> Result<Run, ApError> {
        let assistant_id = string_field(body, "assistant_id")?
            .ok_or_else(|| ApError::invalid("assistant_id: required (the agent's slug)"))?
            .to_string();
        self.check_assistant(&assistant_id)?;
        let stream_modes = stream_modes(body.get("stream_mode"))?;
        let strategy = string_field(body, "multitask_strategy")?
            .unwrap_or("reject")
            .to_string();
        if !matches!(
            strategy.as_str(),
            "reject" | "enqueue" | "interrupt" | "rollback"
        ) {
            return Err(ApError::invalid(
                "multitask_strategy: one of reject, enqueue, interrupt, rollback",
            ));
        }
        let resume = body.get("command").and_then(|c| c.get("resume")).cloned();
        let text = match &resume {
            Some(_) => None,
            None => Some(input_text(body.get("input"))?),
        };
        if string_field(body, "if_not_exists")? == Some("create") {
            self.create_thread(
                caller,
                &json!({"thread_id": thread_id, "if_exists": "do_nothing"}),
            )
            .await?;
        }
        self.thread(caller, thread_id).await?;
        let starting = self.start_lock(caller, thread_id);
        let _starting = starting.lock().await;
        // Read again under the thread's start lock: the run before may have set its session.
        let mut thread = self.thread(caller, thread_id).await?;
        let events = self.events(caller, &thread).await?;
        let start = events.last().map_or(0, |e| e.index + 1);
        let busy = thread
            .runs
            .last()
            .is_some_and(|run| !run.status(&events).ended());
        let mut run = Run {
            run_id: uuid::Uuid::now_v7().to_string(),
            thread_id: thread_id.to_string(),
            assistant_id,
            created_at: Utc::now(),
            metadata: body.get("metadata").cloned().unwrap_or_else(|| json!({})),
            multitask_strategy: strategy.clone(),
            stream_modes,
            start,
            turn: None,
        };
        let manager = &self.mount.manager;
        match (resume, text) {
            (Some(resume), _) => {
                let session = thread.session_id.clone().ok_or_else(nothing_to_resume)?;
                let pending = Transcript::of(&events).pending;
                let decisions = decisions(&resume, &pending)?;
                run.turn = pending.values().find_map(|(turn, _)| turn.clone());
                for (call_id, request) in decisions {
                    manager
                        .approvals()
                        .resolve(caller, &session, &call_id, request)
                        .await?;
                }
            }
            (None, Some(text)) => {
                let admission = match (busy, strategy.as_str()) {
                    (false, _) => None,
                    (true, "reject") => {
                        return Err(ApError::new(
                            StatusCode::CONFLICT,
                            format!(
                                "thread {thread_id} is busy with a run; wait for it (runs.join), cancel it, or send multitask_strategy \"enqueue\" or \"interrupt\""
                            ),
                        ));
                    }
                    (true, "enqueue") => Some(Admission::Coalesce),
                    (true, "interrupt") => Some(Admission::Preempt),
                    (true, _) => {
                        return Err(ApError::invalid(
                            "multitask_strategy \"rollback\" is not supported: Folio keeps every event of a session; use \"interrupt\" to stop the running turn instead",
                        ));
                    }
                };
                match &thread.session_id {
                    None => {
                        // Keyed by the thread: two servers starting its first run open one
                        // session.
                        let key = format!(
                            "agent-protocol:{thread_id}:{}",
                            thread.created_at.timestamp_micros()
                        );
                        let create = CreateSession {
                            client_message_id: Some(key),
                            ..CreateSession::message(text)
                        };
                        let accepted = manager.sessions().create(caller, "http", create).await?;
                        thread.session_id = Some(accepted.session_id);
                    }
                    Some(session) => {
                        manager
                            .turns()
                            .send(caller, session, &text, admission)
                            .await?;
                    }
                }
            }
            (None, None) => return Err(ApError::invalid("input or command: one is required")),
        }
        // Deleted while the run started: 404 (a session just made for it stays, as any session).
        let mut record = self.thread(caller, thread_id).await?;
        record.session_id = thread.session_id;
        record.updated_at = Utc::now();
        self.threads.add_run(caller, &record, &run).await?;
        Ok(run)
    }

    /// The thread as the Agent Protocol shows it.
    fn thread_json(thread: &Thread, events: &[Event]) -> Value {
        let transcript = Transcript::of(events);
        let last = thread.runs.last().map(|r| r.status(events));
        let status = match last {
            Some(Status::Pending | Status::Running) => "busy",
            _ if !transcript.pending.is_empty() => "interrupted",
            Some(Status::Error) => "error",
            _ => "idle",
        };
        let interrupts: serde_json::Map<String, Value> = transcript
            .pending
            .iter()
            .map(|(id, (_, i))| (id.clone(), json!([i])))
            .collect();
        json!({
            "thread_id": thread.thread_id,
            "created_at": thread.created_at,
            "updated_at": thread.updated_at,
            "metadata": thread.metadata,
            "status": status,
            "values": transcript.values(),
            "interrupts": interrupts,
            "config": {},
        })
    }

    /// The thread's state after `events` (`values`, `next`, `tasks`, `interrupts`, its
    /// checkpoint): `checkpoints` are the positions in `events` of the checkpoint events so far
    /// ([`transcript::Change::is_checkpoint`]); the last is this state's, the one before it
    /// its parent.
    fn state_json(
        thread: &Thread,
        transcript: &Transcript,
        events: &[Event],
        checkpoints: &[usize],
    ) -> Value {
        let interrupts = transcript.interrupts();
        let checkpoint = |position: Option<&usize>| {
            position.map(|&at| {
                let id = events[at].index.to_string();
                json!({"thread_id": thread.thread_id, "checkpoint_ns": "", "checkpoint_id": id})
            })
        };
        let this = checkpoints.last().map(|&at| &events[at]);
        let parent = checkpoints.len().checked_sub(2).map(|i| &checkpoints[i]);
        let run = this.and_then(|event| thread.runs.iter().rev().find(|r| r.start <= event.index));
        let tasks: Vec<Value> = if interrupts.is_empty() {
            Vec::new()
        } else {
            vec![json!({
                "id": run.map(|r| r.run_id.clone()),
                "name": "tools",
                "path": [],
                "error": null,
                "interrupts": interrupts,
                "checkpoint": null,
                "state": null,
                "result": null,
            })]
        };
        let mut metadata = thread.metadata.clone();
        if let (Value::Object(map), Some(event)) = (&mut metadata, this) {
            let source = match event.body {
                folio_protocol::EventBody::MessageReceived(_) => "input",
                _ => "loop",
            };
            map.insert("source".into(), json!(source));
            map.insert("step".into(), json!(checkpoints.len() - 1));
            map.insert("run_id".into(), json!(run.map(|r| r.run_id.clone())));
        }
        json!({
            "values": transcript.values(),
            "next": if interrupts.is_empty() { json!([]) } else { json!(["tools"]) },
            "tasks": tasks,
            "interrupts": interrupts,
            "metadata": metadata,
            "created_at": this.map(|e| e.at),
            "checkpoint": checkpoint(checkpoints.last()),
            "checkpoint_id": this.map(|e| e.index.to_string()),
            "parent_checkpoint": checkpoint(parent),
        })
    }

    /// The thread's current state.
    fn current_state(thread: &Thread, events: &[Event]) -> Value {
        let mut transcript = Transcript::default();
        let mut checkpoints = Vec::new();
        for (at, event) in events.iter().enumerate() {
            if transcript.apply(event).is_checkpoint(event) {
                checkpoints.push(at);
            }
        }
        Inner::state_json(thread, &transcript, events, &checkpoints)
    }

    /// The thread's states at its checkpoints, newest first: at most `limit`, those before
    /// checkpoint `before` when given, only checkpoint `only` when given.
    fn history(
        thread: &Thread,
        events: &[Event],
        limit: usize,
        before: Option<u64>,
        only: Option<u64>,
    ) -> Vec<Value> {
        let mut transcript = Transcript::default();
        let mut checkpoints = Vec::new();
        let mut states = Vec::new();
        for (at, event) in events.iter().enumerate() {
            if !transcript.apply(event).is_checkpoint(event) {
                continue;
            }
            checkpoints.push(at);
            let wanted =
                before.is_none_or(|b| event.index < b) && only.is_none_or(|o| event.index == o);
            if wanted {
                states.push(Inner::state_json(thread, &transcript, events, &checkpoints));
                if states.len() > limit {
                    states.remove(0);
                }
            }
        }
        states.reverse();
        states
    }

    /// The caller's thread's state at checkpoint `id` (404 when it has none by that id).
    async fn state_at(&self, caller: &str, thread_id: &str, id: &str) -> ApResult {
        let thread = self.thread(caller, thread_id).await?;
        let events = self.events(caller, &thread).await?;
        let state = id
            .parse()
            .ok()
            .and_then(|index| Inner::history(&thread, &events, 1, None, Some(index)).pop());
        match state {
            Some(state) => Ok(Json(state).into_response()),
            None => Err(ApError::new(
                StatusCode::NOT_FOUND,
                format!(
                    "checkpoint {id} not found on thread {thread_id}: its history (get_history) lists the checkpoints"
                ),
            )),
        }
    }

    /// Follows a run to its end: its status, the transcript then, and a failed turn's error.
    async fn wait(
        &self,
        caller: &str,
        thread: &Thread,
        run: &Run,
    ) -> Result<(Status, Transcript, Option<String>), ApError> {
        let session = thread
            .session_id
            .as_deref()
            .ok_or_else(|| ApError::no_thread(&thread.thread_id))?;
        let mut stream = self
            .mount
            .manager
            .events()
            .stream(caller, session, 0)
            .await?;
        let mut transcript = Transcript::default();
        let mut turn = run.turn.clone();
        while let Some(item) = stream.rx.recv().await {
            let Some(event) = item else { continue };
            transcript.apply(&event);
            if let Step::End(status, error) = run.step(&mut turn, &event) {
                return Ok((status, transcript, error));
            }
        }
        Err(ApError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the session closed before the run ended (the server is shutting down?); join the run again",
        ))
    }

    /// The answer of `wait` and `join`: the final values, with `__interrupt__` or `__error__`.
    async fn outcome(&self, caller: &str, thread: &Thread, run: &Run) -> ApResult {
        let (status, transcript, error) = self.wait(caller, thread, run).await?;
        let mut values = transcript.values();
        match status {
            Status::Interrupted if !transcript.pending.is_empty() => {
                values["__interrupt__"] = Value::Array(transcript.interrupts());
            }
            Status::Error => {
                values["__error__"] =
                    json!({"error": "TurnFailed", "message": error.unwrap_or_default()});
            }
            _ => {}
        }
        Ok((content_location(run), Json(values)).into_response())
    }

    /// The run's frames as an SSE response, after `after`.
    async fn sse(
        &self,
        caller: &str,
        thread: &Thread,
        run: Run,
        modes: Vec<String>,
        after: Option<FrameId>,
    ) -> ApResult {
        let session = thread
            .session_id
            .as_deref()
            .ok_or_else(|| ApError::no_thread(&thread.thread_id))?;
        let stream = self
            .mount
            .manager
            .events()
            .stream(caller, session, 0)
            .await?;
        let mut headers = content_location(&run);
        let location = format!("/threads/{}/runs/{}/stream", run.thread_id, run.run_id);
        if let Ok(value) = HeaderValue::from_str(&location) {
            headers.insert(header::LOCATION, value);
        }
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        let frames = Frames::new(run, modes, after);
        let state = (stream.rx, frames, VecDeque::<Bytes>::new());
        let body = futures::stream::unfold(state, |(mut rx, mut frames, mut queue)| async move {
            loop {
                if let Some(bytes) = queue.pop_front() {
                    return Some((
                        Ok::<_, std::convert::Infallible>(bytes),
                        (rx, frames, queue),
                    ));
                }
                if frames.done {
                    return None;
                }
                match rx.recv().await? {
                    Some(event) => queue.extend(frames.push(&event)),
                    None => queue.push_back(Bytes::from_static(b": keepalive\n\n")),
                }
            }
        });
        Ok((StatusCode::OK, headers, Body::from_stream(body)).into_response())
    }
}

/// `Content-Location: /threads/<t>/runs/<r>` (the SDK reads the run id from it).
fn content_location(run: &Run) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let location = format!("/threads/{}/runs/{}", run.thread_id, run.run_id);
    if let Ok(value) = HeaderValue::from_str(&location) {
        headers.insert(header::CONTENT_LOCATION, value);
    }
    headers
}

fn nothing_to_resume() -> ApError {
    ApError::new(
        StatusCode::CONFLICT,
        "nothing to resume: the thread has no pending interrupt (an approval the agent waits for)",
    )
}

/// The stream modes asked for (default `values`).
fn stream_modes(value: Option<&Value>) -> Result<Vec<String>, ApError> {
    let modes: Vec<String> = match value {
        None | Some(Value::Null) => vec!["values".to_string()],
        Some(Value::String(mode)) => vec![mode.clone()],
        Some(Value::Array(modes)) => modes
            .iter()
            .map(|m| m.as_str().map(str::to_string))
            .collect::<Option<_>>()
            .ok_or_else(|| ApError::invalid("stream_mode: a string or a list of strings"))?,
        Some(_) => {
            return Err(ApError::invalid(
                "stream_mode: a string or a list of strings",
            ));
        }
    };
    match modes.iter().find(|m| !MODES.contains(&m.as_str())) {
        Some(unknown) => Err(ApError::invalid(format!(
            "stream_mode {unknown:?} is not supported; use one or more of {}",
            MODES.join(", ")
        ))),
        None => Ok(modes),
    }
}

/// The text of a run's input: its human messages, joined by blank lines.
fn input_text(input: Option<&Value>) -> Result<String, ApError> {
    let hint = "input: {\"messages\": [{\"role\": \"user\", \"content\": \"...\"}]} is required";
    let messages = input
        .and_then(|i| i.get("messages"))
        .and_then(Value::as_array)
        .ok_or_else(|| ApError::invalid(hint))?;
    let mut texts = Vec::new();
    for message in messages {
        let role = message
            .get("role")
            .or_else(|| message.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("");
        if !matches!(role, "user" | "human") {
            return Err(ApError::invalid(format!(
                "input.messages: a message of role {role:?}; only user (human) messages can be sent to a Folio agent"
            )));
        }
        match message.get("content") {
            Some(Value::String(text)) => texts.push(text.clone()),
            Some(Value::Array(parts)) => {
                for part in parts {
                    match part.get("text").and_then(Value::as_str) {
                        Some(text) if part.get("type").and_then(Value::as_str) == Some("text") => {
                            texts.push(text.to_string());
                        }
                        _ => {
                            return Err(ApError::invalid(
                                "input.messages: only text content parts are supported",
                            ));
                        }
                    }
                }
            }
            _ => {
                return Err(ApError::invalid(
                    "input.messages: each needs a string content",
                ));
            }
        }
    }
    if texts.is_empty() {
        return Err(ApError::invalid(hint));
    }
    Ok(texts.join("\n\n"))
}

/// The decisions a `command.resume` carries, by call id: one decision for the one pending
/// interrupt, or a map from interrupt id to decision.
fn decisions(
    resume: &Value,
    pending: &std::collections::BTreeMap<String, (Option<String>, Value)>,
) -> Result<Vec<(String, ApprovalRequest)>, ApError> {
    if pending.is_empty() {
        return Err(nothing_to_resume());
    }
    let read = |value: &Value| -> Result<ApprovalRequest, ApError> {
        let value = match value {
            Value::String(decision) => json!({"decision": decision}),
            other => other.clone(),
        };
        serde_json::from_value(value).map_err(|err| {
            ApError::invalid(format!(
                "command.resume: {err}; send {{\"decision\": \"approve\"}} or {{\"decision\": \"deny\", \"reason\": \"...\"}}"
            ))
        })
    };
    let single = resume.is_string() || resume.get("decision").is_some();
    if single {
        let mut ids = pending.keys();
        return match (ids.next(), ids.next()) {
            (Some(id), None) => Ok(vec![(id.clone(), read(resume)?)]),
            _ => Err(ApError::invalid(format!(
                "command.resume: {} interrupts are pending ({}); send a map from interrupt id to decision",
                pending.len(),
                pending.keys().cloned().collect::<Vec<_>>().join(", ")
            ))),
        };
    }
    let map = resume.as_object().ok_or_else(|| {
        ApError::invalid("command.resume: a decision object, or a map from interrupt id to one")
    })?;
    map.iter()
        .map(|(id, value)| {
            if pending.contains_key(id) {
                Ok((id.clone(), read(value)?))
            } else {
                Err(ApError::invalid(format!(
                    "command.resume: no pending interrupt {id}"
                )))
            }
        })
        .collect()
}

/// The `Last-Event-ID` of a reconnecting client.
fn last_event_id(headers: &HeaderMap) -> Option<FrameId> {
    headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(stream::parse_id)
}

async fn create_assistant() -> ApResult {
    Err(ApError::invalid(
        "assistants cannot be created here: each served agent is an assistant (its slug is the assistant_id)",
    ))
}

async fn search_assistants(State(state): State<Shared>, body: Bytes) -> ApResult {
    let body = body_json(&body)?;
    let graph = string_field(&body, "graph_id")?;
    let (limit, offset) = page(&body);
    let assistant = state.assistant();
    let found = graph.is_none_or(|g| g == state.mount.slug)
        && matches(&assistant["metadata"], body.get("metadata"));
    let list: Vec<Value> = std::iter::once(assistant)
        .filter(|_| found)
        .skip(offset)
        .take(limit)
        .collect();
    Ok(Json(list).into_response())
}

async fn get_assistant(State(state): State<Shared>, Path(id): Path<String>) -> ApResult {
    state.check_assistant(&id)?;
    Ok(Json(state.assistant()).into_response())
}

async fn create_thread(
    State(state): State<Shared>,
    Extension(Caller(caller)): Extension<Caller>,
    body: Bytes,
) -> ApResult {
    let body = body_json(&body)?;
    let thread = state.create_thread(&caller, &body).await?;
    Ok(Json(Inner::thread_json(&thread, &[])).into_response())
}

async fn search_threads(
    State(state): State<Shared>,
    Extension(Caller(caller)): Extension<Caller>,
    body: Bytes,
) -> ApResult {
    let body = body_json(&body)?;
    let status = string_field(&body, "status")?.map(str::to_string);
    let (limit, offset) = page(&body);
    let mut threads: Vec<Thread> = state
        .threads
        .list(&caller)
        .await?
        .into_iter()
        .filter(|t| matches(&t.metadata, body.get("metadata")))
        .collect();
    threads.sort_by_key(|t| std::cmp::Reverse(t.created_at));
    let mut out = Vec::new();
    for listed in threads {
        // Deleted since it was listed: left out.
        let Some(thread) = state.threads.get(&caller, &listed.thread_id).await? else {
            continue;
        };
        let events = state.events(&caller, &thread).await?;
        let json = Inner::thread_json(&thread, &events);
        if status.as_deref().is_none_or(|s| json["status"] == s) {
            out.push(json);
        }
    }
    let out: Vec<Value> = out.into_iter().skip(offset).take(limit).collect();
    Ok(Json(out).into_response())
}

async fn get_thread(
    State(state): State<Shared>,
    Extension(Caller(caller)): Extension<Caller>,
    Path(thread_id): Path<String>,
) -> ApResult {
    let thread = state.thread(&caller, &thread_id).await?;
    let events = state.events(&caller, &thread).await?;
    Ok(Json(Inner::thread_json(&thread, &events)).into_response())
}

async fn delete_thread(
    State(state): State<Shared>,
    Extension(Caller(caller)): Extension<Caller>,
    Path(thread_id): Path<String>,
) -> ApResult {
    let thread = state.thread(&caller, &thread_id).await?;
    if !state.threads.delete(&caller, &thread_id).await? {
        return Err(ApError::no_thread(&thread_id));
    }
    state
        .starting
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&(caller.clone(), thread_id.clone()));
    if let Some(session) = thread.session_id {
        match state
            .mount
            .manager
            .sessions()
            .delete(&caller, &session)
            .await
        {
            Ok(()) | Err(ManagerError::NotFound(_)) => {}
            Err(err) => return Err(err.into()),
        }
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn thread_state(
    State(state): State<Shared>,
    Extension(Caller(caller)): Extension<Caller>,
    Path(thread_id): Path<String>,
) -> ApResult {
    let thread = state.thread(&caller, &thread_id).await?;
    let events = state.events(&caller, &thread).await?;
    Ok(Json(Inner::current_state(&thread, &events)).into_response())
}

/// `GET /threads/{id}/state/{checkpoint_id}`: the state at one checkpoint.
async fn checkpoint_state(
    State(state): State<Shared>,
    Extension(Caller(caller)): Extension<Caller>,
    Path((thread_id, checkpoint_id)): Path<(String, String)>,
) -> ApResult {
    state.state_at(&caller, &thread_id, &checkpoint_id).await
}

/// `POST /threads/{id}/state/checkpoint` with `{"checkpoint": {"checkpoint_id": ...}}`.
async fn checkpoint_state_post(
    State(state): State<Shared>,
    Extension(Caller(caller)): Extension<Caller>,
    Path(thread_id): Path<String>,
    body: Bytes,
) -> ApResult {
    let body = body_json(&body)?;
    let id = checkpoint_id(body.get("checkpoint"))
        .ok_or_else(|| ApError::invalid("checkpoint: {\"checkpoint_id\": \"<id>\"} is required"))?;
    state.state_at(&caller, &thread_id, &id).await
}

/// The checkpoint id of a checkpoint or config object (`{"checkpoint_id"}`,
/// `{"configurable": {"checkpoint_id"}}`) or of a bare string.
fn checkpoint_id(value: Option<&Value>) -> Option<String> {
    let value = value?;
    let id = value
        .get("configurable")
        .unwrap_or(value)
        .get("checkpoint_id")
        .unwrap_or(value);
    match id {
        Value::String(id) => Some(id.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

async fn update_state() -> ApResult {
    Err(ApError::invalid(
        "updating a thread's state is not supported: a Folio session's log is append-only; send a run with input instead",
    ))
}

async fn thread_history(
    State(state): State<Shared>,
    Extension(Caller(caller)): Extension<Caller>,
    Path(thread_id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    body: Bytes,
) -> ApResult {
    // GET reads the query; POST (the SDK's get_history) a JSON body.
    let body = if body.is_empty() {
        json!({})
    } else {
        body_json(&body)?
    };
    let limit = match body.get("limit") {
        Some(limit) => limit
            .as_u64()
            .ok_or_else(|| ApError::invalid("limit: a number of states"))?,
        None => match query.get("limit") {
            Some(limit) => limit
                .parse()
                .map_err(|_| ApError::invalid("limit: a number of states"))?,
            None => 10,
        },
    };
    let number = |id: Option<String>, name: &str| -> Result<Option<u64>, ApError> {
        id.map(|id| {
            id.parse().map_err(|_| {
                ApError::invalid(format!(
                    "{name}: a checkpoint id of this thread (a number, as get_state answers it)"
                ))
            })
        })
        .transpose()
    };
    let before = number(
        checkpoint_id(body.get("before")).or_else(|| query.get("before").cloned()),
        "before",
    )?;
    let only = number(checkpoint_id(body.get("checkpoint")), "checkpoint")?;
    let thread = state.thread(&caller, &thread_id).await?;
    let events = state.events(&caller, &thread).await?;
    let limit = usize::try_from(limit).unwrap_or(usize::MAX).min(1000);
    let history: Vec<Value> = Inner::history(&thread, &events, limit, before, only)
        .into_iter()
        .filter(|s| matches(&s["metadata"], body.get("metadata")))
        .collect();
    Ok(Json(history).into_response())
}

async fn create_run(
    State(state): State<Shared>,
    Extension(Caller(caller)): Extension<Caller>,
    Path(thread_id): Path<String>,
    body: Bytes,
) -> ApResult {
    let body = body_json(&body)?;
    let run = state.start_run(&caller, &thread_id, &body).await?;
    let thread = state.thread(&caller, &thread_id).await?;
    let events = state.events(&caller, &thread).await?;
    let json = run.to_json(run.status(&events));
    Ok((content_location(&run), Json(json)).into_response())
}

async fn stream_run(
    State(state): State<Shared>,
    Extension(Caller(caller)): Extension<Caller>,
    Path(thread_id): Path<String>,
    body: Bytes,
) -> ApResult {
    let body = body_json(&body)?;
    let run = state.start_run(&caller, &thread_id, &body).await?;
    let thread = state.thread(&caller, &thread_id).await?;
    let modes = run.stream_modes.clone();
    state.sse(&caller, &thread, run, modes, None).await
}

async fn wait_run(
    State(state): State<Shared>,
    Extension(Caller(caller)): Extension<Caller>,
    Path(thread_id): Path<String>,
    body: Bytes,
) -> ApResult {
    let body = body_json(&body)?;
    let run = state.start_run(&caller, &thread_id, &body).await?;
    let thread = state.thread(&caller, &thread_id).await?;
    state.outcome(&caller, &thread, &run).await
}

async fn list_runs(
    State(state): State<Shared>,
    Extension(Caller(caller)): Extension<Caller>,
    Path(thread_id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> ApResult {
    let thread = state.thread(&caller, &thread_id).await?;
    let events = state.events(&caller, &thread).await?;
    let number = |name: &str, default: usize| {
        query
            .get(name)
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let runs: Vec<Value> = thread
        .runs
        .iter()
        .rev()
        .map(|r| r.to_json(r.status(&events)))
        .filter(|r| {
            query
                .get("status")
                .is_none_or(|s| r["status"] == s.as_str())
        })
        .skip(number("offset", 0))
        .take(number("limit", 10))
        .collect();
    Ok(Json(runs).into_response())
}

async fn get_run(
    State(state): State<Shared>,
    Extension(Caller(caller)): Extension<Caller>,
    Path((thread_id, run_id)): Path<(String, String)>,
) -> ApResult {
    let (thread, run) = state.run(&caller, &thread_id, &run_id).await?;
    let events = state.events(&caller, &thread).await?;
    Ok(Json(run.to_json(run.status(&events))).into_response())
}

async fn join_run(
    State(state): State<Shared>,
    Extension(Caller(caller)): Extension<Caller>,
    Path((thread_id, run_id)): Path<(String, String)>,
) -> ApResult {
    let (thread, run) = state.run(&caller, &thread_id, &run_id).await?;
    state.outcome(&caller, &thread, &run).await
}

async fn join_stream(
    State(state): State<Shared>,
    Extension(Caller(caller)): Extension<Caller>,
    Path((thread_id, run_id)): Path<(String, String)>,
    Query(query): Query<Vec<(String, String)>>,
    headers: HeaderMap,
) -> ApResult {
    let (thread, run) = state.run(&caller, &thread_id, &run_id).await?;
    let asked: Vec<String> = query
        .iter()
        .filter(|(k, v)| k == "stream_mode" && !v.is_empty() && v != "run_modes")
        .map(|(_, v)| v.clone())
        .collect();
    let modes = if asked.is_empty() {
        run.stream_modes.clone()
    } else {
        stream_modes(Some(&json!(asked)))?
    };
    let after = last_event_id(&headers);
    state.sse(&caller, &thread, run, modes, after).await
}

async fn cancel_run(
    State(state): State<Shared>,
    Extension(Caller(caller)): Extension<Caller>,
    Path((thread_id, run_id)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> ApResult {
    if query.get("action").is_some_and(|a| a == "rollback") {
        return Err(ApError::invalid(
            "action \"rollback\" is not supported: Folio keeps every event of a session; cancel with action \"interrupt\"",
        ));
    }
    let (thread, run) = state.run(&caller, &thread_id, &run_id).await?;
    let events = state.events(&caller, &thread).await?;
    let status = run.status(&events);
    if status.ended() {
        return Err(ApError::new(
            StatusCode::CONFLICT,
            format!("run {run_id} is not running (it is {})", status.as_str()),
        ));
    }
    if let Some(session) = &thread.session_id {
        state.mount.manager.turns().stop(&caller, session).await?;
    }
    if query.get("wait").is_some_and(|w| w == "true" || w == "1") {
        state.wait(&caller, &thread, &run).await?;
    }
    Ok(StatusCode::ACCEPTED.into_response())
}

/// A thread for a stateless run (kept, like a thread made with `POST /threads`).
async fn stateless_thread(state: &Inner, caller: &str, body: &Value) -> Result<String, ApError> {
    // Checked before a thread is made for it.
    string_field(body, "assistant_id")?
        .ok_or_else(|| ApError::invalid("assistant_id: required (the agent's slug)"))
        .and_then(|id| state.check_assistant(id))?;
    let thread = state.create_thread(caller, &json!({})).await?;
    Ok(thread.thread_id)
}

async fn stateless_create(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    body: Bytes,
) -> ApResult {
    let value = body_json(&body)?;
    let thread_id = stateless_thread(&state, &caller.0, &value).await?;
    create_run(State(state), Extension(caller), Path(thread_id), body).await
}

async fn stateless_stream(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    body: Bytes,
) -> ApResult {
    let value = body_json(&body)?;
    let thread_id = stateless_thread(&state, &caller.0, &value).await?;
    stream_run(State(state), Extension(caller), Path(thread_id), body).await
}

async fn stateless_wait(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    body: Bytes,
) -> ApResult {
    let value = body_json(&body)?;
    let thread_id = stateless_thread(&state, &caller.0, &value).await?;
    wait_run(State(state), Extension(caller), Path(thread_id), body).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_is_the_human_messages_text_and_anything_else_says_what_to_send() {
        let input = json!({"messages": [
            {"role": "user", "content": "one"},
            {"type": "human", "content": [{"type": "text", "text": "two"}]},
        ]});
        assert_eq!(input_text(Some(&input)).unwrap(), "one\n\ntwo");
        let ai = json!({"messages": [{"role": "assistant", "content": "x"}]});
        assert!(
            input_text(Some(&ai))
                .unwrap_err()
                .1
                .contains("only user (human)")
        );
        assert!(
            input_text(None)
                .unwrap_err()
                .1
                .contains("input: {\"messages\"")
        );
        let image = json!({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]});
        assert!(
            input_text(Some(&image))
                .unwrap_err()
                .1
                .contains("only text")
        );
    }

    #[test]
    fn stream_modes_default_to_values_and_unknown_ones_are_named() {
        assert_eq!(stream_modes(None).unwrap(), vec!["values"]);
        assert_eq!(
            stream_modes(Some(&json!(["updates", "messages-tuple"]))).unwrap(),
            vec!["updates", "messages-tuple"]
        );
        let err = stream_modes(Some(&json!("tasks"))).unwrap_err();
        assert_eq!(err.0, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(err.1.contains("\"tasks\""), "{}", err.1);
    }

    #[test]
    fn a_resume_answers_the_one_pending_interrupt_or_a_map_of_them() {
        let one: std::collections::BTreeMap<String, (Option<String>, Value)> =
            [("call_1".to_string(), (None, json!({})))].into();
        let answered = decisions(&json!({"decision": "approve"}), &one).unwrap();
        assert_eq!(answered[0].0, "call_1");
        assert_eq!(decisions(&json!("deny"), &one).unwrap().len(), 1);
        assert!(
            decisions(&json!({"decision": "maybe"}), &one)
                .unwrap_err()
                .1
                .contains("approve")
        );
        let mut two = one.clone();
        two.insert("call_2".into(), (None, json!({})));
        assert!(
            decisions(&json!({"decision": "approve"}), &two)
                .unwrap_err()
                .1
                .contains("map")
        );
        let map = json!({"call_1": {"decision": "approve"}, "call_2": {"decision": "deny"}});
        assert_eq!(decisions(&map, &two).unwrap().len(), 2);
        let empty = std::collections::BTreeMap::new();
        assert_eq!(decisions(&map, &empty).unwrap_err().0, StatusCode::CONFLICT);
        assert_eq!(stream::parse_id("12-3"), Some((12, 3)));
        assert_eq!(stream::parse_id("x"), None);
    }
}
