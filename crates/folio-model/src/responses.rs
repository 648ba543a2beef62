//! OpenAI Responses (`POST /responses`): request body and event decoding, over the serde types
//! of [`wire`].
//!
//! Requests are stateless (`store: false`): the whole conversation goes in `input` every time.
//! A reasoning model's reasoning items (id, summary, encrypted content) must then come back in
//! the next request for the model to keep its reasoning across steps and turns; the decoder
//! hands them over as the step's reasoning signature (a JSON list of the items, see
//! [`reasoning_signature`]), which the session log keeps in `reasoning.completed` and the
//! conversation rebuild returns, and [`request_body`] sends them back in place. A signature that
//! is not such a list (another provider's) is not sent.

mod wire;

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use eventsource_stream::Event as SseEvent;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::http::{HttpTransport, WireDecoder};
use crate::{
    ContentPart, Delta, DeltaStream, FinishReason, Message, ModelError, ModelRequest, Provider,
    Usage,
};
use wire::{
    FunctionTool, InputItem, MessagePart, OutputContent, OutputItem, OutputPart, ReasoningItem,
    ResponseError, ResponsesRequest, Role, StreamEvent, SummaryPart, ToolOutput, WireResponse,
};

/// What `include` asks for when the model reasons: the encrypted reasoning to send back.
const ENCRYPTED_REASONING: &str = "reasoning.encrypted_content";

/// A Responses API client.
pub(crate) struct ResponsesProvider {
    transport: HttpTransport,
    url: String,
    api_key: Option<String>,
}

impl ResponsesProvider {
    /// A client posting to `{base}/responses`, with `api_key` as bearer token when given.
    pub(crate) fn new(transport: HttpTransport, base: &str, api_key: Option<String>) -> Self {
        ResponsesProvider {
            transport,
            url: format!("{}/responses", base.trim_end_matches('/')),
            api_key,
        }
    }
}

#[async_trait]
impl Provider for ResponsesProvider {
    fn name(&self) -> Option<&'static str> {
        Some("openai")
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        cancel: CancellationToken,
    ) -> Result<DeltaStream, ModelError> {
        let stream = self.transport.streams();
        let reasoning = reasoning_items(&request.messages);
        let body = request_body(request, &reasoning, stream);
        let build = || {
            let builder = self.transport.client().post(&self.url).json(&body);
            match &self.api_key {
                Some(key) => builder.bearer_auth(key),
                None => builder,
            }
        };
        let decoder = EventDecoder::new(self.transport.provider(), stream);
        self.transport.stream(build, decoder, cancel).await
    }
}

/// The reasoning items each assistant step carries in its signature, by message position
/// (steps whose signature is not a list of reasoning items are left out).
pub(crate) fn reasoning_items(messages: &[Message]) -> BTreeMap<usize, Vec<ReasoningItem>> {
    messages
        .iter()
        .enumerate()
        .filter_map(|(position, message)| match message {
            Message::Assistant {
                reasoning: Some(reasoning),
                ..
            } => Some((position, signature_items(reasoning.signature.as_deref()?)?)),
            _ => None,
        })
        .collect()
}

/// The reasoning items of a signature written by [`reasoning_signature`]; `None` for another
/// provider's signature.
fn signature_items(signature: &str) -> Option<Vec<ReasoningItem>> {
    serde_json::from_str(signature).ok()
}

/// Whether `signature` holds Responses reasoning items (which other providers must not send
/// as their own signature).
pub(crate) fn is_reasoning_items(signature: &str) -> bool {
    signature_items(signature).is_some()
}

/// The signature of a step's reasoning: its reasoning items as a JSON list.
fn reasoning_signature(items: &[ReasoningItem]) -> String {
    serde_json::to_string(items).unwrap_or_default()
}

