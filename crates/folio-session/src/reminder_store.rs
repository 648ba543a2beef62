//! A session's reminders in the store, and the reminders a turn's `set_reminder` calls asked
//! for (the session's actor records them when the turn ends). Setting, cancelling and
//! delivering them is the [`Reminders`](crate::Reminders) handle's (module `reminders`).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use folio_agent::tools::SET_REMINDER;
use folio_protocol::{EventBody, Reminder, ReminderSet, SessionMode};
use serde_json::Value;

use crate::engine::Engine;
use crate::error::{ManagerError, store_error};
use crate::live::Live;
use crate::sync::lock;

/// Stores a new reminder of `live`'s session durably and wakes the delivery loop; returns it
/// with the `reminder.set` to record (with the `set_reminder` call that asked for it, if any),
/// which the caller appends: the session's actor itself, or through it.
pub(crate) async fn set(
    engine: &Engine,
    live: &Live,
    at: DateTime<Utc>,
    message: String,
    call_id: Option<String>,
) -> Result<(Reminder, EventBody), ManagerError> {
    let reminder = Reminder {
        reminder_id: format!("rem_{}", ulid::Ulid::generate()),
        session_id: live.id.clone(),
        at,
        message,
        created_at: engine.clock().now(),
    };
    let _order = engine.timers.reminders.lock().await;
    put(engine, &reminder).await?;
    engine.timers.reminders_changed.notify_one();
    let set = EventBody::ReminderSet(ReminderSet {
        reminder_id: reminder.reminder_id.clone(),
        at,
        message: reminder.message.clone(),
        call_id,
    });
    Ok((reminder, set))
}

/// Stores a reminder durably.
pub(crate) async fn put(engine: &Engine, reminder: &Reminder) -> Result<(), ManagerError> {
    engine
        .store
        .put_reminder(reminder)
        .await
        .map_err(|e| store_error("cannot store the reminder", e))
}

/// Removes a reminder (delivered or cancelled); whether it was there.
pub(crate) async fn remove(
    engine: &Engine,
    session_id: &str,
    reminder_id: &str,
) -> Result<bool, ManagerError> {
    engine
        .store
        .remove_reminder(session_id, reminder_id)
        .await
        .map_err(|e| store_error("cannot remove the reminder", e))
}

/// The session's pending reminders, earliest first.
pub(crate) async fn of_session(
    engine: &Engine,
    session_id: &str,
) -> Result<Vec<Reminder>, ManagerError> {
    engine
        .store
        .session_reminders(session_id)
        .await
        .map_err(|e| store_error("cannot read the reminders", e))
}

/// Every pending reminder (of every session: on a shared store, every server's).
pub(crate) async fn pending(engine: &Engine) -> Result<Vec<Reminder>, ManagerError> {
    engine
        .store
        .due_reminders(None, usize::MAX)
        .await
        .map_err(|e| store_error("cannot read the reminders", e))
}

/// Turns the `set_reminder` calls of `live`'s log that succeeded and have no reminder yet into
/// reminders (a delay counts from now); the actor calls it when a turn ends.
pub(crate) async fn record_requested(engine: &Engine, live: &Live) -> Result<(), ManagerError> {
    let requests: Vec<(String, Value)> = live.with_events(|events| {
        let mut calls: BTreeMap<&str, &Value> = BTreeMap::new();
        let mut requests = Vec::new();
        for event in events {
            match &event.body {
                EventBody::ActionsRequested(requested) => {
                    for call in requested.calls.iter().filter(|c| c.tool == SET_REMINDER) {
                        calls.insert(&call.call_id, &call.input);
                    }
                }
                EventBody::ActionResult(result) if !result.is_error => {
                    if let Some(input) = calls.remove(result.call_id.as_str()) {
                        requests.push((result.call_id.clone(), input.clone()));
                    }
                }
                EventBody::ReminderSet(set) => {
                    if let Some(call_id) = &set.call_id {
                        requests.retain(|(id, _)| id != call_id);
                    }
                }
                _ => {}
            }
        }
        requests
    });
    if requests.is_empty() {
        return Ok(());
    }
    if lock(&live.meta).mode == SessionMode::Task {
        return Err(ManagerError::NotFollowable(live.id.clone()));
    }
    for (call_id, input) in requests {
        let text = |key: &str| input.get(key).and_then(Value::as_str);
        let at = match (text("at"), text("in")) {
            (Some(at), _) => at.parse::<DateTime<Utc>>().ok(),
            (None, Some(after)) => folio_project::parse_delay(after)
                .ok()
                .map(|delay| engine.clock().now() + delay),
            (None, None) => None,
        };
        let (Some(at), Some(message)) = (at, text("message")) else {
            continue;
        };
        let (_, set) = set(engine, live, at, message.to_string(), Some(call_id)).await?;
        live.append(None, set)?;
    }
    Ok(())
}
