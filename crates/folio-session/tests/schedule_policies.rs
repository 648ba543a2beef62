//! The scheduler over a simulated clock: every overlap and catch-up policy, jitter, a crash
//! between claim and start (recorded as abandoned, never re-run), disabled schedules, the run
//! loop waking on the clock, and the slots fired across daylight-saving changes in Europe/Berlin
//! and America/New_York.

mod schedule_support;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use chrono::Duration;
use folio_project::{CatchUp, Overlap};
use folio_session::StateRoot;
use folio_session::schedule::{Clock, ManualClock, Scheduler};
use futures::FutureExt;
use pretty_assertions::assert_eq;
use schedule_support::*;

struct Rig {
    dir: tempfile::TempDir,
    clock: ManualClock,
    launcher: Arc<FakeLauncher>,
}

impl Rig {
    fn new(start: &str) -> Rig {
        Rig {
            dir: tempfile::tempdir().unwrap(),
            clock: ManualClock::new(at(start)),
            launcher: Arc::new(FakeLauncher::default()),
        }
    }

    fn open(&self, schedule: &folio_project::ScheduleSummary) -> Scheduler {
        Scheduler::open(
            &StateRoot::new(self.dir.path()),
            std::slice::from_ref(schedule),
            self.launcher.clone(),
            Arc::new(self.clock.clone()),
        )
        .unwrap()
    }

    async fn tick_at(&self, scheduler: &Scheduler, time: &str) {
        self.clock.set(at(time));
        scheduler.tick().await.unwrap();
    }

    fn log(&self) -> Vec<String> {
        log_lines(self.dir.path(), "every")
    }
}

#[tokio::test]
async fn skip_records_a_slot_whose_previous_run_is_still_going() {
    let rig = Rig::new("2027-01-04T10:00:00Z");
    let scheduler = rig.open(&schedule(
        "* * * * *",
        "UTC",
        Overlap::Skip,
        CatchUp::Latest,
    ));
    rig.tick_at(&scheduler, "2027-01-04T10:00:30Z").await;
    rig.tick_at(&scheduler, "2027-01-04T10:01:00Z").await;
    rig.tick_at(&scheduler, "2027-01-04T10:02:00Z").await;
    rig.launcher.finish_all();
    rig.tick_at(&scheduler, "2027-01-04T10:03:00Z").await;
    assert_eq!(
        rig.log(),
        [
            "claimed 10:01",
            "started 10:01",
            "skipped 10:02",
            "claimed 10:03",
            "started 10:03"
        ]
    );
    assert_eq!(rig.launcher.started_at(), ["10:01", "10:03"]);
}

#[tokio::test]
async fn buffer_one_runs_one_waiting_slot_when_the_run_ends() {
    let rig = Rig::new("2027-01-04T10:00:00Z");
    let scheduler = rig.open(&schedule(
        "* * * * *",
        "UTC",
        Overlap::BufferOne,
        CatchUp::Latest,
    ));
    rig.tick_at(&scheduler, "2027-01-04T10:00:10Z").await;
    rig.tick_at(&scheduler, "2027-01-04T10:01:00Z").await;
    rig.tick_at(&scheduler, "2027-01-04T10:02:00Z").await;
    rig.tick_at(&scheduler, "2027-01-04T10:03:00Z").await;
    rig.launcher.finish_all();
    rig.tick_at(&scheduler, "2027-01-04T10:03:01Z").await;
    assert_eq!(
        rig.log(),
        [
            "claimed 10:01",
            "started 10:01",
            "buffered 10:02",
            "skipped 10:03",
            "claimed 10:02",
            "started 10:02"
        ]
    );
    // The buffered slot asks for a prompt wake while it waits.
    rig.launcher.finish_all();
    assert_eq!(
        scheduler.next_wake().await,
        Some(at("2027-01-04T10:04:00Z"))
    );
}

#[tokio::test]
async fn allow_fires_while_the_previous_run_goes_on() {
    let rig = Rig::new("2027-01-04T10:00:00Z");
    let scheduler = rig.open(&schedule(
        "* * * * *",
        "UTC",
        Overlap::Allow,
        CatchUp::Latest,
    ));
    rig.tick_at(&scheduler, "2027-01-04T10:00:10Z").await;
    rig.tick_at(&scheduler, "2027-01-04T10:01:00Z").await;
    rig.tick_at(&scheduler, "2027-01-04T10:02:00Z").await;
    assert_eq!(rig.launcher.started_at(), ["10:01", "10:02"]);
}

