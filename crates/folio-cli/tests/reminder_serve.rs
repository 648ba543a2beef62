//! Reminders through the real binary: `folio serve` with two principals on a clock that starts at
//! a fixed instant (`FOLIO_TEST_CLOCK_START`). The owner sets, lists and cancels reminders while
//! another principal is refused on every reminder route; a near-future reminder wakes the chat
//! session through the mock model as a coalesced follow-up; then the server is killed and started
//! again three hours later, and the reminder that fell due meanwhile is delivered once, marked
//! late.

mod serve_support;

use chrono::{DateTime, Duration, Utc};
use folio_protocol::{
    Acknowledged, Admission, CreateSession, ErrorCode, Event, EventBody, MessageReceived, Page,
    Reminder, ReminderFired, ReminderResponse, ReminderSet, SessionCreated, SetReminder,
};
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serve_support::*;

const AGENT: &str =
    "name = \"Test Agent\"\ndescription = \"answers tests\"\nmodel = \"openai:gpt-test\"\n";
/// Where the first server's clock starts.
const START: &str = "2027-01-04T10:00:00Z";
/// Where the second server's clock starts: after the one-hour reminder fell due.
const RESTART: &str = "2027-01-04T13:00:00Z";
const ALICE: Option<&str> = Some("alice-secret");
const BOB: Option<&str> = Some("bob-secret");

fn at(text: &str) -> DateTime<Utc> {
    text.parse().unwrap()
}

fn reminder(after: &str, message: &str) -> SetReminder {
    SetReminder {
        at: None,
        after: Some(after.into()),
        message: message.into(),
    }
}

/// The reminder events and received messages of a log, in order.
fn story(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match &event.body {
            EventBody::ReminderSet(set) => Some(format!("set {}", set.message)),
            EventBody::ReminderFired(fired) => {
                Some(format!("fired {} late={}", fired.reminder_id, fired.late))
            }
            EventBody::ReminderCancelled(cancelled) => {
                Some(format!("cancelled {}", cancelled.reminder_id))
            }
            EventBody::MessageReceived(received) => Some(format!("message {}", received.text)),
            _ => None,
        })
        .collect()
}

/// The `message.received` that delivered a reminder.
fn delivered<'a>(events: &'a [Event], reminder: &Reminder) -> &'a MessageReceived {
    let key = format!("reminder:{}", reminder.reminder_id);
    let found: Vec<&MessageReceived> = all::<MessageReceived>(events)
        .into_iter()
        .filter(|m| m.client_message_id.as_deref() == Some(key.as_str()))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "delivered exactly once: {:#?}",
        story(events)
    );
    found[0]
}

