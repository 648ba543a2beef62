//! An OTLP receiver nobody here wrote, for telemetry tests: the `HttpSink` and `GrpcSink` of
//! PyPI's `oteltest` (what its `otelsink` command runs; installed by `scripts/install-test-deps`
//! into `target/test-deps/venv`), which parse each OTLP request (HTTP protobuf or JSON, or gRPC)
//! with the official protobuf types. [`Sink::start`] runs one on a free port through a small
//! driver that prints what it received, with the request's headers, as JSON lines; [`Sink`]
//! reads them back as spans, metrics, log records and headers.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::python;

/// Starts oteltest's `HttpSink` (argv[2] `http`) or `GrpcSink` (`grpc`) on the port in argv[1]
/// and prints every export it parses as a JSON line (`{"kind": "traces"|"metrics"|"logs",
/// "headers": {…}, "body": …}`, header names lower-cased, ids as hex).
const SINK_DRIVER: &str = r#"
import base64, json, logging, sys
from google.protobuf.json_format import MessageToDict
from oteltest.sink import GrpcSink, HttpSink
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
    def emit(self, kind, request, headers):
        headers = {str(k).lower(): str(v) for k, v in headers.items()}
        body = hexids(MessageToDict(request))
        print(json.dumps({"kind": kind, "headers": headers, "body": body}), flush=True)
    def handle_logs(self, request, headers):
        self.emit("logs", request, headers)
    def handle_metrics(self, request, headers):
        self.emit("metrics", request, headers)
    def handle_trace(self, request, headers):
        self.emit("traces", request, headers)

class Sink(HttpSink):
    # HttpSink looks "Content-Type" up case-sensitively to tell JSON from protobuf; header names
    # are case-insensitive in HTTP, and the Rust client sends them lower-cased.
    def handle_trace(self, post_data, headers):
        super().handle_trace(post_data, {k.title(): v for k, v in headers.items()})
    def handle_metrics(self, post_data, headers):
        super().handle_metrics(post_data, {k.title(): v for k, v in headers.items()})
    def handle_logs(self, post_data, headers):
        super().handle_logs(post_data, {k.title(): v for k, v in headers.items()})

port, transport = int(sys.argv[1]), sys.argv[2]
if transport == "grpc":
    sink = GrpcSink(Lines(), logging.getLogger("otelsink"), port=port)
    sink.start()
    sink.wait_for_termination()
else:
    Sink(Lines(), logging.getLogger("otelsink"), port=port, daemon=False).start()
"#;

/// How the sink receives OTLP.
#[derive(Debug, Clone, Copy)]
pub enum Transport {
    /// OTLP/HTTP (protobuf or JSON), as on a collector's port 4318.
    Http,
    /// OTLP/gRPC, as on a collector's port 4317.
    Grpc,
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running OTLP sink and what it received so far.
pub struct Sink {
    _child: tokio::process::Child,
    /// The sink's base URL, `http://127.0.0.1:PORT` (an `OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub endpoint: String,
    received: Arc<Mutex<Vec<Value>>>,
}

impl Sink {
    /// Starts a sink receiving over `transport` on a free port; returns once it listens.
    ///
    /// # Panics
    /// When the venv has no `oteltest` (run `scripts/install-test-deps`) or the sink does not
    /// listen within 30 s.
    pub async fn start(transport: Transport) -> Sink {
        let python = python();
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
        let transport = match transport {
            Transport::Http => "http",
            Transport::Grpc => "grpc",
        };
        let mut child = tokio::process::Command::new(python)
            .args(["-c", SINK_DRIVER, &port.to_string(), transport])
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

    /// How many exports of any kind were received so far.
    pub fn exports(&self) -> usize {
        self.received.lock().unwrap().len()
    }

    /// Every export of `kind` received so far.
    pub fn bodies(&self, kind: &str) -> Vec<Value> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .filter(|line| line["kind"] == kind)
            .map(|line| line["body"].clone())
            .collect()
    }

