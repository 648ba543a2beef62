//! The `command` assertion: a program of any language, run in the project folder with the
//! step's observation (JSON) on stdin; it passes on exit 0 and its stdout is the reason.

use std::path::Path;
use std::time::Duration;

use folio_agent::tools::process::{Outcome, resolve_program, run_in_group, tail_lines};
use folio_protocol::StepObservation;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The characters of stdout kept as the reason (the rest is cut, with a note).
const REASON_CAP: usize = 2000;

/// Runs `argv` in `project_dir` with `observed` on stdin: whether it passed, what it did
/// (exit code, stdout, stderr tail) and the reason.
pub(crate) async fn run_check(
    argv: &[String],
    timeout_secs: u64,
    observed: &StepObservation,
    project_dir: &Path,
) -> (bool, Value, String) {
    let Some((program, args)) = argv.split_first() else {
        return (false, Value::Null, "the command is empty".into());
    };
    let mut command = tokio::process::Command::new(resolve_program(program, project_dir));
    command.args(args).current_dir(project_dir);
    let input = serde_json::to_vec(observed).unwrap_or_default();
    let timeout = Duration::from_secs(timeout_secs);
    let finished = match run_in_group(command, Some(input), timeout, &CancellationToken::new())
        .await
    {
        Ok(finished) => finished,
        Err(err) => {
            return (
                false,
                Value::Null,
                format!(
                    "cannot start `{program}` in {}: {err} (a bare name is looked up on PATH, a relative path is relative to the project folder)",
                    project_dir.display()
                ),
            );
        }
    };
    let reason = bounded(finished.stdout.trim());
    let stderr = tail_lines(&finished.stderr, 5);
    let (passed, exit, message) = match finished.outcome {
        Outcome::Exited(status) if status.success() => (
            true,
            status.code(),
            if reason.is_empty() {
                format!("`{program}` exited 0")
            } else {
                reason.clone()
            },
        ),
        Outcome::Exited(status) => {
            let code = status
                .code()
                .map_or_else(|| "a signal".to_string(), |code| format!("status {code}"));
            let detail = match (reason.is_empty(), stderr.is_empty()) {
                (false, _) => reason.clone(),
                (true, false) => format!("stderr: {stderr}"),
                (true, true) => "no output".to_string(),
            };
            (
                false,
                status.code(),
                format!("`{program}` exited with {code}: {detail}"),
            )
        }
        Outcome::TimedOut | Outcome::Cancelled => (
            false,
            None,
            format!(
                "`{program}` ran past its timeout of {timeout_secs}s and was stopped: raise timeout_secs of the assertion"
            ),
        ),
    };
    (
        passed,
        json!({"exitCode": exit, "stdout": reason, "stderr": stderr}),
        message,
    )
}

/// `text` cut to [`REASON_CAP`] characters, with a note when it was longer.
fn bounded(text: &str) -> String {
    match text.char_indices().nth(REASON_CAP) {
        Some((end, _)) => format!("{}… [cut at {REASON_CAP} characters]", &text[..end]),
        None => text.to_string(),
    }
}
