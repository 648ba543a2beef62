//! `folio serve` end to end: the process is started with `--port 0`, the mock model server is
//! the model, and the tests speak HTTP (docs/http-api.md, every route and error code). Every
//! answer is read as its folio-protocol type and asserted on as a typed value.

mod serve_support;

use std::collections::BTreeMap;
use std::time::Duration;

use folio_protocol::{
    Acknowledged, Admission, AgentDescription, AgentSummary, CreateSession, Empty, ErrorBody,
    ErrorCode, EventBody, FollowUp, FollowUpAccepted, HookInfo, LogsResponse, MessageReceived,
    OkTrue, Page, SessionCreated, SessionMode, SessionStarted, SessionStatus, SessionSummary,
    TURN_INTERRUPTED, ToolCallRequest, ToolCallResult, TurnCompleted, TurnFailed, TurnQueued,
};
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serde_json::{Value, json};
use serve_support::*;

const AGENT: &str =
    "name = \"Test Agent\"\ndescription = \"answers tests\"\nmodel = \"openai:gpt-test\"\n";

fn slow(text: &str) -> MockReply {
    MockReply::text(text).first_byte_delay(Duration::from_secs(3))
}

/// A direct tool call's body.
fn tool_input(input: Value) -> ToolCallRequest {
    ToolCallRequest { input }
}

/// `url`'s sessions, as `token` sees them.
async fn sessions(url: &str, token: Option<&str>) -> Page<SessionSummary> {
    let (status, page) = answer(Method::GET, url, NO_BODY, token).await;
    assert_eq!(status, 200, "{page:?}");
    page.unwrap()
}

