//! Helpers shared by the `folio eval` end-to-end tests.
#![allow(dead_code)]

use std::process::Output;

use folio_protocol::{EvalRun, StepResult};

#[path = "../common.rs"]
mod common;
// Shared by several test binaries; each uses a different part.
#[allow(unused_imports)]
pub use common::{Project, eval, folio, folio_bin, project, run_of, write_files};

/// A host-workspace agent on the mock model, with `evals` (path under `evals/` → text).
pub fn eval_project(evals: &[(&str, &str)]) -> Project {
    let dir = project("model = \"openai:gpt-test\"\n");
    let files: Vec<(String, &str)> = evals
        .iter()
        .map(|(path, text)| (format!("evals/{path}"), *text))
        .collect();
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (p.as_str(), *t)).collect();
    write_files(dir.path(), &files);
    dir
}

/// Step `step` of the first attempt of case `case`.
pub fn step_of(run: &EvalRun, case: usize, step: usize) -> &StepResult {
    run.cases
        .get(case)
        .and_then(|case| case.attempts.first())
        .and_then(|attempt| attempt.steps.get(step))
        .unwrap_or_else(|| panic!("no step {step} in case {case} of {run:#?}"))
}

/// `(kind, passed)` of every assertion of step `step` of the first attempt of case `case`.
pub fn verdicts(run: &EvalRun, case: usize, step: usize) -> Vec<(String, bool)> {
    step_of(run, case, step)
        .assertions
        .iter()
        .map(|a| (a.kind.clone(), a.passed))
        .collect()
}

/// `(kind, passed)` pairs from a compact list.
pub fn expected(pairs: &[(&str, bool)]) -> Vec<(String, bool)> {
    pairs.iter().map(|(k, p)| (k.to_string(), *p)).collect()
}

/// Stdout and stderr as text, for failure messages.
pub fn texts(output: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The first four columns of the summary table's header and first `cases` rows of a report.
pub fn summary_rows(stdout: &str, cases: usize) -> Vec<Vec<&str>> {
    stdout
        .lines()
        .take(cases + 1)
        .map(|line| line.split_whitespace().take(4).collect())
        .collect()
}

/// The report's "Failures:" section (up to its blank line); panics naming the report when the
/// section is missing.
pub fn failures_section(stdout: &str) -> &str {
    stdout
        .split("Failures:\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .unwrap_or_else(|| panic!("no failures section: {stdout}"))
}