/// Opens at 10:00, restarts at 10:05:30: slots 10:01 … 10:05 were missed.
async fn after_downtime(catch_up: CatchUp) -> (Vec<String>, Vec<String>) {
    let rig = Rig::new("2027-01-04T10:00:00Z");
    let every = schedule("* * * * *", "UTC", Overlap::Skip, catch_up);
    drop(rig.open(&every));
    rig.clock.set(at("2027-01-04T10:05:30Z"));
    let scheduler = rig.open(&every);
    scheduler.tick().await.unwrap();
    // Later slots run normally.
    rig.launcher.finish_all();
    rig.tick_at(&scheduler, "2027-01-04T10:06:00Z").await;
    (rig.log(), rig.launcher.started_at())
}

#[tokio::test]
async fn catch_up_latest_runs_the_latest_missed_slot_once() {
    assert_eq!(
        after_downtime(CatchUp::Latest).await,
        (
            vec![
                "skipped_range 10:01-10:04 x4".to_string(),
                "claimed 10:05".into(),
                "started 10:05".into(),
                "claimed 10:06".into(),
                "started 10:06".into(),
            ],
            vec!["10:05".to_string(), "10:06".into()]
        )
    );
}

#[tokio::test]
async fn catch_up_none_records_every_missed_slot_as_skipped() {
    assert_eq!(
        after_downtime(CatchUp::None).await,
        (
            vec![
                "skipped_range 10:01-10:05 x5".to_string(),
                "claimed 10:06".into(),
                "started 10:06".into(),
            ],
            vec!["10:06".to_string()]
        )
    );
}

#[tokio::test]
async fn catch_up_all_runs_the_latest_missed_slots_up_to_the_limit() {
    let (log, started) = after_downtime(CatchUp::All { limit: 3 }).await;
    assert_eq!(
        log,
        [
            "skipped_range 10:01-10:02 x2",
            "claimed 10:03",
            "started 10:03",
            "claimed 10:04",
            "started 10:04",
            "claimed 10:05",
            "started 10:05",
            "claimed 10:06",
            "started 10:06"
        ]
    );
    assert_eq!(started, ["10:03", "10:04", "10:05", "10:06"]);
}

#[tokio::test]
async fn a_crash_between_claim_and_start_is_recorded_abandoned_not_rerun() {
    for hang in [HANG_BEFORE_START, HANG_AFTER_START] {
        let rig = Rig::new("2027-01-04T10:00:00Z");
        let every = schedule("* * * * *", "UTC", Overlap::Skip, CatchUp::Latest);
        let scheduler = rig.open(&every);
        rig.tick_at(&scheduler, "2027-01-04T10:00:10Z").await;
        rig.launcher.next.store(hang, Ordering::SeqCst);
        rig.clock.set(at("2027-01-04T10:01:00Z"));
        // The tick never finishes: the process dies with the slot claimed.
        assert!(scheduler.tick().now_or_never().is_none());
        drop(scheduler);
        rig.launcher.finish_all();
        let scheduler = rig.open(&every);
        rig.tick_at(&scheduler, "2027-01-04T10:01:30Z").await;
        rig.tick_at(&scheduler, "2027-01-04T10:02:00Z").await;
        assert_eq!(
            rig.log(),
            [
                "claimed 10:01",
                "abandoned 10:01",
                "claimed 10:02",
                "started 10:02"
            ]
        );
        let expected: &[&str] = if hang == HANG_AFTER_START {
            &["10:01", "10:02"]
        } else {
            &["10:02"]
        };
        assert_eq!(rig.launcher.started_at(), expected);
        let status = &scheduler.statuses().await[0];
        assert_eq!(
            status.last.as_ref().map(|l| l.session_id.clone()),
            Some(Some("every@2027-01-04T10:02:00+00:00".to_string()))
        );
    }
}

#[tokio::test]
async fn jitter_delays_each_slot_by_a_fixed_amount_below_the_bound() {
    let rig = Rig::new("2027-01-04T10:00:00Z");
    let mut every = schedule("0 * * * *", "UTC", Overlap::Skip, CatchUp::Latest);
    every.jitter_secs = 600;
    let scheduler = rig.open(&every);
    scheduler.tick().await.unwrap();
    let due = scheduler.next_wake().await.unwrap();
    assert!(
        due >= at("2027-01-04T11:00:00Z") && due < at("2027-01-04T11:10:00Z"),
        "{due}"
    );
    rig.clock.set(due - Duration::seconds(1));
    scheduler.tick().await.unwrap();
    assert_eq!(rig.launcher.started_at(), Vec::<String>::new());
    rig.clock.set(due);
    scheduler.tick().await.unwrap();
    // The slot keeps its nominal instant; only the firing is late.
    assert_eq!(rig.launcher.started_at(), ["11:00"]);
    // Another process computes the same delay for the same slot.
    let other = Rig::new("2027-01-04T10:00:00Z");
    assert_eq!(other.open(&every).next_wake().await, Some(due));
}

