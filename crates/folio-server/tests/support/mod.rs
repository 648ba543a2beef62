//! The engine's test helpers (`folio-session/tests/support`) and the HTTP router on a
//! loopback port.
#![allow(dead_code)]

use std::net::SocketAddr;

use folio_server::http::{HttpConfig, Mount, router};
use folio_session::SessionManager;

#[path = "../../../folio-session/tests/support/mod.rs"]
mod engine;
pub use engine::*;

/// Serves `manager` in the single layout on a loopback port; returns its base URL.
pub async fn http(manager: SessionManager) -> String {
    let app = router(
        vec![Mount {
            slug: "t".into(),
            evals: manager.state().clone(),
            manager,
            diagnostics: Vec::new(),
        }],
        HttpConfig {
            layout: folio_server::http::Layout::Single,
            ..HttpConfig::default()
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap();
    });
    format!("http://{addr}")
}