#[tokio::test]
async fn routes_bodies_statuses_and_error_codes() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("Hello there."));
    mock.push(MockReply::text("Second answer."));
    mock.push(MockReply::text("Other answer."));
    let dir = project(AGENT);
    // Something of each kind for GET /v1/agent to report.
    write_files(
        dir.path(),
        &[
            (
                "agent/skills/triage.md",
                "Use when a bug report arrives and needs a severity label.\n",
            ),
            (
                "agent/hooks/audit.toml",
                "events = [\"turn.completed\"]\ncommand = [\"true\"]\n",
            ),
        ],
    );
    let state = tempfile::tempdir().unwrap();
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let url = &server.url;
    assert!(url.ends_with("/test-agent"), "{url}");

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
            name: "Test Agent".into(),
            description: Some("answers tests".into()),
        }]
    );
    let (status, index) = get(&format!("{}/", server.host)).await;
    assert_eq!(status, 200);
    assert!(index.as_str().unwrap().contains("Test Agent"));
    let (status, playground) = get(&format!("{url}/playground")).await;
    assert_eq!(status, 200);
    assert!(playground.as_str().unwrap().contains("Folio playground"));

    // Create: 201, returns before the turn ends.
    let created = create_session(
        url,
        &CreateSession {
            title: Some("Greeting".into()),
            ..CreateSession::message("hi")
        },
    )
    .await;
    let id = created.session_id.clone();
    assert!(id.starts_with("ses_") && id.len() == 30, "{id}");
    let token = created.continuation_token.clone();
    assert!(token.starts_with("http:"), "{token}");
    assert_eq!(
        created,
        SessionCreated {
            ok: OkTrue,
            session_id: id.clone(),
            continuation_token: token.clone(),
            playground_url: format!("/test-agent/playground?session={id}"),
            trace_url: format!("/test-agent/v1/session/{id}/events"),
        }
    );

    let mut stream = Stream::open(url, &id, 0, None).await;
    stream.until("session.waiting").await;
    let types = stream.types();
    assert_eq!(
        types[..4],
        [
            "session.started",
            "message.received",
            "turn.started",
            "step.started"
        ]
    );
    assert_eq!(
        types[types.len() - 4..],
        [
            "message.completed",
            "step.completed",
            "turn.completed",
            "session.waiting"
        ]
    );
    assert!(types.contains(&"message.appended"));
    assert_contiguous(&stream.events, 0);
    let completed = first::<TurnCompleted>(&stream.events);
    assert_eq!(data::<TurnCompleted>(completed).reply, "Hello there.");
    assert!(
        completed.turn_id.as_deref().unwrap().starts_with("turn_"),
        "{completed:?}"
    );

    // Follow-up: the token rotates; the old one is stale.
    let followed = follow_up(url, &id, &FollowUp::new(&token, "again")).await;
    let token2 = followed.continuation_token.clone();
    assert_ne!(token, token2);
    assert_eq!(
        followed,
        FollowUpAccepted {
            ok: OkTrue,
            session_id: id.clone(),
            continuation_token: token2,
        }
    );
    stream.until_count("session.waiting", 2).await;
    expect_error(
        Method::POST,
        &format!("{url}/v1/session/{id}"),
        Some(&FollowUp::new(&token, "stale")),
        ErrorCode::StaleContinuationToken,
    )
    .await;

    // The conversation continues: the second request carries both user messages.
    assert_eq!(mock.requests()[1].user_texts(), ["hi", "again"]);

    // GET session, events dump, list.
    let got = session(url, &id).await;
    let last_index = stream.events.last().unwrap().index;
    assert_eq!(
        got,
        SessionSummary {
            session_id: id.clone(),
            mode: SessionMode::Chat,
            status: SessionStatus::Waiting,
            title: "Greeting".into(),
            // The server's clock.
            created_at: got.created_at.clone(),
            updated_at: got.updated_at.clone(),
            turns: 2,
            last_index,
            // Both turns' usage, summed.
            usage: all::<TurnCompleted>(&stream.events)
                .iter()
                .filter_map(|completed| completed.usage)
                .sum(),
            continuation_key: None,
            variant: None,
        }
    );
    let dump = client()
        .get(format!("{url}/v1/session/{id}/events"))
        .send()
        .await
        .unwrap();
    assert_eq!(dump.headers()["content-type"], "application/x-ndjson");
    let dumped = read_ndjson(&dump.text().await.unwrap());
    assert_eq!(dumped, stream.events);
    // Replay from an index: exactly the tail.
    let mut tail = Stream::open(url, &id, last_index - 1, None).await;
    assert_eq!(
        tail.next().await.unwrap(),
        stream.events[stream.events.len() - 2]
    );

    let second = create_session(
        url,
        &CreateSession {
            title: Some("Other".into()),
            ..CreateSession::message("x")
        },
    )
    .await;
    let list = sessions(&format!("{url}/v1/sessions"), None).await;
    let ids: Vec<&str> = list.data.iter().map(|s| s.session_id.as_str()).collect();
    assert_eq!(
        ids,
        [second.session_id.as_str(), id.as_str()],
        "newest first"
    );
    assert_eq!(list.next_cursor, None);
    let page = sessions(&format!("{url}/v1/sessions?limit=1"), None).await;
    assert_eq!(page.data.len(), 1);
    let cursor = page.next_cursor.expect("a cursor to the second page");
    let page2 = sessions(&format!("{url}/v1/sessions?limit=1&cursor={cursor}"), None).await;
    assert_eq!(page2, Page::new(vec![got.clone()], None));
    let found = sessions(&format!("{url}/v1/sessions?q=greet"), None).await;
    assert_eq!(found, Page::new(vec![got.clone()], None));

    // 400: unknown field (named), missing field, bad JSON, bad enum.
    let bad = expect_error(
        Method::POST,
        &format!("{url}/v1/session"),
        Some(&json!({"message": "x", "colour": 1})),
        ErrorCode::InvalidRequest,
    )
    .await;
    assert!(bad.message.contains("colour"), "{bad}");
    let bad = expect_error(
        Method::POST,
        &format!("{url}/v1/session"),
        Some(&json!({"title": "x"})),
        ErrorCode::InvalidRequest,
    )
    .await;
    assert!(bad.message.contains("message"), "{bad}");
    let raw = client()
        .post(format!("{url}/v1/session"))
        .header("content-type", "application/json")
        .body("{nope")
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status().as_u16(), 400);
    let bad: ErrorBody = read_wire(&raw.json().await.unwrap());
    assert_eq!(bad.error, ErrorCode::InvalidRequest);
    expect_error(
        Method::POST,
        &format!("{url}/v1/session"),
        Some(&json!({"message": "x", "mode": "batch"})),
        ErrorCode::InvalidRequest,
    )
    .await;
    let files = |path: &str| CreateSession {
        workspace_files: BTreeMap::from([(path.to_string(), "x".to_string())]),
        ..CreateSession::message("x")
    };
    expect_error(
        Method::POST,
        &format!("{url}/v1/session"),
        Some(&files("../escape")),
        ErrorCode::InvalidRequest,
    )
    .await;
    let bad = expect_error(
        Method::POST,
        &format!("{url}/v1/session"),
        Some(&files("memory/notes.md")),
        ErrorCode::InvalidRequest,
    )
    .await;
    assert!(bad.message.contains("memory/"), "{bad}");

    // 413 over 1 MiB.
    let big = "x".repeat(1024 * 1024 + 10);
    expect_error(
        Method::POST,
        &format!("{url}/v1/session"),
        Some(&CreateSession::message(big)),
        ErrorCode::PayloadTooLarge,
    )
    .await;

    // 404s.
    let missing = "ses_01AAAAAAAAAAAAAAAAAAAAAAAA";
    for (method, path) in [
        (Method::GET, format!("/v1/session/{missing}")),
        (Method::GET, format!("/v1/session/{missing}/events")),
        (Method::GET, format!("/v1/session/{missing}/stream")),
        (Method::POST, format!("/v1/session/{missing}/stop")),
        (Method::DELETE, format!("/v1/session/{missing}")),
        (Method::GET, "/v1/session/../../etc".to_string()),
    ] {
        expect_error(
            method,
            &format!("{url}{path}"),
            NO_BODY,
            ErrorCode::NotFound,
        )
        .await;
    }
    expect_error(
        Method::POST,
        &format!("{url}/v1/tools/NoSuchTool"),
        Some(&tool_input(json!({}))),
        ErrorCode::NotFound,
    )
    .await;
    expect_error(
        Method::GET,
        &format!("{}/no-such-agent/v1/agent", server.host),
        NO_BODY,
        ErrorCode::NotFound,
    )
    .await;

    // Direct tool calls: unscoped and session-bound; validation still applies.
    let wrote: ToolCallResult = expect(
        Method::POST,
        &format!("{url}/v1/session/{id}/tools/Write"),
        Some(&tool_input(
            json!({"path": "note.txt", "contents": "direct\n"}),
        )),
        200,
    )
    .await;
    assert_eq!(
        wrote,
        ToolCallResult {
            ok: OkTrue,
            result: json!("Wrote contents to note.txt"),
            is_error: false,
        }
    );
    let read: ToolCallResult = expect(
        Method::POST,
        &format!("{url}/v1/session/{id}/tools/Read"),
        Some(&tool_input(json!({"path": "note.txt"}))),
        200,
    )
    .await;
    assert_eq!(
        read,
        ToolCallResult {
            ok: OkTrue,
            result: json!("     1\tdirect"),
            is_error: false,
        }
    );
    let missing_file: ToolCallResult = expect(
        Method::POST,
        &format!("{url}/v1/session/{id}/tools/Read"),
        Some(&tool_input(json!({"path": "nope.txt"}))),
        200,
    )
    .await;
    assert!(missing_file.is_error, "{missing_file:?}");
    // Built-in tools run only session-scoped (the unscoped workspace is shared).
    for tool in ["Read", "LS", "Shell", "Write"] {
        expect_error(
            Method::POST,
            &format!("{url}/v1/tools/{tool}"),
            Some(&tool_input(json!({}))),
            ErrorCode::Forbidden,
        )
        .await;
    }
    expect_error(
        Method::POST,
        &format!("{url}/v1/session/{id}/tools/Read"),
        Some(&tool_input(json!({}))),
        ErrorCode::InvalidRequest,
    )
    .await;
    let listed: ToolCallResult = expect(
        Method::POST,
        &format!("{url}/v1/session/{id}/tools/LS"),
        Some(&tool_input(json!({}))),
        200,
    )
    .await;
    assert!(!listed.is_error, "{listed:?}");
    assert!(
        state
            .path()
            .join("test-agent/sessions")
            .join(&id)
            .join("workspace/note.txt")
            .exists()
    );

    // /v1/agent, /v1/logs.
    let agent: AgentDescription =
        expect(Method::GET, &format!("{url}/v1/agent"), NO_BODY, 200).await;
    assert_eq!(agent.agent.name, "Test Agent");
    assert!(
        agent
            .tools
            .iter()
            .any(|t| t.name == "Read" && t.input_schema.is_object())
    );
    let skills: Vec<&str> = agent.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(skills, ["triage"]);
    assert_eq!(
        agent.hooks,
        [HookInfo {
            name: "audit".into(),
            events: vec!["turn.completed".into()],
            command: vec!["true".into()],
        }]
    );
    let logs: LogsResponse =
        expect(Method::GET, &format!("{url}/v1/logs?since=0"), NO_BODY, 200).await;
    assert!(
        logs.lines.iter().any(|l| l.message.contains(&id)),
        "{logs:?}"
    );
    let last_seq = logs.lines.last().unwrap().seq;
    let newer: LogsResponse = expect(
        Method::GET,
        &format!("{url}/v1/logs?since={last_seq}"),
        NO_BODY,
        200,
    )
    .await;
    assert_eq!(newer.lines, []);

    // Stop on an idle session: a no-op 200. Delete: 200, then 404 everywhere.
    let stopped: Acknowledged = expect(
        Method::POST,
        &format!("{url}/v1/session/{id}/stop"),
        Some(&Empty {}),
        200,
    )
    .await;
    assert_eq!(stopped, Acknowledged { ok: OkTrue });
    let _: Acknowledged = expect(
        Method::DELETE,
        &format!("{url}/v1/session/{id}"),
        NO_BODY,
        200,
    )
    .await;
    expect_error(
        Method::GET,
        &format!("{url}/v1/session/{id}"),
        NO_BODY,
        ErrorCode::NotFound,
    )
    .await;
    let list = sessions(&format!("{url}/v1/sessions"), None).await;
    let ids: Vec<&str> = list.data.iter().map(|s| s.session_id.as_str()).collect();
    assert_eq!(ids, [second.session_id.as_str()]);
    assert!(
        !state
            .path()
            .join("test-agent/traces")
            .join(format!("{id}.ndjson"))
            .exists()
    );
}

