//! Interop: the official Python MCP SDK client (`mcp==2.3.0`, installed by
//! `scripts/install-test-deps`) calls `ask` and `check` on `/v1/mcp`.

mod serve_support;

use std::path::PathBuf;

use folio_protocol::{AskResult, AskStatus, CheckResult, SessionMode};
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde::Deserialize;
use serde_json::Value;
use serve_support::*;

/// What `tests/interop/mcp_ask.py` prints: the Python SDK's view of the calls (`structured` and
/// `check` are Folio's own results, read through their folio-protocol types below).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Interop {
    tools: Vec<String>,
    reply: String,
    is_error: bool,
    session_id: String,
    structured: Value,
    check: Value,
}

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
    let result: Interop = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result.tools, ["ask", "check"]);
    assert_eq!(result.reply, "Hello from Folio over MCP.");
    assert!(!result.is_error, "{result:?}");
    let session_id = result.session_id.as_str();
    assert!(session_id.starts_with("ses_"), "{session_id}");
    let asked: AskResult = read_wire(&result.structured);
    assert_eq!(
        asked,
        AskResult {
            status: AskStatus::Completed,
            session_id: session_id.into(),
            reply: "Hello from Folio over MCP.".into(),
        }
    );
    let checked: CheckResult = read_wire(&result.check);
    assert_eq!(checked.session.session_id, session_id);
    assert_eq!(
        checked.last_reply.as_deref(),
        Some("Hello from Folio over MCP.")
    );
    // The session is an ordinary chat session of the MCP channel.
    assert_eq!(
        session(&server.url, session_id).await.mode,
        SessionMode::Chat
    );
    assert_eq!(mock.requests().len(), 1);
}
