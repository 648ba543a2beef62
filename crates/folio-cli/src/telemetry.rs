//! Installs logging and telemetry for one `folio` command: `RUST_LOG` / `FOLIO_LOG` filters,
//! and OTLP export when `OTEL_EXPORTER_OTLP_*` or `[telemetry]` in the project's `folio.toml`
//! names an endpoint (nothing is exported otherwise, nor under `OTEL_SDK_DISABLED=true`).

use std::path::Path;

use folio_project::{ProjectConfig, TelemetryDestination, TelemetrySection};
use folio_telemetry::{
    DestinationSettings, LogFormat, Telemetry, TelemetryConfig, TelemetryError, TelemetrySettings,
};

/// The service name when neither `OTEL_SERVICE_NAME`, `[telemetry]` nor a project names one.
const DEFAULT_SERVICE: &str = "folio";

/// Installs the subscriber (and the exporters, when configured) for this process; `project` is
/// the folder of the command's `folio.toml`, for commands that run turns.
pub fn install(format: LogFormat, project: Option<&Path>) -> Result<Telemetry, TelemetryError> {
    let env = |name: &str| std::env::var(name).ok();
    let filter = folio_telemetry::log_filter(env)?;
    let config = project.map(project_config).unwrap_or_default();
    let service = config
        .name
        .clone()
        .or_else(|| {
            let dir = project?.canonicalize().ok()?;
            Some(dir.file_name()?.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| DEFAULT_SERVICE.to_string());
    let telemetry = TelemetryConfig::resolve(env, &settings(config.telemetry), &service)?;
    folio_telemetry::install(format, filter, &telemetry)
}

/// `[telemetry]` as folio-telemetry takes it (that crate does not depend on the manifest parser).
fn settings(section: TelemetrySection) -> TelemetrySettings {
    let TelemetrySection {
        endpoint,
        protocol,
        headers,
        service_name,
        capture_message_content,
        metrics_temporality,
        traceparent,
        destinations,
    } = section;
    TelemetrySettings {
        endpoint,
        protocol,
        headers,
        service_name,
        capture_message_content,
        metrics_temporality,
        traceparent,
        destinations: destinations.into_iter().map(destination).collect(),
    }
}

/// One `[[telemetry.destinations]]` entry as folio-telemetry takes it.
fn destination(destination: TelemetryDestination) -> DestinationSettings {
    let TelemetryDestination {
        endpoint,
        protocol,
        headers,
        signals,
    } = destination;
    DestinationSettings {
        endpoint,
        protocol,
        headers,
        signals,
    }
}

/// `<dir>/folio.toml`, or the defaults when there is none. One that does not parse counts as
/// none here: the command's own discovery reports it with the exact key and line.
fn project_config(dir: &Path) -> ProjectConfig {
    std::fs::read_to_string(dir.join("folio.toml"))
        .ok()
        .and_then(|text| toml::from_str(&text).ok())
        .unwrap_or_default()
}
