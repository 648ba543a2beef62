//! Schedules through the real binary: `folio init --template triage`, then `folio serve` on a
//! clock that starts two seconds before the template's weekday 09:00 slot; the slot fires a task
//! session (principal `schedule:daily-summary`) through the mock model, `GET /v1/schedules` and
//! `folio schedule list` show it, and `folio schedule run` fires one more by hand.

mod serve_support;

use std::path::Path;
use std::time::Duration;

use folio_protocol::{
    Event, RunResult, ScheduleStatus, SchedulesResponse, SessionCompleted, SessionMode,
    SessionStarted, SlotOutcomeKind,
};
use folio_session::schedule::SlotRecord;
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serve_support::*;

/// 2027-01-04 is a Monday: the triage template's `0 9 * * 1-5` fires at 09:00Z.
const CLOCK_START: &str = "2027-01-04T08:59:58Z";
const SLOT: &str = "2027-01-04T09:00:00Z";

/// Polls `GET /v1/schedules` until the schedule's last slot fired; returns the schedule.
async fn fired(url: &str) -> ScheduleStatus {
    for _ in 0..600 {
        let (status, mut body) = call_as::<SchedulesResponse>(
            Method::GET,
            &format!("{url}/v1/schedules"),
            NO_BODY,
            None,
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(body.schedules.len(), 1, "{body:?}");
        let schedule = body.schedules.remove(0);
        if schedule
            .last
            .as_ref()
            .is_some_and(|last| last.outcome == SlotOutcomeKind::Fired)
        {
            return schedule;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the schedule did not fire within 60 s");
}

/// Reads the session's events from its trace once it has completed.
async fn completed_events(state: &Path, session_id: &str) -> Vec<Event> {
    let trace = state.join("traces").join(format!("{session_id}.ndjson"));
    for _ in 0..600 {
        let text = std::fs::read_to_string(&trace).unwrap_or_default();
        // Only whole lines: the server may be writing the last one.
        let whole = text.rfind('\n').map_or("", |end| &text[..=end]);
        let events = read_ndjson(whole);
        if !of_type::<SessionCompleted>(&events).is_empty() {
            return events;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("session {session_id} did not complete within 60 s");
}

#[tokio::test]
async fn the_triage_template_schedule_fires_a_task_session_through_the_mock_model() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("triage");
    let state = parent.path().join("state");
    let init = std::process::Command::new(folio_bin())
        .args(["init", "--template", "triage"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(init.status.success(), "{init:?}");
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("2 issues labeled bug, 1 needs a decision."));
    let mut served = serve_with_env(
        &mock.openai_base_url(),
        &dir,
        &state,
        &["--mode", "single"],
        &[("FOLIO_TEST_CLOCK_START", CLOCK_START)],
    )
    .await;

    let schedule = fired(&served.url).await;
    let last = schedule.last.clone().unwrap();
    let session_id = last.session_id.clone().unwrap();
    assert_eq!(
        (
            schedule.name.as_str(),
            schedule.cron.as_str(),
            schedule.timezone.as_str(),
            last.slot
        ),
        ("daily-summary", "0 9 * * 1-5", "UTC", SLOT.parse().unwrap())
    );
    assert_eq!(
        schedule.next.first().map(|n| (n.utc, n.local.as_str())),
        Some((
            "2027-01-05T09:00:00Z".parse().unwrap(),
            "2027-01-05T09:00:00Z"
        ))
    );
    let events = completed_events(&state, &session_id).await;
    assert_eq!(
        data::<SessionStarted>(&events[0]),
        &SessionStarted {
            mode: SessionMode::Task,
            channel: "schedule".into(),
            title: Some(format!("daily-summary {SLOT}")),
            principal: "schedule:daily-summary".into(),
            forked_from: None,
        }
    );
    assert!(
        mock.requests()[0]
            .user_texts()
            .iter()
            .any(|text| text.contains("Summarize the issues labeled since yesterday")),
        "the model got the schedule's prompt: {:?}",
        mock.requests()[0].user_texts()
    );
    // The session belongs to the schedule's principal: other callers are refused.
    let (status, _) = refused(
        Method::GET,
        &format!("{}/v1/session/{session_id}", served.url),
        NO_BODY,
        None,
    )
    .await;
    assert_eq!(status, 403);
    served.child.kill().await.unwrap();
    served.child.wait().await.unwrap();

    // The slot log holds the claim and the session.
    let log = std::fs::read_to_string(state.join("schedules/daily-summary.ndjson")).unwrap();
    let records: Vec<SlotRecord> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let slot = SLOT.parse().unwrap();
    assert_eq!(
        records[1..].to_vec(),
        vec![
            SlotRecord::Claimed {
                slot,
                manual: false
            },
            SlotRecord::Started {
                slot,
                session_id: session_id.clone()
            },
        ]
    );

    // `folio schedule list` reads the same log (no server needed): the next five slots in the
    // schedule's zone and in UTC, and the last outcome; `--json` is `GET /v1/schedules`'s shape.
    let list = |json: bool| {
        let mut command = std::process::Command::new(folio_bin());
        command.args(["schedule", "list", "--dir"]).arg(&dir);
        command.arg("--state-root").arg(&state);
        if json {
            command.arg("--json");
        }
        let output = command.output().unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    let listed: Vec<ScheduleStatus> = read_wire(&serde_json::from_str(&list(true)).unwrap());
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].last.as_ref(), listed[0].next.len()),
        (Some(&last), 5)
    );
    let text = list(false);
    let mut expected = vec![
        "daily-summary: \"0 9 * * 1-5\" in UTC (overlap skip, catch_up latest, jitter 0s)"
            .to_string(),
    ];
    expected.extend(listed[0].next.iter().map(|next| {
        format!(
            "  next: {}  ({})",
            next.local,
            next.utc.format("%Y-%m-%dT%H:%M:%SZ")
        )
    }));
    expected.push(format!("  last: fired {SLOT} {session_id}"));
    assert_eq!(text.lines().collect::<Vec<_>>(), expected);

    // `folio schedule run` fires one more now, as a manual slot.
    mock.push(MockReply::text("Nothing new."));
    let run = tokio::process::Command::new(folio_bin())
        .env_remove("FOLIO_MODEL")
        .env("OPENAI_API_KEY", "test-key")
        .env("OPENAI_BASE_URL", mock.openai_base_url())
        .args(["schedule", "run", "daily-summary", "--json", "--dir"])
        .arg(&dir)
        .arg("--state-root")
        .arg(&state)
        .output()
        .await
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    let result: RunResult = read_wire(&serde_json::from_slice(&run.stdout).unwrap());
    assert_eq!((result.ok, result.reply.as_str()), (true, "Nothing new."));
    let listed: Vec<ScheduleStatus> = read_wire(&serde_json::from_str(&list(true)).unwrap());
    let manual = listed[0].last.clone().unwrap();
    assert_eq!(
        (manual.outcome, manual.session_id.as_deref()),
        (SlotOutcomeKind::Fired, Some(result.session_id.as_str()))
    );
    let log = std::fs::read_to_string(state.join("schedules/daily-summary.ndjson")).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains("\"claimed\"") && l.contains("\"manual\":true")),
        "{log}"
    );
}
