//! Quotas and rate limits per principal over HTTP: messages per minute (`429` with
//! `Retry-After`), sessions held, running turns, storage bytes, tool calls per turn, a
//! principal's own quotas, `GET /v1/limits`, and one message bucket shared by two servers on
//! PostgreSQL.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use folio_project::PrincipalLimits;
use folio_protocol::{Event, EventBody, LimitUsage, LimitValues, LimitsResponse, OkTrue};
use folio_session::{LogBuffer, SessionManager};
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use support::*;

/// A served agent whose project has `folio_toml`; its manager, URL and the folders to keep.
async fn serve(
    mock: &MockModelServer,
    folio_toml: &str,
) -> (SessionManager, String, tempfile::TempDir, tempfile::TempDir) {
    let dir = project("");
    std::fs::write(dir.path().join("folio.toml"), folio_toml).unwrap();
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent(mock, dir.path()).await, state.path()).await;
    let url = http(manager.clone()).await;
    (manager, url, state, dir)
}

/// An answer: status, `Retry-After` and the JSON body.
struct Answer {
    status: u16,
    retry_after: Option<u64>,
    body: Value,
}

async fn post(url: &str, body: &Value) -> Answer {
    let response = reqwest::Client::new()
        .post(url)
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().parse().unwrap());
    Answer {
        status,
        retry_after,
        body: response.json().await.unwrap(),
    }
}

async fn create(url: &str, message: &str) -> Answer {
    post(&format!("{url}/v1/session"), &json!({"message": message})).await
}

/// Polls the log of `id` until `done` holds.
async fn wait_for(manager: &SessionManager, id: &str, done: impl Fn(&[Event]) -> bool) {
    for _ in 0..500 {
        if done(&manager.events().read("local", id).await.unwrap()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the session never got there");
}

#[tokio::test]
async fn messages_past_the_rate_answer_429_with_retry_after() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("one"))
        .push(MockReply::text("two"));
    let (manager, url, _state, _dir) = serve(&mock, "[limits]\nmessages_per_minute = 2\n").await;
    let first = create(&url, "one").await;
    assert_eq!(first.status, 201, "{}", first.body);
    let id = first.body["sessionId"].as_str().unwrap().to_string();
    wait_turns(&manager, &id, 1).await;
    let token = first.body["continuationToken"].as_str().unwrap();
    let second = post(
        &format!("{url}/v1/session/{id}"),
        &json!({"continuationToken": token, "message": "two"}),
    )
    .await;
    assert_eq!(second.status, 200, "{}", second.body);
    let third = create(&url, "three").await;
    assert_eq!(third.status, 429, "{}", third.body);
    assert_eq!(third.body["error"], "rate_limited");
    assert_eq!(
        third.body["message"],
        "messages_per_minute: you sent more than 2 messages in the last minute ([limits] messages_per_minute): wait and send again"
    );
    let wait = third.retry_after.expect("a Retry-After header");
    assert!((1..=30).contains(&wait), "Retry-After: {wait}");
    manager.shutdown().await;
}

