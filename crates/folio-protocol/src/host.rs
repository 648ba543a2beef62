//! The host API on the wire: what a process Folio starts for a session (an authored tool, a
//! hook, a skill command) sends to `FOLIO_HOST_URL` with `FOLIO_HOST_TOKEN`, and what it gets
//! back (each call is recorded in the session's log as `action.host_call`,
//! [`crate::ActionHostCall`]).
//!
//! Every route is `POST /v1/host/<group>/<verb>` with a JSON body (RPC style, so that a key or a
//! path never has to be escaped into a URL), except `GET /v1/host/whoami`. Errors are the HTTP
//! API's [`crate::ErrorBody`].

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ok::OkTrue;

/// The environment variable with the host API's address: `unix:<path>` (a socket under the
/// state root) or `http://127.0.0.1:<port>`.
pub const HOST_URL_ENV: &str = "FOLIO_HOST_URL";
/// The environment variable with the call's bearer token (`fht_…`).
pub const HOST_TOKEN_ENV: &str = "FOLIO_HOST_TOKEN";

/// Whose storage an entry is in.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum StorageScope {
    /// The calling session's own entries (removed with the session).
    #[default]
    Session,
    /// Shared by every session of the agent.
    Agent,
    /// Shared by every session of the agent that the session's principal owns.
    Principal,
}

impl StorageScope {
    /// The wire string (`session`, `agent`, `principal`).
    pub fn as_str(self) -> &'static str {
        match self {
            StorageScope::Session => "session",
            StorageScope::Agent => "agent",
            StorageScope::Principal => "principal",
        }
    }
}

/// One stored value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorageEntry {
    /// Its key.
    pub key: String,
    /// The JSON value.
    pub value: Value,
    /// 1 when first written, raised by every write (compare-and-set on it).
    pub version: u64,
    /// When it was last written.
    pub updated_at: DateTime<Utc>,
    /// When it expires (`null`: never).
    #[serde(default)]
    pub expires_at: Option<DateTime<Utc>>,
}

/// `POST /v1/host/kv/get` and the `storage_get` tool: one entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KvGet {
    /// `session` (default), `agent` or `principal`.
    #[serde(default)]
    pub scope: StorageScope,
    /// The key (1 to 512 bytes).
    pub key: String,
}

/// `POST /v1/host/kv/put` and the `storage_put` tool: write one entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KvPut {
    /// `session` (default), `agent` or `principal`.
    #[serde(default)]
    pub scope: StorageScope,
    /// The key (1 to 512 bytes).
    pub key: String,
    /// Any JSON value, at most 256 KiB as JSON text.
    pub value: Value,
    /// Write only when the entry's version is this one (compare-and-set); `0` means only when
    /// the key has no entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub if_version: Option<u64>,
    /// Seconds until the entry expires (none: it stays).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds: Option<u64>,
}

/// `POST /v1/host/kv/delete` and the `storage_delete` tool: remove one entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KvDelete {
    /// `session` (default), `agent` or `principal`.
    #[serde(default)]
    pub scope: StorageScope,
    /// The key.
    pub key: String,
    /// Delete only when the entry's version is this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub if_version: Option<u64>,
}

/// `POST /v1/host/kv/list` and the `storage_list` tool: a page of entries in key order.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KvList {
    /// `session` (default), `agent` or `principal`.
    #[serde(default)]
    pub scope: StorageScope,
    /// Only keys that start with this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Only keys after this one (the previous page's `next`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// At most this many (default and cap 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// The answer of `kv/get`, `kv/put` and `kv/delete`: the entry (as read, as written, or as
/// removed; `null` when there is none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KvEntryResponse {
    /// Always `true`.
    pub ok: OkTrue,
    /// The entry.
    pub entry: Option<StorageEntry>,
}

/// The answer of `kv/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KvListResponse {
    /// Always `true`.
    pub ok: OkTrue,
    /// The entries, in key order.
    pub entries: Vec<StorageEntry>,
    /// Pass as `after` for the next page (`null`: this was the last).
    pub next: Option<String>,
}

/// Who a host API call acts for (`GET /v1/host/whoami`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostIdentity {
    /// Always `true`.
    pub ok: OkTrue,
    /// The session.
    pub session_id: String,
    /// The tool call, hook run or skill command the token was issued for.
    pub call_id: String,
    /// The session's principal.
    pub principal: String,
    /// The agent.
    pub agent: String,
}

