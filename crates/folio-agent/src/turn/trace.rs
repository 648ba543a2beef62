//! The turn loop's spans, with the names and attributes of the observability spec plus the
//! OpenTelemetry GenAI names (the operation, `invoke_agent` or `execute_tool`, is an attribute:
//! the span names are the spec's), and its metrics. A model call, which the spec does not name,
//! is the GenAI `chat {model}` span. Every span records the range of the session's
//! event log it covers (`agent_sdk.event_index.first` / `.last`), so a trace leads to the exact
//! replayable events: a turn from its `message.received` to its end, a tool call its approval
//! and result, a model call the events recording its response (deltas, `step.completed`,
//! `actions.requested`; a summarizer's, the `context.compacted`). A span under which nothing
//! reaches the log (a subagent's answer, kept in its own conversation) carries no range.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use folio_protocol::{Event, EventBody, SessionMode, Usage};
use folio_telemetry::int;
use folio_telemetry::metrics::Who;
use serde_json::Value;
use tracing::field::Empty;
use tracing::{Instrument, Span};

use crate::tools::{ToolError, ToolOutput};

/// No index logged yet.
const NONE: u64 = u64::MAX;

/// The log indexes a step loop appended: the first and the last.
pub(super) struct LogRange {
    first: AtomicU64,
    last: AtomicU64,
}

impl LogRange {
    /// A range with nothing logged.
    pub(super) fn new() -> Self {
        LogRange {
            first: AtomicU64::new(NONE),
            last: AtomicU64::new(NONE),
        }
    }

    /// The loop appended the event at `index`.
    pub(super) fn logged(&self, index: u64) {
        let _ = self
            .first
            .compare_exchange(NONE, index, Ordering::Relaxed, Ordering::Relaxed);
        self.last.store(index, Ordering::Relaxed);
    }

    /// The last index appended, if any.
    pub(super) fn last(&self) -> Option<u64> {
        Some(self.last.load(Ordering::Relaxed)).filter(|&index| index != NONE)
    }

    /// Records on `span` what was appended after `before` (the last index when the span's work
    /// began), when anything was.
    pub(super) fn record_since(&self, span: &Span, before: Option<u64>) {
        let last = self.last();
        if last == before {
            return;
        }
        let first = match before {
            Some(index) => Some(index + 1),
            None => Some(self.first.load(Ordering::Relaxed)).filter(|&index| index != NONE),
        };
        record_range(span, first, last);
    }

    /// Records the whole range on `span`.
    pub(super) fn record_on(&self, span: &Span) {
        let first = Some(self.first.load(Ordering::Relaxed)).filter(|&index| index != NONE);
        record_range(span, first, self.last());
    }
}

/// A span covering what a step loop appends from its making until it is dropped, when it
/// records that range (`agent_sdk.event_index.first` / `.last`; nothing when nothing was
/// appended, as for a subagent's answer, which stays in its own conversation) and ends.
pub(super) struct Covering<'a> {
    span: Span,
    range: &'a LogRange,
    before: Option<u64>,
}

impl<'a> Covering<'a> {
    /// `span`, covering what is appended to `range` from now on.
    pub(super) fn new(span: Span, range: &'a LogRange) -> Self {
        let before = range.last();
        Covering {
            span,
            range,
            before,
        }
    }
}

impl std::ops::Deref for Covering<'_> {
    type Target = Span;

    fn deref(&self) -> &Span {
        &self.span
    }
}

impl Drop for Covering<'_> {
    fn drop(&mut self) {
        self.range.record_since(&self.span, self.before);
    }
}

/// Records `first..=last` on `span` when both are known.
fn record_range(span: &Span, first: Option<u64>, last: Option<u64>) {
    if let (Some(first), Some(last)) = (first, last) {
        span.record("agent_sdk.event_index.first", int(first));
        span.record("agent_sdk.event_index.last", int(last));
    }
}

