//! What a hook reads on stdin.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Event;

/// A hook's stdin: the recorded event's envelope, with the channel, purpose and dry-run flag of
/// its session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookPayload {
    /// The event, as its log line has it.
    #[serde(flatten)]
    pub event: Event,
    /// The channel that created the session (`http`, `cli`, …), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// Why the session runs (`eval` for eval runs), when said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purpose: Option<String>,
    /// `true` in a dry-run session (e.g. `folio eval --dry-run`): its writes were not real.
    /// Absent otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
}
