//! `Shell`: `bash -c` in the session workspace, with output caps, a timeout, and the whole
//! process group killed on timeout, stop or preempt.

use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::process::Command;

use super::input;
use super::process::{Finished, Outcome, run_in_group};
use super::sandbox::SandboxPolicy;
use super::spill::spill_if_large;
use super::{Tool, ToolContext, ToolError, ToolOutput};

/// Seconds a command may run when the call names no timeout.
const DEFAULT_TIMEOUT_SECS: u64 = 120;
/// The longest timeout a call may ask for.
const MAX_TIMEOUT_SECS: u64 = 3600;

/// `Shell`'s arguments.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ShellInput {
    /// A bash command line.
    command: String,
    /// Kill the command after this many seconds (default 120).
    #[serde(rename = "timeoutSecs", alias = "timeout_secs", alias = "timeout")]
    timeout_secs: Option<u64>,
}

/// The `Shell` tool; with a [`SandboxPolicy`] every command runs confined (see `sandbox.rs`).
#[derive(Debug, Clone, Default)]
pub struct ShellTool {
    sandbox: Option<SandboxPolicy>,
}

impl ShellTool {
    /// A `Shell` whose commands run under `sandbox` (`None`: unconfined).
    pub fn new(sandbox: Option<SandboxPolicy>) -> Self {
        ShellTool { sandbox }
    }
}

#[async_trait::async_trait]
impl Tool for ShellTool {
    fn name(&self) -> &str {
        "Shell"
    }

    fn description(&self) -> &str {
        "Run a bash command in the session workspace. Returns stdout, stderr and the exit code."
    }

    fn input_schema(&self) -> Value {
        input::schema::<ShellInput>()
    }

    fn prepare(&self, input: Value) -> Result<Value, ToolError> {
        input::prepare::<ShellInput>(input)
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let ShellInput {
            command: command_line,
            timeout_secs,
        } = input::parse(input)?;
        let timeout_secs = timeout_secs
            .unwrap_or(DEFAULT_TIMEOUT_SECS)
            .clamp(1, MAX_TIMEOUT_SECS);
        let mut command = Command::new("bash");
        command
            .arg("-c")
            .arg(command_line)
            .current_dir(&ctx.workspace);
        // A sandboxed command gets a scratch directory of its own, removed afterwards.
        let scratch = match &self.sandbox {
            Some(policy) => {
                let scratch = Scratch::create()?;
                policy
                    .prepare(&ctx.workspace, &scratch.0)
                    .map_err(|err| ToolError(err.to_string()))?
                    .apply_to(&mut command);
                command.env("TMPDIR", &scratch.0);
                Some(scratch)
            }
            None => None,
        };
        let finished = run_in_group(
            command,
            None,
            Duration::from_secs(timeout_secs),
            &ctx.cancel,
        )
        .await;
        drop(scratch);
        let Finished {
            outcome,
            stdout,
            stderr,
        } = finished.map_err(|err| {
            ToolError(format!(
                "could not start bash in {}: {err}",
                ctx.workspace.display()
            ))
        })?;
        let mut text = stdout;
        if !stderr.is_empty() {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str("--- stderr ---\n");
            text.push_str(&stderr);
        }
        match outcome {
            Outcome::Cancelled => Err(ToolError("command cancelled: the turn was stopped".into())),
            Outcome::TimedOut => {
                let so_far = if text.is_empty() {
                    String::new()
                } else {
                    format!("; output so far:\n{}", spill_if_large(ctx, text).await?)
                };
                Err(ToolError(format!(
                    "command timed out after {timeout_secs} s and was killed{so_far}"
                )))
            }
            Outcome::Exited(status) => {
                let code = status
                    .code()
                    .map_or_else(|| "killed by a signal".to_string(), |c| c.to_string());
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&format!("[exit code: {code}]"));
                let text = spill_if_large(ctx, text).await?;
                if status.success() {
                    Ok(ToolOutput::Text(text))
                } else {
                    Err(ToolError(text))
                }
            }
        }
    }
}

/// A sandboxed command's scratch directory under the system temp dir, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn create() -> Result<Scratch, ToolError> {
        let dir = std::env::temp_dir().join(format!("folio-shell-{}", ulid::Ulid::generate()));
        std::fs::create_dir(&dir).map_err(|err| {
            ToolError(format!(
                "could not create the scratch directory {}: {err}",
                dir.display()
            ))
        })?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
