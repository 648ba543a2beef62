//! MCP connections against real servers from npm (`scripts/install-test-deps` installs them):
//! `@modelcontextprotocol/server-everything` over stdio and streamable HTTP, and
//! `@modelcontextprotocol/server-filesystem` over stdio.

mod part_b;

use std::sync::Arc;
use std::time::Duration;

use folio_agent::mcp::{McpConnection, McpError, McpTool, McpTransport, StartError};
use folio_agent::tools::{Tool, ToolOutput};
use folio_agent::{Severity, TurnOutcome, discover};
use folio_project::McpServerConfig;
use folio_test_support::{MockModelServer, MockReply};
use part_b::*;
use pretty_assertions::assert_eq;
use serde_json::json;

fn everything_manifest() -> String {
    format!(
        "description = \"Everything test server\"\ncommand = \"{}\"\nargs = [\"stdio\"]\nenv = {{ API_KEY = \"${{EVERYTHING_KEY}}\" }}\n",
        npm_bin("mcp-server-everything").display()
    )
}

fn stdio_config(name: &str, command: &str, args: &[&str]) -> McpServerConfig {
    McpServerConfig {
        name: name.into(),
        description: None,
        transport: McpTransport::Stdio {
            command: command.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: Default::default(),
        },
        file: std::env::temp_dir().join(format!("{name}.toml")),
        call_timeout: Duration::from_secs(60),
        oauth: None,
    }
}

fn text_of(result: rmcp::model::CallToolResult) -> String {
    match folio_agent::mcp::tool_output(result).unwrap() {
        ToolOutput::Text(text) => text,
        other => panic!("expected text, got {other:?}"),
    }
}

fn args(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    value.as_object().unwrap().clone()
}

#[tokio::test]
async fn stdio_server_lists_and_calls_tools_and_resolves_env_templates() {
    let dir = project(&[(
        "agent/mcp-connections/everything.toml",
        &everything_manifest(),
    )]);
    let definition = discover(dir.path()).definition.unwrap();
    let config = definition.mcp_connections[0].clone();
    assert_eq!(config.template_vars(), ["EVERYTHING_KEY"]);
    let connection = Arc::new(McpConnection::new(
        config,
        dir.path(),
        env_of(&[("EVERYTHING_KEY", "s3cret-from-lookup")]),
    ));
    assert_eq!(
        connection.server_pid().await,
        None,
        "nothing starts before first use"
    );
    let tools = McpTool::all(&connection).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    assert!(names.contains(&"mcp__everything__echo"), "{names:?}");
    assert!(names.contains(&"mcp__everything__get-sum"), "{names:?}");
    let echo = tools
        .iter()
        .find(|t| t.name() == "mcp__everything__echo")
        .unwrap();
    assert_eq!(
        echo.input_schema()["properties"]["message"]["type"],
        "string"
    );

    let echoed = connection
        .call_tool("echo", args(json!({"message": "hello"})))
        .await
        .unwrap();
    assert_eq!(text_of(echoed), "Echo: hello");
    let sum = connection
        .call_tool("get-sum", args(json!({"a": 2, "b": 40})))
        .await
        .unwrap();
    assert!(text_of(sum).contains("42"));
    // `${EVERYTHING_KEY}` was resolved from the lookup, not from the process environment.
    assert!(std::env::var_os("EVERYTHING_KEY").is_none());
    let env = connection
        .call_tool("get-env", Default::default())
        .await
        .unwrap();
    assert!(text_of(env).contains("s3cret-from-lookup"));
    // A server-side error (bad arguments) is a call error, and the server stays up.
    let pid = connection.server_pid().await;
    let bad = connection
        .call_tool("get-sum", args(json!({"a": "x"})))
        .await;
    assert!(bad.is_err() || bad.as_ref().unwrap().is_error == Some(true));
    assert_eq!(connection.server_pid().await, pid);
    connection.shutdown().await;
}

#[tokio::test]
async fn an_unset_template_variable_fails_to_open_and_is_warned_by_discovery() {
    let dir = project(&[(
        "agent/mcp-connections/everything.toml",
        &everything_manifest().replace("EVERYTHING_KEY", "FOLIO_TEST_SURELY_UNSET_VAR"),
    )]);
    let discovery = discover(dir.path());
    let warning = discovery
        .diagnostics
        .iter()
        .find(|d| d.severity == Severity::Warning)
        .expect("a warning for the unset variable");
    assert_eq!(warning.file, "agent/mcp-connections/everything.toml");
    assert!(
        warning
            .message
            .contains("${FOLIO_TEST_SURELY_UNSET_VAR} is not set")
    );
    let config = discovery.definition.unwrap().mcp_connections[0].clone();
    let connection = McpConnection::new(config, dir.path(), env_of(&[]));
    let err = connection.list_tools().await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "MCP server \"everything\" could not start: env API_KEY: ${FOLIO_TEST_SURELY_UNSET_VAR} is not set in the environment"
    );
    // The cause is kept: which setting, and the variable to set.
    let McpError::Start {
        reason: StartError::Template { field, source },
        ..
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(field, "env API_KEY");
    assert_eq!(source.name, "FOLIO_TEST_SURELY_UNSET_VAR");
}