/// The answer of a `files/<op>` call: what the file tool of that name answers the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HostOutput {
    /// Always `true`.
    pub ok: OkTrue,
    /// The tool's output (text, or JSON for structured results).
    pub output: Value,
}

/// The answer of `reminders/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HostReminders {
    /// Always `true`.
    pub ok: OkTrue,
    /// The session's pending reminders, earliest first.
    pub reminders: Vec<crate::Reminder>,
}

/// `POST /v1/host/reminders/cancel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CancelReminder {
    /// `rem_…`.
    pub reminder_id: String,
}

/// `POST /v1/host/artifacts/put`: tag (upsert by kind and key) an artifact of the session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PutArtifact {
    /// The kind (`artifacts.toml`; default `artifact` when none are configured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The upsert key.
    pub key: String,
    /// A title.
    pub title: String,
    /// Structured data (checked against the kind's schema).
    #[serde(default)]
    pub data: Value,
    /// Text contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contents: Option<String>,
    /// The contents' MIME type (default `text/plain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
}

/// `POST /v1/host/artifacts/get`: one artifact by id, or by kind and key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetArtifact {
    /// `art_…` (or give `key`, with `kind`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_id: Option<String>,
    /// The kind, with `key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The upsert key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// `POST /v1/host/artifacts/list`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListArtifacts {
    /// Only this kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Only the calling session's (default `false`: every artifact of the agent).
    #[serde(default)]
    pub session_only: bool,
}

/// An artifact with its text contents (`artifacts/get`, `artifacts/put`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HostArtifact {
    /// Always `true`.
    pub ok: OkTrue,
    /// The record.
    pub artifact: crate::ArtifactRecord,
    /// Its contents as text (lossy UTF-8), when it has any.
    pub contents: Option<String>,
}

/// The answer of `artifacts/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HostArtifacts {
    /// Always `true`.
    pub ok: OkTrue,
    /// Most recently updated first.
    pub artifacts: Vec<crate::ArtifactRecord>,
}

/// One host connection and its tools (`connections/list`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostConnectionTools {
    /// The connection (`agent/host-connections/<name>.toml`).
    pub connection: String,
    /// Its tools (empty when it could not be reached).
    pub tools: Vec<crate::ToolDescription>,
    /// Why it could not be reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The answer of `connections/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HostConnections {
    /// Always `true`.
    pub ok: OkTrue,
    /// Every host connection of the agent.
    pub connections: Vec<HostConnectionTools>,
}

/// `POST /v1/host/connections/call`: call a tool of a host connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CallConnectionTool {
    /// The connection.
    pub connection: String,
    /// The tool's name on that server.
    pub tool: String,
    /// Its arguments.
    #[serde(default)]
    pub arguments: Map<String, Value>,
}

/// `POST /v1/host/telemetry/attributes`: attributes for the span of the calling tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SpanAttributes {
    /// Name → string, number or boolean. Names are dotted lowercase (`app.cache.hit`).
    pub attributes: Map<String, Value>,
}

/// The kind of a metric point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MetricKind {
    /// A monotonic sum: the value is added (must be ≥ 0).
    Counter,
    /// A distribution: the value is recorded.
    Histogram,
}

/// `POST /v1/host/telemetry/metric`: one metric point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecordMetric {
    /// Dotted lowercase, 1 to 255 characters (`app.documents.indexed`); the `agent_sdk.`,
    /// `gen_ai.` and `cursor.` prefixes are Folio's.
    pub name: String,
    /// `counter` or `histogram`.
    pub kind: MetricKind,
    /// The value.
    pub value: f64,
    /// A UCUM unit (`s`, `ms`, `By`, `{document}`), at most 63 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// Attributes of the point (string, number or boolean).
    #[serde(default)]
    pub attributes: Map<String, Value>,
}

/// `POST /v1/host/telemetry/log`: a log line about the session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WriteLog {
    /// `info` (default), `warn` or `error`.
    #[serde(default = "info_level")]
    pub level: crate::LogLevel,
    /// The line (at most 8 KiB).
    pub message: String,
}

fn info_level() -> crate::LogLevel {
    crate::LogLevel::Info
}
