//! The logs signal's session events: each event a session appends becomes an OTLP log record,
//! in the span it was appended in (the turn's, a model call's or a tool call's), so a backend
//! shows a trace's events beside its spans. (The server's own log lines reach the same exporters
//! through the `tracing` bridge that [`crate::install`] sets up.)

use std::sync::OnceLock;
use std::time::SystemTime;

use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, Severity};
use opentelemetry_sdk::logs::SdkLogger;
use tracing::Level;

/// The logger session events go through, once a logs exporter is installed.
static EVENTS: OnceLock<SdkLogger> = OnceLock::new();

/// Sends session events to `logger` from now on (the first one installed stays).
pub(crate) fn set_event_logger(logger: SdkLogger) {
    let _ = EVENTS.set(logger);
}

/// One session event, as [`session_event`] exports it.
#[derive(Debug, Clone, Copy)]
pub struct SessionEvent<'a> {
    /// The event's `type` (`turn.completed`): the record's body and event name.
    pub event_type: &'static str,
    /// Its index in the session's log.
    pub index: u64,
    /// The session.
    pub session_id: &'a str,
    /// The turn, for a turn-scoped event.
    pub turn_id: Option<&'a str>,
    /// When it was appended.
    pub at: SystemTime,
    /// The record's severity.
    pub level: Level,
}

/// Exports `event` as an OTLP log record carrying the trace and span ids of the current span,
/// when a logs exporter is installed; otherwise returns at once, allocating nothing.
pub fn session_event(event: SessionEvent<'_>) {
    let Some(logger) = EVENTS.get() else {
        return;
    };
    let mut record = logger.create_log_record();
    record.set_event_name(event.event_type);
    record.set_timestamp(event.at);
    record.set_severity_number(match event.level {
        Level::TRACE => Severity::Trace,
        Level::DEBUG => Severity::Debug,
        Level::INFO => Severity::Info,
        Level::WARN => Severity::Warn,
        Level::ERROR => Severity::Error,
    });
    record.set_severity_text(event.level.as_str());
    record.set_body(AnyValue::from(event.event_type));
    record.add_attribute("agent_sdk.event.type", event.event_type);
    record.add_attribute("agent_sdk.event.index", crate::int(event.index));
    record.add_attribute("agent_sdk.session.id", event.session_id.to_string());
    if let Some(turn_id) = event.turn_id {
        record.add_attribute("agent_sdk.turn.id", turn_id.to_string());
    }
    // The SDK takes the trace context from the current span's (the OpenTelemetry layer makes
    // an entered span's context current).
    logger.emit(record);
}
