//! Assertions evaluated against an observation: argument modes, JSON paths and trajectory scores.

use folio_eval::{args_match, evaluate, json_path, score_trajectory};
use folio_project::{ArgMode, Assertion, ExpectedCall, OrderMode};
use folio_protocol::{StepObservation, ToolCallRecord};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn call(tool: &str, input: Value) -> ToolCallRecord {
    ToolCallRecord {
        call_id: format!("c_{tool}"),
        tool: tool.into(),
        input,
        output: Value::Null,
        is_error: false,
        duration_ms: 0,
        subagent: None,
    }
}

fn expected(tool: &str, input: Option<Value>) -> ExpectedCall {
    ExpectedCall {
        tool: tool.into(),
        input,
    }
}

#[test]
fn argument_modes_compare_exactly_as_a_subset_or_not_at_all() {
    let actual = json!({"pr": {"repo": "api", "number": 7}, "draft": false});
    let cases = [
        (
            ArgMode::Exact,
            json!({"pr": {"repo": "api", "number": 7}}),
            false,
        ),
        (ArgMode::Exact, actual.clone(), true),
        (ArgMode::Subset, json!({"pr": {"number": 7}}), true),
        (ArgMode::Subset, json!({"pr": {"number": 8}}), false),
        (ArgMode::Subset, json!({"missing": 1}), false),
        (ArgMode::Ignore, json!({"anything": true}), true),
    ];
    let got: Vec<bool> = cases
        .iter()
        .map(|(mode, expected, _)| args_match(*mode, expected, &actual))
        .collect();
    let want: Vec<bool> = cases.iter().map(|(_, _, want)| *want).collect();
    assert_eq!(got, want);
}

#[test]
fn json_paths_reach_keys_indexes_and_quoted_keys() {
    let value = json!({"a": {"b": [10, {"c d": "x"}]}});
    assert_eq!(
        [
            json_path(&value, "$.a.b[0]"),
            json_path(&value, "$.a.b[1]['c d']"),
            json_path(&value, "$.a.missing"),
            json_path(&value, "a.b"),
        ],
        [Some(&json!(10)), Some(&json!("x")), None, None]
    );
}

#[test]
fn trajectory_scores_give_partial_credit_per_mode() {
    let actual = [
        call("search", json!({"q": "rust"})),
        call("open", json!({"id": 1})),
        call("summarize", json!({})),
    ];
    let plan = [
        expected("open", None),
        expected("search", Some(json!({"q": "rust"}))),
    ];
    let score = |mode| {
        let s = score_trajectory(&plan, &actual, mode, ArgMode::Subset);
        (s.matched, s.recall, s.strict_pass)
    };
    assert_eq!(
        [
            score(OrderMode::Exact),
            score(OrderMode::InOrder),
            score(OrderMode::AnyOrder)
        ],
        [(1, 0.5, false), (1, 0.5, false), (2, 1.0, true)]
    );
    let wrong_args = score_trajectory(
        &[expected("search", Some(json!({"q": "go"})))],
        &actual,
        OrderMode::AnyOrder,
        ArgMode::Subset,
    );
    assert_eq!((wrong_args.matched, wrong_args.f1), (0, 0.0));
}

#[tokio::test]
async fn a_step_without_succeeded_is_checked_for_success_and_every_assertion_is_reported() {
    let observed = StepObservation {
        message: "hi".into(),
        succeeded: false,
        reply: String::new(),
        error: Some("the model is unreachable".into()),
        tool_calls: Vec::new(),
        approvals_requested: Vec::new(),
        model_steps: 1,
        duration_ms: 5,
        usage: None,
        result: None,
        files: Default::default(),
        verdicts: Default::default(),
    };
    let results = evaluate(
        &[
            Assertion::ReplyIncludes("hello".into()),
            Assertion::MaxTokens(10),
        ],
        &observed,
        std::path::Path::new("."),
    )
    .await;
    let summary: Vec<(String, bool, String)> = results
        .into_iter()
        .map(|r| (r.kind, r.passed, r.message))
        .collect();
    assert_eq!(
        summary,
        [
            (
                "succeeded".to_string(),
                false,
                "the turn failed: the model is unreachable".to_string()
            ),
            (
                "reply_includes".to_string(),
                false,
                "the reply does not include \"hello\"".to_string()
            ),
            (
                "max_tokens".to_string(),
                false,
                "the provider reported no usage, so the token count is unknown".to_string()
            ),
        ]
    );
}
