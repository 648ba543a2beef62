//! The HTTP side shared by the OpenAI and Anthropic clients: retries, timeouts, SSE streaming and
//! cancellation. Each client supplies the request and a [`WireDecoder`] for its event format.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use eventsource_stream::{Event as SseEvent, Eventsource};
use futures::StreamExt;
use futures::stream::BoxStream;
use tokio_util::sync::CancellationToken;

use crate::config::{ProviderConfig, RetryPolicy, Timeouts};
use crate::{Delta, DeltaStream, ModelError, TimeoutKind};

/// Turns server-sent events of one wire format into deltas.
pub(crate) trait WireDecoder: Send + 'static {
    /// Decodes one event.
    fn decode(&mut self, event: &SseEvent) -> Result<Vec<Delta>, ModelError>;
    /// Called when the body ends before [`WireDecoder::is_done`]: final deltas, or an error when
    /// the response is incomplete.
    fn end_of_body(&mut self) -> Result<Vec<Delta>, ModelError>;
    /// Whether the response is complete (no more events are expected).
    fn is_done(&self) -> bool;
}

/// A body's server-sent events; an error is the body breaking (or not being SSE).
type SseStream = BoxStream<'static, Result<SseEvent, Box<dyn std::error::Error + Send + Sync>>>;

/// An HTTP client with the provider's timeouts and retry policy.
#[derive(Debug, Clone)]
pub(crate) struct HttpTransport {
    provider: &'static str,
    client: reqwest::Client,
    timeouts: Timeouts,
    retry: RetryPolicy,
    stream: bool,
}

/// Largest excerpt of an error body kept in a message.
const BODY_EXCERPT: usize = 500;

impl HttpTransport {
    /// A transport for `provider` (used in messages) with `config`'s timeouts and retries.
    pub(crate) fn new(provider: &'static str, config: &ProviderConfig) -> Result<Self, ModelError> {
        let client = reqwest::Client::builder()
            .connect_timeout(config.timeouts.connect)
            .build()
            .map_err(ModelError::HttpClient)?;
        Ok(HttpTransport {
            provider,
            client,
            timeouts: config.timeouts,
            retry: config.retry,
            stream: config.stream,
        })
    }

