//! Storage: small JSON values that tools, hooks and skill commands keep through the host API
//! (and the model through the `storage` tools), by namespace and key.
//!
//! A namespace is one scope's owner: a session (`session`), an agent (`agent`: every session of
//! the agent) or one principal of an agent (`principal`). Every entry has a version, starting at
//! 1 and raised by each write, so a writer can compare-and-set; an entry may expire, and an
//! expired entry reads as absent (and is removed by [`StorageStore::purge_expired`]). Entries
//! are durable when a call returns.
//!
//! Keys are compared and listed in byte order (UTF-8 bytes). A backend keeps times to the
//! microsecond at least, and counts an entry's bytes as its key's plus its value's JSON text
//! ([`value_text`]).

use chrono::{DateTime, Utc};
use folio_protocol::{StorageEntry, StorageScope};

use crate::StoreError;

/// Refuses a key no backend can store: empty, longer than [`MAX_KEY_BYTES`], or holding a NUL
/// character.
pub fn check_key(key: &str) -> Result<(), StoreError> {
    if key.is_empty() || key.len() > MAX_KEY_BYTES || key.contains('\0') {
        return Err(StoreError::backend(format!(
            "storage key {:?} is not 1 to {MAX_KEY_BYTES} bytes without NUL characters",
            truncated(key)
        )));
    }
    Ok(())
}

/// The JSON text a backend stores for `value`; refused past [`MAX_VALUE_BYTES`] or with a NUL
/// character in a string (which PostgreSQL's `jsonb` cannot hold).
pub fn value_text(value: &serde_json::Value) -> Result<String, StoreError> {
    let text = serde_json::to_string(value)
        .map_err(|err| StoreError::backend_from("cannot encode a storage value", err))?;
    if text.len() > MAX_VALUE_BYTES {
        return Err(StoreError::backend(format!(
            "a storage value is {} bytes of JSON, more than the {MAX_VALUE_BYTES} allowed",
            text.len()
        )));
    }
    if holds_nul(value) {
        return Err(StoreError::backend(
            "a storage value holds a NUL character (\\u0000), which cannot be stored",
        ));
    }
    Ok(text)
}

/// Whether a string of `value` (a key of an object included) holds a NUL character.
fn holds_nul(value: &serde_json::Value) -> bool {
    match value {
        serde_json::Value::String(text) => text.contains('\0'),
        serde_json::Value::Array(items) => items.iter().any(holds_nul),
        serde_json::Value::Object(map) => map
            .iter()
            .any(|(key, value)| key.contains('\0') || holds_nul(value)),
        serde_json::Value::Null | serde_json::Value::Bool(_) | serde_json::Value::Number(_) => {
            false
        }
    }
}

/// The first 64 characters of `key`, for messages.
fn truncated(key: &str) -> String {
    key.chars().take(64).collect()
}

/// The largest value a put may store: its JSON text, in bytes.
pub const MAX_VALUE_BYTES: usize = 256 * 1024;
/// The longest key, in bytes.
pub const MAX_KEY_BYTES: usize = 512;
/// The most entries one list answers.
pub const MAX_LIST: usize = 1_000;

/// The owner of a set of entries: one scope's subject.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Namespace {
    /// Session, agent or principal.
    pub scope: StorageScope,
    /// The agent whose sessions wrote it.
    pub agent: String,
    /// The session id (`session`), the agent's name again (`agent`) or the principal
    /// (`principal`).
    pub owner: String,
}

impl Namespace {
    /// The namespace of `scope` for a call of `agent`'s session `session_id` owned by
    /// `principal`.
    pub fn of(scope: StorageScope, agent: &str, session_id: &str, principal: &str) -> Namespace {
        let owner = match scope {
            StorageScope::Session => session_id,
            StorageScope::Agent => agent,
            StorageScope::Principal => principal,
        };
        Namespace {
            scope,
            agent: agent.to_string(),
            owner: owner.to_string(),
        }
    }
}

