//! Every `folio init` template ships evals whose replay fixtures run keyless and offline;
//! `record_template_fixtures` (ignored) re-records them against the mock model server:
//! `cargo test -p folio-cli --test eval_templates -- --ignored record_template_fixtures`.

mod eval_support;

use std::path::{Path, PathBuf};

use eval_support::*;
use folio_test_support::{MockModelServer, MockReply};
use serde_json::json;

/// Each template with evals: its name, its fixture (under `evals/`) and the scripted model
/// replies the fixture records.
fn templates() -> Vec<(&'static str, &'static str, Vec<MockReply>)> {
    vec![
        (
            "triage",
            "fixtures/triage/crash.jsonl",
            vec![
                MockReply::tool_calls([(
                    "Read",
                    json!({"path": ".folio/skills/triage-rules/SKILL.md"}),
                )]),
                MockReply::tool_calls([(
                    "label_issue",
                    json!({"issue": 12, "label": "bug", "reason": "Uploading an empty file crashes the app."}),
                )]),
                MockReply::text(
                    "#12: bug (the label waits for approval): empty uploads crash the app.",
                ),
            ],
        ),
        (
            "pr-reviewer",
            "fixtures/review/small-diff.jsonl",
            vec![
                MockReply::tool_calls([("Read", json!({"path": "pr/diff.patch"}))]),
                MockReply::tool_calls([(
                    "pr_stats",
                    json!({"diff": "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1 +1 @@\n-fn add(a: i32, b: i32) -> i32 { a - b }\n+fn add(a: i32, b: i32) -> i32 { a + b }\n"}),
                )]),
                MockReply::text("One file, +1/-1: `add` now adds. Approve."),
            ],
        ),
        (
            "webhook",
            "fixtures/support/blank-invoices.jsonl",
            vec![
                MockReply::tool_calls([(
                    "Read",
                    json!({"path": ".folio/skills/support-tone/SKILL.md"}),
                )]),
                MockReply::text(
                    "Sorry your invoices page is blank. Please reload once; if it stays blank, reply with your account email and we will look at it today.",
                ),
            ],
        ),
    ]
}

fn templates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/templates")
}

/// Scaffolds `template` into a new folder under `parent`.
fn init(parent: &Path, template: &str) -> PathBuf {
    let dir = parent.join(template);
    let output = std::process::Command::new(folio_bin())
        .args(["init", "--template", template])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", texts(&output));
    dir
}

#[test]
fn every_template_eval_passes_offline_from_its_fixture() {
    let parent = tempfile::tempdir().unwrap();
    for (template, _, _) in templates() {
        let dir = init(parent.path(), template);
        let output = std::process::Command::new(folio_bin())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .args(["eval", "--dir"])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(output.status.success(), "{template}: {}", texts(&output));
    }
}

#[tokio::test]
#[ignore = "re-records the templates' eval fixtures into the source tree"]
async fn record_template_fixtures() {
    let parent = tempfile::tempdir().unwrap();
    for (template, fixture, replies) in templates() {
        let mock = MockModelServer::start().await;
        for reply in replies {
            mock.push(reply);
        }
        let dir = init(parent.path(), template);
        let output = eval(
            &mock.openai_base_url(),
            &dir,
            &["--record", "--model", "openai:gpt-4.1-mini"],
        )
        .await;
        assert!(output.status.success(), "{template}: {}", texts(&output));
        let source = templates_dir().join(template).join("evals").join(fixture);
        std::fs::copy(dir.join("evals").join(fixture), source).unwrap();
    }
}
