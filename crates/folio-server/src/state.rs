//! Session metadata on disk (`session.json`) and the ids of sessions and turns; where each
//! file lives is the state root's layout ([`StateRoot`], docs/http-api.md "Storage and crashes").
//!
//! The end of a turn is not written to `session.json`: the log records it (synced) and readers
//! settle the stored status from the log's last event ([`SessionMeta::settle`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use crate::error::OpenError;
use chrono::{DateTime, Utc};
use folio_agent::tools::SessionContext;
use folio_protocol::{Event, EventBody, SessionMode, SessionStatus, Usage};
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

/// A new session id: `ses_` + a 26-character ULID.
pub fn new_session_id() -> String {
    format!("ses_{}", ulid::Ulid::generate())
}

/// Whether `id` has the form `ses_` + 26 ULID characters (and so is safe as a path component).
pub fn valid_session_id(id: &str) -> bool {
    id.strip_prefix("ses_")
        .is_some_and(|rest| rest.len() == 26 && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// A new turn id: `turn_` + a ULID.
pub fn new_turn_id() -> String {
    format!("turn_{}", ulid::Ulid::generate())
}

/// The directory everything of one agent is stored under; its layout (sessions, traces,
/// artifacts, memory) is owned by [`folio_agent::StateLayout`].
pub type StateRoot = folio_agent::StateLayout;

/// `session.json`: a session's metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionMeta {
    /// `ses_…`.
    pub session_id: String,
    /// `chat` or `task`.
    pub mode: SessionMode,
    /// Where the session is in its life.
    pub status: SessionStatus,
    /// The channel that created it (`http`, `cli`, …).
    pub channel: String,
    /// The principal that owns it.
    pub principal: String,
    /// A title for lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
    /// SHA-256 (hex) of the current continuation token, for channels that issue one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_hash: Option<String>,
    /// Turns started so far.
    #[serde(default)]
    pub turns: u32,
    /// The index of the last event at the last turn boundary that `session.json` recorded; a
    /// later boundary at the log's end is read from the log ([`SessionMeta::settle`]).
    #[serde(default)]
    pub last_index: u64,
    /// The tokens its finished turns reported, summed ([`reported_usage`]): written at each
    /// turn's end, so a list of sessions never reads their logs.
    #[serde(default, skip_serializing_if = "Usage::is_zero")]
    pub usage: Usage,
    /// The last keyed follow-ups and the hash of the token each was answered with, so a retry
    /// gets the same answer (see `Idempotency-Key`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_keys: Vec<AcceptedKey>,
    /// Why the session exists (`eval` for eval cases); tools and hooks see it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purpose: Option<String>,
    /// A dry-run session: write tools return their `dry_run_result` instead of running.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
    /// How many peer asks deep the session was created (0: asked by a person or a channel);
    /// its own peer asks go one deeper, and past `MAX_PEER_DEPTH` they are refused.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub peer_depth: u32,
    /// The channel's continuation key the session was opened for (a thread, an issue); its
    /// tools and a live root see it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuation_key: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl SessionMeta {
    /// What the session tells its tools about itself on every call.
    pub(crate) fn context(&self) -> SessionContext {
        SessionContext {
            dry_run: self.dry_run,
            purpose: self.purpose.clone(),
            continuation_key: self.continuation_key.clone(),
            principal: self.principal.clone(),
            peer_depth: self.peer_depth,
        }
    }
}

/// What a creator tells a new session about itself beyond its request
/// ([`SessionManager::create_with`](crate::SessionManager::create_with)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionOptions {
    /// Why the session exists (`eval` for eval cases, so hooks can skip it).
    pub purpose: Option<String>,
    /// Write tools return their `dry_run_result` instead of running.
    pub dry_run: bool,
    /// How many peer asks deep the session is (a peer agent's ask sets it; 0 otherwise).
    pub peer_depth: u32,
    /// The channel's continuation key the session is opened for.
    pub continuation_key: Option<String>,
}

