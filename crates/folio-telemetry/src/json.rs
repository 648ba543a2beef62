//! `--log-format json`: one JSON object per line, with the turn's `session_id`, `turn_id` and
//! `trace_id` on every line logged inside a turn.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use crate::context::TurnIds;

/// One line of `--log-format json`: the event's level, target and message, the ids of the turn
/// it was logged in, and its other fields by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonLogLine {
    /// When it was logged (RFC 3339, UTC).
    pub timestamp: String,
    /// `ERROR`, `WARN`, `INFO`, `DEBUG` or `TRACE`.
    pub level: String,
    /// The module that logged it, e.g. `folio_model::http`.
    pub target: String,
    /// The message, if the event has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The session of the turn it was logged in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The turn it was logged in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// The turn's trace id (32 hex digits), when the turn is traced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// The event's other fields (a field named like one above is left out).
    #[serde(flatten)]
    pub fields: Map<String, Value>,
}

/// The names [`JsonLogLine`] gives a field of its own.
const OWN_FIELDS: [&str; 7] = [
    "timestamp",
    "level",
    "target",
    "message",
    "session_id",
    "turn_id",
    "trace_id",
];

/// Formats events as JSON lines.
pub(crate) struct JsonLines;

/// Collects an event's fields into a JSON object.
struct Fields<'a>(&'a mut Map<String, Value>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), Value::from(value));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_string(), Value::from(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_string(), Value::from(value));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().to_string(), Value::from(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_string(), Value::from(value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().to_string(), Value::from(format!("{value:?}")));
    }
}

/// Removes the field `name` from `fields`, as text.
fn take_text(fields: &mut Map<String, Value>, name: &str) -> Option<String> {
    fields.remove(name).map(|value| match value {
        Value::String(text) => text,
        other => other.to_string(),
    })
}

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut timestamp = String::new();
        SystemTime.format_time(&mut Writer::new(&mut timestamp))?;
        let mut fields = Map::new();
        event.record(&mut Fields(&mut fields));
        let message = take_text(&mut fields, "message");
        // The innermost turn wins (a subagent runs inside its parent's turn).
        let ids = ctx.event_scope().and_then(|scope| {
            scope
                .from_root()
                .filter_map(|span| span.extensions().get::<TurnIds>().cloned())
                .last()
        });
        // Outside a turn, an event's own `session_id` (etc.) field fills the place.
        let (session_id, turn_id, trace_id) = match ids {
            Some(ids) => (Some(ids.session_id), Some(ids.turn_id), ids.trace_id),
            None => (
                take_text(&mut fields, "session_id"),
                take_text(&mut fields, "turn_id"),
                take_text(&mut fields, "trace_id"),
            ),
        };
        fields.retain(|name, _| !OWN_FIELDS.contains(&name.as_str()));
        let line = JsonLogLine {
            timestamp,
            level: event.metadata().level().as_str().to_string(),
            target: event.metadata().target().to_string(),
            message,
            session_id,
            turn_id,
            trace_id,
            fields,
        };
        let text = serde_json::to_string(&line).map_err(|_| fmt::Error)?;
        writeln!(writer, "{text}")
    }
}
