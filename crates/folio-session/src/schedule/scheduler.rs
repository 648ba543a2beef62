//! The [`Scheduler`]: one pass ([`Scheduler::tick`]) decides every slot that is due at the
//! clock's time; [`Scheduler::run`] repeats it, sleeping on the clock until the next slot.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use folio_project::{Overlap, ScheduleSummary};
use folio_protocol::{NextFire, ScheduleStatus, SlotOutcome, SlotOutcomeKind};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::ScheduleError;
use super::launcher::Launcher;
use crate::clock::Clock;
use crate::state::StateRoot;
use folio_store_disk::slots::{
    CLAIMED_ELSEWHERE, MISSED_REASON, OVERLAP_REASON, SlotLog, SlotRecord, log_path, outcome,
    read_records, replay, slots_dir,
};

/// How often a schedule with a running or buffered slot looks again whether its run ended.
const POLL: Duration = Duration::seconds(1);

/// How many upcoming slots a status shows.
const UPCOMING: usize = 5;

/// Fires the slots of an agent's schedules.
#[derive(Clone)]
pub struct Scheduler {
    shared: Arc<Shared>,
}

struct Shared {
    /// Where the slot logs live.
    dir: PathBuf,
    clock: Arc<dyn Clock>,
    launcher: Arc<dyn Launcher>,
    tracks: Mutex<BTreeMap<String, Track>>,
}

/// One schedule's state: its log, the latest slot decided and its running sessions.
struct Track {
    schedule: ScheduleSummary,
    log: SlotLog,
    /// The latest cron slot decided; later slots are still to come.
    cursor: DateTime<Utc>,
    /// Sessions this process started that had not ended at the last look.
    running: Vec<String>,
    /// A slot waiting for the running session (`buffer_one`).
    buffered: Option<DateTime<Utc>>,
    /// Whether the slots missed before this process started were dealt with.
    caught_up: bool,
    last: Option<SlotOutcome>,
}

impl Scheduler {
    /// Opens the slot logs of `schedules` under `state`: claims left unfinished by a crash are
    /// recorded as abandoned, and a schedule seen for the first time starts at the clock's time.
    pub fn open(
        state: &StateRoot,
        schedules: &[ScheduleSummary],
        launcher: Arc<dyn Launcher>,
        clock: Arc<dyn Clock>,
    ) -> Result<Scheduler, ScheduleError> {
        let dir = slots_dir(state);
        let now = clock.now();
        let mut tracks = BTreeMap::new();
        for schedule in schedules {
            tracks.insert(schedule.name.clone(), Track::open(&dir, schedule, now)?);
        }
        Ok(Scheduler {
            shared: Arc::new(Shared {
                dir,
                clock,
                launcher,
                tracks: Mutex::new(tracks),
            }),
        })
    }

    /// Replaces the schedules (`folio dev` reloaded the agent): removed ones stop, new ones
    /// start at the clock's time, and one whose cron, zone or `enabled` changed starts afresh
    /// from now (slots of the new cadence that already passed are not run).
    pub async fn reload(&self, schedules: &[ScheduleSummary]) -> Result<(), ScheduleError> {
        let now = self.shared.clock.now();
        let mut tracks = self.shared.tracks.lock().await;
        tracks.retain(|name, _| schedules.iter().any(|s| s.name == *name));
        for schedule in schedules {
            match tracks.get_mut(&schedule.name) {
                Some(track) => {
                    let restarts = track.schedule.cadence != schedule.cadence
                        || (schedule.enabled && !track.schedule.enabled);
                    track.schedule = schedule.clone();
                    if restarts && now > track.cursor {
                        track.log.append(&SlotRecord::Opened { at: now }, false)?;
                        track.cursor = now;
                    }
                }
                None => {
                    let track = Track::open(&self.shared.dir, schedule, now)?;
                    tracks.insert(schedule.name.clone(), track);
                }
            }
        }
        Ok(())
    }

