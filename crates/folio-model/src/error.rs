//! The one error type of model providers.

use std::time::Duration;

/// Which timeout fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutKind {
    /// Establishing the connection.
    Connect,
    /// Waiting for the first byte of the response.
    FirstByte,
    /// Waiting for the next chunk of a streaming response.
    Idle,
}

impl std::fmt::Display for TimeoutKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TimeoutKind::Connect => "connect",
            TimeoutKind::FirstByte => "first-byte",
            TimeoutKind::Idle => "idle stream",
        })
    }
}

/// Why a model call failed.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The provider spec or configuration is unusable.
    #[error("invalid model configuration: {0}")]
    Config(String),
    /// The API key variable is not set.
    #[error("{var} is not set: export it or set api_key_env in agent.toml [provider]")]
    MissingKey {
        /// The environment variable that must hold the key.
        var: String,
    },
    /// The provider answered with an HTTP error status.
    #[error("{provider}: HTTP {status}: {message}")]
    Http {
        /// Provider name.
        provider: String,
        /// HTTP status code.
        status: u16,
        /// Error message or body excerpt.
        message: String,
        /// `Retry-After` in seconds, when the server sent one.
        retry_after: Option<Duration>,
    },
    /// The connection failed before a response arrived.
    #[error("{provider}: connection failed: {message}")]
    Connect {
        /// Provider name.
        provider: String,
        /// What failed.
        message: String,
    },
    /// A timeout fired.
    #[error("{provider}: {kind} timeout after {}s", after.as_secs_f64())]
    Timeout {
        /// Provider name.
        provider: String,
        /// Which timeout.
        kind: TimeoutKind,
        /// The configured limit.
        after: Duration,
    },
    /// The stream broke after it started (never retried).
    #[error("{provider}: stream failed: {message}")]
    Stream {
        /// Provider name.
        provider: String,
        /// What failed.
        message: String,
    },
    /// The provider sent data that does not decode as its wire format.
    #[error("{provider}: invalid {what} ({source}): {excerpt}")]
    Malformed {
        /// Provider name.
        provider: String,
        /// What was being read (`stream event`, `stream chunk`).
        what: &'static str,
        /// The start of the offending data, on one line.
        excerpt: String,
        /// Why it did not decode (names the field or position).
        #[source]
        source: serde_json::Error,
    },
    /// The provider reported an error inside a started stream (e.g. Anthropic's `overloaded_error`).
    #[error("{provider}: error in stream: {}", kind_and_message(kind.as_deref(), message))]
    ErrorEvent {
        /// Provider name.
        provider: String,
        /// The provider's error type, when it sent one.
        kind: Option<String>,
        /// The provider's message.
        message: String,
    },
    /// Retries did not help.
    #[error("gave up after {attempts} attempts: {last}")]
    RetriesExhausted {
        /// How many attempts were made.
        attempts: u32,
        /// The last attempt's error.
        last: Box<ModelError>,
    },
    /// A tool call's arguments were not valid JSON.
    #[error("model sent invalid JSON arguments for tool {tool}: {source}")]
    InvalidToolArguments {
        /// Tool name.
        tool: String,
        /// The JSON parse error.
        #[source]
        source: serde_json::Error,
    },
    /// The cancellation token fired.
    #[error("model request cancelled")]
    Cancelled,
    /// A replayed request differs from the recorded one.
    #[error(
        "replay: request {index} differs from the recording in {path} (- recorded, + now):\n{diff}"
    )]
    ReplayMismatch {
        /// Fixture path.
        path: String,
        /// 0-based request number.
        index: usize,
        /// Line diff of the pretty JSON of messages and tools.
        diff: String,
    },
    /// The agent asked more requests than the fixture holds.
    #[error("replay: request {index} asked but {path} holds only {recorded} recorded responses")]
    ReplayExhausted {
        /// Fixture path.
        path: String,
        /// 0-based request number.
        index: usize,
        /// Number of recorded exchanges.
        recorded: usize,
    },
    /// A fixture could not be read, parsed or written.
    #[error("fixture {path}: {what}: {source}")]
    Fixture {
        /// Fixture path.
        path: String,
        /// What was being done (`cannot read`, `line 3`, …).
        what: String,
        /// The I/O or JSON error.
        #[source]
        source: FixtureError,
    },
    /// The HTTP client could not be built (TLS backend or system configuration).
    #[error("invalid model configuration: cannot build HTTP client: {0}")]
    HttpClient(#[source] reqwest::Error),
}

/// The cause of a [`ModelError::Fixture`].
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// Reading or writing the file failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A line is not a recorded exchange, or an exchange does not serialize.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A session id that cannot name a fixture file.
    #[error("session id {0:?} cannot name a fixture file")]
    SessionId(String),
}

/// `kind: message`, or the message alone when the provider sent no kind.
fn kind_and_message(kind: Option<&str>, message: &str) -> String {
    match kind {
        Some(kind) => format!("{kind}: {message}"),
        None => message.to_string(),
    }
}

/// Phrases providers use when a request does not fit the model's context window (OpenAI
/// `context_length_exceeded`, Anthropic "prompt is too long", llama.cpp and vLLM wordings).
const CONTEXT_OVERFLOW: &[&str] = &[
    "context_length_exceeded",
    "context length",
    "maximum context",
    "context window",
    "prompt is too long",
    "too many tokens",
    "exceeds the context",
];

impl ModelError {
    /// Whether the provider refused the request because it does not fit the context window:
    /// an HTTP 400/413/422, or an error in the stream (the Responses API's `response.failed`
    /// with code `context_length_exceeded`), saying so.
    pub fn is_context_overflow(&self) -> bool {
        let says_so = |text: &str| {
            let text = text.to_ascii_lowercase();
            CONTEXT_OVERFLOW.iter().any(|phrase| text.contains(phrase))
        };
        match self {
            ModelError::Http {
                status: 400 | 413 | 422,
                message,
                ..
            } => says_so(message),
            ModelError::ErrorEvent { kind, message, .. } => {
                kind.as_deref().is_some_and(says_so) || says_so(message)
            }
            _ => false,
        }
    }

    /// Whether a retry may help (429, 5xx, connection errors), before any token streamed.
    pub(crate) fn is_retryable(&self) -> bool {
        match self {
            ModelError::Http { status, .. } => *status == 429 || *status >= 500,
            ModelError::Connect { .. } => true,
            ModelError::Timeout { kind, .. } => *kind == TimeoutKind::Connect,
            ModelError::Config(_)
            | ModelError::MissingKey { .. }
            | ModelError::Stream { .. }
            | ModelError::Malformed { .. }
            | ModelError::ErrorEvent { .. }
            | ModelError::HttpClient(_)
            | ModelError::RetriesExhausted { .. }
            | ModelError::InvalidToolArguments { .. }
            | ModelError::Cancelled
            | ModelError::ReplayMismatch { .. }
            | ModelError::ReplayExhausted { .. }
            | ModelError::Fixture { .. } => false,
        }
    }
}
