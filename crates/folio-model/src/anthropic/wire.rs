//! The Anthropic Messages wire format as serde types: the request body Folio sends
//! (`Serialize`, borrowing from the [`crate::ModelRequest`]) and the SSE events the API streams
//! back (`Deserialize`).
//!
//! Only the fields Folio reads are declared; unknown fields are ignored, and unknown event,
//! content-block and delta types decode to an `Unknown` arm that the decoder skips (the API adds
//! new ones, e.g. `server_tool_use` blocks or `citations_delta`). Fields that real payloads may
//! omit or send as `null` are `Option` or `#[serde(default)]`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The body of `POST /v1/messages`.
#[derive(Debug, Serialize)]
pub(crate) struct MessagesRequest<'a> {
    /// `[model_params]` passed through, less the keys Folio sets itself.
    #[serde(flatten)]
    pub(crate) params: Map<String, Value>,
    /// Model id.
    pub(crate) model: &'a str,
    /// Folio's default when `[model_params]` does not set `max_tokens` (it then stays in
    /// `params`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) max_tokens: Option<u64>,
    /// The system prompt; absent when empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) system: Option<System<'a>>,
    /// The conversation, roles alternating.
    pub(crate) messages: Vec<RequestMessage<'a>>,
    /// Tools the model may call; absent when there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tools: Option<Vec<ToolDefinition<'a>>>,
    /// Always `true`: Folio reads the Messages API as a stream.
    pub(crate) stream: bool,
}

/// The system prompt as the Messages API takes it.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum System<'a> {
    /// A plain string: what every server speaking the format accepts.
    Text(&'a str),
    /// Content blocks, for a prompt-cache breakpoint on the system prompt.
    Blocks(Vec<RequestBlock<'a>>),
}

/// Who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Role {
    /// The user (also the carrier of tool results).
    User,
    /// The model.
    Assistant,
}

/// One message of the request: a role and its content blocks.
#[derive(Debug, Serialize)]
pub(crate) struct RequestMessage<'a> {
    /// Who sent it.
    pub(crate) role: Role,
    /// Its blocks, in order.
    pub(crate) content: Vec<RequestBlock<'a>>,
}

/// A content block Folio sends.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum RequestBlock<'a> {
    /// Text, optionally marked as a prompt-cache breakpoint.
    Text {
        /// The text.
        text: &'a str,
        /// Cache breakpoint (set on the system prompt).
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// Signed thinking sent back with the assistant step it belongs to.
    Thinking {
        /// The thinking text.
        thinking: &'a str,
        /// The signature the API gave it.
        signature: &'a str,
    },
    /// A tool call the model made.
    ToolUse {
        /// The call id.
        id: &'a str,
        /// Tool name.
        name: &'a str,
        /// The call's arguments (free-form JSON, as the model sent them).
        input: &'a Value,
    },
    /// The result of a tool call.
    ToolResult {
        /// The id of the call it answers.
        tool_use_id: &'a str,
        /// `true` when the tool failed (omitted otherwise).
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        /// Text and image parts.
        content: Vec<ToolResultPart<'a>>,
    },
}

/// A prompt-cache breakpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum CacheControl {
    /// The default five-minute cache.
    Ephemeral,
}

/// A part of a tool result.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ToolResultPart<'a> {
    /// Text.
    Text {
        /// The text.
        text: &'a str,
    },
    /// An image.
    Image {
        /// Where its bytes are.
        source: ImageSource<'a>,
    },
}

/// The bytes of an image block.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ImageSource<'a> {
    /// Inline base64 data.
    Base64 {
        /// MIME type, e.g. `image/png`.
        media_type: &'a str,
        /// Base64 data.
        data: &'a str,
    },
}

/// A tool as the Messages API declares it.
#[derive(Debug, Serialize)]
pub(crate) struct ToolDefinition<'a> {
    /// Tool name.
    pub(crate) name: &'a str,
    /// What it does.
    pub(crate) description: &'a str,
    /// JSON Schema of its input (free-form).
    pub(crate) input_schema: &'a Value,
}

