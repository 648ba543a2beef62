//! `local-dev-strict` admits a caller only when its loopback address is known: a router served
//! without peer addresses refuses everyone instead of trusting them.

mod support;

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
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"], "forbidden");
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