/// The token usage the `turn.completed` events of `events` report, summed: a session's
/// [`SessionMeta::usage`].
pub(crate) fn reported_usage(events: &[Event]) -> Usage {
    events
        .iter()
        .filter_map(|event| match &event.body {
            EventBody::TurnCompleted(completed) => completed.usage,
            _ => None,
        })
        .sum()
}

/// A follow-up accepted with an idempotency key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AcceptedKey {
    /// The `Idempotency-Key` / `clientMessageId`.
    pub key: String,
    /// SHA-256 (hex) of the continuation token the follow-up was answered with.
    pub token_hash: String,
}

/// The status the event ending a turn leaves its session in (`None`: `body` ends no turn).
pub(crate) fn boundary_status(body: &EventBody) -> Option<SessionStatus> {
    match body {
        EventBody::SessionWaiting(_) => Some(SessionStatus::Waiting),
        EventBody::SessionCompleted(_) => Some(SessionStatus::Completed),
        EventBody::SessionFailed(_) => Some(SessionStatus::Failed),
        _ => None,
    }
}

impl SessionMeta {
    /// Takes status, last index and update time from the log's `last` event when it ends a
    /// turn after the last boundary `session.json` recorded (the log is synced first, then
    /// `session.json` rewritten without a sync: a crash between the two leaves it behind until
    /// recovery repairs it).
    pub(crate) fn settle(&mut self, last: Option<&Event>) {
        let Some(last) = last else { return };
        if let Some(status) = boundary_status(&last.body)
            && last.index > self.last_index
        {
            self.status = status;
            self.last_index = last.index;
            self.updated_at = self.updated_at.max(last.at);
        }
    }

    /// Reads `session.json` of `session_id`; `None` when the session does not exist.
    pub fn load(state: &StateRoot, session_id: &str) -> std::io::Result<Option<SessionMeta>> {
        match std::fs::read(state.meta_path(session_id)) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(std::io::Error::other),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// Writes `session.json` atomically and durably: a temporary file, synced, renamed over
    /// `session.json`, then the directory synced (a crash leaves the old or the new file). For
    /// what a reply depends on: a new or rotated token, an accepted idempotency key.
    pub(crate) async fn save(&self, state: &StateRoot) -> std::io::Result<()> {
        write_durably(&state.meta_path(&self.session_id), &self.bytes()?).await
    }

    /// Like [`SessionMeta::save`] but leaves the directory to the caller (a new session syncs
    /// its directories together, in one group-commit round).
    pub(crate) async fn save_but_directory(&self, state: &StateRoot) -> std::io::Result<()> {
        replace_synced(&state.meta_path(&self.session_id), &self.bytes()?).await
    }

    /// Writes `session.json` atomically (temporary file renamed over it) without a sync: only
    /// for fields recovery repairs from the log, synced before (status, turn count, last
    /// index). The filesystem orders a rename over an existing file after the file's data
    /// (ext4 `auto_da_alloc`, xfs, btrfs), so a power loss leaves the old or the new file.
    pub(crate) fn save_repairable(&self, state: &StateRoot) -> std::io::Result<()> {
        let (tmp, file) = write_tmp(&state.meta_path(&self.session_id), &self.bytes()?)?;
        drop(file);
        std::fs::rename(&tmp, state.meta_path(&self.session_id))
    }

    fn bytes(&self) -> std::io::Result<Vec<u8>> {
        serde_json::to_vec_pretty(self).map_err(std::io::Error::other)
    }
}

/// Replaces `path` with `bytes` atomically and durably (temporary file, fsync, rename, fsync
/// of the directory); the fsyncs go through the group commit.
pub(crate) async fn write_durably(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    replace_synced(path, bytes).await?;
    commit(vec![SyncTarget::Dir(parent(path)?.to_path_buf())]).await
}

/// Writes the temporary file of `path`, syncs it (group commit), renames it over `path`.
async fn replace_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let (tmp, file) = write_tmp(path, bytes)?;
    commit(vec![SyncTarget::All(Arc::new(file))]).await?;
    std::fs::rename(&tmp, path)
}

