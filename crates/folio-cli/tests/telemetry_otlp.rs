//! OpenTelemetry export end to end, against a real OTLP receiver nobody here wrote: the
//! `HttpSink` of PyPI's `oteltest` (installed by `scripts/install-test-deps` into
//! `target/test-deps/venv`), which parses each OTLP/HTTP request (protobuf or JSON) with the
//! official protobuf types. A small driver prints what it received as JSON lines.
//!
//! One test runs the scenarios in order, each against its own sink on a free port: the span tree
//! of a `folio run` turn with two tool calls and a subagent (names, parents, GenAI attributes,
//! event-index ranges against the session log), the trace context sent to the model, metrics;
//! an incoming `traceparent` on `folio serve` parenting the turn; nothing
//! exported under `OTEL_SDK_DISABLED` or with no endpoint; `[telemetry]` in `folio.toml`;
//! OTLP/HTTP JSON; a collector that is down failing no turn.

mod serve_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use folio_protocol::Usage;
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use serve_support::{client, folio_bin, serve_with_env, write_files};
use tokio::io::{AsyncBufReadExt, BufReader};

/// Starts oteltest's `HttpSink` on the port in argv[1] and prints every export it parses as a
/// JSON line (`{"kind": "traces"|"metrics"|"logs", "body": …}`, ids as hex).
const SINK_DRIVER: &str = r#"
import base64, json, logging, sys
from google.protobuf.json_format import MessageToDict
from oteltest.sink import HttpSink
from oteltest.sink.handler import RequestHandler

IDS = ("traceId", "spanId", "parentSpanId")

def hexids(node):
    if isinstance(node, dict):
        return {k: base64.b64decode(v).hex() if k in IDS and isinstance(v, str) else hexids(v)
                for k, v in node.items()}
    if isinstance(node, list):
        return [hexids(v) for v in node]
    return node

class Lines(RequestHandler):
    def emit(self, kind, request):
        print(json.dumps({"kind": kind, "body": hexids(MessageToDict(request))}), flush=True)
    def handle_logs(self, request, headers):
        self.emit("logs", request)
    def handle_metrics(self, request, headers):
        self.emit("metrics", request)
    def handle_trace(self, request, headers):
        self.emit("traces", request)

class Sink(HttpSink):
    # HttpSink looks "Content-Type" up case-sensitively to tell JSON from protobuf; header names
    # are case-insensitive in HTTP, and the Rust client sends them lower-cased.
    def handle_trace(self, post_data, headers):
        super().handle_trace(post_data, {k.title(): v for k, v in headers.items()})
    def handle_metrics(self, post_data, headers):
        super().handle_metrics(post_data, {k.title(): v for k, v in headers.items()})

Sink(Lines(), logging.getLogger("otelsink"), port=int(sys.argv[1]), daemon=False).start()
"#;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .to_path_buf()
}

/// A free TCP port on 127.0.0.1.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running OTLP sink and what it received so far.
struct Sink {
    _child: tokio::process::Child,
    endpoint: String,
    received: Arc<Mutex<Vec<Value>>>,
}

impl Sink {
    async fn start() -> Sink {
        let python = workspace_root().join("target/test-deps/venv/bin/python");
        let ready = std::process::Command::new(&python)
            .args(["-c", "import oteltest.sink"])
            .status()
            .is_ok_and(|status| status.success());
        assert!(
            ready,
            "{} cannot import oteltest: run scripts/install-test-deps first",
            python.display()
        );
        let port = free_port();
        let mut child = tokio::process::Command::new(python)
            .args(["-c", SINK_DRIVER, &port.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let received = Arc::new(Mutex::new(Vec::new()));
        let sink = received.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                sink.lock()
                    .unwrap()
                    .push(serde_json::from_str(&line).unwrap());
            }
        });
        let address = format!("127.0.0.1:{port}");
        tokio::time::timeout(Duration::from_secs(30), async {
            while tokio::net::TcpStream::connect(&address).await.is_err() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
        .expect("the OTLP sink listens within 30 s");
        Sink {
            _child: child,
            endpoint: format!("http://{address}"),
            received,
        }
    }

    /// Every export of `kind` received so far.
    fn bodies(&self, kind: &str) -> Vec<Value> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .filter(|line| line["kind"] == kind)
            .map(|line| line["body"].clone())
            .collect()
    }

