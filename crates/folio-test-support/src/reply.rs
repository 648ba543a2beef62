//! Scripted replies of the mock model server.

use std::time::Duration;

use folio_protocol::Usage;
use serde::Deserialize;
use serde_json::Value;

/// A scripted reply as JSON, for the mock server's control API (`POST /mock/replies`).
///
/// `{"status": 503, "message": "…"}` answers an HTTP error; otherwise the reply streams `text`
/// and then calls `toolCalls` in order. Delays are in milliseconds.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplySpec {
    /// The answer's text.
    #[serde(default)]
    pub text: String,
    /// Tool calls the answer makes, in order.
    #[serde(default)]
    pub tool_calls: Vec<ToolCallSpec>,
    /// Answer this HTTP status instead of a stream.
    #[serde(default)]
    pub status: Option<u16>,
    /// The error message of a `status` answer.
    #[serde(default)]
    pub message: Option<String>,
    /// Wait this long before the first byte.
    #[serde(default)]
    pub first_byte_delay_ms: u64,
    /// Wait this long between streamed chunks.
    #[serde(default)]
    pub chunk_delay_ms: u64,
    /// Cut the stream after this many chunks.
    #[serde(default)]
    pub drop_after_chunks: Option<usize>,
}

/// One tool call of a [`ReplySpec`].
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCallSpec {
    /// The tool's name.
    pub name: String,
    /// Its input.
    #[serde(default)]
    pub input: Value,
}

impl From<ReplySpec> for MockReply {
    fn from(spec: ReplySpec) -> MockReply {
        let mut reply = match spec.status {
            Some(status) => {
                let mut reply = MockReply::status(status);
                if let Some(message) = spec.message {
                    reply = reply.with_message(message);
                }
                reply
            }
            None => spec
                .tool_calls
                .into_iter()
                .fold(MockReply::text(spec.text), |reply, call| {
                    reply.with_tool_call(call.name, call.input)
                }),
        };
        reply = reply
            .first_byte_delay(Duration::from_millis(spec.first_byte_delay_ms))
            .chunk_delay(Duration::from_millis(spec.chunk_delay_ms));
        match spec.drop_after_chunks {
            Some(chunks) => reply.drop_after_chunks(chunks),
            None => reply,
        }
    }
}

/// One scripted answer: a streamed response or an HTTP error, with optional failure modes.
#[derive(Debug, Clone, PartialEq)]
pub struct MockReply {
    pub(crate) outcome: Outcome,
    pub(crate) first_byte_delay: Duration,
    pub(crate) chunk_delay: Duration,
    pub(crate) drop_after: Option<usize>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outcome {
    Stream(StreamReply),
    Status {
        status: u16,
        retry_after: Option<String>,
        message: String,
    },
}

#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct StreamReply {
    pub(crate) text: String,
    pub(crate) reasoning: Option<String>,
    pub(crate) signature: Option<String>,
    pub(crate) tool_calls: Vec<(String, Value)>,
    pub(crate) usage: Usage,
    /// Leave usage out of OpenAI-format streams even when asked (as llama.cpp's server does).
    pub(crate) omit_usage: bool,
    pub(crate) finish: Option<String>,
    /// `(code, message)` of an error the stream ends with instead of finishing.
    pub(crate) stream_error: Option<(String, String)>,
}

impl MockReply {
    fn from_outcome(outcome: Outcome) -> MockReply {
        MockReply {
            outcome,
            first_byte_delay: Duration::ZERO,
            chunk_delay: Duration::ZERO,
            drop_after: None,
        }
    }

    /// A streamed text answer (split into several deltas on the wire).
    pub fn text(text: impl Into<String>) -> MockReply {
        MockReply::from_outcome(Outcome::Stream(StreamReply {
            text: text.into(),
            ..StreamReply::default()
        }))
    }

    /// A streamed answer that calls tools `(name, input)`; arguments go out in several fragments.
    pub fn tool_calls<I, S>(calls: I) -> MockReply
    where
        I: IntoIterator<Item = (S, Value)>,
        S: Into<String>,
    {
        MockReply::from_outcome(Outcome::Stream(StreamReply {
            tool_calls: calls
                .into_iter()
                .map(|(name, input)| (name.into(), input))
                .collect(),
            ..StreamReply::default()
        }))
    }

    /// An HTTP error reply with `status` and a JSON error body in the route's format.
    pub fn status(status: u16) -> MockReply {
        MockReply::from_outcome(Outcome::Status {
            status,
            retry_after: None,
            message: format!("mock model server: scripted HTTP {status}"),
        })
    }

    /// `429 Too Many Requests` with `Retry-After: seconds`.
    pub fn rate_limited(seconds: u64) -> MockReply {
        MockReply::status(429).with_retry_after(seconds.to_string())
    }

    /// `500 Internal Server Error`.
    pub fn server_error() -> MockReply {
        MockReply::status(500)
    }

