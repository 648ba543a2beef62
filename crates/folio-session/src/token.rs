//! Continuation tokens and idempotency keys.
//!
//! A keyed message gets a token derived from the token it presented (or, for a new session,
//! from the session id) and its key, so a retry whose reply was lost gets the same token back
//! although `session.json` stores only token hashes. The log records each key on the message's
//! event (`clientMessageId`); `session.json` remembers the last [`REMEMBERED_KEYS`] keyed
//! follow-ups with the hash of the token each was answered with.

use folio_protocol::{Event, EventBody};
use folio_store_disk::create_keys::sha256_hex;

use crate::error::ManagerError;
use crate::state::{AcceptedKey, SessionMeta};
pub(crate) use folio_store_disk::create_keys::create_record_name;

/// How many keyed follow-ups per session `session.json` remembers (older retries get `409`).
pub(crate) const REMEMBERED_KEYS: usize = 32;

/// The longest idempotency key accepted.
const MAX_KEY_LEN: usize = 255;

/// A new HTTP continuation token: `http:` + 244 random bits.
pub(crate) fn new_token() -> String {
    format!(
        "http:{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// The token a keyed message is answered with: `http:` + SHA-256 of `seed` and `key` (hex).
/// `seed` is the token the follow-up presented (a secret of its holder) or the new session's id.
pub(crate) fn derived_token(seed: &str, key: &str) -> String {
    format!(
        "http:{}",
        sha256_hex(&format!("folio-token\0{seed}\0{key}"))
    )
}

/// SHA-256 of a token, hex (what `session.json` stores).
pub(crate) fn hash_token(token: &str) -> String {
    sha256_hex(token)
}

/// Checks an idempotency key: 1 to 255 visible ASCII characters.
pub(crate) fn check_key(key: &str) -> Result<(), ManagerError> {
    if key.is_empty() || key.len() > MAX_KEY_LEN || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ManagerError::Invalid(format!(
            "clientMessageId / Idempotency-Key: must be 1 to {MAX_KEY_LEN} visible ASCII characters"
        )));
    }
    Ok(())
}

/// The digest of a keyed request: SHA-256 (hex) of its JSON without the key and the token
/// (what a retry may not change). Serializing a protocol type is deterministic: fields in
/// declaration order, maps sorted.
pub(crate) fn request_digest(request: &impl serde::Serialize) -> Result<String, ManagerError> {
    let json = serde_json::to_string(request)
        .map_err(|err| ManagerError::internal_from("cannot digest the request", err))?;
    Ok(sha256_hex(&format!("folio-request\0{json}")))
}

/// The message recorded (received or queued) with idempotency key `key`, as the digest it was
/// recorded with (`Some(None)`: recorded without one); `None` when no message has the key.
pub(crate) fn recorded(events: &[Event], key: &str) -> Option<Option<String>> {
    events.iter().find_map(|event| match &event.body {
        EventBody::MessageReceived(m) if m.client_message_id.as_deref() == Some(key) => {
            Some(m.request_digest.clone())
        }
        EventBody::MessageQueued(m) if m.client_message_id.as_deref() == Some(key) => {
            Some(m.request_digest.clone())
        }
        _ => None,
    })
}

/// Refuses a retry of `key` whose request digest differs from the one recorded with it (a
/// message recorded without a digest, by an older version, is taken as the same request).
pub(crate) fn check_same_request(
    key: &str,
    recorded: Option<&str>,
    digest: Option<&str>,
) -> Result<(), ManagerError> {
    match (recorded, digest) {
        (Some(recorded), Some(digest)) if recorded != digest => {
            Err(ManagerError::KeyReused(key.to_string()))
        }
        _ => Ok(()),
    }
}

/// Remembers that `key` was answered with the token hashed `token_hash` (the newest
/// [`REMEMBERED_KEYS`] are kept).
pub(crate) fn remember_key(meta: &mut SessionMeta, key: &str, token_hash: &str) {
    meta.accepted_keys.retain(|accepted| accepted.key != key);
    meta.accepted_keys.push(AcceptedKey {
        key: key.to_string(),
        token_hash: token_hash.to_string(),
    });
    let excess = meta.accepted_keys.len().saturating_sub(REMEMBERED_KEYS);
    meta.accepted_keys.drain(..excess);
}

/// Whether `session.json` remembers `key` answered with `token`.
pub(crate) fn answered_with(meta: &SessionMeta, key: &str, token: &str) -> bool {
    let hash = hash_token(token);
    meta.accepted_keys
        .iter()
        .any(|accepted| accepted.key == key && accepted.token_hash == hash)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::SessionMeta;

    fn meta() -> SessionMeta {
        serde_json::from_value(serde_json::json!({
            "sessionId": "ses_01JDXYZ0000000000000000000",
            "mode": "chat",
            "status": "waiting",
            "channel": "http",
            "principal": "local",
            "createdAt": "2026-11-30T00:00:00Z",
            "updatedAt": "2026-11-30T00:00:00Z"
        }))
        .unwrap()
    }

    #[test]
    fn a_derived_token_depends_on_the_seed_and_the_key_only() {
        let token = derived_token("http:old", "k1");
        assert_eq!(token, derived_token("http:old", "k1"));
        assert_ne!(token, derived_token("http:old", "k2"));
        assert_ne!(token, derived_token("http:other", "k1"));
        assert_eq!(token.len(), "http:".len() + 64);
    }

    #[test]
    fn keys_are_checked_and_the_newest_are_remembered() {
        assert!(check_key("msg-1").is_ok());
        for bad in ["", "has space", "é", &"x".repeat(256)] {
            assert!(check_key(bad).is_err(), "{bad:?}");
        }
        let mut meta = meta();
        for n in 0..=REMEMBERED_KEYS {
            remember_key(&mut meta, &format!("k{n}"), &hash_token(&format!("t{n}")));
        }
        assert_eq!(meta.accepted_keys.len(), REMEMBERED_KEYS);
        assert!(!answered_with(&meta, "k0", "t0"), "the oldest is forgotten");
        assert!(answered_with(&meta, "k1", "t1"));
        assert!(
            !answered_with(&meta, "k1", "t2"),
            "a key answers only its own token"
        );
        let last = format!("k{REMEMBERED_KEYS}");
        assert!(answered_with(&meta, &last, &format!("t{REMEMBERED_KEYS}")));
    }
}
