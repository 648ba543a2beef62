//! Session metadata on disk (`session.json`, a [`folio_store::SessionMeta`]) and the group
//! commit that makes files durable; where each file lives is the state root's layout
//! ([`StateRoot`], docs/http-api.md "Storage and crashes").
//!
//! The end of a turn is not written to `session.json`: the log records it (synced) and readers
//! settle the stored status from the log's last event ([`SessionMeta::settle`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use crate::OpenError;
pub use folio_store::{
    AcceptedKey, SessionMeta, boundary_status, new_session_id, new_turn_id, valid_session_id,
};
use tokio::sync::oneshot;

/// The directory everything of one agent is stored under; its layout (sessions, traces,
/// artifacts, memory) is owned by [`folio_agent::StateLayout`].
pub type StateRoot = folio_agent::StateLayout;

/// The ids of the sessions under `state` (`sessions/<id>` folders with a session id's form),
/// newest first (session ids sort by creation time); none when there is no `sessions/` yet.
pub fn session_ids(state: &StateRoot) -> std::io::Result<Vec<String>> {
    let mut ids: Vec<String> = match std::fs::read_dir(state.sessions_dir()) {
        Ok(entries) => entries
            .flatten()
            .filter_map(|entry| entry.file_name().into_string().ok())
            .filter(|id| valid_session_id(id))
            .collect(),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(err) => return Err(err),
    };
    ids.sort_unstable_by(|a, b| b.cmp(a));
    Ok(ids)
}

/// Reads `session.json` of `session_id`; `None` when the session does not exist, or when its
/// `session.json` was never written out: a new session's file is written in place and synced
/// with its first message before the create is acknowledged ([`MetaFile::write_new`]), so one
/// a crash left empty (or zero-filled, after a power loss) belongs to a create that was never
/// acknowledged.
pub fn load_meta(state: &StateRoot, session_id: &str) -> std::io::Result<Option<SessionMeta>> {
    match std::fs::read(state.meta_path(session_id)) {
        Ok(bytes) if unwritten(&bytes) => Ok(None),
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(std::io::Error::other),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err),
    }
}

/// Whether `session.json` of `session_id` exists but was never written out (see
/// [`load_meta`]): what a crash leaves of a create it interrupted.
pub fn meta_never_written(state: &StateRoot, session_id: &str) -> bool {
    std::fs::read(state.meta_path(session_id)).is_ok_and(|bytes| unwritten(&bytes))
}

/// How a session's metadata is written to its `session.json`.
pub trait MetaFile {
    /// Writes a new session's `session.json` in place, without a sync: the create syncs it
    /// with the session's directories and its first message, in one group-commit round
    /// ([`new_session_targets`]), before acknowledging anything.
    fn write_new(&self, state: &StateRoot) -> std::io::Result<()>;

    /// Stages a rewrite of `session.json` in its synced-to-be temporary file: sync
    /// [`Staged::target`] (with the log, in one round), then [`Staged::install`] it. For what a
    /// reply depends on: a new or rotated token, an accepted idempotency key, a turn count.
    fn stage(&self, state: &StateRoot) -> std::io::Result<Staged>;

    /// Writes `session.json` atomically (temporary file renamed over it) without a sync: only
    /// for fields recovery repairs from the log, synced before (status, turn count, last
    /// index). The filesystem orders a rename over an existing file after the file's data
    /// (ext4 `auto_da_alloc`, xfs, btrfs), so a power loss leaves the old or the new file.
    fn save_repairable(&self, state: &StateRoot) -> std::io::Result<()>;
}

impl MetaFile for SessionMeta {
    fn write_new(&self, state: &StateRoot) -> std::io::Result<()> {
        write_unsynced(&state.meta_path(&self.session_id), &meta_bytes(self)?, true)
    }

    fn stage(&self, state: &StateRoot) -> std::io::Result<Staged> {
        stage(&state.meta_path(&self.session_id), &meta_bytes(self)?)
    }

