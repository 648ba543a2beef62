//! Storage through the host API and the model's `storage_*` tools: the checks every write
//! passes (key and value sizes, the namespace's quota) before the store's
//! [`folio_store::StorageStore`] keeps it.

use chrono::Duration;
use folio_protocol::{
    KvDelete, KvEntryResponse, KvGet, KvList, KvListResponse, KvPut, OkTrue, StorageScope,
};
use folio_store::{Condition, MAX_KEY_BYTES, MAX_LIST, MAX_VALUE_BYTES, Namespace, Written};
use serde_json::{Value, json};

use crate::engine::Engine;
use crate::error::{ManagerError, store_error};

/// Entries one namespace may hold.
pub const MAX_ENTRIES: u64 = 10_000;
/// Bytes (keys and JSON values) one namespace may hold.
pub const MAX_NAMESPACE_BYTES: u64 = 16 * 1024 * 1024;
/// The longest time to live, in seconds (a year).
const MAX_TTL_SECONDS: u64 = 366 * 24 * 3600;

/// Who is reading or writing: the session, its principal and its agent.
pub(crate) struct Owner<'a> {
    /// The session.
    pub(crate) session_id: &'a str,
    /// Its principal.
    pub(crate) principal: &'a str,
    /// The agent's name.
    pub(crate) agent: &'a str,
}

impl Owner<'_> {
    fn namespace(&self, scope: StorageScope) -> Namespace {
        Namespace::of(scope, self.agent, self.session_id, self.principal)
    }
}

fn check_key(key: &str) -> Result<(), ManagerError> {
    if key.is_empty() || key.len() > MAX_KEY_BYTES {
        return Err(ManagerError::Invalid(format!(
            "key: {} bytes; a key is 1 to {MAX_KEY_BYTES} bytes",
            key.len()
        )));
    }
    if key.chars().any(char::is_control) {
        return Err(ManagerError::Invalid(
            "key: holds a control character; use printable text".into(),
        ));
    }
    Ok(())
}

/// What a storage call records in the log: scope, key and the version it saw or wrote.
fn detail(scope: StorageScope, key: &str, entry: Option<&folio_protocol::StorageEntry>) -> Value {
    json!({"scope": scope, "key": key, "version": entry.map(|entry| entry.version)})
}

/// Reads one entry.
pub(crate) async fn get(
    engine: &Engine,
    owner: &Owner<'_>,
    request: &KvGet,
) -> Result<(KvEntryResponse, Value), ManagerError> {
    check_key(&request.key)?;
    let entry = engine
        .store
        .storage()
        .get(
            &owner.namespace(request.scope),
            &request.key,
            engine.clock().now(),
        )
        .await
        .map_err(|err| store_error("cannot read the storage entry", err))?;
    let detail = detail(request.scope, &request.key, entry.as_ref());
    Ok((KvEntryResponse { ok: OkTrue, entry }, detail))
}

