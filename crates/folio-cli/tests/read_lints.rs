//! `ReadLints` end to end: `folio run` with the mock model calling ReadLints over a session
//! workspace seeded with planted errors, linted by real linters (ruff from PyPI, in its JSON and
//! SARIF formats; shellcheck from Debian, gcc text; rustc's JSON; ESLint from npm, its JSON;
//! clippy through cargo's JSON messages), and the failures a user can meet (a linter that is
//! not installed, one that hangs, paths outside the workspace).

mod common;

use std::path::PathBuf;

use common::*;
use folio_test_support::{MockModelServer, MockReply};
use pretty_assertions::assert_eq;
use serde_json::json;

/// The program `scripts/install-test-deps` installed at `path` under `target/test-deps`.
fn test_dep(path: &str) -> String {
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/test-deps")
        .join(path);
    assert!(
        bin.is_file(),
        "{} is missing: run scripts/install-test-deps first",
        bin.display()
    );
    bin.canonicalize().unwrap().display().to_string()
}

/// The ruff that `scripts/install-test-deps` installs.
fn ruff() -> String {
    test_dep("tools/bin/ruff")
}

const BAD_PY: &str = "import os\n\n\ndef f(x):\n    return x\n";
const BAD_SH: &str = "#!/bin/sh\necho $1\ncd /tmp\n";
const BAD_RS: &str = "pub fn f() -> u32 { \"no\" }\n";

#[tokio::test]
async fn real_linters_report_planted_errors_as_uniform_diagnostics() {
    let ruff = ruff();
    let dir = project(&format!(
        r#"model = "openai:gpt-test"

[tools.read_lints]
commands = [
  {{ command = ["{ruff}", "check", "--output-format=json", "--no-cache", "--isolated"], format = "ruff", files = "**/*.py" }},
  {{ name = "ruff-sarif", command = ["{ruff}", "check", "--output-format=sarif", "--no-cache", "--isolated"], format = "sarif", files = "**/*.py" }},
  {{ command = ["shellcheck", "-f", "gcc"], format = "text", files = "**/*.sh" }},
  {{ command = ["rustc", "--error-format=json", "--emit=metadata", "--crate-type=lib", "-o", "/dev/null"], format = "rustc", files = "**/*.rs" }},
]
"#
    ));
    write_files(
        dir.path(),
        &[
            ("agent/sandbox/workspace/src/bad.py", BAD_PY),
            ("agent/sandbox/workspace/src/good.py", "print('fine')\n"),
            ("agent/sandbox/workspace/bad.sh", BAD_SH),
            ("agent/sandbox/workspace/bad.rs", BAD_RS),
        ],
    );
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([
        ("ReadLints", json!({})),
        ("ReadLints", json!({"paths": ["src/good.py"]})),
        ("ReadLints", json!({"paths": ["./src/../bad.sh"]})),
        ("ReadLints", json!({"paths": ["../elsewhere"]})),
        ("ReadLints", json!({"paths": ["missing.py"]})),
    ]));
    mock.push(MockReply::text("Linted."));
    let output = run_json(&mock.openai_base_url(), dir.path(), "lint").await;
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        mock.requests()[0]
            .tool_names()
            .contains(&"ReadLints".to_string())
    );
    let linters = "ruff, ruff-sarif, shellcheck, rustc";
    let sh = "bad.sh:2:6: info: Double quote to prevent globbing and word splitting. [shellcheck SC2086]\n\
              bad.sh:3:1: warning: Use 'cd ... || exit' or 'cd ... || return' in case cd fails. [shellcheck SC2164]\n";
    assert_eq!(
        tool_outputs(&result_of(&output)),
        vec![
            (
                "ReadLints".into(),
                false,
                json!(format!(
                    "bad.rs:1:21: error: mismatched types [rustc E0308]\n{sh}\
                     src/bad.py:1:8: error: `os` imported but unused [ruff F401]\n\
                     src/bad.py:1:8: error: `os` imported but unused [ruff-sarif F401]\n\
                     5 diagnostics (3 errors, 1 warnings, 1 info) from {linters}"
                ))
            ),
            (
                "ReadLints".into(),
                false,
                json!(format!("No diagnostics from {linters}."))
            ),
            (
                "ReadLints".into(),
                false,
                json!(format!(
                    "{sh}2 diagnostics (0 errors, 1 warnings, 1 info) from {linters}"
                ))
            ),
            (
                "ReadLints".into(),
                true,
                json!(
                    "path \"../elsewhere\" is outside the session workspace; pass paths inside it"
                )
            ),
            ("ReadLints".into(), true, json!("not found: missing.py")),
        ]
    );
}

const BAD_JS: &str = "let count = 1;\nif (count == 2) {\n  missing();\n}\nconst unused = 0;\n";
const BROKEN_JS: &str = "let = ;\n";
const PLANTED_CRATE: &str =
    "[package]\nname = \"planted\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";
