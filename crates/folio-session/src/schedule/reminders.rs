//! Reminders: one-off wakes of a chat session, stored under the state root
//! (`reminders/<sessionId>/<reminderId>.json`, written durably) and delivered at their time as a
//! coalesced follow-up. Delivery is exactly once across restarts: `reminder.fired` is recorded,
//! the message is admitted with the idempotency key `reminder:<id>` (a retry after a crash is
//! recognized), then the file is removed. A reminder that fell due while no server ran is
//! delivered at start, marked late. On a shared store (`folio serve --store`) reminders are rows
//! of the store: every server delivers the due ones, and the session's lease, the check for
//! `reminder.fired` inside the owner's actor and the message's key make each delivery run
//! once.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use folio_agent::tools::SET_REMINDER;
use folio_protocol::{
    Admission, EventBody, Reminder, ReminderCancelled, ReminderFired, ReminderSet, SessionMode,
    SetReminder,
};
use serde_json::Value;

use crate::cluster::Remote;
use crate::command::{Admit, Command, Pending};
use crate::error::{ManagerError, store_error};
use crate::live::{Live, lock};
use crate::manager::SessionManager;
use crate::shared::Inner;
use folio_store_disk::reminders::valid_reminder_id;

/// How often a server on a shared store looks for reminders other servers set.
const SHARED_POLL: std::time::Duration = std::time::Duration::from_secs(2);

/// A reminder delivered more than this long after its time is marked late.
const LATE_AFTER: Duration = Duration::seconds(60);

/// Stores a new reminder of `live`'s session durably and wakes the delivery loop; returns it
/// with the `reminder.set` to record (with the `set_reminder` call that asked for it, if any),
/// which the caller appends: the session's actor itself, or through it.
async fn set(
    inner: &Inner,
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
        created_at: inner.clock().now(),
    };
    let _order = inner.reminders.lock().await;
    inner.put_reminder(&reminder).await?;
    inner.reminders_changed.notify_one();
    let set = EventBody::ReminderSet(ReminderSet {
        reminder_id: reminder.reminder_id.clone(),
        at,
        message: reminder.message.clone(),
        call_id,
    });
    Ok((reminder, set))
}

impl Inner {
    /// Stores a reminder durably.
    async fn put_reminder(&self, reminder: &Reminder) -> Result<(), ManagerError> {
        self.store
            .put_reminder(reminder)
            .await
            .map_err(|e| store_error("cannot store the reminder", e))
    }

    /// Removes a reminder (delivered or cancelled); whether it was there.
    async fn drop_reminder(
        &self,
        session_id: &str,
        reminder_id: &str,
    ) -> Result<bool, ManagerError> {
        self.store
            .remove_reminder(session_id, reminder_id)
            .await
            .map_err(|e| store_error("cannot remove the reminder", e))
    }

    /// The session's pending reminders, earliest first.
    async fn reminders_of(&self, session_id: &str) -> Result<Vec<Reminder>, ManagerError> {
        self.store
            .session_reminders(session_id)
            .await
            .map_err(|e| store_error("cannot read the reminders", e))
    }

    /// Every pending reminder (of every session: on a shared store, every server's).
    async fn pending_reminders(&self) -> Result<Vec<Reminder>, ManagerError> {
        self.store
            .due_reminders(None, usize::MAX)
            .await
            .map_err(|e| store_error("cannot read the reminders", e))
    }
}

/// Turns the `set_reminder` calls of `live`'s log that succeeded and have no reminder yet into
/// reminders (a delay counts from now); the actor calls it when a turn ends.
pub(crate) async fn record_requested(inner: &Inner, live: &Live) -> Result<(), ManagerError> {
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
                .map(|delay| inner.clock().now() + delay),
            (None, None) => None,
        };
        let (Some(at), Some(message)) = (at, text("message")) else {
            continue;
        };
        let (_, set) = set(inner, live, at, message.to_string(), Some(call_id)).await?;
        live.append(None, set)?;
    }
    Ok(())
}

impl SessionManager {
    /// Sets a reminder on `principal`'s chat session: stored durably, recorded as
    /// `reminder.set`, delivered at `at` (or `in` from now).
    pub async fn set_reminder(
        &self,
        principal: &str,
        session_id: &str,
        request: SetReminder,
    ) -> Result<Reminder, ManagerError> {
        let now = self.clock().now();
        let at = match (request.at, request.after.as_deref()) {
            (Some(at), None) => at,
            (None, Some(after)) => {
                now + folio_project::parse_delay(after)
                    .map_err(|err| ManagerError::Invalid(format!("in: {err}")))?
            }
            _ => {
                return Err(ManagerError::Invalid(
                    "at, in: give exactly one of them (an RFC 3339 instant, or a delay like \"2h\")"
                        .into(),
                ));
            }
        };
        if at <= now {
            return Err(ManagerError::Invalid(format!(
                "at: {at} has passed; give a future instant"
            )));
        }
        if request.message.trim().is_empty() {
            return Err(ManagerError::Invalid(
                "message: empty; say what the reminder delivers".into(),
            ));
        }
        let live = self.owned(principal, session_id).await?;
        if lock(&live.meta).mode == SessionMode::Task {
            return Err(ManagerError::NotFollowable(session_id.to_string()));
        }
        let (reminder, set) = set(&self.inner, &live, at, request.message, None).await?;
        self.record_event(&live, None, set, None).await?;
        Ok(reminder)
    }