#[tokio::test]
async fn principals_are_isolated_and_credentials_checked() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("for alice"));
    let dir = project(AGENT);
    let state = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.toml");
    std::fs::write(&tokens, "alice = \"alice-secret\"\nbob = \"bob-secret\"\n").unwrap();
    let server = serve(
        &mock.openai_base_url(),
        dir.path(),
        state.path(),
        &[
            "--tokens-file",
            tokens.to_str().unwrap(),
            "--mode",
            "single",
        ],
    )
    .await;
    let url = &server.url;
    assert_eq!(url, &server.host, "--mode single serves at the root");
    let alice = Some("alice-secret");
    let bob = Some("bob-secret");
    let hi = CreateSession::message("hi");
    let (status, refusal) =
        refused(Method::POST, &format!("{url}/v1/session"), Some(&hi), None).await;
    assert_eq!((status, refusal.error), (401, ErrorCode::Unauthorized));
    let (status, refusal) = refused(
        Method::GET,
        &format!("{url}/v1/sessions"),
        NO_BODY,
        Some("wrong"),
    )
    .await;
    assert_eq!((status, refusal.error), (401, ErrorCode::Unauthorized));
    let (status, created) =
        answer::<SessionCreated>(Method::POST, &format!("{url}/v1/session"), Some(&hi), alice)
            .await;
    assert_eq!(status, 201, "{created:?}");
    let created = created.unwrap();
    let id = created.session_id.as_str();
    let token = created.continuation_token.as_str();
    let mut stream = Stream::open(url, id, 0, alice).await;
    stream.until("session.waiting").await;
    assert_eq!(data::<SessionStarted>(&stream.events[0]).principal, "alice");

    // Request bodies of each session route (JSON, as the routes differ in type).
    let routes: Vec<(Method, String, Option<Value>)> = vec![
        (
            Method::POST,
            format!("/v1/session/{id}"),
            Some(json!({"continuationToken": token, "message": "x"})),
        ),
        (
            Method::POST,
            format!("/v1/session/{id}/stop"),
            Some(json!({})),
        ),
        (Method::GET, format!("/v1/session/{id}/stream"), None),
        (Method::GET, format!("/v1/session/{id}/events"), None),
        (Method::GET, format!("/v1/session/{id}"), None),
        (Method::DELETE, format!("/v1/session/{id}"), None),
        (
            Method::POST,
            format!("/v1/session/{id}/approvals/call_x"),
            Some(json!({"decision": "approve"})),
        ),
        (
            Method::POST,
            format!("/v1/session/{id}/tools/LS"),
            Some(json!({"input": {}})),
        ),
    ];
    for (method, path, body) in routes {
        let (status, refusal) =
            refused(method.clone(), &format!("{url}{path}"), body.as_ref(), bob).await;
        assert_eq!(
            (status, refusal.error),
            (403, ErrorCode::Forbidden),
            "{method} {path}: {refusal}"
        );
    }
    let bobs = sessions(&format!("{url}/v1/sessions"), bob).await;
    assert_eq!(bobs, Page::new(Vec::new(), None));
    let alices = sessions(&format!("{url}/v1/sessions"), alice).await;
    let ids: Vec<&str> = alices.data.iter().map(|s| s.session_id.as_str()).collect();
    assert_eq!(ids, [id]);
    // Approvals of an unknown call on one's own session: 404.
    let (status, refusal) = refused(
        Method::POST,
        &format!("{url}/v1/session/{id}/approvals/call_x"),
        Some(&json!({"decision": "approve"})),
        alice,
    )
    .await;
    assert_eq!((status, refusal.error), (404, ErrorCode::NotFound));
}

