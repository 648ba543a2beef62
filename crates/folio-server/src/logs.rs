//! Recent server log lines (`GET /v1/logs?since`): a bounded in-memory ring, also sent to
//! `tracing`. A line about a session carries its id, so a principal is shown only lines about
//! its own sessions (and the server-wide lines that name no session).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde::Serialize;

/// Lines kept before the oldest is dropped.
const CAPACITY: usize = 2000;

/// One log line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogLine {
    /// Increases by one per line; pass the last one seen as `since`.
    pub seq: u64,
    /// RFC 3339 UTC with milliseconds.
    pub at: String,
    /// `info`, `warn` or `error`.
    pub level: &'static str,
    /// The line.
    pub message: String,
    /// The session the line is about, if any (not part of the wire shape).
    #[serde(skip)]
    pub session_id: Option<String>,
}

/// A shared ring of recent log lines.
#[derive(Debug, Clone, Default)]
pub struct LogBuffer {
    lines: Arc<Mutex<(u64, VecDeque<LogLine>)>>,
}

impl LogBuffer {
    /// An empty buffer.
    pub fn new() -> Self {
        LogBuffer::default()
    }

    fn push(&self, level: &'static str, session_id: Option<&str>, message: String) {
        let mut guard = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let (next, lines) = &mut *guard;
        *next += 1;
        lines.push_back(LogLine {
            seq: *next,
            at: folio_protocol::format_at(&chrono::Utc::now()),
            level,
            message,
            session_id: session_id.map(str::to_string),
        });
        if lines.len() > CAPACITY {
            lines.pop_front();
        }
    }

    /// Records an informational line about the whole server.
    pub fn info(&self, message: String) {
        tracing::info!("{message}");
        self.push("info", None, message);
    }

    /// Records a warning about the whole server.
    pub fn warn(&self, message: String) {
        tracing::warn!("{message}");
        self.push("warn", None, message);
    }

    /// Records an error about the whole server.
    pub fn error(&self, message: String) {
        tracing::error!("{message}");
        self.push("error", None, message);
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

    /// Lines with `seq > since` that name no session or a session `owns` accepts.
    pub fn since_visible(&self, since: u64, mut owns: impl FnMut(&str) -> bool) -> Vec<LogLine> {
        let lines: Vec<LogLine> = {
            let guard = self.lines.lock().unwrap_or_else(|p| p.into_inner());
            guard.1.iter().filter(|l| l.seq > since).cloned().collect()
        };
        let mut seen = std::collections::HashMap::new();
        lines
            .into_iter()
            .filter(|line| match &line.session_id {
                None => true,
                Some(id) => *seen.entry(id.clone()).or_insert_with(|| owns(id)),
            })
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
        tracing::info!(session = self.session_id, "{message}");
        self.buffer.push("info", Some(self.session_id), message);
    }

    /// Records a warning about the session.
    pub fn warn(&self, message: String) {
        tracing::warn!(session = self.session_id, "{message}");
        self.buffer.push("warn", Some(self.session_id), message);
    }

    /// Records an error about the session.
    pub fn error(&self, message: String) {
        tracing::error!(session = self.session_id, "{message}");
        self.buffer.push("error", Some(self.session_id), message);
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
        let owners = [("alice", "s-alice"), ("bob", "s-bob")];
        for (principal, own) in owners {
            let shown: Vec<String> = logs
                .since_visible(0, |id| id == own)
                .into_iter()
                .map(|line| line.message)
                .collect();
            let expected: Vec<String> = logs
                .since(0)
                .into_iter()
                .filter(|line| line.session_id.as_deref().is_none_or(|id| id == own))
                .map(|line| line.message)
                .collect();
            assert_eq!(shown, expected, "{principal}");
            assert!(shown.iter().all(|m| !m.contains(if own == "s-alice" {
                "s-bob"
            } else {
                "s-alice"
            })));
        }
    }
}
