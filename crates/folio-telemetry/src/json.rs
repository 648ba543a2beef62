//! `--log-format json`: one JSON object per line, with the turn's `session_id`, `turn_id` and
//! `trace_id` on every line logged inside a turn.

use std::fmt;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use crate::context::TurnIds;

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
        let mut line = Map::new();
        line.insert("timestamp".into(), Value::from(timestamp));
        line.insert(
            "level".into(),
            Value::from(event.metadata().level().as_str()),
        );
        line.insert("target".into(), Value::from(event.metadata().target()));
        event.record(&mut Fields(&mut line));
        // The innermost turn wins (a subagent runs inside its parent's turn).
        let ids = ctx.event_scope().and_then(|scope| {
            scope
                .from_root()
                .filter_map(|span| span.extensions().get::<TurnIds>().cloned())
                .last()
        });
        if let Some(ids) = ids {
            line.insert("session_id".into(), Value::from(ids.session_id));
            line.insert("turn_id".into(), Value::from(ids.turn_id));
            if let Some(trace_id) = ids.trace_id {
                line.insert("trace_id".into(), Value::from(trace_id));
            }
        }
        let text = serde_json::to_string(&line).map_err(|_| fmt::Error)?;
        writeln!(writer, "{text}")
    }
}
