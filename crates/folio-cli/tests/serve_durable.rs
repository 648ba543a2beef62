//! A `200`/`201` means the message is safe: crash tests that make the real `folio serve` abort
//! at each window between two durable steps (`FOLIO_FAULT`) or kill it with `kill -9`, restart
//! it on the same state root, and check that every acknowledged message runs exactly once and
//! that a retry with the same idempotency key gets the first answer.

mod serve_support;

use std::path::Path;
use std::time::Duration;

use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use serve_support::*;

const AGENT: &str = "name = \"durable\"\nmodel = \"openai:gpt-test\"\n";

/// Starts `folio serve` armed to abort at `fault`.
async fn serve_faulty(mock: &MockModelServer, dir: &Path, state: &Path, fault: &str) -> Served {
    serve_with_env(
        &mock.openai_base_url(),
        dir,
        state,
        &[],
        &[("FOLIO_FAULT", fault)],
    )
    .await
}

/// Waits for an aborted (or killed) server to be gone.
async fn gone(mut server: Served) {
    let status = tokio::time::timeout(Duration::from_secs(30), server.child.wait())
        .await
        .expect("the server exits within 30 s")
        .unwrap();
    assert!(!status.success(), "the server crashed: {status}");
}

/// Kills the server (`kill -9`) and waits until it is gone.
async fn kill(mut server: Served) {
    server.child.start_kill().unwrap();
    gone(server).await;
}

/// Sends a JSON body with an optional `Idempotency-Key`; the status and body, or `None` when
/// the server died before answering.
async fn post_keyed(url: &str, body: Value, key: Option<&str>) -> Option<(u16, Value)> {
    let mut request = client().post(url).json(&body);
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    let response = request.send().await.ok()?;
    let status = response.status().as_u16();
    let body = response.json().await.ok()?;
    check_answer("POST", url, status, &body);
    Some((status, body))
}

