//! Where telemetry goes: the standard `OTEL_*` variables over `[telemetry]` in `folio.toml` (the
//! default destination), and `[[telemetry.destinations]]`, each with the signals it receives.
//! Nothing is exported unless an endpoint is configured, and never under `OTEL_SDK_DISABLED=true`.

use std::collections::BTreeMap;

use crate::TelemetryError;

/// The `[telemetry]` keys of a project's `folio.toml`, as plain values; each is overridden by its
/// `OTEL_*` variable in [`TelemetryConfig::resolve`].
///
/// This crate owns its input type so that it does not depend on `folio-project` (and with it the
/// manifest parser, which every crate using telemetry would otherwise build); `folio-project`
/// does not depend on this crate either. The caller that read the manifest converts its
/// `TelemetrySection` field by field (`folio-cli`'s `telemetry.rs`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TelemetrySettings {
    /// OTLP base endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub endpoint: Option<String>,
    /// `http/protobuf`, `http/json` or `grpc` (`OTEL_EXPORTER_OTLP_PROTOCOL`).
    pub protocol: Option<String>,
    /// Headers sent with every export (`OTEL_EXPORTER_OTLP_HEADERS` adds to and overrides them).
    pub headers: BTreeMap<String, String>,
    /// The service name on every span (`OTEL_SERVICE_NAME`).
    pub service_name: Option<String>,
    /// Record message and tool contents on spans
    /// (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`).
    pub capture_message_content: Option<bool>,
    /// `delta` or `cumulative` metrics (`OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE`).
    pub metrics_temporality: Option<String>,
    /// `link` or `parent`: how an incoming `traceparent` joins a turn (`FOLIO_TRACEPARENT_MODE`).
    pub traceparent: Option<String>,
    /// More destinations (`[[telemetry.destinations]]`), which no variable changes.
    pub destinations: Vec<DestinationSettings>,
}

/// One `[[telemetry.destinations]]` entry: another collector and the signals it receives.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DestinationSettings {
    /// OTLP base endpoint (the signal's path is appended over HTTP; gRPC takes it as written).
    pub endpoint: String,
    /// `http/protobuf` (default), `http/json` or `grpc`.
    pub protocol: Option<String>,
    /// Headers sent with every export to it.
    pub headers: BTreeMap<String, String>,
    /// `traces`, `metrics` and/or `logs` (default: all three).
    pub signals: Option<Vec<String>>,
}

/// The OTLP wire format (`OTEL_EXPORTER_OTLP_PROTOCOL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// `http/protobuf` (the default).
    #[default]
    HttpProtobuf,
    /// `http/json`.
    HttpJson,
    /// `grpc` (OTLP over gRPC; collectors listen on port 4317).
    Grpc,
}

impl Protocol {
    /// Parses a protocol name as the OpenTelemetry specification spells it; `key` names where
    /// it was written (a variable or a `folio.toml` key), for the error.
    pub fn parse(key: &str, name: &str) -> Result<Protocol, TelemetryError> {
        match name.trim() {
            "http/protobuf" => Ok(Protocol::HttpProtobuf),
            "http/json" => Ok(Protocol::HttpJson),
            "grpc" => Ok(Protocol::Grpc),
            other => Err(TelemetryError::Config(format!(
                "{key}: unknown OTLP protocol \"{other}\"; use \"http/protobuf\", \"http/json\" or \"grpc\""
            ))),
        }
    }

    /// Where `signal` is sent for the base endpoint `base`: over HTTP with the signal's path
    /// appended (`/v1/traces`), as the specification builds it; over gRPC as written.
    fn endpoint(self, base: &str, signal: Signal) -> String {
        match self {
            Protocol::Grpc => base.to_string(),
            Protocol::HttpProtobuf | Protocol::HttpJson => {
                format!("{}{}", base.trim_end_matches('/'), signal.path())
            }
        }
    }
}

