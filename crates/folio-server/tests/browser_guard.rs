//! Browsers are callers too (docs/http-api.md): every route, in every auth mode, refuses a
//! foreign `Host` (DNS rebinding), a foreign `Origin`, `Sec-Fetch-Site: cross-site` and non-JSON
//! bodies, while same-origin JSON requests pass; bad input gets the JSON error body, and a
//! declared body over the limit is refused at once.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use folio_auth::Auth;
use folio_protocol::{ErrorBody, ErrorCode};
use folio_server::Browsers;
use folio_server::http::{HttpConfig, Layout, Mount, router};
use folio_test_support::{MockModelServer, read_wire};
use reqwest::header::CONTENT_TYPE;
use serde_json::{Value, json};
use support::*;

/// A served router: its base URL and the `Host` it is reached at.
struct Served {
    base: String,
    host: String,
    /// `Authorization` value for the auth mode, if any.
    bearer: Option<&'static str>,
}

async fn serve(auth: Auth, body_limit: usize) -> Served {
    let mock = MockModelServer::start().await;
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent(&mock, dir.path()).await, state.path()).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let bearer = match &auth {
        Auth::Tokens(_) => Some("Bearer alice-token"),
        _ => None,
    };
    let app = router(
        vec![Mount {
            slug: "t".into(),
            evals: manager.state().clone(),
            manager,
            diagnostics: Vec::new(),
        }],
        HttpConfig {
            layout: Layout::Single,
            auth,
            body_limit,
            browsers: Browsers::from_flags(addr, None, &[], &["https://trusted.example".into()])
                .unwrap(),
            ..HttpConfig::default()
        },
    );
    tokio::spawn(async move {
        // Keep the temporary folders and the mock alive as long as the server.
        let _keep = (mock, dir, state);
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
    });
    Served {
        base: format!("http://{addr}"),
        host: addr.to_string(),
        bearer,
    }
}

/// Every kind of route: (method, path, JSON body).
fn routes() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        ("POST", "/v1/session", json!({"message": "hi"})),
        (
            "POST",
            "/v1/session/01J000000000000000000000AA",
            json!({"continuationToken": "x", "message": "hi"}),
        ),
        (
            "POST",
            "/v1/session/01J000000000000000000000AA/stop",
            json!({}),
        ),
        (
            "POST",
            "/v1/session/01J000000000000000000000AA/approvals/c1",
            json!({"decision": "approve"}),
        ),
        (
            "POST",
            "/v1/session/01J000000000000000000000AA/tools/Write",
            json!({"input": {"path": "x", "content": "y"}}),
        ),
        (
            "POST",
            "/v1/tools/Shell",
            json!({"input": {"command": "id"}}),
        ),
        (
            "POST",
            "/v1/tools/Deploy",
            json!({"input": {"target": "prod"}}),
        ),
        (
            "POST",
            "/v1/mcp",
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}
            }}),
        ),
        ("GET", "/v1/sessions", Value::Null),
        (
            "GET",
            "/v1/session/01J000000000000000000000AA/stream",
            Value::Null,
        ),
        ("GET", "/v1/logs", Value::Null),
        ("GET", "/v1/agent", Value::Null),
        ("GET", "/playground", Value::Null),
    ]
}

