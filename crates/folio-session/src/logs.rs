//! Recent server log lines (`GET /v1/logs?since`): a bounded in-memory ring of the lines the
//! server records itself (also sent to `tracing`) and of every other line the process's log
//! subscriber writes (a model retry inside a turn, an MCP server that failed). A line about a
//! session carries its id, so a principal is shown only lines about its own sessions (and the
//! server-wide lines that name no session).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use folio_protocol::{LogLevel, LogLine};

/// Lines kept before the oldest is dropped.
const CAPACITY: usize = 2000;

/// One kept line and the session it is about, if any.
#[derive(Debug, Clone)]
struct Kept {
    session_id: Option<String>,
    line: LogLine,
}

/// The ring: the last line's seq, and the kept lines.
type Ring = Mutex<(u64, VecDeque<Kept>)>;

/// A shared ring of recent log lines.
#[derive(Debug, Clone)]
pub struct LogBuffer {
    lines: Arc<Ring>,
    /// Receives the subscriber's other lines while the buffer lives.
    _forwarding: Arc<folio_telemetry::Forwarding>,
}

impl Default for LogBuffer {
    fn default() -> Self {
        LogBuffer::new()
    }
}

impl LogBuffer {
    /// An empty buffer, fed the lines the log subscriber writes from now on.
    pub fn new() -> Self {
        let lines: Arc<Ring> = Arc::default();
        let ring = Arc::downgrade(&lines);
        let forwarding = folio_telemetry::forward_logs(move |record| {
            if let Some(lines) = ring.upgrade() {
                let level = match record.level {
                    tracing::Level::ERROR => LogLevel::Error,
                    tracing::Level::WARN => LogLevel::Warn,
                    _ => LogLevel::Info,
                };
                push(
                    &lines,
                    level,
                    record.session_id.as_deref(),
                    record.message.clone(),
                );
            }
        });
        LogBuffer {
            lines,
            _forwarding: Arc::new(forwarding),
        }
    }

    fn push(&self, level: LogLevel, session_id: Option<&str>, message: String) {
        push(&self.lines, level, session_id, message);
    }

    /// Records an informational line about the whole server.
    pub fn info(&self, message: String) {
        tracing::info!(logged = true, "{message}");
        self.push(LogLevel::Info, None, message);
    }

    /// Records a warning about the whole server.
    pub fn warn(&self, message: String) {
        tracing::warn!(logged = true, "{message}");
        self.push(LogLevel::Warn, None, message);
    }

    /// Records an error about the whole server.
    pub fn error(&self, message: String) {
        tracing::error!(logged = true, "{message}");
        self.push(LogLevel::Error, None, message);
    }

    /// Lines about session `session_id`, shown only to its owner.
    pub fn about<'a>(&'a self, session_id: &'a str) -> SessionLog<'a> {
        SessionLog {
            buffer: self,
            session_id,
        }
    }

    /// Lines with `seq > since`, oldest first.
    pub fn since(&self, since: u64) -> Vec<LogLine> {
        self.since_visible(since, |_| true)
    }

    /// The sessions the lines after `since` are about (to ask who owns them before
    /// [`LogBuffer::since_visible`]).
    pub fn sessions_since(&self, since: u64) -> std::collections::BTreeSet<String> {
        let guard = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        guard
            .1
            .iter()
            .filter(|k| k.line.seq > since)
            .filter_map(|k| k.session_id.clone())
            .collect()
    }

    /// Lines with `seq > since` that name no session or a session `owns` accepts.
    pub fn since_visible(&self, since: u64, mut owns: impl FnMut(&str) -> bool) -> Vec<LogLine> {
        let kept: Vec<Kept> = {
            let guard = self.lines.lock().unwrap_or_else(|p| p.into_inner());
            guard
                .1
                .iter()
                .filter(|k| k.line.seq > since)
                .cloned()
                .collect()
        };
        let mut seen = HashMap::new();
        kept.into_iter()
            .filter(|kept| match &kept.session_id {
                None => true,
                Some(id) => *seen.entry(id.clone()).or_insert_with(|| owns(id)),
            })
            .map(|kept| kept.line)
            .collect()
    }
}

/// Records lines about one session (see [`LogBuffer::about`]).
#[derive(Debug, Clone, Copy)]
pub struct SessionLog<'a> {
    buffer: &'a LogBuffer,
    session_id: &'a str,
}

impl SessionLog<'_> {
    /// Records an informational line about the session.
    pub fn info(&self, message: String) {
        tracing::info!(logged = true, session = self.session_id, "{message}");
        self.buffer
            .push(LogLevel::Info, Some(self.session_id), message);
    }

    /// Records a warning about the session.
    pub fn warn(&self, message: String) {
        tracing::warn!(logged = true, session = self.session_id, "{message}");
        self.buffer
            .push(LogLevel::Warn, Some(self.session_id), message);
    }

    /// Records an error about the session.
    pub fn error(&self, message: String) {
        tracing::error!(logged = true, session = self.session_id, "{message}");
        self.buffer
            .push(LogLevel::Error, Some(self.session_id), message);
    }
}

/// Appends a line to `ring`, dropping the oldest beyond [`CAPACITY`].
fn push(ring: &Ring, level: LogLevel, session_id: Option<&str>, message: String) {
    let mut guard = ring.lock().unwrap_or_else(|p| p.into_inner());
    let (next, lines) = &mut *guard;
    *next += 1;
    lines.push_back(Kept {
        session_id: session_id.map(str::to_string),
        line: LogLine {
            seq: *next,
            at: folio_protocol::format_at(&chrono::Utc::now()),
            level,
            message,
        },
    });
    if lines.len() > CAPACITY {
        lines.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_owner_sees_its_own_session_lines_and_server_lines() {
        let logs = LogBuffer::new();
        logs.info("server started".into());
        logs.about("s-alice").info("session s-alice created".into());
        logs.about("s-bob").warn("session s-bob failed".into());
        logs.about("s-alice").error("session s-alice: oops".into());
        let shown = |own: &str| -> Vec<String> {
            logs.since_visible(0, |id| id == own)
                .into_iter()
                .map(|line| line.message)
                .collect()
        };
        assert_eq!(
            shown("s-alice"),
            [
                "server started",
                "session s-alice created",
                "session s-alice: oops"
            ]
        );
        assert_eq!(shown("s-bob"), ["server started", "session s-bob failed"]);
        assert_eq!(logs.since(2).len(), 2);
    }
}
