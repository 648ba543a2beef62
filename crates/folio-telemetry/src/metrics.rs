//! The metric instruments Folio records into (names from the observability spec and the
//! OpenTelemetry GenAI conventions). Without an export they are no-ops.

use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, UpDownCounter};

use crate::catalog::{
    APPROVALS_PENDING, CURSOR_COST, CURSOR_TOKENS, EVENT_LOG, HTTP_DURATION, LIMITS_REFUSED,
    OPERATION_DURATION, SESSIONS, STREAMS_OPEN, SUBAGENTS, TIME_TO_FIRST_CHUNK, TOKEN_USAGE,
    TOOL_CALLS, TURNS, TURNS_QUEUED, TURNS_RUNNING,
};

/// Every instrument, created once from the global meter provider.
struct Instruments {
    token_usage: Histogram<u64>,
    operation_duration: Histogram<f64>,
    time_to_first_chunk: Histogram<f64>,
    cursor_tokens: Counter<u64>,
    cursor_cost: Counter<f64>,
    tool_calls: Counter<u64>,
    turns: Counter<u64>,
    subagents: Counter<u64>,
    sessions: Counter<u64>,
    limits_refused: Counter<u64>,
    http_duration: Histogram<f64>,
    event_log: Histogram<f64>,
    turns_running: UpDownCounter<i64>,
    turns_queued: UpDownCounter<i64>,
    streams_open: UpDownCounter<i64>,
    approvals_pending: UpDownCounter<i64>,
}

fn instruments() -> &'static Instruments {
    static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();
    INSTRUMENTS.get_or_init(|| {
        let meter = opentelemetry::global::meter("folio");
        Instruments {
            token_usage: meter
                .u64_histogram(TOKEN_USAGE.name)
                .with_unit(TOKEN_USAGE.unit)
                .with_description(TOKEN_USAGE.description)
                .build(),
            operation_duration: meter
                .f64_histogram(OPERATION_DURATION.name)
                .with_unit(OPERATION_DURATION.unit)
                .with_description(OPERATION_DURATION.description)
                .build(),
            time_to_first_chunk: meter
                .f64_histogram(TIME_TO_FIRST_CHUNK.name)
                .with_unit(TIME_TO_FIRST_CHUNK.unit)
                .with_description(TIME_TO_FIRST_CHUNK.description)
                .build(),
            cursor_tokens: meter
                .u64_counter(CURSOR_TOKENS.name)
                .with_unit(CURSOR_TOKENS.unit)
                .with_description(CURSOR_TOKENS.description)
                .build(),
            cursor_cost: meter
                .f64_counter(CURSOR_COST.name)
                .with_unit(CURSOR_COST.unit)
                .with_description(CURSOR_COST.description)
                .build(),
            tool_calls: meter
                .u64_counter(TOOL_CALLS.name)
                .with_unit(TOOL_CALLS.unit)
                .with_description(TOOL_CALLS.description)
                .build(),
            turns: meter
                .u64_counter(TURNS.name)
                .with_unit(TURNS.unit)
                .with_description(TURNS.description)
                .build(),
            subagents: meter
                .u64_counter(SUBAGENTS.name)
                .with_unit(SUBAGENTS.unit)
                .with_description(SUBAGENTS.description)
                .build(),
            sessions: meter
                .u64_counter(SESSIONS.name)
                .with_unit(SESSIONS.unit)
                .with_description(SESSIONS.description)
                .build(),
            limits_refused: meter
                .u64_counter(LIMITS_REFUSED.name)
                .with_unit(LIMITS_REFUSED.unit)
                .with_description(LIMITS_REFUSED.description)
                .build(),
            http_duration: meter
                .f64_histogram(HTTP_DURATION.name)
                .with_unit(HTTP_DURATION.unit)
                .with_description(HTTP_DURATION.description)
                .build(),
            event_log: meter
                .f64_histogram(EVENT_LOG.name)
                .with_unit(EVENT_LOG.unit)
                .with_description(EVENT_LOG.description)
                .build(),
            turns_running: meter
                .i64_up_down_counter(TURNS_RUNNING.name)
                .with_unit(TURNS_RUNNING.unit)
                .with_description(TURNS_RUNNING.description)
                .build(),
            turns_queued: meter
                .i64_up_down_counter(TURNS_QUEUED.name)
                .with_unit(TURNS_QUEUED.unit)
                .with_description(TURNS_QUEUED.description)
                .build(),
            streams_open: meter
                .i64_up_down_counter(STREAMS_OPEN.name)
                .with_unit(STREAMS_OPEN.unit)
                .with_description(STREAMS_OPEN.description)
                .build(),
            approvals_pending: meter
                .i64_up_down_counter(APPROVALS_PENDING.name)
                .with_unit(APPROVALS_PENDING.unit)
                .with_description(APPROVALS_PENDING.description)
                .build(),
        }
    })
}

