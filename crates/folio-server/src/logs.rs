//! Recent server log lines (`GET /v1/logs?since`): a bounded in-memory ring, also sent to
//! `tracing`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use folio_protocol::{LogLevel, LogLine};

/// Lines kept before the oldest is dropped.
const CAPACITY: usize = 2000;

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

    fn push(&self, level: LogLevel, message: String) {
        let mut guard = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let (next, lines) = &mut *guard;
        *next += 1;
        lines.push_back(LogLine {
            seq: *next,
            at: folio_protocol::format_at(&chrono::Utc::now()),
            level,
            message,
        });
        if lines.len() > CAPACITY {
            lines.pop_front();
        }
    }

    /// Records an informational line.
    pub fn info(&self, message: String) {
        tracing::info!("{message}");
        self.push(LogLevel::Info, message);
    }

    /// Records a warning.
    pub fn warn(&self, message: String) {
        tracing::warn!("{message}");
        self.push(LogLevel::Warn, message);
    }

    /// Records an error.
    pub fn error(&self, message: String) {
        tracing::error!("{message}");
        self.push(LogLevel::Error, message);
    }

    /// Lines with `seq > since`, oldest first.
    pub fn since(&self, since: u64) -> Vec<LogLine> {
        let guard = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        guard.1.iter().filter(|l| l.seq > since).cloned().collect()
    }
}