    /// The provider name used in messages.
    pub(crate) fn provider(&self) -> &'static str {
        self.provider
    }

    /// Whether requests ask for a streamed response ([`ProviderConfig::stream`]).
    pub(crate) fn streams(&self) -> bool {
        self.stream
    }

    /// The underlying client, to build requests.
    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// Sends the request built by `build` (retrying before the first event) and streams the
    /// response through `decoder`.
    pub(crate) async fn stream<D: WireDecoder>(
        &self,
        build: impl Fn() -> reqwest::RequestBuilder,
        decoder: D,
        cancel: CancellationToken,
    ) -> Result<DeltaStream, ModelError> {
        let max_attempts = self.retry.max_attempts.max(1);
        let mut attempt = 1;
        let (events, first) = loop {
            let outcome = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(ModelError::Cancelled),
                outcome = self.attempt(build()) => outcome,
            };
            match outcome {
                Ok(started) => break started,
                Err(error) if error.is_retryable() && attempt < max_attempts => {
                    let retry_after = match &error {
                        ModelError::Http { retry_after, .. } => *retry_after,
                        _ => None,
                    };
                    let delay = self.retry.delay(attempt, retry_after);
                    tracing::warn!(
                        provider = self.provider,
                        attempt,
                        max_attempts,
                        delay_ms = delay.as_millis() as u64,
                        "model request failed, retrying: {error}"
                    );
                    tokio::select! {
                        biased;
                        _ = cancel.cancelled() => return Err(ModelError::Cancelled),
                        _ = tokio::time::sleep(delay) => {}
                    }
                    attempt += 1;
                }
                Err(error) if error.is_retryable() && attempt > 1 => {
                    return Err(ModelError::RetriesExhausted {
                        attempts: attempt,
                        last: Box::new(error),
                    });
                }
                Err(error) => return Err(error),
            }
        };
        Ok(StreamState::start(
            self.provider,
            decoder,
            (Some(first), events),
            cancel,
            self.timeouts.idle,
        ))
    }

    /// One attempt: send, check the status, and wait for the first event (first-byte timeout).
    /// A JSON body (a non-streamed answer) is the first and only event.
    async fn attempt(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<(SseStream, SseEvent), ModelError> {
        let provider = self.provider;
        // The model call's span goes with the request, so the provider's traces join ours.
        let request = folio_telemetry::trace_headers()
            .into_iter()
            .fold(request, |request, (name, value)| {
                request.header(name, value)
            });
        let started = async {
            let response = request
                .header(
                    reqwest::header::ACCEPT,
                    if self.stream {
                        "text/event-stream"
                    } else {
                        "application/json"
                    },
                )
                .send()
                .await
                .map_err(|error| self.send_error(&error))?;
            let status = response.status();
            if !status.is_success() {
                let retry_after = response
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|value| value.to_str().ok())
                    .and_then(|value| value.trim().parse::<f64>().ok())
                    .filter(|seconds| seconds.is_finite() && *seconds >= 0.0)
                    .map(Duration::from_secs_f64);
                let body = response.text().await.unwrap_or_default();
                return Err(ModelError::Http {
                    provider: provider.to_string(),
                    status: status.as_u16(),
                    message: error_message(status, &body),
                    retry_after,
                });
            }
            if is_json(&response) {
                // A whole response (`stream = false`): the decoder reads it as the one event.
                let body = response.text().await.map_err(|error| ModelError::Connect {
                    provider: provider.to_string(),
                    message: format!("response broke before it was read: {}", chain(&error)),
                })?;
                let whole = SseEvent {
                    data: body,
                    ..SseEvent::default()
                };
                return Ok((futures::stream::empty().boxed(), whole));
            }
            let mut events: SseStream = response
                .bytes_stream()
                .eventsource()
                .map(|event| event.map_err(Into::into))
                .boxed();
            match events.next().await {
                Some(Ok(first)) => Ok((events, first)),
                Some(Err(error)) => Err(ModelError::Connect {
                    provider: provider.to_string(),
                    message: format!(
                        "response broke before the first event: {}",
                        chain(error.as_ref())
                    ),
                }),
                None => Err(ModelError::Connect {
                    provider: provider.to_string(),
                    message: "response ended before the first event".to_string(),
                }),
            }
        };
        match tokio::time::timeout(self.timeouts.first_byte, started).await {
            Ok(outcome) => outcome,
            Err(_) => Err(ModelError::Timeout {
                provider: provider.to_string(),
                kind: TimeoutKind::FirstByte,
                after: self.timeouts.first_byte,
            }),
        }
    }

    fn send_error(&self, error: &reqwest::Error) -> ModelError {
        if error.is_timeout() {
            ModelError::Timeout {
                provider: self.provider.to_string(),
                kind: TimeoutKind::Connect,
                after: self.timeouts.connect,
            }
        } else {
            ModelError::Connect {
                provider: self.provider.to_string(),
                message: chain(error),
            }
        }
    }
}

/// The deltas `decoder` reads from a body already received in `chunks`: its server-sent events
/// when `streamed`, else the whole body as one JSON document, as [`HttpTransport::stream`]
/// reads a non-streamed answer.
pub(crate) fn decode_received<D: WireDecoder>(
    provider: &'static str,
    decoder: D,
    chunks: Vec<Bytes>,
    streamed: bool,
) -> DeltaStream {
    let (first, chunks) = if streamed {
        (None, chunks)
    } else {
        let body = String::from_utf8_lossy(&chunks.concat()).into_owned();
        let whole = SseEvent {
            data: body,
            ..SseEvent::default()
        };
        (Some(whole), Vec::new())
    };
    let events: SseStream =
        futures::stream::iter(chunks.into_iter().map(Ok::<_, std::convert::Infallible>))
            .eventsource()
            .map(|event| event.map_err(Into::into))
            .boxed();
    // Nothing waits on a connection: the idle timeout is never reached.
    let idle = Duration::from_secs(3600);
    StreamState::start(
        provider,
        decoder,
        (first, events),
        CancellationToken::new(),
        idle,
    )
}

/// Whether a response's body is one JSON document rather than a stream of events.
fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with("application/json"))
}

/// An error response body as OpenAI and Anthropic both shape it: `{"error": …}`.
#[derive(serde::Deserialize)]
struct ErrorBody {
    /// The error, an object or (some compatible servers) a bare string.
    error: ErrorField,
}

/// The `error` of an [`ErrorBody`].
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum ErrorField {
    /// `{"message": "…", …}` (other fields ignored).
    Described {
        /// What the server said.
        message: String,
    },
    /// `"…"`.
    Text(String),
    /// Anything else: the body is shown as it is.
    Other(serde::de::IgnoredAny),
}

