//! The OpenAI Chat Completions wire format as serde types: the request body Folio sends
//! (`Serialize`, borrowing from the [`crate::ModelRequest`]) and the `chat.completion.chunk`s (or
//! the one whole `chat.completion`) that come back (`Deserialize`).
//!
//! OpenAI-compatible servers differ in what they send: every field Folio reads is optional and
//! `null` counts as absent; unknown fields are ignored. Text fields that some servers fill with
//! something other than a string (content part lists, reasoning objects) are read leniently:
//! a string is used, anything else is skipped, as it was before these types.

use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The body of `POST /chat/completions`.
#[derive(Debug, Serialize)]
pub(crate) struct ChatRequest<'a> {
    /// `[model_params]` passed through, less the keys Folio sets itself.
    #[serde(flatten)]
    pub(crate) params: Map<String, Value>,
    /// Model id.
    pub(crate) model: &'a str,
    /// The conversation, system prompt first.
    pub(crate) messages: Vec<ChatMessage<'a>>,
    /// Whether to stream the answer as chunks.
    pub(crate) stream: bool,
    /// Asks for a final usage chunk (streams only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) stream_options: Option<StreamOptions>,
    /// Tools the model may call; absent when there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tools: Option<Vec<ChatTool<'a>>>,
}

/// `stream_options` of a streamed request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct StreamOptions {
    /// Send a last chunk with the usage of the whole response.
    pub(crate) include_usage: bool,
}

/// One message of the request, tagged by `role`.
#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub(crate) enum ChatMessage<'a> {
    /// The system prompt.
    System {
        /// Its text.
        content: &'a str,
    },
    /// A user message: text, or image parts (tool-result images).
    User {
        /// Its content.
        content: UserContent<'a>,
    },
    /// An assistant step.
    Assistant {
        /// Its text; `null` when the step only called tools.
        content: Option<&'a str>,
        /// Its tool calls (omitted when none).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ChatToolCall<'a>>,
    },
    /// A tool's result.
    Tool {
        /// The call it answers.
        tool_call_id: &'a str,
        /// The result as text.
        content: String,
    },
}

/// The content of a user message.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum UserContent<'a> {
    /// Plain text.
    Text(&'a str),
    /// Content parts.
    Parts(Vec<UserPart>),
}

/// A content part of a user message.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum UserPart {
    /// An image by URL (here a `data:` URL).
    ImageUrl {
        /// The image.
        image_url: ImageUrl,
    },
}

/// An image URL.
#[derive(Debug, Serialize)]
pub(crate) struct ImageUrl {
    /// `data:MIME;base64,DATA`.
    pub(crate) url: String,
}

/// A tool call of an assistant message, as sent back.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ChatToolCall<'a> {
    /// A function call.
    Function {
        /// The call id.
        id: &'a str,
        /// What was called.
        function: FunctionCall<'a>,
    },
}

/// The function of a [`ChatToolCall`].
#[derive(Debug, Serialize)]
pub(crate) struct FunctionCall<'a> {
    /// Tool name.
    pub(crate) name: &'a str,
    /// The arguments as a JSON string.
    pub(crate) arguments: String,
}

/// A tool as Chat Completions declares it.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ChatTool<'a> {
    /// A function tool.
    Function {
        /// The function.
        function: FunctionDefinition<'a>,
    },
}

/// The function of a [`ChatTool`].
#[derive(Debug, Serialize)]
pub(crate) struct FunctionDefinition<'a> {
    /// Tool name.
    pub(crate) name: &'a str,
    /// What it does.
    pub(crate) description: &'a str,
    /// JSON Schema of its input (free-form).
    pub(crate) parameters: &'a Value,
}

/// A `chat.completion.chunk`, or a whole `chat.completion` (its choices carry `message`
/// instead of `delta`).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub(crate) struct ChatChunk {
    /// An error the server reports in place of a chunk.
    #[serde(default)]
    pub(crate) error: Option<ChunkError>,
    /// The answering model.
    #[serde(default)]
    pub(crate) model: Option<String>,
    /// The choices (Folio asks for one; the final usage chunk has none).
    #[serde(default)]
    pub(crate) choices: Option<Vec<Choice>>,
    /// Usage of the whole response (the last chunk, or the whole completion).
    #[serde(default)]
    pub(crate) usage: Option<ChatUsage>,
}

