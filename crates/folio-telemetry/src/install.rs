//! Installs the process's `tracing` subscriber: log lines on stderr filtered by `RUST_LOG`
//! (alias `FOLIO_LOG`), and, when an export is configured, the OpenTelemetry layer (spans), the
//! meter provider and the logs bridge (the same log lines as OTLP log records), shipping over
//! OTLP from their own threads.

use opentelemetry::logs::LoggerProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_appender_tracing::layer::OpenTelemetryTracingBridge;
use tracing::Level;
use tracing_subscriber::filter::{EnvFilter, FilterExt, filter_fn};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::{Layer, Registry};

use crate::TelemetryError;
use crate::config::TelemetryConfig;
use crate::export::Telemetry;
use crate::json::JsonLines;

/// How log lines are written on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines (the default).
    #[default]
    Text,
    /// One JSON object per line, with `session_id`, `turn_id` and `trace_id` inside a turn.
    Json,
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
    if let Some(logger) = &telemetry.logger {
        crate::logs::set_event_logger(logger.logger("folio"));
    }
    Ok(telemetry)
}

/// The subscriber [`install`] installs, with the exporters, the global meter provider, the
/// content-capture switch and the traceparent mode set up.
fn subscriber(
    format: LogFormat,
    filter: EnvFilter,
    config: &TelemetryConfig,
) -> Result<(Telemetry, impl tracing::Subscriber + Send + Sync + 'static), TelemetryError> {
    // Spans of Folio's crates are always on for the log layers, so a line inside a turn names
    // its session and turn whatever the filter lets through.
    let folio_spans = || filter_fn(|meta| meta.is_span() && meta.target().starts_with("folio"));
    // The same filter again, for the layers that take one of their own.
    let directives = filter.to_string();
    let same_filter = || EnvFilter::try_new(&directives).unwrap_or_else(|_| EnvFilter::new("warn"));
    // The lines written on stderr also go to the in-process receivers (`GET /v1/logs`).
    let forward = crate::forward::Forward.with_filter(same_filter().or(folio_spans()));
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
    let telemetry = match &config.export {
        None => Telemetry::default(),
        Some(export) => Telemetry::start(export)?,
    };
    // Only the spec's and the GenAI attributes: no source locations, threads or timings.
    let otel = telemetry.tracer.as_ref().map(|tracer| {
        tracing_opentelemetry::layer()
            .with_tracer(tracer.tracer("folio"))
            .with_location(false)
            .with_threads(false)
            .with_tracked_inactivity(false)
            .with_level(false)
            .with_target(false)
            .with_filter(filter_fn(|meta| {
                meta.target().starts_with("folio") && *meta.level() <= Level::INFO
            }))
    });
    // The lines of Folio's crates the filter lets through, as log records in the span they are
    // logged in (never the exporters' own, which would feed themselves).
    let bridge = telemetry.logger.as_ref().map(|logger| {
        OpenTelemetryTracingBridge::new(logger)
            .with_filter(same_filter().and(filter_fn(|meta| meta.target().starts_with("folio"))))
    });
    crate::context::set_capture_content(config.capture_content);
    crate::context::set_traceparent_mode(config.traceparent);
    Ok((
        telemetry,
        Registry::default()
            .with(logs)
            .with(forward)
            .with(otel)
            .with(bridge),
    ))
}
