//! The example evals of `examples/demo` run keyless and offline from the replay fixture (the
//! deliberately failing one with its failure report), and `folio eval` draws progress bars only
//! on a terminal.
//!
//! The demo needs the MCP reference server that `scripts/install-test-deps` installs under
//! `target/test-deps`.

mod eval_support;

use std::path::{Path, PathBuf};

use eval_support::*;
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

#[test]
fn the_demo_evals_replay_offline_without_a_key_and_the_failing_one_is_reported() {
    let root = workspace_root();
    let server = root.join(
        "target/test-deps/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    assert!(
        server.is_file(),
        "{} is missing: run scripts/install-test-deps first",
        server.display()
    );
    let state = tempfile::tempdir().unwrap();
    let demo_eval = |args: &[&str]| {
        std::process::Command::new(folio_bin())
            .current_dir(&root)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .args(["eval", "--dir", "examples/demo", "--state-root"])
            .arg(state.path())
            .args(args)
            .output()
            .unwrap()
    };
    // The smoke evals pass.
    let output = demo_eval(&["--json", "--tag", "smoke"]);
    assert!(output.status.success(), "{}", texts(&output));
    let run = run_of(&output);
    let cases: Vec<(&str, &str, bool, f64)> = run
        .cases
        .iter()
        .map(|c| (c.eval_id.as_str(), c.case_id.as_str(), c.ok, c.score))
        .collect();
    assert_eq!(cases, [("haiku", "sea", true, 1.0)]);

    // The deliberately failing eval replays the same recording against expectations it does
    // not meet: the run exits 1 and the report shows each failure with expected vs actual.
    let output = demo_eval(&["--concurrency", "1"]);
    assert_eq!(output.status.code(), Some(1), "{}", texts(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let rows = summary_rows(&stdout, 2);
    assert_eq!(
        rows,
        [
            ["CASE", "RESULT", "SCORE", "PASSED"],
            ["haiku/sea", "pass", "1.00", "1/1"],
            ["known-failure/wrong-sum", "FAIL", "0.29", "0/1"],
        ],
        "{stdout}"
    );
    let failures = failures_section(&stdout);
    let reply = "Grey waves fold and break\\nsalt wind combs the sleeping dunes\\nthe tide keeps its time\\n\\n(16 words, 3 lines) Critic: \\\"The closing line lands; keep it.\\\" And 17 + 25 = 42.";
    assert_eq!(
        failures,
        format!(
            "✗ known-failure/wrong-sum step 1: reply_includes: the reply does not include \"17 + 25 = 43\"\n    expected: \"17 + 25 = 43\"\n    actual:   \"{reply}\"\n\
             ✗ known-failure/wrong-sum step 1: called_tool: mcp__everything__get-sum was called 1 time(s), but no input matched\n    expected: {{\"args\":\"subset\",\"input\":{{\"a\":17,\"b\":26}},\"tool\":\"mcp__everything__get-sum\"}}\n    actual:   {{\"calls\":[{{\"a\":17,\"b\":25}}],\"matching\":0}}\n\
             ✗ known-failure/wrong-sum step 1: not_called_tool: word_stats was called 1 time(s)\n    expected: \"word_stats\"\n    actual:   [\"Read\",\"word_stats\",\"Task\",\"mcp__everything__get-sum\"]\n\
             ✗ known-failure/wrong-sum step 1: trajectory: 3 of 4 expected call(s) matched exact (4 actual): precision 0.75, recall 0.75, F1 0.75\n    expected: {{\"args\":\"subset\",\"calls\":[\"Read\",\"word_stats\",\"Grep\",\"Task\"],\"mode\":\"exact\",\"threshold\":0.9}}\n    actual:   {{\"calls\":[\"Read\",\"word_stats\",\"Task\",\"mcp__everything__get-sum\"],\"f1\":0.75,\"precision\":0.75,\"recall\":0.75}}\n\
             ✗ known-failure/wrong-sum step 1: max_tool_calls: 4 tool call(s), at most 2 allowed\n    expected: 2\n    actual:   4"
        ),
        "{stdout}"
    );
}

#[tokio::test]
async fn progress_bars_show_on_a_terminal_and_not_in_a_pipe() {
    let mock = MockModelServer::start().await;
    let slow = || MockReply::text("done").first_byte_delay(std::time::Duration::from_millis(800));
    mock.push(slow());
    mock.push(slow());
    let dir = eval_project(&[(
        "slow.eval.toml",
        "[[cases]]\nid = \"slow\"\n  [[cases.steps]]\n  send = \"Take your time\"\n  expect = [{ reply_includes = \"done\" }]\n",
    )]);
    // Under a pseudo-terminal (`script`), stderr is a terminal: a bar per running case.
    let command = format!(
        "{} eval --dir {}",
        folio_bin().display(),
        dir.path().display()
    );
    let terminal = tokio::process::Command::new("script")
        .env_remove("FOLIO_MODEL")
        .env("OPENAI_API_KEY", "test-key")
        .env("OPENAI_BASE_URL", mock.openai_base_url())
        .env("TERM", "xterm")
        .args(["-qec", &command, "/dev/null"])
        .output()
        .await
        .unwrap();
    let shown = String::from_utf8_lossy(&terminal.stdout);
    assert!(terminal.status.success(), "{}", texts(&terminal));
    assert!(
        shown.contains("slow/slow [") && shown.contains("step 0/1"),
        "{shown}"
    );
    assert!(shown.contains("✓ slow/slow ("), "{shown}");

    // Piped: plain lines only.
    let piped = eval(&mock.openai_base_url(), dir.path(), &[]).await;
    assert!(piped.status.success(), "{}", texts(&piped));
    let stderr = String::from_utf8_lossy(&piped.stderr);
    assert!(
        !stderr.contains("step 0/1") && !stderr.contains('\u{1b}'),
        "{stderr}"
    );
    assert!(stderr.starts_with("✓ slow/slow ("), "{stderr}");
}
