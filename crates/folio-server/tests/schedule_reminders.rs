//! Reminders over a simulated clock: the routes (set by `at` or `in`, list, cancel, owner only),
//! delivery at the time as a coalesced follow-up with `reminder.*` events, and restarts (a
//! reminder due while no server ran is delivered once, marked late; a crash after delivery
//! never delivers it twice).

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use folio_protocol::{CreateSession, EventBody, SetReminder};
use folio_server::SessionManager;
use folio_server::schedule::ManualClock;
use folio_test_support::{MockModelServer, MockReply, check_answer};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use support::{agent, http, manager, project, wait_turns};

fn at(text: &str) -> DateTime<Utc> {
    text.parse().unwrap()
}

/// The reminder events and received messages of a log, in order, as short lines.
fn story(events: &[folio_protocol::Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match &event.body {
            EventBody::ReminderSet(set) => Some(format!("set {} {}", set.at, set.message)),
            EventBody::ReminderFired(fired) => {
                Some(format!("fired {} late={}", fired.at, fired.late))
            }
            EventBody::ReminderCancelled(_) => Some("cancelled".into()),
            EventBody::MessageReceived(received) => Some(format!("message {}", received.text)),
            _ => None,
        })
        .collect()
}

async fn call(method: reqwest::Method, url: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = reqwest::Client::new().request(method.clone(), url);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    check_answer(method.as_str(), url, status, &body);
    (status, body)
}

/// A manager on `state` whose clock stands at `now`, delivering reminders.
async fn open(
    mock: &MockModelServer,
    project: &Path,
    state: &Path,
    now: &str,
) -> (SessionManager, ManualClock) {
    let manager = manager(agent(mock, project).await, state);
    let clock = ManualClock::new(at(now));
    manager.set_clock(Arc::new(clock.clone()));
    tokio::spawn(manager.clone().run_reminders());
    (manager, clock)
}

#[tokio::test]
async fn reminders_are_set_listed_cancelled_and_delivered_at_their_time() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("Hello."));
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let (manager, clock) = open(&mock, dir.path(), state.path(), "2027-01-04T10:00:00Z").await;
    let url = http(manager.clone()).await;
    let id = manager
        .create("local", "http", CreateSession::message("hi"))
        .await
        .unwrap()
        .session_id;
    wait_turns(&manager, &id, 1).await;
    let reminders = format!("{url}/v1/session/{id}/reminders");

    let (status, set) = call(
        reqwest::Method::POST,
        &reminders,
        Some(json!({"in": "2h", "message": "check the build"})),
    )
    .await;
    assert_eq!(
        (status, &set["reminder"]["at"]),
        (201, &json!("2027-01-04T12:00:00Z"))
    );
    let (status, standup) = call(
        reqwest::Method::POST,
        &reminders,
        Some(json!({"at": "2027-01-04T11:00:00Z", "message": "stand-up"})),
    )
    .await;
    assert_eq!(status, 201);
    for (body, message) in [
        (
            json!({"message": "x"}),
            "at, in: give exactly one of them (an RFC 3339 instant, or a delay like \"2h\")",
        ),
        (
            json!({"in": "soon", "message": "x"}),
            "in: \"soon\" is not a delay; use a number with a unit (s, m, h, d), e.g. \"90s\", \"15m\", \"1h30m\"",
        ),
        (
            json!({"at": "2027-01-04T09:00:00Z", "message": "x"}),
            "at: 2027-01-04 09:00:00 UTC has passed; give a future instant",
        ),
        (
            json!({"in": "5m", "message": " "}),
            "message: empty; say what the reminder delivers",
        ),
    ] {
        let (status, answer) = call(reqwest::Method::POST, &reminders, Some(body)).await;
        assert_eq!((status, answer["message"].as_str()), (400, Some(message)));
    }
    let (status, list) = call(reqwest::Method::GET, &reminders, None).await;
    let listed: Vec<&Value> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["message"])
        .collect();
    assert_eq!(
        (status, listed),
        (200, vec![&json!("stand-up"), &json!("check the build")])
    );

    let cancel = format!(
        "{reminders}/{}",
        standup["reminder"]["reminderId"].as_str().unwrap()
    );
    assert_eq!(call(reqwest::Method::DELETE, &cancel, None).await.0, 200);
    assert_eq!(call(reqwest::Method::DELETE, &cancel, None).await.0, 404);

    mock.push(MockReply::text("Checked."));
    clock.set(at("2027-01-04T12:00:00Z"));
    let events = wait_turns(&manager, &id, 2).await;
    assert_eq!(
        story(&events),
        [
            "message hi",
            "set 2027-01-04 12:00:00 UTC check the build",
            "set 2027-01-04 11:00:00 UTC stand-up",
            "cancelled",
            "fired 2027-01-04 12:00:00 UTC late=false",
            "message Reminder: check the build",
        ]
    );
    let (_, list) = call(reqwest::Method::GET, &reminders, None).await;
    assert_eq!(list["data"], json!([]));
}

