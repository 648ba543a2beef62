//! `folio call`: direct calls of authored tools print `{ok, result, isError}`; invalid input
//! names the failing field and exits 1.

mod common;

use std::process::Command;

use common::{folio_bin, write_files};
use folio_protocol::CallOutput;
use folio_test_support::read_wire;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_files(
        dir.path(),
        &[
            ("agent/instructions.md", "You add numbers.\n"),
            (
                "agent/tools/add.toml",
                r#"description = "Add two integers and return their sum."
command = ["python3", "add.py"]
effect = "read"
[input_schema]
type = "object"
required = ["a", "b"]
additionalProperties = false
properties.a = { type = "integer" }
properties.b = { type = "integer" }
"#,
            ),
            (
                "agent/tools/add.py",
                "import json, sys\nreq = json.load(sys.stdin)\nprint(json.dumps({'sum': req['input']['a'] + req['input']['b'], 'dryRun': req['context']['dryRun']}))\n",
            ),
            (
                "agent/tools/post.toml",
                r#"description = "Post a note to the team channel (a write tool)."
command = ["python3", "-c", "import sys; sys.stderr.write('cannot reach the channel\\n'); sys.exit(4)"]
dry_run_result = { note = "dry run: nothing posted" }
"#,
            ),
        ],
    );
    dir
}

/// Runs `folio call ARGS`: what it printed (read as a [`CallOutput`]; `None` when it printed
/// nothing), its stderr, its exit code.
fn call(dir: &std::path::Path, args: &[&str]) -> (Option<CallOutput>, String, i32) {
    let output = Command::new(folio_bin())
        .arg("call")
        .args(args)
        .arg("--dir")
        .arg(dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    let printed = (!stdout.trim().is_empty()).then(|| {
        let value: Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|err| panic!("stdout is not JSON ({err}): {stdout}\nstderr: {stderr}"));
        read_wire(&value)
    });
    (printed, stderr, output.status.code().unwrap_or(-1))
}

#[test]
fn a_valid_call_prints_the_result() {
    let dir = project();
    let (value, _, code) = call(dir.path(), &["add", "--input", r#"{"a": 2, "b": 40}"#]);
    assert_eq!(
        (value, code),
        (
            Some(CallOutput::new(json!({"sum": 42, "dryRun": false}), false)),
            0
        )
    );
}

#[test]
fn invalid_input_names_the_failing_field_and_exits_1() {
    let dir = project();
    let (value, stderr, code) = call(dir.path(), &["add", "--input", r#"{"a": "two", "b": 1}"#]);
    assert_eq!(code, 1);
    assert_eq!(
        value,
        Some(CallOutput::new(
            json!("invalid input: a: \"two\" is not of type \"integer\""),
            true
        ))
    );
    assert_eq!(
        stderr.trim(),
        "error: add: invalid input: a: \"two\" is not of type \"integer\""
    );
    let (value, _, code) = call(dir.path(), &["add", "--input", r#"{"a": 1}"#]);
    assert_eq!(code, 1);
    assert_eq!(
        value,
        Some(CallOutput::new(
            json!("invalid input: b: required field is missing"),
            true
        ))
    );
}

#[test]
fn a_failing_tool_reports_its_stderr_and_dry_run_skips_it() {
    let dir = project();
    let (value, _, code) = call(dir.path(), &["post", "--input", "{}"]);
    assert_eq!(code, 1);
    assert_eq!(
        value,
        Some(CallOutput::new(
            json!("post exited with code 4; stderr:\ncannot reach the channel"),
            true
        ))
    );
    let (value, _, code) = call(dir.path(), &["post", "--input", "{}", "--dry-run"]);
    assert_eq!(
        (value, code),
        (
            Some(CallOutput::new(
                json!({"note": "dry run: nothing posted"}),
                false
            )),
            0
        )
    );
}

#[test]
fn an_unknown_tool_is_a_one_line_error() {
    let dir = project();
    let (printed, stderr, code) = call(dir.path(), &["nope", "--input", "{}"]);
    assert_eq!((printed, code), (None, 1));
    assert!(
        stderr.contains("no authored tool \"nope\"") && stderr.contains("add, post"),
        "{stderr}"
    );
}
