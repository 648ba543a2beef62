//! `folio eval` flows through the binary with the mock model: the failure report, exit codes and
//! JUnit read by a real consumer, record → replay → drift, rescore, from-session, the judge,
//! iterations, dry runs, validate's diagnostics and the stored runs over HTTP.

mod eval_support;

use std::path::Path;

use eval_support::*;
use folio_protocol::{
    EvalRunResponse, EvalRunSummary, HookPayload, JudgeVerdict, Page, RunResult, ToolCallRecord,
};
use folio_test_support::{MockModelServer, MockReply, NO_BODY, expect, expect_error, read_wire};
use pretty_assertions::assert_eq;
use reqwest::Method;
use serde_json::{Value, json};

const GREETING: &str = r#"
[[cases]]
id = "hello"
  [[cases.steps]]
  send = "Say hello"
  expect = [{ reply_includes = "hello" }]

[[cases]]
id = "goodbye"
  [[cases.steps]]
  send = "Say goodbye"
  expect = [{ reply_includes = "goodbye" }, { not_called_tool = "Read" }]
"#;

fn python() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-deps/venv/bin/python")
}

#[tokio::test]
async fn a_failing_case_is_reported_with_expected_and_actual_exits_1_and_junit_parses() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("hello there"));
    mock.push(MockReply::tool_calls([("LS", json!({}))]));
    mock.push(MockReply::text("see you"));
    let dir = eval_project(&[("greet.eval.toml", GREETING)]);
    let junit = dir.path().join("junit.xml");
    let output = eval(
        &mock.openai_base_url(),
        dir.path(),
        &["--max-concurrency", "1", "--junit", junit.to_str().unwrap()],
    )
    .await;
    assert_eq!(output.status.code(), Some(1), "{}", texts(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let rows = summary_rows(&stdout, 2);
    assert_eq!(
        rows,
        [
            ["CASE", "RESULT", "SCORE", "PASSED"],
            ["greet/hello", "pass", "1.00", "1/1"],
            ["greet/goodbye", "FAIL", "0.67", "0/1"],
        ],
        "{stdout}"
    );
    let failures = failures_section(&stdout);
    assert_eq!(
        failures,
        "✗ greet/goodbye step 1: reply_includes: the reply does not include \"goodbye\"\n    expected: \"goodbye\"\n    actual:   \"see you\""
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("✓ greet/hello ("), "{stderr}");
    assert!(stderr.contains("✗ greet/goodbye ("), "{stderr}");
    // A real JUnit consumer reads the report.
    let read = std::process::Command::new(python())
        .arg("-c")
        .arg(
            "import sys\nfrom junitparser import JUnitXml\nxml = JUnitXml.fromfile(sys.argv[1])\nfor suite in xml:\n    print(suite.name, suite.tests, suite.failures)\n    for case in suite:\n        print(case.classname, case.name, case.is_passed, [r.message for r in case.result])\n",
        )
        .arg(&junit)
        .output()
        .unwrap();
    assert!(
        read.status.success(),
        "{}",
        String::from_utf8_lossy(&read.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&read.stdout),
        "greet 2 1\ngreet hello True []\ngreet goodbye False ['✗ greet/goodbye step 1: reply_includes: the reply does not include \"goodbye\"']\n"
    );
}

#[tokio::test]
async fn a_recorded_case_replays_offline_and_a_drifted_fixture_fails_with_the_line_diff() {
    let mock = MockModelServer::start().await;
    // Read prints no host path (LS would: session workspaces differ between runs).
    mock.push(MockReply::tool_calls([("Read", json!({"path": "a.md"}))]));
    mock.push(MockReply::text("The list is empty."));
    let case = |message: &str, model: &str| {
        format!(
            "{model}\n[[cases]]\nid = \"look\"\nworkspace_files = {{ \"a.md\" = \"nothing yet\" }}\n  [[cases.steps]]\n  send = \"{message}\"\n  expect = [{{ called_tool = \"Read\" }}, {{ reply_includes = \"empty\" }}]\n"
        )
    };
    let dir = eval_project(&[("files.eval.toml", &case("What is here?", ""))]);
    let recorded = eval(&mock.openai_base_url(), dir.path(), &["--record"]).await;
    assert!(recorded.status.success(), "{}", texts(&recorded));
    let fixture = dir.path().join("evals/fixtures/files/look.jsonl");
    assert_eq!(
        std::fs::read_to_string(&fixture).unwrap().lines().count(),
        2
    );

    // No server and no key: the fixture answers.
    let replay = "model = \"replay:fixtures/files/look.jsonl\"";
    write_files(
        dir.path(),
        &[("evals/files.eval.toml", &case("What is here?", replay))],
    );
    let offline = || {
        let mut command = tokio::process::Command::new(folio_bin());
        command
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("FOLIO_MODEL")
            .arg("eval")
            .arg("--dir")
            .arg(dir.path());
        command
    };
    let replayed = offline().output().await.unwrap();
    assert!(replayed.status.success(), "{}", texts(&replayed));
    assert_eq!(mock.requests().len(), 2);

    // The message changed: the replay fails the step with the provider's line diff.
    write_files(
        dir.path(),
        &[("evals/files.eval.toml", &case("What is there?", replay))],
    );
    let drifted = offline().output().await.unwrap();
    assert_eq!(drifted.status.code(), Some(1), "{}", texts(&drifted));
    let stdout = String::from_utf8_lossy(&drifted.stdout);
    assert!(stdout.contains("succeeded: the turn failed:"), "{stdout}");
    assert!(
        stdout.contains("-      \"text\": \"What is here?\""),
        "{stdout}"
    );
    assert!(
        stdout.contains("+      \"text\": \"What is there?\""),
        "{stdout}"
    );
}

#[tokio::test]
async fn rescore_evaluates_changed_assertions_against_a_stored_run_without_a_model() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("The answer is 42."));
    let eval_file = |text: &str| {
        format!(
            "[[cases]]\nid = \"answer\"\n  [[cases.steps]]\n  send = \"What is the answer?\"\n  expect = [{{ reply_includes = \"{text}\" }}]\n"
        )
    };
    let dir = eval_project(&[("answer.eval.toml", &eval_file("43"))]);
    let first = eval(&mock.openai_base_url(), dir.path(), &["--json"]).await;
    assert_eq!(first.status.code(), Some(1), "{}", texts(&first));
    let run_id = run_of(&first).run_id;

    write_files(dir.path(), &[("evals/answer.eval.toml", &eval_file("42"))]);
    let rescored = eval(
        &mock.openai_base_url(),
        dir.path(),
        &["--json", "--rescore", &run_id],
    )
    .await;
    assert!(rescored.status.success(), "{}", texts(&rescored));
    let run = run_of(&rescored);
    assert_eq!(
        (run.rescored_from.as_deref(), run.ok),
        (Some(&*run_id), true)
    );
    assert_ne!(run.run_id, run_id);
    assert_eq!(mock.requests().len(), 1);

    let missing = eval(
        &mock.openai_base_url(),
        dir.path(),
        &["--rescore", "evr_NOSUCHRUN"],
    )
    .await;
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&missing.stderr).trim(),
        "error: no stored eval run evr_NOSUCHRUN: `folio eval` prints the run id of each run (GET /v1/evals lists them)"
    );
}

