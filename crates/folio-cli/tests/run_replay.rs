//! Record and replay through `folio run`, the step limit, and a missing credential.

mod common;

use common::*;
use folio_test_support::{MockModelServer, MockReply};
use serde_json::json;

const AGENT: &str = "model = \"openai:gpt-test\"\n[root]\n\"/notes\" = { temp = { \"/a.md\" = \"remember the milk\\n\" } }\n";

#[tokio::test]
async fn a_recorded_session_replays_offline_and_a_changed_request_fails_with_a_diff() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([(
        "Read",
        json!({"path": "/notes/a.md"}),
    )]));
    mock.push(MockReply::text("You must remember the milk."));
    let dir = project(AGENT);
    let fixture = dir.path().join("fixture.jsonl");
    let recorded = folio(&mock.openai_base_url())
        .args([
            "run",
            "--json",
            "--message",
            "What must I remember?",
            "--record",
        ])
        .arg(&fixture)
        .arg("--dir")
        .arg(dir.path())
        .output()
        .await
        .unwrap();
    assert!(
        recorded.status.success(),
        "{}",
        String::from_utf8_lossy(&recorded.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&fixture).unwrap().lines().count(),
        2
    );

    // No server, no key: the fixture answers.
    let replayed = tokio::process::Command::new(folio_bin())
        .env_remove("OPENAI_API_KEY")
        .env_remove("FOLIO_MODEL")
        .args([
            "run",
            "--json",
            "--message",
            "What must I remember?",
            "--model",
        ])
        .arg(format!("replay:{}", fixture.display()))
        .arg("--dir")
        .arg(dir.path())
        .output()
        .await
        .unwrap();
    assert!(
        replayed.status.success(),
        "{}",
        String::from_utf8_lossy(&replayed.stderr)
    );
    let (a, b) = (result_of(&recorded), result_of(&replayed));
    assert_eq!(a.reply, b.reply);
    assert_eq!(a.tool_calls[0].output, b.tool_calls[0].output);
    assert_eq!(mock.requests().len(), 2);

    let changed = tokio::process::Command::new(folio_bin())
        .args(["run", "--json", "--message", "Something else?", "--model"])
        .arg(format!("replay:{}", fixture.display()))
        .arg("--dir")
        .arg(dir.path())
        .output()
        .await
        .unwrap();
    assert_eq!(changed.status.code(), Some(1));
    let result = result_of(&changed);
    let error = result.error.unwrap();
    assert!(
        error.contains("What must I remember?") && error.contains("Something else?"),
        "{error}"
    );
}

#[tokio::test]
async fn the_step_limit_fails_a_runaway_turn() {
    let mock = MockModelServer::start().await;
    for _ in 0..3 {
        mock.push(MockReply::tool_calls([("LS", json!({}))]));
    }
    let dir = project(&format!("max_steps = 2\n{AGENT}"));
    let output = run_json(&mock.openai_base_url(), dir.path(), "loop").await;
    assert_eq!(output.status.code(), Some(1));
    let result = result_of(&output);
    assert!(!result.ok);
    assert_eq!(
        result.error.as_deref(),
        Some(
            "step limit reached: the turn made 2 model calls without finishing (raise max_steps in agent.toml)"
        )
    );
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test]
async fn a_missing_key_fails_the_turn_at_once_naming_the_variable() {
    let dir = project(AGENT);
    let output = tokio::process::Command::new(folio_bin())
        .env_remove("OPENAI_API_KEY")
        .env_remove("FOLIO_MODEL")
        .args(["run", "--json", "--message", "hi", "--dir"])
        .arg(dir.path())
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let message =
        "OPENAI_API_KEY is not set: export it or set api_key_env in agent.toml [provider]";
    assert_eq!(result_of(&output).error.as_deref(), Some(message));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("✗ turn failed: {message}")),
        "{stderr}"
    );
}
