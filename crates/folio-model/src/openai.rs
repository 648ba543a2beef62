//! OpenAI Chat Completions (and OpenAI-compatible servers): request body and SSE chunk decoding,
//! over the serde types of [`wire`].

mod wire;

use std::collections::BTreeMap;

use async_trait::async_trait;
use eventsource_stream::Event as SseEvent;
use tokio_util::sync::CancellationToken;

use crate::http::{HttpTransport, WireDecoder};
use crate::{
    ContentPart, Delta, DeltaStream, FinishReason, Message, ModelError, ModelRequest, Provider,
    Usage,
};
use wire::{
    ChatChunk, ChatMessage, ChatRequest, ChatTool, ChatToolCall, FunctionCall, FunctionDefinition,
    ImageUrl, StreamOptions, UserContent, UserPart,
};

/// A Chat Completions client.
pub(crate) struct OpenAiProvider {
    transport: HttpTransport,
    url: String,
    api_key: Option<String>,
}

impl OpenAiProvider {
    /// A client posting to `{base}/chat/completions`, with `api_key` as bearer token when given.
    pub(crate) fn new(transport: HttpTransport, base: &str, api_key: Option<String>) -> Self {
        OpenAiProvider {
            transport,
            url: format!("{}/chat/completions", base.trim_end_matches('/')),
            api_key,
        }
    }
}

#[async_trait]
impl Provider for OpenAiProvider {
    fn name(&self) -> Option<&'static str> {
        Some("openai")
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        cancel: CancellationToken,
    ) -> Result<DeltaStream, ModelError> {
        let body = request_body(request, self.transport.streams());
        let build = || {
            let builder = self.transport.client().post(&self.url).json(&body);
            match &self.api_key {
                Some(key) => builder.bearer_auth(key),
                None => builder,
            }
        };
        let decoder = ChunkDecoder::new(self.transport.provider());
        self.transport.stream(build, decoder, cancel).await
    }
}

/// The Chat Completions request body: `[model_params]` passed through, then the fields Folio
/// owns (which win over a param of the same name). `stream` false asks for one whole
/// `chat.completion` (which carries usage on every server).
pub(crate) fn request_body(request: &ModelRequest, stream: bool) -> ChatRequest<'_> {
    let tools = (!request.tools.is_empty()).then(|| {
        request
            .tools
            .iter()
            .map(|tool| ChatTool::Function {
                function: FunctionDefinition {
                    name: &tool.name,
                    description: &tool.description,
                    parameters: &tool.input_schema,
                },
            })
            .collect()
    });
    let mut params = request.params.clone();
    for owned in ["model", "messages", "stream", "stream_options"] {
        params.remove(owned);
    }
    if tools.is_some() {
        params.remove("tools");
    }
    ChatRequest {
        params,
        model: &request.model,
        messages: messages(request),
        stream,
        stream_options: stream.then_some(StreamOptions {
            include_usage: true,
        }),
        tools,
    }
}

fn messages(request: &ModelRequest) -> Vec<ChatMessage<'_>> {
    let mut out = Vec::new();
    if !request.system.is_empty() {
        out.push(ChatMessage::System {
            content: &request.system,
        });
    }
    // Images in tool results cannot go in a `tool` message: they follow as one user message.
    let mut pending_images: Vec<UserPart> = Vec::new();
    for message in &request.messages {
        if !matches!(message, Message::ToolResult { .. }) && !pending_images.is_empty() {
            out.push(ChatMessage::User {
                content: UserContent::Parts(std::mem::take(&mut pending_images)),
            });
        }
        match message {
            Message::User { text } => out.push(ChatMessage::User {
                content: UserContent::Text(text),
            }),
            Message::Assistant {
                text, tool_calls, ..
            } => out.push(ChatMessage::Assistant {
                content: (!text.is_empty()).then_some(text.as_str()),
                tool_calls: tool_calls
                    .iter()
                    .map(|call| ChatToolCall::Function {
                        id: &call.id,
                        function: FunctionCall {
                            name: &call.name,
                            arguments: call.input.to_string(),
                        },
                    })
                    .collect(),
            }),
            Message::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => {
                let mut text = String::new();
                if *is_error {
                    text.push_str("Error: ");
                }
                for part in content {
                    match part {
                        ContentPart::Text { text: part } => text.push_str(part),
                        ContentPart::Image { mime_type, data } => {
                            text.push_str(&format!("[image {mime_type} attached below]"));
                            pending_images.push(UserPart::ImageUrl {
                                image_url: ImageUrl {
                                    url: format!("data:{mime_type};base64,{data}"),
                                },
                            });
                        }
                    }
                }
                out.push(ChatMessage::Tool {
                    tool_call_id: call_id,
                    content: text,
                });
            }
        }
    }
    if !pending_images.is_empty() {
        out.push(ChatMessage::User {
            content: UserContent::Parts(pending_images),
        });
    }
    out
}