#[tokio::test]
async fn from_session_writes_a_case_that_passes_against_the_same_answers() {
    let mock = MockModelServer::start().await;
    let script = |mock: &MockModelServer| {
        mock.push(MockReply::tool_calls([(
            "Write",
            json!({"path": "todo.md", "contents": "milk"}),
        )]));
        mock.push(MockReply::text("Noted: milk."));
    };
    script(&mock);
    let dir = project("model = \"openai:gpt-test\"\n");
    let ran = folio(&mock.openai_base_url())
        .args(["run", "--json", "--message", "Remember milk", "--dir"])
        .arg(dir.path())
        .output()
        .await
        .unwrap();
    assert!(ran.status.success(), "{}", texts(&ran));
    let result: RunResult = read_wire(&serde_json::from_slice::<Value>(&ran.stdout).unwrap());
    let session = result.session_id.as_str();

    let written = eval(
        &mock.openai_base_url(),
        dir.path(),
        &["--from-session", session],
    )
    .await;
    assert!(written.status.success(), "{}", texts(&written));
    let path = dir
        .path()
        .join(format!("evals/from-session/{session}.eval.toml"));
    assert_eq!(
        String::from_utf8_lossy(&written.stdout).trim(),
        path.display().to_string()
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        format!(
            "description = \"From session {session}\"\ntags = [\"from-session\"]\n\n[[cases]]\nid = \"replayed\"\n\n  [[cases.steps]]\n  send = \"Remember milk\"\n  expect = [\n    {{ succeeded = true }},\n    {{ called_tool = \"Write\", input = {{ contents = \"milk\", path = \"todo.md\" }}, args = \"subset\" }},\n    {{ tool_order = [\"Write\"], mode = \"in_order\" }},\n  ]\n"
        )
    );
    script(&mock);
    let replayed = eval(&mock.openai_base_url(), dir.path(), &["--json"]).await;
    assert!(replayed.status.success(), "{}", texts(&replayed));
    let run = run_of(&replayed);
    let cases: Vec<(&str, bool)> = run
        .cases
        .iter()
        .map(|c| (c.case_id.as_str(), c.ok))
        .collect();
    assert_eq!(cases, [("replayed", true)]);
}

