//! Approvals end to end: an authored tool with `needs_approval = true` parks the model's call;
//! approve, deny, a second decision, and a parked call that survives `kill -9` and a restart.

mod serve_support;

use folio_protocol::{
    Acknowledged, ActionApprovalRequested, ActionApprovalResolved, ActionResult, ApprovalDecision,
    ApprovalRequest, CreateSession, ErrorCode, FollowUp, OkTrue, SessionStatus, TurnCompleted,
};
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serde_json::json;
use serve_support::*;

fn agent_with_deploy() -> Project {
    let dir = project("name = \"ops\"\nmodel = \"openai:gpt-test\"\n");
    std::fs::create_dir_all(dir.path().join("agent/tools")).unwrap();
    std::fs::write(
        dir.path().join("agent/tools/deploy.toml"),
        r#"description = "Deploy a service."
command = ["sh", "-c", "cat >/dev/null; echo deployed"]
needs_approval = true

[input_schema]
type = "object"
required = ["target"]
properties.target = { type = "string" }
"#,
    )
    .unwrap();
    dir
}

/// The decision body of an approval.
fn decide(decision: ApprovalDecision, reason: Option<&str>) -> ApprovalRequest {
    ApprovalRequest {
        decision,
        reason: reason.map(str::to_string),
        content: None,
    }
}

#[tokio::test]
async fn approve_deny_and_a_parked_call_surviving_kill_9() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([(
        "deploy",
        json!({"target": "prod"}),
    )]));
    mock.push(MockReply::text("Deployed."));
    let dir = agent_with_deploy();
    let state = tempfile::tempdir().unwrap();
    let mut server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let url = server.url.clone();
    let created = create_session(&url, &CreateSession::message("deploy prod")).await;
    let id = created.session_id;
    let mut stream = Stream::open(&url, &id, 0, None).await;
    let requested = stream.until("action.approval_requested").await;
    let requested = data::<ActionApprovalRequested>(&requested).clone();
    assert_eq!(
        (requested.tool.as_str(), &requested.input),
        ("deploy", &json!({"target": "prod"}))
    );
    let approvals = format!("{url}/v1/session/{id}/approvals/{}", requested.call_id);
    expect_error(
        Method::POST,
        &approvals,
        Some(&json!({"decision": "approve", "extra": 1})),
        ErrorCode::InvalidRequest,
    )
    .await;
    let approve = decide(ApprovalDecision::Approve, None);
    let ok: Acknowledged = expect(Method::POST, &approvals, Some(&approve), 200).await;
    assert_eq!(ok, Acknowledged { ok: OkTrue });
    expect_error(
        Method::POST,
        &approvals,
        Some(&approve),
        ErrorCode::ApprovalResolved,
    )
    .await;
    let resolved = stream.until("action.approval_resolved").await;
    assert_eq!(
        data::<ActionApprovalResolved>(&resolved),
        &ActionApprovalResolved {
            call_id: requested.call_id.clone(),
            decision: ApprovalDecision::Approve,
            reason: None,
            by: "local".into(),
            content: None,
        }
    );
    let result = stream.until("action.result").await;
    let result = data::<ActionResult>(&result);
    assert!(!result.is_error, "{result:?}");
    assert!(
        result
            .output
            .as_ref()
            .unwrap()
            .to_string()
            .contains("deployed"),
        "{result:?}"
    );
    stream.until("session.waiting").await;

    // Deny with a reason.
    mock.push(MockReply::tool_calls([("deploy", json!({"target": "eu"}))]));
    mock.push(MockReply::text("Not deployed."));
    let followed = follow_up(
        &url,
        &id,
        &FollowUp::new(&created.continuation_token, "and eu"),
    )
    .await;
    let requested = stream.until("action.approval_requested").await;
    let call_id = &data::<ActionApprovalRequested>(&requested).call_id;
    let _: Acknowledged = expect(
        Method::POST,
        &format!("{url}/v1/session/{id}/approvals/{call_id}"),
        Some(&decide(ApprovalDecision::Deny, Some("freeze week"))),
        200,
    )
    .await;
    let result = stream.until("action.result").await;
    let result = data::<ActionResult>(&result);
    assert_eq!(
        (result.error.as_deref(), result.is_error),
        (Some("denied by local: freeze week"), true)
    );
    stream.until_count("session.waiting", 2).await;

    // Parked, then the server dies; after the restart the decision resumes the turn.
    mock.push(MockReply::tool_calls([("deploy", json!({"target": "us"}))]));
    mock.push(MockReply::text("Deployed after the restart."));
    follow_up(
        &url,
        &id,
        &FollowUp::new(&followed.continuation_token, "and us"),
    )
    .await;
    stream.until_count("action.approval_requested", 3).await;
    let parked = (*of_type::<ActionApprovalRequested>(&stream.events)
        .last()
        .unwrap())
    .clone();
    server.child.start_kill().unwrap();
    server.child.wait().await.unwrap();
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let url = server.url.clone();
    assert_eq!(
        session(&url, &id).await.status,
        SessionStatus::Running,
        "still parked"
    );
    let next = parked.index + 1;
    let mut resumed = Stream::open(&url, &id, next, None).await;
    let call_id = &data::<ActionApprovalRequested>(&parked).call_id;
    let _: Acknowledged = expect(
        Method::POST,
        &format!("{url}/v1/session/{id}/approvals/{call_id}"),
        Some(&approve),
        200,
    )
    .await;
    resumed.until("session.waiting").await;
    assert_contiguous(&resumed.events, next);
    let types = resumed.types();
    assert_eq!(types[..2], ["action.approval_resolved", "action.result"]);
    assert_eq!(resumed.count("turn.failed"), 0);
    let completed = first::<TurnCompleted>(&resumed.events);
    assert_eq!(
        data::<TurnCompleted>(completed).reply,
        "Deployed after the restart."
    );
    assert_eq!(completed.turn_id, parked.turn_id, "the same turn resumed");
}
