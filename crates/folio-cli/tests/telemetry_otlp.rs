//! OpenTelemetry from `folio run` and `folio serve`, end to end, against a real OTLP receiver
//! nobody here wrote ([`folio_test_support::otlp`]: PyPI `oteltest`'s sinks).
//!
//! One test runs the scenarios in order, each against its own sink: the span tree of a
//! `folio run` turn with two tool calls and a subagent (names, parents, GenAI attributes,
//! event-index ranges against the session log), the trace context sent to the model, headers,
//! resource attributes, metrics, and every session event as a log record in its span; an
//! incoming `traceparent` on `folio serve` linked from the turn, the server's metrics (open
//! streams, event-log fsyncs through the group commit) and a log line of the server's as a log
//! record in the turn's trace; `[telemetry]` and `[[telemetry.destinations]]` in `folio.toml`;
//! captured contents and a failed tool's `error.type`; an MCP call over streamable HTTP
//! carrying its trace context in `params._meta` and its `traceparent` header, as seen by a
//! server on the official Python MCP SDK; the server's gauges (approvals pending, turns running
//! and queued) following a parked approval under a one-turn cap; a channel delivery joining its
//! sender's trace in the `parent` mode. The export itself (each wire format, headers,
//! temporalities, a collector that is down or stalled, nothing exported unless configured) is
//! tested in `folio-telemetry/tests/otlp_export.rs`.

mod serve_support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use folio_protocol::{
    Acknowledged, ActionApprovalRequested, ActionResult, ActionsRequested, ApprovalDecision,
    ApprovalRequest, CreateSession, Event, LogLevel, LogsResponse, RunResult, SessionCreated,
    Usage,
};
use folio_test_support::otlp::{Log, Sink, Span, Transport, free_port, tree};
use folio_test_support::{
    MockModelServer, MockReply, NO_BODY, create_session, data, events, expect, python, read_ndjson,
    read_wire, test_deps,
};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serde_json::{Value, json};
use serve_support::{Stream, client, folio_bin, serve_with_env, write_files};

/// A streamable-HTTP MCP server on the official Python SDK (port in argv[1]), whose one tool
/// answers with the W3C `traceparent` its call carried in `params._meta` and in the HTTP
/// request's headers.
const TRACE_ECHO_SERVER: &str = r#"
import json, sys
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("trace-echo")

@server.tool()
def trace_context(ctx: Context) -> str:
    """The trace context this call carried."""
    request = ctx.request_context.request
    return json.dumps({
        "meta": dict(ctx.request_context.meta or {}).get("traceparent"),
        "header": request.headers.get("traceparent") if request is not None else None,
    })

server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
"#;

fn usage(input_tokens: u64, output_tokens: u64) -> Usage {
    Usage {
        input_tokens,
        output_tokens,
        ..Usage::default()
    }
}

/// A project whose agent has a `critic` subagent and the MCP reference server (installed by
/// `scripts/install-test-deps`).
fn agent_project() -> serve_support::Project {
    let server =
        test_deps().join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        server.is_file(),
        "{} is missing: run scripts/install-test-deps first",
        server.display()
    );
    let connection = format!(
        "command = \"node\"\nargs = [{}, \"stdio\"]\n",
        json!(server.display().to_string())
    );
    let project = serve_support::project("model = \"openai:gpt-test\"\n");
    write_files(
        project.path(),
        &[
            ("agent/mcp-connections/everything.toml", &connection),
            (
                "agent/subagents/critic/agent.toml",
                "description = \"Judges a draft.\"\n",
            ),
            (
                "agent/subagents/critic/instructions.md",
                "You judge drafts.\n",
            ),
        ],
    );
    project
}

/// `folio run --json` on `dir` with `env`; returns its result.
async fn run(mock: &MockModelServer, dir: &Path, state: &Path, env: &[(&str, &str)]) -> RunResult {
    let output = tokio::process::Command::new(folio_bin())
        .env_remove("FOLIO_MODEL")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_PROTOCOL")
        .env_remove("OTEL_SDK_DISABLED")
        .env("OPENAI_API_KEY", "test-key")
        .env("OPENAI_BASE_URL", mock.openai_base_url())
        .envs(env.iter().copied())
        .args(["run", "--json", "--message", "write and judge", "--dir"])
        .arg(dir)
        .arg("--state-root")
        .arg(state)
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "stderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    read_wire(&serde_json::from_slice(&output.stdout).unwrap())
}

/// The session's event log (`traces/<id>.ndjson` under the state root).
fn event_log(state: &Path, session: &str) -> Vec<Event> {
    let text =
        std::fs::read_to_string(state.join("traces").join(format!("{session}.ndjson"))).unwrap();
    read_ndjson(&text)
}

