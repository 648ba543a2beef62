//! `examples/demo`: the README's main-job command replays a recorded session with no network
//! and no key; `record_demo_fixture` (ignored) re-records that fixture against the mock model
//! server: `cargo test -p folio-cli --test demo -- --ignored record_demo_fixture`.
//!
//! Both need the MCP reference server that `scripts/install-test-deps` installs under
//! `target/test-deps` (the demo's `mcp-connections/everything.toml` runs it from there).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{folio_bin, result_of};
use folio_protocol::Usage;
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::json;

/// The message of the README's main-job command.
const MESSAGE: &str = "Write a haiku about the sea, then tell me what 17 + 25 is.";
/// The demo's final reply, as recorded.
const REPLY: &str = "Grey waves fold and break\nsalt wind combs the sleeping dunes\nthe tide keeps its time\n\n(16 words, 3 lines) Critic: \"The closing line lands; keep it.\" And 17 + 25 = 42.";

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .to_path_buf()
}

/// Usage a scripted reply reports.
fn usage(input_tokens: u64, output_tokens: u64) -> Usage {
    Usage {
        input_tokens,
        output_tokens,
        ..Usage::default()
    }
}

fn require_mcp_server(root: &Path) {
    let server = root.join(
        "target/test-deps/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    assert!(
        server.is_file(),
        "{} is missing: run scripts/install-test-deps first",
        server.display()
    );
}

#[test]
fn readme_main_job_replays_the_demo_without_network_or_key() {
    let root = workspace_root();
    require_mcp_server(&root);
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.contains("```sh\nscripts/demo\n```"),
        "the README's quick start must run the main job with scripts/demo"
    );
    let script = std::fs::read_to_string(root.join("scripts/demo")).unwrap();
    let arguments = format!(
        "run --dir examples/demo --model replay:fixtures/demo.jsonl \\\n  --message \"{MESSAGE}\""
    );
    assert!(
        script.contains(&arguments),
        "scripts/demo must run exactly: {arguments}"
    );
    let state = tempfile::tempdir().unwrap();
    // Exactly the arguments of scripts/demo (from the workspace root), with no key and no network
    // settings; only the state root moves to a temporary folder.
    let output = Command::new(folio_bin())
        .current_dir(&root)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .args([
            "run",
            "--dir",
            "examples/demo",
            "--model",
            "replay:fixtures/demo.jsonl",
            "--message",
            MESSAGE,
            "--json",
            "--state-root",
        ])
        .arg(state.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "stderr:\n{stderr}");
    let result = result_of(&output);
    assert_eq!(result.reply, REPLY);
    // The root agent's five model calls (the critic's is the subagent's own).
    assert_eq!(
        result.usage,
        Some(Usage {
            input_tokens: 7606,
            output_tokens: 193,
            ..Usage::default()
        })
    );
    let tools: Vec<(String, bool)> = result
        .tool_calls
        .iter()
        .map(|call| (call.tool.clone(), call.is_error))
        .collect();
    assert_eq!(
        tools,
        [
            ("Read".to_string(), false),
            ("word_stats".to_string(), false),
            ("Task".to_string(), false),
            ("mcp__everything__get-sum".to_string(), false),
        ]
    );
    let calls = &result.tool_calls;
    assert_eq!(
        calls[1].output,
        json!({"words": 16, "lines": 3, "characters": 84})
    );
    assert_eq!(calls[2].output, "The closing line lands; keep it.");
    assert!(
        calls[3].output.to_string().contains("42"),
        "{}",
        calls[3].output
    );
}

/// Re-records `examples/demo/fixtures/demo.jsonl`: scripts the mock model, runs the demo with
/// `--record`, and checks the recorded session. Each reply reports token usage, as a real
/// provider does, so the replayed demo shows real-looking figures.
#[tokio::test]
#[ignore = "re-records the demo fixture; run explicitly"]
async fn record_demo_fixture() {
    let root = workspace_root();
    require_mcp_server(&root);
    let haiku =
        "Grey waves fold and break\nsalt wind combs the sleeping dunes\nthe tide keeps its time";
    let mock = MockModelServer::start().await;
    mock.push(
        MockReply::tool_calls([("Read", json!({"path": ".folio/skills/haiku/SKILL.md"}))])
            .with_usage(usage(1187, 24)),
    );
    mock.push(
        MockReply::tool_calls([("word_stats", json!({"text": haiku}))]).with_usage(usage(1402, 41)),
    );
    mock.push(MockReply::tool_calls([(
        "Task",
        json!({"subagent": "critic", "prompt": format!("Give a one-sentence opinion of this haiku:\n{haiku}")}),
    )]).with_usage(usage(1539, 52)));
    // The critic subagent's own model call.
    mock.push(MockReply::text("The closing line lands; keep it.").with_usage(usage(212, 11)));
    mock.push(
        MockReply::tool_calls([("mcp__everything__get-sum", json!({"a": 17, "b": 25}))])
            .with_usage(usage(1688, 29)),
    );
    mock.push(MockReply::text(REPLY).with_usage(usage(1790, 47)));
    let state = tempfile::tempdir().unwrap();
    let fixture = root.join("examples/demo/fixtures/demo.jsonl");
    let output = tokio::process::Command::new(folio_bin())
        .current_dir(&root)
        .env_remove("FOLIO_MODEL")
        .env("OPENAI_API_KEY", "test-key")
        .env("OPENAI_BASE_URL", mock.openai_base_url())
        .args([
            "run",
            "--dir",
            "examples/demo",
            "--json",
            "--message",
            MESSAGE,
            "--record",
        ])
        .arg(&fixture)
        .arg("--state-root")
        .arg(state.path())
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "stderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(result_of(&output).reply, REPLY);
    assert_eq!(mock.remaining(), 0, "every scripted reply was used");
    let recorded = std::fs::read_to_string(&fixture).unwrap();
    assert_eq!(recorded.lines().count(), 6, "six model calls recorded");
}

/// On a terminal the reply streams to stderr; when stdout is that same terminal it is not
/// printed a second time (`script` gives the run one pseudo-terminal for both).
#[test]
fn on_one_terminal_the_reply_is_shown_once() {
    let root = workspace_root();
    require_mcp_server(&root);
    let state = tempfile::tempdir().unwrap();
    let command = format!(
        "'{}' run --dir examples/demo --model replay:fixtures/demo.jsonl --message '{MESSAGE}' --state-root '{}'",
        folio_bin().display(),
        state.path().display()
    );
    let output = Command::new("script")
        .current_dir(&root)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .output()
        .unwrap();
    let screen = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "screen:\n{screen}");
    assert_eq!(
        screen.matches("And 17 + 25 = 42.").count(),
        1,
        "screen:\n{screen}"
    );
}
