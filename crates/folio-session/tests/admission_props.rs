//! Property: whatever the interleaving of follow-ups (preempt or coalesce), stops and
//! session-bound tool calls, a session never runs two turns at once and coalesce never loses
//! a message.

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use folio_protocol::{Admission, Event, EventBody};
use folio_session::ManagerError;
use folio_test_support::{MockModelServer, MockReply};
use proptest::prelude::*;
use serde_json::json;
use support::*;

#[derive(Debug, Clone)]
enum Op {
    Send(Admission),
    Stop,
    Tool,
    Pause(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Send(Admission::Preempt)),
        4 => Just(Op::Send(Admission::Coalesce)),
        1 => Just(Op::Stop),
        2 => Just(Op::Tool),
        2 => (1u64..40).prop_map(Op::Pause),
    ]
}

/// Checks the log: at most one open turn at any time; returns the received texts.
fn check_log(events: &[Event]) -> Vec<String> {
    let mut open: Option<String> = None;
    let mut received = Vec::new();
    for event in events {
        match &event.body {
            EventBody::MessageReceived(message) => {
                assert!(
                    open.is_none(),
                    "turn {:?} started while {open:?} was running",
                    event.turn_id
                );
                open = event.turn_id.clone();
                received.push(message.text.clone());
            }
            EventBody::TurnStarted(_) => {
                assert_eq!(
                    event.turn_id, open,
                    "turn.started of a turn that is not open"
                );
            }
            EventBody::TurnCompleted(_) | EventBody::TurnFailed(_) => {
                assert_eq!(event.turn_id, open, "a turn ended that was not running");
                open = None;
            }
            _ => {}
        }
    }
    assert!(open.is_none(), "a turn is still open at the end");
    received
}

async fn scenario(ops: Vec<Op>) {
    let mock = MockModelServer::start().await;
    for n in 0..200 {
        mock.push(
            MockReply::text(format!("reply {n}")).first_byte_delay(Duration::from_millis(15)),
        );
    }
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent(&mock, dir.path()).await, state.path()).await;
    let created = manager
        .sessions()
        .create(
            "local",
            "http",
            folio_protocol::CreateSession::message("m0"),
        )
        .await
        .unwrap();
    let id = created.session_id;
    let mut sent = vec!["m0".to_string()];
    let mut last_stop = 0;
    for (n, op) in ops.into_iter().enumerate() {
        match op {
            Op::Send(admission) => {
                let text = format!("m{}", n + 1);
                manager
                    .turns()
                    .send("local", &id, &text, Some(admission))
                    .await
                    .unwrap();
                sent.push(text);
            }
            Op::Stop => {
                manager.turns().stop("local", &id).await.unwrap();
                last_stop = sent.len();
            }
            Op::Tool => match manager
                .tools()
                .call("local", Some(&id), "LS", json!({}))
                .await
            {
                Ok(result) => assert!(!result.is_error),
                Err(ManagerError::Busy(_)) => {}
                Err(err) => panic!("tool call failed: {err}"),
            },
            Op::Pause(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
        }
    }
    // Let everything settle: the session waits with no turn open.
    let mut events = Vec::new();
    for _ in 0..500 {
        events = manager.events().read("local", &id).await.unwrap();
        let settled = matches!(
            events.last().map(|e| &e.body),
            Some(EventBody::SessionWaiting(_))
        );
        if settled {
            tokio::time::sleep(Duration::from_millis(60)).await;
            let again = manager.events().read("local", &id).await.unwrap();
            if again.len() == events.len() {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let received = check_log(&events);
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event.index, i as u64);
    }
    // Every message arrives at most once (a coalesced turn joins several, in order)...
    let parts: Vec<String> = received
        .iter()
        .flat_map(|text| text.split("\n\n").map(str::to_string).collect::<Vec<_>>())
        .collect();
    let unique: BTreeSet<&String> = parts.iter().collect();
    assert_eq!(
        unique.len(),
        parts.len(),
        "a message arrived twice: {received:?}"
    );
    for part in &parts {
        assert!(sent.contains(part), "{part} was never sent");
    }
    // ...and none sent after the last stop (which clears the queue) is lost.
    for text in &sent[last_stop..] {
        assert!(
            parts.contains(text),
            "{text} was lost; received {received:?}"
        );
    }
    // Joined messages keep arrival order.
    let order: Vec<usize> = parts
        .iter()
        .map(|p| sent.iter().position(|s| s == p).unwrap())
        .collect();
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(order, sorted, "messages out of arrival order: {received:?}");
    manager.shutdown().await;
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn never_two_turns_at_once_and_coalesce_loses_nothing(ops in proptest::collection::vec(op(), 1..14)) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(scenario(ops));
    }
}
