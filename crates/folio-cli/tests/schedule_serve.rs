//! Schedules through the real binary: `folio init --template triage`, then `folio serve` on a
//! clock that starts two seconds before the template's weekday 09:00 slot; the slot fires a task
//! session (principal `schedule:daily-summary`) through the mock model, `GET /v1/schedules` and
//! `folio schedule list` show it, and `folio schedule run` fires one more by hand.

mod serve_support;

use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};
use folio_protocol::{
    Event, RunResult, ScheduleStatus, SchedulesResponse, SessionMode, SessionStatus,
    SlotOutcomeKind,
};
use folio_server::SessionMeta;
use folio_server::schedule::SlotRecord;
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serve_support::*;

/// 2027-01-04 is a Monday: the triage template's `0 9 * * 1-5` fires at 09:00Z.
const CLOCK_START: &str = "2027-01-04T08:59:58Z";
const SLOT: &str = "2027-01-04T09:00:00Z";

fn instant(text: &str) -> DateTime<Utc> {
    text.parse().unwrap()
}

/// The records of the schedule's slot log.
fn slot_records(state: &Path) -> Vec<SlotRecord> {
    std::fs::read_to_string(state.join("schedules/daily-summary.ndjson"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Polls `GET /v1/schedules` until the schedule's last slot fired; returns the schedule.
async fn fired(url: &str) -> ScheduleStatus {
    for _ in 0..600 {
        let answer: SchedulesResponse =
            expect(Method::GET, &format!("{url}/v1/schedules"), NO_BODY, 200).await;
        let schedule = answer.schedules[0].clone();
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

/// Reads the session's event types once it has completed.
async fn completed_events(state: &Path, session_id: &str) -> Vec<String> {
    let trace = state.join("traces").join(format!("{session_id}.ndjson"));
    for _ in 0..600 {
        let text = std::fs::read_to_string(&trace).unwrap_or_default();
        let types: Vec<String> = text
            .lines()
            .filter_map(|line| serde_json::from_str::<Event>(line).ok())
            .map(|event| event.event_type().to_string())
            .collect();
        if types.iter().any(|t| t == "session.completed") {
            return types;
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
        ("daily-summary", "0 9 * * 1-5", "UTC", instant(SLOT))
    );
    assert_eq!(schedule.next[0].utc, instant("2027-01-05T09:00:00Z"));
    let types = completed_events(&state, &session_id).await;
    assert_eq!(types.first().map(String::as_str), Some("session.started"));
    let meta: SessionMeta = serde_json::from_slice(
        &std::fs::read(
            state
                .join("sessions")
                .join(&session_id)
                .join("session.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        (
            meta.principal.as_str(),
            meta.mode,
            meta.channel.as_str(),
            meta.status
        ),
        (
            "schedule:daily-summary",
            SessionMode::Task,
            "schedule",
            SessionStatus::Completed
        )
    );
    let request = &mock.requests()[0];
    assert!(
        request
            .body
            .to_string()
            .contains("Summarize the issues labeled since yesterday"),
        "the model got the schedule's prompt: {}",
        request.body
    );
    // The session belongs to the schedule's principal: other callers are refused.
    let (status, _) = get(&format!("{}/v1/session/{session_id}", served.url)).await;
    assert_eq!(status, 403);
    served.child.kill().await.unwrap();
    served.child.wait().await.unwrap();

    // The slot log holds the claim and the session.
    let records = slot_records(&state);
    assert_eq!(
        records[1..].to_vec(),
        vec![
            SlotRecord::Claimed {
                slot: instant(SLOT),
                manual: false
            },
            SlotRecord::Started {
                slot: instant(SLOT),
                session_id: session_id.clone()
            },
        ]
    );

    // `folio schedule list` reads the same log (no server needed).
    let list = std::process::Command::new(folio_bin())
        .args(["schedule", "list", "--dir"])
        .arg(&dir)
        .arg("--state-root")
        .arg(&state)
        .output()
        .unwrap();
    assert!(list.status.success(), "{list:?}");
    let text = String::from_utf8(list.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        (lines[0], lines.len(), lines[6]),
        (
            "daily-summary: \"0 9 * * 1-5\" in UTC (overlap skip, catch_up latest, jitter 0s)",
            7,
            format!("  last: fired {SLOT} {session_id}").as_str()
        )
    );

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
    assert_eq!(result.reply, "Nothing new.", "{result:?}");
    let records = slot_records(&state);
    assert!(
        records
            .iter()
            .any(|record| matches!(record, SlotRecord::Claimed { manual: true, .. })),
        "{records:#?}"
    );
}