/// Where a turn came from, as its span records it.
#[derive(Debug, Clone, Default)]
pub struct TurnTrace {
    /// The W3C `traceparent` of the request that started the turn, which its span links (or,
    /// in the `parent` mode, is parented on: [`folio_telemetry::adopt_caller`]).
    pub parent: Option<String>,
    /// The session's channel (`agent_sdk.channel`: `http`, `cli`, …).
    pub channel: Option<String>,
    /// The session's mode (`agent_sdk.session_mode`).
    pub session_mode: Option<SessionMode>,
}

/// The ROOT span of a turn (`agent_sdk.turn`, GenAI `invoke_agent`), joined to the W3C
/// `traceparent` of the request that started it, when there is one.
pub(super) fn turn_span(
    who: Who<'_>,
    model: &str,
    session_id: &str,
    turn_id: &str,
    trace: &TurnTrace,
) -> Span {
    let mode = trace.session_mode.map(|mode| match mode {
        SessionMode::Chat => "chat",
        SessionMode::Task => "task",
    });
    let span = tracing::info_span!(
        parent: None,
        "agent_sdk.turn",
        agent_sdk.session_id = session_id,
        cursor.conversation.id = session_id,
        gen_ai.conversation.id = session_id,
        agent_sdk.agent = who.agent,
        gen_ai.agent.name = who.agent,
        agent_sdk.variant = who.variant,
        agent_sdk.turn_id = turn_id,
        agent_sdk.channel = trace.channel.as_deref(),
        agent_sdk.session_mode = mode,
        gen_ai.operation.name = "invoke_agent",
        gen_ai.request.model = model,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.cache_creation.input_tokens = Empty,
        agent_sdk.cost_usd = Empty,
        agent_sdk.event_index.first = Empty,
        agent_sdk.event_index.last = Empty,
        otel.status_code = Empty,
        error.type = Empty,
    );
    folio_telemetry::enter_turn(&span, session_id, turn_id, trace.parent.as_deref());
    folio_telemetry::metrics::turn(who, "started");
    span
}

/// The index of the first event of turn `turn_id` in `events` (its `message.received`).
pub(super) fn first_index(events: &[Event], turn_id: &str) -> Option<u64> {
    events
        .iter()
        .find(|event| event.turn_id.as_deref() == Some(turn_id))
        .map(|event| event.index)
}

/// Records how turn `turn_id` ended on its span: its usage, or the failure.
pub(super) fn turn_ended(
    span: &Span,
    who: Who<'_>,
    events: &[Event],
    turn_id: &str,
    failure: Option<&str>,
) {
    let usage = events
        .iter()
        .rev()
        .filter(|event| event.turn_id.as_deref() == Some(turn_id))
        .find_map(|event| match &event.body {
            EventBody::TurnCompleted(completed) => completed.usage,
            _ => None,
        });
    if let Some(usage) = usage {
        record_usage(span, &usage);
    }
    match failure {
        None => folio_telemetry::metrics::turn(who, "completed"),
        Some(error) => {
            span.record("otel.status_code", "ERROR");
            span.record("error.type", error);
            folio_telemetry::metrics::turn(who, "failed");
        }
    }
}

fn record_usage(span: &Span, usage: &Usage) {
    span.record("gen_ai.usage.input_tokens", int(usage.input_tokens));
    span.record("gen_ai.usage.output_tokens", int(usage.output_tokens));
    span.record(
        "gen_ai.usage.cache_read.input_tokens",
        int(usage.cache_read_tokens),
    );
    span.record(
        "gen_ai.usage.cache_creation.input_tokens",
        int(usage.cache_write_tokens),
    );
    if let Some(cost) = usage.cost_usd {
        span.record("agent_sdk.cost_usd", cost);
    }
}

/// The span of a subagent's run (`agent_sdk.subagent`) inside its parent's `Task` call.
pub(super) fn subagent_span(parent: Who<'_>, id: &str, session_id: &str, turn_id: &str) -> Span {
    folio_telemetry::metrics::subagent(parent, id);
    tracing::info_span!(
        "agent_sdk.subagent",
        agent_sdk.session_id = session_id,
        gen_ai.conversation.id = session_id,
        agent_sdk.agent = parent.agent,
        agent_sdk.variant = parent.variant,
        agent_sdk.subagent = id,
        gen_ai.agent.name = id,
        agent_sdk.turn_id = turn_id,
        gen_ai.operation.name = "invoke_agent",
        agent_sdk.event_index.first = Empty,
        agent_sdk.event_index.last = Empty,
        otel.status_code = Empty,
        error.type = Empty,
    )
}

