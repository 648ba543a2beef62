//! A session's metadata record and the ids of sessions and turns.

use chrono::{DateTime, Utc};
use folio_protocol::{Event, EventBody, SessionMode, SessionStatus, Usage};
use serde::{Deserialize, Serialize};

/// A new session id: `ses_` + a 26-character ULID (ids sort by creation time).
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

/// A session's metadata (`session.json` in the disk store, a row in a database).
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
    /// The index of the last event at the last turn boundary the metadata recorded; a later
    /// boundary at the log's end is read from the log ([`SessionMeta::settle`]).
    #[serde(default)]
    pub last_index: u64,
    /// The tokens its finished turns reported, summed: written at each turn's end, so a list
    /// of sessions never reads their logs.
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
    /// How many peer asks deep the session was created (0: asked by a person or a channel).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub peer_depth: u32,
    /// The channel's continuation key the session was opened for (a thread, an issue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuation_key: Option<String>,
    /// The id of the workspace root (`--workspace-root`) its host workspace lives under; `None`:
    /// under the state root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_root: Option<String>,
    /// The A/B variant it was assigned at creation (`ab.assigned`), kept for its whole life.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
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
pub fn boundary_status(body: &EventBody) -> Option<SessionStatus> {
    match body {
        EventBody::SessionWaiting(_) => Some(SessionStatus::Waiting),
        EventBody::SessionCompleted(_) => Some(SessionStatus::Completed),
        EventBody::SessionFailed(_) => Some(SessionStatus::Failed),
        _ => None,
    }
}

impl SessionMeta {
    /// Takes status, last index and update time from the log's `last` event when it ends a
    /// turn after the last boundary the metadata recorded (a store makes the log durable
    /// first and may write the metadata after it, without waiting).
    pub fn settle(&mut self, last: Option<&Event>) {
        let Some(last) = last else { return };
        if let Some(status) = boundary_status(&last.body)
            && last.index > self.last_index
        {
            self.status = status;
            self.last_index = last.index;
            self.updated_at = self.updated_at.max(last.at);
        }
    }
}
