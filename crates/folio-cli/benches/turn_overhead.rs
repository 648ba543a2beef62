//! Harness overhead per turn: a two-step turn (one `LS` tool call, then a reply) against a
//! zero-latency model, with every event appended to a real NDJSON event log.
//!
//! Two models: an in-process provider that yields canned deltas (pure harness cost), and the
//! mock model *server* over loopback through the real OpenAI client (adds HTTP + SSE). Each runs,
//! in a process of its own, with no subscriber; with Folio's subscriber and no export (what
//! `folio` runs by default); with Folio's subscriber exporting every span and metric over
//! OTLP/HTTP to a loopback collector that accepts everything; to a collector that is down
//! (connections refused); and to one that accepts connections and never answers.
//! Run: `cargo bench -p folio-cli --bench turn_overhead` (prints p50/p99 per turn).

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use folio_agent::tools::{FileTool, ToolRegistry};
use folio_agent::{ContextBudget, EventSink, Harness, TurnOutcome};
use folio_fs::{FileSystem, temp_fs};
use folio_model::{
    Delta, DeltaStream, FinishReason, ModelError, ModelRequest, Provider, ProviderConfig,
    open_provider,
};
use folio_project::ContextSection;
use folio_protocol::{EventBody, MessageReceived, Usage};
use folio_store_disk::EventLog;
use folio_test_support::{MockModelServer, MockReply};
use futures::stream;
use serde_json::json;
use support::{LogSink, rooted_turn};
use tokio_util::sync::CancellationToken;

const TURNS: usize = 2_000;

/// Answers step 1 with an `LS` call and step 2 with text, instantly.
struct CannedProvider;

#[async_trait::async_trait]
impl Provider for CannedProvider {
    async fn stream(
        &self,
        request: &ModelRequest,
        _cancel: CancellationToken,
    ) -> Result<DeltaStream, ModelError> {
        let answered_tool = request
            .messages
            .iter()
            .any(|m| matches!(m, folio_model::Message::ToolResult { .. }));
        let deltas = if answered_tool {
            vec![
                Delta::Text("The tree has ".into()),
                Delta::Text("two files.".into()),
                Delta::Usage(Usage {
                    input_tokens: 10,
                    output_tokens: 4,
                    ..Usage::default()
                }),
                Delta::Finish(FinishReason::Stop),
            ]
        } else {
            vec![
                Delta::ToolCallStart {
                    index: 0,
                    id: "call_1".into(),
                    name: "LS".into(),
                },
                Delta::ToolCallArgs {
                    index: 0,
                    fragment: "{\"path\":".into(),
                },
                Delta::ToolCallArgs {
                    index: 0,
                    fragment: "\"/\"}".into(),
                },
                Delta::ToolCallEnd { index: 0 },
                Delta::Finish(FinishReason::ToolCalls),
            ]
        };
        Ok(Box::pin(stream::iter(deltas.into_iter().map(Ok))))
    }
}

fn harness(provider: Arc<dyn Provider>) -> Harness {
    let mut tools = ToolRegistry::new();
    for tool in FileTool::ALL {
        tools.register(Arc::new(tool)).unwrap();
    }
    Harness {
        agent: "bench".into(),
        provider,
        model: "bench".into(),
        system: "You are a benchmark.".into(),
        params: Default::default(),
        tools,
        max_steps: 10,
        approval_timeout: None,
        context: ContextBudget::new("bench", &ContextSection::default(), None),
        prices: Default::default(),
        variant: None,
    }
}

async fn measure(name: &str, harness: &Harness, before_turn: impl Fn()) {
    let dir = tempfile::tempdir().unwrap();
    let fs: Arc<dyn FileSystem> = temp_fs([("/a.txt", "a"), ("/b.txt", "b")]);
    let mut durations = Vec::with_capacity(TURNS);
    let mut events = 0u64;
    for n in 0..TURNS {
        before_turn();
        let session = format!("ses_{n}");
        let (log, _) =
            EventLog::open(&dir.path().join(format!("{session}.ndjson")), &session).unwrap();
        let sink = LogSink(log);
        let started = Instant::now();
        let received = sink
            .emit(
                Some("turn_1"),
                EventBody::MessageReceived(MessageReceived {
                    text: "What is in the tree?".into(),
                    admission: None,
                    coalesced: None,
                    client_message_id: None,
                    request_digest: None,
                }),
            )
            .await
            .unwrap();
        let turn = rooted_turn(&session, "turn_1", vec![received], fs.clone(), dir.path());
        let outcome = harness.run_turn(turn, &sink).await;
        durations.push(started.elapsed());
        assert!(
            matches!(outcome, TurnOutcome::Completed { .. }),
            "{outcome:?}"
        );
        events += folio_store_disk::read_events(sink.0.path()).unwrap().len() as u64;
    }
    durations.sort();
    let pct = |p: f64| durations[((durations.len() as f64 * p) as usize).min(durations.len() - 1)];
    let total: Duration = durations.iter().sum();
    println!(
        "{name}: {TURNS} turns, {} events/turn: p50 {:?}, p99 {:?}, mean {:?}",
        events / TURNS as u64,
        pct(0.50),
        pct(0.99),
        total / TURNS as u32
    );
}

