//! The eval runner (what `folio eval` runs) in process with the mock model: every assertion
//! kind passing and failing, trajectory scores and argument modes, with expected vs actual in
//! the run.

mod support;

use std::time::Duration;

use folio_eval::EvalOptions;
use folio_protocol::Usage;
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::json;
use support::*;

const PASSING: &str = r#"
description = "Every assertion kind, passing"
tags = ["kinds"]

[[cases]]
id = "passing"
workspace_files = { "brief.md" = "review the notes" }

  [[cases.steps]]
  send = "Write the notes"
  expect = [
    { succeeded = true },
    { called_tool = "Write", input = { path = "notes.md" } },
    { called_tool = "Write", input = { path = "notes.md", contents = "approved: yes\n" }, args = "exact" },
    { called_tool = "Write", paths = { "$.path" = "notes.md" }, times = 1 },
    { called_tool = "Read", input = { path = "anything" }, args = "ignore" },
    { not_called_tool = "Shell" },
    { reply_includes = "Trivial" },
    { reply_matches = "(?i)approve" },
    { tool_order = ["Write", "Read", "label"], mode = "exact" },
    { trajectory = ["label", { tool = "Read", input = { path = "missing.md" } }], mode = "any_order" },
    { trajectory = ["Write", "Grep", "Read", "LS"], mode = "in_order", threshold = 0.55 },
    { max_tool_calls = 3 },
    { max_tokens = 1000 },
    { max_steps = 2 },
    { max_duration_secs = 60 },
    { file = "notes.md", contains = "approved" },
    { file = "brief.md", equals = "review the notes" },
    { file = "absent.md", exists = false },
    { tool_errored = "Read" },
    { approval_requested = "label" },
  ]
"#;

const FAILING: &str = r#"
description = "Every assertion kind, failing"

[[cases]]
id = "failing"

  [[cases.steps]]
  send = "Do nothing useful"
  expect = [
    { succeeded = false },
    { called_tool = "Write" },
    { called_tool = "Read", input = { path = "y.md" } },
    { not_called_tool = "Read" },
    { reply_includes = "approve" },
    { reply_matches = "^Yes" },
    { tool_order = ["Write", "Read"], mode = "exact" },
    { trajectory = ["Write", "Read", "LS", "Grep"], mode = "any_order", threshold = 0.5 },
    { max_tool_calls = 0 },
    { max_tokens = 1 },
    { max_steps = 1 },
    { max_duration_secs = 0.01 },
    { file = "notes.md", exists = true },
    { tool_errored = "Write" },
    { no_tool_errors = true },
    { approval_requested = "Read" },
  ]
"#;

const LABEL_TOOL: &str = r#"description = "Apply a label to the review."
command = ["python3", "-c", "print('labelled')"]
effect = "write"
needs_approval = true
[input_schema]
type = "object"
properties.label = { type = "string" }
"#;

fn usage() -> Usage {
    Usage {
        input_tokens: 10,
        output_tokens: 5,
        ..Usage::default()
    }
}

