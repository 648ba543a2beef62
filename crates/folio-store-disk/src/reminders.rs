//! Reminders on disk: one file per reminder, `reminders/<sessionId>/<reminderId>.json`,
//! written durably when set and removed when delivered or cancelled.

use folio_protocol::Reminder;
use folio_store::StoreError;

use crate::state::{StateRoot, SyncTarget, commit, valid_session_id, write_durably};

/// The directory of a session's reminders.
fn session_dir(state: &StateRoot, session_id: &str) -> std::path::PathBuf {
    state.path().join("reminders").join(session_id)
}

/// Whether `id` has the form `rem_` + 26 ULID characters (and so is safe as a file name).
pub fn valid_reminder_id(id: &str) -> bool {
    id.strip_prefix("rem_")
        .is_some_and(|rest| rest.len() == 26 && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// Every stored reminder of the state root, by session.
pub fn stored_reminders(state: &StateRoot) -> Result<Vec<Reminder>, StoreError> {
    let root = state.path().join("reminders");
    let sessions = match std::fs::read_dir(&root) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(io("cannot read the reminders", err)),
    };
    let mut reminders = Vec::new();
    for session in sessions.flatten() {
        let id = session.file_name().to_string_lossy().into_owned();
        if valid_session_id(&id) {
            reminders.extend(stored_reminders_of(state, &id)?);
        }
    }
    Ok(reminders)
}

/// Whether the session has a reminder still to deliver (retention keeps such a session); a
/// reminder folder that cannot be read counts as holding one, so nothing is lost to an I/O
/// error.
pub fn has_reminders(state: &StateRoot, session_id: &str) -> bool {
    stored_reminders_of(state, session_id).map_or(true, |reminders| !reminders.is_empty())
}

/// The stored reminders of one session, earliest first.
pub fn stored_reminders_of(
    state: &StateRoot,
    session_id: &str,
) -> Result<Vec<Reminder>, StoreError> {
    let entries = match std::fs::read_dir(session_dir(state, session_id)) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(io("cannot read the session's reminders", err)),
    };
    let mut reminders = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let bytes = std::fs::read(&path).map_err(|e| io("cannot read a reminder", e))?;
        let reminder: Reminder = serde_json::from_slice(&bytes).map_err(|err| {
            StoreError::backend(format!(
                "the reminder {} is not valid JSON ({err}): remove it",
                path.display()
            ))
        })?;
        reminders.push(reminder);
    }
    reminders.sort_by_key(|r| (r.at, r.reminder_id.clone()));
    Ok(reminders)
}

/// Writes a reminder's file durably (`reminders/<sessionId>/<reminderId>.json`).
pub async fn write_reminder_file(state: &StateRoot, reminder: &Reminder) -> Result<(), StoreError> {
    let dir = session_dir(state, &reminder.session_id);
    let bytes = serde_json::to_vec_pretty(reminder)
        .map_err(|e| StoreError::backend_from("cannot encode the reminder", e))?;
    write_durably(&dir.join(format!("{}.json", reminder.reminder_id)), &bytes)
        .await
        .map_err(|e| io("cannot store the reminder", e))
}

/// Removes a reminder's file durably; whether it was there.
pub async fn remove_reminder_file(
    state: &StateRoot,
    session_id: &str,
    reminder_id: &str,
) -> Result<bool, StoreError> {
    if !valid_reminder_id(reminder_id) || !valid_session_id(session_id) {
        return Ok(false);
    }
    let dir = session_dir(state, session_id);
    match std::fs::remove_file(dir.join(format!("{reminder_id}.json"))) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(err) => return Err(io("cannot remove the reminder", err)),
    }
    sync_reminders(dir).await?;
    Ok(true)
}

/// Makes a removal from a session's reminders durable.
async fn sync_reminders(dir: std::path::PathBuf) -> Result<(), StoreError> {
    commit(vec![SyncTarget::Path(dir)])
        .await
        .map_err(|e| io("cannot sync the reminders", e))
}

fn io(context: &str, source: std::io::Error) -> StoreError {
    StoreError::Io {
        context: context.to_string(),
        source,
    }
}
