//! The mock model server: an axum app on 127.0.0.1:0 answering both wire formats from a script.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt as _;
use bytes::Bytes;
use futures::StreamExt;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::Notify;

use crate::reply::{MockReply, Outcome, ReplySpec};
use crate::wire;

/// A request the mock server received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// Request path, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Headers, names lower-cased.
    pub headers: BTreeMap<String, String>,
    /// The JSON body (`null` when the body was not JSON).
    pub body: Value,
    /// When it arrived.
    pub at: Instant,
}

impl RecordedRequest {
    /// A header's value by (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    /// The `messages` of the request body (OpenAI Chat Completions or Anthropic Messages).
    ///
    /// # Panics
    /// When the body has no `messages` list.
    pub fn messages(&self) -> Vec<ChatMessage> {
        /// The part of a chat request body read here.
        #[derive(Deserialize)]
        struct Chat {
            messages: Vec<ChatMessage>,
        }
        serde_json::from_value::<Chat>(self.body.clone())
            .unwrap_or_else(|err| panic!("not a chat request ({err}): {}", self.body))
            .messages
    }

    /// The texts of the request's user messages, in order.
    ///
    /// # Panics
    /// As [`RecordedRequest::messages`].
    pub fn user_texts(&self) -> Vec<String> {
        self.messages()
            .iter()
            .filter(|message| message.role == "user")
            .map(ChatMessage::text)
            .collect()
    }

    /// The names of the tools the request offers, in order (OpenAI `function.name` or
    /// Anthropic `name`); empty when it offers none (`tools` absent or `null`).
    ///
    /// # Panics
    /// When `tools` is not a list of tool definitions.
    pub fn tool_names(&self) -> Vec<String> {
        /// An OpenAI `{"type":"function","function":{"name":..}}` or Anthropic `{"name":..}` tool.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Tool {
            OpenAi { function: Named },
            Anthropic { name: String },
        }
        /// The part of an OpenAI function definition read here.
        #[derive(Deserialize)]
        struct Named {
            name: String,
        }
        /// The part of a chat request body read here.
        #[derive(Deserialize)]
        struct Offered {
            #[serde(default)]
            tools: Option<Vec<Tool>>,
        }
        serde_json::from_value::<Offered>(self.body.clone())
            .unwrap_or_else(|err| panic!("not a list of tools ({err}): {}", self.body))
            .tools
            .unwrap_or_default()
            .into_iter()
            .map(|tool| match tool {
                Tool::OpenAi { function } => function.name,
                Tool::Anthropic { name } => name,
            })
            .collect()
    }
}

/// One message of a recorded chat request, as the model's wire format carries it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ChatMessage {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// A string, a list of content blocks, or `null` (an assistant message with only tool calls).
    #[serde(default)]
    pub content: Value,
}

impl ChatMessage {
    /// The content as text: a string as it is, `null` as nothing, blocks as their JSON.
    pub fn text(&self) -> String {
        match &self.content {
            Value::String(text) => text.clone(),
            Value::Null => String::new(),
            blocks => blocks.to_string(),
        }
    }
}

/// A client that went away before its streamed reply was fully sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disconnect {
    /// 0-based number of the request whose stream was abandoned.
    pub request: usize,
    /// When the server noticed.
    pub at: Instant,
}

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<MockReply>>,
    requests: Mutex<Vec<RecordedRequest>>,
    disconnects: Mutex<Vec<Disconnect>>,
    disconnected: Notify,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A scripted model server speaking OpenAI Chat Completions (`/v1/chat/completions`), OpenAI
/// Responses (`/v1/responses`) and Anthropic Messages (`/v1/messages`).
///
/// Each request takes the next [`MockReply`] from the script (FIFO); an empty script answers
/// `500` with a message saying so, so a test never hangs.
pub struct MockModelServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MockModelServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    OpenAi,
    Responses,
    Anthropic,
}

impl MockModelServer {
    /// Starts a server on 127.0.0.1 with a free port.
    ///
    /// # Panics
    /// When no loopback port can be bound (a broken test machine, not a test failure).
    pub async fn start() -> MockModelServer {
        MockModelServer::start_on(0)
            .await
            .expect("mock model server: cannot bind 127.0.0.1:0")
    }

