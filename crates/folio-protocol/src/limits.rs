//! `GET /v1/limits`: the caller's limits and what it uses of them now.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ok::OkTrue;

/// `GET /v1/limits`: the caller's limits (`[limits]` of `folio.toml` with its own quotas from
/// the tokens file over them) and its usage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LimitsResponse {
    /// Always `true`.
    pub ok: OkTrue,
    /// The caller.
    pub principal: String,
    /// Its limits.
    pub limits: LimitValues,
    /// What it uses now.
    pub usage: LimitUsage,
}

/// Every limit, by its `[limits]` key (camelCase here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LimitValues {
    /// Most files a session workspace may hold.
    pub workspace_files: u64,
    /// Most bytes a session workspace may hold.
    pub workspace_bytes: u64,
    /// Most bytes of one message's text.
    pub message_bytes: u64,
    /// Most `workspaceFiles` one send may carry.
    pub send_files: u64,
    /// Most bytes of `workspaceFiles` one send may carry.
    pub send_bytes: u64,
    /// Most sessions the principal may hold (`null`: no limit).
    pub sessions: Option<u64>,
    /// Most of its turns running at once (`null`: no limit).
    pub running_turns: Option<u64>,
    /// Messages it may send per minute, a bucket of as many refilled evenly (`null`: no limit).
    pub messages_per_minute: Option<u64>,
    /// Most tool calls one turn may make.
    pub tool_calls_per_turn: u64,
    /// Most bytes its session workspaces on this server may hold together (`null`: no limit).
    pub storage_bytes: Option<u64>,
}

/// What the principal uses now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LimitUsage {
    /// Sessions it holds (counted up to its limit plus one, when it has one).
    pub sessions: u64,
    /// Of them, those running a turn.
    pub running_turns: u64,
    /// Messages it may send now before waiting (whole messages left in its bucket; `null`
    /// without a `messages_per_minute` limit).
    pub messages_available: Option<u64>,
    /// Bytes its session workspaces on this server hold.
    pub storage_bytes: u64,
}
