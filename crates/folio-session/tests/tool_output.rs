//! Every tool result is bounded: a large MCP text result (a real MCP server's `echo`) is spilled
//! to a scratch file, the model sees its head and where the rest is, and `Read` pages through it.

mod support;

use std::path::Path;

use folio_protocol::{CreateSession, Event, EventBody};
use folio_test_support::{MockModelServer, MockReply};
use serde_json::{Value, json};
use support::*;

fn npm_bin(name: &str) -> std::path::PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/test-deps/npm/node_modules/.bin")
        .join(name);
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-test-deps",
        path.display()
    );
    path
}

/// The output of the last `action.result` of `tool`.
fn output_of(events: &[Event], tool: &str) -> Value {
    events
        .iter()
        .rev()
        .find_map(|event| match &event.body {
            EventBody::ActionResult(result) if result.tool == tool => result.output.clone(),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result of {tool}"))
}

#[tokio::test]
async fn a_large_mcp_result_spills_and_read_pages_through_it() {
    let mock = MockModelServer::start().await;
    let dir = project("[context]\ntool_output_tokens = 1000\n");
    std::fs::create_dir_all(dir.path().join("agent/mcp-connections")).unwrap();
    std::fs::write(
        dir.path().join("agent/mcp-connections/everything.toml"),
        format!(
            "command = \"{}\"\nargs = [\"stdio\"]\n",
            npm_bin("mcp-server-everything").display()
        ),
    )
    .unwrap();
    let lines: Vec<String> = (0..400)
        .map(|n| format!("line {n:03} of a long echo that no context window wants inline"))
        .collect();
    let message = lines.join("\n");
    mock.push(MockReply::tool_calls([(
        "mcp__everything__echo",
        json!({"message": message}),
    )]));
    mock.push(MockReply::text("it spilled"));
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent(&mock, dir.path()).await, state.path()).await;
    let id = manager
        .sessions()
        .create(
            "local",
            "http",
            CreateSession {
                message: "echo a lot".into(),
                title: None,
                workspace_files: Default::default(),
                mode: None,
                client_message_id: None,
                continuation_key: None,
            },
        )
        .await
        .unwrap()
        .session_id;
    let events = wait_turns(&manager, &id, 1).await;
    let shown = output_of(&events, "mcp__everything__echo");
    let shown = shown.as_str().unwrap();
    assert!(shown.starts_with("Echo: line 000"), "{shown}");
    assert!(
        shown.len() < message.len() / 2,
        "the model sees a head, not everything"
    );
    let path = shown
        .split("the full output is in ")
        .nth(1)
        .and_then(|rest| rest.split(". Read it").next())
        .unwrap_or_else(|| panic!("no spill path in: {shown}"))
        .to_string();
    assert!(path.contains("/agent-tools/"), "{path}");

    // The model reads the rest where the result said it is.
    mock.push(MockReply::tool_calls([(
        "Read",
        json!({"path": path, "offset": 391, "limit": 10}),
    )]));
    mock.push(MockReply::text("read it"));
    manager
        .turns()
        .send("local", &id, "read the end", None)
        .await
        .unwrap();
    let events = wait_turns(&manager, &id, 2).await;
    let read = output_of(&events, "Read");
    let read = read.as_str().unwrap();
    assert!(read.contains("line 399 of a long echo"), "{read}");
    assert!(!read.contains("line 000"), "{read}");
}
