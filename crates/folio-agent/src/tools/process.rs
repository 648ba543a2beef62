//! Child processes of tools: each runs in its own process group with capped output, a timeout
//! and the turn's cancellation; on timeout or cancel the whole group is killed (shared by
//! `Shell`, authored tools and generated skills).

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

/// Bytes kept per output stream; the rest is counted and dropped.
pub(crate) const STREAM_CAP: usize = 4 * 1024 * 1024;

/// How a child process ended.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// It exited (or was killed by a signal it did not get from us).
    Exited(ExitStatus),
    /// It ran past its timeout and its process group was killed.
    TimedOut,
    /// The turn was stopped and its process group was killed.
    Cancelled,
}

/// A finished child: how it ended and what it printed.
#[derive(Debug)]
pub(crate) struct Finished {
    /// How it ended.
    pub outcome: Outcome,
    /// Its stdout (lossy UTF-8, capped).
    pub stdout: String,
    /// Its stderr (lossy UTF-8, capped).
    pub stderr: String,
}

/// Runs `command` in a new process group, feeding it `stdin` (or nothing), until it exits, the
/// timeout passes or `cancel` fires; the last two kill the whole group. Fails only when the
/// process cannot be started.
pub(crate) async fn run_in_group(
    mut command: Command,
    stdin: Option<Vec<u8>>,
    timeout: Duration,
    cancel: &CancellationToken,
) -> std::io::Result<Finished> {
    command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    let group = child.id();
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A child that exits without reading its input closes the pipe: that is not an error.
        tokio::spawn(async move {
            let _ = pipe.write_all(&bytes).await;
            let _ = pipe.shutdown().await;
        });
    }
    let stdout = read_capped(child.stdout.take());
    let stderr = read_capped(child.stderr.take());
    let outcome = tokio::select! {
        status = child.wait() => Outcome::Exited(status?),
        () = tokio::time::sleep(timeout) => Outcome::TimedOut,
        () = cancel.cancelled() => Outcome::Cancelled,
    };
    if !matches!(outcome, Outcome::Exited(_)) {
        kill_group(group);
        let _ = child.wait().await;
    }
    let (stdout, stderr) = tokio::join!(stdout, stderr);
    Ok(Finished {
        outcome,
        stdout,
        stderr,
    })
}

/// Kills the whole process group led by `pid` (the child and everything it started).
pub(crate) fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        // SAFETY: killpg only sends a signal; a stale group id fails with ESRCH, which is fine.
        unsafe {
            libc::killpg(pid, libc::SIGKILL);
        }
    }
}

/// Reads a child stream to the end, keeping at most [`STREAM_CAP`] bytes (lossy UTF-8).
pub(crate) async fn read_capped(stream: Option<impl AsyncRead + Unpin>) -> String {
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

/// The last `lines` lines of `text`, trimmed (for error messages carrying a stderr tail).
pub(crate) fn tail_lines(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.trim_end().lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
