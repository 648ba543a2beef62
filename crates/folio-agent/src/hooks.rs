//! Hooks at run time (`hooks/**/*.toml` are parsed by folio-project into
//! [`HookDefinition`]s): observe-only subprocesses that receive matching events after they are
//! recorded. They run in the background, one queue per hook (so each hook sees its events in
//! order), under a timeout that kills the process group; a failing or slow hook is logged and
//! skipped, and can never delay or change a turn.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use folio_fs::SharedError;
use folio_project::HookDefinition;
use folio_protocol::{Event, HookPayload};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::tools::host::{HostBroker, HostCaller, HostGrant};
use crate::tools::process::kill_group;

/// Hook runs remembered for [`HookDispatcher::recent_runs`].
const RECENT_RUNS: usize = 200;
/// Bytes of stderr kept for a failure message.
const STDERR_TAIL: usize = 2000;

/// How one hook run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookOutcome {
    /// Exit status 0.
    Succeeded,
    /// It could not start, exited non-zero, or was killed by the timeout.
    Failed(HookFailure),
}

/// Why a hook run failed; kept in [`HookRun`]s, which are cloned out of the dispatcher (so the
/// OS errors are [`SharedError`]s).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookFailure {
    /// The program could not be started (missing, not executable).
    #[error("cannot run {}: {source}", program.display())]
    Spawn {
        /// The program, as resolved against the hook's folder.
        program: PathBuf,
        /// The operating system's error.
        #[source]
        source: SharedError<std::io::Error>,
    },
    /// It exited with a non-zero status (or was killed by a signal).
    #[error("exited with {status}{}", if stderr.is_empty() { String::new() } else { format!(": {stderr}") })]
    Exited {
        /// Its exit status.
        status: ExitStatus,
        /// The end of what it wrote to stderr (at most 2000 bytes), trimmed; may be empty.
        stderr: String,
    },
    /// Waiting for it failed.
    #[error("wait failed: {0}")]
    Wait(#[source] SharedError<std::io::Error>),
    /// It ran past its `timeout_secs` and its process group was killed.
    #[error("timed out after {}s and was killed", after.as_secs())]
    TimedOut {
        /// The hook's timeout.
        after: Duration,
    },
}

/// One finished hook run, kept for logs and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookRun {
    /// The hook's name.
    pub hook: String,
    /// The event's type.
    pub event_type: String,
    /// The event's index in its session.
    pub index: u64,
    /// How it ended.
    pub outcome: HookOutcome,
    /// How long it ran.
    pub duration: Duration,
}

/// Sends recorded events to the hooks that subscribe to them, in the background.
#[derive(Clone, Default)]
pub struct HookDispatcher {
    queues: Vec<(Arc<HookDefinition>, mpsc::UnboundedSender<Queued>)>,
    recent: Arc<Mutex<VecDeque<HookRun>>>,
    pending: Arc<Pending>,
    /// The session's channel, added to every payload.
    channel: Option<String>,
    /// The session's purpose, added to every payload.
    purpose: Option<String>,
    /// Whether the session is a dry run, added to every payload.
    dry_run: bool,
    /// Issues the host API credentials of the session's hook runs.
    host: Option<Arc<dyn HostBroker>>,
}

/// One hook run waiting for its worker: the payload, and who grants it host access.
type Queued = (Arc<HookPayload>, Option<Arc<dyn HostBroker>>);

impl std::fmt::Debug for HookDispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookDispatcher")
            .field("hooks", &self.queues.len())
            .finish_non_exhaustive()
    }
}

impl HookDispatcher {
    /// A dispatcher running `hooks`; spawns one worker per hook on the current tokio runtime
    /// (without a runtime, or without hooks, it dispatches nothing).
    pub fn new(hooks: &[HookDefinition]) -> Self {
        let recent = Arc::new(Mutex::new(VecDeque::new()));
        let pending = Arc::new(Pending::default());
        let mut queues = Vec::new();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            for hook in hooks {
                let hook = Arc::new(hook.clone());
                let (tx, rx) = mpsc::unbounded_channel();
                runtime.spawn(worker(hook.clone(), rx, recent.clone(), pending.clone()));
                queues.push((hook, tx));
            }
        } else if !hooks.is_empty() {
            tracing::warn!(
                "hooks need a tokio runtime; {} hooks are disabled",
                hooks.len()
            );
        }
        HookDispatcher {
            queues,
            recent,
            pending,
            channel: None,
            purpose: None,
            dry_run: false,
            host: None,
        }
    }

    /// A dispatcher for one session: `channel` and `purpose` (`"eval"` for eval runs) are added
    /// to every payload it sends.
    pub fn for_session(&self, channel: Option<&str>, purpose: Option<&str>) -> Self {
        HookDispatcher {
            queues: self.queues.clone(),
            recent: self.recent.clone(),
            pending: self.pending.clone(),
            channel: channel.map(str::to_string).or_else(|| self.channel.clone()),
            purpose: purpose.map(str::to_string).or_else(|| self.purpose.clone()),
            dry_run: self.dry_run,
            host: self.host.clone(),
        }
    }

    /// Gives the session's hook runs host API credentials from `host`.
    pub fn with_host(mut self, host: Option<Arc<dyn HostBroker>>) -> Self {
        self.host = host;
        self
    }

    /// Adds `"dryRun": true` to every payload when `dry_run` (a dry-run session, e.g. an eval
    /// run with `--dry-run`), so hooks can tell that writes were not real.
    pub fn with_dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run |= dry_run;
        self
    }

    /// Whether any hook is configured.
    pub fn is_empty(&self) -> bool {
        self.queues.is_empty()
    }

    /// Queues `event` for every hook whose filter matches; returns at once.
    pub fn dispatch(&self, event: &Event) {
        let event_type = event.body.event_type();
        let mut payload = None;
        for (hook, queue) in &self.queues {
            if !hook.matches(event_type) {
                continue;
            }
            let payload = payload.get_or_insert_with(|| {
                Arc::new(HookPayload {
                    event: event.clone(),
                    channel: self.channel.clone(),
                    purpose: self.purpose.clone(),
                    dry_run: self.dry_run,
                })
            });
            self.pending.count.fetch_add(1, Ordering::SeqCst);
            if queue.send((payload.clone(), self.host.clone())).is_err() {
                self.pending.done();
                tracing::warn!(hook = %hook.name, "hook worker stopped; event dropped");
            }
        }
    }

    /// Waits until every queued hook run has finished, at most `timeout`; returns whether all
    /// did (a short-lived process such as `folio run` calls this before it exits).
    pub async fn flush(&self, timeout: Duration) -> bool {
        let drained = async {
            loop {
                let notified = self.pending.idle.notified();
                if self.pending.count.load(Ordering::SeqCst) == 0 {
                    return;
                }
                notified.await;
            }
        };
        tokio::time::timeout(timeout, drained).await.is_ok()
    }

    /// The most recent hook runs, oldest first.
    pub fn recent_runs(&self) -> Vec<HookRun> {
        self.recent
            .lock()
            .map(|runs| runs.iter().cloned().collect())
            .unwrap_or_default()
    }
}