    fn save_repairable(&self, state: &StateRoot) -> std::io::Result<()> {
        let (tmp, file) = write_tmp(&state.meta_path(&self.session_id), &meta_bytes(self)?)?;
        drop(file);
        std::fs::rename(&tmp, state.meta_path(&self.session_id))
    }
}

fn meta_bytes(meta: &SessionMeta) -> std::io::Result<Vec<u8>> {
    serde_json::to_vec_pretty(meta).map_err(std::io::Error::other)
}

/// Whether a metadata file's `bytes` were never written out: empty, or zeros only (a power
/// loss can keep a file's size without its data).
fn unwritten(bytes: &[u8]) -> bool {
    bytes.iter().all(|&byte| byte == 0)
}

/// What makes a new session durable, synced in one round with its first message: its
/// `session.json` (written by [`SessionMeta::write_new`]), its directory's entries, and the new
/// entries of `sessions/` and `traces/` (the session directory and its log).
pub fn new_session_targets(state: &StateRoot, session_id: &str) -> Vec<SyncTarget> {
    let trace = state.trace_path(session_id);
    [
        state.meta_path(session_id),
        state.session_dir(session_id),
        state.sessions_dir(),
        trace.parent().unwrap_or(&trace).to_path_buf(),
    ]
    .into_iter()
    .map(SyncTarget::Path)
    .collect()
}

/// A file rewrite staged in its temporary file (`<path>.tmp`): once [`Staged::target`] is
/// synced, [`Staged::install`] renames it over the file and syncs the directory. A crash before
/// the rename leaves the old file (the temporary one is ignored and rewritten next time).
pub struct Staged {
    tmp: PathBuf,
    path: PathBuf,
    file: Arc<std::fs::File>,
}

impl Staged {
    /// The temporary file's sync, to request in the group commit (with others, in one round).
    pub fn target(&self) -> SyncTarget {
        SyncTarget::All(self.file.clone())
    }

    /// Renames the synced temporary file over the file and syncs the directory (group commit).
    pub async fn install(self) -> std::io::Result<()> {
        std::fs::rename(&self.tmp, &self.path)?;
        commit(vec![SyncTarget::Path(parent(&self.path)?.to_path_buf())]).await
    }
}

/// Writes `bytes` to the temporary file of `path` (see [`Staged`]).
pub fn stage(path: &Path, bytes: &[u8]) -> std::io::Result<Staged> {
    let (tmp, file) = write_tmp(path, bytes)?;
    Ok(Staged {
        tmp,
        path: path.to_path_buf(),
        file: Arc::new(file),
    })
}

/// Replaces `path` with `bytes` atomically and durably (temporary file, fsync, rename, fsync
/// of the directory); the fsyncs go through the group commit.
pub async fn write_durably(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let staged = stage(path, bytes)?;
    commit(vec![staged.target()]).await?;
    staged.install().await
}