async fn send(
    served: &Served,
    method: &str,
    path: &str,
    body: &Value,
    headers: &[(&str, String)],
) -> (u16, Value) {
    let client = reqwest::Client::new();
    let mut request = client.request(method.parse().unwrap(), format!("{}{path}", served.base));
    if let Some(bearer) = served.bearer {
        request = request.header("authorization", bearer);
    }
    if path == "/v1/mcp" {
        request = request.header("accept", "application/json, text/event-stream");
    }
    if !body.is_null() {
        request = request.body(body.to_string());
    }
    for (name, value) in headers {
        request = request.header(*name, value.as_str());
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let ct = response
        .headers()
        .get(CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let json = if ct.starts_with("application/json") {
        response.json().await.unwrap()
    } else {
        Value::Null
    };
    (status, json)
}

fn auth_modes() -> Vec<Auth> {
    vec![
        Auth::LocalDevStrict,
        Auth::Anonymous,
        Auth::Tokens(vec![
            ("alice".into(), "alice-token".into()),
            ("bob".into(), "bob-token".into()),
        ]),
    ]
}

#[tokio::test]
async fn foreign_hosts_origins_and_cross_site_requests_are_refused_on_every_route() {
    let foreign_origins = [
        "http://attacker.example",
        "https://attacker.example",
        "null",
        "http://localhost:1",
        "http://127.0.0.1.nip.io",
        "file://",
    ];
    for auth in auth_modes() {
        let served = serve(auth.clone(), 1024 * 1024).await;
        let port = served.host.rsplit(':').next().unwrap().to_string();
        let foreign_hosts = [
            format!("attacker.example:{port}"),
            format!("127.0.0.1.nip.io:{port}"),
            format!("localhost.attacker.example:{port}"),
            "evil".to_string(),
        ];
        for (method, path, body) in routes() {
            let json_ct = ("content-type", "application/json".to_string());
            let mut attacks: Vec<Vec<(&str, String)>> = Vec::new();
            for origin in foreign_origins {
                attacks.push(vec![json_ct.clone(), ("origin", origin.to_string())]);
            }
            for host in &foreign_hosts {
                attacks.push(vec![json_ct.clone(), ("host", host.clone())]);
            }
            attacks.push(vec![
                json_ct.clone(),
                ("sec-fetch-site", "cross-site".to_string()),
            ]);
            for headers in attacks {
                let (status, answer) = send(&served, method, path, &body, &headers).await;
                assert_eq!(
                    (status, read_wire::<ErrorBody>(&answer).error),
                    (403, ErrorCode::Forbidden),
                    "{auth:?} {method} {path} {headers:?}"
                );
            }
            if path == "/v1/tools/Shell" {
                // Past the guard, unscoped built-ins are refused anyway (direct.rs).
                continue;
            }
            // The same request from the server's own page passes the guard.
            let own = vec![
                json_ct.clone(),
                ("origin", served.base.clone()),
                ("sec-fetch-site", "same-origin".to_string()),
            ];
            let (status, answer) = send(&served, method, path, &body, &own).await;
            assert!(
                ![403, 415].contains(&status),
                "{auth:?} {method} {path}: same-origin got {status} {answer}"
            );
            // A listed origin passes too, even cross-site.
            let listed = vec![
                json_ct.clone(),
                ("origin", "https://trusted.example".to_string()),
                ("sec-fetch-site", "cross-site".to_string()),
            ];
            let (status, answer) = send(&served, method, path, &body, &listed).await;
            assert!(
                ![403, 415].contains(&status),
                "{auth:?} {method} {path}: listed origin got {status} {answer}"
            );
        }
    }
}

#[tokio::test]
async fn bodies_that_are_not_json_are_refused_with_415() {
    let content_types = [
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/jsonp",
        "text/json",
    ];
    for auth in auth_modes() {
        let served = serve(auth.clone(), 1024 * 1024).await;
        for (method, path, body) in routes().into_iter().filter(|r| r.0 == "POST") {
            for ct in content_types {
                let headers = [("content-type", ct.to_string())];
                let (status, answer) = send(&served, method, path, &body, &headers).await;
                assert_eq!(
                    (status, read_wire::<ErrorBody>(&answer).error),
                    (415, ErrorCode::UnsupportedMediaType),
                    "{auth:?} {method} {path} {ct}"
                );
            }
            // A body without any content type is refused as well.
            let (status, _) = send(&served, method, path, &body, &[]).await;
            assert_eq!(status, 415, "{auth:?} {method} {path} without content type");
        }
    }
}

#[tokio::test]
async fn no_cors_headers_are_sent() {
    let served = serve(Auth::LocalDevStrict, 1024 * 1024).await;
    let client = reqwest::Client::new();
    let response = client
        .request(
            reqwest::Method::OPTIONS,
            format!("{}/v1/tools/Shell", served.base),
        )
        .header("origin", "http://attacker.example")
        .header("access-control-request-method", "POST")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    assert!(
        response
            .headers()
            .keys()
            .all(|name| !name.as_str().starts_with("access-control-")),
        "{:?}",
        response.headers()
    );
}

#[tokio::test]
async fn bad_input_answers_with_the_json_error_body() {
    let served = serve(Auth::LocalDevStrict, 1024 * 1024).await;
    let cases = [
        ("PUT", "/v1/session", 405, ErrorCode::MethodNotAllowed),
        ("GET", "/v1/tools/Read", 405, ErrorCode::MethodNotAllowed),
        ("DELETE", "/v1/sessions", 405, ErrorCode::MethodNotAllowed),
        ("GET", "/v1/session/%ff%fe", 400, ErrorCode::InvalidRequest),
        (
            "GET",
            "/v1/session/%ff%fe/events",
            400,
            ErrorCode::InvalidRequest,
        ),
        ("GET", "/v1/nothing-here", 404, ErrorCode::NotFound),
        ("GET", "/v1/session/a/b/c/d", 404, ErrorCode::NotFound),
    ];
    for (method, path, status, code) in cases {
        let (got, body) = send(&served, method, path, &Value::Null, &[]).await;
        let error: ErrorBody = read_wire(&body);
        assert_eq!(
            (got, error.error),
            (status, code),
            "{method} {path}: {body}"
        );
        assert!(!error.message.is_empty(), "{method} {path}: {body}");
    }
}

#[tokio::test]
async fn a_declared_body_over_the_limit_is_refused_at_once_naming_the_limit() {
    let served = serve(Auth::LocalDevStrict, 4096).await;
    for path in ["/v1/session", "/v1/tools/Deploy", "/v1/mcp"] {
        // The body never arrives: only the declared length can answer this request.
        let body = reqwest::Body::wrap_stream(futures::stream::pending::<
            Result<Vec<u8>, std::io::Error>,
        >());
        let request = reqwest::Client::new()
            .post(format!("{}{path}", served.base))
            .header("content-type", "application/json")
            .header("content-length", "5000")
            .body(body)
            .send();
        let response = tokio::time::timeout(Duration::from_secs(60), request)
            .await
            .unwrap_or_else(|_| panic!("{path}: the server waited for the body"))
            .unwrap();
        assert_eq!(response.status(), 413, "{path}");
        let body: ErrorBody = read_wire(&response.json().await.unwrap());
        assert_eq!(body.error, ErrorCode::PayloadTooLarge, "{path}");
        assert!(body.message.contains("(4 KiB)"), "{path}: {body}");
    }
}

#[tokio::test]
async fn mcp_applies_the_body_limit_to_chunked_bodies_too() {
    let served = serve(Auth::LocalDevStrict, 4096).await;
    let big =
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x".repeat(8000)}});
    for path in ["/v1/mcp", "/v1/session"] {
        let chunks = vec![Ok::<_, std::io::Error>(big.to_string().into_bytes())];
        let response = reqwest::Client::new()
            .post(format!("{}{path}", served.base))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 413, "{path}");
    }
}