#[tokio::test]
async fn local_dev_strict_refuses_forwarded_requests() {
    let mock = MockModelServer::start().await;
    let dir = project(AGENT);
    let state = tempfile::tempdir().unwrap();
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    for header in ["Forwarded", "X-Forwarded-For", "X-Real-IP"] {
        let response = client()
            .get(format!("{}/v1/sessions", server.url))
            .header(header, "for=203.0.113.9")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 403, "{header}");
        let body: ErrorBody = read_wire(&response.json().await.unwrap());
        assert_eq!(body.error, ErrorCode::Forbidden, "{header}");
    }
    sessions(&format!("{}/v1/sessions", server.url), None).await;
}

#[tokio::test]
async fn task_sessions_end_and_refuse_follow_ups() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("task done"));
    let dir = project(AGENT);
    let state = tempfile::tempdir().unwrap();
    let server = serve(
        &mock.openai_base_url(),
        dir.path(),
        state.path(),
        &["--allow-anonymous"],
    )
    .await;
    let url = &server.url;
    let created = create_session(
        url,
        &CreateSession {
            mode: Some(SessionMode::Task),
            ..CreateSession::message("do it")
        },
    )
    .await;
    let id = created.session_id.as_str();
    let mut stream = Stream::open(url, id, 0, None).await;
    while stream.next().await.is_some() {}
    assert_eq!(
        stream.types().last(),
        Some(&"session.completed"),
        "the stream ends after the final event"
    );
    assert_eq!(
        data::<SessionStarted>(&stream.events[0]).principal,
        "anonymous"
    );
    expect_error(
        Method::POST,
        &format!("{url}/v1/session/{id}"),
        Some(&FollowUp::new(&created.continuation_token, "more")),
        ErrorCode::SessionNotFollowable,
    )
    .await;
    assert_eq!(session(url, id).await.status, SessionStatus::Completed);
    // A stream of a finished task past its last event ends at once.
    let past = stream.events.len() as u64 + 5;
    let mut late = Stream::open(url, id, past, None).await;
    assert_eq!(late.next().await, None);
}