/// The scripted model of the traced turn: two tool calls and an MCP one, a `Task` whose critic
/// calls a tool, then the answer.
fn script_turn(mock: &MockModelServer) {
    mock.push(
        MockReply::tool_calls([
            ("Write", json!({"path": "draft.txt", "contents": "a poem"})),
            ("Read", json!({"path": "draft.txt"})),
            ("mcp__everything__get-sum", json!({"a": 17, "b": 25})),
        ])
        .with_usage(usage(100, 10)),
    );
    mock.push(
        MockReply::tool_calls([(
            "Task",
            json!({"subagent": "critic", "prompt": "judge draft.txt"}),
        )])
        .with_usage(usage(120, 12)),
    );
    mock.push(
        MockReply::tool_calls([("Read", json!({"path": "draft.txt"}))]).with_usage(usage(20, 2)),
    );
    mock.push(MockReply::text("Fine.").with_usage(usage(30, 3)));
    mock.push(MockReply::text("Done: the critic says fine.").with_usage(usage(150, 15)));
}

/// The log records of session events (those with an event index), by index.
fn event_records(logs: &[Log]) -> Vec<&Log> {
    let mut records: Vec<&Log> = logs
        .iter()
        .filter(|log| !log.attr("agent_sdk.event.index").is_null())
        .collect();
    records.sort_by_key(|log| {
        log.attr("agent_sdk.event.index")
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
    });
    records
}

