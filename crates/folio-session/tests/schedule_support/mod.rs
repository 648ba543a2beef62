//! What the schedule tests share: a launcher that records starts (and can hang, to crash a
//! tick mid-slot), schedules built in code, and the slot log read back as short lines.

#![allow(dead_code)]

use std::collections::HashSet;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, Ordering};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use folio_project::{Cadence, CatchUp, Overlap, ScheduleSummary};
use folio_session::ManagerError;
use folio_session::schedule::{Launcher, SlotRecord};

/// A start that completes.
pub const NORMAL: u8 = 0;
/// A start that never completes and starts nothing (the process dies after the claim).
pub const HANG_BEFORE_START: u8 = 1;
/// A start that starts the session and then never completes (death before it is recorded).
pub const HANG_AFTER_START: u8 = 2;

/// Starts fake sessions: ids are `<name>@<slot>`.
#[derive(Default)]
pub struct FakeLauncher {
    /// Every session started, in order: (schedule, slot).
    pub started: Mutex<Vec<(String, DateTime<Utc>)>>,
    running: Mutex<HashSet<String>>,
    /// [`NORMAL`], [`HANG_BEFORE_START`] or [`HANG_AFTER_START`], for the next start only.
    pub next: AtomicU8,
}

impl FakeLauncher {
    /// Ends every running session.
    pub fn finish_all(&self) {
        self.running.lock().unwrap().clear();
    }

    /// The slots started, as `HH:MM` in UTC.
    pub fn started_at(&self) -> Vec<String> {
        self.started
            .lock()
            .unwrap()
            .iter()
            .map(|(_, slot)| slot.format("%H:%M").to_string())
            .collect()
    }
}

#[async_trait]
impl Launcher for FakeLauncher {
    async fn start(
        &self,
        schedule: &ScheduleSummary,
        slot: DateTime<Utc>,
    ) -> Result<String, ManagerError> {
        let mode = self.next.swap(NORMAL, Ordering::SeqCst);
        if mode == HANG_BEFORE_START {
            std::future::pending::<()>().await;
        }
        let id = format!("{}@{}", schedule.name, slot.to_rfc3339());
        self.started
            .lock()
            .unwrap()
            .push((schedule.name.clone(), slot));
        self.running.lock().unwrap().insert(id.clone());
        if mode == HANG_AFTER_START {
            std::future::pending::<()>().await;
        }
        Ok(id)
    }

    async fn running(&self, _name: &str, session_id: &str) -> bool {
        self.running.lock().unwrap().contains(session_id)
    }
}

/// A schedule `every` with `cron` in `zone` and the given policies.
pub fn schedule(cron: &str, zone: &str, overlap: Overlap, catch_up: CatchUp) -> ScheduleSummary {
    ScheduleSummary {
        name: "every".into(),
        cadence: Cadence::parse(cron, zone).unwrap(),
        overlap,
        catch_up,
        jitter_secs: 0,
        enabled: true,
        prompt: "Run.".into(),
    }
}

/// An instant from RFC 3339.
pub fn at(text: &str) -> DateTime<Utc> {
    text.parse().unwrap()
}

/// The records of the slot log of `name` (none when there is no log yet).
pub fn records(state: &Path, name: &str) -> Vec<SlotRecord> {
    let text = std::fs::read_to_string(state.join("schedules").join(format!("{name}.ndjson")))
        .unwrap_or_default();
    text.lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|err| panic!("not a slot record ({err}): {line}"))
        })
        .collect()
}

/// The slot log of `name` as `type HH:MM` lines (ranges as `skipped_range HH:MM-HH:MM xN`),
/// without the `opened` line.
pub fn log_lines(state: &Path, name: &str) -> Vec<String> {
    let hm = |at: &DateTime<Utc>| at.format("%H:%M").to_string();
    records(state, name)
        .iter()
        .filter_map(|record| match record {
            SlotRecord::Opened { .. } => None,
            SlotRecord::SkippedRange {
                first, last, count, ..
            } => Some(format!("skipped_range {}-{} x{count}", hm(first), hm(last))),
            SlotRecord::Claimed { slot, .. } => Some(format!("claimed {}", hm(slot))),
            SlotRecord::Started { slot, .. } => Some(format!("started {}", hm(slot))),
            SlotRecord::Failed { slot, .. } => Some(format!("failed {}", hm(slot))),
            SlotRecord::Buffered { slot } => Some(format!("buffered {}", hm(slot))),
            SlotRecord::Skipped { slot, .. } => Some(format!("skipped {}", hm(slot))),
            SlotRecord::Abandoned { slot } => Some(format!("abandoned {}", hm(slot))),
        })
        .collect()
}
