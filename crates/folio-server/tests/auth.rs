//! `local-dev-strict` admits a caller only when its loopback address is known: a router served
//! without peer addresses refuses everyone instead of trusting them.

mod support;

use folio_protocol::{CreateSession, ErrorBody, ErrorCode, Page, SessionCreated, SessionSummary};
use folio_server::http::{HttpConfig, Layout, Mount, router};
use folio_test_support::MockModelServer;
use support::*;

#[tokio::test]
async fn without_peer_addresses_local_dev_strict_fails_closed() {
    let mock = MockModelServer::start().await;
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent(&mock, dir.path()).await, state.path());
    let app = router(
        vec![Mount {
            slug: "t".into(),
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
    let base = http(manager(agent(&mock, dir.path()).await, state.path())).await;
    let response = reqwest::get(format!("{base}/v1/sessions")).await.unwrap();
    assert_eq!(response.status(), 200);
}

/// Serves `manager` with two token principals (`alice`, `bob`) on loopback.
async fn serve_tokens(manager: folio_server::SessionManager, dev: bool) -> String {
    let app = router(
        vec![Mount {
            slug: "t".into(),
            manager,
            diagnostics: Vec::new(),
        }],
        HttpConfig {
            layout: Layout::Single,
            auth: folio_server::Auth::Tokens(vec![
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

async fn create(base: &str, token: &str) -> String {
    let created: SessionCreated = reqwest::Client::new()
        .post(format!("{base}/v1/session"))
        .bearer_auth(token)
        .json(&CreateSession {
            title: Some(token.to_string()),
            ..CreateSession::message("hi")
        })
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    created.session_id
}

/// GETs `url` as `token`; reads the answer as its folio-protocol type `T`.
async fn get<T: serde::de::DeserializeOwned>(url: String, token: &str) -> (u16, T) {
    let response = reqwest::Client::new()
        .get(url)
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

fn ids(page: &Page<SessionSummary>) -> Vec<String> {
    let mut ids: Vec<String> = page.data.iter().map(|s| s.session_id.clone()).collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn dev_on_loopback_lists_every_principals_runs_but_keeps_sessions_private() {
    let mock = MockModelServer::start().await;
    mock.push(folio_test_support::MockReply::text("one"));
    mock.push(folio_test_support::MockReply::text("two"));
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let base = serve_tokens(manager(agent(&mock, dir.path()).await, state.path()), true).await;
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
    let base = serve_tokens(manager(agent(&mock, dir.path()).await, state.path()), false).await;
    let (status, body): (_, ErrorBody) =
        get(format!("{base}/v1/sessions?scope=all"), "alice-token").await;
    assert_eq!((status, body.error), (403, ErrorCode::Forbidden));
    let (status, body): (_, ErrorBody) =
        get(format!("{base}/v1/sessions?scope=everyone"), "alice-token").await;
    assert_eq!((status, body.error), (400, ErrorCode::InvalidRequest));
}
