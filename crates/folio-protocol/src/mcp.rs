//! Structured results of the `ask` and `check` tools of `/v1/mcp`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::SessionSummary;

/// How an `ask` turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AskStatus {
    /// The turn completed; `reply` is the answer.
    Completed,
    /// The turn failed; `reply` is why.
    Failed,
}

/// The structured content of an `ask` result: `{status, sessionId, reply}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AskResult {
    /// `completed` or `failed`.
    pub status: AskStatus,
    /// The session the turn ran in (pass it back to continue).
    pub session_id: String,
    /// The reply, or the failure message.
    pub reply: String,
}

/// The result of `check`: a session's summary and its last reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckResult {
    /// The session.
    pub session: SessionSummary,
    /// The reply of the last completed turn (`null` when none completed).
    pub last_reply: Option<String>,
}

/// The arguments of `ask`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AskArguments {
    /// What to ask.
    pub message: String,
    /// Continue this session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// How many peer asks deep this call is (set by a Folio agent asking its peer, so chains
    /// such as A asks B asks A are cut; other clients leave it out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_depth: Option<u32>,
}

/// The arguments of `check`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckArguments {
    /// The session to check.
    pub session_id: String,
}
