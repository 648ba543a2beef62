//! Provider-neutral request, conversation and response types.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use folio_protocol::RequestedCall;
pub use folio_protocol::{FinishReason, Usage};

use crate::ModelError;

/// One model call: the system prompt, the conversation so far and the tools the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// Model id as the provider knows it (e.g. `gpt-4.1-mini`).
    pub model: String,
    /// System prompt.
    pub system: String,
    /// The conversation, oldest first.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    pub tools: Vec<ToolSpec>,
    /// `agent.toml [model_params]`, passed through to the provider as top-level body fields.
    #[serde(default)]
    pub params: Map<String, Value>,
}

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Tool name.
    pub name: String,
    /// What the tool does (shown to the model).
    pub description: String,
    /// JSON Schema of the tool's input.
    pub input_schema: Value,
}

/// One entry of the provider-neutral conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// A user message.
    User {
        /// The user's text.
        text: String,
    },
    /// One assistant step: its text, reasoning and tool calls.
    Assistant {
        /// Assistant text (may be empty when the step only called tools).
        text: String,
        /// Reasoning the provider returned, with its signature when it has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning: Option<Reasoning>,
        /// Tool calls of this step.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    ToolResult {
        /// The id of the call it answers.
        call_id: String,
        /// Tool name.
        tool: String,
        /// Result content (text and images).
        content: Vec<ContentPart>,
        /// Whether the result is an error.
        #[serde(default)]
        is_error: bool,
    },
}

/// A piece of tool-result content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// MIME type, e.g. `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Base64 data.
        data: String,
    },
}

/// Reasoning text of an assistant step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reasoning {
    /// The reasoning text.
    pub text: String,
    /// Provider signature that must be sent back with the reasoning (Anthropic thinking).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Parsed JSON arguments.
    pub input: Value,
}

impl ToolCall {
    /// The call as `actions.requested` logs it: `input` is the argument object after validation
    /// and alias mapping (the model's own when it did not validate); `subagent` names the
    /// subagent that made the call, if one did.
    pub fn to_requested(&self, input: Value, subagent: Option<String>) -> RequestedCall {
        RequestedCall {
            call_id: self.id.clone(),
            tool: self.name.clone(),
            input,
            subagent,
        }
    }
}

/// A logged call as the model sees it again when the conversation is rebuilt.
impl From<&RequestedCall> for ToolCall {
    fn from(call: &RequestedCall) -> Self {
        ToolCall {
            id: call.call_id.clone(),
            name: call.tool.clone(),
            input: call.input.clone(),
        }
    }
}

/// One streamed piece of a model response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Delta {
    /// The model that answers, as the provider names it (once, before the content).
    Model(String),
    /// Assistant text.
    Text(String),
    /// Reasoning text.
    Reasoning(String),
    /// Part of the reasoning's provider signature.
    ReasoningSignature(String),
    /// A tool call begins; `index` identifies it within this response.
    ToolCallStart {
        /// Position of the call within the response.
        index: usize,
        /// Provider call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// A fragment of a tool call's JSON arguments.
    ToolCallArgs {
        /// Which call the fragment belongs to.
        index: usize,
        /// The raw JSON fragment.
        fragment: String,
    },
    /// A tool call's arguments are complete.
    ToolCallEnd {
        /// Which call ended.
        index: usize,
    },
    /// Token usage of this response (providers send it once).
    Usage(Usage),
    /// Why the response ended; the last delta of a complete response.
    Finish(FinishReason),
}

/// A complete model response, folded from its deltas by [`ResponseAssembler`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Response {
    /// The model that answered, when the provider named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Assistant text.
    pub text: String,
    /// Reasoning, when the model produced any.
    pub reasoning: Option<Reasoning>,
    /// Tool calls, in the order they started.
    pub tool_calls: Vec<ToolCall>,
    /// Token usage; `None` when the provider reported none.
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Why the response ended (`None` when the stream ended without saying).
    pub finish_reason: Option<FinishReason>,
}

