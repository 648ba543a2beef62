//! Forking a session (`POST /v1/session/:id/fork`) and handing its owner a continuation token
//! (`POST /v1/session/:id/token`): the playground's time travel and "reopen a past run".

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `POST /v1/session/:id/fork`: a new session whose log starts as a copy of this one's events
/// before `atIndex`, then continues with `message` in place of the message at `atIndex`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ForkSession {
    /// The index of a `message.received` event of the original session: the fork keeps every
    /// event before it and sends `message` instead.
    pub at_index: u64,
    /// The (edited) user message the fork continues with.
    pub message: String,
    /// A title for lists (default: the original's title).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// Where a forked session came from: `session.started`'s `forkedFrom`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForkOrigin {
    /// The original session (`ses_…`).
    pub session_id: String,
    /// The index of the original's `message.received` the fork replaced.
    pub at_index: u64,
}
