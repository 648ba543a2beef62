//! `folio serve` with an MCP connection that cannot start: the server comes up anyway, shows the
//! connection as failed in `GET /v1/agent`, answers calls of its tools with the start error,
//! and retries it in the background until its tools appear.

mod serve_support;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use folio_protocol::{
    ActionResult, AgentDescription, ConnectionDescription, ConnectionInfo, CreateSession,
    EventBody, LogsResponse, TransportInfo, Visibility,
};
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serde_json::{Value, json};
use serve_support::*;

const AGENT: &str = "name = \"mcp agent\"\nmodel = \"openai:gpt-test\"\n";

fn npm_bin(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/test-deps/npm/node_modules/.bin")
        .join(name);
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-test-deps (it installs the pinned MCP test servers into target/test-deps/npm)",
        path.display()
    );
    path
}

/// `GET {url}/v1/agent`.
async fn agent(url: &str) -> AgentDescription {
    expect(Method::GET, &format!("{url}/v1/agent"), NO_BODY, 200).await
}

/// The connection `name` of `GET /v1/agent`.
async fn connection(url: &str, name: &str) -> ConnectionDescription {
    let agent = agent(url).await;
    agent
        .connections
        .into_iter()
        .find(|c| c.connection.name == name)
        .unwrap_or_else(|| panic!("GET /v1/agent lists no connection {name}"))
}

/// The names of the tools `GET /v1/agent` offers.
async fn tool_names(url: &str) -> Vec<String> {
    agent(url).await.tools.into_iter().map(|t| t.name).collect()
}

/// Creates a session and reads its stream to `session.waiting`; returns its `action.result`s
/// with call id and duration blanked.
async fn turn_results(url: &str) -> Vec<ActionResult> {
    let created = create_session(
        url,
        &CreateSession {
            message: "go".into(),
            title: None,
            workspace_files: BTreeMap::new(),
            mode: None,
            client_message_id: None,
        },
    )
    .await;
    let mut stream = Stream::open(url, &created.session_id, 0, None).await;
    stream.until("session.waiting").await;
    stream
        .events
        .iter()
        .filter_map(|event| match &event.body {
            EventBody::ActionResult(result) => Some(ActionResult {
                call_id: String::new(),
                duration_ms: 0,
                ..result.clone()
            }),
            _ => None,
        })
        .collect()
}

/// An `action.result` of `tool` as [`turn_results`] shows it.
fn result(tool: &str, output: Option<Value>, error: Option<&str>) -> ActionResult {
    ActionResult {
        call_id: String::new(),
        tool: tool.to_string(),
        is_error: error.is_some(),
        output,
        error: error.map(str::to_string),
        duration_ms: 0,
    }
}

#[tokio::test]
async fn serve_starts_with_a_connection_that_cannot_start_and_its_tools_answer_the_error() {
    let mock = MockModelServer::start().await;
    let dir = project(AGENT);
    write_files(
        dir.path(),
        &[(
            "agent/mcp-connections/nothing.toml",
            "command = \"/nonexistent/mcp-server\"\n",
        )],
    );
    let state = tempfile::tempdir().unwrap();
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let error = "MCP server \"nothing\" could not start: cannot run /nonexistent/mcp-server: No such file or directory (os error 2)";
    assert_eq!(
        connection(&server.url, "nothing").await,
        ConnectionDescription {
            connection: ConnectionInfo {
                name: "nothing".into(),
                description: None,
                transport: TransportInfo::Stdio {
                    command: "/nonexistent/mcp-server".into(),
                    args: Vec::new(),
                    env: BTreeMap::new(),
                },
                env_vars: Vec::new(),
            },
            visible_to: Visibility::Model,
            error: Some(error.to_string()),
        }
    );
    // A model that calls one of its tools (say, from an earlier conversation) gets the start
    // error as the tool's error, and the turn goes on to its reply.
    mock.push(MockReply::tool_calls([(
        "mcp__nothing__lookup",
        json!({"q": "x"}),
    )]));
    mock.push(MockReply::text("the lookup server is down"));
    assert_eq!(
        turn_results(&server.url).await,
        vec![result("mcp__nothing__lookup", None, Some(error))]
    );
    // The server log says so too.
    let logs: LogsResponse = expect(
        Method::GET,
        &format!("{}/v1/logs", server.url),
        NO_BODY,
        200,
    )
    .await;
    let logged = format!("{error}; retrying it in the background");
    assert!(
        logs.lines.iter().any(|line| line.message == logged),
        "{:?}",
        logs.lines
    );
}

#[tokio::test]
async fn a_connection_that_starts_failing_offers_its_tools_once_a_retry_starts_it() {
    let everything = npm_bin("mcp-server-everything");
    let mock = MockModelServer::start().await;
    let dir = project(AGENT);
    let marker = dir.path().join("server-may-start");
    let script = dir.path().join("late-server.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nif [ ! -f '{}' ]; then echo 'the marker file is missing' >&2; exit 1; fi\nexec '{}' stdio\n",
            marker.display(),
            everything.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    write_files(
        dir.path(),
        &[(
            "agent/mcp-connections/late.toml",
            &format!("command = \"{}\"\n", script.display()),
        )],
    );
    let state = tempfile::tempdir().unwrap();
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let failed = connection(&server.url, "late").await;
    let error = failed.error.unwrap_or_default();
    assert!(
        error.starts_with("MCP server \"late\" could not start: "),
        "{error}"
    );
    assert!(
        !tool_names(&server.url)
            .await
            .iter()
            .any(|name| name.starts_with("mcp__late__")),
    );

    std::fs::write(&marker, "").unwrap();
    let started = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            if connection(&server.url, "late").await.error.is_none() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    assert!(
        started.is_ok(),
        "the connection was not retried within 60 s"
    );
    assert!(
        tool_names(&server.url)
            .await
            .contains(&"mcp__late__echo".to_string())
    );
    // The next turn calls it.
    mock.push(MockReply::tool_calls([(
        "mcp__late__echo",
        json!({"message": "hi"}),
    )]));
    mock.push(MockReply::text("echoed"));
    assert_eq!(
        turn_results(&server.url).await,
        vec![result("mcp__late__echo", Some(json!("Echo: hi")), None)]
    );
}