#[tokio::test]
async fn a_crashed_server_is_a_clean_tool_error_then_restarts() {
    let bin = npm_bin("mcp-server-everything");
    let connection = McpConnection::new(
        stdio_config("everything", bin.to_str().unwrap(), &["stdio"]),
        &std::env::temp_dir(),
        env_of(&[]),
    );
    connection.list_tools().await.unwrap();
    let pid = connection.server_pid().await.unwrap();
    unsafe {
        libc::kill(pid as i32, libc::SIGKILL);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let err = connection
        .call_tool("echo", args(json!({"message": "x"})))
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::NotRunning { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.starts_with("MCP server \"everything\" is not running: ")
            && message.ends_with("; it will be restarted on the next call"),
        "{message}"
    );
    let echoed = connection
        .call_tool("echo", args(json!({"message": "again"})))
        .await
        .unwrap();
    assert_eq!(text_of(echoed), "Echo: again");
    let new_pid = connection.server_pid().await.unwrap();
    assert_ne!(new_pid, pid);
    connection.shutdown().await;
    assert!(
        !std::path::Path::new(&format!("/proc/{new_pid}")).exists(),
        "the server process (or its zombie) is still there after shutdown"
    );
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
}

#[tokio::test]
async fn a_server_that_cannot_start_reports_why() {
    let connection = McpConnection::new(
        stdio_config("nothing", "/nonexistent/mcp-server", &[]),
        &std::env::temp_dir(),
        env_of(&[]),
    );
    let err = connection.list_tools().await.unwrap_err();
    let message = err.to_string();
    assert!(
        message.starts_with(
            "MCP server \"nothing\" could not start: cannot run /nonexistent/mcp-server:"
        ),
        "{message}"
    );
    let McpError::Start {
        reason: StartError::Spawn { program, source },
        ..
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(program, "/nonexistent/mcp-server");
    assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
    // `source()` walks from the connection's error to the OS error.
    let cause = std::error::Error::source(&err).expect("the start error");
    assert!(cause.to_string().starts_with("cannot run "), "{cause}");
}

#[tokio::test]
async fn streamable_http_transport_with_templated_headers() {
    let bin = npm_bin("mcp-server-everything");
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut server = tokio::process::Command::new(&bin)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the HTTP server did not start"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let dir = project(&[(
        "agent/mcp-connections/remote.toml",
        &format!(
            "url = \"http://127.0.0.1:{port}/mcp\"\nheaders = {{ Authorization = \"Bearer ${{REMOTE_TOKEN}}\" }}\n"
        ),
    )]);
    let config = discover(dir.path()).definition.unwrap().mcp_connections[0].clone();
    let connection = Arc::new(McpConnection::new(
        config,
        dir.path(),
        env_of(&[("REMOTE_TOKEN", "t0ken")]),
    ));
    let tools = McpTool::all(&connection).await.unwrap();
    assert!(tools.iter().any(|t| t.name() == "mcp__remote__get-sum"));
    let sum = connection
        .call_tool("get-sum", args(json!({"a": 20, "b": 22})))
        .await
        .unwrap();
    assert!(text_of(sum).contains("42"));
    connection.shutdown().await;
    server.kill().await.unwrap();
}

#[tokio::test]
async fn filesystem_server_reads_a_file() {
    let files = tempfile::tempdir().unwrap();
    std::fs::write(files.path().join("notes.txt"), "remember the milk\n").unwrap();
    let root = files.path().canonicalize().unwrap();
    let bin = npm_bin("mcp-server-filesystem");
    let connection = Arc::new(McpConnection::new(
        stdio_config("fs", bin.to_str().unwrap(), &[root.to_str().unwrap()]),
        &std::env::temp_dir(),
        env_of(&[]),
    ));
    let tools = McpTool::all(&connection).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    assert!(names.contains(&"mcp__fs__read_text_file"), "{names:?}");
    let read = connection
        .call_tool(
            "read_text_file",
            args(json!({"path": root.join("notes.txt").to_str().unwrap()})),
        )
        .await
        .unwrap();
    assert_eq!(text_of(read), "remember the milk\n");
    let outside = connection
        .call_tool("read_text_file", args(json!({"path": "/etc/hostname"})))
        .await;
    let refused = match outside {
        Err(err) => err.to_string(),
        Ok(result) => folio_agent::mcp::tool_output(result).unwrap_err().0,
    };
    assert!(
        refused.contains("denied") || refused.contains("outside"),
        "{refused}"
    );
    connection.shutdown().await;
}

