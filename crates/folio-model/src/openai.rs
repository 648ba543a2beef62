//! OpenAI Chat Completions (and OpenAI-compatible servers): request body and SSE chunk decoding.

use std::collections::BTreeMap;

use async_trait::async_trait;
use eventsource_stream::Event as SseEvent;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::http::{HttpTransport, WireDecoder};
use crate::{
    ContentPart, Delta, DeltaStream, FinishReason, Message, ModelError, ModelRequest, Provider,
    Usage,
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

/// The Chat Completions request body: params first, then the fields Folio owns. `stream`
/// false asks for one whole `chat.completion` (which carries usage on every server).
pub(crate) fn request_body(request: &ModelRequest, stream: bool) -> Value {
    let mut body: Map<String, Value> = request.params.clone();
    body.insert("model".into(), json!(request.model));
    body.insert("messages".into(), Value::Array(messages(request)));
    body.insert("stream".into(), json!(stream));
    if stream {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    } else {
        body.remove("stream_options");
    }
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.input_schema,
                    }
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    Value::Object(body)
}

fn messages(request: &ModelRequest) -> Vec<Value> {
    let mut out = Vec::new();
    if !request.system.is_empty() {
        out.push(json!({"role": "system", "content": request.system}));
    }
    // Images in tool results cannot go in a `tool` message: they follow as one user message.
    let mut pending_images: Vec<Value> = Vec::new();
    for message in &request.messages {
        if !matches!(message, Message::ToolResult { .. }) && !pending_images.is_empty() {
            out.push(json!({"role": "user", "content": std::mem::take(&mut pending_images)}));
        }
        match message {
            Message::User { text } => out.push(json!({"role": "user", "content": text})),
            Message::Assistant {
                text, tool_calls, ..
            } => {
                let mut entry = Map::new();
                entry.insert("role".into(), json!("assistant"));
                entry.insert(
                    "content".into(),
                    if text.is_empty() {
                        Value::Null
                    } else {
                        json!(text)
                    },
                );
                if !tool_calls.is_empty() {
                    let calls = tool_calls
                        .iter()
                        .map(|call| {
                            json!({
                                "id": call.id,
                                "type": "function",
                                "function": {"name": call.name, "arguments": call.input.to_string()},
                            })
                        })
                        .collect();
                    entry.insert("tool_calls".into(), Value::Array(calls));
                }
                out.push(Value::Object(entry));
            }
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
                            pending_images.push(json!({
                                "type": "image_url",
                                "image_url": {"url": format!("data:{mime_type};base64,{data}")},
                            }));
                        }
                    }
                }
                out.push(json!({"role": "tool", "tool_call_id": call_id, "content": text}));
            }
        }
    }
    if !pending_images.is_empty() {
        out.push(json!({"role": "user", "content": pending_images}));
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

    fn protocol(&self, message: String) -> ModelError {
        ModelError::Protocol {
            provider: self.provider.to_string(),
            message,
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
        let chunk: Value = serde_json::from_str(data).map_err(|error| {
            self.protocol(format!(
                "invalid stream chunk ({error}): {}",
                crate::http::excerpt(data)
            ))
        })?;
        if let Some(error) = chunk.get("error").filter(|error| !error.is_null()) {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| error.to_string());
            return Err(self.protocol(format!("error in stream: {message}")));
        }
        if !self.model_sent
            && let Some(model) = chunk.get("model").and_then(Value::as_str)
            && !model.is_empty()
        {
            self.model_sent = true;
            out.push(Delta::Model(model.to_string()));
        }
        for choice in chunk
            .get("choices")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(delta) = choice.get("delta").or_else(|| choice.get("message")) {
                for key in ["reasoning_content", "reasoning"] {
                    if let Some(text) = delta.get(key).and_then(Value::as_str)
                        && !text.is_empty()
                    {
                        out.push(Delta::Reasoning(text.to_string()));
                    }
                }
                if let Some(text) = delta.get("content").and_then(Value::as_str)
                    && !text.is_empty()
                {
                    out.push(Delta::Text(text.to_string()));
                }
                for (position, call) in delta
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    let index = call
                        .get("index")
                        .and_then(Value::as_u64)
                        .map_or(position, |index| index as usize);
                    let function = call.get("function");
                    if let std::collections::btree_map::Entry::Vacant(e) = self.calls.entry(index) {
                        let id = call
                            .get("id")
                            .and_then(Value::as_str)
                            .map_or_else(|| format!("call_{index}"), str::to_string);
                        let name = function
                            .and_then(|f| f.get("name"))
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string();
                        e.insert(false);
                        out.push(Delta::ToolCallStart { index, id, name });
                    }
                    if let Some(fragment) = function
                        .and_then(|f| f.get("arguments"))
                        .and_then(Value::as_str)
                        && !fragment.is_empty()
                    {
                        out.push(Delta::ToolCallArgs {
                            index,
                            fragment: fragment.to_string(),
                        });
                    }
                }
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish = Some(FinishReason::parse(reason));
                self.end_calls(&mut out);
            }
        }
        if let Some(usage) = chunk.get("usage").filter(|usage| !usage.is_null()) {
            let count = |value: Option<&Value>| value.and_then(Value::as_u64).unwrap_or(0);
            let prompt = count(usage.get("prompt_tokens"));
            let cached = count(
                usage
                    .get("prompt_tokens_details")
                    .and_then(|details| details.get("cached_tokens")),
            );
            out.push(Delta::Usage(Usage {
                input_tokens: prompt.saturating_sub(cached),
                output_tokens: count(usage.get("completion_tokens")),
                cache_read_tokens: cached,
                cache_write_tokens: 0,
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
            request_body(&request, true),
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
}
