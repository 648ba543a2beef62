//! Every metric instrument, span and attribute name Folio records, with what it means: the
//! instruments are created from [`METRICS`] (so their units and descriptions live here once),
//! and the book's telemetry reference is generated from this module. A test scans the
//! workspace's sources and fails when a name the code uses is missing here, or the reverse.

/// What kind of instrument a metric is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// Only adds.
    Counter,
    /// Goes up and down (a gauge of things held now).
    UpDownCounter,
    /// A distribution of recorded values.
    Histogram,
}

impl std::fmt::Display for MetricKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MetricKind::Counter => "counter",
            MetricKind::UpDownCounter => "up-down counter",
            MetricKind::Histogram => "histogram",
        })
    }
}

/// One metric instrument.
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    /// The instrument name.
    pub name: &'static str,
    /// Its kind.
    pub kind: MetricKind,
    /// Its UCUM unit (empty for a plain count).
    pub unit: &'static str,
    /// What it measures, and the attributes its points carry.
    pub description: &'static str,
}

/// One span, metric-point or log-record attribute, or a span name.
#[derive(Debug, Clone, Copy)]
pub struct Name {
    /// The name.
    pub name: &'static str,
    /// What it holds.
    pub description: &'static str,
}

const fn metric(
    name: &'static str,
    kind: MetricKind,
    unit: &'static str,
    description: &'static str,
) -> Metric {
    Metric {
        name,
        kind,
        unit,
        description,
    }
}

use MetricKind::{Counter, Histogram, UpDownCounter};

/// `gen_ai.client.token.usage`.
pub const TOKEN_USAGE: Metric = metric(
    "gen_ai.client.token.usage",
    Histogram,
    "{token}",
    "Tokens used per model call, by type",
);
/// `gen_ai.client.operation.duration`.
pub const OPERATION_DURATION: Metric = metric(
    "gen_ai.client.operation.duration",
    Histogram,
    "s",
    "Duration of model calls",
);
/// `gen_ai.client.operation.time_to_first_chunk`.
pub const TIME_TO_FIRST_CHUNK: Metric = metric(
    "gen_ai.client.operation.time_to_first_chunk",
    Histogram,
    "s",
    "Time from a model request to its first streamed chunk",
);
/// `cursor.token.usage`.
pub const CURSOR_TOKENS: Metric = metric(
    "cursor.token.usage",
    Counter,
    "{token}",
    "Tokens used, by type (input, output, cache)",
);
/// `cursor.cost.usage`.
pub const CURSOR_COST: Metric = metric(
    "cursor.cost.usage",
    Counter,
    "USD",
    "What model calls cost, in US dollars, by model (priced calls only)",
);
/// `cursor.tool.calls`.
pub const TOOL_CALLS: Metric = metric(
    "cursor.tool.calls",
    Counter,
    "",
    "Tool calls, by tool and status",
);
/// `agent_sdk.turn.count`.
pub const TURNS: Metric = metric(
    "agent_sdk.turn.count",
    Counter,
    "",
    "Turns started, completed and failed, by agent",
);
/// `agent_sdk.subagent.count`.
pub const SUBAGENTS: Metric = metric(
    "agent_sdk.subagent.count",
    Counter,
    "",
    "Subagent runs, by agent and subagent",
);
/// `agent_sdk.session.count`.
pub const SESSIONS: Metric = metric(
    "agent_sdk.session.count",
    Counter,
    "",
    "Sessions created, by agent and channel",
);
/// `agent_sdk.http.duration`.
pub const HTTP_DURATION: Metric = metric(
    "agent_sdk.http.duration",
    Histogram,
    "s",
    "Duration of inbound HTTP requests",
);
/// `agent_sdk.event_log.duration`.
pub const EVENT_LOG: Metric = metric(
    "agent_sdk.event_log.duration",
    Histogram,
    "s",
    "Latency of event-log appends and fsyncs, by operation",
);
/// `agent_sdk.turns.running`.
pub const TURNS_RUNNING: Metric = metric(
    "agent_sdk.turns.running",
    UpDownCounter,
    "",
    "Turns running now, by agent",
);
/// `agent_sdk.turns.queued`.
pub const TURNS_QUEUED: Metric = metric(
    "agent_sdk.turns.queued",
    UpDownCounter,
    "",
    "Turns waiting for a slot under the agent's cap, by agent",
);
/// `agent_sdk.streams.open`.
pub const STREAMS_OPEN: Metric = metric(
    "agent_sdk.streams.open",
    UpDownCounter,
    "",
    "Session event streams open now",
);
/// `agent_sdk.approvals.pending`.
pub const APPROVALS_PENDING: Metric = metric(
    "agent_sdk.approvals.pending",
    UpDownCounter,
    "",
    "Tool calls waiting for a human approval, by agent",
);

