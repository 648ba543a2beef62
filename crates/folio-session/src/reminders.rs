//! The [`Reminders`] handle: one-off wakes of a chat session, stored in the session store
//! (on disk: `reminders/<sessionId>/<reminderId>.json`, written durably; the records are the
//! `reminder_store` module's) and delivered at their time as a coalesced follow-up. Delivery
//! is exactly once across restarts: `reminder.fired` is recorded, the message is admitted with
//! the idempotency key `reminder:<id>` (a retry after a crash is recognized), then the
//! reminder is removed. A reminder that fell due while no server ran is delivered at start,
//! marked late. On a shared store (`folio serve --store`) every server delivers the due ones,
//! and the session's lease, the check for `reminder.fired` inside the owner's actor and the
//! message's key make each delivery run once.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use folio_protocol::{
    Admission, EventBody, Reminder, ReminderCancelled, ReminderFired, SessionMode, SetReminder,
};
use folio_store_disk::reminders::valid_reminder_id;

use crate::command::{Admit, Command, Done, Pending};
use crate::engine::Engine;
use crate::error::ManagerError;
use crate::reminder_store;
use crate::remote::Remote;
use crate::sync::lock;

/// How often a server on a shared store looks for reminders other servers set.
const SHARED_POLL: std::time::Duration = std::time::Duration::from_secs(2);

/// A reminder delivered more than this long after its time is marked late.
const LATE_AFTER: Duration = Duration::seconds(60);

/// Sets, lists, cancels and delivers reminders.
#[derive(Clone)]
pub struct Reminders {
    pub(crate) engine: Arc<Engine>,
}

impl Reminders {
    /// Sets a reminder on `principal`'s chat session: stored durably, recorded as
    /// `reminder.set`, delivered at `at` (or `in` from now).
    pub async fn set(
        &self,
        principal: &str,
        session_id: &str,
        request: SetReminder,
    ) -> Result<Reminder, ManagerError> {
        self.set_from(principal, session_id, request, false).await
    }

    /// [`Reminders::set`], recorded from inside the session's actor when `inside_actor` (a
    /// direct tool call's host API call).
    pub(crate) async fn set_from(
        &self,
        principal: &str,
        session_id: &str,
        request: SetReminder,
        inside_actor: bool,
    ) -> Result<Reminder, ManagerError> {
        let now = self.engine.clock().now();
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
        let live = self.engine.owned(principal, session_id).await?;
        if lock(&live.meta).mode == SessionMode::Task {
            return Err(ManagerError::NotFollowable(session_id.to_string()));
        }
        let (reminder, set) =
            reminder_store::set(&self.engine, &live, at, request.message, None).await?;
        self.engine
            .record_for(&live, None, set, inside_actor)
            .await?;
        Ok(reminder)
    }

    /// The pending reminders of `principal`'s session, earliest first.
    pub async fn list(
        &self,
        principal: &str,
        session_id: &str,
    ) -> Result<Vec<Reminder>, ManagerError> {
        self.engine.owned_meta(principal, session_id).await?;
        reminder_store::of_session(&self.engine, session_id).await
    }

    /// Cancels a pending reminder (`reminder.cancelled`); one that fired or never existed is
    /// not found.
    pub async fn cancel(
        &self,
        principal: &str,
        session_id: &str,
        reminder_id: &str,
    ) -> Result<(), ManagerError> {
        self.cancel_from(principal, session_id, reminder_id, false)
            .await
    }

    /// [`Reminders::cancel`], recorded from inside the session's actor when `inside_actor`.
    pub(crate) async fn cancel_from(
        &self,
        principal: &str,
        session_id: &str,
        reminder_id: &str,
        inside_actor: bool,
    ) -> Result<(), ManagerError> {
        let live = self.engine.owned(principal, session_id).await?;
        let not_found = || ManagerError::NotFound(format!("no pending reminder {reminder_id}"));
        if !valid_reminder_id(reminder_id) {
            return Err(not_found());
        }
        let order = self.engine.timers.reminders.lock().await;
        if !reminder_store::remove(&self.engine, session_id, reminder_id).await? {
            return Err(not_found());
        }
        drop(order);
        let cancelled = EventBody::ReminderCancelled(ReminderCancelled {
            reminder_id: reminder_id.to_string(),
        });
        self.engine
            .record_for(&live, None, cancelled, inside_actor)
            .await?;
        self.engine.timers.reminders_changed.notify_one();
        Ok(())
    }

    /// Delivers reminders at their time until the manager shuts down; the ones that fell due
    /// while no server ran are delivered at once, marked late.
    pub async fn run(self) {
        let clock = self.engine.clock();
        let started = clock.now();
        let shutdown = self.engine.life.shutdown.clone();
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
                _ = self.engine.timers.reminders_changed.notified() => {}
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
        let _order = self.engine.timers.reminders.lock().await;
        let now = self.engine.clock().now();
        let mut pending: BTreeMap<DateTime<Utc>, Vec<Reminder>> = BTreeMap::new();
        for reminder in reminder_store::pending(&self.engine).await? {
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
        let meta = self.engine.load_meta(&reminder.session_id).await?;
        if let Some(meta) = meta {
            let live = self
                .engine
                .owned(&meta.principal, &reminder.session_id)
                .await?;
            let fired = EventBody::ReminderFired(ReminderFired {
                reminder_id: id.clone(),
                at: reminder.at,
                late,
            });
            // Once, whichever server delivers it first.
            let once = id.clone();
            let recorded: Done = Box::new(move |events| {
                events.iter().any(
                    |e| matches!(&e.body, EventBody::ReminderFired(f) if f.reminder_id == once),
                )
            });
            self.engine
                .record_event(&live, None, fired, Some(recorded))
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
                    prepare: None,
                },
                admission: Some(Admission::Coalesce),
                token: None,
                key: Some(format!("reminder:{id}")),
                digest: None,
                ticket: None,
            };
            // Coalesced into a turn running here; waited for when one runs on another server.
            self.engine
                .command(&live, &Remote::Wait, |reply| Command::Send { admit, reply })
                .await??;
        }
        reminder_store::remove(&self.engine, &reminder.session_id, &id)
            .await
            .map(drop)
    }
}