    /// Decides every slot due at the clock's time, schedule by schedule; the first error is
    /// returned after every schedule had its turn.
    pub async fn tick(&self) -> Result<(), ScheduleError> {
        let now = self.shared.clock.now();
        let launcher = self.shared.launcher.as_ref();
        let mut tracks = self.shared.tracks.lock().await;
        let mut first_error = None;
        for track in tracks.values_mut() {
            if let Err(err) = track.tick(now, launcher).await {
                first_error.get_or_insert(err);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// When the next tick has something to do: the next slot (with its jitter), or soon when a
    /// buffered slot waits for a run to end. `None` when nothing will ever be due.
    pub async fn next_wake(&self) -> Option<DateTime<Utc>> {
        let now = self.shared.clock.now();
        let tracks = self.shared.tracks.lock().await;
        tracks
            .values()
            .filter(|t| t.schedule.enabled)
            .filter_map(|t| {
                let next = t.next_due(t.cursor);
                match t.buffered {
                    Some(_) => Some(next.map_or(now + POLL, |n| n.min(now + POLL))),
                    None => next,
                }
            })
            .min()
    }

    /// Ticks until `shutdown`, sleeping on the clock between slots; errors are logged and the
    /// loop goes on (a slot log that cannot be written is retried at the next wake).
    pub async fn run(self, shutdown: CancellationToken) {
        loop {
            if let Err(err) = self.tick().await {
                tracing::error!("scheduler: {err}");
            }
            let now = self.shared.clock.now();
            let wake = self
                .next_wake()
                .await
                .unwrap_or(now + Duration::hours(1))
                .max(now);
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = self.shared.clock.sleep_until(wake) => {}
            }
        }
    }

    /// Fires schedule `name` now, outside its cadence (`folio schedule run`), and says what
    /// became of it. The run is recorded as a manual slot at the clock's time.
    pub async fn fire_now(&self, name: &str) -> Result<SlotOutcome, ScheduleError> {
        let now = self.shared.clock.now();
        let mut tracks = self.shared.tracks.lock().await;
        let track = tracks
            .get_mut(name)
            .ok_or_else(|| ScheduleError::Unknown(name.to_string()))?;
        track.fire(now, true, self.shared.launcher.as_ref()).await
    }

    /// Every schedule with its next slots and last outcome.
    pub async fn statuses(&self) -> Vec<ScheduleStatus> {
        let now = self.shared.clock.now();
        let tracks = self.shared.tracks.lock().await;
        tracks
            .values()
            .map(|t| status(&t.schedule, t.last.clone(), now))
            .collect()
    }
}

/// The statuses of `schedules` as their slot logs under `state` say, without taking the state
/// root (`folio schedule list` while a server runs).
pub fn statuses_on_disk(
    state: &StateRoot,
    schedules: &[ScheduleSummary],
    now: DateTime<Utc>,
) -> Result<Vec<ScheduleStatus>, ScheduleError> {
    let dir = slots_dir(state);
    schedules
        .iter()
        .map(|schedule| {
            let records = read_records(&log_path(&dir, &schedule.name))?;
            Ok(status(schedule, replay(&records).last, now))
        })
        .collect()
}

/// A schedule's status at `now`.
fn status(
    schedule: &ScheduleSummary,
    last: Option<SlotOutcome>,
    now: DateTime<Utc>,
) -> ScheduleStatus {
    let zone = schedule.cadence.timezone();
    let next = if schedule.enabled {
        schedule
            .cadence
            .upcoming(now, UPCOMING)
            .into_iter()
            .map(|utc| NextFire {
                utc,
                local: utc
                    .with_timezone(&zone)
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            })
            .collect()
    } else {
        Vec::new()
    };
    ScheduleStatus {
        name: schedule.name.clone(),
        cron: schedule.cadence.expression().to_string(),
        timezone: zone.name().to_string(),
        overlap: schedule.overlap.as_str().to_string(),
        catch_up: schedule.catch_up.as_str().to_string(),
        jitter_secs: schedule.jitter_secs,
        enabled: schedule.enabled,
        next,
        last,
    }
}

/// How late `slot` of schedule `name` fires: a fixed amount below `jitter_secs`, the same in
/// every process (FNV-1a of the name and the slot).
fn jitter(name: &str, slot: DateTime<Utc>, jitter_secs: u32) -> Duration {
    if jitter_secs == 0 {
        return Duration::zero();
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in name.bytes().chain(slot.timestamp().to_le_bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    Duration::seconds((hash % u64::from(jitter_secs)) as i64)
}

impl Track {
    /// Opens the slot log of `schedule`; a schedule seen for the first time starts at `now`.
    fn open(
        dir: &Path,
        schedule: &ScheduleSummary,
        now: DateTime<Utc>,
    ) -> Result<Track, ScheduleError> {
        let (mut log, replayed) = SlotLog::open(dir, &schedule.name)?;
        let cursor = match replayed.cursor {
            Some(cursor) => cursor,
            None => {
                log.append(&SlotRecord::Opened { at: now }, false)?;
                now
            }
        };
        Ok(Track {
            schedule: schedule.clone(),
            log,
            cursor,
            running: Vec::new(),
            buffered: replayed.buffered,
            caught_up: false,
            last: replayed.last,
        })
    }

    /// The instant the first slot after `after` is due (its jitter added).
    fn next_due(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let slot = self.schedule.cadence.next_after(after)?;
        Some(slot + jitter(&self.schedule.name, slot, self.schedule.jitter_secs))
    }

    /// The slots after the cursor that are due at `now`, in order.
    fn due(&self, now: DateTime<Utc>) -> Vec<DateTime<Utc>> {
        let mut slots = Vec::new();
        let mut cursor = self.cursor;
        while let Some(slot) = self.schedule.cadence.next_after(cursor) {
            if slot + jitter(&self.schedule.name, slot, self.schedule.jitter_secs) > now {
                break;
            }
            slots.push(slot);
            cursor = slot;
        }
        slots
    }

    async fn tick(
        &mut self,
        now: DateTime<Utc>,
        launcher: &dyn Launcher,
    ) -> Result<(), ScheduleError> {
        let name = self.schedule.name.clone();
        let mut running = Vec::with_capacity(self.running.len());
        for id in std::mem::take(&mut self.running) {
            if launcher.running(&name, &id).await {
                running.push(id);
            }
        }
        self.running = running;
        if !self.schedule.enabled {
            return Ok(());
        }
        let due = self.due(now);
        if !self.caught_up {
            self.caught_up = true;
            return self.catch_up(due, launcher).await;
        }
        if let Some(slot) = self.buffered.filter(|_| self.running.is_empty()) {
            self.buffered = None;
            self.fire(slot, false, launcher).await?;
        }
        for slot in due {
            self.decide(slot, launcher).await?;
        }
        Ok(())
    }

    /// The first tick of a process: the slots missed while no server ran (and a slot left
    /// buffered) follow the `catch_up` policy; the ones it runs start together.
    async fn catch_up(
        &mut self,
        due: Vec<DateTime<Utc>>,
        launcher: &dyn Launcher,
    ) -> Result<(), ScheduleError> {
        let buffered = self.buffered.take();
        let missed = buffered.iter().count() + due.len();
        let runs = self.schedule.catch_up.runs(missed);
        let mut skip = missed - runs;
        if let Some(slot) = buffered {
            if skip > 0 {
                self.skip(SlotRecord::Skipped {
                    slot,
                    reason: MISSED_REASON.into(),
                })?;
                skip -= 1;
            } else {
                self.fire(slot, false, launcher).await?;
            }
        }
        let (skipped, run) = due.split_at(skip);
        match skipped {
            [] => {}
            [slot] => self.skip(SlotRecord::Skipped {
                slot: *slot,
                reason: MISSED_REASON.into(),
            })?,
            [first, .., last] => self.skip(SlotRecord::SkippedRange {
                first: *first,
                last: *last,
                count: skipped.len(),
                reason: MISSED_REASON.into(),
            })?,
        }
        for slot in run {
            self.fire(*slot, false, launcher).await?;
        }
        Ok(())
    }

    /// A due slot in normal running: fire, or skip or buffer it while the previous run goes on.
    async fn decide(
        &mut self,
        slot: DateTime<Utc>,
        launcher: &dyn Launcher,
    ) -> Result<(), ScheduleError> {
        if self.running.is_empty() || self.schedule.overlap == Overlap::Allow {
            return self.fire(slot, false, launcher).await.map(drop);
        }
        match (self.schedule.overlap, self.buffered) {
            (Overlap::BufferOne, None) => {
                self.log.append(&SlotRecord::Buffered { slot }, true)?;
                self.buffered = Some(slot);
                self.cursor = slot;
                Ok(())
            }
            _ => self.skip(SlotRecord::Skipped {
                slot,
                reason: OVERLAP_REASON.into(),
            }),
        }
    }

    /// Records a skip (not synced: a lost skip only lets the slot be decided again).
    fn skip(&mut self, record: SlotRecord) -> Result<(), ScheduleError> {
        self.log.append(&record, false)?;
        if let SlotRecord::Skipped { slot, .. } | SlotRecord::SkippedRange { last: slot, .. } =
            &record
        {
            self.cursor = self.cursor.max(*slot);
        }
        self.last = outcome(&record);
        Ok(())
    }

    /// Claims `slot` durably, then starts its session and records the session (or the failure).
    async fn fire(
        &mut self,
        slot: DateTime<Utc>,
        manual: bool,
        launcher: &dyn Launcher,
    ) -> Result<SlotOutcome, ScheduleError> {
        // Servers sharing a session store race for each slot: one fires it.
        if !manual
            && !launcher
                .claim(&self.schedule.name, slot)
                .await
                .map_err(ScheduleError::Claim)?
        {
            self.skip(SlotRecord::Skipped {
                slot,
                reason: CLAIMED_ELSEWHERE.into(),
            })?;
            return Ok(self.last.clone().unwrap_or(SlotOutcome {
                slot,
                outcome: SlotOutcomeKind::Skipped,
                session_id: None,
                reason: Some(CLAIMED_ELSEWHERE.into()),
            }));
        }
        self.log
            .append(&SlotRecord::Claimed { slot, manual }, true)?;
        if !manual {
            self.cursor = self.cursor.max(slot);
        }
        let (record, fate) = match launcher.start(&self.schedule, slot).await {
            Ok(session_id) => {
                self.running.push(session_id.clone());
                let fate = SlotOutcome {
                    slot,
                    outcome: SlotOutcomeKind::Fired,
                    session_id: Some(session_id.clone()),
                    reason: None,
                };
                (SlotRecord::Started { slot, session_id }, fate)
            }
            Err(err) => {
                let reason = err.to_string();
                tracing::error!(
                    "schedule {}: slot {slot} did not start: {reason}",
                    self.schedule.name
                );
                let fate = SlotOutcome {
                    slot,
                    outcome: SlotOutcomeKind::Failed,
                    session_id: None,
                    reason: Some(reason.clone()),
                };
                (SlotRecord::Failed { slot, reason }, fate)
            }
        };
        // Not synced: a lost record turns into `abandoned` at the next start, never a rerun.
        self.log.append(&record, false)?;
        self.last = Some(fate.clone());
        Ok(fate)
    }
}