    fn stream_mut(&mut self) -> Option<&mut StreamReply> {
        match &mut self.outcome {
            Outcome::Stream(stream) => Some(stream),
            Outcome::Status { .. } => None,
        }
    }

    /// Sets the assistant text (of a streamed reply).
    pub fn with_text(mut self, text: impl Into<String>) -> MockReply {
        if let Some(stream) = self.stream_mut() {
            stream.text = text.into();
        }
        self
    }

    /// Adds a tool call (to a streamed reply).
    pub fn with_tool_call(mut self, name: impl Into<String>, input: Value) -> MockReply {
        if let Some(stream) = self.stream_mut() {
            stream.tool_calls.push((name.into(), input));
        }
        self
    }

    /// Streams reasoning before the text (`reasoning_content` / a `thinking` block).
    pub fn with_reasoning(mut self, reasoning: impl Into<String>) -> MockReply {
        if let Some(stream) = self.stream_mut() {
            stream.reasoning = Some(reasoning.into());
        }
        self
    }

    /// The thinking signature sent in Anthropic format (default `mock-signature`); on the
    /// Responses route the reasoning item's `encrypted_content` (default `mock-encrypted-N`).
    pub fn with_signature(mut self, signature: impl Into<String>) -> MockReply {
        if let Some(stream) = self.stream_mut() {
            stream.signature = Some(signature.into());
        }
        self
    }

    /// Usage numbers reported with the reply (OpenAI reports `cache_write_tokens` as nothing).
    pub fn with_usage(mut self, usage: Usage) -> MockReply {
        if let Some(stream) = self.stream_mut() {
            stream.usage = usage;
        }
        self
    }

    /// Sends no usage in an OpenAI-format stream even when the request asks for it with
    /// `stream_options.include_usage`, as some OpenAI-compatible servers (llama.cpp's) do.
    pub fn without_usage(mut self) -> MockReply {
        if let Some(stream) = self.stream_mut() {
            stream.omit_usage = true;
        }
        self
    }

    /// Overrides the finish reason in the route's own vocabulary (`length`, `max_tokens`, …;
    /// on the Responses route the `incomplete_details.reason` of a `response.incomplete`, e.g.
    /// `max_output_tokens`).
    pub fn with_finish(mut self, reason: impl Into<String>) -> MockReply {
        if let Some(stream) = self.stream_mut() {
            stream.finish = Some(reason.into());
        }
        self
    }

    /// Ends the stream, after its content, with an error in the route's format instead of
    /// finishing: a Responses `response.failed` (`response.error.code`), an Anthropic `error`
    /// event (`error.type`), an OpenAI error chunk (`error.code`).
    pub fn with_stream_error(
        mut self,
        code: impl Into<String>,
        message: impl Into<String>,
    ) -> MockReply {
        if let Some(stream) = self.stream_mut() {
            stream.stream_error = Some((code.into(), message.into()));
        }
        self
    }

    /// The `Retry-After` header value of an error reply.
    pub fn with_retry_after(mut self, value: impl Into<String>) -> MockReply {
        if let Outcome::Status { retry_after, .. } = &mut self.outcome {
            *retry_after = Some(value.into());
        }
        self
    }

    /// The error message of an error reply.
    pub fn with_message(mut self, text: impl Into<String>) -> MockReply {
        if let Outcome::Status { message, .. } = &mut self.outcome {
            *message = text.into();
        }
        self
    }

    /// Waits this long before sending the response headers.
    pub fn first_byte_delay(mut self, delay: Duration) -> MockReply {
        self.first_byte_delay = delay;
        self
    }

    /// Waits this long between two streamed chunks.
    pub fn chunk_delay(mut self, delay: Duration) -> MockReply {
        self.chunk_delay = delay;
        self
    }

    /// Sends only the first `chunks` SSE events, then drops the connection.
    pub fn drop_after_chunks(mut self, chunks: usize) -> MockReply {
        self.drop_after = Some(chunks);
        self
    }
}

/// Splits `text` into word-sized pieces (at least one piece for non-empty text).
pub(crate) fn pieces(text: &str) -> Vec<String> {
    text.split_inclusive(' ').map(str::to_string).collect()
}

/// Splits `text` into `parts` pieces of about equal length on char boundaries.
pub(crate) fn fragments(text: &str, parts: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    let size = chars.len().div_ceil(parts.max(1));
    chars
        .chunks(size)
        .map(|chunk| chunk.iter().collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_text_and_fragments() {
        assert_eq!(pieces("Hello there world"), ["Hello ", "there ", "world"]);
        assert_eq!(
            fragments(r#"{"path":"/a"}"#, 3),
            [r#"{"pat"#, r#"h":"/"#, r#"a"}"#]
        );
        assert!(fragments("", 3).is_empty());
    }
}