#[tokio::test]
async fn the_judge_grades_a_step_and_its_verdict_is_recorded() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("2 + 2 = 4."));
    mock.push(MockReply::text(
        "{\"pass\": true, \"score\": 0.9, \"reasoning\": \"The sum is right.\"}",
    ));
    mock.push(MockReply::text("2 + 2 = 5."));
    mock.push(MockReply::text(
        "Verdict: {\"pass\": false, \"score\": 0.1, \"reasoning\": \"5 is wrong.\"}",
    ));
    let judged = r#"
[[cases]]
id = "right"
  [[cases.steps]]
  send = "What is 2 + 2?"
  expect = [{ judge = { rubric = "The arithmetic is correct." } }]

[[cases]]
id = "wrong"
  [[cases.steps]]
  send = "What is 2 + 2, again?"
  expect = [{ judge = { rubric = "The arithmetic is correct.", model = "openai:grader" } }]
"#;
    let dir = eval_project(&[("math.eval.toml", judged)]);
    let output = eval(
        &mock.openai_base_url(),
        dir.path(),
        &["--json", "--max-concurrency", "1"],
    )
    .await;
    assert_eq!(output.status.code(), Some(1), "{}", texts(&output));
    let run = run_of(&output);
    let rubric = "The arithmetic is correct.";
    assert_eq!(
        step_of(&run, 0, 0).observed.verdicts.get(rubric),
        Some(&JudgeVerdict {
            model: "gpt-test".into(),
            pass: true,
            score: 0.9,
            reasoning: "The sum is right.".into(),
        })
    );
    assert_eq!(
        verdicts(&run, 0, 0),
        expected(&[("succeeded", true), ("judge", true)])
    );
    assert_eq!(
        verdicts(&run, 1, 0),
        expected(&[("succeeded", true), ("judge", false)])
    );
    let wrong = &step_of(&run, 1, 0).observed.verdicts[rubric];
    assert_eq!(
        (wrong.model.as_str(), wrong.score, wrong.reasoning.as_str()),
        ("grader", 0.1, "5 is wrong.")
    );
    let grader: Vec<String> = mock.requests()[1]
        .messages()
        .iter()
        .map(|m| m.text())
        .collect();
    assert_eq!(
        grader,
        [
            folio_eval::JUDGE_SYSTEM,
            "Rubric: The arithmetic is correct.\n\nUser message:\nWhat is 2 + 2?\n\nTool calls:\n(none)\n\nAgent reply:\n2 + 2 = 4.\n"
        ]
    );
}

#[tokio::test]
async fn iterations_give_a_pass_rate_and_pass_k_needs_every_attempt() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("yes"));
    mock.push(MockReply::text("no"));
    let flaky = "iterations = 2\n[[cases]]\nid = \"flaky\"\n  [[cases.steps]]\n  send = \"Answer yes\"\n  expect = [{ reply_includes = \"yes\" }]\n";
    let dir = eval_project(&[("flaky.eval.toml", flaky)]);
    let output = eval(
        &mock.openai_base_url(),
        dir.path(),
        &["--json", "--max-concurrency", "1"],
    )
    .await;
    assert_eq!(output.status.code(), Some(1), "{}", texts(&output));
    let run = run_of(&output);
    let case = &run.cases[0];
    let attempts: Vec<(u32, bool)> = case.attempts.iter().map(|a| (a.iteration, a.ok)).collect();
    assert_eq!(
        (case.ok, case.pass_rate, attempts),
        (false, 0.5, vec![(1, true), (2, false)])
    );
}

