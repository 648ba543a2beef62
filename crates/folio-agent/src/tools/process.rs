//! Child processes of tools: each runs in its own process group with capped output, a timeout
//! and the turn's cancellation; on timeout or cancel the whole group is killed (shared by
//! `Shell`, authored tools and generated skills).

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

/// Bytes kept per output stream; the rest is counted and dropped.
pub(crate) const STREAM_CAP: usize = 4 * 1024 * 1024;

/// How a child process ended.
#[derive(Debug)]
pub enum Outcome {
    /// It exited (or was killed by a signal it did not get from us).
    Exited(ExitStatus),
    /// It ran past its timeout and its process group was killed.
    TimedOut,
    /// The turn was stopped and its process group was killed.
    Cancelled,
}

/// A finished child: how it ended and what it printed.
#[derive(Debug)]
pub struct Finished {
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
pub async fn run_in_group(
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
    // Drain both pipes while waiting: a child that fills a pipe buffer would block forever.
    let stdout = Capture::start(child.stdout.take());
    let stderr = Capture::start(child.stderr.take());
    let outcome = tokio::select! {
        status = child.wait() => Outcome::Exited(status?),
        () = tokio::time::sleep(timeout) => Outcome::TimedOut,
        () = cancel.cancelled() => Outcome::Cancelled,
    };
    if !matches!(outcome, Outcome::Exited(_)) {
        kill_group(group);
        let _ = child.wait().await;
    }
    // A process the child left running in the background may hold the pipes open: give the
    // readers a moment to see end-of-file, then keep what arrived.
    let (stdout, stderr) = tokio::join!(stdout.finish(), stderr.finish());
    Ok(Finished {
        outcome,
        stdout,
        stderr,
    })
}

/// The program of a configured command: a relative path with a `/` (`./x.py`, `bin/x`)
/// resolves against `base`; a bare name is looked up on `PATH`; an absolute path stays.
pub fn resolve_program(program: &str, base: &Path) -> PathBuf {
    let path = Path::new(program);
    if path.components().count() > 1 && path.is_relative() {
        base.join(path)
    } else {
        path.to_path_buf()
    }
}

/// Kills the whole process group led by `pid` (the child and everything it started); the one
/// process-group kill of the crate (tools, MCP stdio servers and hooks).
pub(crate) fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        // SAFETY: killpg only sends a signal; a stale group id fails with ESRCH, which is fine.
        unsafe {
            libc::killpg(pid, libc::SIGKILL);
        }
    }
}

/// How long readers may wait for end-of-file after the child itself has ended.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// A child stream read on its own task, keeping at most [`STREAM_CAP`] bytes.
struct Capture {
    kept: Arc<Mutex<(Vec<u8>, usize)>>,
    reader: Option<tokio::task::JoinHandle<()>>,
}

impl Capture {
    fn start(stream: Option<impl AsyncRead + Unpin + Send + 'static>) -> Capture {
        let kept = Arc::new(Mutex::new((Vec::new(), 0usize)));
        let reader = stream.map(|mut stream| {
            let kept = kept.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 16 * 1024];
                while let Ok(n @ 1..) = stream.read(&mut buf).await {
                    let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
                    let room = STREAM_CAP.saturating_sub(kept.0.len());
                    kept.0.extend_from_slice(&buf[..n.min(room)]);
                    kept.1 += n.saturating_sub(room);
                }
            })
        });
        Capture { kept, reader }
    }

    /// What was read (lossy UTF-8), with a note when bytes past the cap were dropped.
    async fn finish(self) -> String {
        if let Some(reader) = self.reader {
            let abort = reader.abort_handle();
            if tokio::time::timeout(DRAIN_GRACE, reader).await.is_err() {
                abort.abort();
            }
        }
        let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let mut text = String::from_utf8_lossy(&kept.0).into_owned();
        if kept.1 > 0 {
            text.push_str(&format!("\n[{} more bytes not kept]", kept.1));
        }
        text
    }
}

/// The last `lines` lines of `text`, trimmed (for error messages carrying a stderr tail).
pub fn tail_lines(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.trim_end().lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