#[tokio::test]
async fn a_turn_calls_mcp_tools_survives_a_crash_and_restarts_the_server() {
    let mock = MockModelServer::start().await;
    let dir = project(&[(
        "agent/mcp-connections/everything.toml",
        &everything_manifest(),
    )]);
    let agent = load_agent(
        dir.path(),
        &mock.openai_base_url(),
        env_of(&[("EVERYTHING_KEY", "k")]),
    )
    .await;
    assert!(agent.harness.tools.get("mcp__everything__echo").is_some());
    let sink = MemorySink::default();
    let workspace = dir.path().join("workspace");

    mock.push(MockReply::tool_calls([
        ("mcp__everything__echo", json!({"message": "hi"})),
        ("mcp__everything__get-sum", json!({"a": 2, "b": 3})),
    ]));
    mock.push(MockReply::text("echoed and summed"));
    let outcome = run_turn(&agent, &sink, &workspace, "use the tools").await;
    assert_eq!(
        outcome,
        TurnOutcome::Completed {
            reply: "echoed and summed".into()
        }
    );
    let first = results(&sink.events());
    assert_eq!(
        first[0],
        ("mcp__everything__echo".into(), false, json!("Echo: hi"))
    );
    assert_eq!(first[1].0, "mcp__everything__get-sum");
    assert!(first[1].2.as_str().unwrap().contains('5'));
    // The model saw the MCP tools with the server's schemas.
    let offered = mock.requests()[0].tool_names();
    assert!(
        offered
            .iter()
            .any(|tool| tool == "mcp__everything__get-sum"),
        "{offered:?}"
    );

    // Kill the server mid-session: the next call is a clean tool error, the one after restarts.
    let connection = agent.connections.model["everything"].clone();
    let pid = connection.server_pid().await.unwrap();
    unsafe {
        libc::kill(pid as i32, libc::SIGKILL);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    mock.push(MockReply::tool_calls([(
        "mcp__everything__echo",
        json!({"message": "are you there"}),
    )]));
    mock.push(MockReply::tool_calls([(
        "mcp__everything__echo",
        json!({"message": "retry"}),
    )]));
    mock.push(MockReply::text("recovered"));
    let outcome = run_turn(&agent, &sink, &workspace, "again").await;
    assert_eq!(
        outcome,
        TurnOutcome::Completed {
            reply: "recovered".into()
        }
    );
    let results = results(&sink.events());
    let (tool, is_error, error) = &results[2];
    assert_eq!((tool.as_str(), *is_error), ("mcp__everything__echo", true));
    let error = error.as_str().unwrap();
    assert!(
        error.starts_with("MCP server \"everything\" is not running: ")
            && error.ends_with("it will be restarted on the next call"),
        "{error}"
    );
    assert_eq!(
        results[3],
        ("mcp__everything__echo".into(), false, json!("Echo: retry"))
    );
    // The model got the error as the tool result of its call.
    let third_step = mock.requests()[3].messages();
    assert!(
        third_step
            .iter()
            .any(|message| message.role == "tool" && message.text().contains("is not running")),
        "{third_step:?}"
    );
    let new_pid = connection.server_pid().await.unwrap();
    assert_ne!(pid, new_pid);
    agent.shutdown().await;
    assert!(!std::path::Path::new(&format!("/proc/{new_pid}")).exists());
}

#[tokio::test]
async fn host_connections_are_not_offered_to_the_model() {
    let mock = MockModelServer::start().await;
    let dir = project(&[("agent/host-connections/ops.toml", &everything_manifest())]);
    let agent = load_agent(
        dir.path(),
        &mock.openai_base_url(),
        env_of(&[("EVERYTHING_KEY", "k")]),
    )
    .await;
    assert!(agent.harness.tools.names().all(|n| !n.starts_with("mcp__")));
    let ops = agent.host_connection("ops").expect("host connection");
    assert_eq!(
        ops.server_pid().await,
        None,
        "host connections start on first use"
    );
    let echoed = ops
        .call_tool("echo", args(json!({"message": "from host code"})))
        .await
        .unwrap();
    assert_eq!(text_of(echoed), "Echo: from host code");
    assert!(agent.host_connection("missing").is_none());
    agent.shutdown().await;
}

#[test]
fn connection_manifests_are_checked() {
    let dir = project(&[
        (
            "agent/mcp-connections/both.toml",
            "url = \"http://x\"\ncommand = \"y\"\n",
        ),
        ("agent/mcp-connections/typo.toml", "comand = \"y\"\n"),
        ("agent/mcp-connections/bad__name.toml", "command = \"y\"\n"),
        (
            "agent/host-connections/hdr.toml",
            "command = \"y\"\nheaders = { A = \"b\" }\n",
        ),
    ]);
    let discovery = discover(dir.path());
    let lines: Vec<String> = discovery
        .diagnostics
        .iter()
        .map(|d| d.to_string())
        .collect();
    assert_eq!(
        lines,
        [
            "error: agent/mcp-connections/bad__name.toml: name: \"bad__name\" must match [A-Za-z0-9][A-Za-z0-9_-]* without \"__\" (it becomes mcp__bad__name__<tool>)",
            "error: agent/mcp-connections/both.toml: transport: set exactly one of url (streamable HTTP), command (stdio) or agent (a peer agent; add url for a peer on another server)",
            "error: agent/mcp-connections/typo.toml:1: column 1: unknown key `comand` (did you mean `command`?)",
            "error: agent/host-connections/hdr.toml: headers: only a streamable HTTP connection (url) takes headers",
        ]
    );
}

#[tokio::test]
async fn a_same_server_peer_fails_the_load_outside_serve_and_a_remote_peer_is_offered_its_ask() {
    let mock = MockModelServer::start().await;
    let dir = project(&[(
        "agent/mcp-connections/weather.toml",
        "agent = \"weather-agent\"\n",
    )]);
    let definition = discover(dir.path()).definition.unwrap();
    assert_eq!(
        definition.mcp_connections[0].transport,
        McpTransport::Peer {
            agent: "weather-agent".into(),
            url: None,
            headers: Default::default(),
        }
    );
    let (provider, model) = folio_model::open_provider(
        "openai:gpt-test",
        &folio_model::ProviderConfig {
            base_url: Some(mock.openai_base_url()),
            ..Default::default()
        },
        &|_: &str| Some("test-key".to_string()),
    )
    .unwrap();
    let Err(err) = folio_agent::Agent::load(definition, provider, model).await else {
        panic!("a same-server peer loaded outside folio serve");
    };
    let manifest = dir.path().join("agent/mcp-connections/weather.toml");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: agent = \"weather-agent\" is a peer agent in the same server, and only folio serve mounts peers: serve the folder holding both projects (folio serve --dir <parent>), or add url = \"http://<server>/weather-agent/v1/mcp\" to ask a running server",
            manifest.display()
        )
    );

    // With url, the peer is on another server: its ask is offered without starting anything.
    let dir = project(&[(
        "agent/mcp-connections/weather.toml",
        "agent = \"weather-agent\"\nurl = \"http://127.0.0.1:9/weather-agent/v1/mcp\"\n",
    )]);
    let agent = load_agent(dir.path(), &mock.openai_base_url(), env_of(&[])).await;
    let tool = agent.harness.tools.get("mcp__weather__ask").unwrap();
    assert_eq!(
        tool.input_schema(),
        json!({
            "type": "object",
            "properties": {"message": {"type": "string", "description": "What to ask the peer agent"}},
            "required": ["message"],
            "additionalProperties": false
        })
    );
    assert_eq!(
        tool.prepare(json!({"message": 3})).unwrap_err().0,
        "message must be a string, got a number"
    );
    assert_eq!(
        tool.prepare(json!({"message": "hi", "sessionId": "ses_x"}))
            .unwrap_err()
            .0,
        "unknown argument \"sessionId\"; the only argument is message"
    );
}

