//! Reminders over a simulated clock: the routes (set by `at` or `in`, list, cancel, owner only),
//! delivery at the time as a coalesced follow-up with `reminder.*` events, and restarts (a
//! reminder due while no server ran is delivered once, marked late; a crash after delivery
//! never delivers it twice).

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use folio_protocol::{
    Acknowledged, CreateSession, ErrorCode, EventBody, Page, Reminder, ReminderResponse,
    SetReminder,
};
use folio_session::SessionManager;
use folio_session::schedule::ManualClock;
use folio_test_support::{MockModelServer, MockReply, NO_BODY, expect, expect_error};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serde_json::json;
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

/// A manager on `state` whose clock stands at `now`, delivering reminders.
async fn open(
    mock: &MockModelServer,
    project: &Path,
    state: &Path,
    now: &str,
) -> (SessionManager, ManualClock) {
    let manager = manager(agent(mock, project).await, state).await;
    let clock = ManualClock::new(at(now));
    manager.set_clock(Arc::new(clock.clone()));
    tokio::spawn(manager.clone().reminders().clone().run());
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
        .sessions()
        .create("local", "http", CreateSession::message("hi"))
        .await
        .unwrap()
        .session_id;
    wait_turns(&manager, &id, 1).await;
    let reminders = format!("{url}/v1/session/{id}/reminders");

    let set: ReminderResponse = expect(
        Method::POST,
        &reminders,
        Some(&json!({"in": "2h", "message": "check the build"})),
        201,
    )
    .await;
    assert_eq!(set.reminder.at, at("2027-01-04T12:00:00Z"));
    let standup: ReminderResponse = expect(
        Method::POST,
        &reminders,
        Some(&json!({"at": "2027-01-04T11:00:00Z", "message": "stand-up"})),
        201,
    )
    .await;
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
        let refusal = expect_error(
            Method::POST,
            &reminders,
            Some(&body),
            ErrorCode::InvalidRequest,
        )
        .await;
        assert_eq!(refusal.message, message);
    }
    let list: Page<Reminder> = expect(Method::GET, &reminders, NO_BODY, 200).await;
    assert_eq!(list.data, [standup.reminder.clone(), set.reminder.clone()]);

    let cancel = format!("{reminders}/{}", standup.reminder.reminder_id);
    let _: Acknowledged = expect(Method::DELETE, &cancel, NO_BODY, 200).await;
    expect_error(Method::DELETE, &cancel, NO_BODY, ErrorCode::NotFound).await;

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
    let list: Page<Reminder> = expect(Method::GET, &reminders, NO_BODY, 200).await;
    assert_eq!(list.data, Vec::<Reminder>::new());
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
        .sessions()
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
            .reminders()
            .set("mallory", &chat, request())
            .await
            .unwrap_err(),
        folio_session::ManagerError::Forbidden(chat.clone())
    );
    // The owner's reminder can be neither listed nor cancelled by another principal.
    let owned = manager
        .reminders()
        .set("local", &chat, request())
        .await
        .unwrap();
    assert_eq!(
        manager
            .reminders()
            .list("mallory", &chat)
            .await
            .unwrap_err(),
        folio_session::ManagerError::Forbidden(chat.clone())
    );
    assert_eq!(
        manager
            .reminders()
            .cancel("mallory", &chat, &owned.reminder_id)
            .await
            .unwrap_err(),
        folio_session::ManagerError::Forbidden(chat.clone())
    );
    assert_eq!(
        manager.reminders().list("local", &chat).await.unwrap(),
        [owned]
    );
    let task = manager
        .sessions()
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
            .reminders()
            .set("local", &task, request())
            .await
            .unwrap_err(),
        folio_session::ManagerError::NotFollowable(task.clone())
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
        .sessions()
        .create("local", "http", CreateSession::message("hi"))
        .await
        .unwrap()
        .session_id;
    wait_turns(&first, &id, 1).await;
    let reminder = first
        .reminders()
        .set(
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
    assert_eq!(
        story(&third.events().read("local", &id).await.unwrap()),
        expected
    );
    assert_eq!(
        third.reminders().list("local", &id).await.unwrap(),
        Vec::new()
    );
}

#[tokio::test]
async fn the_set_reminder_tool_is_opt_in_and_its_calls_become_reminders() {
    let mock = MockModelServer::start().await;
    let without = project("");
    assert!(
        agent(&mock, without.path())
            .await
            .harness
            .tools
            .tools()
            .all(|tool| tool.name() != "set_reminder"),
        "set_reminder is offered only when the allowlist lists setReminder"
    );

    let dir = project("tools = [\"read\", \"setReminder\"]\n");
    let state = tempfile::tempdir().unwrap();
    let (manager, clock) = open(&mock, dir.path(), state.path(), "2027-01-04T10:00:00Z").await;
    mock.push(MockReply::tool_calls([(
        "set_reminder",
        json!({"in": "soon", "message": "x"}),
    )]));
    mock.push(MockReply::tool_calls([(
        "set_reminder",
        json!({"in": "30m", "message": "follow up on the PR"}),
    )]));
    mock.push(MockReply::text("I will follow up in 30 minutes."));
    let id = manager
        .sessions()
        .create("local", "http", CreateSession::message("remind me"))
        .await
        .unwrap()
        .session_id;
    let events = wait_turns(&manager, &id, 1).await;
    let results: Vec<(bool, String)> = events
        .iter()
        .filter_map(|event| match &event.body {
            EventBody::ActionResult(result) => Some((
                result.is_error,
                result
                    .error
                    .clone()
                    .or_else(|| {
                        result
                            .output
                            .as_ref()
                            .and_then(|o| o.as_str().map(String::from))
                    })
                    .unwrap_or_default(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            (true, "argument \"in\": \"soon\" is not a delay; use a number with a unit (s, m, h, d), e.g. \"90s\", \"15m\", \"1h30m\"".to_string()),
            (false, "Reminder requested in 30m; it is set when this turn ends and wakes this conversation then.".to_string()),
        ]
    );
    let pending = manager.reminders().list("local", &id).await.unwrap();
    assert_eq!(
        pending
            .iter()
            .map(|r| (r.at, r.message.as_str()))
            .collect::<Vec<_>>(),
        [(at("2027-01-04T10:30:00Z"), "follow up on the PR")]
    );

    mock.push(MockReply::text("Following up now."));
    clock.set(at("2027-01-04T10:30:00Z"));
    let events = wait_turns(&manager, &id, 2).await;
    assert_eq!(
        story(&events),
        [
            "message remind me",
            "set 2027-01-04 10:30:00 UTC follow up on the PR",
            "fired 2027-01-04 10:30:00 UTC late=false",
            "message Reminder: follow up on the PR",
        ]
    );
}
