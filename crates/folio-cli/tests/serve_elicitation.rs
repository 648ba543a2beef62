//! Elicitation end to end under `folio serve`: the real `server-everything` MCP server asks the
//! user for input during a tool call; the turn parks with `action.approval_requested` carrying
//! the message and schema; answers go through the approval route (`accept` with content checked
//! against the schema and completed with its defaults, `decline`), and the call finishes. A
//! question a restart interrupts is answered `cancel` with its call failed, and the turn goes on.

mod serve_support;

use std::path::{Path, PathBuf};

use folio_protocol::{
    Acknowledged, ActionApprovalRequested, ActionApprovalResolved, ActionResult, ApprovalDecision,
    ApprovalRequest, CreateSession, ErrorCode, FollowUp, TurnCompleted,
};
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serde_json::json;
use serve_support::*;

const TOOL: &str = "mcp__everything__trigger-elicitation-request";

fn everything() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/test-deps/npm/node_modules/.bin/mcp-server-everything");
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-test-deps (it installs the pinned MCP test servers)",
        path.display()
    );
    path
}

fn answer(decision: ApprovalDecision, content: Option<serde_json::Value>) -> ApprovalRequest {
    ApprovalRequest {
        decision,
        reason: None,
        content,
    }
}

/// An agent connected to `server-everything` over stdio.
fn asker() -> Project {
    let dir = project("name = \"asker\"\nmodel = \"openai:gpt-test\"\n");
    let connections = dir.path().join("agent/mcp-connections");
    std::fs::create_dir_all(&connections).unwrap();
    std::fs::write(
        connections.join("everything.toml"),
        format!(
            "command = \"{}\"\nargs = [\"stdio\"]\n",
            everything().display()
        ),
    )
    .unwrap();
    dir
}

/// The MCP call that asked died with the server: after the restart the question is answered
/// `cancel` by Folio, its call fails saying to call again, and the turn goes on to its reply;
/// the old question cannot be answered any more.
#[tokio::test]
async fn a_question_a_restart_interrupts_is_cancelled_and_the_turn_goes_on() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([(TOOL, json!({}))]));
    mock.push(MockReply::text("The question was lost; ask me again."));
    let dir = asker();
    let state = tempfile::tempdir().unwrap();
    let mut server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let created = create_session(&server.url, &CreateSession::message("ask me")).await;
    let id = created.session_id;
    let mut stream = Stream::open(&server.url, &id, 0, None).await;
    let requested = stream.until("action.approval_requested").await;
    let question = data::<ActionApprovalRequested>(&requested).call_id.clone();

    server.child.kill().await.unwrap();
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let url = server.url.clone();
    let mut stream = Stream::open(&url, &id, 0, None).await;
    let resolved = stream.until("action.approval_resolved").await;
    let resolved = data::<ActionApprovalResolved>(&resolved).clone();
    assert_eq!(
        (
            resolved.call_id.as_str(),
            resolved.decision,
            resolved.by.as_str()
        ),
        (question.as_str(), ApprovalDecision::Cancel, "folio")
    );
    assert!(
        resolved
            .reason
            .as_deref()
            .unwrap_or_default()
            .contains("server restarted"),
        "{resolved:?}"
    );
    let result = stream.until("action.result").await;
    let result = data::<ActionResult>(&result).clone();
    assert!(
        result.is_error
            && result.tool == TOOL
            && result
                .error
                .as_deref()
                .unwrap_or_default()
                .contains("call the tool again"),
        "{result:?}"
    );
    let done = stream.until("turn.completed").await;
    assert_eq!(
        data::<TurnCompleted>(&done).reply,
        "The question was lost; ask me again."
    );
    stream.until("session.waiting").await;
    expect_error(
        Method::POST,
        &format!("{url}/v1/session/{id}/approvals/{question}"),
        Some(&answer(ApprovalDecision::Cancel, None)),
        ErrorCode::ApprovalResolved,
    )
    .await;
}

#[tokio::test]
async fn an_elicitation_parks_the_turn_and_is_answered_through_the_approval_route() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([(TOOL, json!({}))]));
    mock.push(MockReply::text("Thanks, Ada."));
    let dir = asker();
    let state = tempfile::tempdir().unwrap();
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let url = server.url.clone();
    let created = create_session(&url, &CreateSession::message("ask me")).await;
    let id = created.session_id;
    let mut stream = Stream::open(&url, &id, 0, None).await;

    let requested = stream.until("action.approval_requested").await;
    let requested = data::<ActionApprovalRequested>(&requested).clone();
    let elicitation = requested.elicitation.clone().expect("an elicitation");
    assert_eq!(
        (
            requested.tool.as_str(),
            elicitation.server.as_str(),
            elicitation.message.as_str()
        ),
        (
            TOOL,
            "everything",
            "Please provide inputs for the following fields:"
        )
    );
    assert!(
        requested.call_id.starts_with("eli_"),
        "{}",
        requested.call_id
    );
    let route = format!("{url}/v1/session/{id}/approvals/{}", requested.call_id);

    // A tool call's decision, content that misses a required field, and content of the wrong
    // type are refused, saying what to send; nothing is resolved by them.
    for bad in [
        answer(ApprovalDecision::Approve, None),
        answer(ApprovalDecision::Accept, None),
        answer(
            ApprovalDecision::Accept,
            Some(json!({"name": "Ada", "integer": "many"})),
        ),
        answer(ApprovalDecision::Decline, Some(json!({"name": "Ada"}))),
    ] {
        expect_error(Method::POST, &route, Some(&bad), ErrorCode::InvalidRequest).await;
    }

    let accept = answer(ApprovalDecision::Accept, Some(json!({"name": "Ada"})));
    let _: Acknowledged = expect(Method::POST, &route, Some(&accept), 200).await;
    expect_error(
        Method::POST,
        &route,
        Some(&accept),
        ErrorCode::ApprovalResolved,
    )
    .await;
    let resolved = stream.until("action.approval_resolved").await;
    let resolved = data::<ActionApprovalResolved>(&resolved).clone();
    let content = resolved.content.clone().expect("the accepted content");
    assert_eq!(
        (
            resolved.decision,
            content.get("name"),
            content.get("integer"),
            content.get("firstLine")
        ),
        (
            ApprovalDecision::Accept,
            Some(&json!("Ada")),
            Some(&json!(42)),
            Some(&json!("It was a dark and stormy night."))
        )
    );
    let result = stream.until("action.result").await;
    let result = data::<ActionResult>(&result).clone();
    let output = result
        .output
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    assert!(
        !result.is_error && output.contains("Name: Ada") && output.contains("Favorite Integer: 42"),
        "{result:?}"
    );
    stream.until("session.waiting").await;

    // Declined: the server hears `decline` and the call still completes.
    mock.push(MockReply::tool_calls([(TOOL, json!({}))]));
    mock.push(MockReply::text("Fine."));
    follow_up(
        &url,
        &id,
        &FollowUp::new(&created.continuation_token, "again"),
    )
    .await;
    let requested = stream.until("action.approval_requested").await;
    let call_id = data::<ActionApprovalRequested>(&requested).call_id.clone();
    let _: Acknowledged = expect(
        Method::POST,
        &format!("{url}/v1/session/{id}/approvals/{call_id}"),
        Some(&answer(ApprovalDecision::Decline, None)),
        200,
    )
    .await;
    let result = stream.until("action.result").await;
    let output = data::<ActionResult>(&result)
        .output
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    assert!(output.contains("declined"), "{output}");
}
