//! Interop: the official Python MCP SDK client (`mcp==2.3.0`, installed by
//! `scripts/install-test-deps`) calls `ask` and `check` on `/v1/mcp`.

mod serve_support;

use std::path::PathBuf;

use folio_protocol::{AskResult, AskStatus, CheckResult};
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serve_support::*;

fn python() -> PathBuf {
    let venv =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/test-deps/venv/bin/python");
    assert!(
        venv.exists(),
        "the Python MCP SDK is missing ({}): run scripts/install-test-deps first",
        venv.display()
    );
    venv
}

#[tokio::test]
async fn python_mcp_sdk_asks_the_agent() {
    let python = python();
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("Hello from Folio over MCP."));
    let dir = project("name = \"mcp agent\"\nmodel = \"openai:gpt-test\"\n");
    let state = tempfile::tempdir().unwrap();
    let server = serve(&mock.openai_base_url(), dir.path(), state.path(), &[]).await;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/interop/mcp_ask.py");
    let output = tokio::process::Command::new(python)
        .arg(script)
        .arg(format!("{}/v1/mcp", server.url))
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "the Python client failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["tools"], serde_json::json!(["ask", "check"]));
    assert_eq!(result["reply"], "Hello from Folio over MCP.");
    assert_eq!(result["isError"], false);
    let session = result["sessionId"].as_str().unwrap();
    assert!(session.starts_with("ses_"));
    assert_eq!(
        result["structured"],
        serde_json::json!({"status": "completed", "sessionId": session, "reply": "Hello from Folio over MCP."})
    );
    let asked: AskResult = read_wire(&result["structured"]);
    assert_eq!(asked.status, AskStatus::Completed);
    let checked: CheckResult = read_wire(&result["check"]);
    assert_eq!(checked.session.session_id, session);
    assert_eq!(
        checked.last_reply.as_deref(),
        Some("Hello from Folio over MCP.")
    );
    // The session is an ordinary chat session of the MCP channel.
    let (_, events) = get(&format!("{}/v1/session/{session}", server.url)).await;
    assert_eq!(events["session"]["mode"], "chat");
    assert_eq!(mock.requests().len(), 1);
}
