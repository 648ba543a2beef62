//! The OpenAPI document against the router and outside tools: every route of the table
//! (`folio_protocol::routes`) is served with the auth it declares, the served documents are the
//! committed `docs/openapi.json` with their own `servers`, the document validates as OpenAPI 3.1
//! with `openapi-spec-validator` (PyPI), and a client generated from it by `openapi-typescript`
//! (npm) type-checks with `tsc`.
//!
//! The outside tools come from `scripts/install-test-deps` (project-local under
//! `target/test-deps`); without them those tests say so and pass, except under `scripts/test`
//! (`FOLIO_TEST_DEPS_REQUIRED=1`), where a missing tool fails them.

mod support;

use std::path::{Path, PathBuf};

use folio_protocol::{Access, ErrorBody, Method, Scope, routes};
use folio_server::http::{HttpConfig, Layout, Mount, router};
use folio_test_support::MockModelServer;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use support::*;

const TOKEN: &str = "alice-token";

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn committed() -> Value {
    let text = std::fs::read_to_string(repository().join("docs/openapi.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A server on a loopback port and the folders it uses.
struct Served {
    base: String,
    _dirs: Vec<tempfile::TempDir>,
}

/// Serves agents `a` and `b` (multi layout) or `a` alone (single) behind a token.
async fn serve(mock: &MockModelServer, layout: Layout) -> Served {
    let project = project("");
    let mut mounts = Vec::new();
    let mut dirs = Vec::new();
    let slugs = match layout {
        Layout::Multi => vec!["a", "b"],
        Layout::Single => vec!["a"],
    };
    for slug in slugs {
        let state = tempfile::tempdir().unwrap();
        let sessions = manager(agent(mock, project.path()).await, state.path()).await;
        mounts.push(Mount {
            slug: slug.into(),
            evals: sessions.state().clone(),
            manager: sessions,
            diagnostics: Vec::new(),
        });
        dirs.push(state);
    }
    dirs.push(project);
    let app = router(
        mounts,
        HttpConfig {
            layout,
            auth: folio_auth::Auth::Tokens(vec![("alice".into(), TOKEN.into())]),
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
        .unwrap();
    });
    Served {
        base: format!("http://{addr}"),
        _dirs: dirs,
    }
}

async fn call(url: &str, method: Method, token: Option<&str>) -> (u16, Value) {
    let client = reqwest::Client::new();
    let mut request = match method {
        Method::Get => client.get(url),
        Method::Post => client
            .post(url)
            .header("content-type", "application/json")
            .body("{}"),
        Method::Delete => client.delete(url),
    };
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, body)
}

#[tokio::test]
async fn every_route_of_the_table_is_served_with_the_auth_it_declares() {
    let mock = MockModelServer::start().await;
    for layout in [Layout::Multi, Layout::Single] {
        let served = serve(&mock, layout).await;
        let base = &served.base;
        for route in routes() {
            if route.scope == Scope::Call {
                // Served on the host API socket only (crates/folio-cli/tests/host_api.rs).
                let url = format!("{base}{}", route.path_with("x"));
                let (status, body) = call(&url, route.method, Some(TOKEN)).await;
                assert_eq!(status, 404, "{url} is not served over HTTP: {body}");
                continue;
            }
            let prefix = match (route.scope, layout) {
                (Scope::Agent, Layout::Multi) => "/a",
                _ => "",
            };
            let url = format!("{base}{prefix}{}", route.path_with("x"));
            let what = format!("{layout:?} {} {url}", route.method.as_str());
            let (status, body) = call(&url, route.method, None).await;
            match route.access {
                Access::Caller => assert_eq!(status, 401, "{what} without credentials: {body}"),
                Access::Open => assert_eq!(status, 200, "{what} without credentials: {body}"),
                Access::HostToken => unreachable!("host API routes are skipped above"),
            }
            let (status, body) = call(&url, route.method, Some(TOKEN)).await;
            // The router's own answers for what it does not serve: its fallback and `405`.
            let fallback = status == 405
                || (status == 404
                    && body["message"]
                        .as_str()
                        .is_some_and(|m| m.starts_with("no such route")));
            assert!(!fallback, "{what} is not served: {status} {body}");
            if status >= 400 {
                let error: ErrorBody = serde_json::from_value(body.clone())
                    .unwrap_or_else(|err| panic!("{what}: {body} is not an ErrorBody: {err}"));
                let declared = folio_protocol::error_codes(route);
                assert!(
                    declared
                        .get(&status)
                        .is_some_and(|codes| codes.contains(&error.error)),
                    "{what} answered {status} {}, which the document does not declare",
                    error.error
                );
            }
        }
        // What the table does not hold is not served (the fallback answers).
        let (status, body) = call(&format!("{base}/v1/sessionz"), Method::Get, Some(TOKEN)).await;
        assert_eq!((status, body["error"].clone()), (404, json!("not_found")));
    }
}

#[tokio::test]
async fn served_documents_are_the_committed_one_with_their_servers() {
    let mock = MockModelServer::start().await;
    let multi = serve(&mock, Layout::Multi).await;
    let multi = &multi.base;
    let single = serve(&mock, Layout::Single).await;
    let single = &single.base;
    let cases = [
        (
            format!("{multi}/a/v1/openapi.json"),
            json!([{"url": "/a", "description": "The agent `a`."}]),
        ),
        (
            format!("{multi}/v1/openapi.json"),
            json!([
                {"url": "/a", "description": "The agent `a`."},
                {"url": "/b", "description": "The agent `b`."}
            ]),
        ),
        (
            format!("{single}/v1/openapi.json"),
            json!([{"url": "/", "description": "The agent (single-agent layout)."}]),
        ),
    ];
    for (url, servers) in cases {
        let response = reqwest::get(&url).await.unwrap();
        assert_eq!(response.status(), 200, "{url}");
        assert_eq!(
            response.headers()["content-type"],
            "application/json",
            "{url}"
        );
        let served: Value = response.json().await.unwrap();
        let mut expected = committed();
        expected["servers"] = servers;
        assert_eq!(served, expected, "{url}");
    }
}

/// The project-local test tools, or why they are missing.
struct Tools {
    validator: PathBuf,
    node_modules: PathBuf,
}

fn tools() -> Option<Tools> {
    let deps = repository().join("target/test-deps");
    let tools = Tools {
        validator: deps.join("venv/bin/openapi-spec-validator"),
        node_modules: deps.join("openapi/node_modules"),
    };
    let missing: Vec<String> = [
        tools.validator.clone(),
        tools.node_modules.join("openapi-typescript/bin/cli.js"),
        tools.node_modules.join("typescript/bin/tsc"),
        tools.node_modules.join("openapi-fetch/package.json"),
    ]
    .into_iter()
    .filter(|path| !path.exists())
    .map(|path| path.display().to_string())
    .collect();
    if missing.is_empty() {
        return Some(tools);
    }
    let why = format!(
        "missing {} (run scripts/install-test-deps)",
        missing.join(", ")
    );
    assert!(
        std::env::var_os("FOLIO_TEST_DEPS_REQUIRED").is_none(),
        "the OpenAPI tools are required here: {why}"
    );
    eprintln!("skipping: {why}");
    None
}

fn run(command: &mut std::process::Command) -> (bool, String) {
    let output = command.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

#[tokio::test]
async fn the_documents_validate_as_openapi_3_1_with_openapi_spec_validator() {
    let Some(tools) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModelServer::start().await;
    let server = serve(&mock, Layout::Multi).await;
    let served = reqwest::get(format!("{}/a/v1/openapi.json", server.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    std::fs::write(dir.path().join("served.json"), served).unwrap();
    // A control: the validator does check, e.g. OpenAPI 3.2's `itemSchema` is not 3.1.
    let mut item_schema = committed();
    let stream = &mut item_schema["paths"]["/v1/session/{sessionId}/stream"]["get"]["responses"]["200"]
        ["content"]["application/x-ndjson"];
    let item = stream["x-itemSchema"].take();
    stream.as_object_mut().unwrap().remove("x-itemSchema");
    stream["itemSchema"] = item;
    std::fs::write(
        dir.path().join("item-schema.json"),
        serde_json::to_string(&item_schema).unwrap(),
    )
    .unwrap();
    for file in [
        repository().join("docs/openapi.json"),
        dir.path().join("served.json"),
    ] {
        let (ok, output) = run(std::process::Command::new(&tools.validator).arg(&file));
        assert!(ok, "{}: {output}", file.display());
        assert!(output.contains("OK"), "{output}");
    }
    let (ok, output) =
        run(std::process::Command::new(&tools.validator).arg(dir.path().join("item-schema.json")));
    assert!(!ok, "the validator accepted itemSchema in 3.1: {output}");
}

#[test]
fn a_client_generated_by_openapi_typescript_type_checks() {
    let Some(tools) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/openapi");
    for name in ["client.ts", "tsconfig.json"] {
        std::fs::copy(fixtures.join(name), dir.path().join(name)).unwrap();
    }
    std::os::unix::fs::symlink(&tools.node_modules, dir.path().join("node_modules")).unwrap();
    let (ok, output) = run(std::process::Command::new("node")
        .arg(tools.node_modules.join("openapi-typescript/bin/cli.js"))
        .arg(repository().join("docs/openapi.json"))
        .arg("-o")
        .arg(dir.path().join("folio-api.ts")));
    assert!(ok, "openapi-typescript failed: {output}");
    let generated = std::fs::read_to_string(dir.path().join("folio-api.ts")).unwrap();
    assert!(generated.contains("\"/v1/session/{sessionId}/stream\""));
    let (ok, output) = run(std::process::Command::new("node")
        .arg(tools.node_modules.join("typescript/bin/tsc"))
        .arg("-p")
        .arg(dir.path().join("tsconfig.json")));
    assert!(ok, "tsc found errors in the generated client:\n{output}");
    // A control: a call the document does not allow fails to compile.
    std::fs::write(
        dir.path().join("client.ts"),
        "import createClient from \"openapi-fetch\";\nimport type { paths } from \"./folio-api\";\nexport const created = createClient<paths>().POST(\"/v1/session\", { body: { message: 1 } });\n",
    )
    .unwrap();
    let (ok, output) = run(std::process::Command::new("node")
        .arg(tools.node_modules.join("typescript/bin/tsc"))
        .arg("-p")
        .arg(dir.path().join("tsconfig.json")));
    assert!(!ok, "tsc accepted a number as the message: {output}");
}
