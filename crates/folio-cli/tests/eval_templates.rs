//! Every `folio init` template ships evals whose replay fixtures run keyless and offline;
//! `record_template_fixtures` (ignored) re-records them against the mock model server:
//! `cargo test -p folio-cli --test eval_templates -- --ignored record_template_fixtures`.

mod eval_support;

use std::path::{Path, PathBuf};

use eval_support::*;
use folio_test_support::{MockModelServer, MockReply};
use serde_json::json;

/// Each template with evals (every one `folio init --list` names but `demo`): its name, its fixture (under `evals/`) and the scripted model
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
            "code-wiki",
            "fixtures/wiki/billing-page.jsonl",
            vec![
                MockReply::tool_calls([(
                    "Read",
                    json!({"path": ".folio/skills/wiki-page/SKILL.md"}),
                )]),
                MockReply::tool_calls([("code_outline", json!({"path": "repo/src/billing.py"}))]),
                MockReply::tool_calls([("Read", json!({"path": "repo/src/billing.py"}))]),
                MockReply::tool_calls([(
                    "Write",
                    json!({"path": "memory/wiki/billing.md", "contents": "# billing\n\nInvoices and their totals, tax included.\n\n## Definitions\n\n- `TAX_RATE` (`repo/src/billing.py:3`): the tax added to every total, 20%.\n- `Invoice` (`repo/src/billing.py:6`): holds the invoice's `(price, qty)` lines.\n- `calculate_total` (`repo/src/billing.py:11`): the sum of price × quantity plus tax, rounded to cents.\n\n## How it fits\n\nSelf-contained: no imports.\n\nSource: `repo/src/billing.py`\n"}),
                )]),
                MockReply::tool_calls([(
                    "Write",
                    json!({"path": "memory/wiki/index.md", "contents": "# Code wiki\n\n- [billing](billing.md): invoices and their totals, tax included.\n"}),
                )]),
                MockReply::text(
                    "Wrote memory/wiki/billing.md (TAX_RATE, Invoice, calculate_total) and added it to memory/wiki/index.md.",
                ),
            ],
        ),
        (
            "security-reviewer",
            "fixtures/review/leaked-key.jsonl",
            vec![
                MockReply::tool_calls([("security_scan", json!({"path": "pr/diff.patch"}))]),
                MockReply::tool_calls([(
                    "Read",
                    json!({"path": ".folio/skills/security-checklist/SKILL.md"}),
                )]),
                MockReply::text(
                    "request changes\n\n- high app/config.py:2: an AWS access key is committed — remove it, load it from the environment, and rotate the key now.\n- high app/export.py:11: `shell=True` with the file name in the command — pass an argument list: `subprocess.run([\"gzip\", path])`.\n- high app/export.py:12: SQL built with `%` from `name` — use a parameterized query.",
                ),
            ],
        ),
        (
            "security-help",
            "fixtures/help/token-storage.jsonl",
            vec![
                MockReply::tool_calls([(
                    "Read",
                    json!({"path": ".folio/skills/security-policy/SKILL.md"}),
                )]),
                MockReply::tool_calls([(
                    "Read",
                    json!({"path": ".folio/skills/security-policy/references/policy.md"}),
                )]),
                MockReply::text(
                    "No. Rule SEC-3: session tokens go in HttpOnly, Secure, SameSite=Lax cookies, never in localStorage, where any script on the page can read them. Next step: have the dashboard's login response set the cookie and drop the token from the JSON body.",
                ),
            ],
        ),
        (
            "agentic-owners",
            "fixtures/owners/edited-migration.jsonl",
            vec![
                MockReply::tool_calls([("owners_for", json!({}))]),
                MockReply::tool_calls([(
                    "Read",
                    json!({"path": ".folio/skills/ownership/SKILL.md"}),
                )]),
                MockReply::tool_calls([(
                    "Read",
                    json!({"path": ".folio/skills/ownership/references/areas.md"}),
                )]),
                MockReply::tool_calls([(
                    "request_reviewers",
                    json!({"owners": ["@dana", "@acme/data"], "reason": "db/migrations/0007_orders.sql edits an existing migration and adds a NOT NULL column without a default"}),
                )]),
                MockReply::text(
                    "- @dana @acme/data: db/migrations/0007_orders.sql:2 edits an existing migration (add a new one) and adds `total` NOT NULL without a default; review requested (waiting for approval).\n- @acme/writers: docs/orders.md ok, no review needed.",
                ),
            ],
        ),
        (
            "pr-autofixer",
            "fixtures/autofix/failing-test.jsonl",
            vec![
                MockReply::tool_calls([(
                    "Read",
                    json!({"path": ".folio/skills/autofix-rules/SKILL.md"}),
                )]),
                MockReply::tool_calls([(
                    "Shell",
                    json!({"command": "cd repo && python3 -B test_calc.py"}),
                )]),
                MockReply::tool_calls([(
                    "StrReplace",
                    json!({"path": "repo/calc.py", "oldText": "def add(a, b):\n    return a - b", "newText": "def add(a, b):\n    return a + b"}),
                )]),
                MockReply::tool_calls([(
                    "Shell",
                    json!({"command": "cd repo && python3 -B test_calc.py"}),
                )]),
                MockReply::tool_calls([(
                    "push_fix",
                    json!({"message": "Fix add: return the sum, not the difference"}),
                )]),
                MockReply::text(
                    "CI failed because add(2, 3) returned -1. Fixed repo/calc.py:2 (`a - b` → `a + b`); `python3 -B test_calc.py` now passes 2 of 2 checks. The push is waiting for approval.",
                ),
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
    let scripted: Vec<&str> = templates().iter().map(|(name, _, _)| *name).collect();
    let parent = tempfile::tempdir().unwrap();
    for template in init_templates() {
        // demo's evals live in examples/demo (tests/eval_demo.rs): they need the MCP server.
        if template == "demo" {
            continue;
        }
        assert!(
            scripted.contains(&template.as_str()),
            "{template}: add its scripted replies to templates() and record its fixture"
        );
        let dir = init(parent.path(), &template);
        let output = std::process::Command::new(folio_bin())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .args(["eval", "--json", "--dir"])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(output.status.success(), "{template}: {}", texts(&output));
        let run = run_of(&output);
        assert!(
            run.ok && !run.cases.is_empty() && run.cases.iter().all(|case| case.ok),
            "{template}: {}",
            texts(&output)
        );
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