/// The span of one tool call (`agent_sdk.tool`, GenAI `execute_tool`).
pub(super) fn tool_span(
    tool: &str,
    call_id: &str,
    subagent: Option<&str>,
    variant: Option<&str>,
    input: &serde_json::Value,
) -> Span {
    let span = tracing::info_span!(
        "agent_sdk.tool",
        agent_sdk.variant = variant,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        gen_ai.tool.call.id = call_id,
        gen_ai.tool.type = "function",
        cursor.tool.name = tool,
        agent_sdk.call_id = call_id,
        agent_sdk.subagent = subagent,
        cursor.tool.status = Empty,
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
        agent_sdk.event_index.first = Empty,
        agent_sdk.event_index.last = Empty,
        otel.status_code = Empty,
        error.type = Empty,
    );
    if folio_telemetry::capture_content() {
        span.record("gen_ai.tool.call.arguments", input.to_string());
    }
    span
}

/// Records how a tool call ended on its span and in the metrics.
pub(super) fn tool_ended(
    span: &Span,
    tool: &str,
    variant: Option<&str>,
    output: Option<&serde_json::Value>,
    error: Option<&str>,
) {
    span.record(
        "cursor.tool.status",
        if error.is_none() { "ok" } else { "error" },
    );
    if let Some(message) = error {
        span.record("otel.status_code", "ERROR");
        span.record("error.type", "tool_error");
        if folio_telemetry::capture_content() {
            span.record("gen_ai.tool.call.result", message);
        }
    } else if let Some(output) = output.filter(|_| folio_telemetry::capture_content()) {
        span.record("gen_ai.tool.call.result", output.to_string());
    }
    folio_telemetry::metrics::tool_call(tool, error.is_none(), variant);
}

/// The span of one model call (`chat {model}`, a CLIENT span) for `request`; with contents
/// captured, its conversation as `gen_ai.input.messages`.
pub(super) fn chat_span(
    provider: Option<&str>,
    variant: Option<&str>,
    request: &folio_model::ModelRequest,
) -> Span {
    let model = request.model.as_str();
    let span = tracing::info_span!(
        "chat",
        agent_sdk.variant = variant,
        otel.name = format!("chat {model}"),
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider,
        gen_ai.request.model = model,
        gen_ai.response.model = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.response.time_to_first_chunk = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        agent_sdk.cost_usd = Empty,
        gen_ai.input.messages = Empty,
        gen_ai.output.messages = Empty,
        agent_sdk.event_index.first = Empty,
        agent_sdk.event_index.last = Empty,
        otel.status_code = Empty,
        error.type = Empty,
    );
    if folio_telemetry::capture_content() {
        span.record(
            "gen_ai.input.messages",
            input_messages(&request.messages).to_string(),
        );
    }
    span
}

/// `messages` in the GenAI semantic conventions' shape: each a `role` (`user`, `assistant`,
/// `tool`) and its `parts` (`text`, `reasoning`, `tool_call`, `tool_call_response`).
fn input_messages(messages: &[folio_model::Message]) -> Value {
    use folio_model::{ContentPart, Message};
    let text = |kind: &str, content: &str| serde_json::json!({"type": kind, "content": content});
    let messages = messages.iter().map(|message| match message {
        Message::User { text: content } => {
            serde_json::json!({"role": "user", "parts": [text("text", content)]})
        }
        Message::Assistant {
            text: content,
            reasoning,
            tool_calls,
        } => {
            let reasoning = reasoning
                .iter()
                .map(|reasoning| text("reasoning", &reasoning.text));
            let content = Some(content)
                .filter(|content| !content.is_empty())
                .map(|content| text("text", content));
            let calls = tool_calls.iter().map(|call| {
                serde_json::json!({
                    "type": "tool_call",
                    "id": call.id,
                    "name": call.name,
                    "arguments": call.input,
                })
            });
            let parts: Vec<Value> = reasoning.chain(content).chain(calls).collect();
            serde_json::json!({"role": "assistant", "parts": parts})
        }
        Message::ToolResult {
            call_id, content, ..
        } => {
            let response: Vec<Value> = content
                .iter()
                .map(|part| match part {
                    ContentPart::Text { text: content } => text("text", content),
                    ContentPart::Image { mime_type, data } => serde_json::json!({
                        "type": "blob",
                        "modality": "image",
                        "mime_type": mime_type,
                        "content": data,
                    }),
                })
                .collect();
            serde_json::json!({
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": call_id, "response": response}],
            })
        }
    });
    Value::Array(messages.collect())
}