/// The span tree of a run, its attributes and event ranges, the model's trace context, the
/// export headers and resource attributes, metrics; the session's events as log records.
async fn traced_run_exports_the_turn_tree() {
    let sink = Sink::start(Transport::Http).await;
    let mock = MockModelServer::start().await;
    script_turn(&mock);
    let project = agent_project();
    let state = tempfile::tempdir().unwrap();
    let result = run(
        &mock,
        project.path(),
        state.path(),
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &sink.endpoint),
            ("OTEL_SERVICE_NAME", "telemetry-test"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=s%20ecret"),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "deployment.environment=test,team=agents",
            ),
        ],
    )
    .await;
    assert_eq!(result.reply, "Done: the critic says fine.");
    let session = result.session_id.as_str();
    let spans = sink
        .wait_spans(|spans| spans.iter().any(|span| span.name == "agent_sdk.turn"))
        .await;
    assert_eq!(
        tree(&spans),
        [
            "agent_sdk.turn",
            "  chat gpt-test",
            "  agent_sdk.tool Write",
            "  agent_sdk.tool Read",
            "  agent_sdk.tool mcp__everything__get-sum",
            "    tools/call get-sum",
            "  chat gpt-test",
            "  agent_sdk.tool Task",
            "    agent_sdk.subagent critic",
            "      chat gpt-test",
            "      agent_sdk.tool Read",
            "      chat gpt-test",
            "  chat gpt-test",
        ]
    );
    for headers in sink.headers("traces") {
        assert_eq!(
            headers.get("x-api-key").map(String::as_str),
            Some("s ecret")
        );
    }
    let turn = spans.iter().find(|s| s.name == "agent_sdk.turn").unwrap();
    assert_eq!(turn.resource["service.name"], "telemetry-test");
    assert_eq!(turn.resource["agent_sdk.framework"], "folio");
    assert_eq!(turn.resource["deployment.environment"], "test");
    assert_eq!(turn.resource["team"], "agents");
    let turn_id = turn.attr("agent_sdk.turn_id");
    let expected: BTreeMap<String, Value> = [
        ("agent_sdk.agent", json!("test-agent")),
        ("agent_sdk.channel", json!("cli")),
        ("agent_sdk.session_id", json!(session)),
        ("agent_sdk.session_mode", json!("chat")),
        ("agent_sdk.turn_id", turn_id.clone()),
        ("cursor.conversation.id", json!(session)),
        ("gen_ai.agent.name", json!("test-agent")),
        ("gen_ai.conversation.id", json!(session)),
        ("gen_ai.operation.name", json!("invoke_agent")),
        ("gen_ai.request.model", json!("gpt-test")),
        ("gen_ai.usage.input_tokens", json!("370")),
        ("gen_ai.usage.output_tokens", json!("37")),
        ("gen_ai.usage.cache_read.input_tokens", json!("0")),
        ("gen_ai.usage.cache_creation.input_tokens", json!("0")),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_string(), value))
    .collect();
    let mut got = turn.attributes.clone();
    got.retain(|key, _| !key.starts_with("agent_sdk.event_index"));
    assert_eq!(got, expected);
    // Counts and indexes are OTLP integers (OTLP/JSON writes int64 as a string), which a
    // backend can sum; text would not be.
    let numbers: Vec<(&str, Option<&str>)> = [
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.cache_creation.input_tokens",
        "agent_sdk.event_index.first",
        "agent_sdk.event_index.last",
    ]
    .into_iter()
    .map(|key| (key, turn.kinds.get(key).map(String::as_str)))
    .collect();
    assert!(
        numbers.iter().all(|(_, kind)| *kind == Some("intValue")),
        "{numbers:?}"
    );

    // Every span's event range leads to the exact events of the session log.
    let log = event_log(state.path(), session);
    let kind = |index: usize| log[index].event_type();
    assert_eq!(kind(turn.index("first")), "message.received");
    assert_eq!(kind(turn.index("last")), "turn.completed");
    assert_eq!(
        log[turn.index("first")].turn_id.as_deref(),
        turn_id.as_str()
    );
    for tool in spans.iter().filter(|s| s.name == "agent_sdk.tool") {
        let result = data::<ActionResult>(&log[tool.index("last")]);
        assert_eq!(result.call_id, tool.attr("agent_sdk.call_id"));
        assert_eq!(result.tool, tool.attr("gen_ai.tool.name"));
        assert_eq!(
            tool.attr("gen_ai.tool.call.id"),
            tool.attr("agent_sdk.call_id")
        );
        assert_eq!(tool.attr("gen_ai.operation.name"), "execute_tool");
        assert_eq!(tool.attr("cursor.tool.status"), "ok");
        assert!(tool.index("first") <= tool.index("last"));
    }
    let mcp = spans
        .iter()
        .find(|s| s.name == "tools/call get-sum")
        .unwrap();
    assert_eq!(
        (mcp.attr("mcp.method.name"), mcp.attr("gen_ai.tool.name")),
        (json!("tools/call"), json!("get-sum"))
    );
    // The MCP request appends nothing to the log: its `agent_sdk.tool` parent covers the call.
    assert!(mcp.attr("agent_sdk.event_index.first").is_null(), "{mcp:?}");
    let subagent = spans
        .iter()
        .find(|s| s.name == "agent_sdk.subagent")
        .unwrap();
    let requested = data::<ActionsRequested>(&log[subagent.index("first")]);
    assert_eq!(requested.calls[0].subagent.as_deref(), Some("critic"));
    assert_eq!(kind(subagent.index("last")), "action.result");
    let chats: Vec<&Span> = spans.iter().filter(|s| s.name == "chat gpt-test").collect();
    assert_eq!(
        chats
            .iter()
            .map(|chat| {
                (
                    chat.attr("gen_ai.provider.name"),
                    chat.attr("gen_ai.usage.input_tokens"),
                    chat.attr("gen_ai.response.finish_reasons"),
                )
            })
            .collect::<Vec<_>>(),
        [
            (json!("openai"), json!("100"), json!("tool_calls")),
            (json!("openai"), json!("120"), json!("tool_calls")),
            (json!("openai"), json!("20"), json!("tool_calls")),
            (json!("openai"), json!("30"), json!("stop")),
            (json!("openai"), json!("150"), json!("stop")),
        ]
    );
    // A model call covers the events recording its response: the deltas it streamed, its
    // step's `step.completed` and the `actions.requested` of its calls. A subagent's steps and
    // answer stay in its own conversation: its answering call covers no event.
    let covered: Vec<Vec<&str>> = chats
        .iter()
        .map(|chat| {
            if chat.attr("agent_sdk.event_index.first").is_null() {
                return Vec::new();
            }
            let mut kinds: Vec<&str> = (chat.index("first")..=chat.index("last"))
                .map(kind)
                .collect();
            kinds.dedup();
            kinds
        })
        .collect();
    assert_eq!(
        covered,
        [
            vec!["step.completed", "actions.requested"],
            vec!["step.completed", "actions.requested"],
            vec!["actions.requested"],
            vec![],
            vec!["message.appended", "message.completed", "step.completed"],
        ]
    );
    // No contents unless opted in.
    for key in [
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
    ] {
        assert!(spans.iter().all(|s| s.attr(key).is_null()), "{key}");
    }

    // Each model request carried the trace context of its chat span.
    let sent: Vec<String> = mock
        .requests()
        .iter()
        .map(|request| {
            request
                .header("traceparent")
                .expect("traceparent sent")
                .to_string()
        })
        .collect();
    let expected: Vec<String> = chats
        .iter()
        .map(|chat| format!("00-{}-{}-01", turn.trace_id, chat.span_id))
        .collect();
    assert_eq!(sent, expected);

    let metrics = sink.metric_names();
    for name in [
        "agent_sdk.event_log.duration",
        "agent_sdk.session.count",
        "agent_sdk.subagent.count",
        "agent_sdk.turn.count",
        "agent_sdk.turns.running",
        "cursor.token.usage",
        "cursor.tool.calls",
        "gen_ai.client.operation.duration",
        "gen_ai.client.operation.time_to_first_chunk",
        "gen_ai.client.token.usage",
        "otel.sdk.processor.span.processed",
    ] {
        assert!(
            metrics.iter().any(|m| m == name),
            "{name} missing from {metrics:?}"
        );
    }
    // Counts by their attributes, and delta temporality by default.
    let mut turns = BTreeMap::new();
    for (attributes, value) in sink.points("agent_sdk.turn.count") {
        let status = attributes["agent_sdk.turn.status"]
            .as_str()
            .unwrap()
            .to_string();
        *turns.entry(status).or_insert(0) += value;
    }
    assert_eq!(
        turns,
        BTreeMap::from([("completed".to_string(), 1), ("started".to_string(), 1)])
    );
    let tool_calls: i64 = sink
        .points("cursor.tool.calls")
        .iter()
        .map(|(_, value)| value)
        .sum();
    assert_eq!(tool_calls, 5);
    assert_eq!(
        sink.metrics("cursor.tool.calls")[0]["sum"]["aggregationTemporality"],
        "AGGREGATION_TEMPORALITY_DELTA"
    );
    let operations: Vec<Value> = sink
        .points("agent_sdk.event_log.duration")
        .into_iter()
        .map(|(attributes, _)| attributes["operation"].clone())
        .collect();
    assert!(operations.contains(&json!("append")), "{operations:?}");
    assert!(operations.contains(&json!("fsync")), "{operations:?}");
    // No span was dropped.
    assert!(
        sink.points("otel.sdk.processor.span.processed")
            .iter()
            .all(|(attributes, _)| !attributes.contains_key("error.type"))
    );

    // Every event of the log is one log record: its type, index (an OTLP integer), session and
    // turn; those the turn appended (from its `turn.started` to its end) carry the turn's trace
    // and the span they were appended in (an `action.result` its tool call's), the session's
    // own before and after it none.
    let logs = sink
        .wait_logs(|logs| event_records(logs).len() >= log.len())
        .await;
    let records = event_records(&logs);
    let span_name = |id: &Option<String>| {
        spans
            .iter()
            .find(|span| Some(&span.span_id) == id.as_ref())
            .map(|span| span.name.as_str())
    };
    let started = log
        .iter()
        .position(|event| event.event_type() == "turn.started")
        .unwrap();
    let ended = log
        .iter()
        .position(|event| event.event_type() == "turn.completed")
        .unwrap();
    for (record, event) in records.iter().zip(&log) {
        let inside = (started..=ended).contains(&(event.index as usize));
        assert_eq!(
            (
                record.body.clone(),
                record.severity.as_deref(),
                record.attr("agent_sdk.event.type"),
                record.attr("agent_sdk.event.index"),
                record.kinds["agent_sdk.event.index"].as_str(),
                record.attr("agent_sdk.session.id"),
                record.attr("agent_sdk.turn.id"),
                record.trace_id.as_deref(),
                span_name(&record.span_id).is_some(),
            ),
            (
                json!(event.event_type()),
                Some("INFO"),
                json!(event.event_type()),
                json!(event.index.to_string()),
                "intValue",
                json!(session),
                event
                    .turn_id
                    .as_ref()
                    .map_or(Value::Null, |turn| json!(turn)),
                inside.then_some(turn.trace_id.as_str()),
                inside,
            ),
            "{record:#?}"
        );
    }
    assert_eq!(records.len(), log.len());
    for tool in spans.iter().filter(|s| s.name == "agent_sdk.tool") {
        assert_eq!(
            records[tool.index("last")].span_id.as_deref(),
            Some(tool.span_id.as_str())
        );
    }
}

