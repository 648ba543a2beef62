//! A `200`/`201` means the message is safe: crash tests that make the real `folio serve` abort
//! at each window between two durable steps (`FOLIO_FAULT`) or kill it with `kill -9`, restart
//! it on the same state root, and check that every acknowledged message runs exactly once and
//! that a retry with the same idempotency key gets the first answer. Every test runs twice: on
//! the embedded disk store and on PostgreSQL (`folio serve --store`, where the restarted server
//! takes the dead one's sessions over once its lease expires).

mod serve_support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use folio_protocol::{
    Admission, CreateSession, ErrorBody, ErrorCode, Event, EventBody, FollowUp, FollowUpAccepted,
    MessageQueued, MessageReceived, Page, SERVER_RESTARTED, SessionCreated, SessionStatus,
    SessionSummary, SessionWaiting, TurnCompleted, TurnFailed,
};
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serve_support::*;

const AGENT: &str = "name = \"durable\"\nmodel = \"openai:gpt-test\"\n";

on_both_stores!(
    a_follow_up_recorded_before_a_crash_is_answered_by_its_retry_and_runs_once,
    a_create_acknowledged_just_before_a_crash_is_retried_by_key_into_the_same_session,
    coalesced_messages_acknowledged_before_a_kill_9_run_once_after_the_restart,
    coalesced_messages_acknowledged_before_a_graceful_shutdown_run_once_after_the_restart,
    a_crash_after_the_end_of_a_turn_is_synced_records_session_waiting_once,
);

/// Starts `folio serve` on `store`.
async fn serve_on(store: &Store, mock: &MockModelServer, dir: &Path, state: &Path) -> Served {
    serve(&mock.openai_base_url(), dir, state, &store.args()).await
}

/// Starts `folio serve` on `store`, armed to abort at `fault`.
async fn serve_faulty(
    store: &Store,
    mock: &MockModelServer,
    dir: &Path,
    state: &Path,
    fault: &str,
) -> Served {
    serve_with_env(
        &mock.openai_base_url(),
        dir,
        state,
        &store.args(),
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

/// Sends a JSON body with an optional `Idempotency-Key`; the status and the answer as `T` (or
/// its error body), or `None` when the server died before answering.
async fn post_keyed<T: Serialize + DeserializeOwned>(
    url: &str,
    body: &impl Serialize,
    key: Option<&str>,
) -> Option<(u16, Result<T, ErrorBody>)> {
    let mut request = client().post(url).json(body);
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    let response = request.send().await.ok()?;
    let status = response.status().as_u16();
    let body = response.json().await.ok()?;
    check_answer("POST", url, status, &body);
    Some((status, read_answer(status, &body)))
}

/// The user messages of the last model request.
fn last_users(mock: &MockModelServer) -> Vec<String> {
    mock.requests().last().unwrap().user_texts()
}

/// Creates a chat session and waits for its first turn to end; its id and token.
async fn created_and_waiting(url: &str) -> (String, String) {
    let created = create_session(url, &CreateSession::message("first")).await;
    let mut stream = Stream::open(url, &created.session_id, 0, None).await;
    stream.until("session.waiting").await;
    (created.session_id, created.continuation_token)
}

/// A keyed `message.received` with its request digest (SHA-256, hex) checked, then cleared.
fn without_digest(message: &MessageReceived) -> MessageReceived {
    let digest = message.request_digest.as_deref().unwrap_or_default();
    assert!(
        digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()),
        "a keyed message records its request digest: {message:?}"
    );
    MessageReceived {
        request_digest: None,
        ..message.clone()
    }
}

/// A `message.received` with no admission, coalescing or key.
fn received(text: &str) -> MessageReceived {
    MessageReceived {
        text: text.into(),
        admission: None,
        coalesced: None,
        client_message_id: None,
        request_digest: None,
    }
}

async fn a_follow_up_recorded_before_a_crash_is_answered_by_its_retry_and_runs_once(store: Store) {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("one"));
    let dir = project(AGENT);
    let state = tempfile::tempdir().unwrap();
    let server = serve_on(&store, &mock, dir.path(), state.path()).await;
    let (id, token) = created_and_waiting(&server.url).await;
    kill(server).await;

    // The message is synced to the log, then the process dies before session.json (status,
    // rotated token) and before the reply.
    let server = serve_faulty(&store, &mock, dir.path(), state.path(), "message-synced").await;
    let follow = format!("{}/v1/session/{id}", server.url);
    let body = FollowUp::new(&token, "second");
    assert_eq!(
        post_keyed::<FollowUpAccepted>(&follow, &body, Some("msg-2")).await,
        None
    );
    gone(server).await;

    mock.push(MockReply::text("three"));
    let server = serve_on(&store, &mock, dir.path(), state.path()).await;
    let url = server.url.clone();
    let follow = format!("{url}/v1/session/{id}");
    // The retry gets an answer (not 409), twice the same one, and records nothing new.
    let (status, first) = post_keyed::<FollowUpAccepted>(&follow, &body, Some("msg-2"))
        .await
        .unwrap();
    assert_eq!(status, 200, "{first:?}");
    let first = first.unwrap();
    let again = post_keyed(&follow, &body, Some("msg-2")).await.unwrap();
    assert_eq!(again, (200, Ok(first.clone())));
    // The key with another message is refused, not answered with the first result.
    let (status, refused) =
        post_keyed::<FollowUpAccepted>(&follow, &FollowUp::new(&token, "other"), Some("msg-2"))
            .await
            .unwrap();
    assert_eq!(
        (status, refused.unwrap_err().error),
        (422, ErrorCode::IdempotencyKeyReused)
    );
    let stored = events(&url, &id).await;
    let received_events = of_type::<MessageReceived>(&stored);
    assert_eq!(received_events.len(), 2, "{stored:#?}");
    assert_eq!(
        without_digest(data::<MessageReceived>(received_events[1])),
        MessageReceived {
            client_message_id: Some("msg-2".into()),
            ..received("second")
        }
    );
    // Its turn was cut by the crash; the session parked once.
    let failed = of_type::<TurnFailed>(&stored);
    assert_eq!(failed.len(), 1);
    assert_eq!(
        failed[0].body,
        EventBody::TurnFailed(TurnFailed {
            message: SERVER_RESTARTED.into()
        })
    );
    assert_eq!(failed[0].turn_id, received_events[1].turn_id);
    assert_eq!(all::<SessionWaiting>(&stored).len(), 2);
    let got = session(&url, &id).await;
    assert_eq!((got.status, got.turns), (SessionStatus::Waiting, 2));

    // The answered token continues the conversation; the one it replaced is stale.
    follow_up(
        &url,
        &id,
        &FollowUp::new(&first.continuation_token, "third"),
    )
    .await;
    let mut stream = Stream::open(&url, &id, 0, None).await;
    stream.until_count("session.waiting", 3).await;
    assert_eq!(last_users(&mock), ["first", "second", "third"]);
    expect_error(
        Method::POST,
        &follow,
        Some(&body),
        ErrorCode::StaleContinuationToken,
    )
    .await;
    // Still answered by key after the token moved on (session.json remembers the key) ...
    let late = post_keyed(&follow, &body, Some("msg-2")).await.unwrap();
    assert_eq!(late, (200, Ok(first)));
    // ... but only to the holder of the token it first presented.
    let wrong = FollowUp::new("http:guess", "second");
    let (status, refusal) = post_keyed::<FollowUpAccepted>(&follow, &wrong, Some("msg-2"))
        .await
        .unwrap();
    assert_eq!(
        (status, refusal.unwrap_err().error),
        (409, ErrorCode::StaleContinuationToken)
    );
    assert_eq!(
        of_type::<MessageReceived>(&events(&url, &id).await).len(),
        3
    );
}

