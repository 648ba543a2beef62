//! OTLP export against a real receiver (PyPI `oteltest`'s sinks, [`folio_test_support::otlp`]):
//! what this crate ships, in each wire format, without a turn around it.
//!
//! [`install`] sets the process's global subscriber, so each scenario runs the test binary
//! again as a child ([`child`], selected by [`CHILD`]) that installs telemetry from the `OTEL_*`
//! variables (and destinations) it is given, emits a turn span with a model-call span inside (and
//! a turn metric, three session events and a few log lines), prints the `traceparent` an
//! outgoing request would carry, and shuts down (which flushes). The parent reads what the sink
//! received.

use std::time::Duration;

use folio_telemetry::{
    DestinationSettings, LogFormat, SessionEvent, TelemetryConfig, TelemetrySettings, adopt_caller,
    install, log_filter, metrics, session_event, trace_headers,
};
use folio_test_support::otlp::{Log, Sink, Span, Transport, free_port, tree};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tracing::Level;

/// Set (to anything) in the child process.
const CHILD: &str = "FOLIO_TELEMETRY_TEST_CHILD";
/// How many turn spans the child emits (default 1).
const CHILD_TURNS: &str = "FOLIO_TELEMETRY_TEST_TURNS";
/// A W3C `traceparent` the child's turns are joined to, as a request's header would be.
const CHILD_TRACEPARENT: &str = "FOLIO_TELEMETRY_TEST_TRACEPARENT";
/// `[[telemetry.destinations]]` for the child, as JSON: `[{"endpoint", "signals"}]`.
const CHILD_DESTINATIONS: &str = "FOLIO_TELEMETRY_TEST_DESTINATIONS";

/// The telemetry variables a child never inherits from the test's own environment.
const OTEL_VARS: [&str; 13] = [
    "OTEL_SDK_DISABLED",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE",
    "OTEL_LOGS_EXPORTER",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_BSP_MAX_QUEUE_SIZE",
    "FOLIO_TRACEPARENT_MODE",
];

/// The child's destinations from [`CHILD_DESTINATIONS`].
fn destinations(json: Option<String>) -> Vec<DestinationSettings> {
    let list: Vec<Value> = json.map_or_else(Vec::new, |json| serde_json::from_str(&json).unwrap());
    list.iter()
        .map(|destination| DestinationSettings {
            endpoint: destination["endpoint"].as_str().unwrap().to_string(),
            signals: serde_json::from_value(destination["signals"].clone()).unwrap(),
            ..DestinationSettings::default()
        })
        .collect()
}

/// Session event `index` of the child's turn `turn`.
fn event<'a>(
    event_type: &'static str,
    index: u64,
    turn: &'a str,
    level: Level,
) -> SessionEvent<'a> {
    SessionEvent {
        event_type,
        index,
        session_id: "ses_test",
        turn_id: Some(turn),
        at: std::time::SystemTime::now(),
        level,
    }
}

/// The child's side: install from the environment, emit, print, flush. Passes at once in any
/// other run of the test binary.
#[test]
fn child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let env = |name: &str| std::env::var(name).ok();
    let settings = TelemetrySettings {
        destinations: destinations(env(CHILD_DESTINATIONS)),
        ..TelemetrySettings::default()
    };
    let config = TelemetryConfig::resolve(env, &settings, "telemetry-test")
        .expect("the test's OTEL_* variables resolve");
    let telemetry = install(LogFormat::Text, log_filter(env).unwrap(), &config).unwrap();
    let turns: usize = env(CHILD_TURNS).map_or(1, |count| count.parse().unwrap());
    let incoming = env(CHILD_TRACEPARENT);
    let started = std::time::Instant::now();
    for index in 0..turns {
        let turn = tracing::info_span!(
            target: "folio_test",
            parent: None,
            "agent_sdk.turn",
            gen_ai.operation.name = "invoke_agent",
            agent_sdk.turn_index = folio_telemetry::int(index as u64),
            gen_ai.usage.input_tokens = tracing::field::Empty,
        );
        adopt_caller(&turn, incoming.as_deref());
        let _entered = turn.enter();
        let turn_id = format!("turn_{index}");
        turn.record("gen_ai.usage.input_tokens", folio_telemetry::int(22));
        metrics::turn(
            metrics::Who {
                agent: "test-agent",
                variant: None,
            },
            "completed",
        );
        session_event(event("turn.started", 0, &turn_id, Level::INFO));
        let chat = tracing::info_span!(
            target: "folio_test",
            "chat",
            otel.name = "chat test-model",
            gen_ai.request.model = "test-model",
        );
        let headers = chat.in_scope(|| {
            tracing::warn!(target: "folio_test", attempt = 2, "model request failed, retrying");
            tracing::info!(target: "folio_test", "below the filter");
            tracing::warn!(target: "another_crate", "not one of Folio's lines");
            session_event(event("action.result", 1, &turn_id, Level::WARN));
            trace_headers()
        });
        session_event(event("turn.completed", 2, &turn_id, Level::INFO));
        println!("{}", json!({ "traceparent": headers.get("traceparent") }));
    }
    println!("{}", json!({ "emitted_ms": started.elapsed().as_millis() }));
    telemetry.shutdown();
}

