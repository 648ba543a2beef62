//! Reminders on the wire: `POST/GET /v1/session/:id/reminders`,
//! `DELETE /v1/session/:id/reminders/:reminderId`, and the `reminder.*` events.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ok::OkTrue;

/// `POST /v1/session/:id/reminders`: a one-off wake of a chat session, at an instant (`at`) or
/// after a delay (`in`: `90s`, `15m`, `2h`, `1d`, or combined like `1h30m`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetReminder {
    /// When to deliver it (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<DateTime<Utc>>,
    /// How long from now to deliver it.
    #[serde(default, rename = "in", skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// The message delivered to the session as a follow-up (coalesce admission).
    pub message: String,
}

/// A pending reminder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Reminder {
    /// `rem_…`.
    pub reminder_id: String,
    /// The chat session it wakes.
    pub session_id: String,
    /// When it is due.
    pub at: DateTime<Utc>,
    /// What it delivers.
    pub message: String,
    /// When it was set.
    pub created_at: DateTime<Utc>,
}

/// The answer of `POST /v1/session/:id/reminders`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReminderResponse {
    /// Always `true`.
    pub ok: OkTrue,
    /// The reminder as stored.
    pub reminder: Reminder,
}

/// `reminder.set` data: a reminder was set on the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReminderSet {
    /// `rem_…`.
    pub reminder_id: String,
    /// When it is due.
    pub at: DateTime<Utc>,
    /// What it delivers.
    pub message: String,
    /// The `set_reminder` call that asked for it, when the agent set it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

/// `reminder.fired` data: the reminder was delivered as a follow-up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReminderFired {
    /// `rem_…`.
    pub reminder_id: String,
    /// When it was due.
    pub at: DateTime<Utc>,
    /// Whether it was delivered late (it fell due while no server ran, or well after `at`).
    pub late: bool,
}

/// `reminder.cancelled` data: the reminder was cancelled before it fired.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReminderCancelled {
    /// `rem_…`.
    pub reminder_id: String,
}
