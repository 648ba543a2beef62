//! The playground's server side without a browser: its embedded files (served without auth,
//! behind the browser guard, with a CSP that admits only its own origin), `POST
//! /v1/session/:id/fork` and `POST /v1/session/:id/token`.

mod serve_support;

use folio_protocol::{EventBody, ForkOrigin};
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use serve_support::*;

const TOKENS: &str = "alice = \"alice-secret\"\nbob = \"bob-secret\"\n";

async fn served(
    replies: Vec<MockReply>,
    extra: &[&str],
) -> (MockModelServer, Served, Project, tempfile::TempDir) {
    let mock = MockModelServer::start().await;
    for reply in replies {
        mock.push(reply);
    }
    let dir = project("name = \"pg\"\nmodel = \"openai:gpt-test\"\n");
    let state = tempfile::tempdir().unwrap();
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), extra).await;
    (mock, server, dir, state)
}

async fn as_user(
    method: reqwest::Method,
    url: &str,
    body: Option<Value>,
    token: &str,
) -> (u16, Value) {
    call(method, url, body, Some(token)).await
}

/// Creates a session as `token`'s principal and waits for its first turn to end.
async fn session(url: &str, message: &str, token: Option<&str>) -> (String, String) {
    let (status, created) = call(
        reqwest::Method::POST,
        &format!("{url}/v1/session"),
        Some(json!({"message": message})),
        token,
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["sessionId"].as_str().unwrap().to_string();
    let mut stream = Stream::open(url, &id, 0, token).await;
    stream.until("session.waiting").await;
    (
        id,
        created["continuationToken"].as_str().unwrap().to_string(),
    )
}

#[tokio::test]
async fn the_page_and_its_modules_are_embedded_and_served_without_auth_behind_the_guard() {
    let tokens = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tokens.path(), TOKENS).unwrap();
    let (_mock, server, _dir, _state) =
        served(vec![], &["--tokens-file", tokens.path().to_str().unwrap()]).await;
    let url = &server.url;
    let page = client()
        .get(format!("{url}/playground"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 200);
    let headers = page.headers().clone();
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.starts_with("default-src 'none'; script-src 'self';"),
        "{csp}"
    );
    assert!(csp.contains("connect-src 'self'"), "{csp}");
    let html = page.text().await.unwrap();
    assert!(
        html.contains(r#"<script type="module" src="playground/assets/app.js">"#),
        "{html}"
    );
    for (file, kind) in [
        ("app.js", "text/javascript; charset=utf-8"),
        ("style.css", "text/css; charset=utf-8"),
    ] {
        let asset = client()
            .get(format!("{url}/playground/assets/{file}"))
            .send()
            .await
            .unwrap();
        assert_eq!(
            (
                asset.status().as_u16(),
                asset.headers()["content-type"].to_str().unwrap()
            ),
            (200, kind)
        );
        let text = asset.text().await.unwrap();
        assert!(
            !text.contains("http://") && !text.contains("https://"),
            "{file} names an external URL"
        );
    }
    let (status, missing) = get(&format!("{url}/playground/assets/nope.js")).await;
    assert_eq!(
        (status, missing["message"].clone()),
        (404, json!("the playground has no file nope.js"))
    );
    // The API still needs a token; the page's files pass the same browser guard.
    let (status, _) = get(&format!("{url}/v1/agent")).await;
    assert_eq!(status, 401);
    let rebinding = client()
        .get(format!("{url}/playground"))
        .header("host", "evil.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(rebinding.status().as_u16(), 403);
    let index = client()
        .get(format!("{}/", server.host))
        .header("authorization", "Bearer bob-secret")
        .send()
        .await
        .unwrap();
    let index = index.text().await.unwrap();
    assert!(
        index.contains(r#"(<a href="/test-agent/playground">playground</a>)"#),
        "{index}"
    );
}

#[tokio::test]
async fn fork_copies_the_log_before_a_message_and_runs_the_edited_one() {
    let (mock, server, _dir, _state) = served(
        vec![
            MockReply::text("One."),
            MockReply::text("Two."),
            MockReply::text("Edited."),
        ],
        &[],
    )
    .await;
    let url = &server.url;
    let (id, token) = session(url, "first", None).await;
    let (status, _) = post(
        &format!("{url}/v1/session/{id}"),
        json!({"continuationToken": token, "message": "second"}),
    )
    .await;
    assert_eq!(status, 200);
    let mut stream = Stream::open(url, &id, 0, None).await;
    stream.until_count("session.waiting", 2).await;
    let original = stream.events.clone();
    let second = original
        .iter()
        .filter(|e| matches!(e.body, EventBody::MessageReceived(_)))
        .nth(1)
        .unwrap()
        .index;

    let fork_url = format!("{url}/v1/session/{id}/fork");
    let (status, refused) = post(&fork_url, json!({"atIndex": 0, "message": "x"})).await;
    assert_eq!(
        (status, refused["message"].clone()),
        (
            400,
            json!(
                "atIndex 0 is a session.started event: fork at the index of a message.received event"
            )
        )
    );
    let (status, refused) = post(&fork_url, json!({"atIndex": 999, "message": "x"})).await;
    assert_eq!(status, 400, "{refused}");
    let (status, refused) = post(
        &fork_url,
        json!({"atIndex": second, "message": "x", "extra": 1}),
    )
    .await;
    assert_eq!(status, 400, "{refused}");

    let (status, created) = post(
        &fork_url,
        json!({"atIndex": second, "message": "second, edited"}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let fork = created["sessionId"].as_str().unwrap().to_string();
    assert_ne!(fork, id);
    let mut forked = Stream::open(url, &fork, 0, None).await;
    // The copied first turn ends in session.waiting too.
    forked.until_count("session.waiting", 2).await;
    let events = forked.events.clone();
    let indexes: Vec<u64> = events.iter().map(|e| e.index).collect();
    assert_eq!(indexes, (0..events.len() as u64).collect::<Vec<_>>());
    let EventBody::SessionStarted(started) = &events[0].body else {
        panic!("the fork starts with {:?}", events[0].body)
    };
    assert_eq!(
        started.forked_from,
        Some(ForkOrigin {
            session_id: id.clone(),
            at_index: second,
        })
    );
    // Everything between session.started and the replaced message is a copy, in order.
    let copied: Vec<&EventBody> = events[1..second as usize].iter().map(|e| &e.body).collect();
    let source: Vec<&EventBody> = original[1..second as usize]
        .iter()
        .map(|e| &e.body)
        .collect();
    assert_eq!(copied, source);
    let EventBody::MessageReceived(edited) = &events[second as usize].body else {
        panic!("the fork continues with {:?}", events[second as usize].body)
    };
    assert_eq!(edited.text, "second, edited");
    // The fork's turn saw the copied history: first, One., then the edited message.
    let request = mock.requests().pop().unwrap();
    let messages: Vec<String> = request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(messages, vec!["first", "One.", "second, edited"]);
    let (_, summary) = get(&format!("{url}/v1/session/{fork}")).await;
    assert_eq!(summary["session"]["turns"], json!(2));
    // The fork's token continues it.
    let fork_token = created["continuationToken"].as_str().unwrap();
    mock.push(MockReply::text("More."));
    let (status, _) = post(
        &format!("{url}/v1/session/{fork}"),
        json!({"continuationToken": fork_token, "message": "more"}),
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn the_owner_gets_a_fresh_token_and_others_get_403() {
    let tokens = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tokens.path(), TOKENS).unwrap();
    let (mock, server, _dir, _state) = served(
        vec![
            MockReply::text("Hi."),
            MockReply::text("Again."),
            MockReply::text("Task done."),
        ],
        &["--tokens-file", tokens.path().to_str().unwrap()],
    )
    .await;
    let url = &server.url;
    let (id, first) = session(url, "hello", Some("alice-secret")).await;
    let token_url = format!("{url}/v1/session/{id}/token");
    let (status, refused) = as_user(
        reqwest::Method::POST,
        &token_url,
        Some(json!({})),
        "bob-secret",
    )
    .await;
    assert_eq!(
        (status, refused["error"].clone()),
        (403, json!("forbidden"))
    );
    let (status, refused) = as_user(
        reqwest::Method::POST,
        &format!("{url}/v1/session/{id}/fork"),
        Some(json!({"atIndex": 1, "message": "x"})),
        "bob-secret",
    )
    .await;
    assert_eq!(
        (status, refused["error"].clone()),
        (403, json!("forbidden"))
    );
    let (status, issued) = as_user(
        reqwest::Method::POST,
        &token_url,
        Some(json!({})),
        "alice-secret",
    )
    .await;
    assert_eq!(status, 200, "{issued}");
    assert_eq!(issued["sessionId"], json!(id));
    let fresh = issued["continuationToken"].as_str().unwrap();
    assert_ne!(fresh, first);
    let follow = format!("{url}/v1/session/{id}");
    let (status, stale) = as_user(
        reqwest::Method::POST,
        &follow,
        Some(json!({"continuationToken": first, "message": "old"})),
        "alice-secret",
    )
    .await;
    assert_eq!(
        (status, stale["error"].clone()),
        (409, json!("stale_continuation_token"))
    );
    let (status, _) = as_user(
        reqwest::Method::POST,
        &follow,
        Some(json!({"continuationToken": fresh, "message": "again"})),
        "alice-secret",
    )
    .await;
    assert_eq!(status, 200);
    // A task session takes no follow-ups, so it gets no token either.
    let (status, task) = call(
        reqwest::Method::POST,
        &format!("{url}/v1/session"),
        Some(json!({"message": "do it", "mode": "task"})),
        Some("alice-secret"),
    )
    .await;
    assert_eq!(status, 201);
    let task_id = task["sessionId"].as_str().unwrap();
    let (status, refused) = as_user(
        reqwest::Method::POST,
        &format!("{url}/v1/session/{task_id}/token"),
        Some(json!({})),
        "alice-secret",
    )
    .await;
    assert_eq!(
        (status, refused["error"].clone()),
        (409, json!("session_not_followable"))
    );
    drop(mock);
}