#[tokio::test]
async fn mcp_tools_are_granted_by_an_empty_allowlist_and_images_map_to_content_parts() {
    let mock = MockModelServer::start().await;
    let dir = project(&[
        ("agent/agent.toml", "tools = []\n"),
        (
            "agent/mcp-connections/everything.toml",
            &everything_manifest(),
        ),
    ]);
    let agent = load_agent(
        dir.path(),
        &mock.openai_base_url(),
        env_of(&[("EVERYTHING_KEY", "k")]),
    )
    .await;
    let names: Vec<&str> = agent.harness.tools.names().collect();
    assert!(!names.is_empty());
    assert!(
        names.iter().all(|n| n.starts_with("mcp__everything__")),
        "{names:?}"
    );
    let connection = agent.connections.model["everything"].clone();
    let image = connection
        .call_tool("get-tiny-image", Default::default())
        .await
        .unwrap();
    let output = folio_agent::mcp::tool_output(image).unwrap();
    let parts = match output {
        ToolOutput::Json(serde_json::Value::Array(parts)) => parts,
        other => panic!("expected content parts, got {other:?}"),
    };
    let image = parts
        .iter()
        .find(|p| p["type"] == "image")
        .expect("an image part");
    assert_eq!(image["mimeType"], "image/png");
    assert!(!image["data"].as_str().unwrap().is_empty());
    // The conversation shows them to the model as content parts.
    let content = folio_agent::content_of(&serde_json::Value::Array(parts));
    assert!(
        content
            .iter()
            .any(|p| matches!(p, folio_model::ContentPart::Image { .. }))
    );
    agent.shutdown().await;
}
