//! Installs the process's `tracing` subscriber: log lines on stderr filtered by `RUST_LOG`
//! (alias `FOLIO_LOG`), and, when an export is configured, the OpenTelemetry layer and meter
//! provider shipping spans and metrics over OTLP from their own threads.

use std::collections::HashMap;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::tonic_types::metadata::MetadataMap;
use opentelemetry_otlp::tonic_types::transport::ClientTlsConfig;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig, WithTonicConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
use tracing::Level;
use tracing_subscriber::filter::{EnvFilter, FilterExt, filter_fn};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::{Layer, Registry};

use crate::TelemetryError;
use crate::config::{ExportConfig, Protocol, TelemetryConfig, Temporality};
use crate::json::JsonLines;

/// How long one export may take before it is abandoned.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// How log lines are written on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines (the default).
    #[default]
    Text,
    /// One JSON object per line, with `session_id`, `turn_id` and `trace_id` inside a turn.
    Json,
}

/// Installed telemetry; [`Telemetry::shutdown`] flushes what is still queued for export.
#[derive(Debug, Default)]
pub struct Telemetry {
    tracer: Option<SdkTracerProvider>,
    meter: Option<SdkMeterProvider>,
    /// The runtime the gRPC exporters' connections run on (one thread of its own, so exports
    /// never take a turn's workers; none over HTTP, whose client blocks the export threads).
    grpc: Option<tokio::runtime::Runtime>,
}

impl Telemetry {
    /// Exports what is queued and stops the exporters (a collector that is down only loses
    /// what was queued; the failure is logged at debug level).
    pub fn shutdown(self) {
        if let Some(tracer) = self.tracer
            && let Err(err) = tracer.shutdown()
        {
            tracing::debug!("could not export the last spans: {err}");
        }
        if let Some(meter) = self.meter
            && let Err(err) = meter.shutdown()
        {
            tracing::debug!("could not export the last metrics: {err}");
        }
        if let Some(runtime) = self.grpc {
            runtime.shutdown_background();
        }
    }
}

/// The log filter: `FOLIO_LOG` (Folio's own name, so it wins), else `RUST_LOG`, else `warn`.
pub fn log_filter(env: impl Fn(&str) -> Option<String>) -> Result<EnvFilter, TelemetryError> {
    let chosen = ["FOLIO_LOG", "RUST_LOG"]
        .into_iter()
        .find_map(|var| env(var).filter(|v| !v.trim().is_empty()).map(|v| (var, v)));
    match chosen {
        None => Ok(EnvFilter::new("warn")),
        Some((var, value)) => EnvFilter::try_new(&value).map_err(|err| TelemetryError::Filter {
            var,
            value,
            source: err,
        }),
    }
}

/// Installs the global subscriber: `format` lines on stderr filtered by `filter`, and the
/// export `config` describes (none when it has no export). Call once, before any runtime starts.
pub fn install(
    format: LogFormat,
    filter: EnvFilter,
    config: &TelemetryConfig,
) -> Result<Telemetry, TelemetryError> {
    let (telemetry, subscriber) = subscriber(format, filter, config)?;
    tracing::subscriber::set_global_default(subscriber).map_err(TelemetryError::Install)?;
    Ok(telemetry)
}

/// The subscriber [`install`] installs, with the exporters, the global meter provider and the
/// content-capture switch set up.
fn subscriber(
    format: LogFormat,
    filter: EnvFilter,
    config: &TelemetryConfig,
) -> Result<(Telemetry, impl tracing::Subscriber + Send + Sync + 'static), TelemetryError> {
    // Spans of Folio's crates are always on for the log layers, so a line inside a turn names
    // its session and turn whatever the filter lets through.
    let folio_spans = || filter_fn(|meta| meta.is_span() && meta.target().starts_with("folio"));
    // The lines written on stderr also go to the in-process receivers (`GET /v1/logs`).
    let forward = crate::forward::Forward.with_filter(
        EnvFilter::try_new(filter.to_string())
            .unwrap_or_else(|_| EnvFilter::new("warn"))
            .or(folio_spans()),
    );
    let logs = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_target(false)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .event_format(JsonLines)
            .boxed(),
    }
    .with_filter(filter.or(folio_spans()));
    let (telemetry, otel) = match &config.export {
        None => (Telemetry::default(), None),
        Some(export) => {
            let resource = resource(export);
            let grpc = match export.protocol {
                Protocol::Grpc => Some(grpc_runtime()?),
                Protocol::HttpProtobuf | Protocol::HttpJson => None,
            };
            // The gRPC channels spawn their connection tasks on the runtime entered here.
            let entered = grpc.as_ref().map(tokio::runtime::Runtime::enter);
            let meter = meter_provider(export, resource.clone())?;
            // Set before the span processor is built: it counts the spans it exports and the
            // ones it drops (`otel.sdk.processor.span.processed`) on the global meter.
            opentelemetry::global::set_meter_provider(meter.clone());
            let tracer = tracer_provider(export, resource)?;
            drop(entered);
            // Only the spec's and the GenAI attributes: no source locations, threads or timings.
            let layer = tracing_opentelemetry::layer()
                .with_tracer(tracer.tracer("folio"))
                .with_location(false)
                .with_threads(false)
                .with_tracked_inactivity(false)
                .with_level(false)
                .with_target(false)
                .with_filter(filter_fn(|meta| {
                    meta.target().starts_with("folio") && *meta.level() <= Level::INFO
                }));
            let telemetry = Telemetry {
                tracer: Some(tracer),
                meter: Some(meter),
                grpc,
            };
            (telemetry, Some(layer))
        }
    };
    crate::context::set_capture_content(config.capture_content);
    Ok((
        telemetry,
        Registry::default().with(logs).with(forward).with(otel),
    ))
}

