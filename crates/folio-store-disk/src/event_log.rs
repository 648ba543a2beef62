//! The append-only NDJSON event log of one session: monotonic indexes, one `write` per line,
//! fsync at turn boundaries (through the state root's group commit in `folio serve`), and
//! torn-last-line recovery on load.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use folio_protocol::{Event, EventBody};

use crate::state::{SyncTarget, commit};

/// Why the log could not be read or appended to.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// Host I/O on the log file failed.
    #[error("event log {path}: {source}")]
    Io {
        /// The log file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A line other than the last one does not parse: the file was edited or corrupted.
    #[error(
        "event log {path}: line {line} is not a valid event ({message}); the log is corrupt or not an event log"
    )]
    Corrupt {
        /// The log file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The parse error.
        message: String,
    },
    /// The shared session store refused the append or could not be reached.
    #[error("session store: {0}")]
    Store(#[from] folio_store::StoreError),
}

/// One session's event log, appended by one writer.
#[derive(Debug)]
pub struct EventLog {
    path: PathBuf,
    session_id: String,
    state: Mutex<Writer>,
    /// The same file, handed to the group commit (an fsync needs no writer lock).
    sync_handle: Arc<File>,
}

#[derive(Debug)]
struct Writer {
    file: File,
    next_index: u64,
}

impl EventLog {
    /// Opens (creating when missing) the log at `path`, returning it with its stored events.
    /// A torn last line (a crash mid-append) is truncated away and logged, never served.
    pub fn open(path: &Path, session_id: &str) -> Result<(EventLog, Vec<Event>), LogError> {
        let io = |source| LogError::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(io)?;
        let (events, valid_len) = read_valid(path, &mut file)?;
        let len = file.metadata().map_err(io)?.len();
        if valid_len < len {
            tracing::warn!(
                path = %path.display(),
                dropped_bytes = len - valid_len,
                "dropping a torn last line from the event log"
            );
            file.set_len(valid_len).map_err(io)?;
        }
        file.seek(SeekFrom::End(0)).map_err(io)?;
        let next_index = events.last().map_or(0, |e| e.index + 1);
        let sync_handle = Arc::new(file.try_clone().map_err(io)?);
        Ok((
            EventLog {
                path: path.to_path_buf(),
                session_id: session_id.to_string(),
                state: Mutex::new(Writer { file, next_index }),
                sync_handle,
            },
            events,
        ))
    }

    /// The log file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The index the next append gets.
    pub fn next_index(&self) -> u64 {
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .next_index
    }

    /// Appends one event with the next index; the line is written with a single `write`.
    pub fn append(&self, turn_id: Option<&str>, body: EventBody) -> Result<Event, LogError> {
        self.append_at(turn_id, body, now_millis())
    }

    /// [`EventLog::append`] of an event that happened `at` (whole milliseconds).
    pub fn append_at(
        &self,
        turn_id: Option<&str>,
        body: EventBody,
        at: DateTime<Utc>,
    ) -> Result<Event, LogError> {
        let started = std::time::Instant::now();
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let event = Event {
            index: state.next_index,
            session_id: self.session_id.clone(),
            turn_id: turn_id.map(str::to_string),
            at,
            body,
        };
        let mut line = serde_json::to_vec(&event).map_err(|err| LogError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(err),
        })?;
        line.push(b'\n');
        state.file.write_all(&line).map_err(|source| LogError::Io {
            path: self.path.clone(),
            source,
        })?;
        state.next_index += 1;
        folio_telemetry::metrics::event_log("append", started.elapsed());
        Ok(event)
    }

    /// Flushes the log to stable storage on this thread (turn boundaries outside a server).
    pub fn sync(&self) -> Result<(), LogError> {
        let started = std::time::Instant::now();
        self.sync_handle
            .sync_data()
            .map_err(|source| LogError::Io {
                path: self.path.clone(),
                source,
            })?;
        folio_telemetry::metrics::event_log("fsync", started.elapsed());
        Ok(())
    }

    /// Flushes the log to stable storage through the group commit (off the async workers, in
    /// one round with the other sessions' syncs), together with `others` (what must be durable
    /// with the log's last appends), all requested at once so they are synced concurrently.
    pub async fn commit_with(&self, others: Vec<SyncTarget>) -> Result<(), LogError> {
        let started = std::time::Instant::now();
        let mut targets = vec![SyncTarget::Data(self.sync_handle.clone())];
        targets.extend(others);
        commit(targets).await.map_err(|source| LogError::Io {
            path: self.path.clone(),
            source,
        })?;
        folio_telemetry::metrics::event_log("fsync", started.elapsed());
        Ok(())
    }
}

/// Now, in whole milliseconds: the precision the log stores, so an appended event equals the
/// same event read back (a live session keeps the appended ones in memory).
pub fn now_millis() -> DateTime<Utc> {
    let now = Utc::now();
    DateTime::from_timestamp_millis(now.timestamp_millis()).unwrap_or(now)
}

