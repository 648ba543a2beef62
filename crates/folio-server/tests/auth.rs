//! `local-dev-strict` admits a caller only when its loopback address is known: a router served
//! without peer addresses refuses everyone instead of trusting them.

mod support;

use folio_protocol::{
    CreateSession, ErrorBody, ErrorCode, Page, SessionCreated, SessionResponse, SessionStatus,
    SessionSummary, ToolCallRequest, ToolCallResult,
};
use folio_server::http::{HttpConfig, Layout, Mount, router};
use folio_test_support::{MockModelServer, NO_BODY, answer, call_as};
use futures::StreamExt;
use reqwest::Method;
use serde_json::Value;
use support::*;

#[tokio::test]
async fn without_peer_addresses_local_dev_strict_fails_closed() {
    let mock = MockModelServer::start().await;
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent(&mock, dir.path()).await, state.path()).await;
    let app = router(
        vec![Mount {
            slug: "t".into(),
            evals: manager.state().clone(),
            manager,
            diagnostics: Vec::new(),
        }],
        HttpConfig {
            layout: Layout::Single,
            ..HttpConfig::default()
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // Served without `into_make_service_with_connect_info`: no peer address reaches the router.
    tokio::spawn(async move { axum::serve(listener, app).await });
    let response = reqwest::get(format!("http://{addr}/v1/sessions"))
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    let body: ErrorBody = response.json().await.unwrap();
    assert_eq!(body.error, ErrorCode::Forbidden);
}

#[tokio::test]
async fn a_loopback_peer_is_admitted() {
    let mock = MockModelServer::start().await;
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let base = http(manager(agent(&mock, dir.path()).await, state.path()).await).await;
    let response = reqwest::get(format!("{base}/v1/sessions")).await.unwrap();
    assert_eq!(response.status(), 200);
}

/// Serves `manager` with two token principals (`alice`, `bob`) on loopback.
async fn serve_tokens(manager: folio_session::SessionManager, dev: bool) -> String {
    let app = router(
        vec![Mount {
            slug: "t".into(),
            evals: manager.state().clone(),
            manager,
            diagnostics: Vec::new(),
        }],
        HttpConfig {
            layout: Layout::Single,
            auth: folio_auth::Auth::Tokens(vec![
                ("alice".into(), "alice-token".into()),
                ("bob".into(), "bob-token".into()),
            ]),
            dev,
            ..HttpConfig::default()
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<std::net::SocketAddr>(),
        )
        .await
    });
    format!("http://{addr}")
}

/// What [`serve_replies`] keeps alive: the mock model, the project and the state root.
type Served = (MockModelServer, tempfile::TempDir, tempfile::TempDir);

/// Serves a fresh project, whose model answers `replies` in turn, with the two token
/// principals, on the disk store or on the PostgreSQL `database` names; answers the base URL.
async fn serve_replies<const N: usize>(
    replies: [folio_test_support::MockReply; N],
    dev: bool,
    database: Option<&str>,
) -> (Served, String) {
    let mock = MockModelServer::start().await;
    for reply in replies {
        mock.push(reply);
    }
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let agent = agent(&mock, dir.path()).await;
    let manager = match database {
        None => manager(agent, state.path()).await,
        Some(url) => folio_session::SessionManager::open_on_store(
            folio_session::StateRoot::new(state.path()),
            agent,
            folio_session::LogBuffer::new(),
            std::sync::Arc::new(
                folio_store_postgres::PgStore::open(url, Default::default())
                    .await
                    .unwrap(),
            ),
            folio_session::DEFAULT_LEASE_TTL,
        )
        .await
        .unwrap(),
    };
    let base = serve_tokens(manager, dev).await;
    ((mock, dir, state), base)
}

async fn create(base: &str, token: &str) -> String {
    let body = CreateSession {
        title: Some(token.to_string()),
        ..CreateSession::message("hi")
    };
    let url = format!("{base}/v1/session");
    let (status, created) =
        answer::<SessionCreated>(Method::POST, &url, Some(&body), Some(token)).await;
    assert_eq!(status, 201, "{created:?}");
    created.unwrap().session_id
}

/// GETs `url` as `token`; reads the answer as `T` (its folio-protocol type, or [`ErrorBody`]).
async fn get<T: serde::Serialize + serde::de::DeserializeOwned>(
    url: String,
    token: &str,
) -> (u16, T) {
    call_as(Method::GET, &url, NO_BODY, Some(token)).await
}