    /// Every span received so far, with its resource's attributes.
    fn spans(&self) -> Vec<Span> {
        let mut spans = Vec::new();
        for body in self.bodies("traces") {
            for resource in body["resourceSpans"].as_array().unwrap() {
                let service = attributes(&resource["resource"]["attributes"]);
                for scope in resource["scopeSpans"].as_array().unwrap() {
                    for span in scope["spans"].as_array().unwrap() {
                        spans.push(Span {
                            name: span["name"].as_str().unwrap().to_string(),
                            trace_id: span["traceId"].as_str().unwrap().to_string(),
                            span_id: span["spanId"].as_str().unwrap().to_string(),
                            parent: span["parentSpanId"].as_str().map(str::to_string),
                            start: span["startTimeUnixNano"].as_str().unwrap().parse().unwrap(),
                            attributes: attributes(&span["attributes"]),
                            resource: service.clone(),
                        });
                    }
                }
            }
        }
        spans.sort_by_key(|span| span.start);
        spans
    }

    /// Waits until `done` holds for the spans received (at most 30 s).
    async fn wait_spans(&self, done: impl Fn(&[Span]) -> bool) -> Vec<Span> {
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let spans = self.spans();
                if done(&spans) {
                    return spans;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
        .await
        .expect("the expected spans arrive within 30 s")
    }

    /// The names of every metric received so far.
    fn metric_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .bodies("metrics")
            .iter()
            .flat_map(|body| {
                body["resourceMetrics"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .flat_map(|resource| {
                resource["scopeMetrics"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .flat_map(|scope| scope["metrics"].as_array().cloned().unwrap_or_default())
            .map(|metric| metric["name"].as_str().unwrap().to_string())
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

/// One received span.
#[derive(Debug, Clone)]
struct Span {
    name: String,
    trace_id: String,
    span_id: String,
    parent: Option<String>,
    start: u128,
    attributes: BTreeMap<String, Value>,
    resource: BTreeMap<String, Value>,
}

impl Span {
    fn attr(&self, key: &str) -> Value {
        self.attributes.get(key).cloned().unwrap_or(Value::Null)
    }

    fn index(&self, end: &str) -> usize {
        match self.attr(&format!("agent_sdk.event_index.{end}")) {
            Value::String(text) => text.parse().unwrap(),
            other => panic!("{} has no event_index.{end}: {other}", self.name),
        }
    }
}

/// OTLP attributes as key → plain JSON value (ints stay the strings OTLP/JSON writes).
fn attributes(list: &Value) -> BTreeMap<String, Value> {
    list.as_array()
        .map(|list| {
            list.iter()
                .map(|kv| {
                    let value = kv["value"]
                        .as_object()
                        .and_then(|value| value.values().next().cloned())
                        .unwrap_or(Value::Null);
                    (kv["key"].as_str().unwrap().to_string(), value)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The span tree as indented lines (from the spans whose parent is not among them): name, and
/// the tool or subagent it is about.
fn tree(spans: &[Span]) -> Vec<String> {
    fn walk(spans: &[Span], span: &Span, depth: usize, out: &mut Vec<String>) {
        let about = match span.name.as_str() {
            "agent_sdk.tool" => format!(" {}", span.attr("gen_ai.tool.name").as_str().unwrap()),
            "agent_sdk.subagent" => {
                format!(" {}", span.attr("agent_sdk.subagent").as_str().unwrap())
            }
            _ => String::new(),
        };
        out.push(format!("{}{}{about}", "  ".repeat(depth), span.name));
        for child in spans
            .iter()
            .filter(|child| child.parent.as_deref() == Some(span.span_id.as_str()))
        {
            walk(spans, child, depth + 1, out);
        }
    }
    let ids: Vec<&str> = spans.iter().map(|span| span.span_id.as_str()).collect();
    let mut out = Vec::new();
    for root in spans.iter().filter(|span| {
        span.parent
            .as_deref()
            .is_none_or(|parent| !ids.contains(&parent))
    }) {
        walk(spans, root, 0, &mut out);
    }
    out
}

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
    let server = workspace_root().join(
        "target/test-deps/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
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

/// `folio run --json` on `dir` with `env`; returns the parsed result.
async fn run(mock: &MockModelServer, dir: &Path, state: &Path, env: &[(&str, &str)]) -> Value {
    let output = tokio::process::Command::new(folio_bin())
        .env_remove("FOLIO_MODEL")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
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
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The session's event log (`traces/<id>.ndjson` under the state root).
fn event_log(state: &Path, session: &str) -> Vec<Value> {
    let text =
        std::fs::read_to_string(state.join("traces").join(format!("{session}.ndjson"))).unwrap();
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
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

/// The span tree of a run, its attributes and event ranges, the model's trace context, metrics.
async fn traced_run_exports_the_turn_tree() {
    let sink = Sink::start().await;
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
        ],
    )
    .await;
    assert_eq!(result["reply"], "Done: the critic says fine.");
    let session = result["sessionId"].as_str().unwrap();
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
    let turn = spans.iter().find(|s| s.name == "agent_sdk.turn").unwrap();
    assert_eq!(turn.resource["service.name"], "telemetry-test");
    assert_eq!(turn.resource["agent_sdk.framework"], "folio");
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

    // Every span's event range leads to the exact events of the session log.
    let log = event_log(state.path(), session);
    let kind = |index: usize| log[index]["type"].as_str().unwrap().to_string();
    assert_eq!(kind(turn.index("first")), "message.received");
    assert_eq!(kind(turn.index("last")), "turn.completed");
    assert_eq!(log[turn.index("first")]["turnId"], turn_id);
    for tool in spans.iter().filter(|s| s.name == "agent_sdk.tool") {
        let result = &log[tool.index("last")];
        assert_eq!(result["type"], "action.result", "{tool:?}");
        assert_eq!(result["data"]["callId"], tool.attr("agent_sdk.call_id"));
        assert_eq!(result["data"]["tool"], tool.attr("gen_ai.tool.name"));
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
    let subagent = spans
        .iter()
        .find(|s| s.name == "agent_sdk.subagent")
        .unwrap();
    assert_eq!(kind(subagent.index("first")), "actions.requested");
    assert_eq!(
        log[subagent.index("first")]["data"]["calls"][0]["subagent"],
        "critic"
    );
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
    // No contents unless opted in.
    assert!(
        spans
            .iter()
            .all(|s| s.attr("gen_ai.tool.call.arguments").is_null())
    );

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
    ] {
        assert!(
            metrics.iter().any(|m| m == name),
            "{name} missing from {metrics:?}"
        );
    }
}

/// `folio serve`: a request's `traceparent` parents the turn it starts.
async fn incoming_traceparent_parents_the_turn() {
    let sink = Sink::start().await;
    let mock = MockModelServer::start().await;
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
    let created: Value = response.json().await.unwrap();
    let session = created["sessionId"].as_str().unwrap();
    let spans = sink
        .wait_spans(|spans| spans.iter().any(|span| span.name == "agent_sdk.turn"))
        .await;
    let turn = spans.iter().find(|s| s.name == "agent_sdk.turn").unwrap();
    assert_eq!(
        (turn.trace_id.as_str(), turn.parent.as_deref()),
        (trace_id, Some(parent))
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
    let sent = mock.requests()[0]
        .header("traceparent")
        .unwrap()
        .to_string();
    assert!(sent.starts_with(&format!("00-{trace_id}-")), "{sent}");

    // A direct tool call opens a synthetic turn span, parented on its request's traceparent.
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
    let spans = sink
        .wait_spans(|spans| spans.iter().any(|span| span.trace_id == direct_trace))
        .await;
    let direct: Vec<Span> = spans
        .into_iter()
        .filter(|span| span.trace_id == direct_trace && span.name != "agent_sdk.http")
        .collect();
    assert_eq!(tree(&direct), ["agent_sdk.turn", "  agent_sdk.tool LS"]);
    let synthetic = &direct[0];
    assert_eq!(
        (
            synthetic.parent.as_deref(),
            synthetic.attr("agent_sdk.synthetic"),
            synthetic.attr("agent_sdk.session_id")
        ),
        (Some(direct_parent), json!(true), json!(session))
    );
}

/// Nothing reaches a collector when export is disabled or unset, and the model sees no trace.
async fn nothing_is_exported_unless_configured() {
    let sink = Sink::start().await;
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("One."));
    mock.push(MockReply::text("Two."));
    let project = agent_project();
    let state = tempfile::tempdir().unwrap();
    let disabled = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", sink.endpoint.as_str()),
        ("OTEL_SDK_DISABLED", "true"),
    ];
    run(&mock, project.path(), state.path(), &disabled).await;
    run(&mock, project.path(), state.path(), &[]).await;
    // Both processes have exited, so anything they exported has arrived.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(sink.received.lock().unwrap().len(), 0);
    let traced: Vec<bool> = mock
        .requests()
        .iter()
        .map(|request| request.header("traceparent").is_some())
        .collect();
    assert_eq!(traced, [false, false]);
}

/// `OTEL_EXPORTER_OTLP_PROTOCOL=http/json` exports the same spans as JSON. (The sink's parser
/// reads OTLP/JSON's hex ids as base64, so only the names are compared.)
async fn http_json_exports_the_spans() {
    let sink = Sink::start().await;
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("Hello."));
    let project = agent_project();
    let state = tempfile::tempdir().unwrap();
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", sink.endpoint.as_str()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
    ];
    run(&mock, project.path(), state.path(), &env).await;
    let spans = sink
        .wait_spans(|spans| spans.iter().any(|span| span.name == "agent_sdk.turn"))
        .await;
    let mut names: Vec<&str> = spans.iter().map(|span| span.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["agent_sdk.turn", "chat gpt-test"]);
    assert!(
        sink.metric_names()
            .iter()
            .any(|m| m == "agent_sdk.turn.count")
    );
}

/// `[telemetry]` in `folio.toml` configures the export when no variable does.
async fn folio_toml_configures_the_export() {
    let sink = Sink::start().await;
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("Hello."));
    let project = agent_project();
    let folio_toml = format!(
        "[telemetry]\nendpoint = \"{}\"\nservice_name = \"from-folio-toml\"\n",
        sink.endpoint
    );
    write_files(project.path(), &[("folio.toml", &folio_toml)]);
    let state = tempfile::tempdir().unwrap();
    run(&mock, project.path(), state.path(), &[]).await;
    let spans = sink
        .wait_spans(|spans| spans.iter().any(|span| span.name == "agent_sdk.turn"))
        .await;
    let turn = spans.iter().find(|s| s.name == "agent_sdk.turn").unwrap();
    assert_eq!(turn.resource["service.name"], "from-folio-toml");
}

/// A collector that is down fails no turn.
async fn a_collector_that_is_down_fails_no_turn() {
    let mock = MockModelServer::start().await;
    script_turn(&mock);
    let project = agent_project();
    let state = tempfile::tempdir().unwrap();
    let down = format!("http://127.0.0.1:{}", free_port());
    let result = run(
        &mock,
        project.path(),
        state.path(),
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &down)],
    )
    .await;
    assert_eq!(result["reply"], "Done: the critic says fine.");
}

#[tokio::test]
async fn otlp_export_end_to_end() {
    traced_run_exports_the_turn_tree().await;
    incoming_traceparent_parents_the_turn().await;
    nothing_is_exported_unless_configured().await;
    folio_toml_configures_the_export().await;
    http_json_exports_the_spans().await;
    a_collector_that_is_down_fails_no_turn().await;
}