#[tokio::test]
async fn sessions_and_storage_are_held_to_their_quotas() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("a")).push(MockReply::text("b"));
    let (manager, url, _state, _dir) =
        serve(&mock, "[limits]\nsessions = 2\nstorage_bytes = 10\n").await;
    let first = post(
        &format!("{url}/v1/session"),
        &json!({"message": "a", "workspaceFiles": {"notes.md": "0123456789"}}),
    )
    .await;
    assert_eq!(first.status, 201, "{}", first.body);
    let id = first.body["sessionId"].as_str().unwrap().to_string();
    wait_turns(&manager, &id, 1).await;
    // Ten bytes and more held (the workspace's own AGENTS.md too): the quota is reached.
    let refused = create(&url, "b").await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert_eq!(refused.retry_after, None);
    let message = refused.body["message"].as_str().unwrap();
    assert!(
        message.starts_with("storage_bytes: your session workspaces hold ")
            && message.ends_with(
                " bytes; at most 10 are allowed ([limits] storage_bytes): delete sessions first"
            ),
        "{message}"
    );
    manager.sessions().delete("local", &id).await.unwrap();
    for message in ["b", "c"] {
        let answer = create(&url, message).await;
        assert_eq!(answer.status, 201, "{}", answer.body);
    }
    let refused = create(&url, "d").await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert_eq!(
        refused.body["message"],
        "sessions: you hold 2 sessions; at most 2 are allowed ([limits] sessions): delete sessions first"
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn running_turns_are_capped_per_principal() {
    let mock = MockModelServer::start().await;
    // The first session's turn parks on an approval: it stays running.
    mock.push(MockReply::tool_calls([(
        "Deploy",
        json!({"target": "prod"}),
    )]));
    let (manager, url, _state, _dir) = serve(&mock, "[limits]\nrunning_turns = 1\n").await;
    let first = create(&url, "deploy").await;
    assert_eq!(first.status, 201, "{}", first.body);
    let id = first.body["sessionId"].as_str().unwrap().to_string();
    wait_for(&manager, &id, |events| {
        events
            .iter()
            .any(|e| matches!(e.body, EventBody::ActionApprovalRequested(_)))
    })
    .await;
    let refused = create(&url, "another").await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert_eq!(
        refused.body["message"],
        "running_turns: 1 of your turns are running; at most 1 may run at once ([limits] running_turns): wait for one to end"
    );
    assert_eq!(refused.retry_after, Some(1));
    // A message to the running session itself is not another running turn.
    let token = first.body["continuationToken"].as_str().unwrap();
    let own = post(
        &format!("{url}/v1/session/{id}"),
        &json!({"continuationToken": token, "message": "also", "admission": "coalesce"}),
    )
    .await;
    assert_ne!(own.status, 429, "{}", own.body);
    manager.shutdown().await;
}

#[tokio::test]
async fn a_turn_past_its_tool_calls_fails_naming_the_limit() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([
        ("LS", json!({})),
        ("LS", json!({})),
        ("LS", json!({})),
    ]));
    let (manager, url, _state, _dir) = serve(&mock, "[limits]\ntool_calls_per_turn = 2\n").await;
    let created = create(&url, "list a lot").await;
    let id = created.body["sessionId"].as_str().unwrap().to_string();
    let log = wait_turns(&manager, &id, 1).await;
    let failed: Vec<&str> = log
        .iter()
        .filter_map(|event| match &event.body {
            EventBody::TurnFailed(failed) => Some(failed.message.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        failed,
        [
            "tool_calls_per_turn: the turn asked for 3 tool calls; at most 2 are allowed ([limits] tool_calls_per_turn in folio.toml)"
        ]
    );
    let ran = log
        .iter()
        .filter(|e| matches!(e.body, EventBody::ActionResult(_)))
        .count();
    assert_eq!(ran, 0);
    manager.shutdown().await;
}

#[tokio::test]
async fn get_limits_shows_the_callers_limits_with_its_own_quotas_and_usage() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("hi"));
    let (manager, url, _state, _dir) = serve(&mock, "[limits]\nmessages_per_minute = 5\n").await;
    manager.set_principal_limits(BTreeMap::from([(
        "local".to_string(),
        PrincipalLimits {
            sessions: Some(3),
            ..PrincipalLimits::default()
        },
    )]));
    let created = create(&url, "hi").await;
    let id = created.body["sessionId"].as_str().unwrap().to_string();
    wait_turns(&manager, &id, 1).await;
    let answer: LimitsResponse = reqwest::get(format!("{url}/v1/limits"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        answer,
        LimitsResponse {
            ok: OkTrue,
            principal: "local".into(),
            limits: LimitValues {
                workspace_files: 10_000,
                workspace_bytes: 1 << 30,
                message_bytes: 256 * 1024,
                send_files: 1_000,
                send_bytes: 1 << 20,
                sessions: Some(3),
                // Not set: the per-principal quotas hold only where configured.
                running_turns: None,
                messages_per_minute: Some(5),
                tool_calls_per_turn: 200,
                storage_bytes: None,
            },
            usage: LimitUsage {
                sessions: 1,
                running_turns: 0,
                messages_available: Some(4),
                storage_bytes: 0,
            },
        }
    );
    manager.shutdown().await;
}

/// A manager on the shared PostgreSQL `store`, answering through `mock`.
async fn on_store(
    mock: &MockModelServer,
    dir: &std::path::Path,
    store: Arc<folio_store_postgres::PgStore>,
) -> (SessionManager, tempfile::TempDir) {
    let state = tempfile::tempdir().unwrap();
    let manager = SessionManager::open_on_store(
        folio_session::StateRoot::new(state.path()),
        agent(mock, dir).await,
        LogBuffer::new(),
        store,
        Duration::from_millis(3000),
    )
    .await
    .unwrap();
    (manager, state)
}

#[tokio::test]
async fn two_servers_on_postgres_share_one_message_bucket_and_session_count() {
    let Some(url) = folio_store_postgres::testing::test_database("quotas_across_servers").await
    else {
        return;
    };
    let store = Arc::new(
        folio_store_postgres::PgStore::open(&url, folio_store_postgres::PgOptions::default())
            .await
            .unwrap(),
    );
    let mock = MockModelServer::start().await;
    for _ in 0..3 {
        mock.push(MockReply::text("ok"));
    }
    let dir = project("");
    std::fs::write(
        dir.path().join("folio.toml"),
        "[limits]\nmessages_per_minute = 3\nsessions = 100\n",
    )
    .unwrap();
    let (a, _state_a) = on_store(&mock, dir.path(), store.clone()).await;
    let (b, _state_b) = on_store(&mock, dir.path(), store.clone()).await;
    let (url_a, url_b) = (http(a.clone()).await, http(b.clone()).await);
    for url in [&url_a, &url_b, &url_a] {
        let answer = create(url, "hi").await;
        assert_eq!(answer.status, 201, "{}", answer.body);
    }
    // The fourth message in the minute is refused by either server.
    let refused = create(&url_b, "hi").await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert!(refused.retry_after.is_some());
    let limits: LimitsResponse = reqwest::get(format!("{url_a}/v1/limits"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(limits.usage.sessions, 3);
    assert_eq!(limits.usage.messages_available, Some(0));
    a.shutdown().await;
    b.shutdown().await;
}