impl Response {
    /// The assistant message this response adds to the conversation.
    pub fn to_message(&self) -> Message {
        Message::Assistant {
            text: self.text.clone(),
            reasoning: self.reasoning.clone(),
            tool_calls: self.tool_calls.clone(),
        }
    }
}

#[derive(Debug)]
struct PendingCall {
    index: usize,
    id: String,
    name: String,
    arguments: String,
}

/// Folds [`Delta`]s into a [`Response`].
///
/// Tool-call arguments are concatenated per call and parsed as JSON when the response is
/// finished; empty arguments mean `{}`. Arguments that are not valid JSON make
/// [`ResponseAssembler::finish`] fail with [`ModelError::InvalidToolArguments`] (the turn fails
/// with a message naming the tool, rather than running a tool with guessed input).
#[derive(Debug, Default)]
pub struct ResponseAssembler {
    model: Option<String>,
    text: String,
    reasoning: Option<Reasoning>,
    calls: Vec<PendingCall>,
    usage: Option<Usage>,
    finish_reason: Option<FinishReason>,
}

impl ResponseAssembler {
    /// A new, empty assembler.
    pub fn new() -> ResponseAssembler {
        ResponseAssembler::default()
    }

    /// Adds one delta.
    pub fn push(&mut self, delta: &Delta) {
        match delta {
            Delta::Model(model) => self.model = Some(model.clone()),
            Delta::Text(text) => self.text.push_str(text),
            Delta::Reasoning(text) => self.reasoning_mut().text.push_str(text),
            Delta::ReasoningSignature(part) => self
                .reasoning_mut()
                .signature
                .get_or_insert_with(String::new)
                .push_str(part),
            Delta::ToolCallStart { index, id, name } => self.calls.push(PendingCall {
                index: *index,
                id: id.clone(),
                name: name.clone(),
                arguments: String::new(),
            }),
            Delta::ToolCallArgs { index, fragment } => {
                if let Some(call) = self.calls.iter_mut().rev().find(|c| c.index == *index) {
                    call.arguments.push_str(fragment);
                }
            }
            Delta::ToolCallEnd { .. } => {}
            Delta::Usage(usage) => *self.usage.get_or_insert_default() += *usage,
            Delta::Finish(reason) => self.finish_reason = Some(reason.clone()),
        }
    }

    fn reasoning_mut(&mut self) -> &mut Reasoning {
        self.reasoning.get_or_insert_with(|| Reasoning {
            text: String::new(),
            signature: None,
        })
    }

