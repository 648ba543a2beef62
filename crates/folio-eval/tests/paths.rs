//! The paths a step can take beyond `send` and `expect`, run through [`folio_eval::run_evals`]
//! with the mock model: approvals answered by the step's table, workspace files written before
//! a step, a follow-up sent with an admission while the previous turn runs, the `command`
//! assertion, and a `result_schema` the reply must satisfy (the parsed reply kept as `result`).

mod support;

use folio_eval::EvalOptions;
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::json;
use support::*;

/// A tool whose calls ask for approval.
const LABEL_TOOL: &str = r#"description = "Apply a label."
command = ["python3", "-c", "print('labelled')"]
effect = "write"
needs_approval = true
[input_schema]
type = "object"
properties.label = { type = "string" }
"#;

const APPROVALS: &str = r#"
[[cases]]
id = "approved"
  [[cases.steps]]
  send = "Label it"
  approvals = { label = "approve" }
  expect = [{ approval_requested = "label" }, { no_tool_errors = true }]

[[cases]]
id = "denied"
  [[cases.steps]]
  send = "Label it"
  approvals = { label = "deny" }
  expect = [{ approval_requested = "label" }, { no_tool_errors = true }]

[[cases]]
id = "denied-by-default"
  [[cases.steps]]
  send = "Label it"
  expect = [{ approval_requested = "label" }, { no_tool_errors = true }]

[[cases]]
id = "approved-by-default"
approvals_default = "approve"
  [[cases.steps]]
  send = "Label it"
  approvals = { other = "deny" }
  expect = [{ approval_requested = "label" }, { no_tool_errors = true }]
"#;

/// Options running one case at a time, so the mock's replies go to the cases in order.
fn one_at_a_time(base_url: &str, dir: &std::path::Path) -> EvalOptions {
    EvalOptions {
        max_concurrency: Some(1),
        ..options(base_url, dir)
    }
}

#[tokio::test]
async fn an_approval_flow_passes_when_the_step_approves_and_fails_when_it_denies() {
    let mock = MockModelServer::start().await;
    for _ in 0..4 {
        mock.push(MockReply::tool_calls([(
            "label",
            json!({"label": "trivial"}),
        )]));
        mock.push(MockReply::text("Done."));
    }
    let dir = eval_project(&[("approvals.eval.toml", APPROVALS)]);
    write_files(dir.path(), &[("agent/tools/label.toml", LABEL_TOOL)]);
    let run = eval(
        dir.path(),
        &one_at_a_time(&mock.openai_base_url(), dir.path()),
    )
    .await
    .unwrap();
    let verdicts: Vec<(&str, bool)> = run
        .cases
        .iter()
        .map(|case| (case.case_id.as_str(), case.ok))
        .collect();
    assert_eq!(
        verdicts,
        [
            ("approved", true),
            ("denied", false),
            ("denied-by-default", false),
            ("approved-by-default", true),
        ],
        "{run:#?}"
    );
    assert_eq!(
        verdicts_of(&run, 1),
        expected(&[
            ("succeeded", true),
            ("approval_requested", true),
            ("no_tool_errors", false)
        ])
    );
    // The approved call ran; the denied one told the model why.
    assert_eq!(
        step_of(&run, 0, 0).observed.tool_calls[0].output,
        json!("labelled")
    );
    let denied = step_of(&run, 1, 0).observed.tool_calls[0]
        .output
        .to_string();
    assert!(
        denied.contains("the eval step's approvals do not approve this tool"),
        "the model is told why: {denied}"
    );
}

fn verdicts_of(run: &folio_protocol::EvalRun, case: usize) -> Vec<(String, bool)> {
    verdicts(run, case, 0)
}

const FILES: &str = r#"
[[cases]]
id = "files"
workspace_files = { "brief.md" = "from the case" }
  [[cases.steps]]
  send = "Read step2.md"
  expect = [{ tool_errored = "Read" }, { file = "brief.md", equals = "from the case" }]
  [[cases.steps]]
  send = "Read it now"
  workspace_files = { "step2.md" = "from step two" }
  expect = [{ no_tool_errors = true }, { file = "step2.md", equals = "from step two" }]
"#;