/// Every stored event of a session (`GET …/events`).
async fn events(url: &str, id: &str) -> Vec<Value> {
    let text = client()
        .get(format!("{url}/v1/session/{id}/events"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let events: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_contiguous(&events, 0);
    events
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// The user messages of the last model request.
fn last_users(mock: &MockModelServer) -> Vec<String> {
    let requests = mock.requests();
    requests.last().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect()
}

/// Creates a chat session and waits for its first turn to end; its id and token.
async fn created_and_waiting(url: &str) -> (String, String) {
    let (status, created) = post(&format!("{url}/v1/session"), json!({"message": "first"})).await;
    assert_eq!(status, 201, "{created}");
    let id = created["sessionId"].as_str().unwrap().to_string();
    let mut stream = Stream::open(url, &id, 0, None).await;
    stream.until("session.waiting").await;
    (
        id,
        created["continuationToken"].as_str().unwrap().to_string(),
    )
}

#[tokio::test]
async fn a_follow_up_recorded_before_a_crash_is_answered_by_its_retry_and_runs_once() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("one"));
    let dir = project(AGENT);
    let state = tempfile::tempdir().unwrap();
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let (id, token) = created_and_waiting(&server.url).await;
    kill(server).await;

    // The message is synced to the log, then the process dies before session.json (status,
    // rotated token) and before the reply.
    let server = serve_faulty(&mock, dir.path(), state.path(), "message-synced").await;
    let follow = format!("{}/v1/session/{id}", server.url);
    let body = json!({"continuationToken": token, "message": "second"});
    assert_eq!(post_keyed(&follow, body.clone(), Some("msg-2")).await, None);
    gone(server).await;

    mock.push(MockReply::text("three"));
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let url = server.url.clone();
    let follow = format!("{url}/v1/session/{id}");
    // The retry gets an answer (not 409), twice the same one, and records nothing new.
    let (status, first) = post_keyed(&follow, body.clone(), Some("msg-2"))
        .await
        .unwrap();
    assert_eq!(status, 200, "{first}");
    let again = post_keyed(&follow, body.clone(), Some("msg-2"))
        .await
        .unwrap();
    assert_eq!(again, (200, first.clone()));
    let stored = events(&url, &id).await;
    let received: Vec<&Value> = of_type(&stored, "message.received");
    assert_eq!(received.len(), 2, "{stored:#?}");
    assert_eq!(
        received[1]["data"],
        json!({"text": "second", "clientMessageId": "msg-2"})
    );
    // Its turn was cut by the crash; the session parked once.
    let failed = of_type(&stored, "turn.failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["data"]["message"], "server restarted");
    assert_eq!(failed[0]["turnId"], received[1]["turnId"]);
    assert_eq!(of_type(&stored, "session.waiting").len(), 2);
    let (_, got) = get(&follow).await;
    assert_eq!(got["session"]["status"], "waiting");
    assert_eq!(got["session"]["turns"], 2);

    // The answered token continues the conversation; the one it replaced is stale.
    let token = first["continuationToken"].as_str().unwrap();
    let (status, _) = post(
        &follow,
        json!({"continuationToken": token, "message": "third"}),
    )
    .await;
    assert_eq!(status, 200);
    let mut stream = Stream::open(&url, &id, 0, None).await;
    stream.until_count("session.waiting", 3).await;
    assert_eq!(last_users(&mock), ["first", "second", "third"]);
    let (status, stale) = post(&follow, body.clone()).await;
    assert_eq!(status, 409, "{stale}");
    assert_eq!(stale["error"], "stale_continuation_token");
    // Still answered by key after the token moved on (session.json remembers the key) ...
    let late = post_keyed(&follow, body, Some("msg-2")).await.unwrap();
    assert_eq!(late, (200, first));
    // ... but only to the holder of the token it first presented.
    let wrong = json!({"continuationToken": "http:guess", "message": "second"});
    let (status, refused) = post_keyed(&follow, wrong, Some("msg-2")).await.unwrap();
    assert_eq!(status, 409, "{refused}");
    assert_eq!(
        of_type(&events(&url, &id).await, "message.received").len(),
        3
    );
}

#[tokio::test]
async fn a_create_acknowledged_just_before_a_crash_is_retried_by_key_into_the_same_session() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("hello"));
    let dir = project(AGENT);
    let state = tempfile::tempdir().unwrap();
    // Everything is durable; the process dies before the 201 leaves.
    let server = serve_faulty(&mock, dir.path(), state.path(), "before-reply").await;
    let create = format!("{}/v1/session", server.url);
    let body = json!({"message": "first", "clientMessageId": "create-1"});
    assert_eq!(post_keyed(&create, body.clone(), None).await, None);
    gone(server).await;

    mock.push(MockReply::text("hello again"));
    mock.push(MockReply::text("and more"));
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let url = server.url.clone();
    let create = format!("{url}/v1/session");
    // The header and the body field name the same key.
    let (status, first) = post_keyed(&create, json!({"message": "first"}), Some("create-1"))
        .await
        .unwrap();
    assert_eq!(status, 201, "{first}");
    let again = post_keyed(&create, body, None).await.unwrap();
    assert_eq!(again, (201, first.clone()));
    let id = first["sessionId"].as_str().unwrap();
    let (_, page) = get(&format!("{url}/v1/sessions")).await;
    let ids: Vec<&str> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [id], "one session for one key");
    let stored = events(&url, id).await;
    assert_eq!(
        of_type(&stored, "message.received")
            .iter()
            .map(|e| e["data"].clone())
            .collect::<Vec<_>>(),
        [json!({"text": "first", "clientMessageId": "create-1"})]
    );
    // The answered token is the session's token.
    let token = first["continuationToken"].as_str().unwrap();
    let (status, followed) = post(
        &format!("{url}/v1/session/{id}"),
        json!({"continuationToken": token, "message": "second"}),
    )
    .await;
    assert_eq!(status, 200, "{followed}");
    // A key differing between header and body is refused.
    let (status, refused) = post_keyed(
        &create,
        json!({"message": "x", "clientMessageId": "a"}),
        Some("b"),
    )
    .await
    .unwrap();
    assert_eq!(status, 400, "{refused}");
}

#[tokio::test]
async fn coalesced_messages_acknowledged_before_a_kill_9_run_once_after_the_restart() {
    coalesced_messages_survive(Ending::Kill9).await;
}

#[tokio::test]
async fn coalesced_messages_acknowledged_before_a_graceful_shutdown_run_once_after_the_restart() {
    coalesced_messages_survive(Ending::Sigterm).await;
}

/// How the server ends while coalesced messages are queued.
enum Ending {
    Kill9,
    Sigterm,
}