/// What a child printed: each turn's outgoing `traceparent`, and how long emitting took.
struct Emitted {
    traceparents: Vec<Value>,
    emitted_ms: u64,
}

/// Runs the child with `env` (and no inherited `OTEL_*`) until it exits; what it printed.
async fn emit(env: &[(&str, &str)]) -> Emitted {
    let output = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args(["child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env_remove("RUST_LOG")
        .env_remove("FOLIO_LOG")
        .envs(OTEL_VARS.iter().map(|var| (*var, "")))
        .envs(env.iter().copied())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<Value> = stdout
        .lines()
        // libtest writes `test child ... ` before the first line the test prints.
        .filter_map(|line| line.find("{\"").map(|start| &line[start..]))
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    Emitted {
        traceparents: lines
            .iter()
            .filter_map(|line| line.get("traceparent").cloned())
            .collect(),
        emitted_ms: lines
            .iter()
            .find_map(|line| line["emitted_ms"].as_u64())
            .expect("the child says how long it took"),
    }
}

/// Waits for the one turn's two spans; checks their tree and that the outgoing `traceparent`
/// names the model call's span.
async fn turn_spans(sink: &Sink, emitted: &Emitted) -> Vec<Span> {
    let spans = sink.wait_spans(|spans| spans.len() >= 2).await;
    assert_eq!(tree(&spans), ["agent_sdk.turn", "  chat test-model"]);
    let (turn, chat) = (&spans[0], &spans[1]);
    assert_eq!(
        emitted.traceparents,
        [json!(format!("00-{}-{}-01", turn.trace_id, chat.span_id))]
    );
    spans
}

/// Waits for the turn counter; returns its aggregation temporality.
async fn turn_count_temporality(sink: &Sink) -> Value {
    sink.wait_metrics("agent_sdk.turn.count", |sink| {
        !sink.metrics("agent_sdk.turn.count").is_empty()
    })
    .await;
    sink.metrics("agent_sdk.turn.count")[0]["sum"]["aggregationTemporality"].clone()
}

/// OTLP/HTTP protobuf (the default): the span tree with its attributes (counts as OTLP
/// integers, which backends can sum), the resource (service
/// name, `OTEL_RESOURCE_ATTRIBUTES`, the framework), the headers percent-decoded, and the turn
/// counter in the delta temporality.
#[tokio::test]
async fn http_protobuf_exports_spans_resource_headers_and_metrics() {
    let sink = Sink::start(Transport::Http).await;
    let emitted = emit(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &sink.endpoint),
        ("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=secret%20value"),
        ("OTEL_SERVICE_NAME", "telemetry-suite"),
        ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test"),
    ])
    .await;
    let spans = turn_spans(&sink, &emitted).await;
    let (turn, chat) = (&spans[0], &spans[1]);
    assert_eq!(
        (
            turn.attr("gen_ai.operation.name"),
            chat.attr("gen_ai.request.model"),
            turn.resource.get("service.name").cloned(),
            turn.resource.get("deployment.environment").cloned(),
            turn.resource.get("agent_sdk.framework").cloned(),
            turn.kinds
                .get("gen_ai.usage.input_tokens")
                .map(String::as_str),
            turn.kinds.get("agent_sdk.turn_index").map(String::as_str),
        ),
        (
            json!("invoke_agent"),
            json!("test-model"),
            Some(json!("telemetry-suite")),
            Some(json!("test")),
            Some(json!("folio")),
            Some("intValue"),
            Some("intValue"),
        )
    );
    let headers: Vec<Option<String>> = sink
        .headers("traces")
        .iter()
        .map(|headers| headers.get("x-api-key").cloned())
        .collect();
    assert!(!headers.is_empty());
    assert!(
        headers
            .iter()
            .all(|value| value.as_deref() == Some("secret value")),
        "{headers:?}"
    );
    assert_eq!(
        turn_count_temporality(&sink).await,
        "AGGREGATION_TEMPORALITY_DELTA"
    );
}

