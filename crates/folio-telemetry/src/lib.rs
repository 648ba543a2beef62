//! Folio's telemetry: the `tracing` subscriber every binary installs (human or JSON log lines
//! on stderr, `RUST_LOG` filters), OpenTelemetry export over OTLP when configured (traces,
//! metrics and logs, to one or more destinations, each with the signals it takes; nothing is
//! exported otherwise), W3C trace context in and out, session events as log records, and the
//! metric instruments the crates record into.
//!
//! Instrumentation stays where the work is: the turn loop, the model client and the server
//! open `tracing` spans with the names and attributes of the observability spec; this crate
//! only ships them. The export runs on its own threads behind a bounded queue, so a slow or
//! unreachable collector never slows a turn: spans that do not fit are dropped and counted.

pub mod catalog;
mod config;
mod context;
pub mod custom;
mod export;
mod forward;
mod install;
mod json;
mod logs;
pub mod metrics;

pub use config::{
    DestinationSettings, ExportConfig, Protocol, Signal, SignalExport, TelemetryConfig,
    TelemetrySettings, Temporality, TraceparentMode,
};
pub use context::{
    adopt_caller, adopt_parent, capture_content, enter_turn, incoming_traceparent, trace_headers,
    with_incoming,
};
pub use export::Telemetry;
pub use forward::{ALREADY_LOGGED, Forwarding, LogRecord, forward_logs};
pub use install::{LogFormat, install, log_filter};
pub use json::JsonLogLine;
pub use logs::{SessionEvent, session_event};

/// An unsigned count or index as the integer a span attribute must carry (`intValue` in OTLP):
/// `tracing-opentelemetry` records a `u64` field as its text, which backends cannot sum.
/// Record counts through this (`span.record("gen_ai.usage.input_tokens", int(tokens))`).
pub fn int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// Why telemetry could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// A variable or `[telemetry]` key has a value that cannot be used.
    #[error("telemetry configuration: {0}")]
    Config(String),
    /// The log filter (`RUST_LOG` / `FOLIO_LOG`) does not parse.
    #[error(
        "log filter {var}={value:?} does not parse ({source}); write directives like `info` or `warn,folio_agent=debug`"
    )]
    Filter {
        /// The variable that held it.
        var: &'static str,
        /// Its value.
        value: String,
        /// What the parser said.
        #[source]
        source: tracing_subscriber::filter::ParseError,
    },
    /// The OTLP exporter could not be built.
    #[error(
        "could not set up the OTLP exporter for {endpoint}: {source}; check OTEL_EXPORTER_OTLP_ENDPOINT or [telemetry]"
    )]
    Exporter {
        /// The endpoint it was for.
        endpoint: String,
        /// What failed.
        #[source]
        source: opentelemetry_otlp::ExporterBuildError,
    },
    /// The gRPC exporter's runtime thread could not start.
    #[error("telemetry configuration: could not start the OTLP gRPC exporter's thread: {0}")]
    GrpcRuntime(#[source] std::io::Error),
    /// Another subscriber was installed first.
    #[error("could not install the log subscriber: {0}")]
    Install(#[source] tracing::subscriber::SetGlobalDefaultError),
}