    /// The pending reminders of `principal`'s session, earliest first.
    pub async fn reminders(
        &self,
        principal: &str,
        session_id: &str,
    ) -> Result<Vec<Reminder>, ManagerError> {
        self.owned_meta(principal, session_id).await?;
        self.inner.reminders_of(session_id).await
    }

    /// Cancels a pending reminder (`reminder.cancelled`); one that fired or never existed is
    /// not found.
    pub async fn cancel_reminder(
        &self,
        principal: &str,
        session_id: &str,
        reminder_id: &str,
    ) -> Result<(), ManagerError> {
        let live = self.owned(principal, session_id).await?;
        let not_found = || ManagerError::NotFound(format!("no pending reminder {reminder_id}"));
        if !valid_reminder_id(reminder_id) {
            return Err(not_found());
        }
        let order = self.inner.reminders.lock().await;
        if !self.inner.drop_reminder(session_id, reminder_id).await? {
            return Err(not_found());
        }
        drop(order);
        let cancelled = EventBody::ReminderCancelled(ReminderCancelled {
            reminder_id: reminder_id.to_string(),
        });
        self.record_event(&live, None, cancelled, None).await?;
        self.inner.reminders_changed.notify_one();
        Ok(())
    }

    /// Delivers reminders at their time until the manager shuts down; the ones that fell due
    /// while no server ran are delivered at once, marked late.
    pub async fn run_reminders(self) {
        let clock = self.clock();
        let started = clock.now();
        let shutdown = self.inner.shutdown.clone();
        loop {
            let next = match self.deliver_due(started).await {
                Ok(next) => next,
                Err(err) => {
                    tracing::error!("reminders: {err}");
                    Some(clock.now() + LATE_AFTER)
                }
            };
            let wake = next.unwrap_or_else(|| clock.now() + Duration::hours(1));
            // Other servers sharing the store set reminders this one is not told of: it looks
            // again every few seconds.
            let shared = tokio::time::sleep(SHARED_POLL);
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = self.inner.reminders_changed.notified() => {}
                _ = clock.sleep_until(wake) => {}
                () = shared => {}
            }
        }
    }

    /// Delivers every reminder due now; answers when the next one is due.
    async fn deliver_due(
        &self,
        started: DateTime<Utc>,
    ) -> Result<Option<DateTime<Utc>>, ManagerError> {
        let _order = self.inner.reminders.lock().await;
        let now = self.clock().now();
        let mut pending: BTreeMap<DateTime<Utc>, Vec<Reminder>> = BTreeMap::new();
        for reminder in self.inner.pending_reminders().await? {
            pending.entry(reminder.at).or_default().push(reminder);
        }
        let later = pending.split_off(&(now + Duration::nanoseconds(1)));
        for reminder in pending.into_values().flatten() {
            let late = reminder.at < started || now - reminder.at > LATE_AFTER;
            if let Err(err) = self.deliver(&reminder, late).await {
                tracing::error!(
                    "reminder {} of session {}: {err}",
                    reminder.reminder_id,
                    reminder.session_id
                );
            }
        }
        Ok(later.into_keys().next())
    }

    /// Records `reminder.fired` (once), admits the message with the reminder's key, then
    /// removes the reminder. A session deleted since only loses its reminder.
    async fn deliver(&self, reminder: &Reminder, late: bool) -> Result<(), ManagerError> {
        let id = reminder.reminder_id.clone();
        let meta = self.inner.load_meta(&reminder.session_id).await?;
        if let Some(meta) = meta {
            let live = self.owned(&meta.principal, &reminder.session_id).await?;
            let fired = EventBody::ReminderFired(ReminderFired {
                reminder_id: id.clone(),
                at: reminder.at,
                late,
            });
            // Once, whichever server delivers it first.
            let once = id.clone();
            let recorded: crate::cluster::Done = Box::new(move |events| {
                events.iter().any(
                    |e| matches!(&e.body, EventBody::ReminderFired(f) if f.reminder_id == once),
                )
            });
            self.record_event(&live, None, fired, Some(recorded))
                .await?;
            let text = if late {
                format!(
                    "Reminder (late: it was due at {}): {}",
                    reminder.at, reminder.message
                )
            } else {
                format!("Reminder: {}", reminder.message)
            };
            let admit = Admit {
                message: Pending {
                    text,
                    files: BTreeMap::new(),
                    // A reminder is woken by the scheduler, not by a request: no caller's trace.
                    trace_parent: None,
                },
                admission: Some(Admission::Coalesce),
                token: None,
                key: Some(format!("reminder:{id}")),
                digest: None,
            };
            // Coalesced into a turn running here; waited for when one runs on another server.
            self.command(&live, &Remote::Wait, |reply| Command::Send { admit, reply })
                .await??;
        }
        self.inner
            .drop_reminder(&reminder.session_id, &id)
            .await
            .map(drop)
    }
}