/// Decodes `chat.completion.chunk` events and the final `[DONE]`; a whole (non-streamed)
/// `chat.completion` arrives as one event and decodes the same way, its `message` read as the
/// one and only `delta`.
pub(crate) struct ChunkDecoder {
    provider: &'static str,
    /// Tool-call index → whether its end was already emitted.
    calls: BTreeMap<usize, bool>,
    finish: Option<FinishReason>,
    /// Whether the answering model was already emitted (every chunk names it).
    model_sent: bool,
    done: bool,
}

impl ChunkDecoder {
    pub(crate) fn new(provider: &'static str) -> Self {
        ChunkDecoder {
            provider,
            calls: BTreeMap::new(),
            finish: None,
            model_sent: false,
            done: false,
        }
    }

    fn end_calls(&mut self, out: &mut Vec<Delta>) {
        for (index, ended) in self.calls.iter_mut() {
            if !*ended {
                *ended = true;
                out.push(Delta::ToolCallEnd { index: *index });
            }
        }
    }
}

impl WireDecoder for ChunkDecoder {
    fn decode(&mut self, event: &SseEvent) -> Result<Vec<Delta>, ModelError> {
        let mut out = Vec::new();
        let data = event.data.trim();
        if data == "[DONE]" {
            self.end_calls(&mut out);
            out.push(Delta::Finish(
                self.finish.clone().unwrap_or(FinishReason::Stop),
            ));
            self.done = true;
            return Ok(out);
        }
        if data.is_empty() {
            return Ok(out);
        }
        let chunk: ChatChunk =
            serde_json::from_str(data).map_err(|source| ModelError::Malformed {
                provider: self.provider.to_string(),
                what: "stream chunk",
                excerpt: crate::http::excerpt(data),
                source,
            })?;
        if let Some(error) = &chunk.error {
            return Err(ModelError::ErrorEvent {
                provider: self.provider.to_string(),
                kind: None,
                message: error.message(),
            });
        }
        if !self.model_sent
            && let Some(model) = chunk.model
            && !model.is_empty()
        {
            self.model_sent = true;
            out.push(Delta::Model(model));
        }
        for choice in chunk.choices.into_iter().flatten() {
            if let Some(delta) = choice.delta.or(choice.message) {
                for text in [&delta.reasoning_content, &delta.reasoning] {
                    if let Some(text) = text.non_empty() {
                        out.push(Delta::Reasoning(text.to_string()));
                    }
                }
                if let Some(text) = delta.content.non_empty() {
                    out.push(Delta::Text(text.to_string()));
                }
                for (position, call) in delta.tool_calls.into_iter().flatten().enumerate() {
                    let index = call.index.unwrap_or(position);
                    let function = call.function.unwrap_or_default();
                    if let std::collections::btree_map::Entry::Vacant(e) = self.calls.entry(index) {
                        let id = call.id.unwrap_or_else(|| format!("call_{index}"));
                        let name = function.name.unwrap_or_default();
                        e.insert(false);
                        out.push(Delta::ToolCallStart { index, id, name });
                    }
                    if let Some(fragment) = function.arguments
                        && !fragment.is_empty()
                    {
                        out.push(Delta::ToolCallArgs { index, fragment });
                    }
                }
            }
            if let Some(reason) = &choice.finish_reason {
                self.finish = Some(FinishReason::parse(reason));
                self.end_calls(&mut out);
            }
        }
        if let Some(usage) = chunk.usage {
            let prompt = usage.prompt_tokens.unwrap_or(0);
            let cached = usage
                .prompt_tokens_details
                .and_then(|details| details.cached_tokens)
                .unwrap_or(0);
            out.push(Delta::Usage(Usage {
                input_tokens: prompt.saturating_sub(cached),
                output_tokens: usage.completion_tokens.unwrap_or(0),
                cache_read_tokens: cached,
                cache_write_tokens: 0,
                cost_usd: None,
            }));
        }
        Ok(out)
    }

    fn end_of_body(&mut self) -> Result<Vec<Delta>, ModelError> {
        // Some compatible servers omit `[DONE]`; a finish reason is enough to call it complete.
        match self.finish.clone() {
            Some(reason) => {
                let mut out = Vec::new();
                self.end_calls(&mut out);
                out.push(Delta::Finish(reason));
                self.done = true;
                Ok(out)
            }
            None => Err(ModelError::Stream {
                provider: self.provider.to_string(),
                message: "stream ended before the response finished".to_string(),
            }),
        }
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ToolCall, ToolSpec};
    use pretty_assertions::assert_eq;
    use serde_json::{Map, json};