/// Hook runs queued or running, and a wake-up for [`HookDispatcher::flush`].
#[derive(Default)]
struct Pending {
    count: AtomicUsize,
    idle: tokio::sync::Notify,
}

impl Pending {
    fn done(&self) {
        if self.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.idle.notify_waiters();
        }
    }
}

async fn worker(
    hook: Arc<HookDefinition>,
    mut queue: mpsc::UnboundedReceiver<Queued>,
    recent: Arc<Mutex<VecDeque<HookRun>>>,
    pending: Arc<Pending>,
) {
    while let Some((payload, host)) = queue.recv().await {
        let started = Instant::now();
        let grant = crate::tools::host::grant_for(
            host.as_ref(),
            HostCaller::Hook {
                hook: hook.name.clone(),
                session_id: payload.event.session_id.clone(),
                index: payload.event.index,
            },
        )
        .await;
        let outcome = run_hook(&hook, &payload, grant.as_ref()).await;
        // The hook's process has ended: its token stops working now.
        drop(grant);
        let event_type = payload.event.event_type().to_string();
        let index = payload.event.index;
        match &outcome {
            HookOutcome::Succeeded => {
                tracing::debug!(hook = %hook.name, event = %event_type, index, "hook ran");
            }
            HookOutcome::Failed(failure) => {
                tracing::warn!(hook = %hook.name, event = %event_type, index, "hook failed (skipped): {failure}");
            }
        }
        if let Ok(mut runs) = recent.lock() {
            if runs.len() == RECENT_RUNS {
                runs.pop_front();
            }
            runs.push_back(HookRun {
                hook: hook.name.clone(),
                event_type,
                index,
                outcome,
                duration: started.elapsed(),
            });
        }
        pending.done();
    }
}

async fn run_hook(
    hook: &HookDefinition,
    payload: &HookPayload,
    grant: Option<&HostGrant>,
) -> HookOutcome {
    let program = &hook.command[0];
    let program = if program.starts_with("./") || program.starts_with("../") {
        hook.dir.join(program)
    } else {
        std::path::PathBuf::from(program)
    };
    let mut command = tokio::process::Command::new(&program);
    command
        .args(&hook.command[1..])
        .current_dir(&hook.dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(grant) = grant {
        grant.apply(&mut command);
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) => {
            return HookOutcome::Failed(HookFailure::Spawn {
                program,
                source: err.into(),
            });
        }
    };
    let pid = child.id();
    let input = serde_json::to_vec(payload).unwrap_or_default();
    let stdin = child.stdin.take();
    let stderr = child.stderr.take();
    let run = async {
        if let Some(mut stdin) = stdin {
            // A hook that ignores its input may close stdin early; that is not a failure.
            let _ = stdin.write_all(&input).await;
            drop(stdin);
        }
        let mut err_text = Vec::new();
        if let Some(mut stderr) = stderr {
            let _ = stderr.read_to_end(&mut err_text).await;
        }
        let status = child.wait().await;
        (status, err_text)
    };
    match tokio::time::timeout(hook.timeout, run).await {
        Ok((Ok(status), _)) if status.success() => HookOutcome::Succeeded,
        Ok((Ok(status), stderr)) => {
            let text = String::from_utf8_lossy(&stderr);
            let text = text.trim();
            let tail = &text[text.floor_char_boundary(text.len().saturating_sub(STDERR_TAIL))..];
            HookOutcome::Failed(HookFailure::Exited {
                status,
                stderr: tail.to_string(),
            })
        }
        Ok((Err(err), _)) => HookOutcome::Failed(HookFailure::Wait(err.into())),
        Err(_) => {
            kill_group(pid);
            HookOutcome::Failed(HookFailure::TimedOut {
                after: hook.timeout,
            })
        }
    }
}