/// Writes `path` in place (creating its directory when missing; `new`: refusing to replace an
/// existing file) without a sync: for a file nobody relies on until the caller syncs it with
/// its directory, and whose readers take an unwritten one (see [`load_meta`]) for
/// absent.
pub fn write_unsynced(path: &Path, bytes: &[u8], new: bool) -> std::io::Result<()> {
    use std::io::Write;
    std::fs::create_dir_all(parent(path)?)?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if new {
        options.create_new(true);
    } else {
        options.create(true).truncate(true);
    }
    options.open(path)?.write_all(bytes)
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
pub enum SyncTarget {
    /// A file's data and what reading it back needs (its size): `fdatasync`.
    Data(Arc<std::fs::File>),
    /// A file's data and metadata: `fsync`.
    All(Arc<std::fs::File>),
    /// A file or directory by path, opened to be synced: `fsync` (of a directory: its entries,
    /// the files created or renamed in it).
    Path(PathBuf),
}

impl SyncTarget {
    /// Requests for the same file (or path) and kind that wait together share one sync.
    fn key(&self) -> (u8, usize, Option<&Path>) {
        match self {
            SyncTarget::Data(file) => (0, Arc::as_ptr(file) as usize, None),
            SyncTarget::All(file) => (1, Arc::as_ptr(file) as usize, None),
            SyncTarget::Path(path) => (2, 0, Some(path)),
        }
    }

    fn sync(&self) -> std::io::Result<()> {
        match self {
            SyncTarget::Data(file) => file.sync_data(),
            SyncTarget::All(file) => file.sync_all(),
            SyncTarget::Path(path) => std::fs::File::open(path)
                .and_then(|file| file.sync_all())
                .map_err(|err| {
                    std::io::Error::new(
                        err.kind(),
                        format!("cannot sync {}: {err}", path.display()),
                    )
                }),
        }
    }
}

/// A sync request waiting for a sync thread.
type Waiter = (SyncTarget, oneshot::Sender<std::io::Result<()>>);

/// How many syncs run at once. A disk with a queue (virtio, NVMe) completes concurrent syncs
/// of different files in about the time of one: on this project's 2-vCPU VM, 8 concurrent
/// `fsync`s of new files take 0.2–0.3 ms each against 2–3.5 ms one after another.
const SYNC_THREADS: usize = 8;

/// The group commit: sync requests wait in one queue; [`SYNC_THREADS`] threads of their own
/// (off the async workers, independent of any runtime) each take the oldest request together
/// with every other queued request for the same target, sync that target once, and answer
/// them all. So concurrent sessions share the syncs of shared directories (`sessions/`,
/// `traces/`), a caller's targets (a new session's file, directories and log) are synced
/// concurrently, and no request waits behind another file's sync while a thread is free. A
/// request that arrives while its target is being synced waits for the next sync of it (the
/// running one may have started before its write).
struct GroupCommit {
    queue: Mutex<std::collections::VecDeque<Waiter>>,
    ready: Condvar,
    /// Whether the sync threads run (started on first use; `false` when none could start, and
    /// then each caller syncs its own requests).
    threads: OnceLock<bool>,
}

static GROUP_COMMIT: GroupCommit = GroupCommit {
    queue: Mutex::new(std::collections::VecDeque::new()),
    ready: Condvar::new(),
    threads: OnceLock::new(),
};

impl GroupCommit {
    fn queue(&self) -> std::sync::MutexGuard<'_, std::collections::VecDeque<Waiter>> {
        self.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn submit(&'static self, waiters: Vec<Waiter>) {
        let threaded = *self.threads.get_or_init(|| {
            let started = (0..SYNC_THREADS)
                .filter(|n| {
                    std::thread::Builder::new()
                        .name(format!("folio-sync-{n}"))
                        .spawn(move || self.work())
                        .map_err(|err| tracing::warn!("no group-commit thread {n} ({err})"))
                        .is_ok()
                })
                .count();
            if started == 0 {
                tracing::warn!("no group-commit thread could start; syncing inline");
            }
            started > 0
        });
        if !threaded {
            for (target, waiter) in waiters {
                let _ = waiter.send(target.sync());
            }
            return;
        }
        let count = waiters.len();
        self.queue().extend(waiters);
        for _ in 0..count.min(SYNC_THREADS) {
            self.ready.notify_one();
        }
    }

    /// One sync thread: takes the oldest request and every queued one for the same target,
    /// syncs it, answers them all.
    fn work(&self) {
        loop {
            let (target, waiters) = {
                let mut queue = self.queue();
                let (target, first) = loop {
                    match queue.pop_front() {
                        Some(waiter) => break waiter,
                        None => {
                            queue = self
                                .ready
                                .wait(queue)
                                .unwrap_or_else(std::sync::PoisonError::into_inner);
                        }
                    }
                };
                let mut waiters = vec![first];
                let mut rest = std::collections::VecDeque::with_capacity(queue.len());
                for (other, waiter) in queue.drain(..) {
                    if other.key() == target.key() {
                        waiters.push(waiter);
                    } else {
                        rest.push_back((other, waiter));
                    }
                }
                *queue = rest;
                (target, waiters)
            };
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
}

/// Makes every target durable through the group commit (concurrently, sharing each sync with
/// the other requests for the same target that wait with it).
pub async fn commit(targets: Vec<SyncTarget>) -> std::io::Result<()> {
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
                "a group-commit thread stopped before syncing (it panicked; see the log above)",
            ))
        })?;
    }
    Ok(())
}