#[tokio::test]
async fn a_disabled_schedule_never_fires() {
    let rig = Rig::new("2027-01-04T10:00:00Z");
    let mut every = schedule("* * * * *", "UTC", Overlap::Skip, CatchUp::Latest);
    every.enabled = false;
    let scheduler = rig.open(&every);
    rig.tick_at(&scheduler, "2027-01-04T10:05:00Z").await;
    assert_eq!(rig.launcher.started_at(), Vec::<String>::new());
    assert_eq!(scheduler.next_wake().await, None);
    assert_eq!(scheduler.statuses().await[0].next, Vec::new());
}

#[tokio::test]
async fn the_run_loop_fires_when_the_clock_reaches_a_slot() {
    let rig = Rig::new("2027-03-27T12:00:00Z");
    let berlin = schedule(
        "30 2 * * *",
        "Europe/Berlin",
        Overlap::Skip,
        CatchUp::Latest,
    );
    let scheduler = rig.open(&berlin);
    let shutdown = tokio_util::sync::CancellationToken::new();
    let task = tokio::spawn(scheduler.clone().run(shutdown.clone()));
    // 02:30 does not exist on 2027-03-28 in Berlin: the slot fires at 03:00 CEST (01:00Z).
    for time in ["2027-03-28T00:59:59Z", "2027-03-28T01:00:00Z"] {
        rig.clock.set(at(time));
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
    }
    shutdown.cancel();
    task.await.unwrap();
    assert_eq!(
        rig.launcher
            .started
            .lock()
            .unwrap()
            .iter()
            .map(|(_, slot)| slot.to_rfc3339())
            .collect::<Vec<_>>(),
        ["2027-03-28T01:00:00+00:00"]
    );
}

/// The slots a schedule fires while the clock steps minute by minute from `from` to `to`,
/// ticking at each step (every run ends at once), as UTC instants.
async fn fired_stepping(cron: &str, zone: &str, from: &str, to: &str) -> Vec<String> {
    let rig = Rig::new(from);
    let scheduler = rig.open(&schedule(cron, zone, Overlap::Skip, CatchUp::None));
    scheduler.tick().await.unwrap();
    while rig.clock.now() < at(to) {
        rig.clock.advance(Duration::minutes(1));
        scheduler.tick().await.unwrap();
        rig.launcher.finish_all();
    }
    let started = rig.launcher.started.lock().unwrap().clone();
    started
        .iter()
        .map(|(_, slot)| slot.format("%Y-%m-%dT%H:%MZ").to_string())
        .collect()
}

#[tokio::test]
async fn the_scheduler_fires_the_documented_times_across_daylight_saving_changes() {
    // A time in the spring-forward gap fires once, at the end of the gap.
    assert_eq!(
        fired_stepping(
            "30 2 * * *",
            "Europe/Berlin",
            "2027-03-27T12:00:00Z",
            "2027-03-29T12:00:00Z"
        )
        .await,
        ["2027-03-28T01:00Z", "2027-03-29T00:30Z"]
    );
    assert_eq!(
        fired_stepping(
            "30 2 * * *",
            "America/New_York",
            "2027-03-13T12:00:00Z",
            "2027-03-15T12:00:00Z"
        )
        .await,
        ["2027-03-14T07:00Z", "2027-03-15T06:30Z"]
    );
    // A time that occurs twice on fall-back fires once, at its first occurrence.
    assert_eq!(
        fired_stepping(
            "30 2 * * *",
            "Europe/Berlin",
            "2027-10-30T12:00:00Z",
            "2027-11-01T12:00:00Z"
        )
        .await,
        ["2027-10-31T00:30Z", "2027-11-01T01:30Z"]
    );
    assert_eq!(
        fired_stepping(
            "30 1 * * *",
            "America/New_York",
            "2027-11-06T12:00:00Z",
            "2027-11-08T12:00:00Z"
        )
        .await,
        ["2027-11-07T05:30Z", "2027-11-08T06:30Z"]
    );
    // Hourly through the repeated hour: 01:00 EDT fires, 01:00 EST (06:00Z) does not.
    assert_eq!(
        fired_stepping(
            "0 * * * *",
            "America/New_York",
            "2027-11-07T04:30:00Z",
            "2027-11-07T08:30:00Z"
        )
        .await,
        [
            "2027-11-07T05:00Z",
            "2027-11-07T07:00Z",
            "2027-11-07T08:00Z"
        ]
    );
    // Every half hour through Berlin's gap: 02:00, 02:30 and 03:00 local are one instant.
    assert_eq!(
        fired_stepping(
            "*/30 * * * *",
            "Europe/Berlin",
            "2027-03-28T00:10:00Z",
            "2027-03-28T02:10:00Z"
        )
        .await,
        [
            "2027-03-28T00:30Z",
            "2027-03-28T01:00Z",
            "2027-03-28T01:30Z",
            "2027-03-28T02:00Z"
        ]
    );
}