/// The Responses request body: `[model_params]` passed through, with the Chat Completions
/// names mapped (`max_tokens` / `max_completion_tokens` → `max_output_tokens`,
/// `reasoning_effort` → `reasoning.effort`), then the fields Folio owns (which win over a param
/// of the same name). `store` defaults to `false` and `include` to
/// `["reasoning.encrypted_content"]` for a model that reasons (a `reasoning` param, or an
/// o-series / gpt-5 model id); a param of either name is sent as it is.
pub(crate) fn request_body<'a>(
    request: &'a ModelRequest,
    reasoning: &'a BTreeMap<usize, Vec<ReasoningItem>>,
    stream: bool,
) -> ResponsesRequest<'a> {
    let tools = (!request.tools.is_empty()).then(|| {
        request
            .tools
            .iter()
            .map(|tool| FunctionTool {
                kind: "function",
                name: &tool.name,
                description: &tool.description,
                parameters: &tool.input_schema,
                strict: false,
            })
            .collect()
    });
    let mut params = request.params.clone();
    for owned in ["model", "input", "stream", "messages", "stream_options"] {
        params.remove(owned);
    }
    if !request.system.is_empty() {
        params.remove("instructions");
    }
    if tools.is_some() {
        params.remove("tools");
    }
    map_chat_params(&mut params);
    params.entry("store").or_insert(Value::Bool(false));
    if !params.contains_key("include")
        && (params.contains_key("reasoning") || reasons_by_default(&request.model))
    {
        params.insert("include".into(), json!([ENCRYPTED_REASONING]));
    }
    ResponsesRequest {
        params,
        model: &request.model,
        instructions: (!request.system.is_empty()).then_some(request.system.as_str()),
        input: input(&request.messages, reasoning),
        tools,
        stream,
    }
}

/// Renames the Chat Completions params an agent may carry to their Responses names.
fn map_chat_params(params: &mut Map<String, Value>) {
    for chat in ["max_completion_tokens", "max_tokens"] {
        if let Some(value) = params.remove(chat) {
            params.entry("max_output_tokens").or_insert(value);
        }
    }
    // A `reasoning` that is not an object goes as written; the API names the problem.
    if let Some(effort) = params.remove("reasoning_effort")
        && let Value::Object(reasoning) = params
            .entry("reasoning")
            .or_insert_with(|| Value::Object(Map::new()))
    {
        reasoning.entry("effort").or_insert(effort);
    }
}

/// Whether OpenAI's model `id` reasons without being asked (o-series and gpt-5 models, not
/// their `-chat` variants): those get `include: ["reasoning.encrypted_content"]`, which other
/// models refuse.
fn reasons_by_default(id: &str) -> bool {
    let o_series = id
        .strip_prefix('o')
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
    (o_series || id.starts_with("gpt-5") || id.contains("codex")) && !id.contains("-chat")
}

fn input<'a>(
    messages: &'a [Message],
    reasoning: &'a BTreeMap<usize, Vec<ReasoningItem>>,
) -> Vec<InputItem<'a>> {
    let mut out = Vec::new();
    for (position, message) in messages.iter().enumerate() {
        match message {
            Message::User { text } => out.push(InputItem::Message {
                role: Role::User,
                content: vec![MessagePart::InputText { text }],
            }),
            Message::Assistant {
                text, tool_calls, ..
            } => {
                // Items without encrypted content cannot be resolved by a stateless request, and
                // a reasoning item must be followed by the output it led to.
                if !text.is_empty() || !tool_calls.is_empty() {
                    out.extend(
                        reasoning
                            .get(&position)
                            .into_iter()
                            .flatten()
                            .filter(|item| item.encrypted_content.is_some())
                            .map(InputItem::Reasoning),
                    );
                }
                if !text.is_empty() {
                    out.push(InputItem::Message {
                        role: Role::Assistant,
                        content: vec![MessagePart::OutputText { text }],
                    });
                }
                out.extend(tool_calls.iter().map(|call| InputItem::FunctionCall {
                    call_id: &call.id,
                    name: &call.name,
                    arguments: call.input.to_string(),
                }));
            }
            Message::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => out.push(InputItem::FunctionCallOutput {
                call_id,
                output: tool_output(content, *is_error),
            }),
        }
    }
    out
}

/// A tool result as `function_call_output.output`: one string, or text and image parts when
/// it holds an image. An error result starts with `Error: `.
fn tool_output(content: &[ContentPart], is_error: bool) -> ToolOutput<'_> {
    let prefix = if is_error { "Error: " } else { "" };
    if content
        .iter()
        .all(|part| matches!(part, ContentPart::Text { .. }))
    {
        let mut text = prefix.to_string();
        for part in content {
            if let ContentPart::Text { text: part } = part {
                text.push_str(part);
            }
        }
        return ToolOutput::Text(text);
    }
    let mut parts = Vec::new();
    if is_error {
        parts.push(OutputPart::InputText { text: prefix });
    }
    for part in content {
        parts.push(match part {
            ContentPart::Text { text } => OutputPart::InputText { text },
            ContentPart::Image { mime_type, data } => OutputPart::InputImage {
                image_url: format!("data:{mime_type};base64,{data}"),
            },
        });
    }
    ToolOutput::Parts(parts)
}

