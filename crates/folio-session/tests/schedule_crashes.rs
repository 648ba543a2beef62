//! 10,000 simulated slots of a one-minute schedule with random crashes (mid-slot, before and
//! after the session started) and restarts after random downtime: every slot is fired exactly
//! once or recorded as skipped by policy, and no slot's session starts twice.

mod schedule_support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use chrono::{DateTime, Duration, Utc};
use folio_project::{CatchUp, Overlap};
use folio_session::StateRoot;
use folio_session::schedule::{Clock, ManualClock, Scheduler, SlotRecord};
use futures::FutureExt;
use proptest::prelude::*;
use schedule_support::*;

const SLOTS: usize = 10_000;

/// What happens at one simulated minute.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// The minute passes with one tick.
    Tick,
    /// The running sessions end, then a tick.
    FinishThenTick,
    /// The process dies inside the tick, after claiming a slot, before starting its session.
    CrashBeforeStart,
    /// The process dies inside the tick, after the session started, before recording it.
    CrashAfterStart,
    /// The process stops for this many minutes, then starts again.
    Restart(u8),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        80 => Just(Step::Tick),
        17 => Just(Step::FinishThenTick),
        1 => Just(Step::CrashBeforeStart),
        1 => Just(Step::CrashAfterStart),
        1 => (0u8..5).prop_map(Step::Restart),
    ]
}

fn policies() -> impl Strategy<Value = (Overlap, CatchUp)> {
    (
        prop_oneof![
            Just(Overlap::Skip),
            Just(Overlap::BufferOne),
            Just(Overlap::Allow)
        ],
        prop_oneof![
            Just(CatchUp::Latest),
            Just(CatchUp::None),
            Just(CatchUp::All { limit: 2 })
        ],
    )
}

/// How each slot ended, from the slot log: fired (claimed, started or abandoned) or skipped.
fn fates(state: &std::path::Path) -> BTreeMap<DateTime<Utc>, Vec<&'static str>> {
    let mut fates: BTreeMap<DateTime<Utc>, Vec<&'static str>> = BTreeMap::new();
    for record in records(state, "every") {
        match record {
            SlotRecord::Claimed { slot, .. } => fates.entry(slot).or_default().push("fired"),
            SlotRecord::Skipped { slot, .. } => fates.entry(slot).or_default().push("skipped"),
            SlotRecord::SkippedRange {
                first, last, count, ..
            } => {
                let minutes = (last - first).num_minutes() as usize + 1;
                assert_eq!(count, minutes, "a range counts its slots: {first}..{last}");
                for minute in 0..minutes {
                    fates
                        .entry(first + Duration::minutes(minute as i64))
                        .or_default()
                        .push("skipped");
                }
            }
            _ => {}
        }
    }
    fates
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_slot_fires_once_or_is_recorded_skipped(
        (overlap, catch_up) in policies(),
        steps in prop::collection::vec(step(), SLOTS),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let state = StateRoot::new(dir.path());
        let start = at("2027-03-27T20:00:00Z");
        let clock = ManualClock::new(start);
        let launcher = Arc::new(FakeLauncher::default());
        let every = schedule("* * * * *", "Europe/Berlin", overlap, catch_up);
        let open = || {
            Scheduler::open(&state, std::slice::from_ref(&every), launcher.clone(), Arc::new(clock.clone())).unwrap()
        };
        let mut scheduler = open();
        for step in steps {
            clock.advance(Duration::minutes(1));
            match step {
                Step::Tick => scheduler.tick().now_or_never().unwrap().unwrap(),
                Step::FinishThenTick => {
                    launcher.finish_all();
                    scheduler.tick().now_or_never().unwrap().unwrap();
                }
                Step::CrashBeforeStart | Step::CrashAfterStart => {
                    let hang = match step {
                        Step::CrashBeforeStart => HANG_BEFORE_START,
                        _ => HANG_AFTER_START,
                    };
                    launcher.next.store(hang, Ordering::SeqCst);
                    // A tick that fires nothing completes; one that fires dies mid-slot.
                    if scheduler.tick().now_or_never().is_none() {
                        launcher.finish_all();
                        scheduler = open();
                    }
                    launcher.next.store(NORMAL, Ordering::SeqCst);
                }
                Step::Restart(minutes) => {
                    drop(scheduler);
                    // Recovery records the turns of the dead process as failed.
                    launcher.finish_all();
                    clock.advance(Duration::minutes(i64::from(minutes)));
                    scheduler = open();
                    scheduler.tick().now_or_never().unwrap().unwrap();
                }
            }
        }
        // Runs end and the last buffered slot gets its turn.
        launcher.finish_all();
        scheduler.tick().now_or_never().unwrap().unwrap();
        let end = clock.now();

        let fates = fates(dir.path());
        let mut slot = start + Duration::minutes(1);
        let mut decided = 0;
        while slot <= end {
            let fate = fates.get(&slot).cloned().unwrap_or_default();
            prop_assert!(
                fate == ["fired"] || fate == ["skipped"],
                "slot {slot} ({overlap:?}, {catch_up:?}): {fate:?}"
            );
            decided += 1;
            slot += Duration::minutes(1);
        }
        prop_assert!(decided >= SLOTS);
        prop_assert_eq!(fates.keys().filter(|s| **s > end || **s <= start).count(), 0);
        let started = launcher.started.lock().unwrap().clone();
        let mut unique: Vec<_> = started.iter().map(|(_, s)| *s).collect();
        unique.sort();
        unique.dedup();
        prop_assert_eq!(unique.len(), started.len(), "a slot's session started twice");
        for (_, slot) in &started {
            prop_assert_eq!(fates.get(slot).map(Vec::as_slice), Some(&["fired"][..]));
        }
    }
}
