//! The metric instruments Folio records into (names from the observability spec and the
//! OpenTelemetry GenAI conventions). Without an export they are no-ops.

use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, UpDownCounter};

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
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Tokens used per model call, by type")
                .build(),
            operation_duration: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_unit("s")
                .with_description("Duration of model calls")
                .build(),
            time_to_first_chunk: meter
                .f64_histogram("gen_ai.client.operation.time_to_first_chunk")
                .with_unit("s")
                .with_description("Time from a model request to its first streamed chunk")
                .build(),
            cursor_tokens: meter
                .u64_counter("cursor.token.usage")
                .with_unit("{token}")
                .with_description("Tokens used, by type (input, output, cache)")
                .build(),
            cursor_cost: meter
                .f64_counter("cursor.cost.usage")
                .with_unit("USD")
                .with_description(
                    "What model calls cost, in US dollars, by model (priced calls only)",
                )
                .build(),
            tool_calls: meter
                .u64_counter("cursor.tool.calls")
                .with_description("Tool calls, by tool and status")
                .build(),
            turns: meter
                .u64_counter("agent_sdk.turn.count")
                .with_description("Turns started, completed and failed, by agent")
                .build(),
            subagents: meter
                .u64_counter("agent_sdk.subagent.count")
                .with_description("Subagent runs, by agent and subagent")
                .build(),
            sessions: meter
                .u64_counter("agent_sdk.session.count")
                .with_description("Sessions created, by agent and channel")
                .build(),
            limits_refused: meter
                .u64_counter("folio.limits.refused")
                .with_unit("{request}")
                .with_description("Requests refused by a quota or rate limit, by agent and limit")
                .build(),
            http_duration: meter
                .f64_histogram("agent_sdk.http.duration")
                .with_unit("s")
                .with_description("Duration of inbound HTTP requests")
                .build(),
            event_log: meter
                .f64_histogram("agent_sdk.event_log.duration")
                .with_unit("s")
                .with_description("Latency of event-log appends and fsyncs, by operation")
                .build(),
            turns_running: meter
                .i64_up_down_counter("agent_sdk.turns.running")
                .with_description("Turns running now, by agent")
                .build(),
            turns_queued: meter
                .i64_up_down_counter("agent_sdk.turns.queued")
                .with_description("Turns waiting for a slot under the agent's cap, by agent")
                .build(),
            streams_open: meter
                .i64_up_down_counter("agent_sdk.streams.open")
                .with_description("Session event streams open now")
                .build(),
            approvals_pending: meter
                .i64_up_down_counter("agent_sdk.approvals.pending")
                .with_description("Tool calls waiting for a human approval, by agent")
                .build(),
        }
    })
}

/// A turn of `agent` changed state: `started`, `completed` or `failed`.
pub fn turn(agent: &str, status: &'static str) {
    instruments().turns.add(
        1,
        &[
            KeyValue::new("agent_sdk.agent", agent.to_string()),
            KeyValue::new("agent_sdk.turn.status", status),
        ],
    );
}

/// A tool call of `tool` ended, `ok` or `error`.
pub fn tool_call(tool: &str, ok: bool) {
    instruments().tool_calls.add(
        1,
        &[
            KeyValue::new("cursor.tool.name", tool.to_string()),
            KeyValue::new("cursor.tool.status", if ok { "ok" } else { "error" }),
        ],
    );
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

/// A session of `agent` was created through `channel`.
pub fn session(agent: &str, channel: &str) {
    instruments().sessions.add(
        1,
        &[
            KeyValue::new("agent_sdk.agent", agent.to_string()),
            KeyValue::new("agent_sdk.channel", channel.to_string()),
        ],
    );
}

/// Subagent `subagent` of `agent` ran.
pub fn subagent(agent: &str, subagent: &str) {
    instruments().subagents.add(
        1,
        &[
            KeyValue::new("agent_sdk.agent", agent.to_string()),
            KeyValue::new("agent_sdk.subagent", subagent.to_string()),
        ],
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
    instruments
        .operation_duration
        .record(call.duration.as_secs_f64(), &attributes);
    if let Some(first) = call.first_chunk {
        instruments
            .time_to_first_chunk
            .record(first.as_secs_f64(), &attributes);
    }
    if let Some(cost) = call.cost_usd {
        instruments.cursor_cost.add(
            cost,
            &[KeyValue::new(
                "gen_ai.request.model",
                call.model.to_string(),
            )],
        );
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
            instruments.cursor_tokens.add(
                count,
                &[
                    KeyValue::new("type", kind),
                    KeyValue::new("gen_ai.request.model", call.model.to_string()),
                ],
            );
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

fn agent_attribute(agent: &str) -> Vec<KeyValue> {
    vec![KeyValue::new("agent_sdk.agent", agent.to_string())]
}

/// A turn of `agent` runs while the result is held (`agent_sdk.turns.running`).
pub fn turn_running(agent: &str) -> Held {
    Held::take(&instruments().turns_running, agent_attribute(agent))
}

/// A turn of `agent` waits for a slot while the result is held (`agent_sdk.turns.queued`).
pub fn turn_queued(agent: &str) -> Held {
    Held::take(&instruments().turns_queued, agent_attribute(agent))
}

/// A session event stream is open while the result is held (`agent_sdk.streams.open`).
pub fn stream_open() -> Held {
    Held::take(&instruments().streams_open, Vec::new())
}

/// A call of `agent` waits for a human approval while the result is held
/// (`agent_sdk.approvals.pending`).
pub fn approval_pending(agent: &str) -> Held {
    Held::take(&instruments().approvals_pending, agent_attribute(agent))
}
