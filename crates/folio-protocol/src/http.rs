//! Request and response bodies of the HTTP API (docs/http-api.md), one type per body.
//!
//! Success bodies carry `"ok": true` ([`OkTrue`]); every error is an [`ErrorBody`] with
//! `"ok": false`. Request bodies refuse unknown fields (`400 invalid_request` naming the field).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ok::{OkFalse, OkTrue};
use crate::{Admission, ApprovalDecision, SessionMode, Usage};

/// `POST /v1/session`: a new session and its first message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateSession {
    /// The first user message.
    pub message: String,
    /// A title for lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Files written into the workspace before the turn (relative path → contents).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub workspace_files: BTreeMap<String, String>,
    /// `chat` (the default) or `task`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<SessionMode>,
    /// An idempotency key: a retry with the same key and the same request gets the first
    /// answer (the same session and token) instead of a second session, also while the first
    /// is still being answered; the key with a different request is refused (`422
    /// idempotency_key_reused`). The `Idempotency-Key` header sets it too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_message_id: Option<String>,
    /// What the conversation is about, in the caller's terms (a ticket, a thread, a tenant's
    /// case: `acme:ticket-7`): 1 to 256 characters, no control characters. The session keeps
    /// it; its authored tools see it as `continuationKey` and a live root factory as
    /// `RootContext.continuation_key`, next to the principal that set it. It does not route
    /// messages (follow-ups use the continuation token), and two sessions may share one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuation_key: Option<String>,
}

impl CreateSession {
    /// A chat session's first message, with no title and no files.
    pub fn message(message: impl Into<String>) -> Self {
        CreateSession {
            message: message.into(),
            title: None,
            workspace_files: BTreeMap::new(),
            mode: None,
            client_message_id: None,
            continuation_key: None,
        }
    }
}

/// `201` answer of `POST /v1/session`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCreated {
    /// Always `true`.
    pub ok: OkTrue,
    /// `ses_…`.
    pub session_id: String,
    /// The token the next follow-up presents (`http:…`).
    pub continuation_token: String,
    /// The session in the playground.
    pub playground_url: String,
    /// The session's event dump (`…/v1/session/:id/events`).
    pub trace_url: String,
}

/// `POST /v1/session/:id`: a follow-up message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FollowUp {
    /// The current continuation token.
    pub continuation_token: String,
    /// The user message.
    pub message: String,
    /// What to do when the session is busy (default `preempt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<Admission>,
    /// Files written into the workspace before the turn.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub workspace_files: BTreeMap<String, String>,
    /// An idempotency key: a retry with the same key, the token it first presented and the
    /// same request gets the first answer (the same rotated token) instead of `409` or a second
    /// turn; the key with a different request is refused (`422 idempotency_key_reused`). The
    /// `Idempotency-Key` header sets it too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_message_id: Option<String>,
}

impl FollowUp {
    /// A follow-up with the default admission and no files.
    pub fn new(continuation_token: impl Into<String>, message: impl Into<String>) -> Self {
        FollowUp {
            continuation_token: continuation_token.into(),
            message: message.into(),
            admission: None,
            workspace_files: BTreeMap::new(),
            client_message_id: None,
        }
    }
}

/// `200` answer of `POST /v1/session/:id`: the rotated token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FollowUpAccepted {
    /// Always `true`.
    pub ok: OkTrue,
    /// `ses_…`.
    pub session_id: String,
    /// The new continuation token (the presented one is now stale).
    pub continuation_token: String,
}

/// An empty request body (`POST /v1/session/:id/stop`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

/// `{ok: true}`: the answer of stop, delete and approval decisions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Acknowledged {
    /// Always `true`.
    pub ok: OkTrue,
}

/// Where a session is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SessionStatus {
    /// A turn is running.
    Running,
    /// A chat session waiting for a follow-up.
    Waiting,
    /// A task session that finished.
    Completed,
    /// A task session that failed.
    Failed,
}