    /// Starts a server on 127.0.0.1:`port` (`0`: a free port).
    ///
    /// Besides the two model routes it serves a control API for scripts in other languages
    /// (the `folio-mock-model` binary): `POST /mock/replies` appends a JSON list of
    /// [`ReplySpec`]s to the script, `GET /mock/requests` answers the request bodies received so
    /// far (`[{"path", "body"}]`).
    ///
    /// # Errors
    /// When the port cannot be bound.
    pub async fn start_on(port: u16) -> std::io::Result<MockModelServer> {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/v1/chat/completions", post(openai))
            .route("/v1/messages", post(anthropic))
            .route("/v1/responses", post(responses))
            .route("/mock/replies", post(push_replies))
            .route("/mock/requests", get(list_requests))
            .fallback(not_found)
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        // Nagle's algorithm off, as `folio serve` has it: each streamed chunk is its own small
        // write, which a kept-alive connection would otherwise hold until the client's delayed
        // ACK (~40 ms a model call).
        let listener = listener.tap_io(|tcp: &mut tokio::net::TcpStream| {
            if let Err(error) = tcp.set_nodelay(true) {
                eprintln!("mock model server: cannot set TCP_NODELAY: {error}");
            }
        });
        let task = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                eprintln!("mock model server stopped: {error}");
            }
        });
        Ok(MockModelServer { addr, shared, task })
    }

    /// Appends a reply to the script.
    pub fn push(&self, reply: MockReply) -> &Self {
        lock(&self.shared.script).push_back(reply);
        self
    }

    /// Base URL for OpenAI-style clients, e.g. `http://127.0.0.1:PORT/v1`.
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Base URL for Anthropic clients, e.g. `http://127.0.0.1:PORT`.
    pub fn anthropic_base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// How many scripted replies are still waiting.
    pub fn remaining(&self) -> usize {
        lock(&self.shared.script).len()
    }

    /// Every client disconnect seen during a streamed reply.
    pub fn disconnects(&self) -> Vec<Disconnect> {
        lock(&self.shared.disconnects).clone()
    }

    /// Waits up to `timeout` for a client to abandon a streamed reply; returns the first one.
    pub async fn wait_for_disconnect(&self, timeout: Duration) -> Option<Disconnect> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.shared.disconnected.notified();
            if let Some(first) = self.disconnects().first() {
                return Some(*first);
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.disconnects().first().copied();
            }
        }
    }
}

async fn openai(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(shared, Format::OpenAi, uri, headers, body).await
}

async fn responses(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(shared, Format::Responses, uri, headers, body).await
}

async fn anthropic(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(shared, Format::Anthropic, uri, headers, body).await
}

/// `POST /mock/replies`: appends each [`ReplySpec`] of the JSON list to the script.
async fn push_replies(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    match serde_json::from_slice::<Vec<ReplySpec>>(&body) {
        Ok(specs) => {
            let count = specs.len();
            lock(&shared.script).extend(specs.into_iter().map(MockReply::from));
            axum::Json(serde_json::json!({ "queued": count })).into_response()
        }
        Err(error) => (
            StatusCode::BAD_REQUEST,
            format!("mock model server: POST /mock/replies takes a JSON list of replies ({error})"),
        )
            .into_response(),
    }
}

/// `GET /mock/requests`: the path and JSON body of every model request so far, in order.
async fn list_requests(State(shared): State<Arc<Shared>>) -> Response {
    let requests: Vec<Value> = lock(&shared.requests)
        .iter()
        .map(|request| serde_json::json!({ "path": request.path, "body": request.body }))
        .collect();
    axum::Json(requests).into_response()
}

async fn not_found(uri: Uri) -> Response {
    let message = format!("mock model server: no route {}", uri.path());
    (
        StatusCode::NOT_FOUND,
        axum::Json(wire::openai_error(404, &message)),
    )
        .into_response()
}

