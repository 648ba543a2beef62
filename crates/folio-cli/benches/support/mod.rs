//! What the harness benchmarks share: an event sink writing a real NDJSON log, and a turn on an
//! authored (rooted) tree.

use std::path::Path;
use std::sync::Arc;

use folio_agent::tools::{ScratchMode, TodoList};
use folio_agent::{EventSink, SinkError, Turn};
use folio_fs::FileSystem;
use folio_protocol::{Event, EventBody};
use folio_store_disk::EventLog;
use tokio_util::sync::CancellationToken;

/// Appends every event to a real NDJSON `EventLog` and fsyncs it at turn boundaries.
pub struct LogSink(pub EventLog);

#[async_trait::async_trait]
impl EventSink for LogSink {
    async fn emit(&self, turn_id: Option<&str>, body: EventBody) -> Result<Event, SinkError> {
        self.0.append(turn_id, body).map_err(SinkError::new)
    }

    async fn checkpoint(&self) -> Result<(), SinkError> {
        self.0.sync().map_err(SinkError::new)
    }
}

/// A turn of session `session_id` over `fs` (a rooted tree), with the session's `events`.
pub fn rooted_turn(
    session_id: &str,
    turn_id: &str,
    events: Vec<Event>,
    fs: Arc<dyn FileSystem>,
    workspace: &Path,
) -> Turn {
    Turn {
        session_id: session_id.to_string(),
        turn_id: turn_id.to_string(),
        events,
        fs,
        workspace: workspace.to_path_buf(),
        scratch: ScratchMode::Rooted,
        prepare: None,
        cancel: CancellationToken::new(),
        todos: TodoList::default(),
        context: Default::default(),
        trace: Default::default(),
        host: None,
    }
}
