//! `folio serve` end to end: the process is started with `--port 0`, the mock model server is
//! the model, and the tests speak HTTP (sessions-http.md, every route and error code).

mod serve_support;

use std::time::Duration;

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

/// The user texts the model received, per request.
fn user_texts(mock: &MockModelServer) -> Vec<Vec<String>> {
    mock.requests()
        .iter()
        .map(|r| {
            r.body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["role"] == "user")
                .map(|m| {
                    m["content"]
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| m["content"].to_string())
                })
                .collect()
        })
        .collect()
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
    let (status, agents) = get(&format!("{}/v1/agents", server.host)).await;
    assert_eq!(status, 200);
    assert_eq!(
        agents,
        json!([{"slug": "test-agent", "name": "Test Agent", "description": "answers tests"}])
    );
    let (status, index) = get(&format!("{}/", server.host)).await;
    assert_eq!(status, 200);
    assert!(index.as_str().unwrap().contains("Test Agent"));
    let (status, playground) = get(&format!("{url}/playground")).await;
    assert_eq!(status, 200);
    assert!(playground.as_str().unwrap().contains("Folio playground"));

    // Create: 201, returns before the turn ends.
    let (status, created) = post(
        &format!("{url}/v1/session"),
        json!({"message": "hi", "title": "Greeting"}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["ok"], true);
    let id = created["sessionId"].as_str().unwrap().to_string();
    assert!(id.starts_with("ses_") && id.len() == 30, "{id}");
    let token = created["continuationToken"].as_str().unwrap().to_string();
    assert!(token.starts_with("http:"));
    assert!(created["playgroundUrl"].as_str().unwrap().contains(&id));
    assert!(created["traceUrl"].as_str().unwrap().contains(&id));

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
    assert!(types.contains(&"message.appended".to_string()));
    assert_contiguous(&stream.events, 0);
    let completed = stream
        .events
        .iter()
        .find(|e| e["type"] == "turn.completed")
        .unwrap();
    assert_eq!(completed["data"]["reply"], "Hello there.");
    assert!(completed["turnId"].as_str().unwrap().starts_with("turn_"));

    // Follow-up: the token rotates; the old one is stale.
    let (status, followed) = post(
        &format!("{url}/v1/session/{id}"),
        json!({"continuationToken": token, "message": "again"}),
    )
    .await;
    assert_eq!(status, 200, "{followed}");
    let token2 = followed["continuationToken"].as_str().unwrap().to_string();
    assert_ne!(token, token2);
    assert_eq!(followed["sessionId"], id.as_str());
    stream.until_count("session.waiting", 2).await;
    let (status, stale) = post(
        &format!("{url}/v1/session/{id}"),
        json!({"continuationToken": token, "message": "stale"}),
    )
    .await;
    assert_eq!(
        (status, stale["error"].clone()),
        (409, json!("stale_continuation_token"))
    );
    assert_eq!(stale["ok"], false);
    assert!(stale["message"].is_string());

    // The conversation continues: the second request carries both user messages.
    assert_eq!(user_texts(&mock)[1], ["hi", "again"]);

    // GET session, events dump, list.
    let (status, got) = get(&format!("{url}/v1/session/{id}")).await;
    assert_eq!(status, 200);
    let session = &got["session"];
    assert_eq!(session["sessionId"], id.as_str());
    assert_eq!(session["mode"], "chat");
    assert_eq!(session["status"], "waiting");
    assert_eq!(session["title"], "Greeting");
    assert_eq!(session["turns"], 2);
    let last_index = stream.events.last().unwrap()["index"].as_u64().unwrap();
    assert_eq!(session["lastIndex"], last_index);
    let dump = client()
        .get(format!("{url}/v1/session/{id}/events"))
        .send()
        .await
        .unwrap();
    assert_eq!(dump.headers()["content-type"], "application/x-ndjson");
    let dump = dump.text().await.unwrap();
    let dumped: Vec<Value> = dump
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(dumped, stream.events);
    // Replay from an index: exactly the tail.
    let mut tail = Stream::open(url, &id, last_index - 1, None).await;
    let first = tail.next().await.unwrap();
    assert_eq!(first["index"], last_index - 1);

    let (_, second) = post(
        &format!("{url}/v1/session"),
        json!({"message": "x", "title": "Other"}),
    )
    .await;
    let second_id = second["sessionId"].as_str().unwrap();
    let (status, list) = get(&format!("{url}/v1/sessions")).await;
    assert_eq!(status, 200);
    let ids: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [second_id, id.as_str()], "newest first");
    let (_, page) = get(&format!("{url}/v1/sessions?limit=1")).await;
    assert_eq!(page["data"].as_array().unwrap().len(), 1);
    let cursor = page["nextCursor"].as_str().unwrap();
    let (_, page2) = get(&format!("{url}/v1/sessions?limit=1&cursor={cursor}")).await;
    assert_eq!(page2["data"][0]["sessionId"], id.as_str());
    assert!(page2.get("nextCursor").is_none());
    let (_, found) = get(&format!("{url}/v1/sessions?q=greet")).await;
    assert_eq!(found["data"].as_array().unwrap().len(), 1);
    assert_eq!(found["data"][0]["sessionId"], id.as_str());

    // 400: unknown field (named), missing field, bad JSON, bad enum.
    let (status, bad) = post(
        &format!("{url}/v1/session"),
        json!({"message": "x", "colour": 1}),
    )
    .await;
    assert_eq!(
        (status, bad["error"].clone()),
        (400, json!("invalid_request"))
    );
    assert!(bad["message"].as_str().unwrap().contains("colour"), "{bad}");
    let (status, bad) = post(&format!("{url}/v1/session"), json!({"title": "x"})).await;
    assert_eq!(status, 400);
    assert!(
        bad["message"].as_str().unwrap().contains("message"),
        "{bad}"
    );
    let raw = client()
        .post(format!("{url}/v1/session"))
        .header("content-type", "application/json")
        .body("{nope")
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status().as_u16(), 400);
    let (status, _) = post(
        &format!("{url}/v1/session"),
        json!({"message": "x", "mode": "batch"}),
    )
    .await;
    assert_eq!(status, 400);
    let (status, bad) = post(
        &format!("{url}/v1/session"),
        json!({"message": "x", "workspaceFiles": {"../escape": "x"}}),
    )
    .await;
    assert_eq!(
        (status, bad["error"].clone()),
        (400, json!("invalid_request"))
    );

    let (status, bad) = post(
        &format!("{url}/v1/session"),
        json!({"message": "x", "workspaceFiles": {"memory/notes.md": "x"}}),
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        bad["message"].as_str().unwrap().contains("memory/"),
        "{bad}"
    );

    // 413 over 1 MiB.
    let big = "x".repeat(1024 * 1024 + 10);
    let (status, too_big) = post(&format!("{url}/v1/session"), json!({"message": big})).await;
    assert_eq!(status, 413, "{too_big}");
    assert_eq!(too_big["ok"], false);

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
        let (status, body) = call(method.clone(), &format!("{url}{path}"), None, None).await;
        assert_eq!(status, 404, "{method} {path}: {body}");
        assert_eq!(body["error"], "not_found");
    }
    let (status, _) = post(&format!("{url}/v1/tools/NoSuchTool"), json!({"input": {}})).await;
    assert_eq!(status, 404);
    let (status, _) = get(&format!("{}/no-such-agent/v1/agent", server.host)).await;
    assert_eq!(status, 404);

    // Direct tool calls: unscoped and session-bound; validation still applies.
    let (status, wrote) = post(
        &format!("{url}/v1/session/{id}/tools/Write"),
        json!({"input": {"path": "note.txt", "contents": "direct\n"}}),
    )
    .await;
    assert_eq!(status, 200, "{wrote}");
    assert_eq!(
        wrote,
        json!({"ok": true, "result": "Wrote contents to note.txt", "isError": false})
    );
    let (_, read) = post(
        &format!("{url}/v1/session/{id}/tools/Read"),
        json!({"input": {"path": "note.txt"}}),
    )
    .await;
    assert_eq!(read["result"], "     1\tdirect");
    let (_, missing_file) = post(
        &format!("{url}/v1/session/{id}/tools/Read"),
        json!({"input": {"path": "nope.txt"}}),
    )
    .await;
    assert_eq!(missing_file["isError"], true);
    // Built-in tools run only session-scoped (the unscoped workspace is shared).
    for tool in ["Read", "LS", "Shell", "Write"] {
        let (status, refused) = post(&format!("{url}/v1/tools/{tool}"), json!({"input": {}})).await;
        assert_eq!(
            (status, refused["error"].clone()),
            (403, json!("forbidden")),
            "{tool}"
        );
    }
    let (status, invalid) = post(
        &format!("{url}/v1/session/{id}/tools/Read"),
        json!({"input": {}}),
    )
    .await;
    assert_eq!(
        (status, invalid["error"].clone()),
        (400, json!("invalid_request"))
    );
    let (status, listed) = post(
        &format!("{url}/v1/session/{id}/tools/LS"),
        json!({"input": {}}),
    )
    .await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["isError"], false);
    assert!(
        state
            .path()
            .join("test-agent/sessions")
            .join(&id)
            .join("workspace/note.txt")
            .exists()
    );

    // /v1/agent, /v1/logs.
    let (status, agent) = get(&format!("{url}/v1/agent")).await;
    assert_eq!(status, 200);
    assert_eq!(agent["agent"]["name"], "Test Agent");
    assert!(
        agent["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "Read" && t["inputSchema"].is_object())
    );
    for key in [
        "skills",
        "subagents",
        "connections",
        "channels",
        "hooks",
        "schedules",
        "diagnostics",
    ] {
        assert!(agent[key].is_array(), "{key}");
    }
    assert_eq!(agent["skills"][0]["name"], "triage");
    assert_eq!(agent["hooks"][0]["name"], "audit");
    assert_eq!(agent["hooks"][0]["events"], json!(["turn.completed"]));
    let (status, logs) = get(&format!("{url}/v1/logs?since=0")).await;
    assert_eq!(status, 200);
    let lines = logs["lines"].as_array().unwrap();
    assert!(
        lines
            .iter()
            .any(|l| l["message"].as_str().unwrap().contains(&id))
    );
    let last_seq = lines.last().unwrap()["seq"].as_u64().unwrap();
    let (_, newer) = get(&format!("{url}/v1/logs?since={last_seq}")).await;
    assert!(newer["lines"].as_array().unwrap().is_empty());

    // Stop on an idle session: a no-op 200. Delete: 200, then 404 everywhere.
    let (status, stopped) = post(&format!("{url}/v1/session/{id}/stop"), json!({})).await;
    assert_eq!((status, stopped), (200, json!({"ok": true})));
    let (status, _) = call(
        Method::DELETE,
        &format!("{url}/v1/session/{id}"),
        None,
        None,
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = get(&format!("{url}/v1/session/{id}")).await;
    assert_eq!(status, 404);
    let (_, list) = get(&format!("{url}/v1/sessions")).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1);
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
    let (status, body) = call(
        Method::POST,
        &format!("{url}/v1/session"),
        Some(json!({"message": "hi"})),
        None,
    )
    .await;
    assert_eq!(
        (status, body["error"].clone()),
        (401, json!("unauthorized"))
    );
    let (status, _) = call(
        Method::GET,
        &format!("{url}/v1/sessions"),
        None,
        Some("wrong"),
    )
    .await;
    assert_eq!(status, 401);
    let (status, created) = call(
        Method::POST,
        &format!("{url}/v1/session"),
        Some(json!({"message": "hi"})),
        alice,
    )
    .await;
    assert_eq!(status, 201);
    let id = created["sessionId"].as_str().unwrap();
    let token = created["continuationToken"].as_str().unwrap();
    let mut stream = Stream::open(url, id, 0, alice).await;
    stream.until("session.waiting").await;
    assert_eq!(stream.events[0]["data"]["principal"], "alice");

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
        let (status, answer) = call(method.clone(), &format!("{url}{path}"), body, bob).await;
        assert_eq!(status, 403, "{method} {path}: {answer}");
        assert_eq!(answer["error"], "forbidden");
    }
    let (_, bobs) = call(Method::GET, &format!("{url}/v1/sessions"), None, bob).await;
    assert_eq!(bobs["data"], json!([]));
    let (_, alices) = call(Method::GET, &format!("{url}/v1/sessions"), None, alice).await;
    assert_eq!(alices["data"].as_array().unwrap().len(), 1);
    // Approvals of an unknown call on one's own session: 404.
    let (status, _) = call(
        Method::POST,
        &format!("{url}/v1/session/{id}/approvals/call_x"),
        Some(json!({"decision": "approve"})),
        alice,
    )
    .await;
    assert_eq!(status, 404);
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
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"], "forbidden");
    }
    let (status, _) = get(&format!("{}/v1/sessions", server.url)).await;
    assert_eq!(status, 200);
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
    let (_, created) = post(
        &format!("{url}/v1/session"),
        json!({"message": "do it", "mode": "task"}),
    )
    .await;
    let id = created["sessionId"].as_str().unwrap();
    let mut stream = Stream::open(url, id, 0, None).await;
    while stream.next().await.is_some() {}
    assert_eq!(
        stream.types().last().unwrap(),
        "session.completed",
        "the stream ends after the final event"
    );
    assert_eq!(stream.events[0]["data"]["principal"], "anonymous");
    let (status, refused) = post(
        &format!("{url}/v1/session/{id}"),
        json!({"continuationToken": created["continuationToken"], "message": "more"}),
    )
    .await;
    assert_eq!(
        (status, refused["error"].clone()),
        (409, json!("session_not_followable"))
    );
    let (_, got) = get(&format!("{url}/v1/session/{id}")).await;
    assert_eq!(got["session"]["status"], "completed");
    // A stream of a finished task past its last event ends at once.
    let past = stream.events.len() as u64 + 5;
    let mut late = Stream::open(url, id, past, None).await;
    assert!(late.next().await.is_none());
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

    // Preempt (the default): the running turn fails with `turn interrupted`, then the new one runs.
    let (_, created) = post(&format!("{url}/v1/session"), json!({"message": "first"})).await;
    let id = created["sessionId"].as_str().unwrap().to_string();
    let token = created["continuationToken"].as_str().unwrap().to_string();
    let mut stream = Stream::open(url, &id, 0, None).await;
    stream.until("step.started").await;
    // Session-bound tool calls share the execution lock.
    let (status, busy) = post(
        &format!("{url}/v1/session/{id}/tools/LS"),
        json!({"input": {}}),
    )
    .await;
    assert_eq!(
        (status, busy["error"].clone()),
        (409, json!("session_busy"))
    );
    let (status, followed) = post(
        &format!("{url}/v1/session/{id}"),
        json!({"continuationToken": token, "message": "second"}),
    )
    .await;
    assert_eq!(status, 200);
    let token = followed["continuationToken"].as_str().unwrap().to_string();
    let failed = stream.until("turn.failed").await;
    assert_eq!(failed["data"]["message"], "turn interrupted");
    let completed = stream.until("turn.completed").await;
    assert_eq!(completed["data"]["reply"], "after preempt");
    assert_ne!(failed["turnId"], completed["turnId"]);
    stream.until("session.waiting").await;
    assert_eq!(
        stream.count("session.waiting"),
        1,
        "no waiting between the preempted and the new turn"
    );

    // Stop: interrupts without a new message; the session waits again.
    mock.push(slow("stopped"));
    let (_, followed) = post(
        &format!("{url}/v1/session/{id}"),
        json!({"continuationToken": token, "message": "third"}),
    )
    .await;
    let token = followed["continuationToken"].as_str().unwrap().to_string();
    stream.until_count("step.started", 3).await;
    let (status, _) = post(&format!("{url}/v1/session/{id}/stop"), json!({})).await;
    assert_eq!(status, 200);
    let failed = stream.until("turn.failed").await;
    assert_eq!(failed["data"]["message"], "turn interrupted");
    stream.until_count("session.waiting", 2).await;

    // Coalesce: three follow-ups during a turn → exactly one extra turn carrying all three.
    mock.push(slow("busy"));
    mock.push(MockReply::text("coalesced reply"));
    let (_, followed) = post(
        &format!("{url}/v1/session/{id}"),
        json!({"continuationToken": token, "message": "fourth"}),
    )
    .await;
    let mut token = followed["continuationToken"].as_str().unwrap().to_string();
    stream.until_count("step.started", 4).await;
    for text in ["c1", "c2", "c3"] {
        let (status, followed) = post(
            &format!("{url}/v1/session/{id}"),
            json!({"continuationToken": token, "message": text, "admission": "coalesce"}),
        )
        .await;
        assert_eq!(status, 200, "{followed}");
        token = followed["continuationToken"].as_str().unwrap().to_string();
    }
    stream.until_count("session.waiting", 3).await;
    let received: Vec<&Value> = stream
        .events
        .iter()
        .filter(|e| e["type"] == "message.received")
        .collect();
    assert_eq!(received.len(), 5);
    let last = received.last().unwrap();
    assert_eq!(last["data"]["coalesced"], 3);
    assert_eq!(last["data"]["admission"], "coalesce");
    assert_eq!(last["data"]["text"], "c1\n\nc2\n\nc3");
    let turns = stream.count("turn.started");
    assert_eq!(turns, 5, "{:#?}", stream.types());
    assert_eq!(stream.count("turn.completed"), 3);
    let requests = user_texts(&mock);
    assert_eq!(requests.last().unwrap().last().unwrap(), "c1\n\nc2\n\nc3");
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
        let (status, created) = post(
            &format!("{url}/v1/session"),
            json!({"message": format!("m{n}")}),
        )
        .await;
        assert_eq!(status, 201);
        ids.push(created["sessionId"].as_str().unwrap().to_string());
    }
    let mut positions = Vec::new();
    for id in &ids {
        let mut stream = Stream::open(url, id, 0, None).await;
        stream.until("session.waiting").await;
        positions.push(
            stream
                .events
                .iter()
                .find(|e| e["type"] == "turn.queued")
                .map(|e| e["data"]["position"].as_u64().unwrap()),
        );
        let queued_at = stream.types().iter().position(|t| t == "turn.queued");
        let started_at = stream
            .types()
            .iter()
            .position(|t| t == "turn.started")
            .unwrap();
        if let Some(queued_at) = queued_at {
            assert!(queued_at < started_at);
        }
    }
    assert_eq!(positions, [None, Some(1), Some(2)]);
}