/// Reads every event of the log at `path` (read-only), skipping a torn last line.
pub fn read_events(path: &Path) -> Result<Vec<Event>, LogError> {
    let mut file = File::open(path).map_err(|source| LogError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(read_valid(path, &mut file)?.0)
}

/// The last complete event of the log at `path`, reading only the file's tail; `None` when
/// the log is missing or holds no complete line.
pub fn last_event(path: &Path) -> Result<Option<Event>, LogError> {
    const CHUNK: u64 = 64 * 1024;
    let io = |source| LogError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(io(err)),
    };
    let mut start = file.metadata().map_err(io)?.len();
    let mut tail: Vec<u8> = Vec::new();
    loop {
        // Bytes after the last newline are a torn append: ignored, as `open` drops them.
        if let Some(end) = tail.iter().rposition(|&b| b == b'\n') {
            let from = tail[..end].iter().rposition(|&b| b == b'\n');
            if from.is_some() || start == 0 {
                let line = &tail[from.map_or(0, |at| at + 1)..end];
                let event: Event = serde_json::from_slice(line).map_err(|err| {
                    io(std::io::Error::other(format!(
                        "the last line is not an event ({err}); the log is corrupt"
                    )))
                })?;
                return Ok(Some(event));
            }
        }
        if start == 0 {
            return Ok(None);
        }
        let step = CHUNK.min(start);
        start -= step;
        let mut chunk = vec![0; step as usize];
        file.seek(SeekFrom::Start(start)).map_err(io)?;
        std::io::Read::read_exact(&mut file, &mut chunk).map_err(io)?;
        chunk.extend_from_slice(&tail);
        tail = chunk;
    }
}

/// Parses complete lines; returns the events and the byte length of the valid prefix.
fn read_valid(path: &Path, file: &mut File) -> Result<(Vec<Event>, u64), LogError> {
    file.seek(SeekFrom::Start(0))
        .map_err(|source| LogError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    let mut reader = BufReader::new(file);
    let mut events = Vec::new();
    let mut valid_len = 0u64;
    let mut line = Vec::new();
    let mut number = 0usize;
    loop {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(|source| LogError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        if read == 0 {
            break;
        }
        number += 1;
        if !line.ends_with(b"\n") {
            // An append is one `write` of the line and its newline: an unterminated last line
            // is a torn append, dropped (and truncated away by `open`).
            break;
        }
        match serde_json::from_slice::<Event>(&line) {
            Ok(event) => {
                events.push(event);
                valid_len += read as u64;
            }
            Err(err) => {
                return Err(LogError::Corrupt {
                    path: path.to_path_buf(),
                    line: number,
                    message: err.to_string(),
                });
            }
        }
    }
    Ok((events, valid_len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use folio_protocol::{MessageCompleted, SessionWaiting};

    #[test]
    fn appends_with_monotonic_indexes_and_drops_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("traces/ses_1.ndjson");
        let (log, events) = EventLog::open(&path, "ses_1").unwrap();
        assert!(events.is_empty());
        log.append(None, EventBody::SessionWaiting(SessionWaiting {}))
            .unwrap();
        let second = log
            .append(
                Some("turn_1"),
                EventBody::MessageCompleted(MessageCompleted { text: "hi".into() }),
            )
            .unwrap();
        assert_eq!(second.index, 1);
        drop(log);
        // A crash mid-append leaves half a line.
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(br#"{"type":"message.app"#).unwrap();
        drop(file);
        assert_eq!(read_events(&path).unwrap().len(), 2);
        let (log, events) = EventLog::open(&path, "ses_1").unwrap();
        assert_eq!(events.len(), 2);
        let third = log
            .append(None, EventBody::SessionWaiting(SessionWaiting {}))
            .unwrap();
        assert_eq!(third.index, 2);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 3);
        assert!(
            text.lines()
                .all(|l| serde_json::from_str::<Event>(l).is_ok())
        );
    }

    #[test]
    fn a_complete_last_line_that_is_not_an_event_is_an_error_not_a_torn_append() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.ndjson");
        std::fs::write(&path, "garbage\n").unwrap();
        let err = read_events(&path).unwrap_err().to_string();
        assert!(err.contains("line 1 is not a valid event"), "{err}");
        assert!(EventLog::open(&path, "s").is_err());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "garbage\n",
            "nothing lost"
        );
    }

    #[test]
    fn last_event_reads_the_tail_and_skips_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.ndjson");
        assert_eq!(last_event(&path).unwrap(), None);
        let (log, _) = EventLog::open(&path, "s").unwrap();
        assert_eq!(last_event(&path).unwrap(), None);
        log.append(None, EventBody::SessionWaiting(SessionWaiting {}))
            .unwrap();
        assert_eq!(last_event(&path).unwrap().map(|e| e.index), Some(0));
        // A line longer than one read chunk.
        let long = "x".repeat(200 * 1024);
        log.append(
            None,
            EventBody::MessageCompleted(MessageCompleted { text: long }),
        )
        .unwrap();
        assert_eq!(last_event(&path).unwrap().map(|e| e.index), Some(1));
        drop(log);
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(br#"{"type":"message.app"#).unwrap();
        drop(file);
        assert_eq!(last_event(&path).unwrap().map(|e| e.index), Some(1));
    }

    #[test]
    fn a_corrupt_middle_line_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.ndjson");
        let (log, _) = EventLog::open(&path, "s").unwrap();
        log.append(None, EventBody::SessionWaiting(SessionWaiting {}))
            .unwrap();
        drop(log);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text = format!("garbage\n{text}");
        std::fs::write(&path, text).unwrap();
        let err = read_events(&path).unwrap_err().to_string();
        assert!(err.contains("line 1 is not a valid event"), "{err}");
    }
}
