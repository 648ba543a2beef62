//! The log lines the subscriber writes, handed to in-process receivers as well (the server's
//! `GET /v1/logs` ring), each with the session it is about: the innermost turn's, or a
//! `session` / `session_id` field's.

use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

use crate::context::TurnIds;

/// The field a caller sets on an event it has already recorded itself (`logged = true`), so
/// it is not handed to the receivers a second time.
pub const ALREADY_LOGGED: &str = "logged";

/// One log line handed to a receiver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    /// Its level.
    pub level: Level,
    /// The session it is about, if any.
    pub session_id: Option<String>,
    /// The message, then the event's other fields as `key=value`.
    pub message: String,
}

type Receiver = Arc<dyn Fn(&LogRecord) + Send + Sync>;

/// Every registered receiver, by registration number.
static RECEIVERS: RwLock<Vec<(u64, Receiver)>> = RwLock::new(Vec::new());

/// Registration numbers.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// A registered receiver; dropping it unregisters the receiver.
#[derive(Debug)]
#[must_use = "the receiver is unregistered when this is dropped"]
pub struct Forwarding(u64);

impl Drop for Forwarding {
    fn drop(&mut self) {
        RECEIVERS
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .retain(|(id, _)| *id != self.0);
    }
}

/// Hands `receiver` every line the installed subscriber logs from now on (at the levels its
/// filter lets through) until the result is dropped.
pub fn forward_logs(receiver: impl Fn(&LogRecord) + Send + Sync + 'static) -> Forwarding {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    RECEIVERS
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push((id, Arc::new(receiver)));
    Forwarding(id)
}

/// The layer feeding the receivers.
pub(crate) struct Forward;

/// Collects an event's message, other fields and session.
#[derive(Default)]
struct Line {
    message: String,
    fields: String,
    session_id: Option<String>,
    already_logged: bool,
}

impl Visit for Line {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "session" | "session_id" => self.session_id = Some(value.to_string()),
            "message" => self.message.push_str(value),
            _ => self.record_debug(field, &value),
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        if field.name() == ALREADY_LOGGED {
            self.already_logged = value;
        } else {
            self.record_debug(field, &value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }
}

impl<S> tracing_subscriber::Layer<S> for Forward
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let receivers: Vec<Receiver> = {
            let registered = RECEIVERS
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            registered
                .iter()
                .map(|(_, receiver)| receiver.clone())
                .collect()
        };
        if receivers.is_empty() {
            return;
        }
        let mut line = Line::default();
        event.record(&mut line);
        if line.already_logged {
            return;
        }
        // The innermost turn wins (a subagent runs inside its parent's turn).
        let turn_session = ctx.event_scope(event).and_then(|scope| {
            scope
                .from_root()
                .filter_map(|span| {
                    span.extensions()
                        .get::<TurnIds>()
                        .map(|ids| ids.session_id.clone())
                })
                .last()
        });
        let record = LogRecord {
            level: *event.metadata().level(),
            session_id: turn_session.or(line.session_id),
            message: format!("{}{}", line.message, line.fields)
                .trim()
                .to_string(),
        };
        for receiver in receivers {
            receiver(&record);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    #[test]
    fn lines_reach_receivers_with_their_session_until_dropped() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let forwarding = forward_logs(move |record| sink.lock().unwrap().push(record.clone()));
        let subscriber = tracing_subscriber::registry().with(Forward);
        tracing::subscriber::with_default(subscriber, || {
            let turn = tracing::info_span!("turn");
            crate::context::enter_turn(&turn, "ses_1", "turn_1", None);
            turn.in_scope(|| tracing::warn!(attempt = 2, "model request failed"));
            tracing::info!(session = "ses_2", "stream closed");
            tracing::error!(logged = true, "recorded by its caller");
            drop(forwarding);
            tracing::warn!("after the receiver left");
        });
        let record = |level, session: Option<&str>, message: &str| LogRecord {
            level,
            session_id: session.map(str::to_string),
            message: message.to_string(),
        };
        assert_eq!(
            *seen.lock().unwrap(),
            [
                record(Level::WARN, Some("ses_1"), "model request failed attempt=2"),
                record(Level::INFO, Some("ses_2"), "stream closed"),
            ]
        );
    }
}
