//! What `folio store copy` writes into (and reads from) a state root beside the live store's
//! own paths: whole sessions ([`import_session`]), the list of keyed creates
//! ([`list_create_keys`]) and the marker of a copy under way ([`copy_marker`]).

use std::path::PathBuf;

use folio_protocol::Event;
use folio_store::{CreateKey, SessionMeta, StoreError};

use crate::create_keys::read_create_record;
use crate::state::{MetaFile, StateRoot, SyncTarget, commit, new_session_targets, stage};

/// `<state-root>/copy-in-progress`: written by `folio store copy` before anything else,
/// removed once the copy is verified.
pub fn copy_marker_path(state: &StateRoot) -> PathBuf {
    state.path().join("copy-in-progress")
}

/// What the copy marker of `state` says (`None`: no copy is under way). Read without opening
/// the store, so `folio serve` can refuse before it takes the state root.
pub fn copy_marker(state: &StateRoot) -> std::io::Result<Option<String>> {
    match std::fs::read_to_string(copy_marker_path(state)) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err),
    }
}

/// Writes (or, with `None`, removes) the copy marker of `state`, durably.
pub(crate) async fn set_copy_marker(
    state: &StateRoot,
    marker: Option<&str>,
) -> Result<(), StoreError> {
    let path = copy_marker_path(state);
    let failed = |source| StoreError::Io {
        context: format!("cannot write {}", path.display()),
        source,
    };
    match marker {
        Some(text) => crate::state::write_durably(&path, text.as_bytes())
            .await
            .map_err(failed),
        None => {
            match std::fs::remove_file(&path) {
                Err(err) if err.kind() != std::io::ErrorKind::NotFound => return Err(failed(err)),
                _ => {}
            }
            commit(vec![SyncTarget::Path(state.path().to_path_buf())])
                .await
                .map_err(failed)
        }
    }
}

/// Writes session `meta` with its `events` in place of whatever its id had: the log is
/// staged whole beside its file and both files are synced, then renamed into place (the log
/// first) and their directories synced. A crash leaves the old session, or the new log with
/// the old metadata (which the copy redoes: its last event differs), never a torn file.
pub(crate) async fn import_session(
    state: &StateRoot,
    meta: &SessionMeta,
    events: &[Event],
) -> Result<(), StoreError> {
    let id = &meta.session_id;
    let io = |context: &str| {
        let context = format!("session {id}: {context}");
        move |source| StoreError::Io { context, source }
    };
    let mut log = Vec::new();
    for event in events {
        serde_json::to_writer(&mut log, event)
            .map_err(|err| StoreError::backend_from(format!("session {id}: an event"), err))?;
        log.push(b'\n');
    }
    std::fs::create_dir_all(state.session_dir(id)).map_err(io("cannot create its folder"))?;
    let staged_log = stage(&state.trace_path(id), &log).map_err(io("cannot write its log"))?;
    let staged_meta = meta.stage(state).map_err(io("cannot write session.json"))?;
    commit(vec![staged_log.target(), staged_meta.target()])
        .await
        .map_err(io("cannot sync its files"))?;
    staged_log
        .install()
        .await
        .map_err(io("cannot install its log"))?;
    staged_meta
        .install()
        .await
        .map_err(io("cannot install session.json"))?;
    commit(new_session_targets(state, id))
        .await
        .map_err(io("cannot sync its folders"))
}

/// The records of keyed creates under `idempotency/` that name their principal and key
/// (records written before they did are skipped: a file is named by a hash of both), by
/// principal then key, after `after`, at most `limit`.
pub(crate) fn list_create_keys(
    state: &StateRoot,
    after: Option<(&str, &str)>,
    limit: usize,
) -> Result<Vec<CreateKey>, StoreError> {
    let dir = state.path().join("idempotency");
    let failed = |source| StoreError::Io {
        context: format!("cannot read {}", dir.display()),
        source,
    };
    let files = match std::fs::read_dir(&dir) {
        Ok(files) => files,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(failed(err)),
    };
    let mut records = Vec::new();
    for file in files {
        let path = file.map_err(failed)?.path();
        if path.extension().is_some() {
            continue;
        }
        let Some(record) = read_create_record(&path).map_err(failed)? else {
            continue;
        };
        if let Some(record) = record.into_create_key()
            && after.is_none_or(|after| (record.principal.as_str(), record.key.as_str()) > after)
        {
            records.push(record);
        }
    }
    records.sort_by(|a, b| (&a.principal, &a.key).cmp(&(&b.principal, &b.key)));
    records.truncate(limit);
    Ok(records)
}