async fn a_create_acknowledged_just_before_a_crash_is_retried_by_key_into_the_same_session(
    store: Store,
) {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("hello"));
    let dir = project(AGENT);
    let state = tempfile::tempdir().unwrap();
    // Everything is durable; the process dies before the 201 leaves.
    let server = serve_faulty(&store, &mock, dir.path(), state.path(), "before-reply").await;
    let create = format!("{}/v1/session", server.url);
    let body = CreateSession {
        client_message_id: Some("create-1".into()),
        ..CreateSession::message("first")
    };
    assert_eq!(
        post_keyed::<SessionCreated>(&create, &body, None).await,
        None
    );
    gone(server).await;

    mock.push(MockReply::text("hello again"));
    mock.push(MockReply::text("and more"));
    let server = serve_on(&store, &mock, dir.path(), state.path()).await;
    let url = server.url.clone();
    let create = format!("{url}/v1/session");
    // The header and the body field name the same key.
    let (status, first) =
        post_keyed::<SessionCreated>(&create, &CreateSession::message("first"), Some("create-1"))
            .await
            .unwrap();
    assert_eq!(status, 201, "{first:?}");
    let first = first.unwrap();
    let again = post_keyed(&create, &body, None).await.unwrap();
    assert_eq!(again, (201, Ok(first.clone())));
    let id = first.session_id.as_str();
    let page: Page<SessionSummary> =
        expect(Method::GET, &format!("{url}/v1/sessions"), NO_BODY, 200).await;
    let ids: Vec<&str> = page.data.iter().map(|s| s.session_id.as_str()).collect();
    assert_eq!(ids, [id], "one session for one key");
    // The key with another first message is refused.
    let (status, refused) = post_keyed::<SessionCreated>(
        &create,
        &CreateSession::message("not the first"),
        Some("create-1"),
    )
    .await
    .unwrap();
    assert_eq!(
        (status, refused.unwrap_err().error),
        (422, ErrorCode::IdempotencyKeyReused)
    );
    let stored = events(&url, id).await;
    let received_events: Vec<MessageReceived> = all::<MessageReceived>(&stored)
        .into_iter()
        .map(without_digest)
        .collect();
    assert_eq!(
        received_events,
        [MessageReceived {
            client_message_id: Some("create-1".into()),
            ..received("first")
        }]
    );
    // The answered token is the session's token.
    follow_up(
        &url,
        id,
        &FollowUp::new(&first.continuation_token, "second"),
    )
    .await;
    // A key differing between header and body is refused.
    let differing = CreateSession {
        client_message_id: Some("a".into()),
        ..CreateSession::message("x")
    };
    let (status, refusal) = post_keyed::<SessionCreated>(&create, &differing, Some("b"))
        .await
        .unwrap();
    assert_eq!(
        (status, refusal.unwrap_err().error),
        (400, ErrorCode::InvalidRequest)
    );
}