/// When a put may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// Whatever is there.
    Any,
    /// Only when the key has no (unexpired) entry.
    Absent,
    /// Only when the entry's version is this one.
    Version(u64),
}

/// What a put or delete did.
#[derive(Debug, Clone, PartialEq)]
pub enum Written {
    /// Done: the entry as stored (for a delete, the entry removed; `None` when there was none).
    Done(Option<StorageEntry>),
    /// The condition did not hold: nothing written; the entry there now (`None`: none).
    Conflict(Option<StorageEntry>),
}

/// One page of a namespace's entries.
#[derive(Debug, Clone, PartialEq)]
pub struct EntryPage {
    /// Entries in key order (byte order).
    pub entries: Vec<StorageEntry>,
    /// The key to pass as `after` for the next page, when there are more.
    pub next: Option<String>,
}

/// How much is stored: entries and the bytes of their keys and values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StorageUsage {
    /// Entries (expired ones not yet purged included).
    pub entries: u64,
    /// Bytes of keys and JSON values.
    pub bytes: u64,
}

/// Where storage entries are kept, beside the sessions ([`crate::SessionStore::storage`]).
#[async_trait::async_trait]
pub trait StorageStore: Send + Sync {
    /// The entry at `key`, unless it has expired at `now`.
    async fn get(
        &self,
        namespace: &Namespace,
        key: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<StorageEntry>, StoreError>;

    /// Writes `value` (JSON text at most [`MAX_VALUE_BYTES`]: [`value_text`]) at `key`
    /// ([`check_key`]) when `condition` holds at `now` (an expired entry counts as absent),
    /// with the next version (1 for a new key or one whose entry expired), `updated_at = now`
    /// and `expires_at`. Durable when it returns.
    async fn put(
        &self,
        namespace: &Namespace,
        key: &str,
        value: &serde_json::Value,
        condition: Condition,
        expires_at: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Result<Written, StoreError>;

    /// Removes the entry at `key` when `condition` holds at `now` (`Absent` is not a delete
    /// condition: treated as `Any`; an expired entry counts as absent, and is removed by `Any`
    /// with `Done(None)`). Durable when it returns.
    async fn delete(
        &self,
        namespace: &Namespace,
        key: &str,
        condition: Condition,
        now: DateTime<Utc>,
    ) -> Result<Written, StoreError>;

    /// The unexpired entries whose key starts with `prefix`, in key order, after the key
    /// `after` (exclusive), at most `limit` (capped at [`MAX_LIST`]; 0 answers an empty page).
    async fn list(
        &self,
        namespace: &Namespace,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
        now: DateTime<Utc>,
    ) -> Result<EntryPage, StoreError>;

    /// What `namespace` holds (for quotas).
    async fn usage(&self, namespace: &Namespace) -> Result<StorageUsage, StoreError>;

    /// What the whole store holds (`folio store stats`).
    async fn total_usage(&self) -> Result<StorageUsage, StoreError>;

    /// Removes every entry of session `session_id`'s namespace (the session was deleted or
    /// expired); returns how many.
    async fn delete_session_entries(&self, session_id: &str) -> Result<u64, StoreError>;

    /// Removes the entries expired at `now`; returns how many.
    async fn purge_expired(&self, now: DateTime<Utc>) -> Result<u64, StoreError>;

    /// Every entry, expired ones not yet purged included, ordered by namespace (scope, agent,
    /// owner) then key (byte order), after `after` (exclusive), at most `limit` (capped at
    /// [`MAX_LIST`]): what `folio store copy` reads.
    async fn export(
        &self,
        after: Option<&(Namespace, String)>,
        limit: usize,
    ) -> Result<Vec<(Namespace, StorageEntry)>, StoreError>;

    /// Writes `entry` as another store keeps it (its version, update and expiry times) in
    /// place of the entry at its key, durably (`folio store copy`).
    async fn import(&self, namespace: &Namespace, entry: &StorageEntry) -> Result<(), StoreError>;
}
