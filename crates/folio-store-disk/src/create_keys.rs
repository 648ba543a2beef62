//! Records of keyed creates (`<state-root>/idempotency/<sha256(principal, key)>`): the session a
//! create with an idempotency key made, and the digest of its request, durable before the
//! session exists so that a retry after a crash finds it.

use sha2::Digest;

use crate::state::{SyncTarget, commit, write_unsynced};

/// Where the session created by `principal` with `key` is recorded (`<state>/idempotency/…`).
pub fn create_record_name(principal: &str, key: &str) -> String {
    sha256_hex(&format!("folio-create\0{principal}\0{key}"))
}

/// The record of a keyed create at `path`: the session id it names (first line) and the
/// request's digest (second line, when there is one); `None` when there is no record.
pub fn read_create_record(
    path: &std::path::Path,
) -> std::io::Result<Option<(String, Option<String>)>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err),
    };
    let mut lines = text.lines().map(str::trim);
    let session_id = lines.next().unwrap_or_default().to_string();
    Ok(Some((session_id, lines.next().map(str::to_string))))
}

/// Records at `path` that a keyed create made `session_id` from the request with `digest`,
/// durably: written in place (a torn record, never acknowledged, names no session and is
/// rewritten), then synced with its directory's entry.
pub async fn write_create_record(
    path: &std::path::Path,
    session_id: &str,
    digest: &str,
) -> std::io::Result<()> {
    write_unsynced(path, format!("{session_id}\n{digest}\n").as_bytes(), false)?;
    let mut targets = vec![SyncTarget::Path(path.to_path_buf())];
    targets.extend(path.parent().map(|dir| SyncTarget::Path(dir.to_path_buf())));
    commit(targets).await
}

/// SHA-256 of `text`, lowercase hex.
pub fn sha256_hex(text: &str) -> String {
    let digest = sha2::Sha256::digest(text.as_bytes());
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}