    #[test]
    fn request_body_maps_the_conversation() {
        let mut params = Map::new();
        params.insert("temperature".into(), json!(0.2));
        params.insert("stream".into(), json!(false));
        let request = ModelRequest {
            model: "gpt-test".into(),
            system: "sys".into(),
            messages: vec![
                Message::User { text: "hi".into() },
                Message::Assistant {
                    text: String::new(),
                    reasoning: None,
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "Read".into(),
                        input: json!({"path": "/a.png"}),
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
                Message::Assistant {
                    text: "done".into(),
                    reasoning: None,
                    tool_calls: vec![],
                },
            ],
            tools: vec![ToolSpec {
                name: "Read".into(),
                description: "read".into(),
                input_schema: json!({"type": "object"}),
            }],
            params,
        };
        assert_eq!(
            serde_json::to_value(request_body(&request, true)).unwrap(),
            json!({
                "model": "gpt-test",
                "temperature": 0.2,
                "stream": true,
                "stream_options": {"include_usage": true},
                "messages": [
                    {"role": "system", "content": "sys"},
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "Read", "arguments": "{\"path\":\"/a.png\"}"}}
                    ]},
                    {"role": "tool", "tool_call_id": "c1", "content": "[image image/png attached below]"},
                    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}]},
                    {"role": "assistant", "content": "done"}
                ],
                "tools": [{"type": "function", "function": {"name": "Read", "description": "read", "parameters": {"type": "object"}}}]
            })
        );
    }

    /// Feeds `data` lines to a fresh decoder and collects the deltas.
    fn decode_all(chunks: &[&str]) -> Result<Vec<Delta>, ModelError> {
        let mut decoder = ChunkDecoder::new("openai-compatible");
        let mut out = Vec::new();
        for data in chunks {
            out.extend(decoder.decode(&SseEvent {
                data: data.to_string(),
                ..SseEvent::default()
            })?);
        }
        Ok(out)
    }

    /// Chunks as compatible servers send them: `null`s where fields are absent, extra fields,
    /// reasoning as an object (skipped), content as a part list (skipped), a tool call without
    /// `index` or `id`, usage `null` until the last chunk.
    #[test]
    fn compatible_server_chunks_decode() {
        let deltas = decode_all(&[
            r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3","system_fingerprint":null,"choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":"Hm","tool_calls":null},"logprobs":null,"finish_reason":null}],"usage":null}"#,
            r#"{"model":"qwen3","choices":[{"index":0,"delta":{"reasoning":{"effort":"low"},"content":[{"type":"thinking","thinking":"x"}]}}]}"#,
            r#"{"model":"qwen3","choices":[{"index":0,"delta":{"content":"Hi","annotations":[]}}]}"#,
            r#"{"model":"qwen3","choices":[{"index":0,"delta":{"tool_calls":[{"type":"function","function":{"name":"Read","arguments":"{\"path\":"}}]}}]}"#,
            r#"{"model":"qwen3","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"/a\"}"}}]}}]}"#,
            r#"{"model":"qwen3","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls","stop_reason":null}]}"#,
            r#"{"model":"qwen3","choices":[],"usage":{"prompt_tokens":50,"completion_tokens":7,"total_tokens":57,"prompt_tokens_details":{"cached_tokens":20},"timings":{"predicted_ms":3.5}}}"#,
            "[DONE]",
        ])
        .unwrap();
        assert_eq!(
            deltas,
            vec![
                Delta::Model("qwen3".into()),
                Delta::Reasoning("Hm".into()),
                Delta::Text("Hi".into()),
                Delta::ToolCallStart {
                    index: 0,
                    id: "call_0".into(),
                    name: "Read".into()
                },
                Delta::ToolCallArgs {
                    index: 0,
                    fragment: "{\"path\":".into()
                },
                Delta::ToolCallArgs {
                    index: 0,
                    fragment: "\"/a\"}".into()
                },
                Delta::ToolCallEnd { index: 0 },
                Delta::Usage(Usage {
                    input_tokens: 30,
                    output_tokens: 7,
                    cache_read_tokens: 20,
                    cache_write_tokens: 0,
                    cost_usd: None,
                }),
                Delta::Finish(FinishReason::ToolCalls),
            ]
        );
    }

    #[test]
    fn malformed_chunks_and_error_chunks_are_clear_errors() {
        let error = decode_all(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":5}}]}}]}"#,
        ])
        .unwrap_err();
        assert!(
            matches!(
                &error,
                ModelError::Malformed {
                    what: "stream chunk",
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(
            error
                .to_string()
                .starts_with("openai-compatible: invalid stream chunk (invalid type: integer `5`, expected a string"),
            "{error}"
        );

        let error =
            decode_all(&[r#"{"error":{"message":"context too long","code":400}}"#]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "openai-compatible: error in stream: context too long"
        );
        let error = decode_all(&[r#"{"error":{"code":500}}"#]).unwrap_err();
        assert_eq!(
            error.to_string(),
            r#"openai-compatible: error in stream: {"code":500}"#
        );
    }
}
