//! Session metadata on disk (`session.json`) and the ids of sessions and turns; where each
//! file lives is the state root's layout ([`StateRoot`], docs/http-api.md "Storage and crashes").

use crate::error::OpenError;
use chrono::{DateTime, Utc};
use folio_protocol::{SessionMode, SessionStatus};
use serde::{Deserialize, Serialize};

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
    /// The index of the last event at the last turn boundary.
    #[serde(default)]
    pub last_index: u64,
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
}

/// What a creator tells a new session about itself beyond its request
/// ([`SessionManager::create_with`](crate::SessionManager::create_with)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionOptions {
    /// Why the session exists (`eval` for eval cases, so hooks can skip it).
    pub purpose: Option<String>,
    /// Write tools return their `dry_run_result` instead of running.
    pub dry_run: bool,
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

impl SessionMeta {
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

    /// Writes the metadata atomically and durably: a temporary file, synced, renamed over
    /// `session.json`, then the directory synced (a crash leaves the old or the new file).
    pub fn save(&self, state: &StateRoot) -> std::io::Result<()> {
        let path = state.meta_path(&self.session_id);
        let bytes = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        write_durably(&path, &bytes)
    }
}

/// Replaces `path` with `bytes` atomically and durably (temporary file, fsync, rename, fsync
/// of the directory).
pub(crate) fn write_durably(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other(format!("{} has no directory", path.display())))?;
    std::fs::create_dir_all(dir)?;
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    let tmp = dir.join(name);
    let mut file = std::fs::File::create(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&tmp, path)?;
    sync_dir(dir)
}

/// Syncs a directory, so the entries created or renamed in it survive a power loss.
pub(crate) fn sync_dir(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
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
