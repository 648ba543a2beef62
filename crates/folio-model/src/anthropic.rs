//! Anthropic Messages: request body and SSE event decoding.

use std::collections::BTreeSet;

use async_trait::async_trait;
use eventsource_stream::Event as SseEvent;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::http::{HttpTransport, WireDecoder};
use crate::{
    ContentPart, Delta, DeltaStream, FinishReason, Message, ModelError, ModelRequest, Provider,
    Usage,
};

/// The `anthropic-version` header value.
const ANTHROPIC_VERSION: &str = "2023-06-01";
/// `max_tokens` when `[model_params]` does not set it (the API requires one).
const DEFAULT_MAX_TOKENS: u64 = 8192;

/// A Messages API client.
pub(crate) struct AnthropicProvider {
    transport: HttpTransport,
    url: String,
    api_key: String,
}

impl AnthropicProvider {
    /// A client posting to `{base}/v1/messages` with `api_key`.
    pub(crate) fn new(transport: HttpTransport, base: &str, api_key: String) -> Self {
        AnthropicProvider {
            transport,
            url: format!("{}/v1/messages", base.trim_end_matches('/')),
            api_key,
        }
    }
}

#[async_trait]
impl Provider for AnthropicProvider {
    fn name(&self) -> Option<&'static str> {
        Some("anthropic")
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        cancel: CancellationToken,
    ) -> Result<DeltaStream, ModelError> {
        let body = request_body(request);
        let build = || {
            self.transport
                .client()
                .post(&self.url)
                .header("x-api-key", &self.api_key)
                .header("anthropic-version", ANTHROPIC_VERSION)
                .json(&body)
        };
        self.transport
            .stream(build, EventDecoder::default(), cancel)
            .await
    }
}

/// The Messages request body: params first, then the fields Folio owns.
pub(crate) fn request_body(request: &ModelRequest) -> Value {
    let mut body: Map<String, Value> = request.params.clone();
    body.insert("model".into(), json!(request.model));
    body.entry("max_tokens")
        .or_insert(json!(DEFAULT_MAX_TOKENS));
    if !request.system.is_empty() {
        body.insert(
            "system".into(),
            json!([{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}]),
        );
    }
    body.insert("messages".into(), Value::Array(messages(&request.messages)));
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.input_schema,
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    body.insert("stream".into(), json!(true));
    Value::Object(body)
}

/// Maps the conversation to alternating user/assistant messages of content blocks.
fn messages(conversation: &[Message]) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in conversation {
        let (role, blocks) = match message {
            Message::User { text } => ("user", vec![json!({"type": "text", "text": text})]),
            Message::Assistant {
                text,
                reasoning,
                tool_calls,
            } => {
                let mut blocks = Vec::new();
                // Thinking goes back only with its signature (the API rejects unsigned thinking).
                if let Some(reasoning) = reasoning
                    && let Some(signature) = &reasoning.signature
                {
                    blocks.push(json!({
                        "type": "thinking",
                        "thinking": reasoning.text,
                        "signature": signature,
                    }));
                }
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for call in tool_calls {
                    blocks.push(json!({
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.name,
                        "input": call.input,
                    }));
                }
                ("assistant", blocks)
            }
            Message::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => {
                let parts: Vec<Value> = content
                    .iter()
                    .map(|part| match part {
                        ContentPart::Text { text } => json!({"type": "text", "text": text}),
                        ContentPart::Image { mime_type, data } => json!({
                            "type": "image",
                            "source": {"type": "base64", "media_type": mime_type, "data": data},
                        }),
                    })
                    .collect();
                let mut block =
                    json!({"type": "tool_result", "tool_use_id": call_id, "content": parts});
                if *is_error {
                    block["is_error"] = json!(true);
                }
                ("user", vec![block])
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
            _ => out.push((role, blocks)),
        }
    }
    out.into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

/// Decodes Messages SSE events (`message_start` … `message_stop`, `ping`, `error`).
#[derive(Default)]
pub(crate) struct EventDecoder {
    tool_blocks: BTreeSet<usize>,
    usage: Usage,
    finish: Option<FinishReason>,
    done: bool,
}

fn protocol(message: String) -> ModelError {
    ModelError::Protocol {
        provider: "anthropic".to_string(),
        message,
    }
}

fn count(value: &Value, key: &str) -> Option<u64> {
    value.get(key).and_then(Value::as_u64)
}

impl EventDecoder {
    fn read_usage(&mut self, usage: &Value) {
        if let Some(n) = count(usage, "input_tokens") {
            self.usage.input_tokens = n;
        }
        if let Some(n) = count(usage, "output_tokens") {
            self.usage.output_tokens = n;
        }
        if let Some(n) = count(usage, "cache_read_input_tokens") {
            self.usage.cache_read_tokens = n;
        }
        if let Some(n) = count(usage, "cache_creation_input_tokens") {
            self.usage.cache_write_tokens = n;
        }
    }
}

fn stop_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" => FinishReason::Length,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_string()),
    }
}