/// Takes the exclusive lock of a state root (`<state-root>/.lock`): two processes serving or
/// running sessions on one state root would each record the other's running turns as
/// `server restarted`. The kernel releases the lock when the process dies.
pub fn lock_state_root(state: &StateRoot) -> Result<std::fs::File, OpenError> {
    use std::os::fd::AsRawFd;
    let path = state.path().join(".lock");
    std::fs::create_dir_all(state.path()).map_err(|err| {
        OpenError::io(
            format!("cannot create the state root {}", state.path().display()),
            err,
        )
    })?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|err| OpenError::io(format!("cannot open {}", path.display()), err))?;
    // SAFETY: flock on a descriptor this function owns; it only sets an advisory lock.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(OpenError::InUse(state.path().to_path_buf()));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use folio_protocol::SessionStatus;

    #[tokio::test]
    async fn a_group_commit_syncs_every_target_and_answers_each_waiter() {
        let dir = tempfile::tempdir().unwrap();
        let file = Arc::new(std::fs::File::create(dir.path().join("log")).unwrap());
        // Concurrent requests, some for the same file, all answered.
        let rounds = (0..8).map(|_| {
            commit(vec![
                SyncTarget::Data(file.clone()),
                SyncTarget::All(file.clone()),
                SyncTarget::Path(dir.path().to_path_buf()),
            ])
        });
        for answer in futures::future::join_all(rounds).await {
            answer.unwrap();
        }
        // A target that cannot be synced fails its own waiter only.
        let missing = dir.path().join("missing");
        let (failed, synced) = tokio::join!(
            commit(vec![SyncTarget::Path(missing)]),
            commit(vec![SyncTarget::Data(file.clone())]),
        );
        assert_eq!(failed.unwrap_err().kind(), std::io::ErrorKind::NotFound);
        synced.unwrap();
    }

    #[tokio::test]
    async fn session_json_is_written_new_replaced_whole_durably_or_for_repair() {
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
        let load = || load_meta(&state, &meta.session_id).unwrap();
        meta.write_new(&state).unwrap();
        assert_eq!(load(), Some(meta.clone()));
        // The log's directory, which a new session's log creates.
        let trace = state.trace_path(&meta.session_id);
        std::fs::create_dir_all(trace.parent().unwrap()).unwrap();
        commit(new_session_targets(&state, &meta.session_id))
            .await
            .unwrap();
        assert_eq!(
            meta.write_new(&state).unwrap_err().kind(),
            std::io::ErrorKind::AlreadyExists,
            "a new session's file never replaces one"
        );
        meta.status = SessionStatus::Waiting;
        meta.last_index = 7;
        meta.save_repairable(&state).unwrap();
        assert_eq!(load(), Some(meta.clone()));
        meta.token_hash = Some("ab".repeat(32));
        let staged = meta.stage(&state).unwrap();
        assert_ne!(load(), Some(meta.clone()), "staged, not installed yet");
        commit(vec![staged.target()]).await.unwrap();
        staged.install().await.unwrap();
        assert_eq!(load(), Some(meta.clone()));
        let files: Vec<_> = std::fs::read_dir(state.session_dir(&meta.session_id))
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(files, ["session.json"], "no temporary file is left");
    }

    #[test]
    fn a_session_json_a_crash_left_unwritten_reads_as_no_session() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateRoot::new(dir.path());
        let id = "ses_01JDXYZ0000000000000000000";
        std::fs::create_dir_all(state.session_dir(id)).unwrap();
        for unwritten in [&[][..], &[0u8; 300][..]] {
            std::fs::write(state.meta_path(id), unwritten).unwrap();
            assert_eq!(load_meta(&state, id).unwrap(), None);
            assert!(meta_never_written(&state, id));
        }
        // A file with content that does not parse is an error, not a missing session.
        std::fs::write(state.meta_path(id), b"{\"sessionId\":").unwrap();
        assert!(load_meta(&state, id).is_err());
        assert!(!meta_never_written(&state, id));
    }
}