/// `folio serve`: the turn a request starts is the root of a trace of its own, with a span link
/// to the request's `traceparent` (which parents the request's own span); the server's metrics
/// (an open stream, event-log fsyncs through the group commit) arrive while it runs; a line the
/// subscriber logs inside the turn reaches `GET /v1/logs`, and the collector as a log record in
/// the turn's trace.
async fn incoming_traceparent_is_linked_from_the_turn() {
    let sink = Sink::start(Transport::Http).await;
    let mock = MockModelServer::start().await;
    // A rate-limited first attempt makes the model client log a warning inside the turn.
    mock.push(MockReply::rate_limited(0));
    mock.push(MockReply::text("Hello."));
    let project = agent_project();
    let state = tempfile::tempdir().unwrap();
    let served = serve_with_env(
        &mock.openai_base_url(),
        project.path(),
        state.path(),
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", sink.endpoint.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            ("OTEL_METRIC_EXPORT_INTERVAL", "200"),
            ("RUST_LOG", "warn"),
        ],
    )
    .await;
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let parent = "00f067aa0ba902b7";
    let response = client()
        .post(format!("{}/v1/session", served.url))
        .header("traceparent", format!("00-{trace_id}-{parent}-01"))
        .json(&json!({"message": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 201);
    let created: SessionCreated = read_wire(&response.json().await.unwrap());
    let session = created.session_id.as_str();
    let spans = sink
        .wait_spans(|spans| spans.iter().any(|span| span.name == "agent_sdk.turn"))
        .await;
    let turn = spans.iter().find(|s| s.name == "agent_sdk.turn").unwrap();
    assert_ne!(turn.trace_id, trace_id);
    assert_eq!(
        (turn.parent.as_deref(), turn.links.clone()),
        (None, vec![(trace_id.to_string(), parent.to_string())])
    );
    let http = spans
        .iter()
        .find(|s| s.name == "agent_sdk.http")
        .expect("the request's span");
    assert_eq!(
        (http.trace_id.as_str(), http.parent.as_deref()),
        (trace_id, Some(parent))
    );
    assert_eq!(http.attr("http.route"), "/test-agent/v1/session");
    assert_eq!(
        [
            "http.response.status_code",
            "agent_sdk.event_index.first",
            "agent_sdk.event_index.last"
        ]
        .map(|key| http.kinds.get(key).map(String::as_str)),
        [Some("intValue"); 3]
    );
    // The create covers the events appended while it was answered: from `session.started`
    // through the first message's `message.received`.
    let log = events(&served.url, session).await;
    let covered: Vec<&str> = (http.index("first")..=http.index("last"))
        .map(|index| log[index].event_type())
        .collect();
    assert_eq!(covered[0], "session.started", "{covered:?}");
    assert!(covered.contains(&"message.received"), "{covered:?}");
    let sent = mock.requests()[0]
        .header("traceparent")
        .unwrap()
        .to_string();
    assert!(
        sent.starts_with(&format!("00-{}-", turn.trace_id)),
        "{sent}"
    );

    // While a stream is open the server reports it; the turn's log was synced by the group
    // commit, and the fsync's latency recorded.
    let mut stream = Stream::open(&served.url, session, 0, None).await;
    stream.until("turn.completed").await;
    sink.wait_metrics("an open stream and an event-log fsync", |sink| {
        let streams = sink.points("agent_sdk.streams.open");
        let fsyncs = sink.points("agent_sdk.event_log.duration");
        streams.iter().any(|(_, open)| *open >= 1)
            && fsyncs
                .iter()
                .any(|(attributes, count)| attributes["operation"] == "fsync" && *count >= 1)
    })
    .await;
    drop(stream);
    let logs: LogsResponse = expect(
        Method::GET,
        &format!("{}/v1/logs?since=0", served.url),
        NO_BODY,
        200,
    )
    .await;
    assert!(
        logs.lines.iter().any(|line| line.level == LogLevel::Warn
            && line.message.starts_with("model request failed, retrying")),
        "{:#?}",
        logs.lines
    );
    let records = sink
        .wait_logs(|logs| {
            logs.iter().any(|log| {
                log.body
                    .as_str()
                    .is_some_and(|body| body.starts_with("model request failed, retrying"))
            })
        })
        .await;
    let retry = records
        .iter()
        .find(|log| {
            log.body
                .as_str()
                .is_some_and(|body| body.starts_with("model request failed, retrying"))
        })
        .unwrap();
    let chat = spans
        .iter()
        .find(|s| s.name == "chat gpt-test")
        .expect("the model call's span");
    assert_eq!(
        (
            retry.severity.as_deref(),
            retry.trace_id.as_deref(),
            retry.span_id.as_deref()
        ),
        (
            Some("WARN"),
            Some(turn.trace_id.as_str()),
            Some(chat.span_id.as_str())
        )
    );

    // A direct tool call opens a synthetic turn span, linked to its request's traceparent.
    let direct_trace = "0af7651916cd43dd8448eb211c80319c";
    let direct_parent = "b7ad6b7169203331";
    let mut attempts = 0;
    let status = loop {
        let response = client()
            .post(format!("{}/v1/session/{session}/tools/LS", served.url))
            .header(
                "traceparent",
                format!("00-{direct_trace}-{direct_parent}-01"),
            )
            .json(&json!({"input": {}}))
            .send()
            .await
            .unwrap();
        attempts += 1;
        // 409 while the session's actor is still settling the turn that just ended.
        if response.status().as_u16() != 409 || attempts == 50 {
            break response.status().as_u16();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(status, 200);
    let link = (direct_trace.to_string(), direct_parent.to_string());
    let spans = sink
        .wait_spans(|spans| spans.iter().any(|span| span.links.contains(&link)))
        .await;
    let synthetic = spans
        .iter()
        .find(|span| span.links.contains(&link))
        .unwrap();
    let direct: Vec<Span> = spans
        .iter()
        .filter(|span| span.trace_id == synthetic.trace_id)
        .cloned()
        .collect();
    assert_eq!(tree(&direct), ["agent_sdk.turn", "  agent_sdk.tool LS"]);
    assert_eq!(
        (
            synthetic.parent.as_deref(),
            synthetic.attr("agent_sdk.synthetic"),
            synthetic.attr("agent_sdk.session_id")
        ),
        (None, json!(true), json!(session))
    );
}

/// The first `agent_sdk.turn` span `sink` receives.
async fn turn_span(sink: &Sink) -> Span {
    let spans = sink
        .wait_spans(|spans| spans.iter().any(|span| span.name == "agent_sdk.turn"))
        .await;
    spans
        .into_iter()
        .find(|s| s.name == "agent_sdk.turn")
        .unwrap()
}

/// `[telemetry]` in `folio.toml` configures the export when no variable does, and each
/// `[[telemetry.destinations]]` entry receives only the signals it lists.
async fn folio_toml_configures_the_export() {
    let sink = Sink::start(Transport::Http).await;
    let logs_only = Sink::start(Transport::Http).await;
    let traces_only = Sink::start(Transport::Grpc).await;
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("Hello."));
    let project = agent_project();
    let folio_toml = format!(
        "[telemetry]\nendpoint = \"{}\"\nservice_name = \"from-folio-toml\"\n\n\
         [[telemetry.destinations]]\nendpoint = \"{}\"\nsignals = [\"logs\"]\n\n\
         [[telemetry.destinations]]\nendpoint = \"{}\"\nprotocol = \"grpc\"\nsignals = [\"traces\"]\n\n\
         [prices.\"gpt-test\"]\ninput = 2.0\noutput = 8.0\n",
        sink.endpoint, logs_only.endpoint, traces_only.endpoint
    );
    write_files(project.path(), &[("folio.toml", &folio_toml)]);
    let state = tempfile::tempdir().unwrap();
    let result = run(&mock, project.path(), state.path(), &[]).await;
    let turn = turn_span(&sink).await;
    assert_eq!(turn.resource["service.name"], "from-folio-toml");
    assert_eq!(turn_span(&traces_only).await.span_id, turn.span_id);
    let events = event_log(state.path(), &result.session_id).len();
    for sink in [&sink, &logs_only] {
        sink.wait_logs(|logs| event_records(logs).len() >= events)
            .await;
    }
    sink.wait_metrics("the turn counter", |sink| {
        !sink.points("agent_sdk.turn.count").is_empty()
    })
    .await;
    // A priced model's calls count in `cursor.cost.usage`, in dollars (a double), by model.
    let cost = sink.metrics("cursor.cost.usage");
    let point = &cost.first().expect("cursor.cost.usage exported")["sum"]["dataPoints"][0];
    let dollars = point["asDouble"].as_f64().expect("a double");
    let reported = result
        .usage
        .and_then(|u| u.cost_usd)
        .expect("the run's cost");
    assert!((dollars - reported).abs() < 1e-12, "{point} != {reported}");
    assert_eq!(cost[0]["unit"], "USD");
    // `folio run` has exited: everything it exported has arrived.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let kinds = |sink: &Sink| {
        ["traces", "metrics", "logs"]
            .into_iter()
            .filter(|kind| !sink.bodies(kind).is_empty())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        [kinds(&sink), kinds(&logs_only), kinds(&traces_only)],
        [
            vec!["traces", "metrics", "logs"],
            vec!["logs"],
            vec!["traces"]
        ]
    );
}

/// Opted in with `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`, spans carry the tool's
/// arguments and result and the model's input messages and answer; a failed tool call carries
/// `error.type`. (The wire formats, headers and temporalities of the export itself are
/// folio-telemetry's tests.)
async fn captured_contents_and_tool_errors_on_spans() {
    let sink = Sink::start(Transport::Http).await;
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([(
        "Read",
        json!({"path": "missing.txt"}),
    )]));
    mock.push(MockReply::text("Hello."));
    let project = serve_support::project("model = \"openai:gpt-test\"\n");
    let state = tempfile::tempdir().unwrap();
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", sink.endpoint.as_str()),
        ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true"),
    ];
    let result = run(&mock, project.path(), state.path(), &env).await;
    assert_eq!(result.reply, "Hello.");
    let spans = sink
        .wait_spans(|spans| spans.iter().any(|span| span.name == "agent_sdk.turn"))
        .await;
    assert_eq!(
        tree(&spans),
        [
            "agent_sdk.turn",
            "  chat gpt-test",
            "  agent_sdk.tool Read",
            "  chat gpt-test"
        ]
    );
    let (turn, chat, tool, answer) = (&spans[0], &spans[1], &spans[2], &spans[3]);
    assert_eq!(
        (
            turn.attr("gen_ai.conversation.id"),
            turn.attr("gen_ai.operation.name"),
            chat.attr("gen_ai.operation.name"),
            chat.attr("gen_ai.request.model"),
            chat.attr("gen_ai.response.model"),
        ),
        (
            json!(result.session_id),
            json!("invoke_agent"),
            json!("chat"),
            json!("gpt-test"),
            json!("gpt-test")
        )
    );
    let first_chunk = chat.attr("gen_ai.response.time_to_first_chunk");
    assert!(
        first_chunk.as_f64().is_some_and(|seconds| seconds >= 0.0),
        "{first_chunk}"
    );
    assert_eq!(
        (
            tool.attr("cursor.tool.status"),
            tool.attr("error.type"),
            tool.attr("gen_ai.tool.type"),
        ),
        (json!("error"), json!("tool_error"), json!("function"))
    );
    let arguments = tool.attr("gen_ai.tool.call.arguments");
    assert!(
        arguments
            .as_str()
            .is_some_and(|text| text.contains("missing.txt")),
        "{arguments}"
    );
    assert!(tool.attr("gen_ai.tool.call.result").is_string(), "{tool:?}");
    // The answering call's input: the user's message, the model's call, the tool's error.
    let input: Value = serde_json::from_str(
        answer
            .attr("gen_ai.input.messages")
            .as_str()
            .expect("gen_ai.input.messages"),
    )
    .unwrap();
    let call_id = input[1]["parts"][0]["id"].clone();
    let error = input[2]["parts"][0]["response"][0]["content"].clone();
    assert!(
        error
            .as_str()
            .is_some_and(|text| text.contains("missing.txt")),
        "{input}"
    );
    assert_eq!(
        input,
        json!([
            {"role": "user", "parts": [{"type": "text", "content": "write and judge"}]},
            {"role": "assistant", "parts": [{
                "type": "tool_call", "id": call_id, "name": "Read",
                "arguments": {"path": "missing.txt"},
            }]},
            {"role": "tool", "parts": [{
                "type": "tool_call_response", "id": call_id,
                "response": [{"type": "text", "content": error}],
            }]},
        ])
    );
    let output = answer.attr("gen_ai.output.messages");
    assert!(
        output.as_str().is_some_and(|text| text.contains("Hello.")),
        "{output}"
    );
    let sent = mock.requests()[0]
        .header("traceparent")
        .unwrap()
        .to_string();
    assert_eq!(sent, format!("00-{}-{}-01", turn.trace_id, chat.span_id));
}

