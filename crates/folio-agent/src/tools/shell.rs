//! `Shell`: `bash -c` in the session workspace, with output caps, a timeout, and the whole
//! process group killed on timeout, stop or preempt.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use tokio::process::Command;

use super::args::{Arg, ArgType, ArgsExt};
use super::process::{Finished, Outcome, run_in_group};
use super::sandbox::SandboxPolicy;
use super::spill::spill_if_large;
use super::{Tool, ToolContext, ToolError, ToolOutput, prepare_with};

/// Seconds a command may run when the call names no timeout.
const DEFAULT_TIMEOUT_SECS: u64 = 120;
/// The longest timeout a call may ask for.
const MAX_TIMEOUT_SECS: u64 = 3600;

const ARGS: &[Arg] = &[
    Arg::new("command", ArgType::String, "A bash command line.").required(),
    Arg::new(
        "timeoutSecs",
        ArgType::Integer,
        "Kill the command after this many seconds (default 120).",
    )
    .aliases(&["timeout_secs", "timeout"]),
];

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
        super::args::schema(ARGS)
    }

    fn prepare(&self, input: Value) -> Result<Value, ToolError> {
        prepare_with(ARGS, input)
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Value::Object(args) = input else {
            return Err(ToolError("tool input must be a JSON object".into()));
        };
        let command_line = args.str_arg("command").unwrap_or_default();
        let timeout_secs = args
            .u64_arg("timeoutSecs")
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
