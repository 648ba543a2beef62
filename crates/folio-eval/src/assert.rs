//! Evaluating a step's assertions against what its turn did: every assertion is evaluated (no
//! stop at the first failure) and reported with what it expected and what it found.

use std::path::Path;

use folio_project::{ArgMode, Assertion, ExpectedCall, FileCheck, OrderMode, PathStep};
use folio_protocol::{AssertionResult, StepObservation, ToolCallRecord};
use serde_json::{Value, json};

use crate::command::run_check;
use crate::result::parse_result;

/// Evaluates `expect` against `observed`; `command` assertions run in `project_dir`. A step
/// without a `succeeded` assertion is also checked for `succeeded = true`, so a failed turn
/// never passes unnoticed.
pub async fn evaluate(
    expect: &[Assertion],
    observed: &StepObservation,
    project_dir: &Path,
) -> Vec<AssertionResult> {
    let implicit = (!expect.iter().any(|a| matches!(a, Assertion::Succeeded(_))))
        .then_some(Assertion::Succeeded(true));
    let mut results = Vec::new();
    for assertion in implicit.iter().chain(expect) {
        results.push(check(assertion, observed, project_dir).await);
    }
    results
}

/// The assertion's key and what it expects, as reports show them.
pub fn describe(assertion: &Assertion) -> (&'static str, Value) {
    match assertion {
        Assertion::Succeeded(expected) => ("succeeded", json!(expected)),
        Assertion::CalledTool {
            tool,
            input,
            args,
            paths,
            times,
        } => {
            let mut expected = json!({"tool": tool, "args": arg_mode_name(*args)});
            if let Some(input) = input {
                expected["input"] = input.clone();
            }
            if !paths.is_empty() {
                expected["paths"] = json!(paths);
            }
            if let Some(times) = times {
                expected["times"] = json!(times);
            }
            ("called_tool", expected)
        }
        Assertion::NotCalledTool(tool) => ("not_called_tool", json!(tool)),
        Assertion::ReplyIncludes(text) => ("reply_includes", json!(text)),
        Assertion::ReplyMatches(pattern) => ("reply_matches", json!(pattern)),
        Assertion::Trajectory {
            key,
            calls,
            mode,
            args,
            threshold,
        } => {
            let calls: Vec<Value> = calls
                .iter()
                .map(|call| match &call.input {
                    Some(input) => json!({"tool": call.tool, "input": input}),
                    None => json!(call.tool),
                })
                .collect();
            let mut expected = json!({"calls": calls, "mode": order_mode_name(*mode), "args": arg_mode_name(*args)});
            if let Some(threshold) = threshold {
                expected["threshold"] = json!(threshold);
            }
            (key, expected)
        }
        Assertion::MaxToolCalls(n) => ("max_tool_calls", json!(n)),
        Assertion::MaxTokens(n) => ("max_tokens", json!(n)),
        Assertion::MaxSteps(n) => ("max_steps", json!(n)),
        Assertion::MaxDurationSecs(n) => ("max_duration_secs", json!(n)),
        Assertion::File { path, check } => (
            "file",
            match check {
                FileCheck::Exists(exists) => json!({"path": path, "exists": exists}),
                FileCheck::Contains(text) => json!({"path": path, "contains": text}),
                FileCheck::Equals(text) => json!({"path": path, "equals": text}),
            },
        ),
        Assertion::ToolErrored(tool) => ("tool_errored", json!(tool)),
        Assertion::NoToolErrors => ("no_tool_errors", json!(true)),
        Assertion::ApprovalRequested(tool) => ("approval_requested", json!(tool)),
        Assertion::Command { argv, timeout_secs } => (
            "command",
            json!({"command": argv, "timeout_secs": timeout_secs}),
        ),
        Assertion::ResultSchema(schema) => ("result_schema", schema.clone()),
        Assertion::Judge {
            rubric,
            model,
            threshold,
        } => (
            "judge",
            json!({"rubric": rubric, "model": model, "threshold": threshold}),
        ),
    }
}