/// A function call of this response, by output index.
#[derive(Debug, Default)]
struct CallState {
    /// Whether an argument fragment was emitted.
    args_sent: bool,
    /// Whether its end was emitted.
    ended: bool,
}

/// Decodes Responses SSE events, or (`stream = false`) the one whole response object.
pub(crate) struct EventDecoder {
    provider: &'static str,
    stream: bool,
    model_sent: bool,
    calls: BTreeMap<usize, CallState>,
    /// Output indexes whose text arrived as deltas.
    text_streamed: BTreeSet<usize>,
    /// Output indexes whose reasoning arrived as deltas.
    reasoning_streamed: BTreeSet<usize>,
    /// Output indexes whose `response.output_item.done` was read.
    items_done: BTreeSet<usize>,
    /// The reasoning part of the last reasoning delta (`(output index, part)`), to separate parts.
    reasoning_part: Option<(usize, usize)>,
    /// Completed reasoning items, sent as the signature when the response completes.
    reasoning: Vec<ReasoningItem>,
    done: bool,
}

impl EventDecoder {
    pub(crate) fn new(provider: &'static str, stream: bool) -> Self {
        EventDecoder {
            provider,
            stream,
            model_sent: false,
            calls: BTreeMap::new(),
            text_streamed: BTreeSet::new(),
            reasoning_streamed: BTreeSet::new(),
            items_done: BTreeSet::new(),
            reasoning_part: None,
            reasoning: Vec::new(),
            done: false,
        }
    }

    fn malformed(&self, what: &'static str, data: &str, source: serde_json::Error) -> ModelError {
        ModelError::Malformed {
            provider: self.provider.to_string(),
            what,
            excerpt: crate::http::excerpt(data),
            source,
        }
    }

    fn model(&mut self, response: &WireResponse, out: &mut Vec<Delta>) {
        if !self.model_sent
            && let Some(model) = response.model.as_ref().filter(|model| !model.is_empty())
        {
            self.model_sent = true;
            out.push(Delta::Model(model.clone()));
        }
    }

    /// A piece of reasoning text of part `part` of item `index`, after a blank line when it
    /// starts a new part.
    fn reasoning_text(&mut self, index: usize, part: usize, text: String, out: &mut Vec<Delta>) {
        if text.is_empty() {
            return;
        }
        if self
            .reasoning_part
            .is_some_and(|last| last != (index, part))
        {
            out.push(Delta::Reasoning("\n\n".into()));
        }
        self.reasoning_part = Some((index, part));
        out.push(Delta::Reasoning(text));
    }

    fn start_call(&mut self, index: usize, id: String, name: String, out: &mut Vec<Delta>) {
        if let std::collections::btree_map::Entry::Vacant(entry) = self.calls.entry(index) {
            entry.insert(CallState::default());
            out.push(Delta::ToolCallStart { index, id, name });
        }
    }

    fn call_args(&mut self, index: usize, fragment: String, out: &mut Vec<Delta>) {
        if let Some(call) = self.calls.get_mut(&index)
            && !fragment.is_empty()
        {
            call.args_sent = true;
            out.push(Delta::ToolCallArgs { index, fragment });
        }
    }

    /// A complete output item: what its deltas did not already carry, then its end.
    fn item_done(&mut self, index: usize, item: OutputItem, out: &mut Vec<Delta>) {
        if !self.items_done.insert(index) {
            return;
        }
        match item {
            OutputItem::Message { content } => {
                if !self.text_streamed.contains(&index) {
                    for part in content {
                        if let OutputContent::OutputText { text } = part
                            && !text.is_empty()
                        {
                            out.push(Delta::Text(text));
                        }
                    }
                }
            }
            OutputItem::FunctionCall {
                call_id,
                name,
                arguments,
            } => {
                self.start_call(index, call_id, name, out);
                if self.calls.get(&index).is_some_and(|call| !call.args_sent) {
                    self.call_args(index, arguments, out);
                }
                if let Some(call) = self.calls.get_mut(&index)
                    && !call.ended
                {
                    call.ended = true;
                    out.push(Delta::ToolCallEnd { index });
                }
            }
            OutputItem::Reasoning(item) => {
                if !self.reasoning_streamed.contains(&index) {
                    for (part, SummaryPart::SummaryText { text }) in item.summary.iter().enumerate()
                    {
                        self.reasoning_text(index, part, text.clone(), out);
                    }
                }
                self.reasoning.push(item);
            }
            OutputItem::Other => {}
        }
    }