/// One SSE event of a streamed Messages response (the JSON in its `data:` line).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum StreamEvent {
    /// The response starts: the answering model and the input usage.
    MessageStart {
        /// The message so far (empty content).
        #[serde(default)]
        message: MessageStart,
    },
    /// A content block starts at `index`.
    ContentBlockStart {
        /// Block position within the response.
        #[serde(default)]
        index: usize,
        /// The block's first state.
        content_block: ContentBlock,
    },
    /// A piece of the block at `index`.
    ContentBlockDelta {
        /// Block position within the response.
        #[serde(default)]
        index: usize,
        /// The piece.
        delta: BlockDelta,
    },
    /// The block at `index` is complete.
    ContentBlockStop {
        /// Block position within the response.
        #[serde(default)]
        index: usize,
    },
    /// Top-level changes near the end: the stop reason and the output usage.
    MessageDelta {
        /// The stop reason, when known.
        #[serde(default)]
        delta: MessageDelta,
        /// Cumulative usage.
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    /// The response is complete.
    MessageStop,
    /// Keep-alive.
    Ping,
    /// The API failed mid-stream (e.g. `overloaded_error`).
    Error {
        /// What failed.
        #[serde(default)]
        error: ErrorDetail,
    },
    /// An event type Folio does not know: ignored.
    #[serde(other)]
    Unknown,
}

/// The `message` of `message_start`.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub(crate) struct MessageStart {
    /// The answering model.
    #[serde(default)]
    pub(crate) model: Option<String>,
    /// Input usage (and a first output count).
    #[serde(default)]
    pub(crate) usage: Option<WireUsage>,
}

/// A content block as `content_block_start` opens it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ContentBlock {
    /// Text (usually empty at the start).
    Text {
        /// Initial text.
        #[serde(default)]
        text: String,
    },
    /// Extended thinking.
    Thinking {
        /// Initial thinking text.
        #[serde(default)]
        thinking: String,
        /// Initial signature.
        #[serde(default)]
        signature: String,
    },
    /// A tool call.
    ToolUse {
        /// The call id.
        #[serde(default)]
        id: String,
        /// Tool name.
        #[serde(default)]
        name: String,
        /// Arguments given whole at the start (usually `{}`; they stream as `input_json_delta`).
        #[serde(default)]
        input: Option<Map<String, Value>>,
    },
    /// A block type Folio does not read (`redacted_thinking`, server tool blocks, …).
    #[serde(other)]
    Unknown,
}

/// The `delta` of `content_block_delta`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum BlockDelta {
    /// More text.
    TextDelta {
        /// The text.
        #[serde(default)]
        text: String,
    },
    /// More thinking.
    ThinkingDelta {
        /// The thinking text.
        #[serde(default)]
        thinking: String,
    },
    /// The thinking block's signature.
    SignatureDelta {
        /// The signature (or part of it).
        #[serde(default)]
        signature: String,
    },
    /// A fragment of a tool call's JSON arguments.
    InputJsonDelta {
        /// The fragment.
        #[serde(default)]
        partial_json: String,
    },
    /// A delta type Folio does not read (`citations_delta`, …).
    #[serde(other)]
    Unknown,
}

/// The `delta` of `message_delta`.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub(crate) struct MessageDelta {
    /// Why the response stopped (`end_turn`, `tool_use`, `max_tokens`, …).
    #[serde(default)]
    pub(crate) stop_reason: Option<String>,
}

/// Token counts; each is absent from some events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub(crate) struct WireUsage {
    /// Uncached input tokens.
    #[serde(default)]
    pub(crate) input_tokens: Option<u64>,
    /// Output tokens so far.
    #[serde(default)]
    pub(crate) output_tokens: Option<u64>,
    /// Input tokens read from the prompt cache.
    #[serde(default)]
    pub(crate) cache_read_input_tokens: Option<u64>,
    /// Input tokens written to the prompt cache.
    #[serde(default)]
    pub(crate) cache_creation_input_tokens: Option<u64>,
}

/// The `error` of an `error` event (and of an error response body).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
pub(crate) struct ErrorDetail {
    /// The error type, e.g. `overloaded_error`.
    #[serde(default, rename = "type")]
    pub(crate) kind: Option<String>,
    /// What the API said.
    #[serde(default)]
    pub(crate) message: Option<String>,
}