#[tokio::test]
async fn every_assertion_kind_passes_and_fails_with_expected_and_actual() {
    let mock = MockModelServer::start().await;
    // The passing case: writes, a failing read, a call that needs approval, then the reply.
    mock.push(
        MockReply::tool_calls([
            (
                "Write",
                json!({"path": "notes.md", "contents": "approved: yes\n"}),
            ),
            ("Read", json!({"path": "missing.md"})),
            ("label", json!({"label": "trivial"})),
        ])
        .with_usage(usage()),
    );
    mock.push(MockReply::text("Trivial change, I approve.").with_usage(usage()));
    // The failing case: one failing read, then a slow reply.
    mock.push(MockReply::tool_calls([("Read", json!({"path": "x.md"}))]).with_usage(usage()));
    mock.push(
        MockReply::text("Nope.")
            .with_usage(usage())
            .first_byte_delay(Duration::from_millis(50)),
    );
    let dir = eval_project(&[
        ("kinds/a.eval.toml", PASSING),
        ("kinds/b.eval.toml", FAILING),
    ]);
    write_files(dir.path(), &[("agent/tools/label.toml", LABEL_TOOL)]);
    let options = EvalOptions {
        max_concurrency: Some(1),
        ..options(&mock.openai_base_url(), dir.path())
    };
    let run = eval(dir.path(), &options).await.unwrap();
    // `folio eval` exits 1 on a run that is not ok.
    assert!(!run.ok, "{run:#?}");
    let cases: Vec<(&str, &str, bool)> = run
        .cases
        .iter()
        .map(|c| (c.eval_id.as_str(), c.case_id.as_str(), c.ok))
        .collect();
    assert_eq!(
        cases,
        [("kinds/a", "passing", true), ("kinds/b", "failing", false)],
        "{run:#?}"
    );
    assert_eq!(
        verdicts(&run, 0, 0),
        expected(&[
            ("succeeded", true),
            ("called_tool", true),
            ("called_tool", true),
            ("called_tool", true),
            ("called_tool", true),
            ("not_called_tool", true),
            ("reply_includes", true),
            ("reply_matches", true),
            ("tool_order", true),
            ("trajectory", true),
            ("trajectory", true),
            ("max_tool_calls", true),
            ("max_tokens", true),
            ("max_steps", true),
            ("max_duration_secs", true),
            ("file", true),
            ("file", true),
            ("file", true),
            ("tool_errored", true),
            ("approval_requested", true),
        ]),
        "{run:#?}"
    );
    assert_eq!(
        verdicts(&run, 1, 0),
        expected(&[
            ("succeeded", false),
            ("called_tool", false),
            ("called_tool", false),
            ("not_called_tool", false),
            ("reply_includes", false),
            ("reply_matches", false),
            ("tool_order", false),
            ("trajectory", false),
            ("max_tool_calls", false),
            ("max_tokens", false),
            ("max_steps", false),
            ("max_duration_secs", false),
            ("file", false),
            ("tool_errored", false),
            ("no_tool_errors", false),
            ("approval_requested", false),
        ]),
        "{run:#?}"
    );
    // Partial credit: 2 of 4 expected calls in order, 2 of 3 actual calls expected.
    let f1 = 2.0 * (2.0 / 3.0) * 0.5 / (2.0 / 3.0 + 0.5);
    let partial = &step_of(&run, 0, 0).assertions[10];
    assert_eq!(
        (partial.passed, partial.score, &partial.actual),
        (
            true,
            f1,
            &json!({"calls": ["Write", "Read", "label"], "precision": 2.0 / 3.0, "recall": 0.5, "f1": f1})
        ),
    );
    assert_eq!(
        partial.message,
        "2 of 4 expected call(s) matched in_order (3 actual): precision 0.67, recall 0.50, F1 0.57"
    );
    // A mismatched input reports what was expected and what the calls were.
    let mismatch = &step_of(&run, 1, 0).assertions[2];
    assert_eq!(
        (
            &mismatch.expected,
            &mismatch.actual,
            mismatch.message.as_str()
        ),
        (
            &json!({"tool": "Read", "args": "subset", "input": {"path": "y.md"}}),
            &json!({"calls": [{"path": "x.md"}], "matching": 0}),
            "Read was called 1 time(s), but no input matched",
        )
    );
    // The step's observation is stored with the verdicts: usage, the read files, approvals.
    let observed = &step_of(&run, 0, 0).observed;
    let files: Vec<(&str, Option<&str>)> = observed
        .files
        .iter()
        .map(|(path, text)| (path.as_str(), text.as_deref()))
        .collect();
    assert_eq!(
        (
            observed.usage,
            files,
            observed.approvals_requested.clone(),
            observed.model_steps,
        ),
        (
            Some(usage() + usage()),
            vec![
                ("absent.md", None),
                ("brief.md", Some("review the notes")),
                ("notes.md", Some("approved: yes\n"))
            ],
            vec!["label".to_string()],
            2,
        )
    );
}
