//! The NDJSON event log read at recovery: the bytes as a session's log file, read as
//! `folio serve` reads it at start (torn last line dropped) and by its tail.

use std::path::Path;

use folio_store_disk::{EventLog, last_event, read_events};
use tempfile::TempDir;

/// A log file's bytes: read whole, by its last line and by [`EventLog::open`], which must agree.
pub fn event_log(data: &[u8]) {
    DIR.with(|dir| read_log(&dir.path().join("events.ndjson"), data));
}

fn read_log(path: &Path, data: &[u8]) {
    std::fs::write(path, data).expect("write the log");
    let read = read_events(path);
    let last = last_event(path);
    if let Ok(events) = &read {
        let last = last.expect("the last line of a log whose every line reads");
        assert_eq!(
            last.as_ref(),
            events.last(),
            "last_event disagrees with read_events"
        );
    }
    match (EventLog::open(path, "ses_fuzz"), read) {
        (Ok((log, opened)), Ok(events)) => {
            assert_eq!(opened, events, "open disagrees with read_events");
            let next = events.last().map_or(0, |e| e.index + 1);
            assert_eq!(log.next_index(), next);
            let reread = read_events(path).expect("a log just opened reads");
            assert_eq!(reread, events, "open's truncation changed the events");
        }
        (Err(_), Err(_)) => {}
        (opened, read) => panic!(
            "open and read_events disagree: open {:?}, read {:?}",
            opened
                .map(|(_, events)| events.len())
                .map_err(|e| e.to_string()),
            read.map(|events| events.len()).map_err(|e| e.to_string())
        ),
    }
}

thread_local! {
    /// The folder of this thread's log file (removed when the thread ends).
    static DIR: TempDir = tempfile::Builder::new()
        .prefix("folio-fuzz-log")
        .tempdir()
        .expect("create the log folder");
}