/// One kind of telemetry a destination receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Signal {
    /// Spans (`traces`).
    Traces,
    /// Metrics (`metrics`).
    Metrics,
    /// Log records: the server's log lines and every session event (`logs`).
    Logs,
}

impl Signal {
    /// Every signal, in the order exports are set up.
    pub const ALL: [Signal; 3] = [Signal::Traces, Signal::Metrics, Signal::Logs];

    /// The signal's name as `signals` lists it.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Traces => "traces",
            Signal::Metrics => "metrics",
            Signal::Logs => "logs",
        }
    }

    /// Parses a signal name; `key` names where it was written, for the error.
    fn parse(key: &str, name: &str) -> Result<Signal, TelemetryError> {
        Signal::ALL
            .into_iter()
            .find(|signal| signal.name() == name.trim())
            .ok_or_else(|| {
                TelemetryError::Config(format!(
                    "{key}: unknown signal \"{name}\"; use \"traces\", \"metrics\" or \"logs\""
                ))
            })
    }

    /// The path OTLP/HTTP receives the signal on.
    fn path(self) -> &'static str {
        match self {
            Signal::Traces => "/v1/traces",
            Signal::Metrics => "/v1/metrics",
            Signal::Logs => "/v1/logs",
        }
    }

    /// The signal's own variable `OTEL_EXPORTER_OTLP_{SIGNAL}_{setting}`.
    fn variable(self, setting: &str) -> String {
        format!(
            "OTEL_EXPORTER_OTLP_{}_{setting}",
            self.name().to_ascii_uppercase()
        )
    }
}

/// How metrics are aggregated between exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Temporality {
    /// Each export carries what happened since the previous one (the default).
    #[default]
    Delta,
    /// Each export carries the totals since start.
    Cumulative,
}

/// How a turn started by a request with a W3C `traceparent` is joined to the caller's trace.
///
/// A turn is the unit a user reads a trace by: with `Link` (the default, as the seed does) every
/// turn is the root of a trace of its own, and its root span carries a span link to the caller's
/// span, so a caller that sends one `traceparent` for a whole conversation does not pile every
/// turn into one ever-growing trace, and sampling decides per turn. `Parent` makes the turn a
/// child of the caller's span instead, in the caller's trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TraceparentMode {
    /// The turn starts its own trace and links the caller's span (`link`).
    #[default]
    Link,
    /// The turn is a child of the caller's span (`parent`).
    Parent,
}

impl TraceparentMode {
    /// Parses `link` or `parent`; `key` names where it was written, for the error.
    fn parse(key: &str, value: &str) -> Result<TraceparentMode, TelemetryError> {
        match value.trim() {
            "link" => Ok(TraceparentMode::Link),
            "parent" => Ok(TraceparentMode::Parent),
            other => Err(TelemetryError::Config(format!(
                "{key}: unknown traceparent mode \"{other}\"; use \"link\" (the default) or \"parent\""
            ))),
        }
    }
}

/// One signal's export to one collector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignalExport {
    /// What is exported.
    pub signal: Signal,
    /// Where (full URL; for gRPC the collector's address).
    pub endpoint: String,
    /// The wire format.
    pub protocol: Protocol,
    /// Headers sent with every export.
    pub headers: BTreeMap<String, String>,
}

/// The resolved export: every signal's destinations and what they share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportConfig {
    /// Each signal export, the default destination's first, then `[[telemetry.destinations]]`'s.
    pub exports: Vec<SignalExport>,
    /// The `service.name` resource attribute.
    pub service_name: String,
    /// Extra resource attributes (`OTEL_RESOURCE_ATTRIBUTES`).
    pub resource_attributes: BTreeMap<String, String>,
    /// Metric aggregation between exports.
    pub temporality: Temporality,
    /// Spans waiting for export (per destination) before new ones are dropped and counted
    /// (`OTEL_BSP_MAX_QUEUE_SIZE`).
    pub queue_size: usize,
}