/// A session as lists and `GET /v1/session/:id` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    /// `ses_…`.
    pub session_id: String,
    /// `chat` or `task`.
    pub mode: SessionMode,
    /// `running`, `waiting`, `completed` or `failed`.
    pub status: SessionStatus,
    /// The title (empty when none).
    pub title: String,
    /// Creation time (RFC 3339 UTC with milliseconds).
    pub created_at: String,
    /// Last change (RFC 3339 UTC with milliseconds).
    pub updated_at: String,
    /// Turns started.
    pub turns: u32,
    /// Index of the last stored event.
    pub last_index: u64,
    /// Tokens used so far: the `usage` of its `turn.completed` events, summed (zero when no
    /// turn reported any).
    #[serde(default)]
    pub usage: Usage,
    /// The session's continuation key (set by its channel, or by `continuationKey` at create),
    /// when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuation_key: Option<String>,
    /// The A/B variant the session runs with (`ab.assigned`), when it was assigned one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

/// `GET /v1/session/:id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionResponse {
    /// Always `true`.
    pub ok: OkTrue,
    /// The session.
    pub session: SessionSummary,
}

/// A page of a list: `GET /v1/sessions` (newest first, with a cursor) and `GET /v1/artifacts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
// One schema name per item type (`SessionSummaryPage`): OpenAPI's `components/schemas` needs
// distinct names.
#[schemars(rename = "{T}Page")]
pub struct Page<T> {
    /// Always `true`.
    pub ok: OkTrue,
    /// The items of this page.
    pub data: Vec<T>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl<T> Page<T> {
    /// A page of `data`, followed by the page after `next_cursor` when there is one.
    pub fn new(data: Vec<T>, next_cursor: Option<String>) -> Self {
        Page {
            ok: OkTrue,
            data,
            next_cursor,
        }
    }
}

/// `POST /v1/session/:id/approvals/:callId`: the decision on a parked call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ApprovalRequest {
    /// `approve` or `deny` (a call); `accept`, `decline` or `cancel` (an elicitation).
    pub decision: ApprovalDecision,
    /// Why (shown to the model on a denial).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// An elicitation's answer with `accept`: an object matching its `requestedSchema`
    /// (fields left out take the schema's defaults).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
}

impl ApprovalRequest {
    /// The answer when no one can be asked (`folio run`, evals): `deny` for a call, `decline`
    /// for an elicitation, with `reason`.
    pub fn refusal(requested: &crate::ActionApprovalRequested, reason: &str) -> ApprovalRequest {
        ApprovalRequest {
            decision: match requested.elicitation {
                Some(_) => ApprovalDecision::Decline,
                None => ApprovalDecision::Deny,
            },
            reason: Some(reason.to_string()),
            content: None,
        }
    }
}

/// `POST /v1/tools/:name` and `POST /v1/session/:id/tools/:name`: a direct tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ToolCallRequest {
    /// The tool's input (validated against its schema).
    #[serde(default)]
    pub input: Value,
}

/// The answer of a direct tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallResult {
    /// Always `true` (a tool that failed still answers `200`, with `isError`).
    pub ok: OkTrue,
    /// The tool's output, or its error text.
    pub result: Value,
    /// Whether the tool failed.
    pub is_error: bool,
}

/// `GET /v1/artifacts/:id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ArtifactResponse {
    /// Always `true`.
    pub ok: OkTrue,
    /// The artifact.
    pub artifact: ArtifactRecord,
}

/// A stored artifact (`<id>.json`; `GET /v1/artifacts` lists them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactRecord {
    /// `art_` + ULID; stable across upserts of the same `(kind, key)`.
    pub id: String,
    /// The kind.
    pub kind: String,
    /// The upsert key, unique within the kind.
    pub key: String,
    /// A title for lists.
    pub title: String,
    /// Structured data (validated against the kind's schema).
    pub data: Value,
    /// The MIME type of the contents, when there are contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// The session that last tagged it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// When it was first tagged.
    pub created_at: DateTime<Utc>,
    /// When it was last tagged.
    pub updated_at: DateTime<Utc>,
}

