//! Approval timeouts end to end: a parked call whose `expiresAt` passes is denied by folio
//! (`approval timed out`) and the turn goes on; a decision before the deadline stands; the
//! stored deadline holds across `kill -9` and a restart.

mod serve_support;

use std::time::Duration;

use folio_protocol::{
    APPROVAL_TIMED_OUT, Acknowledged, ActionApprovalRequested, ActionApprovalResolved,
    ActionResult, ApprovalDecision, ApprovalRequest, CreateSession, DECIDED_BY_FOLIO, ErrorCode,
    TurnCompleted,
};
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serde_json::json;
use serve_support::*;

/// An agent whose default approval timeout is `default`, with the tools `deploy` (no timeout
/// of its own) and `quick` (`approval_timeout = quick`), both needing approval.
fn agent(default: &str, quick: &str) -> Project {
    let dir = project(&format!(
        "name = \"ops\"\nmodel = \"openai:gpt-test\"\n\n[approvals]\ntimeout = \"{default}\"\n"
    ));
    std::fs::create_dir_all(dir.path().join("agent/tools")).unwrap();
    let tool = |name: &str, timeout: &str| {
        std::fs::write(
            dir.path().join(format!("agent/tools/{name}.toml")),
            format!(
                r#"description = "Deploy a service."
command = ["sh", "-c", "cat >/dev/null; echo deployed"]
needs_approval = true
{timeout}
"#
            ),
        )
        .unwrap();
    };
    tool("deploy", "");
    tool("quick", &format!("approval_timeout = \"{quick}\""));
    dir
}

/// Folio's denial of `call_id` at its deadline.
fn timed_out(call_id: &str) -> ActionApprovalResolved {
    ActionApprovalResolved {
        call_id: call_id.to_string(),
        decision: ApprovalDecision::Deny,
        reason: Some(APPROVAL_TIMED_OUT.into()),
        by: DECIDED_BY_FOLIO.into(),
        content: None,
    }
}

#[tokio::test]
async fn a_parked_call_is_denied_at_its_deadline_and_a_decision_before_it_stands() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([("quick", json!({}))]));
    mock.push(MockReply::text("It timed out."));
    let dir = agent("1h", "1s");
    let state = tempfile::tempdir().unwrap();
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let url = server.url.clone();
    let created = create_session(&url, &CreateSession::message("deploy")).await;
    let id = created.session_id;
    let mut stream = Stream::open(&url, &id, 0, None).await;

    // No decision: folio denies the call at its deadline and the turn goes on.
    let requested = stream.until("action.approval_requested").await;
    let parked = data::<ActionApprovalRequested>(&requested).clone();
    let expires_at = parked.expires_at.expect("quick has an approval timeout");
    let after = (expires_at - requested.at).num_milliseconds();
    assert!((900..=1100).contains(&after), "expires {after} ms after");
    let resolved = stream.until("action.approval_resolved").await;
    assert_eq!(
        data::<ActionApprovalResolved>(&resolved),
        &timed_out(&parked.call_id)
    );
    assert!(resolved.at >= expires_at, "not before the deadline");
    let result = stream.until("action.result").await;
    assert_eq!(
        data::<ActionResult>(&result).error.as_deref(),
        Some("denied by folio: approval timed out")
    );
    let completed = stream.until("turn.completed").await;
    assert_eq!(data::<TurnCompleted>(&completed).reply, "It timed out.");
    let late = ApprovalRequest {
        decision: ApprovalDecision::Approve,
        reason: None,
        content: None,
    };
    let approvals = format!("{url}/v1/session/{id}/approvals/{}", parked.call_id);
    expect_error(
        Method::POST,
        &approvals,
        Some(&late),
        ErrorCode::ApprovalResolved,
    )
    .await;
    stream.until("session.waiting").await;

    // `deploy` takes the agent's default (1 h): approved well before it, it runs.
    mock.push(MockReply::tool_calls([("deploy", json!({}))]));
    mock.push(MockReply::text("Deployed."));
    follow_up(
        &url,
        &id,
        &folio_protocol::FollowUp::new(&created.continuation_token, "deploy again"),
    )
    .await;
    let requested = stream.until("action.approval_requested").await;
    let parked = data::<ActionApprovalRequested>(&requested).clone();
    let after = (parked.expires_at.unwrap() - requested.at).num_seconds();
    assert!((3599..=3600).contains(&after), "expires {after} s after");
    let approvals = format!("{url}/v1/session/{id}/approvals/{}", parked.call_id);
    let _: Acknowledged = expect(Method::POST, &approvals, Some(&late), 200).await;
    let resolved = stream.until("action.approval_resolved").await;
    assert_eq!(
        data::<ActionApprovalResolved>(&resolved).decision,
        ApprovalDecision::Approve
    );
    let result = stream.until("action.result").await;
    assert!(!data::<ActionResult>(&result).is_error, "{result:?}");
    let completed = stream.until("turn.completed").await;
    assert_eq!(data::<TurnCompleted>(&completed).reply, "Deployed.");
}