/// The `error` of a chunk.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub(crate) enum ChunkError {
    /// `{"message": "…", …}`.
    Described {
        /// What the server said.
        message: String,
    },
    /// Any other shape, shown as JSON.
    Other(Value),
}

impl ChunkError {
    /// The message to show: `message`, else the error as JSON.
    pub(crate) fn message(&self) -> String {
        match self {
            ChunkError::Described { message } => message.clone(),
            ChunkError::Other(value) => value.to_string(),
        }
    }
}

/// One choice of a chunk.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub(crate) struct Choice {
    /// What this chunk adds (streams).
    #[serde(default)]
    pub(crate) delta: Option<ChoiceDelta>,
    /// The whole message (a non-streamed completion).
    #[serde(default)]
    pub(crate) message: Option<ChoiceDelta>,
    /// Why the response ended, on its last chunk.
    #[serde(default)]
    pub(crate) finish_reason: Option<String>,
}

/// The `delta` (or `message`) of a choice.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub(crate) struct ChoiceDelta {
    /// Reasoning as DeepSeek, vLLM and llama.cpp name it.
    #[serde(default)]
    pub(crate) reasoning_content: LenientText,
    /// Reasoning as Ollama and OpenRouter name it.
    #[serde(default)]
    pub(crate) reasoning: LenientText,
    /// Assistant text.
    #[serde(default)]
    pub(crate) content: LenientText,
    /// Tool-call pieces.
    #[serde(default)]
    pub(crate) tool_calls: Option<Vec<ToolCallDelta>>,
}

/// A text field read leniently: a string, or nothing for `null`, absence or any other shape.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(from = "TextOrOther")]
pub(crate) struct LenientText(pub(crate) Option<String>);

/// What a [`LenientText`] may hold on the wire.
#[derive(Deserialize)]
#[serde(untagged)]
enum TextOrOther {
    /// A string.
    Text(String),
    /// Anything else (`null`, a part list, an object).
    Other(IgnoredAny),
}

impl From<TextOrOther> for LenientText {
    fn from(value: TextOrOther) -> Self {
        match value {
            TextOrOther::Text(text) => LenientText(Some(text)),
            TextOrOther::Other(_) => LenientText(None),
        }
    }
}

impl LenientText {
    /// The text, unless absent or empty.
    pub(crate) fn non_empty(&self) -> Option<&str> {
        self.0.as_deref().filter(|text| !text.is_empty())
    }
}

/// A piece of a tool call: the first names it, later ones add argument fragments.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub(crate) struct ToolCallDelta {
    /// Which call (absent in a whole completion: the position counts).
    #[serde(default)]
    pub(crate) index: Option<usize>,
    /// The call id (first piece).
    #[serde(default)]
    pub(crate) id: Option<String>,
    /// Name and argument fragment.
    #[serde(default)]
    pub(crate) function: Option<FunctionDelta>,
}

/// The function of a [`ToolCallDelta`].
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub(crate) struct FunctionDelta {
    /// Tool name (first piece).
    #[serde(default)]
    pub(crate) name: Option<String>,
    /// A fragment of the JSON arguments string.
    #[serde(default)]
    pub(crate) arguments: Option<String>,
}

/// Token counts of a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub(crate) struct ChatUsage {
    /// Input tokens, cached ones included.
    #[serde(default)]
    pub(crate) prompt_tokens: Option<u64>,
    /// Output tokens.
    #[serde(default)]
    pub(crate) completion_tokens: Option<u64>,
    /// The cached share of the input.
    #[serde(default)]
    pub(crate) prompt_tokens_details: Option<PromptTokensDetails>,
}

/// `usage.prompt_tokens_details`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub(crate) struct PromptTokensDetails {
    /// Input tokens read from the prompt cache.
    #[serde(default)]
    pub(crate) cached_tokens: Option<u64>,
}