/// `OTEL_EXPORTER_OTLP_PROTOCOL=http/json` exports the same spans, metrics and logs as JSON. (The
/// sink reads OTLP/JSON's hex ids as base64, so ids are not compared.)
#[tokio::test]
async fn http_json_exports_the_same_spans() {
    let sink = Sink::start(Transport::Http).await;
    emit(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &sink.endpoint),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
    ])
    .await;
    let spans = sink.wait_spans(|spans| spans.len() >= 2).await;
    let names: Vec<&str> = spans.iter().map(|span| span.name.as_str()).collect();
    assert_eq!(names, ["agent_sdk.turn", "chat test-model"]);
    turn_count_temporality(&sink).await;
    sink.wait_logs(|logs| logs.len() >= 4).await;
}

/// `grpc` exports over OTLP/gRPC (the endpoint taken as written), the headers as gRPC metadata,
/// metrics in the cumulative temporality asked for, and the log records.
#[tokio::test]
async fn grpc_exports_with_metadata_and_cumulative_metrics() {
    let sink = Sink::start(Transport::Grpc).await;
    let emitted = emit(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &sink.endpoint),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=over-grpc"),
        (
            "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE",
            "cumulative",
        ),
    ])
    .await;
    turn_spans(&sink, &emitted).await;
    for headers in sink.headers("traces") {
        assert_eq!(
            headers.get("x-api-key").map(String::as_str),
            Some("over-grpc")
        );
    }
    assert_eq!(
        turn_count_temporality(&sink).await,
        "AGGREGATION_TEMPORALITY_CUMULATIVE"
    );
    let logs = sink.wait_logs(|logs| logs.len() >= 4).await;
    assert!(logs.iter().all(|log| log.trace_id.is_some()), "{logs:#?}");
}

/// A received log record as the tests compare it.
#[derive(Debug, PartialEq)]
struct Record {
    body: Value,
    severity: String,
    trace_id: String,
    span_id: String,
    /// Each attribute's key, value and OTLP type (`intValue`, `stringValue`).
    attributes: Vec<(String, Value, String)>,
}

/// The log records of one child turn, comparable, by body.
fn records(logs: &[Log]) -> Vec<Record> {
    let mut records: Vec<Record> = logs
        .iter()
        .map(|log| Record {
            body: log.body.clone(),
            severity: log.severity.clone().unwrap_or_default(),
            trace_id: log.trace_id.clone().unwrap_or_default(),
            span_id: log.span_id.clone().unwrap_or_default(),
            attributes: log
                .attributes
                .iter()
                .map(|(key, value)| (key.clone(), value.clone(), log.kinds[key].clone()))
                .collect(),
        })
        .collect();
    records.sort_by_key(|record| record.body.to_string());
    records
}

/// The logs signal: each session event becomes a record in the span it was emitted in (type,
/// int index, session and turn), and so does a log line of Folio's that the filter lets
/// through (not one below it, nor another crate's); the resource is the spans'.
#[tokio::test]
async fn logs_carry_session_events_and_log_lines_in_their_spans() {
    let sink = Sink::start(Transport::Http).await;
    let emitted = emit(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &sink.endpoint),
        ("OTEL_SERVICE_NAME", "telemetry-logs"),
    ])
    .await;
    let spans = turn_spans(&sink, &emitted).await;
    let (turn, chat) = (&spans[0], &spans[1]);
    let logs = sink.wait_logs(|logs| logs.len() >= 4).await;
    let attribute =
        |key: &str, value: Value, kind: &str| (key.to_string(), value, kind.to_string());
    let event = |event_type: &str, index: &str, severity: &str, span: &Span| Record {
        body: json!(event_type),
        severity: severity.to_string(),
        trace_id: turn.trace_id.clone(),
        span_id: span.span_id.clone(),
        attributes: vec![
            attribute("agent_sdk.event.index", json!(index), "intValue"),
            attribute("agent_sdk.event.type", json!(event_type), "stringValue"),
            attribute("agent_sdk.session.id", json!("ses_test"), "stringValue"),
            attribute("agent_sdk.turn.id", json!("turn_0"), "stringValue"),
        ],
    };
    assert_eq!(
        records(&logs),
        [
            event("action.result", "1", "WARN", chat),
            Record {
                body: json!("model request failed, retrying"),
                severity: "WARN".to_string(),
                trace_id: turn.trace_id.clone(),
                span_id: chat.span_id.clone(),
                attributes: vec![attribute("attempt", json!("2"), "intValue")],
            },
            event("turn.completed", "2", "INFO", turn),
            event("turn.started", "0", "INFO", turn),
        ]
    );
    assert!(
        logs.iter()
            .all(|log| log.resource.get("service.name") == Some(&json!("telemetry-logs"))),
        "{logs:#?}"
    );
}