const CLIPPY_RS: &str = "pub fn total(values: &Vec<u32>) -> u32 {\n    values.iter().sum()\n}\n\npub fn area(r: f64) -> f64 {\n    3.14 * r * r\n}\n";

#[tokio::test]
async fn eslint_and_clippy_report_planted_errors_as_uniform_diagnostics() {
    let eslint = test_dep("eslint/node_modules/eslint/bin/eslint.js");
    // ESLint without a config file, its rules on the command line; clippy over the planted
    // crate at the workspace root, through cargo's JSON messages.
    let dir = project(&format!(
        r#"model = "openai:gpt-test"

[tools.read_lints]
commands = [
  {{ name = "eslint", command = ["node", "{eslint}", "--no-config-lookup", "--format", "json", "--rule", '{{"no-unused-vars": "error", "no-undef": "error", "eqeqeq": "warn"}}'], format = "eslint", files = "**/*.js" }},
  {{ name = "clippy", command = ["cargo", "clippy", "--quiet", "--offline", "--message-format=json"], format = "rustc" }},
]
"#
    ));
    write_files(
        dir.path(),
        &[
            ("agent/sandbox/workspace/web/bad.js", BAD_JS),
            ("agent/sandbox/workspace/web/broken.js", BROKEN_JS),
            ("agent/sandbox/workspace/Cargo.toml", PLANTED_CRATE),
            ("agent/sandbox/workspace/src/lib.rs", CLIPPY_RS),
        ],
    );
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([("ReadLints", json!({}))]));
    mock.push(MockReply::text("Linted."));
    let output = run_json(&mock.openai_base_url(), dir.path(), "lint").await;
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        tool_outputs(&result_of(&output)),
        vec![(
            "ReadLints".into(),
            false,
            json!(
                "src/lib.rs:1:22: warning: writing `&Vec` instead of `&[_]` involves a new object where a slice will do [clippy clippy::ptr_arg]\n\
                 src/lib.rs:6:5: error: approximate value of `f{32, 64}::consts::PI` found [clippy clippy::approx_constant]\n\
                 web/bad.js:2:11: warning: Expected '===' and instead saw '=='. [eslint eqeqeq]\n\
                 web/bad.js:3:3: error: 'missing' is not defined. [eslint no-undef]\n\
                 web/bad.js:5:7: error: 'unused' is assigned a value but never used. [eslint no-unused-vars]\n\
                 web/broken.js:1:1: error: Parsing error: The keyword 'let' is reserved [eslint]\n\
                 6 diagnostics (4 errors, 2 warnings, 0 info) from eslint, clippy"
            )
        )]
    );
}

#[tokio::test]
async fn missing_and_hanging_linters_fail_clearly_and_output_is_bounded() {
    let ruff = ruff();
    let dir = project(&format!(
        r#"model = "openai:gpt-test"
tools = {{ allow = ["readLints"], read_lints = {{ max_diagnostics = 1, commands = [
  {{ command = ["{ruff}", "check", "--output-format=json", "--no-cache", "--isolated"], format = "ruff" }},
  {{ command = ["no-such-linter-folio"], format = "text" }},
  {{ name = "slow", command = ["sleep", "30"], format = "text", timeout_secs = 1 }},
] }} }}
"#
    ));
    write_files(
        dir.path(),
        &[
            ("agent/sandbox/workspace/a.py", BAD_PY),
            ("agent/sandbox/workspace/b.py", "import sys\n"),
        ],
    );
    let mock = MockModelServer::start().await;
    mock.push(MockReply::tool_calls([("ReadLints", json!({}))]));
    mock.push(MockReply::text("Linted."));
    let output = run_json(&mock.openai_base_url(), dir.path(), "lint").await;
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    // Only ReadLints was allowed (the file tools come with it, as for any non-file name).
    assert!(
        mock.requests()[0]
            .tool_names()
            .contains(&"ReadLints".to_string())
    );
    assert_eq!(
        tool_outputs(&result_of(&output)),
        vec![(
            "ReadLints".into(),
            true,
            json!(
                "ReadLints: 2 of 3 linters failed:\n\
                 no-such-linter-folio: could not start no-such-linter-folio: No such file or directory (os error 2) (is it installed? install it, or fix the program path in [tools.read_lints] commands[1].command in agent.toml)\n\
                 slow: ran past 1s and was killed (raise commands[2].timeout_secs or pass fewer paths)\n\n\
                 a.py:1:8: error: `os` imported but unused [ruff F401]\n\
                 … 1 more diagnostics not shown (pass paths to narrow the run, or raise [tools.read_lints] max_diagnostics)\n\
                 2 diagnostics (2 errors, 0 warnings, 0 info) from ruff, no-such-linter-folio, slow"
            )
        )]
    );
}