#[tokio::test]
async fn a_steps_workspace_files_are_written_before_its_message_and_not_before() {
    let mock = MockModelServer::start().await;
    for reply in ["It is not there.", "It says: from step two."] {
        mock.push(MockReply::tool_calls([(
            "Read",
            json!({"path": "step2.md"}),
        )]));
        mock.push(MockReply::text(reply));
    }
    let dir = eval_project(&[("files.eval.toml", FILES)]);
    let run = eval(dir.path(), &options(&mock.openai_base_url(), dir.path()))
        .await
        .unwrap();
    assert!(run.ok, "{run:#?}");
    let read = step_of(&run, 0, 1).observed.tool_calls[0]
        .output
        .to_string();
    assert!(read.contains("from step two"), "the turn read: {read}");
}

/// A tool that runs long enough for a follow-up to arrive while it does.
const SLOW_TOOL: &str = r#"description = "Think for a long time."
command = ["python3", "-c", "import time; time.sleep(60)"]
effect = "read"
[input_schema]
type = "object"
"#;

const ADMISSION: &str = r#"
[[cases]]
id = "preempted"
  [[cases.steps]]
  send = "Take your time"
  expect = [{ succeeded = false }]
  [[cases.steps]]
  send = "Stop, answer now"
  admission = "preempt"
  expect = [{ reply_includes = "now" }]
"#;

#[tokio::test]
async fn a_step_sent_with_preempt_admission_interrupts_the_running_turn() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([("slow", json!({}))]));
    mock.push(MockReply::text("Answering now."));
    let dir = eval_project(&[("admission.eval.toml", ADMISSION)]);
    write_files(dir.path(), &[("agent/tools/slow.toml", SLOW_TOOL)]);
    let run = eval(dir.path(), &options(&mock.openai_base_url(), dir.path()))
        .await
        .unwrap();
    assert!(run.ok, "{run:#?}");
    assert_eq!(
        step_of(&run, 0, 0).observed.error.as_deref(),
        Some("turn interrupted")
    );
    assert_eq!(step_of(&run, 0, 1).observed.reply, "Answering now.");
    assert_eq!(mock.requests().len(), 2);
}

const COMMANDS: &str = r#"
[[cases]]
id = "commands"
  [[cases.steps]]
  send = "What is the answer?"
  expect = [
    { command = ["sh", "-c", "grep -q 'The answer is 42' && echo 'the reply gives 42'"] },
    { command = ["sh", "-c", "echo 'no 43 in the reply'; exit 3"] },
    { command = ["sh", "-c", "echo oops >&2; exit 1"] },
    { command = ["./checks/missing.py"] },
    { command = ["sh", "-c", "sleep 30"], timeout_secs = 1 },
  ]
"#;

#[tokio::test]
async fn a_command_assertion_reads_the_step_on_stdin_and_passes_on_exit_zero() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("The answer is 42."));
    let dir = eval_project(&[("commands.eval.toml", COMMANDS)]);
    let run = eval(dir.path(), &options(&mock.openai_base_url(), dir.path()))
        .await
        .unwrap();
    assert!(!run.ok, "{run:#?}");
    let results: Vec<(bool, String)> = step_of(&run, 0, 0)
        .assertions
        .iter()
        .map(|a| (a.passed, a.message.clone()))
        .collect();
    let missing = format!(
        "cannot start `./checks/missing.py` in {}: No such file or directory (os error 2) (a bare name is looked up on PATH, a relative path is relative to the project folder)",
        dir.path().display()
    );
    assert_eq!(
        results,
        [
            (true, "the turn completed".to_string()),
            (true, "the reply gives 42".to_string()),
            (
                false,
                "`sh` exited with status 3: no 43 in the reply".to_string()
            ),
            (false, "`sh` exited with status 1: stderr: oops".to_string()),
            (false, missing),
            (
                false,
                "`sh` ran past its timeout of 1s and was stopped: raise timeout_secs of the assertion"
                    .to_string()
            ),
        ]
    );
}

const SCHEMA: &str = r#"{
  "type": "object",
  "required": ["verdict"],
  "properties": { "verdict": { "enum": ["approve", "reject"] } }
}"#;

const CHECK_RESULT: &str = r#"import json, sys
step = json.load(sys.stdin)
verdict = (step.get("result") or {}).get("verdict")
print(f"the result's verdict is {verdict}")
sys.exit(0 if verdict == "approve" else 1)
"#;

const RESULTS: &str = r#"
[[cases]]
id = "fenced"
  [[cases.steps]]
  send = "Your verdict?"
  result_schema = "schemas/verdict.json"
  expect = [{ command = ["python3", "checks/verdict.py"] }]

[[cases]]
id = "not-json"
  [[cases.steps]]
  send = "Your verdict?"
  result_schema = "schemas/verdict.json"

