//! Records of keyed creates (`<state-root>/idempotency/<sha256(principal, key)>`): the session a
//! create with an idempotency key made, and the digest of its request, durable before the
//! session exists so that a retry after a crash finds it.

use sha2::Digest;

use crate::state::{SyncTarget, commit, write_unsynced};

/// Where the session created by `principal` with `key` is recorded (`<state>/idempotency/…`).
pub fn create_record_name(principal: &str, key: &str) -> String {
    sha256_hex(&format!("folio-create\0{principal}\0{key}"))
}

/// A keyed create's record as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateRecord {
    /// The session it made (empty: a torn record, never acknowledged).
    pub session_id: String,
    /// The digest of its request (records of older folios have none).
    pub digest: Option<String>,
    /// The principal and key it is for (records of older folios have none: only the hash of
    /// both names the file).
    pub owner: Option<Owner>,
}

/// Whose keyed create a record is (its third line, one JSON object).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Owner {
    /// The principal.
    pub principal: String,
    /// The idempotency key.
    pub key: String,
}

impl CreateRecord {
    /// The record as the store trait speaks it, when it says whose it is.
    pub fn into_create_key(self) -> Option<folio_store::CreateKey> {
        let (Some(digest), Some(owner)) = (self.digest, self.owner) else {
            return None;
        };
        (!self.session_id.is_empty()).then_some(folio_store::CreateKey {
            principal: owner.principal,
            key: owner.key,
            session_id: self.session_id,
            digest,
        })
    }
}

/// The record of a keyed create at `path`: the session id it names (first line), the
/// request's digest (second line, when there is one) and its principal and key (third line,
/// when there is one); `None` when there is no record.
pub fn read_create_record(path: &std::path::Path) -> std::io::Result<Option<CreateRecord>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err),
    };
    let mut lines = text.lines().map(str::trim);
    let session_id = lines.next().unwrap_or_default().to_string();
    let digest = lines.next().map(str::to_string);
    let owner = lines
        .next()
        .and_then(|line| serde_json::from_str(line).ok());
    Ok(Some(CreateRecord {
        session_id,
        digest,
        owner,
    }))
}

/// Records at `path` that a keyed create of `record.principal` with `record.key` made
/// `record.session_id` from the request with `record.digest`, durably: written in place (a
/// torn record, never acknowledged, names no session and is rewritten), then synced with its
/// directory's entry.
pub async fn write_create_record(
    path: &std::path::Path,
    record: &folio_store::CreateKey,
) -> std::io::Result<()> {
    let owner = serde_json::to_string(&Owner {
        principal: record.principal.clone(),
        key: record.key.clone(),
    })
    .map_err(std::io::Error::other)?;
    let text = format!("{}\n{}\n{owner}\n", record.session_id, record.digest);
    write_unsynced(path, text.as_bytes(), false)?;
    let mut targets = vec![SyncTarget::Path(path.to_path_buf())];
    targets.extend(path.parent().map(|dir| SyncTarget::Path(dir.to_path_buf())));
    commit(targets).await
}

/// SHA-256 of `text`, lowercase hex.
pub fn sha256_hex(text: &str) -> String {
    let digest = sha2::Sha256::digest(text.as_bytes());
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}