/// Writes one entry after the size, TTL and quota checks.
pub(crate) async fn put(
    engine: &Engine,
    owner: &Owner<'_>,
    request: &KvPut,
) -> Result<(KvEntryResponse, Value), ManagerError> {
    check_key(&request.key)?;
    let size = serde_json::to_string(&request.value)
        .map(|text| text.len())
        .unwrap_or(usize::MAX);
    if size > MAX_VALUE_BYTES {
        return Err(ManagerError::Invalid(format!(
            "value: {size} bytes of JSON; a value is at most {MAX_VALUE_BYTES} bytes (keep large data in files or artifacts)"
        )));
    }
    if folio_store::value_text(&request.value).is_err() {
        return Err(ManagerError::Invalid(
            "value: holds a NUL character (\\u0000), which cannot be stored; remove it".into(),
        ));
    }
    let now = engine.clock().now();
    let expires_at = match request.ttl_seconds {
        None => None,
        Some(0) => {
            return Err(ManagerError::Invalid(
                "ttlSeconds: 0; give a positive number of seconds, or leave it out to keep the entry".into(),
            ));
        }
        Some(seconds) if seconds > MAX_TTL_SECONDS => {
            return Err(ManagerError::Invalid(format!(
                "ttlSeconds: {seconds}; at most {MAX_TTL_SECONDS} (a year)"
            )));
        }
        Some(seconds) => Some(now + Duration::seconds(i64::try_from(seconds).unwrap_or(0))),
    };
    let namespace = owner.namespace(request.scope);
    let storage = engine.store.storage();
    let usage = storage
        .usage(&namespace)
        .await
        .map_err(|err| store_error("cannot read the storage quota", err))?;
    let adds = (request.key.len() + size) as u64;
    if usage.entries >= MAX_ENTRIES || usage.bytes + adds > MAX_NAMESPACE_BYTES {
        // An overwrite that does not grow the namespace is always taken.
        let existing = storage
            .get(&namespace, &request.key, now)
            .await
            .map_err(|err| store_error("cannot read the storage entry", err))?;
        let grows = existing.as_ref().is_none_or(|entry| {
            let before = serde_json::to_string(&entry.value).map_or(0, |text| text.len());
            size > before
        });
        if grows {
            return Err(ManagerError::Limited {
                message: format!(
                    "storage quota of the {} scope: {} entries, {} bytes (at most {MAX_ENTRIES} entries and {MAX_NAMESPACE_BYTES} bytes); delete entries or give them a TTL",
                    request.scope.as_str(),
                    usage.entries,
                    usage.bytes
                ),
                retry_after: None,
            });
        }
    }
    let condition = match request.if_version {
        None => Condition::Any,
        Some(0) => Condition::Absent,
        Some(version) => Condition::Version(version),
    };
    let written = storage
        .put(
            &namespace,
            &request.key,
            &request.value,
            condition,
            expires_at,
            now,
        )
        .await
        .map_err(|err| store_error("cannot write the storage entry", err))?;
    match written {
        Written::Done(entry) => {
            let detail = detail(request.scope, &request.key, entry.as_ref());
            Ok((KvEntryResponse { ok: OkTrue, entry }, detail))
        }
        Written::Conflict(current) => Err(conflict(&request.key, request.if_version, current)),
    }
}

fn conflict(
    key: &str,
    wanted: Option<u64>,
    current: Option<folio_protocol::StorageEntry>,
) -> ManagerError {
    let now = match &current {
        Some(entry) => format!("it is at version {}", entry.version),
        None => "it has no entry".to_string(),
    };
    let wanted = match wanted {
        Some(0) => "no entry".to_string(),
        Some(version) => format!("version {version}"),
        None => "any version".to_string(),
    };
    ManagerError::Conflict(format!(
        "key {key}: expected {wanted}, but {now}; read it again and retry"
    ))
}

/// Removes one entry.
pub(crate) async fn delete(
    engine: &Engine,
    owner: &Owner<'_>,
    request: &KvDelete,
) -> Result<(KvEntryResponse, Value), ManagerError> {
    check_key(&request.key)?;
    let condition = request
        .if_version
        .map_or(Condition::Any, Condition::Version);
    let written = engine
        .store
        .storage()
        .delete(
            &owner.namespace(request.scope),
            &request.key,
            condition,
            engine.clock().now(),
        )
        .await
        .map_err(|err| store_error("cannot delete the storage entry", err))?;
    match written {
        Written::Done(entry) => {
            let detail = detail(request.scope, &request.key, entry.as_ref());
            Ok((KvEntryResponse { ok: OkTrue, entry }, detail))
        }
        Written::Conflict(current) => Err(conflict(&request.key, request.if_version, current)),
    }
}

/// A page of entries.
pub(crate) async fn list(
    engine: &Engine,
    owner: &Owner<'_>,
    request: &KvList,
) -> Result<(KvListResponse, Value), ManagerError> {
    let limit = request
        .limit
        .map_or(MAX_LIST, |limit| (limit as usize).clamp(1, MAX_LIST));
    let page = engine
        .store
        .storage()
        .list(
            &owner.namespace(request.scope),
            request.prefix.as_deref().unwrap_or(""),
            request.after.as_deref(),
            limit,
            engine.clock().now(),
        )
        .await
        .map_err(|err| store_error("cannot list the storage entries", err))?;
    let detail =
        json!({"scope": request.scope, "prefix": request.prefix, "count": page.entries.len()});
    Ok((
        KvListResponse {
            ok: OkTrue,
            entries: page.entries,
            next: page.next,
        },
        detail,
    ))
}