fn ids(page: &Page<SessionSummary>) -> Vec<String> {
    let mut ids: Vec<String> = page.data.iter().map(|s| s.session_id.clone()).collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn dev_on_loopback_lists_every_principals_runs_but_keeps_sessions_private() {
    let (_served, base) = serve_replies(
        [
            folio_test_support::MockReply::text("one"),
            folio_test_support::MockReply::text("two"),
        ],
        true,
        None,
    )
    .await;
    let alices = create(&base, "alice-token").await;
    let bobs = create(&base, "bob-token").await;
    let mut both = vec![alices.clone(), bobs.clone()];
    both.sort();
    let (status, all) = get(format!("{base}/v1/sessions?scope=all"), "alice-token").await;
    assert_eq!(status, 200, "{all:?}");
    assert_eq!(ids(&all), both);
    let (_, mine) = get(format!("{base}/v1/sessions"), "alice-token").await;
    assert_eq!(ids(&mine), vec![alices]);
    // Listing is not access: bob's session still answers only bob.
    let (status, body): (_, ErrorBody) =
        get(format!("{base}/v1/session/{bobs}"), "alice-token").await;
    assert_eq!((status, body.error), (403, ErrorCode::Forbidden));
}

#[tokio::test]
async fn scope_all_needs_dev() {
    let mock = MockModelServer::start().await;
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let base = serve_tokens(
        manager(agent(&mock, dir.path()).await, state.path()).await,
        false,
    )
    .await;
    let (status, body): (_, ErrorBody) =
        get(format!("{base}/v1/sessions?scope=all"), "alice-token").await;
    assert_eq!((status, body.error), (403, ErrorCode::Forbidden));
    let (status, body): (_, ErrorBody) =
        get(format!("{base}/v1/sessions?scope=everyone"), "alice-token").await;
    assert_eq!((status, body.error), (400, ErrorCode::InvalidRequest));
}

/// Calls the tool at `url` with `input` as `token`.
async fn post(url: String, token: &str, input: Value) -> (u16, Result<ToolCallResult, ErrorBody>) {
    answer(
        Method::POST,
        &url,
        Some(&ToolCallRequest { input }),
        Some(token),
    )
    .await
}

/// Waits until the session's first turn is over (session tools answer 409 during a turn).
async fn settled(base: &str, id: &str, token: &str) {
    for _ in 0..500 {
        let (_, body): (u16, SessionResponse) = get(format!("{base}/v1/session/{id}"), token).await;
        if body.session.status != SessionStatus::Running {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("session {id} did not settle");
}

#[tokio::test]
async fn principals_reach_only_their_own_data_through_tools() {
    let mock = MockModelServer::start().await;
    mock.push(folio_test_support::MockReply::text("one"));
    mock.push(folio_test_support::MockReply::text("two"));
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let root = state.path().canonicalize().unwrap();
    let base = serve_tokens(manager(agent(&mock, dir.path()).await, &root).await, false).await;
    let sessions = [
        ("alice-token", create(&base, "alice-token").await),
        ("bob-token", create(&base, "bob-token").await),
    ];
    for (token, id) in &sessions {
        settled(&base, id, token).await;
        let secret = format!("secret of {token}");
        let (status, wrote) = post(
            format!("{base}/v1/session/{id}/tools/Write"),
            token,
            serde_json::json!({"path": "secret.txt", "contents": secret}),
        )
        .await;
        assert_eq!((status, wrote.map(|w| w.is_error)), (200, Ok(false)));
    }
    for (caller, own) in &sessions {
        for (victim, other) in &sessions {
            if caller == victim {
                continue;
            }
            let secret = format!("secret of {victim}");
            let other_ws = root.join("sessions").join(other).join("workspace");
            let paths = [
                other_ws.join("secret.txt").display().to_string(),
                other_ws.display().to_string(),
                format!("../../{other}/workspace/secret.txt"),
                root.join("traces")
                    .join(format!("{other}.ndjson"))
                    .display()
                    .to_string(),
                root.display().to_string(),
                "../..".to_string(),
            ];
            for path in &paths {
                for (tool, input) in [
                    ("Read", serde_json::json!({"path": path})),
                    ("LS", serde_json::json!({"path": path})),
                    (
                        "Grep",
                        serde_json::json!({"pattern": "secret", "path": path}),
                    ),
                    ("Glob", serde_json::json!({"pattern": "**/*", "path": path})),
                    (
                        "Write",
                        serde_json::json!({"path": format!("{path}/x"), "contents": "x"}),
                    ),
                    ("Delete", serde_json::json!({"path": path})),
                ] {
                    let (status, answer) = post(
                        format!("{base}/v1/session/{own}/tools/{tool}"),
                        caller,
                        input,
                    )
                    .await;
                    let result = answer
                        .unwrap_or_else(|error| panic!("{caller} {tool} {path}: {status} {error}"));
                    let shown = result.result.to_string();
                    assert!(
                        status == 200 && !shown.contains(&secret),
                        "{caller} {tool} {path}: {status} {shown}"
                    );
                    assert!(
                        result.is_error || tool == "Glob" || tool == "Grep",
                        "{caller} {tool} {path}: {shown}"
                    );
                }
            }
            // Another principal's session answers 403 on every session route.
            let (status, _) = post(
                format!("{base}/v1/session/{other}/tools/Read"),
                caller,
                serde_json::json!({"path": "secret.txt"}),
            )
            .await;
            assert_eq!(status, 403);
            assert_eq!(
                std::fs::read_to_string(other_ws.join("secret.txt")).unwrap(),
                secret
            );
        }
        // Unscoped built-ins never run, for anyone.
        for tool in ["Shell", "Read", "Write", "Grep", "LS"] {
            let (status, answer) = post(
                format!("{base}/v1/tools/{tool}"),
                caller,
                serde_json::json!({"command": "id", "path": "x", "contents": "x", "pattern": "x"}),
            )
            .await;
            assert_eq!(
                (status, answer.map_err(|error| error.error)),
                (403, Err(ErrorCode::Forbidden)),
                "{tool}"
            );
        }
    }
}

/// A session open on the server (its turn running, its stream read) answers only its
/// principal on every session route: the open copy's owner is checked, not trusted.
#[tokio::test]
async fn a_session_open_here_answers_only_its_principal() {
    only_its_principal(None).await;
}

/// The same on PostgreSQL, where a session open here answers from its copy.
#[tokio::test]
async fn a_session_open_here_on_postgres_answers_only_its_principal() {
    let Some(url) = folio_store_postgres::testing::test_database("open_session_principal").await
    else {
        return;
    };
    only_its_principal(Some(&url)).await;
}

async fn only_its_principal(database: Option<&str>) {
    let (_served, base) = serve_replies(
        [folio_test_support::MockReply::text("slow")
            .first_byte_delay(std::time::Duration::from_secs(3))],
        false,
        database,
    )
    .await;
    let id = create(&base, "alice-token").await;
    // Alice's stream keeps the session open here while bob tries every route.
    let stream = reqwest::Client::new()
        .get(format!("{base}/v1/session/{id}/stream"))
        .bearer_auth("alice-token")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let session = format!("{base}/v1/session/{id}");
    let routes: [(Method, String, Value); 12] = [
        (
            Method::POST,
            session.clone(),
            serde_json::json!({"message": "mine now", "continuationToken": "guess"}),
        ),
        (Method::GET, format!("{session}/stream"), Value::Null),
        (Method::GET, format!("{session}/events"), Value::Null),
        (Method::GET, session.clone(), Value::Null),
        (
            Method::POST,
            format!("{session}/stop"),
            serde_json::json!({}),
        ),
        (
            Method::POST,
            format!("{session}/fork"),
            serde_json::json!({"atIndex": 0, "message": "fork"}),
        ),
        (
            Method::POST,
            format!("{session}/tools/Read"),
            serde_json::json!({"input": {"path": "x"}}),
        ),
        (
            Method::POST,
            format!("{session}/approvals/call_1"),
            serde_json::json!({"decision": "approve"}),
        ),
        (
            Method::POST,
            format!("{session}/reminders"),
            serde_json::json!({"message": "later", "in": "1h"}),
        ),
        (Method::GET, format!("{session}/reminders"), Value::Null),
        (
            Method::POST,
            format!("{session}/token"),
            serde_json::json!({}),
        ),
        (Method::DELETE, session.clone(), Value::Null),
    ];
    for (method, url, body) in routes {
        let mut request = reqwest::Client::new()
            .request(method.clone(), &url)
            .bearer_auth("bob-token");
        if !body.is_null() {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        assert_eq!(status, 403, "{method} {url} as bob: {text}");
    }
    // Nothing bob sent reached the session: alice's turn ends with her reply alone.
    let mut text = String::new();
    let mut body = stream.bytes_stream();
    while !text.contains("session.waiting") {
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(30), body.next())
            .await
            .expect("alice's turn ends")
            .expect("the stream stays open until the turn ends")
            .unwrap();
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(text.contains("slow"), "{text}");
    assert!(!text.contains("mine now"), "{text}");
}