[[cases]]
id = "mismatch"
  [[cases.steps]]
  send = "Your verdict?"
  result_schema = { type = "object", required = ["verdict"], properties = { verdict = { enum = ["approve", "reject"] } } }
"#;

#[tokio::test]
async fn a_result_schema_holds_the_reply_as_json_and_keeps_it_as_result() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text(
        "Here it is:\n```json\n{\"verdict\": \"approve\"}\n```\n",
    ));
    mock.push(MockReply::text("I approve."));
    mock.push(MockReply::text("{\"verdict\": \"maybe\"}"));
    let dir = eval_project(&[("results.eval.toml", RESULTS)]);
    write_files(
        dir.path(),
        &[
            ("evals/schemas/verdict.json", SCHEMA),
            ("checks/verdict.py", CHECK_RESULT),
        ],
    );
    let run = eval(
        dir.path(),
        &one_at_a_time(&mock.openai_base_url(), dir.path()),
    )
    .await
    .unwrap();
    let summary: Vec<Vec<(String, bool, String)>> = (0..3)
        .map(|case| {
            step_of(&run, case, 0)
                .assertions
                .iter()
                .map(|a| (a.kind.clone(), a.passed, a.message.clone()))
                .collect()
        })
        .collect();
    let row =
        |kind: &str, passed: bool, message: &str| (kind.to_string(), passed, message.to_string());
    assert_eq!(
        summary,
        [
            vec![
                row("succeeded", true, "the turn completed"),
                row(
                    "result_schema",
                    true,
                    "the reply's JSON satisfies the result_schema"
                ),
                row("command", true, "the result's verdict is approve"),
            ],
            vec![
                row("succeeded", true, "the turn completed"),
                row(
                    "result_schema",
                    false,
                    "the reply is not JSON (expected value at line 1 column 1): a step with a result_schema needs a JSON reply, bare or in a ```json block"
                ),
            ],
            vec![
                row("succeeded", true, "the turn completed"),
                row(
                    "result_schema",
                    false,
                    "the reply's JSON does not satisfy the result_schema: /verdict: \"maybe\" is not one of \"approve\" or \"reject\""
                ),
            ],
        ],
        "{run:#?}"
    );
    let results: Vec<_> = (0..3)
        .map(|case| step_of(&run, case, 0).observed.result.clone())
        .collect();
    assert_eq!(
        results,
        [
            Some(json!({"verdict": "approve"})),
            None,
            Some(json!({"verdict": "maybe"})),
        ]
    );
    // `folio eval --json` and the stored run carry it as `result`.
    let stored = serde_json::to_value(step_of(&run, 0, 0)).unwrap();
    assert_eq!(stored["observed"]["result"], json!({"verdict": "approve"}));
}

#[test]
fn discovery_says_what_is_wrong_with_a_steps_new_keys() {
    let wrong = r#"
[[cases]]
id = "wrong"
  [[cases.steps]]
  send = "First"
  admission = "preempt"
  result_schema = "schemas/missing.json"
"#;
    let typo = r#"
[[cases]]
id = "typo"
  [[cases.steps]]
  send = "First"
  approvals = { label = "maybe" }
"#;
    let bad_schema = r#"
[[cases]]
id = "bad"
  [[cases.steps]]
  send = "First"
  result_schema = { type = 12 }
  expect = [{ command = "python3 check.py" }, { command = ["true"], timeout_secs = 0 }]
"#;
    let dir = eval_project(&[
        ("wrong.eval.toml", wrong),
        ("bad.eval.toml", bad_schema),
        ("typo.eval.toml", typo),
    ]);
    let suite = folio_project::discover_evals(dir.path());
    let messages: Vec<String> = suite
        .diagnostics
        .iter()
        .map(|d| d.message.clone())
        .collect();
    assert_eq!(
        messages,
        [
            "cases.steps.result_schema: not a valid JSON Schema at type: 12 is not valid under any of the schemas listed in the 'anyOf' keyword",
            "cases.steps.expect: command: must be a list: the program, then its arguments (e.g. [\"python3\", \"checks/reply.py\"])",
            "cases.steps.expect: command.timeout_secs: must be at least 1",
            "column 25: approvals: unknown variant `maybe`, expected `approve` or `deny`",
            "cases.steps.admission: the first step starts the session, so no turn is running to admit it against: remove it, or give it to a later step",
            "cases.steps.result_schema: cannot read schemas/missing.json (a path relative to evals/): No such file or directory (os error 2)",
        ]
    );
}
