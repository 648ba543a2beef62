//! Helpers shared by the `folio eval` end-to-end tests.
#![allow(dead_code)]

use std::path::Path;
use std::process::Output;

use serde_json::Value;

#[path = "../common.rs"]
mod common;
// Shared by several test binaries; each uses a different part.
#[allow(unused_imports)]
pub use common::{Project, folio, folio_bin, project, write_files};

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

/// Runs `folio eval --dir DIR ARGS…` against the mock model at `base_url`.
pub async fn eval(base_url: &str, dir: &Path, args: &[&str]) -> Output {
    folio(base_url)
        .arg("eval")
        .arg("--dir")
        .arg(dir)
        .args(args)
        .output()
        .await
        .unwrap()
}

/// The run `folio eval --json` printed.
pub fn run_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "stdout is not the run JSON ({err}); stdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// `(kind, passed)` of every assertion of step `step` of the first attempt of case `case`.
pub fn verdicts(run: &Value, case: usize, step: usize) -> Vec<(String, bool)> {
    run["cases"][case]["attempts"][0]["steps"][step]["assertions"]
        .as_array()
        .unwrap_or_else(|| panic!("no assertions in {run:#}"))
        .iter()
        .map(|a| {
            (
                a["kind"].as_str().unwrap().to_string(),
                a["passed"].as_bool().unwrap(),
            )
        })
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