/// How serious a server log line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Something happened.
    Info,
    /// Something is worth a look.
    Warn,
    /// Something failed.
    Error,
}

/// One server log line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogLine {
    /// Increases by one per line; pass the last one seen as `since`.
    pub seq: u64,
    /// RFC 3339 UTC with milliseconds.
    pub at: String,
    /// `info`, `warn` or `error`.
    pub level: LogLevel,
    /// The line.
    pub message: String,
}

/// `GET /v1/logs?since`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LogsResponse {
    /// Always `true`.
    pub ok: OkTrue,
    /// Lines with `seq > since`, oldest first.
    pub lines: Vec<LogLine>,
}

/// One mounted agent of `GET /v1/agents`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentSummary {
    /// The URL segment of the agent.
    pub slug: String,
    /// Display name.
    pub name: String,
    /// What the agent does, when it says.
    pub description: Option<String>,
}

/// A `Retry-After` header's value for a wait: whole seconds, rounded up, at least 1.
pub fn retry_after_seconds(wait: std::time::Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

/// The `error` code of an [`ErrorBody`]; each goes with one HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// `400`: the body or a parameter is invalid (the message names the field).
    InvalidRequest,
    /// `401`: missing or bad credentials.
    Unauthorized,
    /// `403`: not the caller's session, or a refused caller.
    Forbidden,
    /// `404`: no such session, tool, approval, artifact, agent or route.
    NotFound,
    /// `409`: the continuation token is not the current one.
    StaleContinuationToken,
    /// `409`: a follow-up to a task session.
    SessionNotFollowable,
    /// `409`: a session-bound tool call while a turn runs.
    SessionBusy,
    /// `409`: a second decision on one approval.
    ApprovalResolved,
    /// `409`: what the request would create exists already (an eval case of that name).
    AlreadyExists,
    /// `409`: a compare-and-set write found another version (storage `ifVersion`).
    VersionConflict,
    /// `429`: too many requests or too much stored; the `Retry-After` header says when to
    /// try again (when waiting helps).
    RateLimited,
    /// `422`: an idempotency key sent again with a different request (a retry must repeat the
    /// first request exactly; a new request needs a new key).
    IdempotencyKeyReused,
    /// `405`: the route exists but not with this method.
    MethodNotAllowed,
    /// `408`: the request took too long to answer.
    RequestTimeout,
    /// `413`: the body is over the limit.
    PayloadTooLarge,
    /// `415`: a body that is not JSON (browser guard, docs/http-api.md).
    UnsupportedMediaType,
    /// `500`: anything else (never a stack trace).
    Internal,
    /// `503`: the server runs and queues as many turns as it is set to take
    /// (`[concurrency]`); the `Retry-After` header says when to try again. Nothing was written.
    Overloaded,
}