/// Whose work a metric counts: the agent and, for a session assigned one, its A/B variant
/// (`agent_sdk.agent`, `agent_sdk.variant`).
#[derive(Debug, Clone, Copy)]
pub struct Who<'a> {
    /// The agent's name.
    pub agent: &'a str,
    /// The session's A/B variant, when it has one.
    pub variant: Option<&'a str>,
}

impl Who<'_> {
    /// The attributes naming it, followed by `more`.
    fn with<const N: usize>(self, more: [KeyValue; N]) -> Vec<KeyValue> {
        let mut attributes = vec![KeyValue::new("agent_sdk.agent", self.agent.to_string())];
        attributes.extend(variant_attribute(self.variant));
        attributes.extend(more);
        attributes
    }
}

/// `agent_sdk.variant` for a session assigned `variant`.
fn variant_attribute(variant: Option<&str>) -> Option<KeyValue> {
    variant.map(|variant| KeyValue::new("agent_sdk.variant", variant.to_string()))
}

/// A turn changed state: `started`, `completed` or `failed`.
pub fn turn(who: Who<'_>, status: &'static str) {
    instruments().turns.add(
        1,
        &who.with([KeyValue::new("agent_sdk.turn.status", status)]),
    );
}

/// A tool call of `tool` ended, `ok` or `error`, in a session of `variant` (if any).
pub fn tool_call(tool: &str, ok: bool, variant: Option<&str>) {
    let mut attributes = vec![
        KeyValue::new("cursor.tool.name", tool.to_string()),
        KeyValue::new("cursor.tool.status", if ok { "ok" } else { "error" }),
    ];
    attributes.extend(variant_attribute(variant));
    instruments().tool_calls.add(1, &attributes);
}

/// A request to `agent` was refused by the quota or rate limit `limit` (its `[limits]` key).
pub fn limit_refused(agent: &str, limit: &str) {
    instruments().limits_refused.add(
        1,
        &[
            KeyValue::new("agent_sdk.agent", agent.to_string()),
            KeyValue::new("folio.limit", limit.to_string()),
        ],
    );
}

/// A session was created through `channel`.
pub fn session(who: Who<'_>, channel: &str) {
    instruments().sessions.add(
        1,
        &who.with([KeyValue::new("agent_sdk.channel", channel.to_string())]),
    );
}

/// Subagent `subagent` ran.
pub fn subagent(who: Who<'_>, subagent: &str) {
    instruments().subagents.add(
        1,
        &who.with([KeyValue::new("agent_sdk.subagent", subagent.to_string())]),
    );
}

/// One model call that ended.
#[derive(Debug, Clone, Copy)]
pub struct ModelCall<'a> {
    /// `gen_ai.provider.name`.
    pub provider: &'a str,
    /// The model asked for.
    pub model: &'a str,
    /// How long the call took, first byte to last.
    pub duration: Duration,
    /// When the first chunk arrived, if one did.
    pub first_chunk: Option<Duration>,
    /// Tokens reported: input, output, cache read, cache write.
    pub tokens: Option<[u64; 4]>,
    /// What the call cost in US dollars, when the model has a price.
    pub cost_usd: Option<f64>,
    /// `error.type` when it failed.
    pub error: Option<&'a str>,
    /// The session's A/B variant, when it has one.
    pub variant: Option<&'a str>,
}