impl WireDecoder for EventDecoder {
    fn decode(&mut self, event: &SseEvent) -> Result<Vec<Delta>, ModelError> {
        let mut out = Vec::new();
        if event.data.trim().is_empty() {
            return Ok(out);
        }
        let data: Value = serde_json::from_str(&event.data).map_err(|error| {
            protocol(format!(
                "invalid stream event ({error}): {}",
                crate::http::excerpt(&event.data)
            ))
        })?;
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(&event.event);
        let index = data.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
        let text_of = |value: &Value, key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
                .map(str::to_string)
        };
        match kind {
            "message_start" => {
                let message = data.get("message");
                out.extend(
                    message
                        .and_then(|m| m.get("model"))
                        .and_then(Value::as_str)
                        .filter(|model| !model.is_empty())
                        .map(|model| Delta::Model(model.to_string())),
                );
                if let Some(usage) = message.and_then(|m| m.get("usage")) {
                    self.read_usage(usage);
                }
            }
            "content_block_start" => {
                let block = data.get("content_block").cloned().unwrap_or(Value::Null);
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => out.extend(text_of(&block, "text").map(Delta::Text)),
                    Some("thinking") => {
                        out.extend(text_of(&block, "thinking").map(Delta::Reasoning));
                        out.extend(text_of(&block, "signature").map(Delta::ReasoningSignature));
                    }
                    Some("tool_use") => {
                        self.tool_blocks.insert(index);
                        out.push(Delta::ToolCallStart {
                            index,
                            id: text_of(&block, "id").unwrap_or_default(),
                            name: text_of(&block, "name").unwrap_or_default(),
                        });
                        let input = block.get("input");
                        if let Some(input) =
                            input.filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
                        {
                            out.push(Delta::ToolCallArgs {
                                index,
                                fragment: input.to_string(),
                            });
                        }
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let delta = data.get("delta").cloned().unwrap_or(Value::Null);
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => out.extend(text_of(&delta, "text").map(Delta::Text)),
                    Some("thinking_delta") => {
                        out.extend(text_of(&delta, "thinking").map(Delta::Reasoning));
                    }
                    Some("signature_delta") => {
                        out.extend(text_of(&delta, "signature").map(Delta::ReasoningSignature));
                    }
                    Some("input_json_delta") => {
                        out.extend(
                            text_of(&delta, "partial_json")
                                .map(|fragment| Delta::ToolCallArgs { index, fragment }),
                        );
                    }
                    _ => {}
                }
            }
            "content_block_stop" if self.tool_blocks.remove(&index) => {
                out.push(Delta::ToolCallEnd { index });
            }
            "message_delta" => {
                if let Some(reason) = data
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    self.finish = Some(stop_reason(reason));
                }
                if let Some(usage) = data.get("usage") {
                    self.read_usage(usage);
                }
            }
            "message_stop" => {
                out.push(Delta::Usage(self.usage));
                out.push(Delta::Finish(
                    self.finish.clone().unwrap_or(FinishReason::Stop),
                ));
                self.done = true;
            }
            "error" => {
                let error = data.get("error").cloned().unwrap_or(Value::Null);
                let kind = error.get("type").and_then(Value::as_str).unwrap_or("error");
                let message = error.get("message").and_then(Value::as_str).unwrap_or("");
                return Err(protocol(format!("error in stream: {kind}: {message}")));
            }
            _ => {}
        }
        Ok(out)
    }

    fn end_of_body(&mut self) -> Result<Vec<Delta>, ModelError> {
        Err(ModelError::Stream {
            provider: "anthropic".to_string(),
            message: "stream ended before message_stop".to_string(),
        })
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Reasoning, ToolCall, ToolSpec};
    use pretty_assertions::assert_eq;

    #[test]
    fn request_body_merges_roles_and_keeps_signed_thinking() {
        let request = ModelRequest {
            model: "claude-test".into(),
            system: "sys".into(),
            messages: vec![
                Message::User { text: "hi".into() },
                Message::Assistant {
                    text: "looking".into(),
                    reasoning: Some(Reasoning {
                        text: "hmm".into(),
                        signature: Some("sig".into()),
                    }),
                    tool_calls: vec![
                        ToolCall {
                            id: "t1".into(),
                            name: "Read".into(),
                            input: json!({"path": "/a"}),
                        },
                        ToolCall {
                            id: "t2".into(),
                            name: "Read".into(),
                            input: json!({"path": "/b"}),
                        },
                    ],
                },
                Message::ToolResult {
                    call_id: "t1".into(),
                    tool: "Read".into(),
                    content: vec![ContentPart::Text { text: "A".into() }],
                    is_error: false,
                },
                Message::ToolResult {
                    call_id: "t2".into(),
                    tool: "Read".into(),
                    content: vec![ContentPart::Image {
                        mime_type: "image/png".into(),
                        data: "AA==".into(),
                    }],
                    is_error: true,
                },
                Message::Assistant {
                    text: "ok".into(),
                    reasoning: Some(Reasoning {
                        text: "unsigned".into(),
                        signature: None,
                    }),
                    tool_calls: vec![],
                },
            ],
            tools: vec![ToolSpec {
                name: "Read".into(),
                description: "read".into(),
                input_schema: json!({"type": "object"}),
            }],
            params: Map::new(),
        };
        assert_eq!(
            request_body(&request),
            json!({
                "model": "claude-test",
                "max_tokens": 8192,
                "stream": true,
                "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                    {"role": "assistant", "content": [
                        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                        {"type": "text", "text": "looking"},
                        {"type": "tool_use", "id": "t1", "name": "Read", "input": {"path": "/a"}},
                        {"type": "tool_use", "id": "t2", "name": "Read", "input": {"path": "/b"}}
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "A"}]},
                        {"type": "tool_result", "tool_use_id": "t2", "is_error": true, "content": [
                            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}
                        ]}
                    ]},
                    {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}
                ],
                "tools": [{"name": "Read", "description": "read", "input_schema": {"type": "object"}}]
            })
        );
    }
}
