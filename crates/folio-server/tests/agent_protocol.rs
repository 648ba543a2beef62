//! The Agent Protocol routes (LangGraph clients) against the real `langgraph-sdk` from PyPI:
//! the router on a loopback port, the engine answering through the mock model, and
//! `tests/agent_protocol/driver.py` run with the test venv's Python
//! (`scripts/install-test-deps`). Without the venv the test is skipped, saying so, unless
//! `FOLIO_TEST_DEPS_REQUIRED=1`, where it fails.

mod support;

use std::path::PathBuf;
use std::time::Duration;

use folio_test_support::{MockModelServer, MockReply};
use serde_json::json;
use support::*;

/// The test venv's Python with langgraph-sdk, or why it is missing.
fn python() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = root.join("target/test-deps/venv/bin/python");
    let why = if !python.exists() {
        format!(
            "missing {} (run scripts/install-test-deps)",
            python.display()
        )
    } else {
        let found = std::process::Command::new(&python)
            .args(["-c", "import langgraph_sdk"])
            .output()
            .is_ok_and(|out| out.status.success());
        if found {
            return Some(python);
        }
        format!(
            "{} lacks langgraph-sdk (run scripts/install-test-deps)",
            python.display()
        )
    };
    assert!(
        std::env::var("FOLIO_TEST_DEPS_REQUIRED").as_deref() != Ok("1"),
        "langgraph-sdk is required here: {why}"
    );
    eprintln!("skipping: {why}");
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn langgraph_sdk_drives_assistants_threads_runs_interrupts_and_double_texts() {
    let Some(python) = python() else { return };
    let mock = MockModelServer::start().await;
    // In the order the driver's steps call the model.
    mock.push(MockReply::text("hello from folio"));
    mock.push(MockReply::text("second answer"));
    mock.push(MockReply::tool_calls([(
        "Deploy",
        json!({"target": "prod"}),
    )]));
    mock.push(MockReply::text("deployed it"));
    mock.push(MockReply::text("slow reply").first_byte_delay(Duration::from_millis(1500)));
    mock.push(MockReply::text("queued reply"));
    mock.push(
        MockReply::text("one two three four five six seven eight")
            .first_byte_delay(Duration::from_millis(300))
            .chunk_delay(Duration::from_millis(150)),
    );
    mock.push(MockReply::text("stateless answer"));
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent(&mock, dir.path()).await, state.path()).await;
    let url = http(manager.clone()).await;

    let driver = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agent_protocol/driver.py");
    let output = tokio::process::Command::new(&python)
        .arg(&driver)
        .arg(&url)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the langgraph-sdk driver failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    for step in [
        "assistants",
        "threads",
        "stream",
        "wait",
        "interrupt",
        "double-text",
        "join_stream",
        "stateless",
    ] {
        assert!(
            stdout.contains(&format!("ok {step}\n")),
            "step {step} did not run: {stdout}"
        );
    }
}
