//! The wire contract end to end: every route of `folio serve` is called with folio-protocol
//! request types, and every answer — success and error — is read back as its folio-protocol
//! type, exactly (a field the type does not know, or a missing one, fails the test).

mod serve_support;

use folio_protocol::{
    Acknowledged, ActionApprovalRequested, AgentDescription, AgentSummary, ApprovalDecision,
    ApprovalRequest, ArtifactRecord, ArtifactResponse, CreateSession, Empty, ErrorCode, EventBody,
    FollowUp, FollowUpAccepted, LogsResponse, Page, SessionCreated, SessionMode, SessionResponse,
    SessionStatus, SessionSummary, ToolCallRequest, ToolCallResult,
};
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serde_json::json;
use serve_support::*;

const AGENT: &str = "name = \"Wire Agent\"\nmodel = \"openai:gpt-test\"\n";

const DEPLOY: &str = r#"description = "Deploy a service."
command = ["sh", "-c", "cat >/dev/null; echo deployed"]
needs_approval = true

[input_schema]
type = "object"
required = ["target"]
properties.target = { type = "string" }
"#;

const ARTIFACTS: &str = r#"agent_tool = true
[kinds.note]
description = "A note"
"#;

#[tokio::test]
async fn every_route_answers_with_its_folio_protocol_type() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([(
        "tag_artifact",
        json!({"kind": "note", "key": "n1", "title": "First note", "data": {"n": 1}, "contents": "hello"}),
    )]));
    mock.push(MockReply::text("Tagged."));
    mock.push(MockReply::tool_calls([(
        "deploy",
        json!({"target": "prod"}),
    )]));
    mock.push(MockReply::text("Deployed."));
    let dir = project(AGENT);
    write_files(
        dir.path(),
        &[
            ("agent/tools/deploy.toml", DEPLOY),
            ("agent/artifacts.toml", ARTIFACTS),
        ],
    );
    let state = tempfile::tempdir().unwrap();
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let url = &server.url;
    let missing = "ses_01AAAAAAAAAAAAAAAAAAAAAAAA";

    // Host routes.
    let agents: Vec<AgentSummary> = expect(
        Method::GET,
        &format!("{}/v1/agents", server.host),
        NO_BODY,
        200,
    )
    .await;
    assert_eq!(
        agents,
        [AgentSummary {
            slug: "test-agent".into(),
            name: "Wire Agent".into(),
            description: None,
        }]
    );
    expect_error(
        Method::GET,
        &format!("{}/no-such-agent/v1/agent", server.host),
        NO_BODY,
        ErrorCode::NotFound,
    )
    .await;

    // Create, then follow the stream: every line is an Event.
    let create = CreateSession {
        title: Some("Wire".into()),
        ..CreateSession::message("tag a note")
    };
    let created: SessionCreated = expect(
        Method::POST,
        &format!("{url}/v1/session"),
        Some(&create),
        201,
    )
    .await;
    let id = created.session_id.clone();
    assert!(
        created
            .trace_url
            .ends_with(&format!("/v1/session/{id}/events"))
    );
    expect_error(
        Method::POST,
        &format!("{url}/v1/session"),
        Some(&json!({"message": "x", "colour": 1})),
        ErrorCode::InvalidRequest,
    )
    .await;
    let mut stream = Stream::open(url, &id, 0, None).await;
    stream.until("session.waiting").await;

    // The events dump: NDJSON of Events, the same as the stream.
    let dumped = events(url, &id).await;
    assert_eq!(dumped, stream.events);
    assert!(
        dumped
            .iter()
            .any(|e| matches!(&e.body, EventBody::ArtifactTagged(tagged) if tagged.key == "n1"))
    );

    // Session, list.
    let got: SessionResponse =
        expect(Method::GET, &format!("{url}/v1/session/{id}"), NO_BODY, 200).await;
    assert_eq!(
        (got.session.mode, got.session.status, got.session.turns),
        (SessionMode::Chat, SessionStatus::Waiting, 1)
    );
    assert_eq!(got.session.last_index, dumped.last().unwrap().index);
    expect_error(
        Method::GET,
        &format!("{url}/v1/session/{missing}"),
        NO_BODY,
        ErrorCode::NotFound,
    )
    .await;
    let page: Page<SessionSummary> =
        expect(Method::GET, &format!("{url}/v1/sessions"), NO_BODY, 200).await;
    assert_eq!(page.data, std::slice::from_ref(&got.session));
    assert_eq!(page.next_cursor, None);
    expect_error(
        Method::GET,
        &format!("{url}/v1/sessions?limit=0"),
        NO_BODY,
        ErrorCode::InvalidRequest,
    )
    .await;

    // Artifacts: the list, one record, its contents.
    let artifacts: Page<ArtifactRecord> =
        expect(Method::GET, &format!("{url}/v1/artifacts"), NO_BODY, 200).await;
    let [record] = artifacts.data.as_slice() else {
        panic!("one artifact: {artifacts:?}");
    };
    assert_eq!(
        (record.kind.as_str(), record.key.as_str(), &record.data),
        ("note", "n1", &json!({"n": 1}))
    );
    assert_eq!(record.session_id.as_deref(), Some(id.as_str()));
    let one: ArtifactResponse = expect(
        Method::GET,
        &format!("{url}/v1/artifacts/{}", record.id),
        NO_BODY,
        200,
    )
    .await;
    assert_eq!(&one.artifact, record);
    let contents = client()
        .get(format!("{url}/v1/artifacts/{}/content", record.id))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(contents, "hello");
    expect_error(
        Method::GET,
        &format!("{url}/v1/artifacts/art_missing"),
        NO_BODY,
        ErrorCode::NotFound,
    )
    .await;

    // Follow-up into an approval; decide it.
    let followed: FollowUpAccepted = expect(
        Method::POST,
        &format!("{url}/v1/session/{id}"),
        Some(&FollowUp::new(&created.continuation_token, "deploy prod")),
        200,
    )
    .await;
    assert_eq!(followed.session_id, id);
    expect_error(
        Method::POST,
        &format!("{url}/v1/session/{id}"),
        Some(&FollowUp::new(&created.continuation_token, "stale")),
        ErrorCode::StaleContinuationToken,
    )
    .await;
    let requested = stream.until("action.approval_requested").await;
    let call_id = &data::<ActionApprovalRequested>(&requested).call_id;
    let decision = ApprovalRequest {
        decision: ApprovalDecision::Approve,
        reason: None,
        content: None,
    };
    let approvals = format!("{url}/v1/session/{id}/approvals/{call_id}");
    let _: Acknowledged = expect(Method::POST, &approvals, Some(&decision), 200).await;
    expect_error(
        Method::POST,
        &approvals,
        Some(&decision),
        ErrorCode::ApprovalResolved,
    )
    .await;
    stream.until_count("session.waiting", 2).await;

    // Direct tool calls, session-bound and unscoped.
    let input = ToolCallRequest {
        input: json!({"path": "note.txt", "contents": "direct\n"}),
    };
    let wrote: ToolCallResult = expect(
        Method::POST,
        &format!("{url}/v1/session/{id}/tools/Write"),
        Some(&input),
        200,
    )
    .await;
    assert!(!wrote.is_error, "{wrote:?}");
    expect_error(
        Method::POST,
        &format!("{url}/v1/session/{id}/tools/NoSuchTool"),
        Some(&input),
        ErrorCode::NotFound,
    )
    .await;
    let listed: ToolCallResult = expect(
        Method::POST,
        &format!("{url}/v1/tools/deploy"),
        Some(&ToolCallRequest {
            input: json!({"target": "staging"}),
        }),
        200,
    )
    .await;
    assert!(!listed.is_error, "{listed:?}");
    expect_error(
        Method::POST,
        &format!("{url}/v1/tools/deploy"),
        Some(&ToolCallRequest { input: json!({}) }),
        ErrorCode::InvalidRequest,
    )
    .await;

    // The agent description and the logs.
    let agent: AgentDescription =
        expect(Method::GET, &format!("{url}/v1/agent"), NO_BODY, 200).await;
    assert_eq!(agent.agent.name, "Wire Agent");
    assert!(
        agent
            .tools
            .iter()
            .any(|t| t.name == "deploy" && t.needs_approval)
    );
    assert_eq!(agent.artifacts.map(|a| a.kinds.len()), Some(1));
    assert_eq!(agent.connections, []);
    let logs: LogsResponse =
        expect(Method::GET, &format!("{url}/v1/logs?since=0"), NO_BODY, 200).await;
    assert!(logs.lines.iter().any(|line| line.message.contains(&id)));
    expect_error(
        Method::GET,
        &format!("{url}/v1/logs?since=x"),
        NO_BODY,
        ErrorCode::InvalidRequest,
    )
    .await;

    // Stop (idle: a no-op), delete, then the session is gone.
    let _: Acknowledged = expect(
        Method::POST,
        &format!("{url}/v1/session/{id}/stop"),
        Some(&Empty {}),
        200,
    )
    .await;
    expect_error(
        Method::POST,
        &format!("{url}/v1/session/{missing}/stop"),
        Some(&Empty {}),
        ErrorCode::NotFound,
    )
    .await;
    let _: Acknowledged = expect(
        Method::DELETE,
        &format!("{url}/v1/session/{id}"),
        NO_BODY,
        200,
    )
    .await;
    expect_error(
        Method::DELETE,
        &format!("{url}/v1/session/{id}"),
        NO_BODY,
        ErrorCode::NotFound,
    )
    .await;
}
