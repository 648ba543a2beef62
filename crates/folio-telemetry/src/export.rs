//! The OTLP exporters of a resolved export: one per signal and destination, behind the SDK's
//! providers (one tracer, meter and logger provider, each with a batch processor or periodic
//! reader per destination), shipping from their own threads.

use std::collections::HashMap;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry_otlp::tonic_types::metadata::MetadataMap;
use opentelemetry_otlp::tonic_types::transport::ClientTlsConfig;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig, WithTonicConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::SdkLoggerProvider;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};

use crate::TelemetryError;
use crate::config::{ExportConfig, Protocol, Signal, SignalExport, Temporality};

/// How long one export may take before it is abandoned.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// Installed telemetry; [`Telemetry::shutdown`] flushes what is still queued for export.
#[derive(Debug, Default)]
pub struct Telemetry {
    /// Spans, when a destination receives traces.
    pub(crate) tracer: Option<SdkTracerProvider>,
    /// Metrics, when a destination receives them.
    meter: Option<SdkMeterProvider>,
    /// Log records, when a destination receives logs.
    pub(crate) logger: Option<SdkLoggerProvider>,
    /// The runtime the gRPC exporters' connections run on (one thread of its own, so exports
    /// never take a turn's workers; none over HTTP, whose client blocks the export threads).
    grpc: Option<tokio::runtime::Runtime>,
}

impl Telemetry {
    /// Starts the exporters `export` describes; sets the global meter provider.
    pub(crate) fn start(export: &ExportConfig) -> Result<Telemetry, TelemetryError> {
        let resource = resource(export);
        let grpc = export
            .exports
            .iter()
            .any(|destination| destination.protocol == Protocol::Grpc)
            .then(grpc_runtime)
            .transpose()?;
        // The gRPC channels spawn their connection tasks on the runtime entered here.
        let entered = grpc.as_ref().map(tokio::runtime::Runtime::enter);
        let meter = meter_provider(export, resource.clone())?;
        // Set before the span processors are built: they count the spans they export and the
        // ones they drop (`otel.sdk.processor.span.processed`) on the global meter.
        if let Some(meter) = &meter {
            opentelemetry::global::set_meter_provider(meter.clone());
        }
        let tracer = tracer_provider(export, resource.clone())?;
        let logger = logger_provider(export, resource)?;
        drop(entered);
        Ok(Telemetry {
            tracer,
            meter,
            logger,
            grpc,
        })
    }

    /// Exports what is queued and stops the exporters (a collector that is down only loses
    /// what was queued; the failure is logged at debug level).
    pub fn shutdown(self) {
        if let Some(logger) = self.logger
            && let Err(err) = logger.shutdown()
        {
            tracing::debug!("could not export the last log records: {err}");
        }
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

/// The resource every span, metric and log record carries.
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
fn metadata(export: &SignalExport) -> Result<MetadataMap, TelemetryError> {
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

fn headers(export: &SignalExport) -> HashMap<String, String> {
    export
        .headers
        .iter()
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

/// Builds an OTLP exporter from `builder` (a span, metric or log exporter builder: their types
/// differ, their configuration does not) for `export`'s endpoint, protocol, headers and timeout;
/// returns early with the build error.
macro_rules! exporter {
    ($builder:expr, $export:expr) => {{
        let export: &SignalExport = $export;
        match export.protocol {
            Protocol::Grpc => {
                let builder = $builder
                    .with_tonic()
                    .with_endpoint(export.endpoint.clone())
                    .with_metadata(metadata(export)?)
                    .with_timeout(EXPORT_TIMEOUT);
                match grpc_tls(&export.endpoint) {
                    Some(tls) => builder.with_tls_config(tls).build(),
                    None => builder.build(),
                }
            }
            Protocol::HttpProtobuf | Protocol::HttpJson => $builder
                .with_http()
                .with_endpoint(export.endpoint.clone())
                .with_protocol(otlp_protocol(export.protocol))
                .with_headers(headers(export))
                .with_timeout(EXPORT_TIMEOUT)
                .build(),
        }
        .map_err(build_error(&export.endpoint))?
    }};
}

/// The tracer provider, with a batch span processor (its own queue and thread) per destination
/// of traces; none without one.
fn tracer_provider(
    export: &ExportConfig,
    resource: Resource,
) -> Result<Option<SdkTracerProvider>, TelemetryError> {
    let mut builder = None;
    for destination in export.of(Signal::Traces) {
        let exporter = exporter!(opentelemetry_otlp::SpanExporter::builder(), destination);
        let processor = BatchSpanProcessor::builder(exporter)
            .with_batch_config(
                BatchConfigBuilder::default()
                    .with_max_queue_size(export.queue_size)
                    .build(),
            )
            .build();
        builder = Some(
            builder
                .unwrap_or_else(|| SdkTracerProvider::builder().with_resource(resource.clone()))
                .with_span_processor(processor),
        );
    }
    Ok(builder.map(|builder| builder.build()))
}

/// The meter provider, with a periodic reader per destination of metrics; none without one.
fn meter_provider(
    export: &ExportConfig,
    resource: Resource,
) -> Result<Option<SdkMeterProvider>, TelemetryError> {
    let temporality = match export.temporality {
        Temporality::Delta => opentelemetry_sdk::metrics::Temporality::Delta,
        Temporality::Cumulative => opentelemetry_sdk::metrics::Temporality::Cumulative,
    };
    let mut builder = None;
    for destination in export.of(Signal::Metrics) {
        let exporter = exporter!(
            opentelemetry_otlp::MetricExporter::builder().with_temporality(temporality),
            destination
        );
        builder = Some(
            builder
                .unwrap_or_else(|| SdkMeterProvider::builder().with_resource(resource.clone()))
                .with_periodic_exporter(exporter),
        );
    }
    Ok(builder.map(|builder| builder.build()))
}

/// The logger provider, with a batch log processor (its own queue and thread) per destination
/// of logs; none without one.
fn logger_provider(
    export: &ExportConfig,
    resource: Resource,
) -> Result<Option<SdkLoggerProvider>, TelemetryError> {
    let mut builder = None;
    for destination in export.of(Signal::Logs) {
        let exporter = exporter!(opentelemetry_otlp::LogExporter::builder(), destination);
        builder = Some(
            builder
                .unwrap_or_else(|| SdkLoggerProvider::builder().with_resource(resource.clone()))
                .with_batch_exporter(exporter),
        );
    }
    Ok(builder.map(|builder| builder.build()))
}
