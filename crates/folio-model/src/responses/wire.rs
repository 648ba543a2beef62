//! The OpenAI Responses wire format as serde types: the body of `POST /responses` Folio sends
//! (`Serialize`, borrowing from the [`crate::ModelRequest`]) and the streamed events (or the one
//! whole response object) that come back (`Deserialize`).
//!
//! Unknown event types, output item types and content part types are skipped; unknown fields
//! are ignored. Reasoning items are read into [`ReasoningItem`] and sent back in the same shape.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The body of `POST /responses`.
#[derive(Debug, Serialize)]
pub(crate) struct ResponsesRequest<'a> {
    /// `[model_params]` passed through (mapped to Responses names), less the keys Folio sets.
    #[serde(flatten)]
    pub(crate) params: Map<String, Value>,
    /// Model id.
    pub(crate) model: &'a str,
    /// The system prompt; absent when empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) instructions: Option<&'a str>,
    /// The conversation as input items.
    pub(crate) input: Vec<InputItem<'a>>,
    /// Tools the model may call; absent when there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tools: Option<Vec<FunctionTool<'a>>>,
    /// Whether to stream the answer as events.
    pub(crate) stream: bool,
}

/// One input item of the request, tagged by `type`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum InputItem<'a> {
    /// A user or assistant message.
    Message {
        /// `user` or `assistant`.
        role: Role,
        /// Its content parts.
        content: Vec<MessagePart<'a>>,
    },
    /// A reasoning item the model returned earlier, sent back as it came.
    Reasoning(&'a ReasoningItem),
    /// A tool call the model made earlier.
    FunctionCall {
        /// The call id.
        call_id: &'a str,
        /// Tool name.
        name: &'a str,
        /// The arguments as a JSON string.
        arguments: String,
    },
    /// The result of a tool call.
    FunctionCallOutput {
        /// The call it answers.
        call_id: &'a str,
        /// The result: text, or parts when it holds images.
        output: ToolOutput<'a>,
    },
}

/// The role of an input message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Role {
    /// The user.
    User,
    /// The model.
    Assistant,
}

/// A content part of an input message.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum MessagePart<'a> {
    /// User text.
    InputText {
        /// The text.
        text: &'a str,
    },
    /// Assistant text of an earlier step.
    OutputText {
        /// The text.
        text: &'a str,
    },
}

/// The `output` of a `function_call_output` item.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum ToolOutput<'a> {
    /// Plain text.
    Text(String),
    /// Text and image parts.
    Parts(Vec<OutputPart<'a>>),
}

/// A part of a [`ToolOutput`].
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum OutputPart<'a> {
    /// Text.
    InputText {
        /// The text.
        text: &'a str,
    },
    /// An image as a `data:` URL.
    InputImage {
        /// `data:MIME;base64,DATA`.
        image_url: String,
    },
}

/// A function tool as the Responses API declares it (flat, not nested under `function`).
#[derive(Debug, Serialize)]
pub(crate) struct FunctionTool<'a> {
    /// Always `function`.
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    /// Tool name.
    pub(crate) name: &'a str,
    /// What it does.
    pub(crate) description: &'a str,
    /// JSON Schema of its input.
    pub(crate) parameters: &'a Value,
    /// Strict schema adherence (off: Folio's schemas are not all strict-mode schemas).
    pub(crate) strict: bool,
}

/// A reasoning output item: its id, summary and encrypted content (what a stateless request
/// must send back for the model to keep its reasoning).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ReasoningItem {
    /// The item id (`rs_…`).
    pub(crate) id: String,
    /// The reasoning summary parts (possibly none).
    #[serde(default)]
    pub(crate) summary: Vec<SummaryPart>,
    /// The encrypted reasoning, when `include` asked for `reasoning.encrypted_content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) encrypted_content: Option<String>,
}

/// A part of a reasoning summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum SummaryPart {
    /// Summary text.
    SummaryText {
        /// The text.
        text: String,
    },
}