impl ExportConfig {
    /// The exports of `signal`.
    pub(crate) fn of(&self, signal: Signal) -> impl Iterator<Item = &SignalExport> {
        self.exports
            .iter()
            .filter(move |export| export.signal == signal)
    }
}

/// Spans waiting for export before new ones are dropped, unless `OTEL_BSP_MAX_QUEUE_SIZE` says.
const QUEUE_SPANS: usize = 4096;

/// The variable that overrides `[telemetry] traceparent`.
const TRACEPARENT_VAR: &str = "FOLIO_TRACEPARENT_MODE";

/// Telemetry as configured: what is exported (if anything), whether contents are captured, and
/// how an incoming `traceparent` joins a turn.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TelemetryConfig {
    /// The export destinations; `None` exports nothing.
    pub export: Option<ExportConfig>,
    /// Message contents are recorded on spans (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`).
    pub capture_content: bool,
    /// Link (default) or parent a turn on its request's `traceparent`.
    pub traceparent: TraceparentMode,
}

/// A boolean variable as the OpenTelemetry specification reads it (`true`, any case).
fn is_true(value: &str) -> bool {
    value.trim().eq_ignore_ascii_case("true")
}

/// `k1=v1,k2=v2` (values percent-decoded), as in `OTEL_EXPORTER_OTLP_HEADERS`.
fn key_values(var: &str, value: &str) -> Result<BTreeMap<String, String>, TelemetryError> {
    value
        .split(',')
        .filter(|pair| !pair.trim().is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => {
                Ok((key.trim().to_string(), percent_decode(value.trim())))
            }
            _ => Err(TelemetryError::Config(format!(
                "{var}: \"{pair}\" is not key=value; write a comma-separated list like k1=v1,k2=v2"
            ))),
        })
        .collect()
}

/// Decodes `%XX` escapes; anything malformed is kept as written.
fn percent_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The value of variable `name` (through `var`), else the file's value at `key`, with the name
/// of where it came from.
fn chosen(
    var: &dyn Fn(&str) -> Option<String>,
    name: &str,
    key: &str,
    file: Option<&String>,
) -> Option<(String, String)> {
    match var(name) {
        Some(value) => Some((name.to_string(), value)),
        None => file.map(|value| (key.to_string(), value.clone())),
    }
}

/// The default destination's exports: `[telemetry]`'s endpoint, protocol and headers under the
/// standard variables (each signal's own `OTEL_EXPORTER_OTLP_{SIGNAL}_*` first); none without
/// an endpoint.
fn default_exports(
    var: &dyn Fn(&str) -> Option<String>,
    settings: &TelemetrySettings,
) -> Result<Vec<SignalExport>, TelemetryError> {
    let base = var("OTEL_EXPORTER_OTLP_ENDPOINT").or_else(|| settings.endpoint.clone());
    let written: Vec<(Signal, String)> = Signal::ALL
        .into_iter()
        .filter_map(|signal| Some((signal, var(&signal.variable("ENDPOINT"))?)))
        .collect();
    if base.is_none() && written.is_empty() {
        return Ok(Vec::new());
    }
    let logs = match var("OTEL_LOGS_EXPORTER") {
        None => true,
        Some(value) => match value.trim() {
            "otlp" => true,
            "none" => false,
            other => {
                return Err(TelemetryError::Config(format!(
                    "OTEL_LOGS_EXPORTER=\"{other}\" is not supported; use \"otlp\" (the default) or \"none\""
                )));
            }
        },
    };
    let protocol = match chosen(
        var,
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "telemetry.protocol",
        settings.protocol.as_ref(),
    ) {
        Some((key, name)) => Protocol::parse(&key, &name)?,
        None => Protocol::default(),
    };
    let mut headers = settings.headers.clone();
    if let Some(value) = var("OTEL_EXPORTER_OTLP_HEADERS") {
        headers.extend(key_values("OTEL_EXPORTER_OTLP_HEADERS", &value)?);
    }
    let mut exports = Vec::new();
    for signal in Signal::ALL {
        if signal == Signal::Logs && !logs {
            continue;
        }
        let protocol_var = signal.variable("PROTOCOL");
        let protocol = match var(&protocol_var) {
            Some(name) => Protocol::parse(&protocol_var, &name)?,
            None => protocol,
        };
        let own = written.iter().find(|(written, _)| *written == signal);
        let endpoint = match (own, &base, written.first()) {
            (Some((_, endpoint)), _, _) => endpoint.clone(),
            (None, Some(base), _) => protocol.endpoint(base, signal),
            // One signal's endpoint alone: the others go to the same collector.
            (None, None, Some((other, endpoint))) => endpoint.replace(other.path(), signal.path()),
            (None, None, None) => continue,
        };
        let mut headers = headers.clone();
        let headers_var = signal.variable("HEADERS");
        if let Some(value) = var(&headers_var) {
            headers.extend(key_values(&headers_var, &value)?);
        }
        exports.push(SignalExport {
            signal,
            endpoint,
            protocol,
            headers,
        });
    }
    Ok(exports)
}