async fn check(
    assertion: &Assertion,
    observed: &StepObservation,
    project_dir: &Path,
) -> AssertionResult {
    let (kind, expected) = describe(assertion);
    let calls = &observed.tool_calls;
    let names = || -> Vec<&str> { calls.iter().map(|c| c.tool.as_str()).collect() };
    let verdict =
        |passed: bool, actual: Value, message: String| (passed, score(passed), actual, message);
    let (passed, score, actual, message) = match assertion {
        Assertion::Succeeded(expected) => verdict(
            observed.succeeded == *expected,
            match &observed.error {
                Some(error) => json!({"succeeded": observed.succeeded, "error": error}),
                None => json!(observed.succeeded),
            },
            match (&observed.error, expected) {
                (Some(error), true) => format!("the turn failed: {error}"),
                (None, true) => "the turn completed".into(),
                (_, false) if observed.succeeded => {
                    "the turn completed, but was expected to fail".into()
                }
                (_, false) => "the turn failed, as expected".into(),
            },
        ),
        Assertion::CalledTool {
            tool,
            input,
            args,
            paths,
            times,
        } => {
            let of_tool: Vec<&ToolCallRecord> = calls.iter().filter(|c| &c.tool == tool).collect();
            let matching = of_tool
                .iter()
                .filter(|c| {
                    input
                        .as_ref()
                        .is_none_or(|input| args_match(*args, input, &c.input))
                        && paths
                            .iter()
                            .all(|(path, value)| json_path(&c.input, path) == Some(value))
                })
                .count();
            let passed = match times {
                Some(times) => matching == *times as usize,
                None => matching > 0,
            };
            let inputs: Vec<&Value> = of_tool.iter().map(|c| &c.input).collect();
            let message = match (passed, of_tool.len(), times) {
                (true, _, _) => format!("{tool} was called as expected"),
                (false, 0, _) => format!("{tool} was not called (calls: {})", names().join(", ")),
                (false, _, Some(times)) => {
                    format!("{matching} matching call(s) of {tool}, expected exactly {times}")
                }
                (false, n, None) => format!("{tool} was called {n} time(s), but no input matched"),
            };
            verdict(
                passed,
                json!({"calls": inputs, "matching": matching}),
                message,
            )
        }
        Assertion::NotCalledTool(tool) => {
            let count = calls.iter().filter(|c| &c.tool == tool).count();
            verdict(
                count == 0,
                json!(names()),
                if count == 0 {
                    format!("{tool} was not called")
                } else {
                    format!("{tool} was called {count} time(s)")
                },
            )
        }
        Assertion::ReplyIncludes(text) => {
            let passed = observed.reply.contains(text.as_str());
            verdict(
                passed,
                json!(observed.reply),
                if passed {
                    format!("the reply includes {text:?}")
                } else {
                    format!("the reply does not include {text:?}")
                },
            )
        }
        Assertion::ReplyMatches(pattern) => {
            let passed = regex::Regex::new(pattern).is_ok_and(|re| re.is_match(&observed.reply));
            verdict(
                passed,
                json!(observed.reply),
                if passed {
                    format!("the reply matches /{pattern}/")
                } else {
                    format!("the reply does not match /{pattern}/")
                },
            )
        }
        Assertion::Trajectory {
            calls: expected_calls,
            mode,
            args,
            threshold,
            ..
        } => {
            let scored = score_trajectory(expected_calls, calls, *mode, *args);
            let passed = match threshold {
                Some(threshold) => scored.f1 >= *threshold,
                None => scored.strict_pass,
            };
            let message = format!(
                "{} of {} expected call(s) matched {} ({} actual): precision {:.2}, recall {:.2}, F1 {:.2}",
                scored.matched,
                expected_calls.len(),
                order_mode_name(*mode),
                calls.len(),
                scored.precision,
                scored.recall,
                scored.f1
            );
            (
                passed,
                scored.f1,
                json!({"calls": names(), "precision": scored.precision, "recall": scored.recall, "f1": scored.f1}),
                message,
            )
        }
        Assertion::MaxToolCalls(max) => {
            let n = calls.len() as u64;
            verdict(
                n <= *max,
                json!(n),
                format!("{n} tool call(s), at most {max} allowed"),
            )
        }
        Assertion::MaxTokens(max) => match observed.usage {
            Some(usage) => {
                let total = usage.input_tokens
                    + usage.output_tokens
                    + usage.cache_read_tokens
                    + usage.cache_write_tokens;
                verdict(
                    total <= *max,
                    json!(total),
                    format!("{total} token(s), at most {max} allowed"),
                )
            }
            None => verdict(
                false,
                Value::Null,
                "the provider reported no usage, so the token count is unknown".into(),
            ),
        },
        Assertion::MaxSteps(max) => {
            let n = u64::from(observed.model_steps);
            verdict(
                n <= *max,
                json!(n),
                format!("{n} model call(s), at most {max} allowed"),
            )
        }
        Assertion::MaxDurationSecs(max) => {
            let secs = observed.duration_ms as f64 / 1000.0;
            verdict(
                secs <= *max,
                json!(secs),
                format!("the turn took {secs:.3}s, at most {max}s allowed"),
            )
        }
        Assertion::File { path, check } => match observed.files.get(path) {
            None => verdict(
                false,
                Value::Null,
                format!(
                    "{path} was not read after the turn (a stored run re-scored with a new file assertion): run the eval again"
                ),
            ),
            Some(content) => {
                let (passed, message) = match (check, content) {
                    (FileCheck::Exists(exists), found) => (
                        found.is_some() == *exists,
                        format!(
                            "{path} {}",
                            if found.is_some() {
                                "exists"
                            } else {
                                "does not exist"
                            }
                        ),
                    ),
                    (_, None) => (false, format!("{path} does not exist")),
                    (FileCheck::Contains(text), Some(found)) => (
                        found.contains(text.as_str()),
                        if found.contains(text.as_str()) {
                            format!("{path} contains {text:?}")
                        } else {
                            format!("{path} does not contain {text:?}")
                        },
                    ),
                    (FileCheck::Equals(text), Some(found)) => (
                        found == text,
                        if found == text {
                            format!("{path} is as expected")
                        } else {
                            format!("{path} differs from the expected text")
                        },
                    ),
                };
                verdict(passed, json!(content), message)
            }
        },
        Assertion::ToolErrored(tool) => {
            let errors: Vec<&Value> = calls
                .iter()
                .filter(|c| &c.tool == tool && c.is_error)
                .map(|c| &c.output)
                .collect();
            let passed = !errors.is_empty();
            verdict(
                passed,
                json!(errors),
                if passed {
                    format!("a call of {tool} ended in an error")
                } else {
                    format!("no call of {tool} ended in an error")
                },
            )
        }
        Assertion::NoToolErrors => {
            let errors: Vec<Value> = calls
                .iter()
                .filter(|c| c.is_error)
                .map(|c| json!({"tool": c.tool, "error": c.output}))
                .collect();
            let passed = errors.is_empty();
            let message = if passed {
                "no tool call ended in an error".to_string()
            } else {
                format!("{} tool call(s) ended in an error", errors.len())
            };
            verdict(passed, json!(errors), message)
        }
        Assertion::ApprovalRequested(tool) => {
            let passed = observed.approvals_requested.iter().any(|t| t == tool);
            verdict(
                passed,
                json!(observed.approvals_requested),
                if passed {
                    format!("a call of {tool} asked for approval")
                } else {
                    format!("no call of {tool} asked for approval")
                },
            )
        }
        Assertion::Command { argv, timeout_secs } => {
            let (passed, actual, message) =
                run_check(argv, *timeout_secs, observed, project_dir).await;
            verdict(passed, actual, message)
        }
        Assertion::ResultSchema(schema) => {
            let (passed, message) = match (
                parse_result(&observed.reply),
                folio_project::compile_schema(schema),
            ) {
                (Err(err), _) => (
                    false,
                    format!(
                        "the reply is not JSON ({err}): a step with a result_schema needs a JSON reply, bare or in a ```json block"
                    ),
                ),
                (Ok(_), Err(err)) => (false, format!("the result_schema is {err}")),
                (Ok(result), Ok(validator)) => {
                    let errors: Vec<String> = validator
                        .iter_errors(&result)
                        .take(5)
                        .map(|err| match err.instance_path().as_str() {
                            "" => err.to_string(),
                            at => format!("{at}: {err}"),
                        })
                        .collect();
                    if errors.is_empty() {
                        (true, "the reply's JSON satisfies the result_schema".into())
                    } else {
                        (
                            false,
                            format!(
                                "the reply's JSON does not satisfy the result_schema: {}",
                                errors.join("; ")
                            ),
                        )
                    }
                }
            };
            verdict(passed, json!(observed.reply), message)
        }
        Assertion::Judge {
            rubric, threshold, ..
        } => match observed.verdicts.get(rubric) {
            Some(verdict) => (
                verdict.pass && verdict.score >= *threshold,
                verdict.score,
                json!(verdict),
                format!(
                    "the judge ({}) scored {:.2} (pass at {threshold:.2}): {}",
                    verdict.model, verdict.score, verdict.reasoning
                ),
            ),
            None => verdict(
                false,
                Value::Null,
                "no verdict of the judge was recorded for this rubric: run the eval again".into(),
            ),
        },
    };
    AssertionResult {
        kind: kind.to_string(),
        passed,
        score,
        expected,
        actual,
        message,
    }
}