fn error_response(
    format: Format,
    status: u16,
    message: &str,
    retry_after: Option<&str>,
) -> Response {
    let body = match format {
        Format::OpenAi | Format::Responses => wire::openai_error(status, message),
        Format::Anthropic => wire::anthropic_error(status, message),
    };
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, axum::Json(body)).into_response();
    if let Some(value) = retry_after.and_then(|value| HeaderValue::from_str(value).ok()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

async fn answer(
    shared: Arc<Shared>,
    format: Format,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let recorded = RecordedRequest {
        path: uri.path().to_string(),
        headers: headers
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_ascii_lowercase(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: body.clone(),
        at: Instant::now(),
    };
    let number = {
        let mut requests = lock(&shared.requests);
        requests.push(recorded);
        requests.len() - 1
    };
    let Some(reply) = lock(&shared.script).pop_front() else {
        let message = format!(
            "mock model server: no scripted reply left for request #{number} (push a MockReply)"
        );
        return error_response(format, 500, &message, None);
    };
    if !reply.first_byte_delay.is_zero() {
        tokio::time::sleep(reply.first_byte_delay).await;
    }
    let stream = match &reply.outcome {
        Outcome::Status {
            status,
            retry_after,
            message,
        } => return error_response(format, *status, message, retry_after.as_deref()),
        Outcome::Stream(stream) => stream,
    };
    let options = StreamOptions::of(&body);
    let model = options.model.as_deref().unwrap_or("mock-model");
    if !options.stream {
        match format {
            Format::OpenAi => {
                let completion = wire::openai_completion(stream, model, number);
                return (StatusCode::OK, axum::Json(completion)).into_response();
            }
            Format::Responses => {
                let response = wire::responses_whole(stream, model, number);
                return (StatusCode::OK, axum::Json(response)).into_response();
            }
            Format::Anthropic => {}
        }
    }
    let chunks = match format {
        Format::OpenAi => {
            let include_usage = options
                .stream_options
                .is_some_and(|options| options.include_usage);
            wire::openai_chunks(stream, model, number, include_usage)
        }
        Format::Responses => wire::responses_events(stream, model, number),
        Format::Anthropic => wire::anthropic_events(stream, model, number),
    };
    let body = chunk_body(shared, number, chunks, reply.chunk_delay, reply.drop_after);
    let mut response = Response::new(body);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// What the mock reads of a model request to shape its answer (absent fields: defaults).
#[derive(Default, Deserialize)]
struct StreamOptions {
    /// The model named by the request.
    #[serde(default)]
    model: Option<String>,
    /// Whether an OpenAI-format (Chat Completions or Responses) answer is streamed.
    #[serde(default)]
    stream: bool,
    /// OpenAI's `stream_options`.
    #[serde(default)]
    stream_options: Option<UsageOption>,
}

/// OpenAI's `stream_options.include_usage`.
#[derive(Deserialize)]
struct UsageOption {
    #[serde(default)]
    include_usage: bool,
}

impl StreamOptions {
    /// The options of a request body; defaults when the body is not a JSON object of that shape.
    fn of(body: &Value) -> StreamOptions {
        StreamOptions::deserialize(body).unwrap_or_default()
    }
}

/// Records a disconnect when the body is dropped before it finished or failed on purpose.
struct DisconnectGuard {
    shared: Arc<Shared>,
    request: usize,
    settled: AtomicBool,
}

impl Drop for DisconnectGuard {
    fn drop(&mut self) {
        if !self.settled.load(Ordering::SeqCst) {
            lock(&self.shared.disconnects).push(Disconnect {
                request: self.request,
                at: Instant::now(),
            });
            self.shared.disconnected.notify_waiters();
        }
    }
}

/// Mock-side abort of a stream (the `drop_after_chunks` failure mode).
#[derive(Debug)]
struct DroppedOnPurpose;

impl std::fmt::Display for DroppedOnPurpose {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("mock model server dropped the connection on purpose")
    }
}

impl std::error::Error for DroppedOnPurpose {}

fn chunk_body(
    shared: Arc<Shared>,
    request: usize,
    chunks: Vec<Bytes>,
    delay: Duration,
    drop_after: Option<usize>,
) -> Body {
    let guard = DisconnectGuard {
        shared,
        request,
        settled: AtomicBool::new(false),
    };
    let total = chunks.len();
    let state = (chunks.into_iter().enumerate(), guard);
    let stream = futures::stream::unfold(state, move |(mut chunks, guard)| async move {
        if guard.settled.load(Ordering::SeqCst) {
            return None;
        }
        let Some((position, chunk)) = chunks.next() else {
            guard.settled.store(true, Ordering::SeqCst);
            return None;
        };
        if drop_after.is_some_and(|limit| position >= limit) {
            guard.settled.store(true, Ordering::SeqCst);
            return Some((Err(DroppedOnPurpose), (chunks, guard)));
        }
        if position > 0 && !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        if position + 1 == total {
            guard.settled.store(true, Ordering::SeqCst);
        }
        Some((Ok::<Bytes, DroppedOnPurpose>(chunk), (chunks, guard)))
    });
    Body::from_stream(stream.boxed())
}