/// Records how a model call ended on its span and in the metrics.
pub(super) fn chat_ended(
    span: &Span,
    provider: Option<&str>,
    variant: Option<&str>,
    model: &str,
    started: Instant,
    first_chunk: Option<Duration>,
    response: Result<&folio_model::Response, &str>,
) {
    if let Some(first) = first_chunk {
        span.record("gen_ai.response.time_to_first_chunk", first.as_secs_f64());
    }
    let mut tokens = None;
    let mut cost_usd = None;
    let mut error = None;
    match response {
        Ok(response) => {
            if let Some(model) = &response.model {
                span.record("gen_ai.response.model", model.as_str());
            }
            if let Some(reason) = &response.finish_reason {
                span.record("gen_ai.response.finish_reasons", reason.as_str());
            }
            if let Some(usage) = &response.usage {
                span.record("gen_ai.usage.input_tokens", int(usage.input_tokens));
                span.record("gen_ai.usage.output_tokens", int(usage.output_tokens));
                tokens = Some([
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.cache_read_tokens,
                    usage.cache_write_tokens,
                ]);
                cost_usd = usage.cost_usd;
                if let Some(cost) = cost_usd {
                    span.record("agent_sdk.cost_usd", cost);
                }
            }
            if folio_telemetry::capture_content() && !response.text.is_empty() {
                let message = serde_json::json!([{
                    "role": "assistant",
                    "parts": [{"type": "text", "content": response.text}],
                }]);
                span.record("gen_ai.output.messages", message.to_string());
            }
        }
        Err(kind) => {
            span.record("otel.status_code", "ERROR");
            span.record("error.type", kind);
            error = Some(kind);
        }
    }
    folio_telemetry::metrics::model_call(folio_telemetry::metrics::ModelCall {
        provider: provider.unwrap_or("unknown"),
        model,
        duration: started.elapsed(),
        first_chunk,
        tokens,
        cost_usd,
        error,
        variant,
    });
}

/// Runs `call`, tool `tool` called directly (without a model or a turn), inside a synthetic
/// `agent_sdk.turn` span, joined to `traceparent` when given, and its `agent_sdk.tool` span,
/// so a direct call traces like a turn's.
pub async fn trace_direct_call(
    who: Who<'_>,
    session_id: &str,
    call_id: &str,
    tool: &str,
    input: &Value,
    traceparent: Option<&str>,
    call: impl Future<Output = Result<ToolOutput, ToolError>>,
) -> Result<ToolOutput, ToolError> {
    let turn = tracing::info_span!(
        parent: None,
        "agent_sdk.turn",
        agent_sdk.session_id = session_id,
        cursor.conversation.id = session_id,
        gen_ai.conversation.id = session_id,
        agent_sdk.agent = who.agent,
        gen_ai.agent.name = who.agent,
        agent_sdk.variant = who.variant,
        gen_ai.operation.name = "invoke_agent",
        agent_sdk.synthetic = true,
    );
    folio_telemetry::adopt_caller(&turn, traceparent);
    let span = turn.in_scope(|| tool_span(tool, call_id, None, who.variant, input));
    let result = call.instrument(span.clone()).await;
    let output = match &result {
        Ok(output) if folio_telemetry::capture_content() => Some(output.to_event_value()),
        _ => None,
    };
    let error = result.as_ref().err().map(|err| err.0.as_str());
    tool_ended(&span, tool, who.variant, output.as_ref(), error);
    result
}