    /// The end of the response: the output items no `response.output_item.done` carried (all of
    /// them in a whole response), the reasoning signature, usage and finish reason; a failed
    /// response is an error naming its cause.
    fn complete(
        &mut self,
        mut response: WireResponse,
        out: &mut Vec<Delta>,
    ) -> Result<(), ModelError> {
        if response.status.as_deref() == Some("failed") || response.error.is_some() {
            return Err(self.failure(response.error.unwrap_or_default()));
        }
        self.model(&response, out);
        for (index, item) in std::mem::take(&mut response.output).into_iter().enumerate() {
            self.item_done(index, item, out);
        }
        if !self.reasoning.is_empty() {
            out.push(Delta::ReasoningSignature(reasoning_signature(
                &self.reasoning,
            )));
        }
        if let Some(usage) = response.usage {
            let cached = usage
                .input_tokens_details
                .map_or(0, |details| details.cached_tokens);
            out.push(Delta::Usage(Usage {
                input_tokens: usage.input_tokens.saturating_sub(cached),
                output_tokens: usage.output_tokens,
                cache_read_tokens: cached,
                cache_write_tokens: 0,
                cost_usd: None,
            }));
        }
        let reason = match response
            .incomplete_details
            .and_then(|details| details.reason)
        {
            Some(reason) if reason == "max_output_tokens" => FinishReason::Length,
            Some(reason) if reason == "content_filter" => FinishReason::ContentFilter,
            Some(reason) => FinishReason::Other(reason),
            None if !self.calls.is_empty() => FinishReason::ToolCalls,
            None => FinishReason::Stop,
        };
        out.push(Delta::Finish(reason));
        self.done = true;
        Ok(())
    }

    fn failure(&self, error: ResponseError) -> ModelError {
        ModelError::ErrorEvent {
            provider: self.provider.to_string(),
            kind: error.code,
            message: error
                .message
                .unwrap_or_else(|| "the response failed without a message".to_string()),
        }
    }

    /// A whole (non-streamed) response.
    fn whole(&mut self, data: &str) -> Result<Vec<Delta>, ModelError> {
        let response: WireResponse = serde_json::from_str(data)
            .map_err(|source| self.malformed("response", data, source))?;
        let mut out = Vec::new();
        self.complete(response, &mut out)?;
        Ok(out)
    }
}

