//! `Shell`: `bash -c` in the session workspace, with output caps, a timeout, and the whole
//! process group killed on timeout, stop or preempt.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use super::args::{Arg, ArgType, ArgsExt};
use super::spill::spill_if_large;
use super::{Tool, ToolContext, ToolError, ToolOutput, prepare_with};

/// Bytes kept per output stream; the rest is counted and dropped.
const STREAM_CAP: usize = 4 * 1024 * 1024;
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

/// The `Shell` tool.
#[derive(Debug, Clone, Default)]
pub struct ShellTool;

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
        let command = args.str_arg("command").unwrap_or_default();
        let timeout_secs = args
            .u64_arg("timeoutSecs")
            .unwrap_or(DEFAULT_TIMEOUT_SECS)
            .clamp(1, MAX_TIMEOUT_SECS);
        let mut child = Command::new("bash")
            .arg("-c")
            .arg(command)
            .current_dir(&ctx.workspace)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|err| {
                ToolError(format!(
                    "could not start bash in {}: {err}",
                    ctx.workspace.display()
                ))
            })?;
        let group = child.id();
        let stdout = read_capped(child.stdout.take());
        let stderr = read_capped(child.stderr.take());
        let outcome = tokio::select! {
            status = child.wait() => Outcome::Exited(status),
            () = tokio::time::sleep(Duration::from_secs(timeout_secs)) => Outcome::TimedOut,
            () = ctx.cancel.cancelled() => Outcome::Cancelled,
        };
        if !matches!(outcome, Outcome::Exited(_)) {
            kill_group(group);
            let _ = child.wait().await;
        }
        let (stdout, stderr) = tokio::join!(stdout, stderr);
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
            Outcome::TimedOut => Err(ToolError(format!(
                "command timed out after {timeout_secs} s and was killed{}",
                if text.is_empty() {
                    String::new()
                } else {
                    format!("; output so far:\n{text}")
                }
            ))),
            Outcome::Exited(Err(err)) => Err(ToolError(format!("could not wait for bash: {err}"))),
            Outcome::Exited(Ok(status)) => {
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

enum Outcome {
    Exited(std::io::Result<std::process::ExitStatus>),
    TimedOut,
    Cancelled,
}

/// Kills the whole process group led by `pid` (bash and everything it started).
fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        // SAFETY: killpg only sends a signal; a stale group id fails with ESRCH, which is fine.
        unsafe {
            libc::killpg(pid, libc::SIGKILL);
        }
    }
}

/// Reads a child stream to the end, keeping at most `STREAM_CAP` bytes (lossy UTF-8).
async fn read_capped(stream: Option<impl AsyncRead + Unpin>) -> String {
    let Some(mut stream) = stream else {
        return String::new();
    };
    let mut kept = Vec::new();
    let mut dropped = 0usize;
    let mut buf = [0u8; 16 * 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = STREAM_CAP.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                dropped += n.saturating_sub(room);
            }
        }
    }
    let mut text = String::from_utf8_lossy(&kept).into_owned();
    if dropped > 0 {
        text.push_str(&format!("\n[{dropped} more bytes not kept]"));
    }
    text
}
