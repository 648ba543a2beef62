//! Installs logging and telemetry for one `folio` command from the process environment:
//! `RUST_LOG` / `FOLIO_LOG` filters, and OTLP export when `OTEL_EXPORTER_OTLP_*` names an
//! endpoint (nothing is exported otherwise, nor under `OTEL_SDK_DISABLED=true`).

use folio_telemetry::{LogFormat, Telemetry, TelemetryConfig, TelemetryError, TelemetrySettings};

/// The service name when `OTEL_SERVICE_NAME` does not set one.
const DEFAULT_SERVICE: &str = "folio";

/// Installs the subscriber (and the exporters, when configured) for this process.
pub fn install(format: LogFormat) -> Result<Telemetry, TelemetryError> {
    let env = |name: &str| std::env::var(name).ok();
    let filter = folio_telemetry::log_filter(env)?;
    let config = TelemetryConfig::resolve(env, &TelemetrySettings::default(), DEFAULT_SERVICE)?;
    folio_telemetry::install(format, filter, &config)
}