fn score(passed: bool) -> f64 {
    if passed { 1.0 } else { 0.0 }
}

fn arg_mode_name(mode: ArgMode) -> &'static str {
    match mode {
        ArgMode::Exact => "exact",
        ArgMode::Subset => "subset",
        ArgMode::Ignore => "ignore",
    }
}

fn order_mode_name(mode: OrderMode) -> &'static str {
    match mode {
        OrderMode::Exact => "exact",
        OrderMode::InOrder => "in_order",
        OrderMode::AnyOrder => "any_order",
    }
}

/// Whether `actual` matches `expected` under `mode`.
pub fn args_match(mode: ArgMode, expected: &Value, actual: &Value) -> bool {
    match mode {
        ArgMode::Exact => expected == actual,
        ArgMode::Ignore => true,
        ArgMode::Subset => is_subset(expected, actual),
    }
}

/// Every key of an expected object is in the actual one with a matching value; arrays match
/// element by element; other values are equal.
fn is_subset(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(expected), Value::Object(actual)) => expected
            .iter()
            .all(|(key, value)| actual.get(key).is_some_and(|found| is_subset(value, found))),
        (Value::Array(expected), Value::Array(actual)) => {
            expected.len() == actual.len()
                && expected.iter().zip(actual).all(|(e, a)| is_subset(e, a))
        }
        _ => expected == actual,
    }
}

