//! Approvals over HTTP: a parked call, approve, deny, a second decision, and a parked approval
//! that survives a restart.

mod support;

use std::time::Duration;

use folio_protocol::{
    Acknowledged, ApprovalDecision, ApprovalRequest, CreateSession, ErrorBody, ErrorCode, Event,
    EventBody, FollowUp, FollowUpAccepted, OkTrue, SessionCreated, ToolCallRequest, ToolCallResult,
};
use folio_test_support::{MockModelServer, MockReply, call_as};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use support::*;

/// POSTs `body` and reads the answer as its folio-protocol type `T` ([`ErrorBody`] for errors).
async fn post<T: Serialize + DeserializeOwned>(url: &str, body: &impl Serialize) -> (u16, T) {
    call_as(Method::POST, url, Some(body), None).await
}

fn decision(decision: ApprovalDecision, reason: Option<&str>) -> ApprovalRequest {
    ApprovalRequest {
        decision,
        reason: reason.map(str::to_string),
        content: None,
    }
}

fn tool_input(input: serde_json::Value) -> ToolCallRequest {
    ToolCallRequest { input }
}

/// Waits until the session's log satisfies `done`, returning the events.
async fn wait_for(
    manager: &folio_session::SessionManager,
    id: &str,
    done: impl Fn(&[Event]) -> bool,
) -> Vec<Event> {
    for _ in 0..300 {
        let events = manager.events().read("local", id).await.unwrap();
        if done(&events) {
            return events;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!(
        "timed out; events: {:#?}",
        manager.events().read("local", id).await.unwrap()
    );
}

fn count(events: &[Event], kind: &str) -> usize {
    events.iter().filter(|e| e.event_type() == kind).count()
}

#[tokio::test]
async fn approve_deny_single_use_and_survive_a_restart() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([(
        "Deploy",
        json!({"target": "prod"}),
    )]));
    mock.push(MockReply::text("deployed it"));
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent(&mock, dir.path()).await, state.path()).await;
    let url = http(manager.clone()).await;

    let (status, created): (_, SessionCreated) = post(
        &format!("{url}/v1/session"),
        &CreateSession::message("ship it"),
    )
    .await;
    assert_eq!(status, 201);
    let id = created.session_id;
    let token = created.continuation_token;
    let events = wait_for(&manager, &id, |e| {
        count(e, "action.approval_requested") == 1
    })
    .await;
    let requested = events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::ActionApprovalRequested(r) => Some(r.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(requested.tool, "Deploy");
    assert_eq!(requested.input, json!({"target": "prod"}));
    // Parked: the tool has not run, the session is busy.
    assert_eq!(count(&events, "action.result"), 0);
    let (status, busy): (_, ErrorBody) = post(
        &format!("{url}/v1/session/{id}/tools/Deploy"),
        &tool_input(json!({"target": "x"})),
    )
    .await;
    assert_eq!((status, busy.error), (409, ErrorCode::SessionBusy));

    let approvals = format!("{url}/v1/session/{id}/approvals/{}", requested.call_id);
    let (status, bad): (_, ErrorBody) = post(&approvals, &json!({"decision": "maybe"})).await;
    assert_eq!((status, bad.error), (400, ErrorCode::InvalidRequest));
    let (status, ok): (_, Acknowledged) =
        post(&approvals, &decision(ApprovalDecision::Approve, None)).await;
    assert_eq!((status, ok), (200, Acknowledged { ok: OkTrue }));
    let (status, again): (_, ErrorBody) =
        post(&approvals, &decision(ApprovalDecision::Deny, None)).await;
    assert_eq!((status, again.error), (409, ErrorCode::ApprovalResolved));
    let events = wait_for(&manager, &id, |e| count(e, "session.waiting") == 1).await;
    let resolved = events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::ActionApprovalResolved(r) => Some(r.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(resolved.by, "local");
    let result = events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::ActionResult(r) => Some(r.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(result.output, Some(json!("deployed prod")));
    assert!(!result.is_error);
    // A direct call skips the gate (and validates its input).
    let (status, direct): (_, ToolCallResult) = post(
        &format!("{url}/v1/session/{id}/tools/Deploy"),
        &tool_input(json!({"target": "staging"})),
    )
    .await;
    assert_eq!(
        (status, direct),
        (
            200,
            ToolCallResult {
                ok: OkTrue,
                result: json!("deployed staging"),
                is_error: false
            }
        )
    );
    let (status, invalid): (_, ErrorBody) =
        post(&format!("{url}/v1/tools/Deploy"), &tool_input(json!({}))).await;
    assert_eq!((status, invalid.error), (400, ErrorCode::InvalidRequest));

    // Deny: the model gets `denied by ${by}: ${reason}`.
    mock.push(MockReply::tool_calls([(
        "Deploy",
        json!({"target": "prod"}),
    )]));
    mock.push(MockReply::text("ok, not deploying"));
    let (_, followed): (_, FollowUpAccepted) = post(
        &format!("{url}/v1/session/{id}"),
        &FollowUp::new(token, "again"),
    )
    .await;
    let token = followed.continuation_token;
    let events = wait_for(&manager, &id, |e| {
        count(e, "action.approval_requested") == 2
    })
    .await;
    let call_id = events
        .iter()
        .rev()
        .find_map(|e| match &e.body {
            EventBody::ActionApprovalRequested(r) => Some(r.call_id.clone()),
            _ => None,
        })
        .unwrap();
    let (status, _): (_, Acknowledged) = post(
        &format!("{url}/v1/session/{id}/approvals/{call_id}"),
        &decision(ApprovalDecision::Deny, Some("not today")),
    )
    .await;
    assert_eq!(status, 200);
    let events = wait_for(&manager, &id, |e| count(e, "session.waiting") == 2).await;
    let denied = events
        .iter()
        .rev()
        .find_map(|e| match &e.body {
            EventBody::ActionResult(r) => Some(r.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(denied.error.as_deref(), Some("denied by local: not today"));
    assert!(denied.is_error);
    let last_request = mock.requests().last().unwrap().body.clone();
    assert!(
        last_request
            .to_string()
            .contains("denied by local: not today")
    );

    // A parked approval survives a restart: shut down while parked, reopen, resolve.
    mock.push(MockReply::tool_calls([("Deploy", json!({"target": "eu"}))]));
    mock.push(MockReply::text("resumed and deployed"));
    let (status, _): (_, FollowUpAccepted) = post(
        &format!("{url}/v1/session/{id}"),
        &FollowUp::new(token, "third"),
    )
    .await;
    assert_eq!(status, 200);
    let events = wait_for(&manager, &id, |e| {
        count(e, "action.approval_requested") == 3
    })
    .await;
    let call_id = events
        .iter()
        .rev()
        .find_map(|e| match &e.body {
            EventBody::ActionApprovalRequested(r) => Some(r.call_id.clone()),
            _ => None,
        })
        .unwrap();
    manager.shutdown().await;
    let before = manager.events().read("local", &id).await.unwrap();
    assert_eq!(
        count(&before, "turn.failed"),
        0,
        "a parked turn is not interrupted by shutdown"
    );

    let restarted = support::manager(agent(&mock, dir.path()).await, state.path()).await;
    let after = restarted.events().read("local", &id).await.unwrap();
    assert_eq!(
        after.len(),
        before.len(),
        "recovery leaves a parked turn parked"
    );
    let url = http(restarted.clone()).await;
    let (status, busy): (_, ErrorBody) = post(
        &format!("{url}/v1/session/{id}/tools/Deploy"),
        &tool_input(json!({"target": "x"})),
    )
    .await;
    assert_eq!(
        (status, busy.error),
        (409, ErrorCode::SessionBusy),
        "a parked turn holds the execution lock across the restart"
    );
    let (status, _): (_, Acknowledged) = post(
        &format!("{url}/v1/session/{id}/approvals/{call_id}"),
        &decision(ApprovalDecision::Approve, None),
    )
    .await;
    assert_eq!(status, 200);
    let events = wait_for(&restarted, &id, |e| count(e, "session.waiting") == 3).await;
    let tail: Vec<&str> = events[before.len()..]
        .iter()
        .map(|e| e.event_type())
        .collect();
    assert_eq!(
        tail[..3],
        ["action.approval_resolved", "action.result", "step.started"]
    );
    assert_eq!(tail.last(), Some(&"session.waiting"));
    assert_eq!(count(&events, "turn.failed"), 0);
    let completed = events
        .iter()
        .rev()
        .find_map(|e| match &e.body {
            EventBody::TurnCompleted(c) => Some(c.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(completed.reply, "resumed and deployed");
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event.index, i as u64);
    }
}

#[tokio::test]
async fn a_follow_up_preempts_a_turn_parked_across_a_restart() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([(
        "Deploy",
        json!({"target": "prod"}),
    )]));
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let first = manager(agent(&mock, dir.path()).await, state.path()).await;
    let id = first
        .sessions()
        .create(
            "local",
            "http",
            folio_protocol::CreateSession::message("ship it"),
        )
        .await
        .unwrap()
        .session_id;
    let events = wait_for(&first, &id, |e| count(e, "action.approval_requested") == 1).await;
    let call_id = events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::ActionApprovalRequested(r) => Some(r.call_id.clone()),
            _ => None,
        })
        .unwrap();
    first.shutdown().await;

    mock.push(MockReply::text("fresh answer"));
    let second = support::manager(agent(&mock, dir.path()).await, state.path()).await;
    second
        .turns()
        .send("local", &id, "never mind", None)
        .await
        .unwrap();
    let events = wait_for(&second, &id, |e| count(e, "session.waiting") == 1).await;
    let types: Vec<&str> = events.iter().map(|e| e.event_type()).collect();
    let failed = types.iter().position(|t| *t == "turn.failed").unwrap();
    assert_eq!(types[failed + 1], "message.received");
    assert_eq!(count(&events, "turn.completed"), 1);
    let err = second
        .approvals()
        .resolve(
            "local",
            &id,
            &call_id,
            decision(folio_protocol::ApprovalDecision::Approve, None),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), folio_protocol::ErrorCode::ApprovalResolved);
}