/// `folio.limits.refused`.
pub const LIMITS_REFUSED: Metric = metric(
    "folio.limits.refused",
    Counter,
    "{request}",
    "Requests refused by a quota or rate limit, by agent and limit",
);

/// Every metric instrument.
pub const METRICS: &[Metric] = &[
    TOKEN_USAGE,
    OPERATION_DURATION,
    TIME_TO_FIRST_CHUNK,
    CURSOR_TOKENS,
    CURSOR_COST,
    TOOL_CALLS,
    TURNS,
    SUBAGENTS,
    SESSIONS,
    HTTP_DURATION,
    EVENT_LOG,
    TURNS_RUNNING,
    TURNS_QUEUED,
    STREAMS_OPEN,
    APPROVALS_PENDING,
    LIMITS_REFUSED,
];

const fn name(name: &'static str, description: &'static str) -> Name {
    Name { name, description }
}

/// Every span name.
pub const SPANS: &[Name] = &[
    name(
        "agent_sdk.turn",
        "The root span of a turn (GenAI `invoke_agent`), joined to the caller's W3C trace context",
    ),
    name(
        "agent_sdk.subagent",
        "A subagent's run inside its parent's `Task` call (also the attribute naming the subagent)",
    ),
    name("agent_sdk.tool", "One tool call (GenAI `execute_tool`)"),
    name(
        "agent_sdk.http",
        "One inbound HTTP request (with the OpenTelemetry `http.*` attributes)",
    ),
];