/// Each `[[telemetry.destinations]]` entry receives only the signals it lists, beside no default
/// destination at all.
#[tokio::test]
async fn destinations_receive_only_their_signals() {
    let traces = Sink::start(Transport::Http).await;
    let metrics_and_logs = Sink::start(Transport::Http).await;
    let destinations = json!([
        {"endpoint": traces.endpoint, "signals": ["traces"]},
        {"endpoint": metrics_and_logs.endpoint, "signals": ["metrics", "logs"]},
    ]);
    let emitted = emit(&[(CHILD_DESTINATIONS, &destinations.to_string())]).await;
    turn_spans(&traces, &emitted).await;
    metrics_and_logs.wait_logs(|logs| logs.len() >= 4).await;
    turn_count_temporality(&metrics_and_logs).await;
    // The child has exited: everything it exported has arrived.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let kinds = |sink: &Sink| {
        ["traces", "metrics", "logs"]
            .into_iter()
            .filter(|kind| !sink.bodies(kind).is_empty())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        (kinds(&traces), kinds(&metrics_and_logs)),
        (vec!["traces"], vec!["metrics", "logs"])
    );
}

/// By default a valid incoming `traceparent` leaves the turn the root of a new trace, with a
/// span link to the caller's span; `FOLIO_TRACEPARENT_MODE=parent` makes the caller's span its
/// parent instead, in the caller's trace; an invalid one leaves the turn a root, unlinked.
#[tokio::test]
async fn an_incoming_traceparent_is_linked_or_parents_the_turn() {
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller = "00f067aa0ba902b7";
    let traceparent = format!("00-{trace_id}-{caller}-01");
    let turn = |mode: Option<&'static str>, traceparent: String| async move {
        let sink = Sink::start(Transport::Http).await;
        let mut env = vec![
            ("OTEL_EXPORTER_OTLP_ENDPOINT", sink.endpoint.clone()),
            (CHILD_TRACEPARENT, traceparent),
        ];
        env.extend(mode.map(|mode| ("FOLIO_TRACEPARENT_MODE", mode.to_string())));
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        emit(&env).await;
        let spans = sink.wait_spans(|spans| spans.len() >= 2).await;
        spans[0].clone()
    };
    let linked = turn(None, traceparent.clone()).await;
    assert_ne!(linked.trace_id, trace_id);
    assert_eq!(
        (linked.parent, linked.links),
        (None, vec![(trace_id.to_string(), caller.to_string())])
    );
    let parented = turn(Some("parent"), traceparent).await;
    assert_eq!(
        (parented.trace_id.as_str(), parented.parent.as_deref()),
        (trace_id, Some(caller))
    );
    assert!(parented.links.is_empty(), "{parented:?}");
    let invalid = turn(None, "00-not-a-trace-01".to_string()).await;
    assert_eq!((invalid.parent, invalid.links), (None, Vec::new()));
}

/// Nothing reaches a collector under `OTEL_SDK_DISABLED=true` or with no endpoint, and no
/// outgoing request carries a trace context.
#[tokio::test]
async fn nothing_is_exported_unless_configured() {
    let sink = Sink::start(Transport::Http).await;
    let disabled = emit(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &sink.endpoint),
        ("OTEL_SDK_DISABLED", "true"),
    ])
    .await;
    let unset = emit(&[]).await;
    assert_eq!(
        (disabled.traceparents, unset.traceparents),
        (vec![Value::Null], vec![Value::Null])
    );
    // Both children have exited, so anything they exported has arrived.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(sink.exports(), 0);
}

/// A collector that refuses connections fails nothing; one that accepts and never answers
/// (each export waits out its 5 s timeout) blocks no span: with a queue of one span, the others
/// are dropped and counted (`otel.sdk.processor.span.processed`, `error.type = queue_full`), the
/// count exported to the metrics collector.
#[tokio::test]
async fn a_collector_that_is_down_or_stalled_blocks_nothing() {
    let down = format!("http://127.0.0.1:{}", free_port());
    emit(&[("OTEL_EXPORTER_OTLP_ENDPOINT", &down)]).await;

    let sink = Sink::start(Transport::Http).await;
    let stalled = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let stalled_url = format!("http://{}/v1/traces", stalled.local_addr().unwrap());
    // Accepts every connection and holds it, reading nothing and answering nothing.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for connection in stalled.incoming() {
            held.push(connection);
        }
    });
    let metrics_url = format!("{}/v1/metrics", sink.endpoint);
    let emitted = emit(&[
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &stalled_url),
        ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", &metrics_url),
        ("OTEL_BSP_MAX_QUEUE_SIZE", "1"),
        (CHILD_TURNS, "20"),
    ])
    .await;
    assert!(
        emitted.emitted_ms < 5_000,
        "emitting 40 spans took {} ms: it waited on the stalled collector",
        emitted.emitted_ms
    );
    sink.wait_metrics("the dropped spans' count", |sink| {
        sink.points("otel.sdk.processor.span.processed")
            .iter()
            .any(|(attributes, dropped)| {
                attributes.get("error.type") == Some(&json!("queue_full")) && *dropped >= 1
            })
    })
    .await;
}