/// A loopback OTLP/HTTP collector that answers every export `200 OK` and keeps nothing;
/// returns its base URL.
fn accepting_collector() -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream);
                loop {
                    let mut length = 0usize;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let header = line.to_ascii_lowercase();
                        if let Some(value) = header.strip_prefix("content-length:") {
                            length = value.trim().parse().unwrap_or(0);
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let reply = b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if reader.get_mut().write_all(reply).is_err() {
                        return;
                    }
                }
            });
        }
    });
    url
}

/// How telemetry is set up in one measuring process (`FOLIO_BENCH_TELEMETRY`).
const MODES: [(&str, &str); 5] = [
    ("none", "no subscriber"),
    ("off", "subscriber, export off"),
    ("on", "OTLP export on"),
    ("down", "OTLP export to a collector that is down"),
    ("stalled", "OTLP export to a collector that never answers"),
];

/// Measures each telemetry mode in a process of its own (the subscriber and the metric
/// instruments are process-wide, set up once).
fn main() {
    let Ok(mode) = std::env::var("FOLIO_BENCH_TELEMETRY") else {
        let bench = std::env::current_exe().unwrap();
        for (mode, _) in MODES {
            let status = std::process::Command::new(&bench)
                .args(std::env::args().skip(1))
                .env("FOLIO_BENCH_TELEMETRY", mode)
                .status()
                .unwrap();
            assert!(status.success(), "the {mode} run failed");
        }
        return;
    };
    let (_, label) = MODES
        .iter()
        .find(|(name, _)| *name == mode)
        .unwrap_or_else(|| panic!("FOLIO_BENCH_TELEMETRY={mode}: use one of {MODES:?}"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let filter = folio_telemetry::log_filter(|_| None).unwrap();
    let collector = match mode.as_str() {
        "none" | "off" => None,
        "on" => Some(accepting_collector()),
        "down" => Some(format!("http://{}", closed_port())),
        _ => Some(stalled_collector()),
    };
    let env = |name: &str| {
        (name == "OTEL_EXPORTER_OTLP_ENDPOINT")
            .then(|| collector.clone())
            .flatten()
    };
    let config = folio_telemetry::TelemetryConfig::resolve(
        env,
        &folio_telemetry::TelemetrySettings::default(),
        "bench",
    )
    .unwrap();
    let telemetry = (mode != "none").then(|| {
        folio_telemetry::install(folio_telemetry::LogFormat::Text, filter, &config).unwrap()
    });
    runtime.block_on(measure_all(label));
    drop(runtime);
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
}

/// A loopback address where nothing listens (connections are refused).
fn closed_port() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

/// A loopback collector that accepts connections and never reads or answers; returns its URL.
fn stalled_collector() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for connection in listener.incoming() {
            held.push(connection);
        }
    });
    url
}

/// Both models, labelled with how telemetry is set up.
async fn measure_all(telemetry: &str) {
    measure(
        &format!("in-process provider, {telemetry}"),
        &harness(Arc::new(CannedProvider)),
        || {},
    )
    .await;
    let mock = MockModelServer::start().await;
    let base = mock.openai_base_url();
    let env = move |name: &str| match name {
        "OPENAI_API_KEY" => Some("bench".to_string()),
        "OPENAI_BASE_URL" => Some(base.clone()),
        _ => None,
    };
    let (provider, model) =
        open_provider("openai:bench", &ProviderConfig::default(), &env).unwrap();
    let mut http = harness(provider);
    http.model = model;
    measure(
        &format!("mock model server over HTTP, {telemetry}"),
        &http,
        || {
            mock.push(MockReply::tool_calls([("LS", json!({"path": "/"}))]));
            mock.push(MockReply::text("The tree has two files."));
        },
    )
    .await;
}
