//! What discovery reports: [`Diagnostic`]s, each an error or a warning about one file.

use std::fmt;

use serde::Serialize;

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Discovery fails; `validate` exits 1; `run`/`serve` refuse to start.
    Error,
    /// Worth fixing; the agent still runs.
    Warning,
}

/// One finding of discovery, about one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// The file, relative to the project directory (`agent/agent.toml`).
    pub file: String,
    /// 1-based line, where known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// What is wrong and what to do, in one line.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let severity = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        match self.line {
            Some(line) => write!(f, "{severity}: {}:{line}: {}", self.file, self.message),
            None => write!(f, "{severity}: {}: {}", self.file, self.message),
        }
    }
}
