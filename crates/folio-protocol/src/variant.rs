//! A/B variants on the wire: `GET /v1/variants`, how each variant of the agent's experiment does.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ok::OkTrue;
use crate::usage::Usage;

/// `GET /v1/variants`: the agent's experiment and each variant's sessions, turns, failures,
/// tokens, cost, latency and denied approvals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VariantsResponse {
    /// Always `true`.
    pub ok: OkTrue,
    /// The experiment's name (`ab.assigned {experiment}`).
    pub experiment: String,
    /// The variants `agent.toml` defines, by name, then those only past sessions name.
    pub variants: Vec<VariantStats>,
}

/// Whether new sessions may be assigned to a variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum VariantStatus {
    /// New sessions are assigned to it by weight (or pin).
    Enabled,
    /// `enabled = false`: its sessions keep it, no new session gets it.
    Disabled,
    /// No longer defined: only past sessions name it.
    Removed,
}

/// One variant's counts, over every session assigned to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VariantStats {
    /// The variant's name.
    pub name: String,
    /// Whether new sessions may get it.
    pub status: VariantStatus,
    /// Its weight (0 when removed).
    pub weight: u32,
    /// Sessions assigned to it.
    pub sessions: u64,
    /// Turns its sessions started.
    pub turns: u64,
    /// Turns that failed (`turn.failed`, not counting turns interrupted by a stop).
    pub failures: u64,
    /// Tool calls a person (or a timeout) denied (`action.approval.resolved` with `deny`).
    pub approvals_denied: u64,
    /// Tokens its sessions used, with their cost (`costUsd`: `null` when a model has no price).
    pub usage: Usage,
    /// The median duration of its completed turns in milliseconds (`null`: none completed).
    pub latency_p50_ms: Option<u64>,
    /// The 95th percentile duration of its completed turns in milliseconds (`null`: none
    /// completed).
    pub latency_p95_ms: Option<u64>,
}
