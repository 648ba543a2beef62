//! The slot log of one schedule: `<state-root>/schedules/<name>.ndjson`, one record per line.
//! A slot is claimed here, durably, before its task session starts; what the log holds after a
//! crash decides what the next process does (see [`SlotLog::open`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use folio_protocol::{SlotOutcome, SlotOutcomeKind};
use serde::{Deserialize, Serialize};

/// Why a schedule's slot log could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SlotLogError {
    /// A slot log could not be read or written.
    #[error("{what} the slot log {}: {err} (check the state root's permissions and free space)", .path.display())]
    Io {
        /// The slot log.
        path: PathBuf,
        /// What was being done.
        what: String,
        /// The I/O error.
        err: String,
    },
    /// A slot log line is not a record.
    #[error("the slot log {} is corrupt at line {line}: {err} (move the file aside to start the schedule afresh)", .path.display())]
    Corrupt {
        /// The slot log.
        path: PathBuf,
        /// The 1-based line.
        line: usize,
        /// Why it does not parse.
        err: String,
    },
}

/// Why a slot was skipped because the previous run was still going.
pub const OVERLAP_REASON: &str = "overlap: the previous run was still going";
/// Why a missed slot was skipped at start.
pub const CLAIMED_ELSEWHERE: &str =
    "claimed by another server sharing the session store, which fired it";
/// Why a slot missed while no server ran was skipped.
pub const MISSED_REASON: &str = "missed: no server ran at the slot (catch_up policy)";
/// Why a claimed slot was recorded as abandoned.
pub const ABANDONED_REASON: &str =
    "the server stopped after claiming the slot, before its session was recorded; not run again";

/// One line of the slot log (`schedules/<name>.ndjson`), tagged by `type`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SlotRecord {
    /// The scheduler first saw the schedule: slots before `at` are not its to run.
    Opened {
        /// When it first saw the schedule.
        at: DateTime<Utc>,
    },
    /// The slot is taken; its session starts next. Synced before the session starts.
    Claimed {
        /// The slot.
        slot: DateTime<Utc>,
        /// Whether it is a manual run (`folio schedule run`) rather than a cron slot.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        manual: bool,
    },
    /// The claimed slot's task session started.
    Started {
        /// The slot.
        slot: DateTime<Utc>,
        /// The task session it started.
        #[serde(rename = "sessionId")]
        session_id: String,
    },
    /// Starting the claimed slot's session failed.
    Failed {
        /// The slot.
        slot: DateTime<Utc>,
        /// Why the session did not start.
        reason: String,
    },
    /// The slot waits for the running session (`overlap = "buffer_one"`). Synced.
    Buffered {
        /// The slot.
        slot: DateTime<Utc>,
    },
    /// The slot did not fire, by policy.
    Skipped {
        /// The slot.
        slot: DateTime<Utc>,
        /// The policy that skipped it.
        reason: String,
    },
    /// `count` consecutive slots from `first` to `last` did not fire, by policy.
    SkippedRange {
        /// The first slot skipped.
        first: DateTime<Utc>,
        /// The last slot skipped.
        last: DateTime<Utc>,
        /// How many slots were skipped.
        count: usize,
        /// The policy that skipped them.
        reason: String,
    },
    /// The slot was claimed and the process died before recording its session.
    Abandoned {
        /// The slot.
        slot: DateTime<Utc>,
    },
}

/// What the log says when a scheduler opens it.
#[derive(Debug, Clone, Default)]
pub struct Replayed {
    /// The latest cron slot decided (claimed, buffered or skipped), or the `opened` instant.
    pub cursor: Option<DateTime<Utc>>,
    /// A buffered slot that was neither claimed nor skipped: it still has to run.
    pub buffered: Option<DateTime<Utc>>,
    /// The last slot's fate.
    pub last: Option<SlotOutcome>,
}