/// The resource every span and metric carries.
fn resource(export: &ExportConfig) -> Resource {
    let mut attributes = vec![
        KeyValue::new("agent_sdk.framework", "folio"),
        KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
    ];
    attributes.extend(
        export
            .resource_attributes
            .iter()
            .filter(|(key, _)| key.as_str() != "service.name")
            .map(|(key, value)| KeyValue::new(key.clone(), value.clone())),
    );
    Resource::builder()
        .with_service_name(export.service_name.clone())
        .with_attributes(attributes)
        .build()
}

fn otlp_protocol(protocol: Protocol) -> opentelemetry_otlp::Protocol {
    match protocol {
        Protocol::HttpProtobuf => opentelemetry_otlp::Protocol::HttpBinary,
        Protocol::HttpJson => opentelemetry_otlp::Protocol::HttpJson,
        Protocol::Grpc => opentelemetry_otlp::Protocol::Grpc,
    }
}

/// The runtime of the gRPC exporters: one worker thread of its own.
fn grpc_runtime() -> Result<tokio::runtime::Runtime, TelemetryError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("folio-otlp-grpc")
        .enable_all()
        .build()
        .map_err(TelemetryError::GrpcRuntime)
}

/// The export headers as gRPC metadata.
fn metadata(export: &ExportConfig) -> Result<MetadataMap, TelemetryError> {
    let mut headers = http::HeaderMap::new();
    for (key, value) in &export.headers {
        let invalid = |what: &str| {
            TelemetryError::Config(format!(
                "OTLP header {key:?} has an invalid {what} for gRPC metadata; use ASCII names and values"
            ))
        };
        let name = http::HeaderName::from_bytes(key.to_ascii_lowercase().as_bytes())
            .map_err(|_| invalid("name"))?;
        let value = http::HeaderValue::from_str(value).map_err(|_| invalid("value"))?;
        headers.insert(name, value);
    }
    Ok(MetadataMap::from_headers(headers))
}

/// TLS for an `https` gRPC endpoint, trusting the system's roots; none for `http`.
fn grpc_tls(endpoint: &str) -> Option<ClientTlsConfig> {
    endpoint
        .starts_with("https://")
        .then(|| ClientTlsConfig::new().with_enabled_roots())
}

/// Turns an exporter build failure for `endpoint` into Folio's error.
fn build_error(
    endpoint: &str,
) -> impl FnOnce(opentelemetry_otlp::ExporterBuildError) -> TelemetryError {
    move |err| TelemetryError::Exporter {
        endpoint: endpoint.to_string(),
        source: err,
    }
}

fn headers(export: &ExportConfig) -> HashMap<String, String> {
    export
        .headers
        .iter()
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

/// Builds an OTLP exporter from `builder` (a span or metric exporter builder: their types
/// differ, their configuration does not) for `export`'s protocol, headers and timeout, sending to
/// `endpoint`; returns early with the build error.
macro_rules! exporter {
    ($builder:expr, $export:expr, $endpoint:expr) => {
        match $export.protocol {
            Protocol::Grpc => {
                let builder = $builder
                    .with_tonic()
                    .with_endpoint($endpoint.clone())
                    .with_metadata(metadata($export)?)
                    .with_timeout(EXPORT_TIMEOUT);
                match grpc_tls($endpoint) {
                    Some(tls) => builder.with_tls_config(tls).build(),
                    None => builder.build(),
                }
            }
            Protocol::HttpProtobuf | Protocol::HttpJson => $builder
                .with_http()
                .with_endpoint($endpoint.clone())
                .with_protocol(otlp_protocol($export.protocol))
                .with_headers(headers($export))
                .with_timeout(EXPORT_TIMEOUT)
                .build(),
        }
        .map_err(build_error($endpoint))?
    };
}

fn tracer_provider(
    export: &ExportConfig,
    resource: Resource,
) -> Result<SdkTracerProvider, TelemetryError> {
    let endpoint = &export.traces_endpoint;
    let exporter = exporter!(
        opentelemetry_otlp::SpanExporter::builder(),
        export,
        endpoint
    );
    let processor = BatchSpanProcessor::builder(exporter)
        .with_batch_config(
            BatchConfigBuilder::default()
                .with_max_queue_size(export.queue_size)
                .build(),
        )
        .build();
    Ok(SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(resource)
        .build())
}

fn meter_provider(
    export: &ExportConfig,
    resource: Resource,
) -> Result<SdkMeterProvider, TelemetryError> {
    let temporality = match export.temporality {
        Temporality::Delta => opentelemetry_sdk::metrics::Temporality::Delta,
        Temporality::Cumulative => opentelemetry_sdk::metrics::Temporality::Cumulative,
    };
    let endpoint = &export.metrics_endpoint;
    let exporter = exporter!(
        opentelemetry_otlp::MetricExporter::builder().with_temporality(temporality),
        export,
        endpoint
    );
    Ok(SdkMeterProvider::builder()
        .with_periodic_exporter(exporter)
        .with_resource(resource)
        .build())
}