/// `folio serve` reports its gauges as they change: a call waiting for approval
/// (`agent_sdk.approvals.pending`) holds the agent's one turn slot (`agent_sdk.turns.running`),
/// so another session's turn waits (`agent_sdk.turns.queued`); all three drop back to zero
/// once the call is approved and both turns end.
async fn server_gauges_follow_approvals_and_the_queue() {
    let sink = Sink::start(Transport::Http).await;
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([(
        "deploy",
        json!({"target": "prod"}),
    )]));
    mock.push(MockReply::text("Deployed."));
    mock.push(MockReply::text("Second."));
    let project = serve_support::project(
        "model = \"openai:gpt-test\"\n[concurrency]\nmax_running_turns = 1\n",
    );
    write_files(
        project.path(),
        &[(
            "agent/tools/deploy.toml",
            "description = \"Deploy a service.\"\ncommand = [\"sh\", \"-c\", \"cat >/dev/null; echo deployed\"]\nneeds_approval = true\n\n[input_schema]\ntype = \"object\"\n",
        )],
    );
    let state = tempfile::tempdir().unwrap();
    let served = serve_with_env(
        &mock.openai_base_url(),
        project.path(),
        state.path(),
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", sink.endpoint.as_str()),
            ("OTEL_METRIC_EXPORT_INTERVAL", "200"),
        ],
    )
    .await;
    let first = create_session(&served.url, &CreateSession::message("deploy prod")).await;
    let mut first_stream = Stream::open(&served.url, &first.session_id, 0, None).await;
    let requested = first_stream.until("action.approval_requested").await;
    let call_id = data::<ActionApprovalRequested>(&requested).call_id.clone();
    let second = create_session(&served.url, &CreateSession::message("hello")).await;
    let mut second_stream = Stream::open(&served.url, &second.session_id, 0, None).await;
    second_stream.until("turn.queued").await;
    let gauges = |sink: &Sink| {
        [
            "agent_sdk.approvals.pending",
            "agent_sdk.turns.running",
            "agent_sdk.turns.queued",
        ]
        .map(|name| sink.latest(name))
    };
    sink.wait_metrics(
        "one approval pending, one turn running, one queued",
        |sink| gauges(sink) == [Some(1), Some(1), Some(1)],
    )
    .await;
    let approve = ApprovalRequest {
        decision: ApprovalDecision::Approve,
        reason: None,
        content: None,
    };
    let _: Acknowledged = expect(
        Method::POST,
        &format!(
            "{}/v1/session/{}/approvals/{call_id}",
            served.url, first.session_id
        ),
        Some(&approve),
        200,
    )
    .await;
    first_stream.until("turn.completed").await;
    second_stream.until("turn.completed").await;
    sink.wait_metrics("no approval pending, no turn running or queued", |sink| {
        gauges(sink) == [Some(0), Some(0), Some(0)]
    })
    .await;
}