async fn coalesced_messages_acknowledged_before_a_kill_9_run_once_after_the_restart(store: Store) {
    coalesced_messages_survive(store, Ending::Kill9).await;
}

async fn coalesced_messages_acknowledged_before_a_graceful_shutdown_run_once_after_the_restart(
    store: Store,
) {
    coalesced_messages_survive(store, Ending::Sigterm).await;
}

/// How the server ends while coalesced messages are queued.
enum Ending {
    Kill9,
    Sigterm,
}

async fn coalesced_messages_survive(store: Store, ending: Ending) {
    let mock = MockModelServer::start().await;
    mock.push(
        MockReply::text("one two three four five six seven eight nine ten eleven twelve")
            .chunk_delay(Duration::from_millis(400)),
    );
    let dir = project(AGENT);
    let state = tempfile::tempdir().unwrap();
    let server = serve_on(&store, &mock, dir.path(), state.path()).await;
    let url = server.url.clone();
    let created = create_session(&url, &CreateSession::message("first")).await;
    let id = created.session_id;
    let mut token = created.continuation_token;
    let mut stream = Stream::open(&url, &id, 0, None).await;
    stream.until("message.appended").await;
    for text in ["q1", "q2"] {
        let coalesce = FollowUp {
            admission: Some(Admission::Coalesce),
            ..FollowUp::new(&token, text)
        };
        token = follow_up(&url, &id, &coalesce).await.continuation_token;
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
    let server = serve_on(&store, &mock, dir.path(), state.path()).await;
    let url = server.url.clone();
    let mut stream = Stream::open(&url, &id, 0, None).await;
    stream.until("session.waiting").await;
    let stored = events(&url, &id).await;
    let queued = |text: &str| MessageQueued {
        text: text.into(),
        workspace_files: BTreeMap::new(),
        client_message_id: None,
        request_digest: None,
    };
    assert_eq!(
        all::<MessageQueued>(&stored),
        [&queued("q1"), &queued("q2")]
    );
    assert_eq!(
        all::<MessageReceived>(&stored),
        [
            &received("first"),
            &MessageReceived {
                admission: Some(Admission::Coalesce),
                coalesced: Some(2),
                ..received("q1\n\nq2")
            }
        ]
    );
    assert_eq!(all::<TurnCompleted>(&stored).len(), 1);
    assert_eq!(all::<SessionWaiting>(&stored).len(), 1);
    assert_eq!(last_users(&mock), ["first", "q1\n\nq2"]);
    // The last acknowledged token still continues the session.
    mock.push(MockReply::text("next answered"));
    follow_up(&url, &id, &FollowUp::new(&token, "next")).await;
    stream.until_count("session.waiting", 2).await;

    // A second restart runs nothing again.
    kill(server).await;
    let server = serve_on(&store, &mock, dir.path(), state.path()).await;
    let stored = events(&server.url, &id).await;
    assert_eq!(all::<MessageReceived>(&stored).len(), 3);
    assert_eq!(all::<SessionWaiting>(&stored).len(), 2);
    assert_eq!(
        stored.last().unwrap().body,
        EventBody::SessionWaiting(SessionWaiting {})
    );
}

async fn a_crash_after_the_end_of_a_turn_is_synced_records_session_waiting_once(store: Store) {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("hi"));
    let dir = project(AGENT);
    let state = tempfile::tempdir().unwrap();
    // session.waiting is synced; the process dies before session.json says waiting.
    let server = serve_faulty(&store, &mock, dir.path(), state.path(), "boundary-synced").await;
    let created = create_session(&server.url, &CreateSession::message("first")).await;
    gone(server).await;

    mock.push(MockReply::text("again"));
    let server = serve_on(&store, &mock, dir.path(), state.path()).await;
    let url = server.url.clone();
    let id = created.session_id.as_str();
    let stored = events(&url, id).await;
    assert_eq!(
        stored
            .iter()
            .map(Event::event_type)
            .filter(|t| *t != "message.appended")
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
    let got = session(&url, id).await;
    assert_eq!(
        (got.status, got.last_index),
        (SessionStatus::Waiting, stored.last().unwrap().index)
    );
    follow_up(
        &url,
        id,
        &FollowUp::new(&created.continuation_token, "second"),
    )
    .await;
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