#[tokio::test]
async fn cases_run_concurrently_each_in_its_own_session() {
    let mock = MockModelServer::start().await;
    for _ in 0..6 {
        mock.push(MockReply::text("done"));
    }
    let many: String = (1..=6)
        .map(|n| format!("[[cases]]\nid = \"c{n}\"\n  [[cases.steps]]\n  send = \"Task {n}\"\n  expect = [{{ reply_includes = \"done\" }}]\n"))
        .collect();
    let dir = eval_project(&[("many.eval.toml", &many)]);
    let output = eval(
        &mock.openai_base_url(),
        dir.path(),
        &["--json", "--max-concurrency", "4"],
    )
    .await;
    assert!(output.status.success(), "{}", texts(&output));
    let run = run_of(&output);
    let mut sessions: Vec<&str> = run
        .cases
        .iter()
        .filter_map(|c| c.attempts[0].session_id.as_deref())
        .collect();
    let ids: Vec<&str> = run.cases.iter().map(|c| c.case_id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2", "c3", "c4", "c5", "c6"]);
    sessions.sort_unstable();
    sessions.dedup();
    assert_eq!(sessions.len(), 6);
    let mut sent: Vec<String> = mock
        .requests()
        .iter()
        .flat_map(|r| r.user_texts())
        .collect();
    sent.sort();
    assert_eq!(
        sent,
        ["Task 1", "Task 2", "Task 3", "Task 4", "Task 5", "Task 6"]
    );
}

#[tokio::test]
async fn a_dry_run_case_shows_its_purpose_and_flag_to_tools_and_hooks() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([
        ("whoami", json!({})),
        ("stamp", json!({})),
    ]));
    mock.push(MockReply::text("checked"));
    let dir = eval_project(&[(
        "dry.eval.toml",
        "dry_run = true\n[[cases]]\nid = \"dry\"\n  [[cases.steps]]\n  send = \"Who am I?\"\n  expect = [{ no_tool_errors = true }]\n",
    )]);
    write_files(
        dir.path(),
        &[
            (
                "agent/tools/whoami.toml",
                "description = \"Tells the session's purpose and dry-run flag.\"\ncommand = [\"python3\", \"-c\", \"import json,sys; c=json.load(sys.stdin)['context']; print(json.dumps({'purpose': c['purpose'], 'dryRun': c['dryRun']}))\"]\neffect = \"read\"\n[input_schema]\ntype = \"object\"\n",
            ),
            (
                "agent/hooks/record.toml",
                "events = [\"turn.completed\"]\ncommand = \"cat >> seen.ndjson; echo >> seen.ndjson\"\n",
            ),
            (
                "agent/tools/stamp.toml",
                "description = \"Stamps the document for real.\"\ncommand = [\"python3\", \"-c\", \"print('stamped')\"]\neffect = \"write\"\ndry_run_result = { note = \"dry run: not stamped\" }\n[input_schema]\ntype = \"object\"\n",
            ),
        ],
    );
    let output = eval(&mock.openai_base_url(), dir.path(), &["--json"]).await;
    assert!(output.status.success(), "{}", texts(&output));
    let run = run_of(&output);
    let outputs: Vec<(&str, &Value)> = step_of(&run, 0, 0)
        .observed
        .tool_calls
        .iter()
        .map(|c: &ToolCallRecord| (c.tool.as_str(), &c.output))
        .collect();
    assert_eq!(
        outputs,
        [
            ("whoami", &json!({"purpose": "eval", "dryRun": true})),
            ("stamp", &json!({"note": "dry run: not stamped"}))
        ]
    );
    // Hooks see the purpose, the channel and the dry-run flag in every payload (an event with
    // the session's context beside it).
    let seen = std::fs::read_to_string(dir.path().join("agent/hooks/seen.ndjson")).unwrap();
    let payload: HookPayload = read_wire(&serde_json::from_str(seen.trim()).unwrap());
    assert_eq!(
        (
            payload.event.event_type(),
            payload.purpose.as_deref(),
            payload.channel.as_deref(),
            payload.dry_run
        ),
        ("turn.completed", Some("eval"), Some("eval"), true)
    );
}