async fn coalesced_messages_survive(ending: Ending) {
    let mock = MockModelServer::start().await;
    mock.push(
        MockReply::text("one two three four five six seven eight nine ten eleven twelve")
            .chunk_delay(Duration::from_millis(400)),
    );
    let dir = project(AGENT);
    let state = tempfile::tempdir().unwrap();
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let url = server.url.clone();
    let (status, created) = post(&format!("{url}/v1/session"), json!({"message": "first"})).await;
    assert_eq!(status, 201);
    let id = created["sessionId"].as_str().unwrap().to_string();
    let mut token = created["continuationToken"].as_str().unwrap().to_string();
    let mut stream = Stream::open(&url, &id, 0, None).await;
    stream.until("message.appended").await;
    for text in ["q1", "q2"] {
        let (status, accepted) = post(
            &format!("{url}/v1/session/{id}"),
            json!({"continuationToken": token, "message": text, "admission": "coalesce"}),
        )
        .await;
        assert_eq!(status, 200, "{accepted}");
        token = accepted["continuationToken"].as_str().unwrap().to_string();
    }
    match ending {
        Ending::Kill9 => kill(server).await,
        Ending::Sigterm => {
            let mut server = server;
            let pid = server.child.id().unwrap().to_string();
            let sent = std::process::Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap();
            assert!(sent.success());
            tokio::time::timeout(Duration::from_secs(30), server.child.wait())
                .await
                .expect("the server shuts down within 30 s")
                .unwrap();
        }
    }
    drop(stream);

    mock.push(MockReply::text("both answered"));
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let url = server.url.clone();
    let mut stream = Stream::open(&url, &id, 0, None).await;
    stream.until("session.waiting").await;
    let stored = events(&url, &id).await;
    assert_eq!(
        of_type(&stored, "message.queued")
            .iter()
            .map(|e| e["data"].clone())
            .collect::<Vec<_>>(),
        [json!({"text": "q1"}), json!({"text": "q2"})]
    );
    assert_eq!(
        of_type(&stored, "message.received")
            .iter()
            .map(|e| e["data"].clone())
            .collect::<Vec<_>>(),
        [
            json!({"text": "first"}),
            json!({"text": "q1\n\nq2", "admission": "coalesce", "coalesced": 2})
        ]
    );
    assert_eq!(of_type(&stored, "turn.completed").len(), 1);
    assert_eq!(of_type(&stored, "session.waiting").len(), 1);
    assert_eq!(last_users(&mock), ["first", "q1\n\nq2"]);
    // The last acknowledged token still continues the session.
    mock.push(MockReply::text("next answered"));
    let (status, _) = post(
        &format!("{url}/v1/session/{id}"),
        json!({"continuationToken": token, "message": "next"}),
    )
    .await;
    assert_eq!(status, 200);
    stream.until_count("session.waiting", 2).await;

    // A second restart runs nothing again.
    kill(server).await;
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let stored = events(&server.url, &id).await;
    assert_eq!(of_type(&stored, "message.received").len(), 3);
    assert_eq!(of_type(&stored, "session.waiting").len(), 2);
    assert_eq!(stored.last().unwrap()["type"], "session.waiting");
}

#[tokio::test]
async fn a_crash_after_the_end_of_a_turn_is_synced_records_session_waiting_once() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("hi"));
    let dir = project(AGENT);
    let state = tempfile::tempdir().unwrap();
    // session.waiting is synced; the process dies before session.json says waiting.
    let server = serve_faulty(&mock, dir.path(), state.path(), "boundary-synced").await;
    let (status, created) = post(
        &format!("{}/v1/session", server.url),
        json!({"message": "first"}),
    )
    .await;
    assert_eq!(status, 201);
    gone(server).await;

    mock.push(MockReply::text("again"));
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let url = server.url.clone();
    let id = created["sessionId"].as_str().unwrap();
    let stored = events(&url, id).await;
    assert_eq!(
        stored
            .iter()
            .map(|e| e["type"].as_str().unwrap())
            .filter(|t| !t.starts_with("message.appended"))
            .collect::<Vec<_>>(),
        [
            "session.started",
            "message.received",
            "turn.started",
            "step.started",
            "message.completed",
            "step.completed",
            "turn.completed",
            "session.waiting"
        ]
    );
    let (_, got) = get(&format!("{url}/v1/session/{id}")).await;
    assert_eq!(got["session"]["status"], "waiting");
    assert_eq!(got["session"]["lastIndex"], stored.last().unwrap()["index"]);
    let token = created["continuationToken"].as_str().unwrap();
    let (status, _) = post(
        &format!("{url}/v1/session/{id}"),
        json!({"continuationToken": token, "message": "second"}),
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn an_unknown_fault_point_stops_the_server_with_a_clear_message() {
    let dir = project(AGENT);
    let state = tempfile::tempdir().unwrap();
    let output = tokio::process::Command::new(folio_bin())
        .env_remove("FOLIO_MODEL")
        .env("OPENAI_API_KEY", "test-key")
        .env("FOLIO_FAULT", "sometime")
        .args(["serve", "--port", "0", "--dir"])
        .arg(dir.path())
        .arg("--state-root")
        .arg(state.path())
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("FOLIO_FAULT=sometime names no fault point"),
        "{stderr}"
    );
}
