//! Schedules on the wire: `GET /v1/schedules` and `folio schedule list`.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ok::OkTrue;

/// `GET /v1/schedules`: every schedule of the agent, with its next slots and last outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SchedulesResponse {
    /// Always `true`.
    pub ok: OkTrue,
    /// The schedules, by name.
    pub schedules: Vec<ScheduleStatus>,
}

/// One schedule: its policies, its next slots and what its last slot did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleStatus {
    /// The schedule name (its file name); its runs have principal `schedule:<name>`.
    pub name: String,
    /// The cron expression as written.
    pub cron: String,
    /// The IANA time zone the cron fields are read in.
    pub timezone: String,
    /// `skip`, `buffer_one` or `allow`.
    pub overlap: String,
    /// `latest`, `none` or `all`.
    pub catch_up: String,
    /// Each slot fires up to this many seconds late.
    pub jitter_secs: u32,
    /// Whether the schedule fires.
    pub enabled: bool,
    /// The next five slots (none when disabled).
    pub next: Vec<NextFire>,
    /// The last slot decided, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<SlotOutcome>,
}

/// A slot to come, in UTC and in the schedule's zone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NextFire {
    /// The instant.
    pub utc: DateTime<Utc>,
    /// The same instant on the schedule's wall clock, RFC 3339 with its offset.
    pub local: String,
}

/// What became of one slot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SlotOutcome {
    /// The slot (a cron instant, or the time of a manual run).
    pub slot: DateTime<Utc>,
    /// What happened.
    pub outcome: SlotOutcomeKind,
    /// The task session it opened, when it fired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Why it was skipped, abandoned or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The fate of a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SlotOutcomeKind {
    /// Its task session started.
    Fired,
    /// It did not fire, by policy (overlap, catch-up, or missed while no server ran).
    Skipped,
    /// It was claimed, then the process died before its session was recorded as started; it
    /// is not run again.
    Abandoned,
    /// Starting its task session failed.
    Failed,
}