#[tokio::test]
async fn validate_reports_eval_diagnostics_with_file_line_field_and_rule() {
    let dir = eval_project(&[
        ("evals.toml", "max_concurrency = 0\n"),
        (
            "bad.eval.toml",
            "[[cases]]\nid = \"one\"\n  [[cases.steps]]\n  send = \"hi\"\n  expect = [\n    { reply_include = \"x\" },\n    { called_tool = \"A\", args = \"loose\" },\n    { reply_matches = \"(\" },\n  ]\n\n[[cases]]\nid = \"one\"\n  [[cases.steps]]\n  send = \"again\"\n",
        ),
        ("typo.eval.toml", "descripton = \"x\"\n"),
        ("notes.toml", "x = 1\n"),
    ]);
    let output = tokio::process::Command::new(folio_bin())
        .args(["validate", "--dir"])
        .arg(dir.path())
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "error: evals/evals.toml: max_concurrency: must be at least 1\n\
         error: evals/bad.eval.toml:6: cases.steps.expect: unknown assertion `reply_include` (did you mean `reply_includes`?)\n\
         error: evals/bad.eval.toml:7: cases.steps.expect: called_tool.args: must be \"exact\", \"subset\" or \"ignore\"\n\
         error: evals/bad.eval.toml:8: cases.steps.expect: reply_matches: not a valid regex (unclosed group)\n\
         error: evals/bad.eval.toml:11: cases.id: `one` is used by two cases of this eval: ids must be unique\n\
         error: evals/typo.eval.toml:1: column 1: unknown key `descripton` (did you mean `description`?)\n\
         warning: evals/notes.toml: not read: eval files end in .eval.toml (rename it, or move it out of evals/)\n\
         failed: 6 errors, 1 warning\n"
    );
}

#[tokio::test]
async fn stored_runs_are_served_by_get_evals() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("hello"));
    let dir = eval_project(&[(
        "hi.eval.toml",
        "[[cases]]\nid = \"hi\"\n  [[cases.steps]]\n  send = \"hi\"\n  expect = [{ reply_includes = \"hello\" }]\n",
    )]);
    let state = dir.path().join("state");
    let output = eval(
        &mock.openai_base_url(),
        dir.path(),
        &["--json", "--state-root", state.to_str().unwrap()],
    )
    .await;
    assert!(output.status.success(), "{}", texts(&output));
    let run = run_of(&output);
    let run_id = run.run_id.clone();
    let served = serve(&mock.openai_base_url(), dir.path(), &state).await;
    let list: Page<EvalRunSummary> =
        expect(Method::GET, &format!("{served}/v1/evals"), NO_BODY, 200).await;
    assert_eq!(list.data, [run.summary()]);
    assert_eq!(
        (list.data[0].passed, list.data[0].failed, list.data[0].ok),
        (1, 0, true)
    );
    let one: EvalRunResponse = expect(
        Method::GET,
        &format!("{served}/v1/evals/{run_id}"),
        NO_BODY,
        200,
    )
    .await;
    assert_eq!(one.run, run);
    let missing = expect_error(
        Method::GET,
        &format!("{served}/v1/evals/evr_NONE"),
        NO_BODY,
        folio_protocol::ErrorCode::NotFound,
    )
    .await;
    assert_eq!(missing.message, "no eval run evr_NONE");
    // The playground's Evals panel lists the run (a headless browser runs its script).
    let page = tokio::process::Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=5000",
            "--dump-dom",
        ])
        .arg(format!("{served}/playground?view=evals"))
        .output()
        .await
        .expect("chromium runs (Debian package chromium)");
    let dom = String::from_utf8_lossy(&page.stdout);
    assert!(
        dom.contains(&format!("pass: 1 passed, 0 failed ({run_id})")),
        "{dom}"
    );
}

/// Starts `folio serve` on `dir` with `state`, returning its base URL (the process ends with the
/// test).
async fn serve(model_url: &str, dir: &Path, state: &Path) -> String {
    use tokio::io::AsyncBufReadExt;
    let mut child = folio(model_url)
        .args(["serve", "--port", "0", "--dir"])
        .arg(dir)
        .arg("--state-root")
        .arg(state)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let url = loop {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("serve prints its URL");
        if let Some(rest) = line.strip_prefix("agent ") {
            break rest
                .split_once(": ")
                .unwrap()
                .1
                .split(' ')
                .next()
                .unwrap()
                .to_string();
        }
    };
    tokio::spawn(async move {
        let _child = child;
        while let Ok(Some(_)) = lines.next_line().await {}
    });
    url
}