#[tokio::test]
async fn reminders_are_owned_and_bound_to_chat_sessions() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("Hello."));
    mock.push(MockReply::text("Done."));
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let (manager, _clock) = open(&mock, dir.path(), state.path(), "2027-01-04T10:00:00Z").await;
    let chat = manager
        .create("local", "http", CreateSession::message("hi"))
        .await
        .unwrap()
        .session_id;
    let request = || SetReminder {
        at: None,
        after: Some("1h".into()),
        message: "ping".into(),
    };
    assert_eq!(
        manager
            .set_reminder("mallory", &chat, request())
            .await
            .unwrap_err(),
        folio_server::ManagerError::Forbidden(chat.clone())
    );
    let task = manager
        .create(
            "local",
            "http",
            CreateSession {
                mode: Some(folio_protocol::SessionMode::Task),
                ..CreateSession::message("do it")
            },
        )
        .await
        .unwrap()
        .session_id;
    assert_eq!(
        manager
            .set_reminder("local", &task, request())
            .await
            .unwrap_err(),
        folio_server::ManagerError::NotFollowable(task.clone())
    );
    wait_turns(&manager, &chat, 1).await;
}

#[tokio::test]
async fn a_reminder_due_while_no_server_ran_is_delivered_once_marked_late() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("Hello."));
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let (first, _clock) = open(&mock, dir.path(), state.path(), "2027-01-04T10:00:00Z").await;
    let id = first
        .create("local", "http", CreateSession::message("hi"))
        .await
        .unwrap()
        .session_id;
    wait_turns(&first, &id, 1).await;
    let reminder = first
        .set_reminder(
            "local",
            &id,
            SetReminder {
                at: None,
                after: Some("1h".into()),
                message: "call back".into(),
            },
        )
        .await
        .unwrap();
    first.shutdown().await;
    drop(first);

    // The server comes back two hours after the reminder's time.
    mock.push(MockReply::text("Calling back."));
    let (second, _clock) = open(&mock, dir.path(), state.path(), "2027-01-04T13:00:00Z").await;
    let events = wait_turns(&second, &id, 2).await;
    let expected = [
        "message hi",
        "set 2027-01-04 11:00:00 UTC call back",
        "fired 2027-01-04 11:00:00 UTC late=true",
        "message Reminder (late: it was due at 2027-01-04 11:00:00 UTC): call back",
    ];
    assert_eq!(story(&events), expected);
    second.shutdown().await;
    drop(second);

    // A crash after the delivery, before the reminder file was removed: the next server
    // recognizes the delivered message and only removes the file.
    let file = state
        .path()
        .join("reminders")
        .join(&id)
        .join(format!("{}.json", reminder.reminder_id));
    std::fs::write(&file, serde_json::to_vec(&reminder).unwrap()).unwrap();
    let (third, _clock) = open(&mock, dir.path(), state.path(), "2027-01-04T14:00:00Z").await;
    for _ in 0..600 {
        if !file.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!file.exists(), "the restored reminder was never settled");
    assert_eq!(story(&third.events("local", &id).unwrap()), expected);
    assert_eq!(third.reminders("local", &id).unwrap(), Vec::new());
}
