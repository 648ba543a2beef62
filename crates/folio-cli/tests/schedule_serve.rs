//! Schedules through the real binary: `folio init --template triage`, then `folio serve` on a
//! clock that starts two seconds before the template's weekday 09:00 slot; the slot fires a task
//! session (principal `schedule:daily-summary`) through the mock model, `GET /v1/schedules` and
//! `folio schedule list` show it, and `folio schedule run` fires one more by hand.

mod serve_support;

use std::path::Path;
use std::time::Duration;

use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::Value;
use serve_support::*;

/// 2027-01-04 is a Monday: the triage template's `0 9 * * 1-5` fires at 09:00Z.
const CLOCK_START: &str = "2027-01-04T08:59:58Z";
const SLOT: &str = "2027-01-04T09:00:00Z";

/// Polls `GET /v1/schedules` until the schedule's last slot fired; returns the schedule.
async fn fired(url: &str) -> Value {
    for _ in 0..600 {
        let (status, body) = get(&format!("{url}/v1/schedules")).await;
        assert_eq!(status, 200, "{body}");
        let schedule = body["schedules"][0].clone();
        if schedule["last"]["outcome"] == "fired" {
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
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .map(|event| event["type"].as_str().unwrap_or_default().to_string())
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
    let session_id = schedule["last"]["sessionId"].as_str().unwrap().to_string();
    assert_eq!(
        (
            &schedule["name"],
            &schedule["cron"],
            &schedule["timezone"],
            &schedule["last"]["slot"]
        ),
        (
            &Value::from("daily-summary"),
            &Value::from("0 9 * * 1-5"),
            &Value::from("UTC"),
            &Value::from(SLOT)
        )
    );
    assert_eq!(
        schedule["next"][0]["utc"],
        Value::from("2027-01-05T09:00:00Z")
    );
    let types = completed_events(&state, &session_id).await;
    assert_eq!(types.first().map(String::as_str), Some("session.started"));
    let meta: Value = serde_json::from_slice(
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
            &meta["principal"],
            &meta["mode"],
            &meta["channel"],
            &meta["status"]
        ),
        (
            &Value::from("schedule:daily-summary"),
            &Value::from("task"),
            &Value::from("schedule"),
            &Value::from("completed")
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
    let log = std::fs::read_to_string(state.join("schedules/daily-summary.ndjson")).unwrap();
    let records: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        records[1..].to_vec(),
        vec![
            serde_json::json!({"type": "claimed", "slot": SLOT}),
            serde_json::json!({"type": "started", "slot": SLOT, "sessionId": session_id}),
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
    let result: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(result["reply"], "Nothing new.", "{result}");
    let log = std::fs::read_to_string(state.join("schedules/daily-summary.ndjson")).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains("\"claimed\"") && l.contains("\"manual\":true")),
        "{log}"
    );
}
