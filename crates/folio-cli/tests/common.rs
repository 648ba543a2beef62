//! Helpers shared by the `folio` binary's end-to-end tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

use folio_protocol::{EvalRun, RunResult};
use folio_test_support::read_wire;
#[allow(unused_imports)]
pub use folio_test_support::{Project, project, write_files};
use serde_json::Value;

/// The `folio` binary under test.
pub fn folio_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin!("folio").to_path_buf()
}

/// A `folio` command with the mock server's OpenAI base URL and a test key.
pub fn folio(base_url: &str) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(folio_bin());
    command
        .env_remove("FOLIO_MODEL")
        .env("OPENAI_API_KEY", "test-key")
        .env("OPENAI_BASE_URL", base_url)
        .kill_on_drop(true);
    command
}

/// Runs `folio run --json` on `dir` and returns the process output.
pub async fn run_json(base_url: &str, dir: &Path, message: &str) -> Output {
    folio(base_url)
        .args(["run", "--json", "--message", message, "--dir"])
        .arg(dir)
        .output()
        .await
        .unwrap()
}

/// The `--json` result of a run, read exactly as a [`RunResult`] ([`read_wire`]).
pub fn result_of(output: &Output) -> RunResult {
    let value: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "stdout is not the result JSON ({err}); stderr:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    read_wire(&value)
}

/// `(tool, is_error, output-or-error)` of every tool call of a result.
pub fn tool_outputs(result: &RunResult) -> Vec<(String, bool, Value)> {
    result
        .tool_calls
        .iter()
        .map(|call| (call.tool.clone(), call.is_error, call.output.clone()))
        .collect()
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

/// The run `folio eval --json` printed, read exactly as an [`EvalRun`].
pub fn run_of(output: &Output) -> EvalRun {
    let value: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "stdout is not the run JSON ({err}); stdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    read_wire(&value)
}

/// The name of every template, as `folio init --list --json` prints them.
pub fn init_templates() -> Vec<String> {
    let output = std::process::Command::new(folio_bin())
        .args(["init", "--list", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let listed: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    listed
        .iter()
        .map(|entry| entry["name"].as_str().unwrap().to_string())
        .collect()
}
