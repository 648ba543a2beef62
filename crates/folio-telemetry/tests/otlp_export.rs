//! OTLP export against a real receiver (PyPI `oteltest`'s sinks, [`folio_test_support::otlp`]):
//! what this crate ships, in each wire format, without a turn around it.
//!
//! [`install`] sets the process's global subscriber, so each scenario runs the test binary
//! again as a child ([`child`], selected by [`CHILD`]) that installs telemetry from the `OTEL_*`
//! variables it is given, emits a turn span with a model-call span inside (and a turn metric),
//! prints the `traceparent` an outgoing request would carry, and shuts down (which flushes).
//! The parent reads what the sink received.

use std::time::Duration;

use folio_telemetry::{
    LogFormat, TelemetryConfig, TelemetrySettings, adopt_parent, install, log_filter, metrics,
    trace_headers,
};
use folio_test_support::otlp::{Sink, Transport, free_port, tree};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// Set (to anything) in the child process.
const CHILD: &str = "FOLIO_TELEMETRY_TEST_CHILD";
/// How many turn spans the child emits (default 1).
const CHILD_TURNS: &str = "FOLIO_TELEMETRY_TEST_TURNS";
/// A W3C `traceparent` the child's turns are parented on, as a request's header would be.
const CHILD_TRACEPARENT: &str = "FOLIO_TELEMETRY_TEST_TRACEPARENT";

/// The OTLP variables a child never inherits from the test's own environment.
const OTEL_VARS: [&str; 10] = [
    "OTEL_SDK_DISABLED",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_BSP_MAX_QUEUE_SIZE",
];

/// The child's side: install from the environment, emit, print, flush. Passes at once in any
/// other run of the test binary.
#[test]
fn child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let env = |name: &str| std::env::var(name).ok();
    let config = TelemetryConfig::resolve(env, &TelemetrySettings::default(), "telemetry-test")
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
        adopt_parent(&turn, incoming.as_deref());
        let _entered = turn.enter();
        turn.record("gen_ai.usage.input_tokens", folio_telemetry::int(22));
        metrics::turn("test-agent", "completed");
        let chat = tracing::info_span!(
            target: "folio_test",
            "chat",
            otel.name = "chat test-model",
            gen_ai.request.model = "test-model",
        );
        let headers = chat.in_scope(trace_headers);
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
async fn turn_spans(sink: &Sink, emitted: &Emitted) -> Vec<folio_test_support::otlp::Span> {
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

/// `OTEL_EXPORTER_OTLP_PROTOCOL=http/json` exports the same spans and metrics as JSON. (The
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
}

/// `grpc` exports over OTLP/gRPC (the endpoint taken as written), the headers as gRPC metadata,
/// metrics in the cumulative temporality asked for.
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
}

/// A valid incoming `traceparent` parents the turn: same trace, the caller's span as parent;
/// an invalid one leaves the turn a root of its own trace.
#[tokio::test]
async fn an_incoming_traceparent_parents_the_turn() {
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let parent = "00f067aa0ba902b7";
    let sink = Sink::start(Transport::Http).await;
    emit(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &sink.endpoint),
        (CHILD_TRACEPARENT, &format!("00-{trace_id}-{parent}-01")),
    ])
    .await;
    let spans = sink.wait_spans(|spans| spans.len() >= 2).await;
    assert_eq!(
        (spans[0].trace_id.as_str(), spans[0].parent.as_deref()),
        (trace_id, Some(parent))
    );
    let sink = Sink::start(Transport::Http).await;
    emit(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &sink.endpoint),
        (CHILD_TRACEPARENT, "00-not-a-trace-01"),
    ])
    .await;
    let spans = sink.wait_spans(|spans| spans.len() >= 2).await;
    assert_eq!(spans[0].parent, None);
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