/// Every attribute Folio sets on spans, metric points and log records.
pub const ATTRIBUTES: &[Name] = &[
    name("agent_sdk.agent", "The agent's name"),
    name("agent_sdk.call_id", "The tool call's id"),
    name(
        "agent_sdk.channel",
        "The session's channel (`http`, `cli`, a channel id, …)",
    ),
    name(
        "agent_sdk.cost_usd",
        "What the turn's model calls cost in US dollars (priced models only)",
    ),
    name(
        "agent_sdk.event.index",
        "A log record's event index in its session's log",
    ),
    name("agent_sdk.event.type", "A log record's event type"),
    name(
        "agent_sdk.event_index.first",
        "The first event of the session's log the span covers",
    ),
    name(
        "agent_sdk.event_index.last",
        "The last event of the session's log the span covers",
    ),
    name("agent_sdk.framework", "Resource attribute: always `folio`"),
    name("agent_sdk.mcp.server", "The MCP server a tool call went to"),
    name("agent_sdk.session.id", "A log record's session id"),
    name("agent_sdk.session_id", "The span's session id"),
    name(
        "agent_sdk.session_mode",
        "The session's mode (`chat` or `task`)",
    ),
    name(
        "agent_sdk.synthetic",
        "Set on spans Folio made for work outside a turn",
    ),
    name("agent_sdk.turn.id", "A log record's turn id"),
    name(
        "agent_sdk.turn.status",
        "A turn-count point's status: `started`, `completed` or `failed`",
    ),
    name("agent_sdk.turn_id", "The span's turn id"),
    name(
        "agent_sdk.variant",
        "The session's A/B variant (`[variants.<name>]`), on its spans and metric points",
    ),
    name(
        "folio.limit",
        "The `[limits]` key a refused request hit (`messages_per_minute`, …)",
    ),
    name(
        "cursor.conversation.id",
        "The session id, under the seed's name",
    ),
    name("cursor.tool.name", "The tool's name"),
    name(
        "cursor.tool.status",
        "How the tool call ended: `ok` or `error`",
    ),
    name("gen_ai.agent.name", "The agent (or subagent) name"),
    name("gen_ai.conversation.id", "The session id"),
    name(
        "gen_ai.input.messages",
        "The model call's input messages (only when content capture is on)",
    ),
    name(
        "gen_ai.operation.name",
        "`invoke_agent`, `chat` or `execute_tool`",
    ),
    name(
        "gen_ai.output.messages",
        "The model call's output messages (only when content capture is on)",
    ),
    name(
        "gen_ai.provider.name",
        "The model provider (`openai`, `anthropic`, …)",
    ),
    name("gen_ai.request.model", "The model asked for"),
    name("gen_ai.response.finish_reasons", "Why the model stopped"),
    name("gen_ai.response.model", "The model that answered"),
    name(
        "gen_ai.response.time_to_first_chunk",
        "Seconds to the model's first streamed chunk",
    ),
    name(
        "gen_ai.token.type",
        "A token-usage point's type: `input` or `output`",
    ),
    name(
        "gen_ai.tool.call.arguments",
        "The tool call's input (only when content capture is on)",
    ),
    name("gen_ai.tool.call.id", "The tool call's id"),
    name(
        "gen_ai.tool.call.result",
        "The tool call's output or error (only when content capture is on)",
    ),
    name("gen_ai.tool.name", "The tool's name"),
    name("gen_ai.tool.type", "Always `function`"),
    name(
        "gen_ai.usage.cache_creation.input_tokens",
        "Input tokens written to the provider's cache",
    ),
    name(
        "gen_ai.usage.cache_read.input_tokens",
        "Input tokens read from the provider's cache",
    ),
    name("gen_ai.usage.input_tokens", "Input tokens"),
    name("gen_ai.usage.output_tokens", "Output tokens"),
];

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    use super::*;

    /// The names under Folio's prefixes in `source`, outside comments and `#[cfg(test)]`
    /// modules: quoted (`"gen_ai.tool.name"`) or as `tracing` fields (`gen_ai.tool.name =`).
    fn names_in(source: &str, names: &mut BTreeSet<String>) {
        // Folio's own `folio.` names are only the limits' (`folio.toml` is a file name).
        let name = r"(?:(?:agent_sdk|gen_ai|cursor)\.[a-z0-9_.]*[a-z0-9_]|folio\.limits?(?:\.[a-z0-9_]+)*)";
        let pattern =
            regex::Regex::new(&format!(r#""({name})"|(?:^|[^A-Za-z0-9_".])({name})\s*="#)).unwrap();
        for line in source
            .lines()
            .take_while(|line| !line.contains("#[cfg(test)]"))
        {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for found in pattern.captures_iter(line) {
                let name = found.get(1).or(found.get(2)).unwrap().as_str();
                names.insert(name.to_string());
            }
        }
    }

    fn walk(dir: &Path, names: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, names);
            } else if path.extension().is_some_and(|ext| ext == "rs")
                && !path.ends_with("catalog.rs")
            {
                names_in(&std::fs::read_to_string(&path).unwrap(), names);
            }
        }
    }

    #[test]
    fn the_catalog_names_exactly_what_the_code_records() {
        let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut used = BTreeSet::new();
        for entry in std::fs::read_dir(&crates).unwrap() {
            let dir = entry.unwrap().path();
            // The test-support crate's OTLP receiver reads names; it records none.
            if !dir.ends_with("folio-test-support") {
                let src = dir.join("src");
                if src.is_dir() {
                    walk(&src, &mut used);
                }
            }
        }
        let catalog: BTreeSet<String> = METRICS
            .iter()
            .map(|metric| metric.name)
            .chain(SPANS.iter().chain(ATTRIBUTES).map(|name| name.name))
            .map(str::to_string)
            .collect();
        let missing: Vec<&String> = used.difference(&catalog).collect();
        assert!(
            missing.is_empty(),
            "the code records names the catalog lacks (add them to folio-telemetry's catalog.rs): {missing:?}"
        );
        // Metric names are used through the catalog itself (metrics.rs creates them from it).
        let unused: Vec<&str> = SPANS
            .iter()
            .chain(ATTRIBUTES)
            .map(|name| name.name)
            .filter(|name| !used.contains(*name))
            .collect();
        assert!(
            unused.is_empty(),
            "the catalog names what no code records (remove them): {unused:?}"
        );
    }
}