#[tokio::test]
async fn a_case_past_its_timeout_fails_with_the_setting_to_raise() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("late").first_byte_delay(std::time::Duration::from_secs(5)));
    let dir = eval_project(&[(
        "slow.eval.toml",
        "[[cases]]\nid = \"slow\"\ntimeout_secs = 1\n  [[cases.steps]]\n  send = \"Hurry\"\n  expect = [{ reply_includes = \"late\" }]\n",
    )]);
    let output = eval(&mock.openai_base_url(), dir.path(), &["--json"]).await;
    assert_eq!(output.status.code(), Some(1), "{}", texts(&output));
    let run = run_of(&output);
    let attempt = &run.cases[0].attempts[0];
    assert_eq!(
        (attempt.error.as_deref(), attempt.steps.len(), attempt.ok),
        (
            Some("timed out after 1s: raise timeout_secs in the eval (or in evals/evals.toml)"),
            0,
            false
        )
    );
}

#[tokio::test]
async fn the_steps_of_a_case_share_one_session_and_its_todos() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([(
        "UpdateTodos",
        json!({"todos": [{"id": "1", "content": "write the tests", "status": "in_progress"}]}),
    )]));
    mock.push(MockReply::text("planned"));
    mock.push(MockReply::tool_calls([("ReadTodos", json!({}))]));
    mock.push(MockReply::text("still on it"));
    let dir = eval_project(&[(
        "plan.eval.toml",
        "[[cases]]\nid = \"plan\"\n  [[cases.steps]]\n  send = \"Plan the work\"\n  expect = [{ called_tool = \"UpdateTodos\" }]\n  [[cases.steps]]\n  send = \"What is left?\"\n  expect = [{ called_tool = \"ReadTodos\" }, { not_called_tool = \"UpdateTodos\" }]\n",
    )]);
    let output = eval(&mock.openai_base_url(), dir.path(), &["--json"]).await;
    assert!(output.status.success(), "{}", texts(&output));
    let run = run_of(&output);
    let second = &step_of(&run, 0, 1).observed;
    let read = second.tool_calls[0].output.as_str().unwrap_or_default();
    assert!(read.contains("write the tests"), "{run:#?}");
    // The second step's request carries the first step's exchange: one session.
    assert_eq!(
        mock.requests()[2].user_texts(),
        ["Plan the work", "What is left?"]
    );
}

#[tokio::test]
async fn filter_and_tag_select_cases_and_selecting_none_is_an_error() {
    let mock = MockModelServer::start().await;
    for _ in 0..3 {
        mock.push(MockReply::text("done"));
    }
    let case = |id: &str| {
        format!(
            "[[cases]]\nid = \"{id}\"\n  [[cases.steps]]\n  send = \"Do {id}\"\n  expect = [{{ reply_includes = \"done\" }}]\n"
        )
    };
    let smoke = format!("tags = [\"smoke\"]\n{}{}", case("fast"), case("slow"));
    let other = format!("tags = [\"nightly\"]\n{}", case("fast"));
    let dir = eval_project(&[
        ("api/smoke.eval.toml", &smoke),
        ("api/nightly.eval.toml", &other),
    ]);
    let selected = |output: &std::process::Output| {
        assert!(output.status.success(), "{}", texts(output));
        run_of(output)
            .cases
            .iter()
            .map(|c| format!("{}/{}", c.eval_id, c.case_id))
            .collect::<Vec<_>>()
    };
    let url = mock.openai_base_url();
    let by_filter = eval(&url, dir.path(), &["--json", "--filter", "/fast"]).await;
    assert_eq!(selected(&by_filter), ["api/nightly/fast", "api/smoke/fast"]);
    let by_tag = eval(
        &url,
        dir.path(),
        &["--json", "--tag", "smoke", "--filter", "slow"],
    )
    .await;
    assert_eq!(selected(&by_tag), ["api/smoke/slow"]);
    assert_eq!(mock.requests().len(), 3);

    let none = eval(&url, dir.path(), &["--tag", "weekly"]).await;
    assert_eq!(none.status.code(), Some(1), "{}", texts(&none));
    assert_eq!(
        String::from_utf8_lossy(&none.stderr).trim(),
        "error: no case matches the filter or tags (2 evals found): check --filter and --tag, or add evals under evals/"
    );
}
