//! `folio run` with an MCP connection: the model calls the server's tools, and the server does
//! not outlive the process.

mod common;

use std::path::Path;

use common::{project, result_of, run_json, tool_outputs, write_files};
use folio_test_support::{MockModelServer, MockReply};
use serde_json::json;

fn npm_bin(name: &str) -> std::path::PathBuf {
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

/// Processes whose environment carries `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let environ = entry.path().join("environ");
        if let Ok(bytes) = std::fs::read(&environ)
            && String::from_utf8_lossy(&bytes).contains(marker)
        {
            found.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    found
}

#[tokio::test]
async fn run_calls_mcp_tools_and_stops_the_server_on_exit() {
    let mock = MockModelServer::start().await;
    let dir = project("model = \"openai:gpt-test\"\n");
    let marker = format!("folio-mcp-run-{}", std::process::id());
    write_files(
        dir.path(),
        &[(
            "agent/mcp-connections/everything.toml",
            &format!(
                "command = \"{}\"\nargs = [\"stdio\"]\nenv = {{ FOLIO_TEST_MARKER = \"{marker}\" }}\n",
                npm_bin("mcp-server-everything").display()
            ),
        )],
    );
    mock.push(MockReply::tool_calls([
        ("mcp__everything__echo", json!({"message": "hi"})),
        ("mcp__everything__get-sum", json!({"a": 1, "b": 2})),
    ]));
    mock.push(MockReply::text("done"));
    let output = run_json(&mock.openai_base_url(), dir.path(), "call the tools").await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result = result_of(&output);
    let outputs = tool_outputs(&result);
    assert_eq!(
        outputs[0],
        (
            "mcp__everything__echo".to_string(),
            false,
            json!("Echo: hi")
        )
    );
    assert_eq!(outputs[1].0, "mcp__everything__get-sum");
    assert!(!outputs[1].1);
    // The server was killed when `folio run` ended: nothing with its marker is left.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !processes_with(&marker).is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(processes_with(&marker), Vec::<String>::new());
}