impl DestinationSettings {
    /// The exports of `[[telemetry.destinations]]` entry `index` (counted from 0), checked.
    fn exports(&self, index: usize) -> Result<Vec<SignalExport>, TelemetryError> {
        let key = |field: &str| format!("telemetry.destinations[{index}].{field}");
        let endpoint = self.endpoint.trim();
        if endpoint.is_empty() {
            return Err(TelemetryError::Config(format!(
                "{} is empty; write the collector's base URL, e.g. \"http://127.0.0.1:4318\"",
                key("endpoint")
            )));
        }
        let protocol = match &self.protocol {
            Some(name) => Protocol::parse(&key("protocol"), name)?,
            None => Protocol::default(),
        };
        let signals = match &self.signals {
            None => Signal::ALL.to_vec(),
            Some(names) if names.is_empty() => {
                return Err(TelemetryError::Config(format!(
                    "{} is empty; list one or more of \"traces\", \"metrics\" and \"logs\", or leave it out for all three",
                    key("signals")
                )));
            }
            Some(names) => names
                .iter()
                .map(|name| Signal::parse(&key("signals"), name))
                .collect::<Result<_, _>>()?,
        };
        Ok(Signal::ALL
            .into_iter()
            .filter(|signal| signals.contains(signal))
            .map(|signal| SignalExport {
                signal,
                endpoint: protocol.endpoint(endpoint, signal),
                protocol,
                headers: self.headers.clone(),
            })
            .collect())
    }
}

