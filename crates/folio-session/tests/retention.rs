//! Retention (`[store] keep_sessions_days`): on a clock moved past the period, an idle session
//! goes with its log and workspace; a session whose turn waits for an approval, or that has a
//! reminder still to deliver, stays, however old; nothing goes before the period is over.

mod support;

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use folio_protocol::{CreateSession, EventBody, SetReminder};
use folio_session::ManagerError;
use folio_session::schedule::ManualClock;
use folio_store::RetentionReport;
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::json;
use support::*;

const DAY: chrono::TimeDelta = chrono::TimeDelta::days(1);
const KEEP: Duration = Duration::from_secs(30 * 24 * 3600);

#[tokio::test]
async fn idle_sessions_past_the_period_go_and_parked_reminded_or_recent_ones_stay() {
    let mock = MockModelServer::start().await;
    let dir = project("[store]\nkeep_sessions_days = 30\n");
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent(&mock, dir.path()).await, state.path()).await;
    let clock = Arc::new(ManualClock::new(Utc::now()));
    manager.set_clock(clock.clone());

    mock.push(MockReply::text("hello"));
    let idle = manager
        .sessions()
        .create("local", "http", CreateSession::message("hi"))
        .await
        .unwrap()
        .session_id;
    let idle_events = wait_turns(&manager, &idle, 1).await.len() as u64;
    mock.push(MockReply::text("I will remind you"));
    let reminded = manager
        .sessions()
        .create("local", "http", CreateSession::message("remind me"))
        .await
        .unwrap()
        .session_id;
    wait_turns(&manager, &reminded, 1).await;
    manager
        .reminders()
        .set(
            "local",
            &reminded,
            SetReminder {
                at: None,
                after: Some("90d".into()),
                message: "the yearly review".into(),
            },
        )
        .await
        .unwrap();
    mock.push(MockReply::tool_calls([(
        "Deploy",
        json!({"target": "prod"}),
    )]));
    let parked = manager
        .sessions()
        .create("local", "http", CreateSession::message("ship it"))
        .await
        .unwrap()
        .session_id;
    let mut stream = manager.events().stream("local", &parked, 0).await.unwrap();
    while let Some(event) = stream.rx.recv().await {
        if matches!(
            event.as_deref().map(|e| &e.body),
            Some(EventBody::ActionApprovalRequested(_))
        ) {
            break;
        }
    }

    clock.advance(DAY * 29);
    assert_eq!(
        manager.retention().delete_expired(KEEP).await.unwrap(),
        RetentionReport::default(),
        "29 days idle is within 30"
    );
    clock.advance(DAY * 2);
    assert_eq!(
        manager.retention().delete_expired(KEEP).await.unwrap(),
        RetentionReport {
            sessions: 1,
            events: idle_events,
            slot_claims: 0,
            deliveries: 0
        },
        "the idle session goes, with every event of its log"
    );
    assert!(matches!(
        manager.sessions().get("local", &idle).await,
        Err(ManagerError::NotFound(_))
    ));
    let root = folio_session::StateRoot::new(state.path());
    assert!(
        !root.session_dir(&idle).exists(),
        "its folder and workspace"
    );
    assert!(!root.trace_path(&idle).exists(), "its log");
    assert!(
        manager.sessions().get("local", &parked).await.is_ok(),
        "a turn waiting for an approval keeps its session"
    );
    assert!(
        manager.sessions().get("local", &reminded).await.is_ok(),
        "a reminder still to deliver keeps its session"
    );
}
