//! The example evals of `examples/demo` run keyless and offline from the replay fixture, and
//! `folio eval` draws progress bars only on a terminal.
//!
//! The demo needs the MCP reference server that `scripts/install-test-deps` installs under
//! `target/test-deps`.

mod eval_support;

use std::path::{Path, PathBuf};

use eval_support::*;
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::json;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

#[test]
fn the_demo_evals_pass_from_the_replay_fixture_without_network_or_key() {
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
    let output = std::process::Command::new(folio_bin())
        .current_dir(&root)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .args(["eval", "--dir", "examples/demo", "--json", "--state-root"])
        .arg(state.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", texts(&output));
    let run = run_of(&output);
    let cases: Vec<_> = run["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["evalId"].clone(),
                c["caseId"].clone(),
                c["ok"].clone(),
                c["score"].clone(),
            )
        })
        .collect();
    assert_eq!(
        cases,
        [(json!("haiku"), json!("sea"), json!(true), json!(1.0))]
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
