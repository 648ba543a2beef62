//! What a hook reads on stdin.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Event;

/// A hook's stdin: the recorded event's envelope, with the channel and purpose of its session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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
}