/// Writes `<path>.tmp` (creating the directory when missing); returns it with its open file.
fn write_tmp(path: &Path, bytes: &[u8]) -> std::io::Result<(PathBuf, std::fs::File)> {
    use std::io::Write;
    let dir = parent(path)?;
    std::fs::create_dir_all(dir)?;
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    let tmp = dir.join(name);
    let mut file = std::fs::File::create(&tmp)?;
    file.write_all(bytes)?;
    Ok((tmp, file))
}

fn parent(path: &Path) -> std::io::Result<&Path> {
    path.parent()
        .ok_or_else(|| std::io::Error::other(format!("{} has no directory", path.display())))
}

/// What one group-commit request makes durable.
#[derive(Debug, Clone)]
pub(crate) enum SyncTarget {
    /// A file's data and what reading it back needs (its size): `fdatasync`.
    Data(Arc<std::fs::File>),
    /// A file's data and metadata: `fsync`.
    All(Arc<std::fs::File>),
    /// A directory's entries (files created or renamed in it): `fsync` of the directory.
    Dir(PathBuf),
}

impl SyncTarget {
    /// Requests for the same file (or directory) and kind share one sync per round.
    fn key(&self) -> (u8, usize, Option<&Path>) {
        match self {
            SyncTarget::Data(file) => (0, Arc::as_ptr(file) as usize, None),
            SyncTarget::All(file) => (1, Arc::as_ptr(file) as usize, None),
            SyncTarget::Dir(dir) => (2, 0, Some(dir)),
        }
    }

    fn sync(&self) -> std::io::Result<()> {
        match self {
            SyncTarget::Data(file) => file.sync_data(),
            SyncTarget::All(file) => file.sync_all(),
            SyncTarget::Dir(dir) => std::fs::File::open(dir)?.sync_all(),
        }
    }
}

/// A sync request waiting for its round.
type Waiter = (SyncTarget, oneshot::Sender<std::io::Result<()>>);

/// The group commit: sync requests wait in one queue; one thread of its own (off the async
/// workers, and independent of any runtime) takes everything queued, syncs each distinct file
/// once, answers every waiter, and goes again while more arrived meanwhile. Concurrent
/// sessions' appends so share rounds instead of each blocking a runtime worker on its fsync.
struct GroupCommit {
    queue: Mutex<Vec<Waiter>>,
    ready: Condvar,
    /// Whether the sync thread runs (started on first use; `false` when it could not start, and
    /// then each caller syncs its own requests).
    thread: OnceLock<bool>,
}

static GROUP_COMMIT: GroupCommit = GroupCommit {
    queue: Mutex::new(Vec::new()),
    ready: Condvar::new(),
    thread: OnceLock::new(),
};

impl GroupCommit {
    fn queue(&self) -> std::sync::MutexGuard<'_, Vec<Waiter>> {
        self.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn submit(&'static self, waiters: Vec<Waiter>) {
        let threaded = *self.thread.get_or_init(|| {
            std::thread::Builder::new()
                .name("folio-group-commit".into())
                .spawn(move || self.rounds())
                .map_err(|err| tracing::warn!("no group-commit thread ({err}); syncing inline"))
                .is_ok()
        });
        if threaded {
            self.queue().extend(waiters);
            self.ready.notify_one();
        } else {
            round(waiters);
        }
    }

    fn rounds(&self) {
        loop {
            let batch = {
                let mut queue = self.queue();
                while queue.is_empty() {
                    queue = self
                        .ready
                        .wait(queue)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                }
                std::mem::take(&mut *queue)
            };
            round(batch);
        }
    }
}

/// Syncs each distinct target of `batch` once and answers its waiters.
fn round(batch: Vec<Waiter>) {
    let mut groups: Vec<(SyncTarget, Vec<oneshot::Sender<std::io::Result<()>>>)> = Vec::new();
    for (target, waiter) in batch {
        match groups
            .iter_mut()
            .find(|(known, _)| known.key() == target.key())
        {
            Some((_, waiters)) => waiters.push(waiter),
            None => groups.push((target, vec![waiter])),
        }
    }
    for (target, waiters) in groups {
        let result = target.sync();
        for waiter in waiters {
            let answer = match &result {
                Ok(()) => Ok(()),
                Err(err) => Err(std::io::Error::new(err.kind(), err.to_string())),
            };
            let _ = waiter.send(answer);
        }
    }
}