    /// Every span received so far, with its resource's attributes.
    pub fn spans(&self) -> Vec<Span> {
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
                            links: span["links"]
                                .as_array()
                                .into_iter()
                                .flatten()
                                .map(|link| {
                                    (
                                        link["traceId"].as_str().unwrap().to_string(),
                                        link["spanId"].as_str().unwrap().to_string(),
                                    )
                                })
                                .collect(),
                            start: span["startTimeUnixNano"].as_str().unwrap().parse().unwrap(),
                            attributes: attributes(&span["attributes"]),
                            kinds: kinds(&span["attributes"]),
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
    pub async fn wait_spans(&self, done: impl Fn(&[Span]) -> bool) -> Vec<Span> {
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

    /// Every log record received so far, in arrival order.
    pub fn logs(&self) -> Vec<Log> {
        let mut logs = Vec::new();
        for body in self.bodies("logs") {
            for resource in body["resourceLogs"].as_array().unwrap() {
                let service = attributes(&resource["resource"]["attributes"]);
                for scope in resource["scopeLogs"].as_array().unwrap() {
                    for record in scope["logRecords"].as_array().into_iter().flatten() {
                        // OTLP/JSON leaves an all-zero id out; protobuf sends it empty.
                        let id = |key: &str| {
                            record[key]
                                .as_str()
                                .filter(|id| !id.is_empty())
                                .map(str::to_string)
                        };
                        logs.push(Log {
                            severity: record["severityText"].as_str().map(str::to_string),
                            body: record["body"]
                                .as_object()
                                .and_then(|value| value.values().next().cloned())
                                .unwrap_or(Value::Null),
                            trace_id: id("traceId"),
                            span_id: id("spanId"),
                            scope: scope["scope"]["name"].as_str().map(str::to_string),
                            attributes: attributes(&record["attributes"]),
                            kinds: kinds(&record["attributes"]),
                            resource: service.clone(),
                        });
                    }
                }
            }
        }
        logs
    }

    /// Waits until `done` holds for the log records received (at most 30 s).
    pub async fn wait_logs(&self, done: impl Fn(&[Log]) -> bool) -> Vec<Log> {
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let logs = self.logs();
                if done(&logs) {
                    return logs;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
        .await
        .unwrap_or_else(|_| {
            panic!(
                "the expected log records within 30 s; got {:#?}",
                self.logs()
            )
        })
    }

    /// The names of every metric received so far.
    pub fn metric_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .all_metrics()
            .iter()
            .map(|metric| metric["name"].as_str().unwrap().to_string())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// The headers of every export of `kind` received so far.
    pub fn headers(&self, kind: &str) -> Vec<BTreeMap<String, String>> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .filter(|line| line["kind"] == kind)
            .map(|line| serde_json::from_value(line["headers"].clone()).unwrap())
            .collect()
    }

    /// Every metric named `name` received so far (the OTLP `Metric` as JSON).
    pub fn metrics(&self, name: &str) -> Vec<Value> {
        self.all_metrics()
            .into_iter()
            .filter(|metric| metric["name"] == name)
            .collect()
    }

    /// Every metric received so far (the OTLP `Metric`s as JSON), in arrival order.
    fn all_metrics(&self) -> Vec<Value> {
        self.bodies("metrics")
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
            .collect()
    }

    /// Every data point of the metric `name` received so far: its attributes, and its value
    /// (a sum's value, or a histogram's count).
    pub fn points(&self, name: &str) -> Vec<(BTreeMap<String, Value>, i64)> {
        self.metrics(name)
            .iter()
            .flat_map(|metric| {
                ["sum", "histogram"]
                    .iter()
                    .filter_map(|kind| metric[kind]["dataPoints"].as_array())
                    .flatten()
                    .cloned()
                    .collect::<Vec<_>>()
            })
            .map(|point| {
                let value = ["asInt", "count"]
                    .iter()
                    .find_map(|key| point[key].as_str())
                    .map_or(0, |text| text.parse().unwrap());
                (attributes(&point["attributes"]), value)
            })
            .collect()
    }

    /// The value of the up-down counter `name` in the last export that carried it (summed over
    /// its attribute sets).
    pub fn latest(&self, name: &str) -> Option<i64> {
        self.bodies("metrics")
            .iter()
            .filter_map(|body| {
                let points: Vec<i64> = body["resourceMetrics"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .flat_map(|resource| resource["scopeMetrics"].as_array().into_iter().flatten())
                    .flat_map(|scope| scope["metrics"].as_array().into_iter().flatten())
                    .filter(|metric| metric["name"] == name)
                    .flat_map(|metric| metric["sum"]["dataPoints"].as_array().into_iter().flatten())
                    .map(|point| {
                        point["asInt"]
                            .as_str()
                            .map_or(0, |text| text.parse().unwrap())
                    })
                    .collect();
                (!points.is_empty()).then(|| points.iter().sum())
            })
            .next_back()
    }

    /// Waits until `done` holds for the metrics received (at most 30 s).
    pub async fn wait_metrics(&self, what: &str, done: impl Fn(&Sink) -> bool) {
        tokio::time::timeout(Duration::from_secs(30), async {
            while !done(self) {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{what} within 30 s; got {:?}", self.metric_names()));
    }
}

/// One received span.
#[derive(Debug, Clone)]
pub struct Span {
    /// The span's name.
    pub name: String,
    /// Its trace id (hex).
    pub trace_id: String,
    /// Its span id (hex).
    pub span_id: String,
    /// Its parent's span id (hex), if any.
    pub parent: Option<String>,
    /// Its links: each linked span's trace id and span id (hex).
    pub links: Vec<(String, String)>,
    /// When it started (Unix nanoseconds).
    pub start: u128,
    /// Its attributes ([`attributes`] form).
    pub attributes: BTreeMap<String, Value>,
    /// Its resource's attributes.
    pub resource: BTreeMap<String, Value>,
    /// The OTLP type of each attribute's value (`stringValue`, `intValue`, `doubleValue`, …).
    pub kinds: BTreeMap<String, String>,
}

impl Span {
    /// An attribute's value (`null` when absent).
    pub fn attr(&self, key: &str) -> Value {
        self.attributes.get(key).cloned().unwrap_or(Value::Null)
    }

    /// The `agent_sdk.event_index.{end}` attribute (`start` or `end`) as a number.
    ///
    /// # Panics
    /// When the span has no such attribute.
    pub fn index(&self, end: &str) -> usize {
        match self.attr(&format!("agent_sdk.event_index.{end}")) {
            Value::String(text) => text.parse().unwrap(),
            other => panic!("{} has no event_index.{end}: {other}", self.name),
        }
    }
}

/// One received log record.
#[derive(Debug, Clone)]
pub struct Log {
    /// Its severity text (`INFO`, `WARN`, …).
    pub severity: Option<String>,
    /// Its body (a string body as a JSON string).
    pub body: Value,
    /// The trace id of the span it was emitted in (hex), if any.
    pub trace_id: Option<String>,
    /// The span id of the span it was emitted in (hex), if any.
    pub span_id: Option<String>,
    /// Its instrumentation scope's name.
    pub scope: Option<String>,
    /// Its attributes ([`attributes`] form).
    pub attributes: BTreeMap<String, Value>,
    /// The OTLP type of each attribute's value (`stringValue`, `intValue`, …).
    pub kinds: BTreeMap<String, String>,
    /// Its resource's attributes.
    pub resource: BTreeMap<String, Value>,
}

impl Log {
    /// An attribute's value (`null` when absent).
    pub fn attr(&self, key: &str) -> Value {
        self.attributes.get(key).cloned().unwrap_or(Value::Null)
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

/// OTLP attributes as key → the type of its value (`intValue`, `stringValue`, …).
fn kinds(list: &Value) -> BTreeMap<String, String> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|kv| {
            let kind = kv["value"].as_object()?.keys().next()?.clone();
            Some((kv["key"].as_str()?.to_string(), kind))
        })
        .collect()
}

/// The span tree as indented lines (from the spans whose parent is not among them): name, and
/// the tool or subagent it is about.
pub fn tree(spans: &[Span]) -> Vec<String> {
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