/// The message of an error response: the JSON `error.message` (or `error` when it is a string)
/// when there is one, else an excerpt of the body.
fn error_message(status: reqwest::StatusCode, body: &str) -> String {
    let from_json = serde_json::from_str::<ErrorBody>(body)
        .ok()
        .and_then(|body| match body.error {
            ErrorField::Described { message } | ErrorField::Text(message) => Some(message),
            ErrorField::Other(_) => None,
        });
    let text = from_json.unwrap_or_else(|| body.trim().to_string());
    let text = if text.is_empty() {
        status.canonical_reason().unwrap_or("error").to_string()
    } else {
        text
    };
    excerpt(&text)
}

/// The first [`BODY_EXCERPT`] characters of `text` on one line.
pub(crate) fn excerpt(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(BODY_EXCERPT) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}

/// An error and its sources, joined with `: `.
fn chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

struct StreamState<D> {
    provider: &'static str,
    /// `None` once finished: dropping it closes the connection.
    events: Option<SseStream>,
    first: Option<SseEvent>,
    decoder: D,
    pending: VecDeque<Delta>,
    cancel: CancellationToken,
    idle: Duration,
    finished: bool,
}

impl<D: WireDecoder> StreamState<D> {
    /// The deltas of a response whose `first` event (if already read) and further `events`
    /// `decoder` reads; `cancel` and the `idle` timeout end it early.
    fn start(
        provider: &'static str,
        decoder: D,
        (first, events): (Option<SseEvent>, SseStream),
        cancel: CancellationToken,
        idle: Duration,
    ) -> DeltaStream {
        let state = StreamState {
            provider,
            events: Some(events),
            first,
            decoder,
            pending: VecDeque::new(),
            cancel,
            idle,
            finished: false,
        };
        futures::stream::unfold(state, StreamState::next).boxed()
    }

    async fn next(mut self) -> Option<(Result<Delta, ModelError>, Self)> {
        loop {
            if let Some(delta) = self.pending.pop_front() {
                return Some((Ok(delta), self));
            }
            if self.finished {
                return None;
            }
            let event = match self.first.take() {
                Some(first) => first,
                None => match self.next_event().await {
                    Ok(Some(event)) => event,
                    Ok(None) => match self.decoder.end_of_body() {
                        Ok(deltas) => {
                            self.finish();
                            self.pending.extend(deltas);
                            continue;
                        }
                        Err(error) => return Some(self.fail(error)),
                    },
                    Err(error) => return Some(self.fail(error)),
                },
            };
            match self.decoder.decode(&event) {
                Ok(deltas) => {
                    self.pending.extend(deltas);
                    if self.decoder.is_done() {
                        self.finish();
                    }
                }
                Err(error) => return Some(self.fail(error)),
            }
        }
    }

    /// The next SSE event, `None` at the end of the body; cancellation and idle timeout win.
    async fn next_event(&mut self) -> Result<Option<SseEvent>, ModelError> {
        let Some(events) = self.events.as_mut() else {
            return Ok(None);
        };
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Err(ModelError::Cancelled),
            next = tokio::time::timeout(self.idle, events.next()) => match next {
                Err(_) => Err(ModelError::Timeout {
                    provider: self.provider.to_string(),
                    kind: TimeoutKind::Idle,
                    after: self.idle,
                }),
                Ok(None) => Ok(None),
                Ok(Some(Ok(event))) => Ok(Some(event)),
                Ok(Some(Err(error))) => Err(ModelError::Stream {
                    provider: self.provider.to_string(),
                    message: chain(error.as_ref()),
                }),
            },
        }
    }

    fn finish(&mut self) {
        self.finished = true;
        self.events = None;
    }

    fn fail(mut self, error: ModelError) -> (Result<Delta, ModelError>, Self) {
        self.finish();
        self.pending.clear();
        (Err(error), self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_prefer_json_and_stay_short() {
        let status = reqwest::StatusCode::TOO_MANY_REQUESTS;
        assert_eq!(
            error_message(
                status,
                r#"{"error":{"message":"Rate limit reached","type":"x"}}"#
            ),
            "Rate limit reached"
        );
        assert_eq!(error_message(status, ""), "Too Many Requests");
        assert_eq!(error_message(status, "plain\n  text"), "plain text");
        let long = "x".repeat(2000);
        assert_eq!(
            error_message(status, &long).chars().count(),
            BODY_EXCERPT + 1
        );
    }
}