impl WireDecoder for EventDecoder {
    fn decode(&mut self, event: &SseEvent) -> Result<Vec<Delta>, ModelError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(Vec::new());
        }
        if !self.stream {
            return self.whole(data);
        }
        let parsed: StreamEvent = serde_json::from_str(data)
            .map_err(|source| self.malformed("stream event", data, source))?;
        let mut out = Vec::new();
        match parsed {
            StreamEvent::Created { response } => self.model(&response, &mut out),
            StreamEvent::OutputItemAdded { output_index, item } => {
                if let OutputItem::FunctionCall {
                    call_id,
                    name,
                    arguments,
                } = item
                {
                    self.start_call(output_index, call_id, name, &mut out);
                    self.call_args(output_index, arguments, &mut out);
                }
            }
            StreamEvent::OutputTextDelta {
                output_index,
                delta,
            } => {
                self.text_streamed.insert(output_index);
                if !delta.is_empty() {
                    out.push(Delta::Text(delta));
                }
            }
            StreamEvent::ReasoningSummaryTextDelta {
                output_index,
                summary_index: part,
                delta,
            }
            | StreamEvent::ReasoningTextDelta {
                output_index,
                content_index: part,
                delta,
            } => {
                self.reasoning_streamed.insert(output_index);
                self.reasoning_text(output_index, part, delta, &mut out);
            }
            StreamEvent::FunctionCallArgumentsDelta {
                output_index,
                delta,
            } => self.call_args(output_index, delta, &mut out),
            StreamEvent::OutputItemDone { output_index, item } => {
                self.item_done(output_index, item, &mut out);
            }
            StreamEvent::Completed { response } | StreamEvent::Incomplete { response } => {
                self.complete(response, &mut out)?;
            }
            StreamEvent::Failed { response } => {
                return Err(self.failure(response.error.unwrap_or_default()));
            }
            StreamEvent::Error {
                code,
                message,
                error,
            } => {
                let nested = error.unwrap_or_default();
                return Err(self.failure(ResponseError {
                    code: code.or(nested.code),
                    message: message.or(nested.message),
                }));
            }
            StreamEvent::Unknown => {}
        }
        Ok(out)
    }

    fn end_of_body(&mut self) -> Result<Vec<Delta>, ModelError> {
        Err(ModelError::Stream {
            provider: self.provider.to_string(),
            message: "stream ended before response.completed".to_string(),
        })
    }

    fn is_done(&self) -> bool {
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Feeds `data` lines to a fresh streaming decoder and collects the deltas.
    fn decode_all(events: &[&str]) -> Result<Vec<Delta>, ModelError> {
        let mut decoder = EventDecoder::new("openai", true);
        let mut out = Vec::new();
        for data in events {
            out.extend(decoder.decode(&SseEvent {
                data: data.to_string(),
                ..SseEvent::default()
            })?);
        }
        Ok(out)
    }

    /// Events shaped like the API's (extra fields, a built-in tool's item and events, a
    /// reasoning summary in two parts, arguments only in the final item): what Folio knows
    /// decodes, the rest is skipped.
    #[test]
    fn real_shaped_events_decode_and_unknown_ones_are_skipped() {
        let deltas = decode_all(&[
            r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"gpt-5-2025-08-07","output":[],"usage":null,"error":null,"reasoning":{"effort":"low","summary":"auto"}}}"#,
            r#"{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_1","status":"in_progress"}}"#,
            r#"{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}"#,
            r#"{"type":"response.reasoning_summary_part.added","sequence_number":3,"item_id":"rs_1","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""}}"#,
            r#"{"type":"response.reasoning_summary_text.delta","sequence_number":4,"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"**Plan**","obfuscation":"x"}"#,
            r#"{"type":"response.reasoning_summary_text.delta","sequence_number":5,"item_id":"rs_1","output_index":0,"summary_index":1,"delta":"Search."}"#,
            r#"{"type":"response.output_item.done","sequence_number":6,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"**Plan**"},{"type":"summary_text","text":"Search."}],"encrypted_content":"gAAA"}}"#,
            r#"{"type":"response.output_item.added","sequence_number":7,"output_index":1,"item":{"id":"ws_1","type":"web_search_call","status":"in_progress"}}"#,
            r#"{"type":"response.web_search_call.searching","sequence_number":8,"output_index":1,"item_id":"ws_1"}"#,
            r#"{"type":"response.output_item.done","sequence_number":9,"output_index":1,"item":{"id":"ws_1","type":"web_search_call","status":"completed","action":{"type":"search","query":"x"}}}"#,
            r#"{"type":"response.output_item.added","sequence_number":10,"output_index":2,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}"#,
            r#"{"type":"response.output_text.delta","sequence_number":11,"item_id":"msg_1","output_index":2,"content_index":0,"delta":"Hi","logprobs":[]}"#,
            r#"{"type":"response.output_text.annotation.added","sequence_number":12,"item_id":"msg_1","output_index":2,"content_index":0,"annotation_index":0,"annotation":{"type":"url_citation","url":"https://x"}}"#,
            r#"{"type":"response.output_item.done","sequence_number":13,"output_index":2,"item":{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi","annotations":[]}]}}"#,
            r#"{"type":"response.output_item.added","sequence_number":14,"output_index":3,"item":{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"Read"}}"#,
            r#"{"type":"response.output_item.done","sequence_number":15,"output_index":3,"item":{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"path\":\"/a\"}","call_id":"call_1","name":"Read"}}"#,
            r#"{"type":"response.completed","sequence_number":16,"response":{"id":"resp_1","status":"completed","model":"gpt-5-2025-08-07","output":[],"usage":{"input_tokens":900,"input_tokens_details":{"cached_tokens":800},"output_tokens":50,"output_tokens_details":{"reasoning_tokens":30},"total_tokens":950}}}"#,
        ])
        .unwrap();
        assert_eq!(
            deltas,
            vec![
                Delta::Model("gpt-5-2025-08-07".into()),
                Delta::Reasoning("**Plan**".into()),
                Delta::Reasoning("\n\n".into()),
                Delta::Reasoning("Search.".into()),
                Delta::Text("Hi".into()),
                Delta::ToolCallStart {
                    index: 3,
                    id: "call_1".into(),
                    name: "Read".into()
                },
                Delta::ToolCallArgs {
                    index: 3,
                    fragment: r#"{"path":"/a"}"#.into()
                },
                Delta::ToolCallEnd { index: 3 },
                Delta::ReasoningSignature(
                    r#"[{"id":"rs_1","summary":[{"type":"summary_text","text":"**Plan**"},{"type":"summary_text","text":"Search."}],"encrypted_content":"gAAA"}]"#.into()
                ),
                Delta::Usage(Usage {
                    input_tokens: 100,
                    output_tokens: 50,
                    cache_read_tokens: 800,
                    cache_write_tokens: 0,
                    cost_usd: None,
                }),
                Delta::Finish(FinishReason::ToolCalls),
            ]
        );
    }

    #[test]
    fn error_events_and_malformed_events_are_clear_errors() {
        let error = decode_all(&[
            r#"{"type":"error","code":"rate_limit_exceeded","message":"Slow down.","param":null,"sequence_number":1}"#,
        ])
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "openai: error in stream: rate_limit_exceeded: Slow down."
        );
        let error = decode_all(&[
            r#"{"type":"error","error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Too long."}}"#,
        ])
        .unwrap_err();
        assert!(error.is_context_overflow(), "{error}");
        let error = decode_all(&[
            r#"{"type":"response.failed","response":{"id":"r","status":"failed","error":null}}"#,
        ])
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "openai: error in stream: the response failed without a message"
        );
        let error = decode_all(&[
            r#"{"type":"response.output_text.delta","output_index":"zero","delta":"x"}"#,
        ])
        .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("openai: invalid stream event (invalid type: string \"zero\""),
            "{error}"
        );
        let mut decoder = EventDecoder::new("openai", true);
        assert_eq!(
            decoder.end_of_body().unwrap_err().to_string(),
            "openai: stream failed: stream ended before response.completed"
        );
    }

    /// Only reasoning items with encrypted content that led to some output go back.
    #[test]
    fn reasoning_goes_back_only_when_a_stateless_request_can_use_it() {
        let step = |text: &str, signature: &str| Message::Assistant {
            text: text.into(),
            reasoning: Some(crate::Reasoning {
                text: String::new(),
                signature: Some(signature.into()),
            }),
            tool_calls: vec![],
        };
        let messages = vec![
            Message::User { text: "a".into() },
            step("", r#"[{"id":"rs_1","encrypted_content":"gA"}]"#),
            Message::User { text: "b".into() },
            step(
                "kept",
                r#"[{"id":"rs_2","summary":[]},{"id":"rs_3","encrypted_content":"gB"}]"#,
            ),
        ];
        let reasoning = reasoning_items(&messages);
        let sent: Vec<Value> = input(&messages, &reasoning)
            .iter()
            .map(|item| serde_json::to_value(item).unwrap())
            .collect();
        assert_eq!(
            sent,
            [
                json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "a"}]}),
                json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "b"}]}),
                json!({"type": "reasoning", "id": "rs_3", "summary": [], "encrypted_content": "gB"}),
                json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "kept"}]}),
            ]
        );
    }

    #[test]
    fn encrypted_reasoning_is_asked_of_reasoning_models_only() {
        for id in [
            "o3",
            "o4-mini",
            "gpt-5",
            "gpt-5.1-codex-mini",
            "codex-mini-latest",
        ] {
            assert!(reasons_by_default(id), "{id}");
        }
        for id in [
            "gpt-4.1-mini",
            "gpt-4o",
            "gpt-5-chat-latest",
            "omni-moderation",
            "llama3",
        ] {
            assert!(!reasons_by_default(id), "{id}");
        }
    }
}