/// An MCP call over streamable HTTP carries its `tools/call` span's trace context both in
/// `params._meta` and as the request's `traceparent` header, as a real MCP server (the official
/// Python SDK) sees them.
async fn mcp_calls_carry_the_trace_context() {
    let sink = Sink::start(Transport::Http).await;
    let python = python();
    let port = free_port();
    let _server = tokio::process::Command::new(python)
        .args(["-c", TRACE_ECHO_SERVER, &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let address = format!("127.0.0.1:{port}");
    tokio::time::timeout(Duration::from_secs(30), async {
        while tokio::net::TcpStream::connect(&address).await.is_err() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the MCP server listens within 30 s");
    let project = serve_support::project("model = \"openai:gpt-test\"\n");
    write_files(
        project.path(),
        &[(
            "agent/mcp-connections/echo.toml",
            &format!("url = \"http://{address}/mcp\"\n"),
        )],
    );
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([(
        "mcp__echo__trace_context",
        json!({}),
    )]));
    mock.push(MockReply::text("Traced."));
    let state = tempfile::tempdir().unwrap();
    let result = run(
        &mock,
        project.path(),
        state.path(),
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &sink.endpoint)],
    )
    .await;
    assert_eq!(result.reply, "Traced.");
    let spans = sink
        .wait_spans(|spans| spans.iter().any(|span| span.name == "agent_sdk.turn"))
        .await;
    let call = spans
        .iter()
        .find(|span| span.name == "tools/call trace_context")
        .unwrap_or_else(|| panic!("no MCP span in {:?}", tree(&spans)));
    let expected = format!("00-{}-{}-01", call.trace_id, call.span_id);
    let output = result.tool_calls[0].output.as_str().unwrap_or_default();
    let seen: Value = serde_json::from_str(output)
        .unwrap_or_else(|err| panic!("the tool answered {output:?}: {err}"));
    assert_eq!(seen, json!({"meta": expected, "header": expected}));
}

/// Under `FOLIO_TRACEPARENT_MODE=parent` a channel delivery's `traceparent` parents the turn it
/// wakes, although the work runs after the `202`; the delivery's request has its
/// `agent_sdk.http` span in the same trace.
async fn a_channel_delivery_joins_the_senders_trace() {
    let sink = Sink::start(Transport::Http).await;
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("Noted."));
    let project = serve_support::project("model = \"openai:gpt-test\"\n");
    write_files(
        project.path(),
        &[(
            "agent/channels/hook.toml",
            "kind = \"webhook\"\nauth = [\"allow-all\"]\n[[routes]]\npath = \"/in\"\nmessage = \"{{ body.text }}\"\n",
        )],
    );
    let state = tempfile::tempdir().unwrap();
    let served = serve_with_env(
        &mock.openai_base_url(),
        project.path(),
        state.path(),
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", sink.endpoint.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            ("FOLIO_TRACEPARENT_MODE", "parent"),
        ],
    )
    .await;
    let trace_id = "5ce0e9a56015fec5aadfa328ae398115";
    let parent = "ab0f6ce0d4a3e1f2";
    let response = client()
        .post(format!("{}/v1/channels/hook/in", served.url))
        .header("traceparent", format!("00-{trace_id}-{parent}-01"))
        .json(&json!({"text": "hello from a webhook"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 202);
    let spans = sink
        .wait_spans(|spans| {
            spans
                .iter()
                .any(|span| span.name == "agent_sdk.turn" && span.trace_id == trace_id)
        })
        .await;
    let turn = spans
        .iter()
        .find(|span| span.name == "agent_sdk.turn" && span.trace_id == trace_id)
        .unwrap();
    assert_eq!(turn.parent.as_deref(), Some(parent));
    let http = spans
        .iter()
        .find(|span| span.name == "agent_sdk.http" && span.trace_id == trace_id)
        .expect("the delivery's request span");
    assert_eq!(http.parent.as_deref(), Some(parent));
    let sent = mock.requests()[0]
        .header("traceparent")
        .unwrap()
        .to_string();
    assert!(sent.starts_with(&format!("00-{trace_id}-")), "{sent}");
}

#[tokio::test]
async fn otlp_export_end_to_end() {
    traced_run_exports_the_turn_tree().await;
    incoming_traceparent_is_linked_from_the_turn().await;
    folio_toml_configures_the_export().await;
    captured_contents_and_tool_errors_on_spans().await;
    mcp_calls_carry_the_trace_context().await;
    server_gauges_follow_approvals_and_the_queue().await;
    a_channel_delivery_joins_the_senders_trace().await;
}
