//! Where telemetry goes: the standard `OTEL_*` variables over `[telemetry]` in `folio.toml`.
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
    /// Parses a protocol name as the OpenTelemetry specification spells it.
    pub fn parse(name: &str) -> Result<Protocol, TelemetryError> {
        match name.trim() {
            "http/protobuf" => Ok(Protocol::HttpProtobuf),
            "http/json" => Ok(Protocol::HttpJson),
            "grpc" => Ok(Protocol::Grpc),
            other => Err(TelemetryError::Config(format!(
                "unknown OTLP protocol \"{other}\"; use \"http/protobuf\", \"http/json\" or \"grpc\""
            ))),
        }
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

/// A resolved export destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportConfig {
    /// Where spans are sent (full URL; for gRPC the collector's address).
    pub traces_endpoint: String,
    /// Where metrics are sent (full URL; for gRPC the collector's address).
    pub metrics_endpoint: String,
    /// The wire format.
    pub protocol: Protocol,
    /// Headers sent with every export.
    pub headers: BTreeMap<String, String>,
    /// The `service.name` resource attribute.
    pub service_name: String,
    /// Extra resource attributes (`OTEL_RESOURCE_ATTRIBUTES`).
    pub resource_attributes: BTreeMap<String, String>,
    /// Metric aggregation between exports.
    pub temporality: Temporality,
    /// Spans waiting for export before new ones are dropped and counted
    /// (`OTEL_BSP_MAX_QUEUE_SIZE`).
    pub queue_size: usize,
}

/// Spans waiting for export before new ones are dropped, unless `OTEL_BSP_MAX_QUEUE_SIZE` says.
const QUEUE_SPANS: usize = 4096;

/// Telemetry as configured: what is exported (if anything) and whether contents are captured.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TelemetryConfig {
    /// The export destination; `None` exports nothing.
    pub export: Option<ExportConfig>,
    /// Message contents are recorded on spans (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`).
    pub capture_content: bool,
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

/// `base` with `path` appended (`/v1/traces`), as the specification builds signal endpoints.
fn signal_endpoint(base: &str, path: &str) -> String {
    format!("{}{path}", base.trim_end_matches('/'))
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
        if var("OTEL_SDK_DISABLED").is_some_and(|value| is_true(&value)) {
            return Ok(TelemetryConfig {
                export: None,
                capture_content,
            });
        }
        let protocol =
            match var("OTEL_EXPORTER_OTLP_PROTOCOL").or_else(|| settings.protocol.clone()) {
                Some(name) => Protocol::parse(&name)?,
                None => Protocol::default(),
            };
        // Over HTTP the base endpoint gets each signal's path; gRPC takes it as written.
        let signal = |base: &str, path: &str| match protocol {
            Protocol::Grpc => base.to_string(),
            Protocol::HttpProtobuf | Protocol::HttpJson => signal_endpoint(base, path),
        };
        let base = var("OTEL_EXPORTER_OTLP_ENDPOINT").or_else(|| settings.endpoint.clone());
        let traces = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .or_else(|| base.as_deref().map(|b| signal(b, "/v1/traces")));
        let metrics = var("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
            .or_else(|| base.as_deref().map(|b| signal(b, "/v1/metrics")));
        let (traces_endpoint, metrics_endpoint) = match (traces, metrics) {
            (None, None) => {
                return Ok(TelemetryConfig {
                    export: None,
                    capture_content,
                });
            }
            // One signal configured alone: the other goes to the same collector.
            (Some(traces), None) => {
                let metrics = traces.replace("/v1/traces", "/v1/metrics");
                (traces, metrics)
            }
            (None, Some(metrics)) => {
                let traces = metrics.replace("/v1/metrics", "/v1/traces");
                (traces, metrics)
            }
            (Some(traces), Some(metrics)) => (traces, metrics),
        };
        let mut headers = settings.headers.clone();
        if let Some(value) = var("OTEL_EXPORTER_OTLP_HEADERS") {
            headers.extend(key_values("OTEL_EXPORTER_OTLP_HEADERS", &value)?);
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
                traces_endpoint,
                metrics_endpoint,
                protocol,
                headers,
                service_name,
                resource_attributes,
                temporality,
                queue_size,
            }),
            capture_content,
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

    #[test]
    fn nothing_is_exported_when_unset_or_disabled() {
        let none = TelemetryConfig::default();
        assert_eq!(resolve(&[], &TelemetrySettings::default()).unwrap(), none);
        let disabled = resolve(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
                ("OTEL_SDK_DISABLED", "TRUE"),
            ],
            &TelemetrySettings::default(),
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
        };
        let config = resolve(
            &[
                (
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                    "http://traces:4318/custom",
                ),
                ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=s%20ecret, x-team=b"),
                ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod"),
                (
                    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
                    "false",
                ),
                (
                    "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE",
                    "Cumulative",
                ),
            ],
            &settings,
        )
        .unwrap();
        assert_eq!(
            config,
            TelemetryConfig {
                export: Some(ExportConfig {
                    traces_endpoint: "http://traces:4318/custom".into(),
                    metrics_endpoint: "http://collector:4318/v1/metrics".into(),
                    protocol: Protocol::HttpJson,
                    headers: BTreeMap::from([
                        ("api-key".into(), "s ecret".into()),
                        ("x-team".into(), "b".into()),
                    ]),
                    service_name: "from-file".into(),
                    resource_attributes: BTreeMap::from([(
                        "deployment.environment".into(),
                        "prod".into()
                    )]),
                    temporality: Temporality::Cumulative,
                    queue_size: 4096,
                }),
                capture_content: false,
            }
        );
    }

    #[test]
    fn grpc_takes_the_endpoint_as_written() {
        let config = resolve(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ],
            &TelemetrySettings::default(),
        )
        .unwrap();
        let export = config.export.unwrap();
        assert_eq!(
            (
                export.protocol,
                export.traces_endpoint.as_str(),
                export.metrics_endpoint.as_str()
            ),
            (
                Protocol::Grpc,
                "http://127.0.0.1:4317",
                "http://127.0.0.1:4317"
            )
        );
    }

    #[test]
    fn bad_values_say_what_to_write() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
        let err = |vars: &[(&str, &str)]| {
            resolve(vars, &TelemetrySettings::default())
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(&[endpoint, ("OTEL_EXPORTER_OTLP_PROTOCOL", "thrift")]),
            "telemetry configuration: unknown OTLP protocol \"thrift\"; use \"http/protobuf\", \"http/json\" or \"grpc\""
        );
        assert_eq!(
            err(&[endpoint, ("OTEL_BSP_MAX_QUEUE_SIZE", "0")]),
            "telemetry configuration: OTEL_BSP_MAX_QUEUE_SIZE=\"0\" is not a positive number of spans"
        );
        assert_eq!(
            err(&[endpoint, ("OTEL_EXPORTER_OTLP_HEADERS", "novalue")]),
            "telemetry configuration: OTEL_EXPORTER_OTLP_HEADERS: \"novalue\" is not key=value; write a comma-separated list like k1=v1,k2=v2"
        );
    }
}