impl TelemetryConfig {
    /// Resolves the configuration from variables (`env` looks one up) over `settings`;
    /// `default_service` names the service when neither sets it.
    pub fn resolve(
        env: impl Fn(&str) -> Option<String>,
        settings: &TelemetrySettings,
        default_service: &str,
    ) -> Result<TelemetryConfig, TelemetryError> {
        let var = |name: &str| env(name).filter(|value| !value.trim().is_empty());
        let capture_content = match var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT") {
            Some(value) => is_true(&value),
            None => settings.capture_message_content.unwrap_or(false),
        };
        let traceparent = match chosen(
            &var,
            TRACEPARENT_VAR,
            "telemetry.traceparent",
            settings.traceparent.as_ref(),
        ) {
            Some((key, value)) => TraceparentMode::parse(&key, &value)?,
            None => TraceparentMode::default(),
        };
        let nothing = TelemetryConfig {
            export: None,
            capture_content,
            traceparent,
        };
        if var("OTEL_SDK_DISABLED").is_some_and(|value| is_true(&value)) {
            return Ok(nothing);
        }
        let mut exports = default_exports(&var, settings)?;
        for (index, destination) in settings.destinations.iter().enumerate() {
            exports.extend(destination.exports(index)?);
        }
        if exports.is_empty() {
            return Ok(nothing);
        }
        let resource_attributes = match var("OTEL_RESOURCE_ATTRIBUTES") {
            Some(value) => key_values("OTEL_RESOURCE_ATTRIBUTES", &value)?,
            None => BTreeMap::new(),
        };
        let service_name = var("OTEL_SERVICE_NAME")
            .or_else(|| settings.service_name.clone())
            .or_else(|| resource_attributes.get("service.name").cloned())
            .unwrap_or_else(|| default_service.to_string());
        let temporality = match var("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE")
            .or_else(|| settings.metrics_temporality.clone())
        {
            None => Temporality::Delta,
            Some(name) if name.trim().eq_ignore_ascii_case("delta") => Temporality::Delta,
            Some(name) if name.trim().eq_ignore_ascii_case("cumulative") => Temporality::Cumulative,
            Some(other) => {
                return Err(TelemetryError::Config(format!(
                    "unknown metrics temporality \"{other}\"; use \"delta\" or \"cumulative\""
                )));
            }
        };
        let queue_size = match var("OTEL_BSP_MAX_QUEUE_SIZE") {
            None => QUEUE_SPANS,
            Some(value) => value
                .trim()
                .parse()
                .ok()
                .filter(|size| *size > 0)
                .ok_or_else(|| {
                    TelemetryError::Config(format!(
                        "OTEL_BSP_MAX_QUEUE_SIZE={value:?} is not a positive number of spans"
                    ))
                })?,
        };
        Ok(TelemetryConfig {
            export: Some(ExportConfig {
                exports,
                service_name,
                resource_attributes,
                temporality,
                queue_size,
            }),
            capture_content,
            traceparent,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn resolve(
        vars: &[(&str, &str)],
        settings: &TelemetrySettings,
    ) -> Result<TelemetryConfig, TelemetryError> {
        let vars: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        TelemetryConfig::resolve(|name| vars.get(name).cloned(), settings, "support")
    }

    fn export(
        signal: Signal,
        endpoint: &str,
        protocol: Protocol,
        headers: &[(&str, &str)],
    ) -> SignalExport {
        SignalExport {
            signal,
            endpoint: endpoint.to_string(),
            protocol,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    /// The exports `vars` and `settings` resolve to.
    fn exports(vars: &[(&str, &str)], settings: &TelemetrySettings) -> Vec<SignalExport> {
        resolve(vars, settings).unwrap().export.unwrap().exports
    }

    #[test]
    fn nothing_is_exported_when_unset_or_disabled() {
        let none = TelemetryConfig::default();
        assert_eq!(resolve(&[], &TelemetrySettings::default()).unwrap(), none);
        let disabled = resolve(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
                ("OTEL_SDK_DISABLED", "TRUE"),
            ],
            &TelemetrySettings {
                destinations: vec![DestinationSettings {
                    endpoint: "http://other:4318".into(),
                    ..DestinationSettings::default()
                }],
                ..TelemetrySettings::default()
            },
        );
        assert_eq!(disabled.unwrap(), none);
    }

    #[test]
    fn variables_override_the_file() {
        let settings = TelemetrySettings {
            endpoint: Some("http://collector:4318/".into()),
            protocol: Some("http/json".into()),
            headers: BTreeMap::from([("x-team".into(), "a".into())]),
            service_name: Some("from-file".into()),
            capture_message_content: Some(true),
            metrics_temporality: None,
            traceparent: Some("link".into()),
            destinations: Vec::new(),
        };
        let config = resolve(
            &[
                (
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                    "http://traces:4318/custom",
                ),
                ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=s%20ecret, x-team=b"),
                ("OTEL_EXPORTER_OTLP_LOGS_HEADERS", "x-logs=1"),
                ("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "http/protobuf"),
                ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod"),
                (
                    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
                    "false",
                ),
                (
                    "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE",
                    "Cumulative",
                ),
                ("FOLIO_TRACEPARENT_MODE", "parent"),
            ],
            &settings,
        )
        .unwrap();
        let headers = [("api-key", "s ecret"), ("x-team", "b")];
        assert_eq!(
            config,
            TelemetryConfig {
                export: Some(ExportConfig {
                    exports: vec![
                        export(
                            Signal::Traces,
                            "http://traces:4318/custom",
                            Protocol::HttpJson,
                            &headers
                        ),
                        export(
                            Signal::Metrics,
                            "http://collector:4318/v1/metrics",
                            Protocol::HttpJson,
                            &headers
                        ),
                        export(
                            Signal::Logs,
                            "http://collector:4318/v1/logs",
                            Protocol::HttpProtobuf,
                            &[("api-key", "s ecret"), ("x-logs", "1"), ("x-team", "b")]
                        ),
                    ],
                    service_name: "from-file".into(),
                    resource_attributes: BTreeMap::from([(
                        "deployment.environment".into(),
                        "prod".into()
                    )]),
                    temporality: Temporality::Cumulative,
                    queue_size: 4096,
                }),
                capture_content: false,
                traceparent: TraceparentMode::Parent,
            }
        );
    }

    #[test]
    fn grpc_takes_the_endpoint_as_written() {
        let exports = exports(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ],
            &TelemetrySettings::default(),
        );
        assert_eq!(
            exports,
            Signal::ALL.map(|signal| export(signal, "http://127.0.0.1:4317", Protocol::Grpc, &[]))
        );
    }

    /// One signal's endpoint alone sends the others to the same collector; `OTEL_LOGS_EXPORTER`
    /// turns the logs off.
    #[test]
    fn one_endpoint_serves_every_signal_unless_logs_are_off() {
        let signals = |vars: &[(&str, &str)]| {
            exports(vars, &TelemetrySettings::default())
                .into_iter()
                .map(|export| (export.signal.name(), export.endpoint))
                .collect::<Vec<_>>()
        };
        let logs = ("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "http://c:4318/v1/logs");
        assert_eq!(
            signals(&[logs]),
            [
                ("traces", "http://c:4318/v1/traces".to_string()),
                ("metrics", "http://c:4318/v1/metrics".to_string()),
                ("logs", "http://c:4318/v1/logs".to_string()),
            ]
        );
        assert_eq!(
            signals(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_LOGS_EXPORTER", "none")
            ]),
            [
                ("traces", "http://c:4318/v1/traces".to_string()),
                ("metrics", "http://c:4318/v1/metrics".to_string()),
            ]
        );
    }

    /// Each destination gets its own exports of the signals it lists, after the default one's;
    /// the variables leave them alone.
    #[test]
    fn destinations_receive_their_signals() {
        let settings = TelemetrySettings {
            destinations: vec![
                DestinationSettings {
                    endpoint: "http://traces-only:4318/".into(),
                    protocol: None,
                    headers: BTreeMap::from([("x-key".into(), "1".into())]),
                    signals: Some(vec!["traces".into(), "traces".into()]),
                },
                DestinationSettings {
                    endpoint: "http://grpc:4317".into(),
                    protocol: Some("grpc".into()),
                    headers: BTreeMap::new(),
                    signals: Some(vec!["logs".into(), "metrics".into()]),
                },
            ],
            ..TelemetrySettings::default()
        };
        let config = resolve(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://default:4318"),
                ("OTEL_EXPORTER_OTLP_HEADERS", "x-default=1"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
                ("OTEL_LOGS_EXPORTER", "none"),
            ],
            &settings,
        )
        .unwrap();
        let default = [("x-default", "1")];
        assert_eq!(
            config.export.unwrap().exports,
            [
                export(
                    Signal::Traces,
                    "http://default:4318/v1/traces",
                    Protocol::HttpJson,
                    &default
                ),
                export(
                    Signal::Metrics,
                    "http://default:4318/v1/metrics",
                    Protocol::HttpJson,
                    &default
                ),
                export(
                    Signal::Traces,
                    "http://traces-only:4318/v1/traces",
                    Protocol::HttpProtobuf,
                    &[("x-key", "1")]
                ),
                export(Signal::Metrics, "http://grpc:4317", Protocol::Grpc, &[]),
                export(Signal::Logs, "http://grpc:4317", Protocol::Grpc, &[]),
            ]
        );
        // Destinations alone export too.
        let alone = resolve(&[], &settings).unwrap().export.unwrap();
        assert_eq!(alone.exports.len(), 3);
    }

    #[test]
    fn bad_values_say_what_to_write() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
        let err = |vars: &[(&str, &str)], settings: &TelemetrySettings| {
            resolve(vars, settings).unwrap_err().to_string()
        };
        let none = TelemetrySettings::default();
        assert_eq!(
            err(
                &[endpoint, ("OTEL_EXPORTER_OTLP_PROTOCOL", "thrift")],
                &none
            ),
            "telemetry configuration: OTEL_EXPORTER_OTLP_PROTOCOL: unknown OTLP protocol \"thrift\"; use \"http/protobuf\", \"http/json\" or \"grpc\""
        );
        assert_eq!(
            err(&[endpoint, ("OTEL_BSP_MAX_QUEUE_SIZE", "0")], &none),
            "telemetry configuration: OTEL_BSP_MAX_QUEUE_SIZE=\"0\" is not a positive number of spans"
        );
        assert_eq!(
            err(
                &[endpoint, ("OTEL_EXPORTER_OTLP_HEADERS", "novalue")],
                &none
            ),
            "telemetry configuration: OTEL_EXPORTER_OTLP_HEADERS: \"novalue\" is not key=value; write a comma-separated list like k1=v1,k2=v2"
        );
        assert_eq!(
            err(&[endpoint, ("OTEL_LOGS_EXPORTER", "console")], &none),
            "telemetry configuration: OTEL_LOGS_EXPORTER=\"console\" is not supported; use \"otlp\" (the default) or \"none\""
        );
        let file = |traceparent: &str| TelemetrySettings {
            traceparent: Some(traceparent.into()),
            ..TelemetrySettings::default()
        };
        assert_eq!(
            err(&[], &file("child")),
            "telemetry configuration: telemetry.traceparent: unknown traceparent mode \"child\"; use \"link\" (the default) or \"parent\""
        );
        let destination = |destination: DestinationSettings| TelemetrySettings {
            destinations: vec![
                DestinationSettings {
                    endpoint: "http://fine:4318".into(),
                    ..DestinationSettings::default()
                },
                destination,
            ],
            ..TelemetrySettings::default()
        };
        let fine = || DestinationSettings {
            endpoint: "http://c:4318".into(),
            ..DestinationSettings::default()
        };
        assert_eq!(
            err(
                &[],
                &destination(DestinationSettings {
                    endpoint: " ".into(),
                    ..fine()
                })
            ),
            "telemetry configuration: telemetry.destinations[1].endpoint is empty; write the collector's base URL, e.g. \"http://127.0.0.1:4318\""
        );
        assert_eq!(
            err(
                &[],
                &destination(DestinationSettings {
                    protocol: Some("udp".into()),
                    ..fine()
                })
            ),
            "telemetry configuration: telemetry.destinations[1].protocol: unknown OTLP protocol \"udp\"; use \"http/protobuf\", \"http/json\" or \"grpc\""
        );
        assert_eq!(
            err(
                &[],
                &destination(DestinationSettings {
                    signals: Some(vec!["traces".into(), "profiles".into()]),
                    ..fine()
                })
            ),
            "telemetry configuration: telemetry.destinations[1].signals: unknown signal \"profiles\"; use \"traces\", \"metrics\" or \"logs\""
        );
        assert_eq!(
            err(
                &[],
                &destination(DestinationSettings {
                    signals: Some(Vec::new()),
                    ..fine()
                })
            ),
            "telemetry configuration: telemetry.destinations[1].signals is empty; list one or more of \"traces\", \"metrics\" and \"logs\", or leave it out for all three"
        );
    }
}
