//! `folio serve` with an MCP connection that cannot start: the server comes up anyway, shows the
//! connection as failed in `GET /v1/agent`, answers calls of its tools with the start error,
//! and retries it in the background until its tools appear.

mod serve_support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use folio_protocol::{
    ActionResult, AgentDescription, ConnectionDescription, ConnectionInfo, CreateSession,
    LogsResponse, TransportInfo, Visibility,
};
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serde_json::json;
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

/// `GET /v1/agent`.
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
        .unwrap_or_else(|| panic!("no connection {name} in GET /v1/agent"))
}

/// The names of the tools `GET /v1/agent` offers.
async fn tool_names(url: &str) -> Vec<String> {
    agent(url).await.tools.into_iter().map(|t| t.name).collect()
}

/// Creates a session and reads its stream to `session.waiting`; returns its `action.result`
/// data with the durations zeroed.
async fn turn_results(url: &str) -> Vec<ActionResult> {
    let created = create_session(url, &CreateSession::message("go")).await;
    let mut stream = Stream::open(url, &created.session_id, 0, None).await;
    stream.until("session.waiting").await;
    all::<ActionResult>(&stream.events)
        .into_iter()
        .map(|result| ActionResult {
            duration_ms: 0,
            ..result.clone()
        })
        .collect()
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
                    args: vec![],
                    env: Default::default(),
                },
                env_vars: vec![],
            },
            visible_to: Visibility::Model,
            error: Some(error.into()),
        }
    );
    // A model that calls one of its tools (say, from an earlier conversation) gets the start
    // error as the tool's error, and the turn goes on to its reply.
    mock.push(MockReply::tool_calls([(
        "mcp__nothing__lookup",
        json!({"q": "x"}),
    )]));
    mock.push(MockReply::text("the lookup server is down"));
    let results = turn_results(&server.url).await;
    assert_eq!(
        results,
        vec![ActionResult {
            call_id: results[0].call_id.clone(),
            tool: "mcp__nothing__lookup".into(),
            output: None,
            error: Some(error.into()),
            is_error: true,
            duration_ms: 0,
        }]
    );
    // The server log says so too.
    let logs: LogsResponse = expect(
        Method::GET,
        &format!("{}/v1/logs", server.url),
        NO_BODY,
        200,
    )
    .await;
    let wanted = format!("{error}; retrying it in the background");
    let logged = logs.lines.iter().any(|line| line.message == wanted);
    assert!(logged, "no log line {wanted:?} in {:#?}", logs.lines);
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
    let error = failed.error.clone().unwrap_or_default();
    assert!(
        error.starts_with("MCP server \"late\" could not start: "),
        "{failed:?}"
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
    let results = turn_results(&server.url).await;
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(!results[0].is_error, "{results:?}");
    assert_eq!(results[0].tool, "mcp__late__echo");
}