#[tokio::test]
async fn reminders_are_owned_fire_on_time_and_a_missed_one_is_delivered_once_late_after_a_restart()
{
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("Hello."));
    let dir = project(AGENT);
    let state = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.toml");
    std::fs::write(&tokens, "alice = \"alice-secret\"\nbob = \"bob-secret\"\n").unwrap();
    let args = [
        "--tokens-file",
        tokens.to_str().unwrap(),
        "--mode",
        "single",
    ];
    let mut served = serve_with_env(
        &mock.openai_base_url(),
        dir.path(),
        state.path(),
        &args,
        &[("FOLIO_TEST_CLOCK_START", START)],
    )
    .await;
    let url = served.url.clone();
    let (status, created) = call_as::<SessionCreated>(
        Method::POST,
        &format!("{url}/v1/session"),
        Some(&CreateSession::message("hi")),
        ALICE,
    )
    .await;
    assert_eq!(status, 201);
    let id = created.session_id;
    let mut stream = Stream::open(&url, &id, 0, ALICE).await;
    stream.until("session.waiting").await;
    let reminders = format!("{url}/v1/session/{id}/reminders");

    // The owner sets two reminders: one in an hour (the server will be down then), one in two
    // seconds (the model answers it).
    let (status, later) = call_as::<ReminderResponse>(
        Method::POST,
        &reminders,
        Some(&reminder("1h", "call back")),
        ALICE,
    )
    .await;
    assert_eq!(status, 201);
    let later = later.reminder;
    let due = later.at - at(START);
    assert!(
        due >= Duration::hours(1) && due < Duration::hours(1) + Duration::seconds(60),
        "`in: 1h` counts from the server's clock: {}",
        later.at
    );
    mock.push(MockReply::text("Checked."));
    let (status, soon) = call_as::<ReminderResponse>(
        Method::POST,
        &reminders,
        Some(&reminder("2s", "check the build")),
        ALICE,
    )
    .await;
    assert_eq!(status, 201);
    let soon = soon.reminder;
    let (status, cancelled) = call_as::<ReminderResponse>(
        Method::POST,
        &reminders,
        Some(&reminder("30m", "never mind")),
        ALICE,
    )
    .await;
    assert_eq!(status, 201);
    let cancelled = cancelled.reminder;
    let (status, listed) = call_as::<Page<Reminder>>(Method::GET, &reminders, NO_BODY, ALICE).await;
    assert_eq!(
        (status, listed.data),
        (200, vec![soon.clone(), cancelled.clone(), later.clone()])
    );

    // Another principal is refused on every reminder route, and changes nothing.
    let cancel = |reminder: &Reminder| format!("{reminders}/{}", reminder.reminder_id);
    for (method, route, body) in [
        (Method::POST, reminders.clone(), Some(reminder("1m", "x"))),
        (Method::GET, reminders.clone(), None),
        (Method::DELETE, cancel(&later), None),
    ] {
        let (status, refusal) = refused(method.clone(), &route, body.as_ref(), BOB).await;
        assert_eq!(
            (status, refusal.error),
            (403, ErrorCode::Forbidden),
            "{method} {route}: {refusal}"
        );
    }
    let (status, _) =
        call_as::<Acknowledged>(Method::DELETE, &cancel(&cancelled), NO_BODY, ALICE).await;
    assert_eq!(status, 200);
    let (status, refusal) = refused(Method::DELETE, &cancel(&cancelled), NO_BODY, ALICE).await;
    assert_eq!((status, refusal.error), (404, ErrorCode::NotFound));

    // The two-second reminder wakes the session on time, as a coalesced follow-up.
    stream.until_count("session.waiting", 2).await;
    let events = stream.events.clone();
    let fired = all::<ReminderFired>(&events);
    assert_eq!(
        fired,
        [&ReminderFired {
            reminder_id: soon.reminder_id.clone(),
            at: soon.at,
            late: false,
        }]
    );
    let message = delivered(&events, &soon);
    assert_eq!(
        (message.text.as_str(), message.admission),
        ("Reminder: check the build", Some(Admission::Coalesce))
    );
    let set_at = of_type::<ReminderSet>(&events)
        .into_iter()
        .find(|e| data::<ReminderSet>(e).reminder_id == soon.reminder_id)
        .unwrap()
        .at;
    let fired_at = first::<ReminderFired>(&events).at;
    let waited = fired_at - set_at;
    assert!(
        waited >= Duration::milliseconds(1500) && waited <= Duration::seconds(10),
        "a reminder set for 2 s from now fired {waited} after it was set"
    );
    assert_eq!(
        mock.requests()[1].user_texts().last().map(String::as_str),
        Some("Reminder: check the build")
    );

    // The server dies; it comes back three hours later (two after the other reminder's time).
    served.child.kill().await.unwrap();
    served.child.wait().await.unwrap();
    mock.push(MockReply::text("Calling back."));
    let mut served = serve_with_env(
        &mock.openai_base_url(),
        dir.path(),
        state.path(),
        &args,
        &[("FOLIO_TEST_CLOCK_START", RESTART)],
    )
    .await;
    let url = served.url.clone();
    let mut stream = Stream::open(&url, &id, 0, ALICE).await;
    stream.until_count("session.waiting", 3).await;
    let events = stream.events.clone();
    assert_eq!(
        story(&events),
        [
            "message hi".to_string(),
            "set call back".into(),
            "set check the build".into(),
            "set never mind".into(),
            format!("cancelled {}", cancelled.reminder_id),
            format!("fired {} late=false", soon.reminder_id),
            "message Reminder: check the build".into(),
            format!("fired {} late=true", later.reminder_id),
            format!(
                "message Reminder (late: it was due at {}): call back",
                later.at
            ),
        ]
    );
    assert_eq!(
        delivered(&events, &later).admission,
        Some(Admission::Coalesce)
    );
    let (status, listed) = call_as::<Page<Reminder>>(
        Method::GET,
        &format!("{url}/v1/session/{id}/reminders"),
        NO_BODY,
        ALICE,
    )
    .await;
    assert_eq!((status, listed.data), (200, Vec::new()));
    assert_eq!(mock.remaining(), 0, "the model answered each reminder once");
    served.child.kill().await.unwrap();
    served.child.wait().await.unwrap();
}
