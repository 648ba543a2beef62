//! `folio eval` flows through the binary with the mock model: the failure report, exit codes and
//! JUnit read by a real consumer, record → replay → drift (the binary resolves a relative
//! `replay:` fixture), from-session, an eval error on stderr, validate's diagnostics and the
//! stored runs over HTTP. What the runner itself does (rescore, the judge, iterations,
//! concurrency, dry runs, timeouts, shared sessions, case selection, every assertion kind) is
//! folio-eval's `tests/flows.rs` and `tests/assertions.rs`, run in process.

mod eval_support;

use std::path::Path;

use eval_support::*;
use folio_protocol::{
    EvalCaseInfo, EvalCaseList, EvalRunResponse, EvalRunSummary, Page, RunResult,
};
use folio_test_support::{
    MockModelServer, MockReply, NO_BODY, expect, expect_error, python, read_wire,
};
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
        // `--max-concurrency`, the old name of `--concurrency`, still works.
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
    serve_with(model_url, dir, &["--state-root", state.to_str().unwrap()]).await
}

/// Starts `folio serve --dir DIR ARGS…`, returning the agent's base URL (`/<slug>` in the
/// multi-agent layout; the process ends with the test).
async fn serve_with(model_url: &str, dir: &Path, args: &[&str]) -> String {
    use tokio::io::AsyncBufReadExt;
    let mut child = folio(model_url)
        .args(["serve", "--port", "0", "--dir"])
        .arg(dir)
        .args(args)
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

/// Issue 32: `folio eval --dir P` and `folio serve --dir P` on the default state root, alone
/// (`--mode single`, sessions in the root itself) and among others (sessions under the slug),
/// find the same run: a project's runs have one place, `<root>/<slug>/evals/`.
#[tokio::test]
async fn a_run_is_served_by_single_and_multi_agent_serve_on_the_same_state_root() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("hello"));
    let dir = eval_project(&[(
        "hi.eval.toml",
        "[[cases]]\nid = \"hi\"\n  [[cases.steps]]\n  send = \"hi\"\n  expect = [{ reply_includes = \"hello\" }]\n",
    )]);
    let output = eval(&mock.openai_base_url(), dir.path(), &["--json"]).await;
    assert!(output.status.success(), "{}", texts(&output));
    let run = run_of(&output);
    let slug = dir.path().canonicalize().unwrap();
    let slug = slug.file_name().unwrap().to_str().unwrap();
    let stored = dir
        .path()
        .join(".folio/state")
        .join(slug)
        .join("evals")
        .join(format!("{}.json", run.run_id));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains(&format!(
            "run {} stored at {}",
            run.run_id,
            stored.display()
        )),
        "{}",
        texts(&output)
    );
    let single = serve_with(&mock.openai_base_url(), dir.path(), &["--mode", "single"]).await;
    let multi = serve_with(&mock.openai_base_url(), dir.path(), &[]).await;
    assert!(multi.ends_with(&format!("/{slug}")), "{multi}");
    for served in [&single, &multi] {
        let list: Page<EvalRunSummary> =
            expect(Method::GET, &format!("{served}/v1/evals"), NO_BODY, 200).await;
        assert_eq!(list.data, [run.summary()], "{served}");
        let one: EvalRunResponse = expect(
            Method::GET,
            &format!("{served}/v1/evals/{}", run.run_id),
            NO_BODY,
            200,
        )
        .await;
        assert_eq!(one.run, run, "{served}");
    }
}

/// `--list` names the selected cases, their tags and step counts without calling a model or
/// storing a run; `--json` prints the same as an [`EvalCaseList`].
#[tokio::test]
async fn list_prints_the_selected_cases_and_tags_without_running_them() {
    let mock = MockModelServer::start().await;
    let two_steps = "tags = [\"smoke\", \"api\"]\n[[cases]]\nid = \"both\"\n  [[cases.steps]]\n  send = \"one\"\n  [[cases.steps]]\n  send = \"two\"\n";
    let dir = eval_project(&[
        ("greet.eval.toml", GREETING),
        ("api/calls.eval.toml", two_steps),
    ]);
    let listed = eval(&mock.openai_base_url(), dir.path(), &["--list"]).await;
    assert!(listed.status.success(), "{}", texts(&listed));
    assert_eq!(
        String::from_utf8_lossy(&listed.stdout),
        "CASE            TAGS       STEPS\n\
         api/calls/both  smoke,api  2\n\
         greet/hello     -          1\n\
         greet/goodbye   -          1\n\
         \n\
         3 cases; tags: api, smoke\n"
    );
    let json = eval(
        &mock.openai_base_url(),
        dir.path(),
        &["--list", "--json", "--tag", "smoke"],
    )
    .await;
    assert!(json.status.success(), "{}", texts(&json));
    let list: EvalCaseList = read_wire(&serde_json::from_slice(&json.stdout).unwrap());
    assert_eq!(
        list,
        EvalCaseList {
            cases: vec![EvalCaseInfo {
                eval_id: "api/calls".into(),
                case_id: "both".into(),
                tags: vec!["smoke".into(), "api".into()],
                steps: 2,
            }],
            tags: vec!["api".into(), "smoke".into()],
        }
    );
    let none = eval(
        &mock.openai_base_url(),
        dir.path(),
        &["--list", "--filter", "nope"],
    )
    .await;
    assert_eq!(none.status.code(), Some(1), "{}", texts(&none));
    assert_eq!(
        String::from_utf8_lossy(&none.stderr).trim(),
        "error: no case matches the filter or tags (2 evals found): check --filter and --tag, or add evals under evals/"
    );
    let refused = eval(&mock.openai_base_url(), dir.path(), &["--list", "--record"]).await;
    assert_eq!(refused.status.code(), Some(2), "{}", texts(&refused));
    assert_eq!(mock.requests().len(), 0);
    assert!(
        !dir.path().join(".folio").exists(),
        "--list stored something"
    );
}

/// The selection itself is folio-eval's `flows.rs`
/// (`filter_and_tag_select_cases_and_selecting_none_is_an_error`); here, how the binary says it.
#[tokio::test]
async fn selecting_no_case_is_an_error_and_exits_1() {
    let mock = MockModelServer::start().await;
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
    let none = eval(&mock.openai_base_url(), dir.path(), &["--tag", "weekly"]).await;
    assert_eq!(none.status.code(), Some(1), "{}", texts(&none));
    assert_eq!(
        String::from_utf8_lossy(&none.stderr).trim(),
        "error: no case matches the filter or tags (2 evals found): check --filter and --tag, or add evals under evals/"
    );
    assert_eq!(mock.requests().len(), 0);
}
