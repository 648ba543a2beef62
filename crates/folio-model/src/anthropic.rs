//! Anthropic Messages: request body and SSE event decoding, over the serde types of [`wire`].

mod wire;

use std::collections::BTreeSet;

use async_trait::async_trait;
use eventsource_stream::Event as SseEvent;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::http::{HttpTransport, WireDecoder};
use crate::{
    ContentPart, Delta, DeltaStream, FinishReason, Message, ModelError, ModelRequest, Provider,
    Usage,
};
use wire::{
    BlockDelta, CacheControl, ContentBlock, ImageSource, MessagesRequest, RequestBlock,
    RequestMessage, Role, StreamEvent, System, ToolDefinition, ToolResultPart, WireUsage,
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
    /// Mark the system prompt as a prompt-cache breakpoint ([`crate::ProviderConfig::cache`]).
    cache: bool,
}

impl AnthropicProvider {
    /// A client posting to `{base}/v1/messages` with `api_key`; `cache` sends the system prompt
    /// as a cached content block instead of a plain string.
    pub(crate) fn new(transport: HttpTransport, base: &str, api_key: String, cache: bool) -> Self {
        AnthropicProvider {
            transport,
            url: format!("{}/v1/messages", base.trim_end_matches('/')),
            api_key,
            cache,
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
        let body = request_body(request, self.cache);
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

/// The Messages request body: `[model_params]` passed through, then the fields Folio owns (which
/// win over a param of the same name; `max_tokens` only defaults). The system prompt is a plain
/// string, or with `cache` one text block marked as a prompt-cache breakpoint (some servers and
/// proxies speaking the format reject blocks there).
pub(crate) fn request_body(request: &ModelRequest, cache: bool) -> MessagesRequest<'_> {
    let system = (!request.system.is_empty()).then(|| {
        if cache {
            System::Blocks(vec![RequestBlock::Text {
                text: &request.system,
                cache_control: Some(CacheControl::Ephemeral),
            }])
        } else {
            System::Text(&request.system)
        }
    });
    let tools = (!request.tools.is_empty()).then(|| {
        request
            .tools
            .iter()
            .map(|tool| ToolDefinition {
                name: &tool.name,
                description: &tool.description,
                input_schema: &tool.input_schema,
            })
            .collect()
    });
    let mut params = request.params.clone();
    for owned in ["model", "messages", "stream"] {
        params.remove(owned);
    }
    if system.is_some() {
        params.remove("system");
    }
    if tools.is_some() {
        params.remove("tools");
    }
    let max_tokens = (!params.contains_key("max_tokens")).then_some(DEFAULT_MAX_TOKENS);
    MessagesRequest {
        params,
        model: &request.model,
        max_tokens,
        system,
        messages: messages(&request.messages),
        tools,
        stream: true,
    }
}

/// Maps the conversation to alternating user/assistant messages of content blocks.
fn messages(conversation: &[Message]) -> Vec<RequestMessage<'_>> {
    let mut out: Vec<RequestMessage<'_>> = Vec::new();
    for message in conversation {
        let (role, blocks) = match message {
            Message::User { text } => (
                Role::User,
                vec![RequestBlock::Text {
                    text,
                    cache_control: None,
                }],
            ),
            Message::Assistant {
                text,
                reasoning,
                tool_calls,
            } => {
                let mut blocks = Vec::new();
                // Thinking goes back only with its signature (the API rejects unsigned thinking),
                // and not when the signature is a Responses model's reasoning items.
                if let Some(reasoning) = reasoning
                    && let Some(signature) = &reasoning.signature
                    && !crate::responses::is_reasoning_items(signature)
                {
                    blocks.push(RequestBlock::Thinking {
                        thinking: &reasoning.text,
                        signature,
                    });
                }
                if !text.is_empty() {
                    blocks.push(RequestBlock::Text {
                        text,
                        cache_control: None,
                    });
                }
                for call in tool_calls {
                    blocks.push(RequestBlock::ToolUse {
                        id: &call.id,
                        name: &call.name,
                        input: &call.input,
                    });
                }
                (Role::Assistant, blocks)
            }
            Message::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => {
                let content = content
                    .iter()
                    .map(|part| match part {
                        ContentPart::Text { text } => ToolResultPart::Text { text },
                        ContentPart::Image { mime_type, data } => ToolResultPart::Image {
                            source: ImageSource::Base64 {
                                media_type: mime_type,
                                data,
                            },
                        },
                    })
                    .collect();
                let block = RequestBlock::ToolResult {
                    tool_use_id: call_id,
                    is_error: *is_error,
                    content,
                };
                (Role::User, vec![block])
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => out.push(RequestMessage {
                role,
                content: blocks,
            }),
        }
    }
    out
}

/// Decodes Messages SSE events (`message_start` … `message_stop`, `ping`, `error`).
#[derive(Default)]
pub(crate) struct EventDecoder {
    tool_blocks: BTreeSet<usize>,
    usage: Usage,
    finish: Option<FinishReason>,
    done: bool,
}

impl EventDecoder {
    fn read_usage(&mut self, usage: &WireUsage) {
        if let Some(n) = usage.input_tokens {
            self.usage.input_tokens = n;
        }
        if let Some(n) = usage.output_tokens {
            self.usage.output_tokens = n;
        }
        if let Some(n) = usage.cache_read_input_tokens {
            self.usage.cache_read_tokens = n;
        }
        if let Some(n) = usage.cache_creation_input_tokens {
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

/// Reads one event's data. The event's type is its `type` field; data without one (which the
/// API never sends, but proxies might) takes the SSE `event:` name instead.
fn parse_event(event: &SseEvent) -> Result<StreamEvent, ModelError> {
    let malformed = |source| ModelError::Malformed {
        provider: "anthropic".to_string(),
        what: "stream event",
        excerpt: crate::http::excerpt(&event.data),
        source,
    };
    match serde_json::from_str::<StreamEvent>(&event.data) {
        Ok(parsed) => Ok(parsed),
        Err(first) => {
            let Ok(Value::Object(mut fields)) = serde_json::from_str::<Value>(&event.data) else {
                return Err(malformed(first));
            };
            if fields.contains_key("type") || event.event.is_empty() {
                return Err(malformed(first));
            }
            fields.insert("type".into(), Value::String(event.event.clone()));
            serde_json::from_value(Value::Object(fields)).map_err(malformed)
        }
    }
}

/// `text` unless it is empty.
fn non_empty(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

impl WireDecoder for EventDecoder {
    fn decode(&mut self, event: &SseEvent) -> Result<Vec<Delta>, ModelError> {
        let mut out = Vec::new();
        if event.data.trim().is_empty() {
            return Ok(out);
        }
        match parse_event(event)? {
            StreamEvent::MessageStart { message } => {
                out.extend(message.model.and_then(non_empty).map(Delta::Model));
                if let Some(usage) = &message.usage {
                    self.read_usage(usage);
                }
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => match content_block {
                ContentBlock::Text { text } => out.extend(non_empty(text).map(Delta::Text)),
                ContentBlock::Thinking {
                    thinking,
                    signature,
                } => {
                    out.extend(non_empty(thinking).map(Delta::Reasoning));
                    out.extend(non_empty(signature).map(Delta::ReasoningSignature));
                }
                ContentBlock::ToolUse { id, name, input } => {
                    self.tool_blocks.insert(index);
                    out.push(Delta::ToolCallStart { index, id, name });
                    if let Some(input) = input.filter(|input| !input.is_empty()) {
                        out.push(Delta::ToolCallArgs {
                            index,
                            fragment: Value::Object(input).to_string(),
                        });
                    }
                }
                ContentBlock::Unknown => {}
            },
            StreamEvent::ContentBlockDelta { index, delta } => match delta {
                BlockDelta::TextDelta { text } => out.extend(non_empty(text).map(Delta::Text)),
                BlockDelta::ThinkingDelta { thinking } => {
                    out.extend(non_empty(thinking).map(Delta::Reasoning));
                }
                BlockDelta::SignatureDelta { signature } => {
                    out.extend(non_empty(signature).map(Delta::ReasoningSignature));
                }
                BlockDelta::InputJsonDelta { partial_json } => {
                    out.extend(
                        non_empty(partial_json)
                            .map(|fragment| Delta::ToolCallArgs { index, fragment }),
                    );
                }
                BlockDelta::Unknown => {}
            },
            StreamEvent::ContentBlockStop { index } => {
                if self.tool_blocks.remove(&index) {
                    out.push(Delta::ToolCallEnd { index });
                }
            }
            StreamEvent::MessageDelta { delta, usage } => {
                if let Some(reason) = &delta.stop_reason {
                    self.finish = Some(stop_reason(reason));
                }
                if let Some(usage) = &usage {
                    self.read_usage(usage);
                }
            }
            StreamEvent::MessageStop => {
                out.push(Delta::Usage(self.usage));
                out.push(Delta::Finish(
                    self.finish.clone().unwrap_or(FinishReason::Stop),
                ));
                self.done = true;
            }
            StreamEvent::Error { error } => {
                return Err(ModelError::ErrorEvent {
                    provider: "anthropic".to_string(),
                    kind: Some(error.kind.unwrap_or_else(|| "error".to_string())),
                    message: error.message.unwrap_or_default(),
                });
            }
            StreamEvent::Ping | StreamEvent::Unknown => {}
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
    use serde_json::{Map, json};

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
                Message::User {
                    text: "and?".into(),
                },
                Message::Assistant {
                    text: "from gpt-5".into(),
                    reasoning: Some(Reasoning {
                        text: "a Responses model's summary".into(),
                        signature: Some(
                            r#"[{"id":"rs_1","summary":[],"encrypted_content":"gAAA"}]"#.into(),
                        ),
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
            serde_json::to_value(request_body(&request, true)).unwrap(),
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
                    {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
                    {"role": "user", "content": [{"type": "text", "text": "and?"}]},
                    {"role": "assistant", "content": [{"type": "text", "text": "from gpt-5"}]}
                ],
                "tools": [{"name": "Read", "description": "read", "input_schema": {"type": "object"}}]
            })
        );
    }

    #[test]
    fn the_system_prompt_is_a_plain_string_unless_caching_is_on() {
        let request = ModelRequest {
            model: "claude-test".into(),
            system: "sys".into(),
            messages: vec![Message::User { text: "hi".into() }],
            tools: vec![],
            params: Map::new(),
        };
        let body = |cache| serde_json::to_value(request_body(&request, cache)).unwrap();
        assert_eq!(body(false)["system"], json!("sys"));
        assert_eq!(
            body(true)["system"],
            json!([{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}])
        );
    }

    /// Feeds `(event name, data)` pairs to a fresh decoder and collects the deltas.
    fn decode_all(events: &[(&str, &str)]) -> Result<Vec<Delta>, ModelError> {
        let mut decoder = EventDecoder::default();
        let mut out = Vec::new();
        for (name, data) in events {
            out.extend(decoder.decode(&SseEvent {
                event: name.to_string(),
                data: data.to_string(),
                ..SseEvent::default()
            })?);
        }
        Ok(out)
    }

    /// A stream shaped like the API's (extra fields everywhere, server-tool blocks, a
    /// `citations_delta`, an event type from the future, a proxy that drops `type`): what Folio
    /// knows decodes, the rest is skipped.
    #[test]
    fn real_shaped_stream_decodes_and_skips_what_it_does_not_know() {
        let deltas = decode_all(&[
            (
                "message_start",
                r#"{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":300,"cache_creation":{"ephemeral_5m_input_tokens":0},"output_tokens":1,"service_tier":"standard"}}}"#,
            ),
            ("ping", r#"{"type": "ping"}"#),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}"#,
            ),
            ("content_block_stop", r#"{"type":"content_block_stop","index":0}"#),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":"","citations":null}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"citations_delta","citation":{"type":"web_search_result_location","url":"https://x"}}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi"}}"#,
            ),
            // An event type this decoder has never heard of, with fields of its own.
            (
                "content_block_annotation",
                r#"{"type":"content_block_annotation","index":1,"annotation":{"kind":"new","weight":0.5}}"#,
            ),
            // No `type` in the data: the SSE event name stands in.
            ("content_block_stop", r#"{"index":1}"#),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"Read","input":{"path":"/a"},"caller":{"type":"direct"}}}"#,
            ),
            ("content_block_stop", r#"{"type":"content_block_stop","index":2}"#),
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null,"container":null},"usage":{"output_tokens":42,"server_tool_use":{"web_search_requests":1}},"context_management":{"applied_edits":[]}}"#,
            ),
            ("message_stop", r#"{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":12}}"#),
        ])
        .unwrap();
        assert_eq!(
            deltas,
            vec![
                Delta::Model("claude-sonnet-4-5-20250929".into()),
                Delta::Text("Hi".into()),
                Delta::ToolCallStart {
                    index: 2,
                    id: "toolu_1".into(),
                    name: "Read".into()
                },
                Delta::ToolCallArgs {
                    index: 2,
                    fragment: r#"{"path":"/a"}"#.into()
                },
                Delta::ToolCallEnd { index: 2 },
                Delta::Usage(Usage {
                    input_tokens: 12,
                    output_tokens: 42,
                    cache_read_tokens: 300,
                    cache_write_tokens: 0,
                    cost_usd: None,
                }),
                Delta::Finish(FinishReason::ToolCalls),
            ]
        );
    }

    #[test]
    fn malformed_events_and_error_events_are_clear_errors() {
        let error = decode_all(&[(
            "content_block_delta",
            r#"{"type":"content_block_delta","index":"one","delta":{"type":"text_delta","text":"x"}}"#,
        )])
        .unwrap_err();
        assert!(
            matches!(
                &error,
                ModelError::Malformed {
                    what: "stream event",
                    ..
                }
            ),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(
            message.starts_with("anthropic: invalid stream event (invalid type: string \"one\""),
            "{message}"
        );
        assert!(message.ends_with(r#"{"type":"content_block_delta","index":"one","delta":{"type":"text_delta","text":"x"}}"#), "{message}");

        let error = decode_all(&[("message_start", "{not json")]).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("anthropic: invalid stream event (key must be a string"),
            "{error}"
        );

        let error = decode_all(&[(
            "error",
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}"#,
        )])
        .unwrap_err();
        assert!(
            matches!(&error, ModelError::ErrorEvent { kind: Some(kind), .. } if kind == "overloaded_error"),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "anthropic: error in stream: overloaded_error: Overloaded"
        );
    }
}