    /// The text streamed so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Finishes the response, parsing every tool call's arguments.
    pub fn finish(self) -> Result<Response, ModelError> {
        let tool_calls = self
            .calls
            .into_iter()
            .map(|call| {
                let input = if call.arguments.trim().is_empty() {
                    Value::Object(Map::new())
                } else {
                    serde_json::from_str(&call.arguments).map_err(|source| {
                        ModelError::InvalidToolArguments {
                            tool: call.name.clone(),
                            source,
                        }
                    })?
                };
                Ok(ToolCall {
                    id: call.id,
                    name: call.name,
                    input,
                })
            })
            .collect::<Result<Vec<_>, ModelError>>()?;
        Ok(Response {
            model: self.model,
            text: self.text,
            reasoning: self.reasoning,
            tool_calls,
            usage: self.usage,
            finish_reason: self.finish_reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn a_tool_call_maps_to_its_logged_call_and_back() {
        let call = ToolCall {
            id: "call_1".into(),
            name: "Read".into(),
            input: json!({"file_path": "a.md"}),
        };
        let logged = call.to_requested(json!({"path": "a.md"}), Some("researcher".into()));
        assert_eq!(
            logged,
            RequestedCall {
                call_id: "call_1".into(),
                tool: "Read".into(),
                input: json!({"path": "a.md"}),
                subagent: Some("researcher".into()),
            }
        );
        assert_eq!(
            ToolCall::from(&logged),
            ToolCall {
                id: "call_1".into(),
                name: "Read".into(),
                input: json!({"path": "a.md"}),
            }
        );
    }

    #[test]
    fn assembles_text_reasoning_and_tool_calls() {
        let deltas = [
            Delta::Model("gpt-test".into()),
            Delta::Reasoning("Think".into()),
            Delta::Reasoning("ing.".into()),
            Delta::ReasoningSignature("si".into()),
            Delta::ReasoningSignature("g".into()),
            Delta::Text("Hel".into()),
            Delta::Text("lo".into()),
            Delta::ToolCallStart {
                index: 1,
                id: "c1".into(),
                name: "Read".into(),
            },
            Delta::ToolCallStart {
                index: 2,
                id: "c2".into(),
                name: "Glob".into(),
            },
            Delta::ToolCallArgs {
                index: 1,
                fragment: "{\"pa".into(),
            },
            Delta::ToolCallArgs {
                index: 2,
                fragment: "".into(),
            },
            Delta::ToolCallArgs {
                index: 1,
                fragment: "th\":\"/a\"}".into(),
            },
            Delta::ToolCallEnd { index: 1 },
            Delta::ToolCallEnd { index: 2 },
            Delta::Usage(Usage {
                input_tokens: 3,
                output_tokens: 4,
                ..Usage::default()
            }),
            Delta::Finish(FinishReason::ToolCalls),
        ];
        let mut assembler = ResponseAssembler::new();
        for delta in &deltas {
            assembler.push(delta);
        }
        assert_eq!(assembler.text(), "Hello");
        assert_eq!(
            assembler.finish().unwrap(),
            Response {
                model: Some("gpt-test".into()),
                text: "Hello".into(),
                reasoning: Some(Reasoning {
                    text: "Thinking.".into(),
                    signature: Some("sig".into())
                }),
                tool_calls: vec![
                    ToolCall {
                        id: "c1".into(),
                        name: "Read".into(),
                        input: json!({"path": "/a"})
                    },
                    ToolCall {
                        id: "c2".into(),
                        name: "Glob".into(),
                        input: json!({})
                    },
                ],
                usage: Some(Usage {
                    input_tokens: 3,
                    output_tokens: 4,
                    ..Usage::default()
                }),
                finish_reason: Some(FinishReason::ToolCalls),
            }
        );
    }

    #[test]
    fn invalid_arguments_name_the_tool() {
        let mut assembler = ResponseAssembler::new();
        assembler.push(&Delta::ToolCallStart {
            index: 0,
            id: "c".into(),
            name: "Write".into(),
        });
        assembler.push(&Delta::ToolCallArgs {
            index: 0,
            fragment: "{\"path\":".into(),
        });
        let error = assembler.finish().unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("model sent invalid JSON arguments for tool Write: "),
            "{error}"
        );
    }

    #[test]
    fn conversation_serializes_provider_neutrally() {
        let messages = vec![
            Message::User { text: "hi".into() },
            Message::Assistant {
                text: String::new(),
                reasoning: None,
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "Read".into(),
                    input: json!({}),
                }],
            },
            Message::ToolResult {
                call_id: "c1".into(),
                tool: "Read".into(),
                content: vec![ContentPart::Image {
                    mime_type: "image/png".into(),
                    data: "AA==".into(),
                }],
                is_error: false,
            },
        ];
        let value = serde_json::to_value(&messages).unwrap();
        assert_eq!(
            value,
            json!([
                {"role": "user", "text": "hi"},
                {"role": "assistant", "text": "", "tool_calls": [{"id": "c1", "name": "Read", "input": {}}]},
                {"role": "tool_result", "call_id": "c1", "tool": "Read",
                 "content": [{"type": "image", "mimeType": "image/png", "data": "AA=="}], "is_error": false}
            ])
        );
        let back: Vec<Message> = serde_json::from_value(value).unwrap();
        assert_eq!(back, messages);
    }
}