/// The append-only slot log of one schedule.
#[derive(Debug)]
pub struct SlotLog {
    path: PathBuf,
    file: std::fs::File,
}

impl SlotLog {
    /// Opens (or creates) the log of `name` under `dir`; a line torn by a crash is cut off, and a
    /// claim without its session is recorded as abandoned.
    pub fn open(dir: &Path, name: &str) -> Result<(SlotLog, Replayed), SlotLogError> {
        let path = log_path(dir, name);
        let io = |what: &str, err: std::io::Error| SlotLogError::Io {
            path: path.clone(),
            what: what.to_string(),
            err: err.to_string(),
        };
        std::fs::create_dir_all(dir).map_err(|e| io("cannot create the directory of", e))?;
        let text = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(err) => return Err(io("cannot read", err)),
        };
        let whole = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| io("cannot open", e))?;
        if whole < text.len() {
            file.set_len(whole as u64)
                .map_err(|e| io("cannot cut the torn last line of", e))?;
        }
        let records = parse_records(&path, &text)?;
        let mut log = SlotLog { path, file };
        let mut replayed = replay(&records);
        if let Some(slot) = unfinished_claim(&records) {
            let abandoned = SlotRecord::Abandoned { slot };
            log.append(&abandoned, true)?;
            replayed.last = outcome(&abandoned);
        }
        Ok((log, replayed))
    }

    /// Appends `record`; `durable` syncs it to disk before returning.
    pub fn append(&mut self, record: &SlotRecord, durable: bool) -> Result<(), SlotLogError> {
        write_record(&mut self.file, &self.path, record, durable)
    }
}

/// The slot log of schedule `name` under `dir`: `<dir>/<name>.ndjson`.
pub fn log_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.ndjson"))
}

/// The directory of the slot logs: `<state-root>/schedules`.
pub fn slots_dir(state: &crate::StateRoot) -> PathBuf {
    state.path().join("schedules")
}

/// Appends `record` to the slot log at `path` (created, with its directory, when missing) and
/// syncs it, and the directory's entry of a new log, before returning.
pub fn append_record(path: &Path, record: &SlotRecord) -> Result<(), SlotLogError> {
    let io = |what: &str, err: std::io::Error| SlotLogError::Io {
        path: path.to_path_buf(),
        what: what.to_string(),
        err: err.to_string(),
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| io("cannot create the directory of", e))?;
    let new = !path.exists();
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| io("cannot open", e))?;
    write_record(&mut file, path, record, true)?;
    if new {
        std::fs::File::open(dir)
            .and_then(|dir| dir.sync_all())
            .map_err(|e| io("cannot sync the directory of", e))?;
    }
    Ok(())
}

/// Writes `record` as one line to `file` (the slot log at `path`); `durable` syncs it.
fn write_record(
    file: &mut std::fs::File,
    path: &Path,
    record: &SlotRecord,
    durable: bool,
) -> Result<(), SlotLogError> {
    let mut line = serde_json::to_vec(record).map_err(|err| SlotLogError::Io {
        path: path.to_path_buf(),
        what: "cannot encode a record for".into(),
        err: err.to_string(),
    })?;
    line.push(b'\n');
    let io = |err: std::io::Error| SlotLogError::Io {
        path: path.to_path_buf(),
        what: "cannot append to".into(),
        err: err.to_string(),
    };
    file.write_all(&line).map_err(io)?;
    if durable {
        file.sync_data().map_err(io)?;
    }
    Ok(())
}

/// Reads a slot log's records (a last line still being written is left out).
pub fn read_records(path: &Path) -> Result<Vec<SlotRecord>, SlotLogError> {
    let text = match std::fs::read(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => {
            return Err(SlotLogError::Io {
                path: path.to_path_buf(),
                what: "cannot read".into(),
                err: err.to_string(),
            });
        }
    };
    parse_records(path, &text)
}