#[tokio::test]
async fn the_stored_deadline_holds_across_kill_9_and_a_restart() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([("quick", json!({}))]));
    mock.push(MockReply::text("It timed out while I was down."));
    let dir = agent("1h", "3s");
    let state = tempfile::tempdir().unwrap();
    let mut server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let url = server.url.clone();
    let created = create_session(&url, &CreateSession::message("deploy")).await;
    let id = created.session_id;
    let mut stream = Stream::open(&url, &id, 0, None).await;
    let requested = stream.until("action.approval_requested").await;
    let parked = data::<ActionApprovalRequested>(&requested).clone();
    let expires_at = parked.expires_at.expect("quick has an approval timeout");
    server.child.start_kill().unwrap();
    server.child.wait().await.unwrap();
    drop(stream);
    // Down for part of the deadline: denied at the stored deadline, well before 3 s after the
    // restart.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let restarted = chrono::Utc::now();
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let url = server.url.clone();
    let mut resumed = Stream::open(&url, &id, requested.index + 1, None).await;
    let resolved = resumed.until("action.approval_resolved").await;
    assert_eq!(
        data::<ActionApprovalResolved>(&resolved),
        &timed_out(&parked.call_id)
    );
    assert!(resolved.at >= expires_at, "not before the deadline");
    assert!(
        resolved.at < restarted + chrono::Duration::milliseconds(2500),
        "denied at the stored deadline ({expires_at}), not 3 s after the restart ({restarted}): {}",
        resolved.at
    );
    let completed = resumed.until("turn.completed").await;
    assert_eq!(
        completed.turn_id, requested.turn_id,
        "the same turn resumed"
    );
    assert_eq!(
        data::<TurnCompleted>(&completed).reply,
        "It timed out while I was down."
    );
}

#[tokio::test]
async fn a_deadline_passed_while_the_server_was_down_denies_at_once() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([("quick", json!({}))]));
    mock.push(MockReply::text("Timed out."));
    let dir = agent("1h", "1s");
    let state = tempfile::tempdir().unwrap();
    let mut server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let url = server.url.clone();
    let created = create_session(&url, &CreateSession::message("deploy")).await;
    let id = created.session_id;
    let mut stream = Stream::open(&url, &id, 0, None).await;
    let requested = stream.until("action.approval_requested").await;
    let expires_at = data::<ActionApprovalRequested>(&requested)
        .expires_at
        .unwrap();
    server.child.start_kill().unwrap();
    server.child.wait().await.unwrap();
    drop(stream);
    let wait = (expires_at - chrono::Utc::now())
        .to_std()
        .unwrap_or_default();
    tokio::time::sleep(wait + Duration::from_millis(200)).await;
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let mut resumed = Stream::open(&server.url, &id, requested.index + 1, None).await;
    let resolved = resumed.until("action.approval_resolved").await;
    assert_eq!(
        data::<ActionApprovalResolved>(&resolved).reason.as_deref(),
        Some(APPROVAL_TIMED_OUT)
    );
    resumed.until("turn.completed").await;
}