/// Records a model call: its duration, time to first chunk and token usage.
pub fn model_call(call: ModelCall<'_>) {
    let instruments = instruments();
    let mut attributes = vec![
        KeyValue::new("gen_ai.operation.name", "chat"),
        KeyValue::new("gen_ai.provider.name", call.provider.to_string()),
        KeyValue::new("gen_ai.request.model", call.model.to_string()),
    ];
    if let Some(error) = call.error {
        attributes.push(KeyValue::new("error.type", error.to_string()));
    }
    attributes.extend(variant_attribute(call.variant));
    let model = || {
        let mut attributes = vec![KeyValue::new(
            "gen_ai.request.model",
            call.model.to_string(),
        )];
        attributes.extend(variant_attribute(call.variant));
        attributes
    };
    instruments
        .operation_duration
        .record(call.duration.as_secs_f64(), &attributes);
    if let Some(first) = call.first_chunk {
        instruments
            .time_to_first_chunk
            .record(first.as_secs_f64(), &attributes);
    }
    if let Some(cost) = call.cost_usd {
        instruments.cursor_cost.add(cost, &model());
    }
    let Some([input, output, cache_read, cache_write]) = call.tokens else {
        return;
    };
    for (kind, count) in [("input", input), ("output", output)] {
        let mut tagged = attributes.clone();
        tagged.push(KeyValue::new("gen_ai.token.type", kind));
        instruments.token_usage.record(count, &tagged);
    }
    for (kind, count) in [
        ("input", input),
        ("output", output),
        ("cache_read", cache_read),
        ("cache_write", cache_write),
    ] {
        if count > 0 {
            let mut attributes = model();
            attributes.push(KeyValue::new("type", kind));
            instruments.cursor_tokens.add(count, &attributes);
        }
    }
}

/// An inbound HTTP request on `route` answered `status` after `duration`.
pub fn http_request(method: &str, route: &str, status: u16, duration: Duration) {
    instruments().http_duration.record(
        duration.as_secs_f64(),
        &[
            KeyValue::new("http.request.method", method.to_string()),
            KeyValue::new("http.route", route.to_string()),
            KeyValue::new("http.response.status_code", i64::from(status)),
        ],
    );
}

/// An event-log `operation` (`append` or `fsync`) took `duration`.
pub fn event_log(operation: &'static str, duration: Duration) {
    instruments().event_log.record(
        duration.as_secs_f64(),
        &[KeyValue::new("operation", operation)],
    );
}

/// One unit held on an up-down counter (a running turn, an open stream) until dropped.
#[must_use = "the unit is released when this is dropped"]
pub struct Held {
    counter: &'static UpDownCounter<i64>,
    attributes: Vec<KeyValue>,
}

impl Held {
    fn take(counter: &'static UpDownCounter<i64>, attributes: Vec<KeyValue>) -> Held {
        counter.add(1, &attributes);
        Held {
            counter,
            attributes,
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.counter.add(-1, &self.attributes);
    }
}

/// A turn runs while the result is held (`agent_sdk.turns.running`).
pub fn turn_running(who: Who<'_>) -> Held {
    Held::take(&instruments().turns_running, who.with([]))
}

/// A turn waits for a slot while the result is held (`agent_sdk.turns.queued`).
pub fn turn_queued(who: Who<'_>) -> Held {
    Held::take(&instruments().turns_queued, who.with([]))
}

/// A session event stream is open while the result is held (`agent_sdk.streams.open`).
pub fn stream_open() -> Held {
    Held::take(&instruments().streams_open, Vec::new())
}

/// A call waits for a human approval while the result is held
/// (`agent_sdk.approvals.pending`).
pub fn approval_pending(who: Who<'_>) -> Held {
    Held::take(&instruments().approvals_pending, who.with([]))
}