/// Makes every target durable through the group commit (one round when they arrive together).
pub(crate) async fn commit(targets: Vec<SyncTarget>) -> std::io::Result<()> {
    let (waiters, answers): (Vec<Waiter>, Vec<_>) = targets
        .into_iter()
        .map(|target| {
            let (tx, rx) = oneshot::channel();
            ((target, tx), rx)
        })
        .unzip();
    GROUP_COMMIT.submit(waiters);
    for answer in answers {
        answer.await.unwrap_or_else(|_| {
            Err(std::io::Error::other(
                "the group-commit thread stopped before syncing (it panicked; see the log above)",
            ))
        })?;
    }
    Ok(())
}

/// Takes the exclusive lock of a state root (`<state-root>/.lock`): two processes serving or
/// running sessions on one state root would each record the other's running turns as
/// `server restarted`. The kernel releases the lock when the process dies.
pub(crate) fn lock_state_root(state: &StateRoot) -> Result<std::fs::File, OpenError> {
    use std::os::fd::AsRawFd;
    let path = state.path().join(".lock");
    std::fs::create_dir_all(state.path()).map_err(|err| {
        OpenError::Io(format!(
            "cannot create the state root {}: {err}",
            state.path().display()
        ))
    })?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|err| OpenError::Io(format!("cannot open {}: {err}", path.display())))?;
    // SAFETY: flock on a descriptor this function owns; it only sets an advisory lock.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(OpenError::InUse(state.path().to_path_buf()));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_group_commit_syncs_every_target_and_answers_each_waiter() {
        let dir = tempfile::tempdir().unwrap();
        let file = Arc::new(std::fs::File::create(dir.path().join("log")).unwrap());
        // Concurrent requests, some for the same file, all answered.
        let rounds = (0..8).map(|_| {
            commit(vec![
                SyncTarget::Data(file.clone()),
                SyncTarget::All(file.clone()),
                SyncTarget::Dir(dir.path().to_path_buf()),
            ])
        });
        for answer in futures::future::join_all(rounds).await {
            answer.unwrap();
        }
        // A target that cannot be synced fails its own waiter only.
        let missing = dir.path().join("missing");
        let (failed, synced) = tokio::join!(
            commit(vec![SyncTarget::Dir(missing)]),
            commit(vec![SyncTarget::Data(file.clone())]),
        );
        assert_eq!(failed.unwrap_err().kind(), std::io::ErrorKind::NotFound);
        synced.unwrap();
    }

    #[tokio::test]
    async fn session_json_is_replaced_whole_durably_or_for_repair() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateRoot::new(dir.path());
        let mut meta: SessionMeta = serde_json::from_value(serde_json::json!({
            "sessionId": "ses_01JDXYZ0000000000000000000",
            "mode": "chat",
            "status": "running",
            "channel": "http",
            "principal": "local",
            "createdAt": "2026-11-30T00:00:00Z",
            "updatedAt": "2026-11-30T00:00:00Z"
        }))
        .unwrap();
        let load = || SessionMeta::load(&state, &meta.session_id).unwrap();
        meta.save(&state).await.unwrap();
        assert_eq!(load(), Some(meta.clone()));
        meta.status = SessionStatus::Waiting;
        meta.last_index = 7;
        meta.save_repairable(&state).unwrap();
        assert_eq!(load(), Some(meta.clone()));
        meta.token_hash = Some("ab".repeat(32));
        meta.save_but_directory(&state).await.unwrap();
        assert_eq!(load(), Some(meta.clone()));
        let files: Vec<_> = std::fs::read_dir(state.session_dir(&meta.session_id))
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(files, ["session.json"], "no temporary file is left");
    }
}