impl ErrorCode {
    /// The wire string, e.g. `session_busy`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::Unauthorized => "unauthorized",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::NotFound => "not_found",
            ErrorCode::StaleContinuationToken => "stale_continuation_token",
            ErrorCode::SessionNotFollowable => "session_not_followable",
            ErrorCode::SessionBusy => "session_busy",
            ErrorCode::ApprovalResolved => "approval_resolved",
            ErrorCode::AlreadyExists => "already_exists",
            ErrorCode::IdempotencyKeyReused => "idempotency_key_reused",
            ErrorCode::VersionConflict => "version_conflict",
            ErrorCode::RateLimited => "rate_limited",
            ErrorCode::MethodNotAllowed => "method_not_allowed",
            ErrorCode::RequestTimeout => "request_timeout",
            ErrorCode::PayloadTooLarge => "payload_too_large",
            ErrorCode::UnsupportedMediaType => "unsupported_media_type",
            ErrorCode::Internal => "internal",
            ErrorCode::Overloaded => "overloaded",
        }
    }

    /// The HTTP status that goes with the code.
    pub fn status(self) -> u16 {
        match self {
            ErrorCode::InvalidRequest => 400,
            ErrorCode::Unauthorized => 401,
            ErrorCode::Forbidden => 403,
            ErrorCode::NotFound => 404,
            ErrorCode::StaleContinuationToken
            | ErrorCode::SessionNotFollowable
            | ErrorCode::SessionBusy
            | ErrorCode::ApprovalResolved
            | ErrorCode::AlreadyExists
            | ErrorCode::VersionConflict => 409,
            ErrorCode::RateLimited => 429,
            ErrorCode::MethodNotAllowed => 405,
            ErrorCode::RequestTimeout => 408,
            ErrorCode::PayloadTooLarge => 413,
            ErrorCode::UnsupportedMediaType => 415,
            ErrorCode::IdempotencyKeyReused => 422,
            ErrorCode::Internal => 500,
            ErrorCode::Overloaded => 503,
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Every error answer: `{"ok": false, "error": "<code>", "message": "<one line for a person>"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorBody {
    /// Always `false`.
    pub ok: OkFalse,
    /// The machine-readable code.
    pub error: ErrorCode,
    /// What failed and what to do, in one line.
    pub message: String,
}

impl ErrorBody {
    /// An error body with `code` and `message`.
    pub fn new(error: ErrorCode, message: impl Into<String>) -> Self {
        ErrorBody {
            ok: OkFalse,
            error,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ErrorBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn ok_markers_accept_only_their_value() {
        let ack: Acknowledged = serde_json::from_value(json!({"ok": true})).unwrap();
        assert_eq!(serde_json::to_value(ack).unwrap(), json!({"ok": true}));
        assert!(serde_json::from_value::<Acknowledged>(json!({"ok": false})).is_err());
        let error = ErrorBody::new(ErrorCode::SessionBusy, "busy");
        assert_eq!(
            serde_json::to_value(&error).unwrap(),
            json!({"ok": false, "error": "session_busy", "message": "busy"})
        );
        assert!(
            serde_json::from_value::<ErrorBody>(
                json!({"ok": true, "error": "internal", "message": "x"})
            )
            .is_err()
        );
    }

    #[test]
    fn request_bodies_refuse_unknown_fields_and_keep_the_wire_shape() {
        let err = serde_json::from_value::<CreateSession>(json!({"message": "x", "colour": 1}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("colour"), "{err}");
        let create: CreateSession =
            serde_json::from_value(json!({"message": "hi", "mode": "task"})).unwrap();
        assert_eq!(
            create,
            CreateSession {
                mode: Some(SessionMode::Task),
                ..CreateSession::message("hi")
            }
        );
        assert_eq!(
            serde_json::to_value(FollowUp::new("http:t", "again")).unwrap(),
            json!({"continuationToken": "http:t", "message": "again"})
        );
        let page: Page<SessionSummary> = Page::new(Vec::new(), None);
        assert_eq!(
            serde_json::to_value(page).unwrap(),
            json!({"ok": true, "data": []})
        );
    }

    #[test]
    fn error_codes_match_their_wire_strings_and_statuses() {
        for code in [
            ErrorCode::InvalidRequest,
            ErrorCode::Unauthorized,
            ErrorCode::Forbidden,
            ErrorCode::NotFound,
            ErrorCode::StaleContinuationToken,
            ErrorCode::SessionNotFollowable,
            ErrorCode::SessionBusy,
            ErrorCode::ApprovalResolved,
            ErrorCode::PayloadTooLarge,
            ErrorCode::Internal,
            ErrorCode::Overloaded,
        ] {
            assert_eq!(serde_json::to_value(code).unwrap(), json!(code.as_str()));
            assert!((400..=503).contains(&code.status()));
        }
    }
}