#[tokio::test]
async fn preempt_stop_busy_and_coalesce() {
    let mock = MockModelServer::start().await;
    mock.push(slow("never finished"));
    mock.push(MockReply::text("after preempt"));
    let dir = project(AGENT);
    let state = tempfile::tempdir().unwrap();
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let url = &server.url;
    let interrupted = EventBody::TurnFailed(TurnFailed {
        message: TURN_INTERRUPTED.into(),
    });

    // Preempt (the default): the running turn fails with `turn interrupted`, then the new one runs.
    let created = create_session(url, &CreateSession::message("first")).await;
    let id = created.session_id;
    let mut stream = Stream::open(url, &id, 0, None).await;
    stream.until("step.started").await;
    // Session-bound tool calls share the execution lock.
    expect_error(
        Method::POST,
        &format!("{url}/v1/session/{id}/tools/LS"),
        Some(&tool_input(json!({}))),
        ErrorCode::SessionBusy,
    )
    .await;
    let followed = follow_up(
        url,
        &id,
        &FollowUp::new(&created.continuation_token, "second"),
    )
    .await;
    let failed = stream.until("turn.failed").await;
    assert_eq!(failed.body, interrupted);
    let completed = stream.until("turn.completed").await;
    assert_eq!(data::<TurnCompleted>(&completed).reply, "after preempt");
    assert_ne!(failed.turn_id, completed.turn_id);
    stream.until("session.waiting").await;
    assert_eq!(
        stream.count("session.waiting"),
        1,
        "no waiting between the preempted and the new turn"
    );

    // Stop: interrupts without a new message; the session waits again.
    mock.push(slow("stopped"));
    let followed = follow_up(
        url,
        &id,
        &FollowUp::new(&followed.continuation_token, "third"),
    )
    .await;
    stream.until_count("step.started", 3).await;
    let _: Acknowledged = expect(
        Method::POST,
        &format!("{url}/v1/session/{id}/stop"),
        Some(&Empty {}),
        200,
    )
    .await;
    let failed = stream.until("turn.failed").await;
    assert_eq!(failed.body, interrupted);
    stream.until_count("session.waiting", 2).await;

    // Coalesce: three follow-ups during a turn → exactly one extra turn carrying all three.
    mock.push(slow("busy"));
    mock.push(MockReply::text("coalesced reply"));
    let followed = follow_up(
        url,
        &id,
        &FollowUp::new(&followed.continuation_token, "fourth"),
    )
    .await;
    let mut token = followed.continuation_token;
    stream.until_count("step.started", 4).await;
    for text in ["c1", "c2", "c3"] {
        let coalesce = FollowUp {
            admission: Some(Admission::Coalesce),
            ..FollowUp::new(&token, text)
        };
        token = follow_up(url, &id, &coalesce).await.continuation_token;
    }
    stream.until_count("session.waiting", 3).await;
    let received = all::<MessageReceived>(&stream.events);
    assert_eq!(received.len(), 5);
    assert_eq!(
        received[4],
        &MessageReceived {
            text: "c1\n\nc2\n\nc3".into(),
            admission: Some(Admission::Coalesce),
            coalesced: Some(3),
            client_message_id: None,
            request_digest: None,
        }
    );
    let turns = stream.count("turn.started");
    assert_eq!(turns, 5, "{:#?}", stream.types());
    assert_eq!(stream.count("turn.completed"), 3);
    let users = mock.requests().last().unwrap().user_texts();
    assert_eq!(users.last().unwrap(), "c1\n\nc2\n\nc3");
    assert_contiguous(&stream.events, 0);
}

#[tokio::test]
async fn turns_queue_under_max_running_turns() {
    let mock = MockModelServer::start().await;
    for _ in 0..3 {
        mock.push(MockReply::text("done").first_byte_delay(Duration::from_millis(1500)));
    }
    let dir = project(&format!("{AGENT}\n[concurrency]\nmax_running_turns = 1\n"));
    let state = tempfile::tempdir().unwrap();
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let url = &server.url;
    let mut ids = Vec::new();
    for n in 0..3 {
        let created = create_session(url, &CreateSession::message(format!("m{n}"))).await;
        ids.push(created.session_id);
    }
    let mut positions = Vec::new();
    for id in &ids {
        let mut stream = Stream::open(url, id, 0, None).await;
        stream.until("session.waiting").await;
        positions.push(
            all::<TurnQueued>(&stream.events)
                .first()
                .map(|queued| queued.position),
        );
        let types = stream.types();
        let queued_at = types.iter().position(|t| *t == "turn.queued");
        let started_at = types.iter().position(|t| *t == "turn.started").unwrap();
        if let Some(queued_at) = queued_at {
            assert!(queued_at < started_at);
        }
    }
    assert_eq!(positions, [None, Some(1), Some(2)]);
}