/// The value at a JSON path (`$.a.b[0]`) of `value`; `None` when the path does not lead anywhere
/// (or is not a valid path: discovery refuses those).
pub fn json_path<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    let steps = folio_project::parse_json_path(path).ok()?;
    steps.iter().try_fold(value, |value, step| match step {
        PathStep::Key(key) => value.get(key),
        PathStep::Index(index) => value.get(index),
    })
}

/// The score of a trajectory: matched calls, precision, recall, F1 and the mode's strict verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct TrajectoryScore {
    /// Expected calls matched by actual ones.
    pub matched: usize,
    /// Matched / actual calls (1 when both are empty).
    pub precision: f64,
    /// Matched / expected calls (1 when none were expected).
    pub recall: f64,
    /// The harmonic mean of precision and recall.
    pub f1: f64,
    /// The mode's all-or-nothing rule: `exact` equal sequences, `in_order` the expected calls as
    /// a subsequence, `any_order` every expected call present.
    pub strict_pass: bool,
}

/// Scores `actual` calls against `expected` ones under `mode` and `args`.
pub fn score_trajectory(
    expected: &[ExpectedCall],
    actual: &[ToolCallRecord],
    mode: OrderMode,
    args: ArgMode,
) -> TrajectoryScore {
    let matches = |e: &ExpectedCall, a: &ToolCallRecord| {
        e.tool == a.tool
            && e.input
                .as_ref()
                .is_none_or(|input| args_match(args, input, &a.input))
    };
    let matched = match mode {
        OrderMode::Exact | OrderMode::InOrder => {
            // Longest common subsequence under `matches`.
            let mut table = vec![vec![0usize; actual.len() + 1]; expected.len() + 1];
            for (i, e) in expected.iter().enumerate() {
                for (j, a) in actual.iter().enumerate() {
                    table[i + 1][j + 1] = if matches(e, a) {
                        table[i][j] + 1
                    } else {
                        table[i][j + 1].max(table[i + 1][j])
                    };
                }
            }
            table[expected.len()][actual.len()]
        }
        OrderMode::AnyOrder => {
            let mut used = vec![false; actual.len()];
            expected
                .iter()
                .filter(|e| {
                    let found = actual
                        .iter()
                        .enumerate()
                        .find(|(j, a)| !used[*j] && matches(e, a));
                    found.map(|(j, _)| used[j] = true).is_some()
                })
                .count()
        }
    };
    let ratio = |part: usize, whole: usize| {
        if whole == 0 {
            if part == 0 { 1.0 } else { 0.0 }
        } else {
            part as f64 / whole as f64
        }
    };
    let precision = if actual.is_empty() && !expected.is_empty() {
        0.0
    } else {
        ratio(matched, actual.len())
    };
    let recall = ratio(matched, expected.len());
    let f1 = if precision + recall == 0.0 {
        0.0
    } else {
        2.0 * precision * recall / (precision + recall)
    };
    let strict_pass = match mode {
        OrderMode::Exact => matched == expected.len() && matched == actual.len(),
        OrderMode::InOrder | OrderMode::AnyOrder => matched == expected.len(),
    };
    TrajectoryScore {
        matched,
        precision,
        recall,
        f1,
        strict_pass,
    }
}