/// One streamed event, tagged by `type`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
pub(crate) enum StreamEvent {
    /// The response began (names the model).
    #[serde(rename = "response.created")]
    Created {
        /// The response so far.
        response: WireResponse,
    },
    /// An output item began.
    #[serde(rename = "response.output_item.added")]
    OutputItemAdded {
        /// The item's position in the output.
        output_index: usize,
        /// The item as it starts.
        item: OutputItem,
    },
    /// An output item is complete.
    #[serde(rename = "response.output_item.done")]
    OutputItemDone {
        /// The item's position in the output.
        output_index: usize,
        /// The whole item.
        item: OutputItem,
    },
    /// A piece of assistant text.
    #[serde(rename = "response.output_text.delta")]
    OutputTextDelta {
        /// The message item's position.
        output_index: usize,
        /// The text piece.
        delta: String,
    },
    /// A piece of a reasoning summary.
    #[serde(rename = "response.reasoning_summary_text.delta")]
    ReasoningSummaryTextDelta {
        /// The reasoning item's position.
        output_index: usize,
        /// Which summary part.
        #[serde(default)]
        summary_index: usize,
        /// The text piece.
        delta: String,
    },
    /// A piece of raw reasoning text (open-weight models served with the Responses API).
    #[serde(rename = "response.reasoning_text.delta")]
    ReasoningTextDelta {
        /// The reasoning item's position.
        output_index: usize,
        /// Which content part.
        #[serde(default)]
        content_index: usize,
        /// The text piece.
        delta: String,
    },
    /// A fragment of a function call's JSON arguments.
    #[serde(rename = "response.function_call_arguments.delta")]
    FunctionCallArgumentsDelta {
        /// The call item's position.
        output_index: usize,
        /// The fragment.
        delta: String,
    },
    /// The response finished.
    #[serde(rename = "response.completed")]
    Completed {
        /// The whole response, with usage.
        response: WireResponse,
    },
    /// The response stopped early (output token limit, content filter).
    #[serde(rename = "response.incomplete")]
    Incomplete {
        /// The response, with `incomplete_details`.
        response: WireResponse,
    },
    /// The response failed.
    #[serde(rename = "response.failed")]
    Failed {
        /// The response, with `error`.
        response: WireResponse,
    },
    /// An error outside a response.
    #[serde(rename = "error")]
    Error {
        /// Error code.
        #[serde(default)]
        code: Option<String>,
        /// What went wrong.
        #[serde(default)]
        message: Option<String>,
        /// The same, nested (as some servers send it).
        #[serde(default)]
        error: Option<ResponseError>,
    },
    /// Any other event (`response.in_progress`, `response.content_part.added`, …).
    #[serde(other)]
    Unknown,
}

/// A response object: in `response.*` events, or the whole answer to `stream: false`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireResponse {
    /// The answering model.
    #[serde(default)]
    pub(crate) model: Option<String>,
    /// `completed`, `incomplete`, `failed`, `in_progress`, …
    #[serde(default)]
    pub(crate) status: Option<String>,
    /// The output items (complete in a whole response).
    #[serde(default)]
    pub(crate) output: Vec<OutputItem>,
    /// Token counts.
    #[serde(default)]
    pub(crate) usage: Option<ResponsesUsage>,
    /// Why an incomplete response stopped.
    #[serde(default)]
    pub(crate) incomplete_details: Option<IncompleteDetails>,
    /// Why a failed response failed.
    #[serde(default)]
    pub(crate) error: Option<ResponseError>,
}

/// An output item, tagged by `type`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum OutputItem {
    /// An assistant message.
    Message {
        /// Its content parts.
        #[serde(default)]
        content: Vec<OutputContent>,
    },
    /// A function call.
    FunctionCall {
        /// The call id the result must name.
        call_id: String,
        /// Tool name.
        name: String,
        /// The JSON arguments string (empty when the item starts).
        #[serde(default)]
        arguments: String,
    },
    /// Reasoning.
    Reasoning(ReasoningItem),
    /// Any other item (built-in tool calls, …).
    #[serde(other)]
    Other,
}

/// A content part of an output message.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum OutputContent {
    /// Text.
    OutputText {
        /// The text.
        text: String,
    },
    /// Any other part (refusals, …).
    #[serde(other)]
    Other,
}

/// `usage` of a response.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub(crate) struct ResponsesUsage {
    /// Input tokens, cached ones included.
    #[serde(default)]
    pub(crate) input_tokens: u64,
    /// Output tokens, reasoning tokens included.
    #[serde(default)]
    pub(crate) output_tokens: u64,
    /// The cached share of the input.
    #[serde(default)]
    pub(crate) input_tokens_details: Option<InputTokensDetails>,
}

/// `usage.input_tokens_details`.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub(crate) struct InputTokensDetails {
    /// Input tokens read from the prompt cache.
    #[serde(default)]
    pub(crate) cached_tokens: u64,
}

/// `incomplete_details` of a response.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct IncompleteDetails {
    /// `max_output_tokens` or `content_filter`.
    #[serde(default)]
    pub(crate) reason: Option<String>,
}

/// `error` of a failed response (or of an `error` event).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ResponseError {
    /// Error code, e.g. `server_error`, `rate_limit_exceeded`.
    #[serde(default)]
    pub(crate) code: Option<String>,
    /// What went wrong.
    #[serde(default)]
    pub(crate) message: Option<String>,
}
