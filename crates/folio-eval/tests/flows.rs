//! Eval flows through the runner `folio eval` calls ([`folio_eval::run_evals`], in process)
//! with the mock model: rescore, the judge, iterations, concurrent cases, dry runs, timeouts,
//! the steps of a case sharing one session, and case selection. What the `folio` binary adds
//! (the report and its exit code, JUnit, `--record` and offline replay, `--from-session`,
//! `folio validate`, the stored runs over HTTP) is folio-cli's `eval_flows.rs`.

mod support;

use folio_eval::{EvalOptions, list_cases, rescore};
use folio_protocol::{
    EvalCaseInfo, EvalCaseList, EvalRun, HookPayload, JudgeVerdict, ToolCallRecord,
};
use folio_test_support::{MockModelServer, MockReply, read_wire};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use support::*;

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
    let first = eval(dir.path(), &options(&mock.openai_base_url(), dir.path()))
        .await
        .unwrap();
    assert!(!first.ok, "{first:#?}");
    let run_id = first.run_id;

    write_files(dir.path(), &[("evals/answer.eval.toml", &eval_file("42"))]);
    let suite = folio_project::discover_evals(dir.path());
    let run = rescore(&suite, &state_of(dir.path()), &run_id)
        .await
        .unwrap();
    assert_eq!(
        (run.rescored_from.as_deref(), run.ok),
        (Some(&*run_id), true)
    );
    assert_ne!(run.run_id, run_id);
    assert_eq!(mock.requests().len(), 1);

    let missing = rescore(&suite, &state_of(dir.path()), "evr_NOSUCHRUN")
        .await
        .unwrap_err();
    // `folio eval --rescore` prints it after `error: ` and exits 1.
    assert_eq!(
        missing.to_string(),
        "no stored eval run evr_NOSUCHRUN: `folio eval` prints the run id of each run (GET /v1/evals lists them)"
    );
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
    let options = EvalOptions {
        max_concurrency: Some(1),
        ..options(&mock.openai_base_url(), dir.path())
    };
    let run = eval(dir.path(), &options).await.unwrap();
    // `folio eval` exits 1 on a run that is not ok.
    assert!(!run.ok, "{run:#?}");
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
    let options = EvalOptions {
        max_concurrency: Some(1),
        ..options(&mock.openai_base_url(), dir.path())
    };
    let run = eval(dir.path(), &options).await.unwrap();
    // `folio eval` exits 1 on a run that is not ok.
    assert!(!run.ok, "{run:#?}");
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
    let options = EvalOptions {
        max_concurrency: Some(4),
        ..options(&mock.openai_base_url(), dir.path())
    };
    let run = eval(dir.path(), &options).await.unwrap();
    assert!(run.ok, "{run:#?}");
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
    let run = eval(dir.path(), &options(&mock.openai_base_url(), dir.path()))
        .await
        .unwrap();
    assert!(run.ok, "{run:#?}");
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
async fn a_case_past_its_timeout_fails_with_the_setting_to_raise() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("late").first_byte_delay(std::time::Duration::from_secs(5)));
    let dir = eval_project(&[(
        "slow.eval.toml",
        "[[cases]]\nid = \"slow\"\ntimeout_secs = 1\n  [[cases.steps]]\n  send = \"Hurry\"\n  expect = [{ reply_includes = \"late\" }]\n",
    )]);
    let run = eval(dir.path(), &options(&mock.openai_base_url(), dir.path()))
        .await
        .unwrap();
    assert!(!run.ok, "{run:#?}");
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
    let run = eval(dir.path(), &options(&mock.openai_base_url(), dir.path()))
        .await
        .unwrap();
    assert!(run.ok, "{run:#?}");
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
    let url = mock.openai_base_url();
    let selected = |run: EvalRun| {
        assert!(run.ok, "{run:#?}");
        run.cases
            .iter()
            .map(|c| format!("{}/{}", c.eval_id, c.case_id))
            .collect::<Vec<_>>()
    };
    let by_filter = EvalOptions {
        filter: Some("/fast".into()),
        ..options(&url, dir.path())
    };
    assert_eq!(
        selected(eval(dir.path(), &by_filter).await.unwrap()),
        ["api/nightly/fast", "api/smoke/fast"]
    );
    let by_tag = EvalOptions {
        tags: vec!["smoke".into()],
        filter: Some("slow".into()),
        ..options(&url, dir.path())
    };
    assert_eq!(
        selected(eval(dir.path(), &by_tag).await.unwrap()),
        ["api/smoke/slow"]
    );
    assert_eq!(mock.requests().len(), 3);

    // `folio eval` prints it after `error: ` and exits 1 (folio-cli's `eval_flows.rs`).
    let none = EvalOptions {
        tags: vec!["weekly".into()],
        ..options(&url, dir.path())
    };
    let error = eval(dir.path(), &none).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "no case matches the filter or tags (2 evals found): check --filter and --tag, or add evals under evals/"
    );

    // `folio eval --list` selects the same cases as a run would, without running them.
    let suite = folio_project::discover_evals(dir.path());
    let listed = list_cases(&suite, Some("slow"), &["smoke".into()]).unwrap();
    assert_eq!(
        listed,
        EvalCaseList {
            cases: vec![EvalCaseInfo {
                eval_id: "api/smoke".into(),
                case_id: "slow".into(),
                tags: vec!["smoke".into()],
                steps: 1,
            }],
            tags: vec!["smoke".into()],
        }
    );
    let all = list_cases(&suite, None, &[]).unwrap();
    assert_eq!(
        (all.cases.len(), all.tags),
        (3, vec!["nightly".to_string(), "smoke".to_string()])
    );
    assert_eq!(
        list_cases(&suite, None, &["weekly".into()])
            .unwrap_err()
            .to_string(),
        error.to_string()
    );
    assert_eq!(mock.requests().len(), 3);
}