/// The records of the whole lines of `text`.
fn parse_records(path: &Path, text: &[u8]) -> Result<Vec<SlotRecord>, SlotLogError> {
    let whole = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    text[..whole]
        .split(|b| *b == b'\n')
        .enumerate()
        .filter(|(_, line)| !line.is_empty())
        .map(|(number, line)| {
            serde_json::from_slice(line).map_err(|err| SlotLogError::Corrupt {
                path: path.to_path_buf(),
                line: number + 1,
                err: err.to_string(),
            })
        })
        .collect()
}

/// The cursor, pending buffer and last outcome the records add up to.
pub fn replay(records: &[SlotRecord]) -> Replayed {
    let mut replayed = Replayed::default();
    let advance = |cursor: &mut Option<DateTime<Utc>>, at: DateTime<Utc>| {
        *cursor = Some(cursor.map_or(at, |c| c.max(at)));
    };
    for record in records {
        match record {
            SlotRecord::Opened { at } => advance(&mut replayed.cursor, *at),
            SlotRecord::Claimed { slot, manual } => {
                if !manual {
                    advance(&mut replayed.cursor, *slot);
                }
                if replayed.buffered == Some(*slot) {
                    replayed.buffered = None;
                }
            }
            SlotRecord::Buffered { slot } => {
                advance(&mut replayed.cursor, *slot);
                replayed.buffered = Some(*slot);
            }
            SlotRecord::Skipped { slot, .. } => {
                advance(&mut replayed.cursor, *slot);
                if replayed.buffered == Some(*slot) {
                    replayed.buffered = None;
                }
            }
            SlotRecord::SkippedRange { first, last, .. } => {
                advance(&mut replayed.cursor, *last);
                if replayed
                    .buffered
                    .is_some_and(|b| (*first..=*last).contains(&b))
                {
                    replayed.buffered = None;
                }
            }
            SlotRecord::Started { .. }
            | SlotRecord::Failed { .. }
            | SlotRecord::Abandoned { .. } => {}
        }
        if let Some(outcome) = outcome(record) {
            replayed.last = Some(outcome);
        }
    }
    replayed
}

/// The last claim that has no started, failed or abandoned record after it.
fn unfinished_claim(records: &[SlotRecord]) -> Option<DateTime<Utc>> {
    let mut open: Vec<DateTime<Utc>> = Vec::new();
    for record in records {
        match record {
            SlotRecord::Claimed { slot, .. } => open.push(*slot),
            SlotRecord::Started { slot, .. }
            | SlotRecord::Failed { slot, .. }
            | SlotRecord::Abandoned { slot } => open.retain(|s| s != slot),
            _ => {}
        }
    }
    open.pop()
}

/// The outcome a record shows as a slot's fate, for records that end a slot.
pub fn outcome(record: &SlotRecord) -> Option<SlotOutcome> {
    let (slot, outcome, session_id, reason) = match record {
        SlotRecord::Started { slot, session_id } => (
            *slot,
            SlotOutcomeKind::Fired,
            Some(session_id.clone()),
            None,
        ),
        SlotRecord::Failed { slot, reason } => {
            (*slot, SlotOutcomeKind::Failed, None, Some(reason.clone()))
        }
        SlotRecord::Skipped { slot, reason } => {
            (*slot, SlotOutcomeKind::Skipped, None, Some(reason.clone()))
        }
        SlotRecord::SkippedRange { last, reason, .. } => {
            (*last, SlotOutcomeKind::Skipped, None, Some(reason.clone()))
        }
        SlotRecord::Abandoned { slot } => (
            *slot,
            SlotOutcomeKind::Abandoned,
            None,
            Some(ABANDONED_REASON.to_string()),
        ),
        SlotRecord::Opened { .. } | SlotRecord::Claimed { .. } | SlotRecord::Buffered { .. } => {
            return None;
        }
    };
    Some(SlotOutcome {
        slot,
        outcome,
        session_id,
        reason,
    })
}
