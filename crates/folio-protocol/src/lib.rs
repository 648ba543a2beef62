//! Wire types shared by the Folio server, CLI, evals and clients.
//!
//! Fields are camelCase on the wire; tagged unions carry an explicit `type` tag. The crate knows
//! nothing about serving HTTP, models or sessions: it only says what the bytes look like, and
//! which route takes and answers which bytes.
//!
//! - [`Event`] is one line of a session's NDJSON event log: the envelope
//!   `{"type", "index", "sessionId", "turnId"?, "at", "data"}` with a typed [`EventBody`].
//! - [`Usage`] counts tokens and adds up with `+` / `+=`.
//! - [`RunResult`] is the `run --json` / `trajectory --json` result, built from events by
//!   [`RunResult::from_events`] (the single function both commands use).
//! - The HTTP API's bodies: requests ([`CreateSession`], [`FollowUp`], [`ApprovalRequest`],
//!   [`ToolCallRequest`], [`ForkSession`], [`SaveEvalCase`]), answers ([`SessionCreated`], [`FollowUpAccepted`], [`Acknowledged`],
//!   [`SessionResponse`], [`Page`], [`ToolCallResult`], [`AgentDescription`], [`LogsResponse`],
//!   [`ArtifactResponse`], [`EvalRunResponse`], [`EvalCaseSaved`]) and every error, [`ErrorBody`]. Success bodies carry `"ok": true`
//!   ([`OkTrue`]), errors `"ok": false` ([`OkFalse`]).
//! - The `/v1/mcp` tools' arguments and results: [`AskArguments`], [`AskResult`],
//!   [`CheckArguments`], [`CheckResult`].
//! - What a hook reads on stdin: [`HookPayload`].
//! - What `folio help COMMAND --json`, `folio call` and `folio eval --list --json` print:
//!   [`CommandHelp`], [`CallOutput`], [`EvalCaseList`].
//! - Stored eval runs: [`EvalRun`] and its cases, attempts, steps and assertion verdicts.
//! - Contract strings such as [`TURN_INTERRUPTED`] and [`SERVER_RESTARTED`].
//! - [`schemas`] lists the JSON Schema of every wire type.
//! - [`routes`] is the HTTP API's route table (method, path, bodies, answers per status, auth),
//!   which `folio-server` builds its router from, and [`openapi`] the OpenAPI 3.1 document
//!   generated from it (`GET /v1/openapi.json`, `docs/openapi.json`).
//!
//! ```
//! use folio_protocol::{Event, EventBody, MessageCompleted};
//!
//! let line = r#"{"type":"message.completed","index":7,"sessionId":"ses_1","turnId":"turn_1","at":"2026-11-30T04:15:47.123Z","data":{"text":"done"}}"#;
//! let event: Event = serde_json::from_str(line).unwrap();
//! assert_eq!(event.body, EventBody::MessageCompleted(MessageCompleted { text: "done".into() }));
//! assert_eq!(serde_json::to_string(&event).unwrap(), line);
//! ```

#![warn(missing_docs)]

mod agent;
mod channel;
mod cli;
mod contract;
mod eval;
mod event;
mod fork;
mod hook;
mod host;
mod http;
mod limits;
mod mcp;
mod ok;
mod openapi;
mod reminder;
mod result;
mod route;
mod schedule;
mod schema;
mod usage;
mod variant;

pub use agent::{
    AgentDescription, AgentHeader, AgentInfo, ArtifactKindInfo, ArtifactsInfo, AuthoredToolInfo,
    ChannelInfo, ConnectionAuth, ConnectionAuthState, ConnectionCheck, ConnectionDescription,
    ConnectionInfo, DiagnosticInfo, HookInfo, ScheduleInfo, Severity, SkillForm,
    SkillFrontmatterInfo, SkillInfo, SubagentInfo, ToolDescription, ToolEffect, ToolExecution,
    TransportInfo, Visibility,
};
pub use channel::{
    ChannelDelivery, ChannelDeliveryOutcome, DeliveriesResponse, DeliveryAccepted, DeliveryInfo,
    DeliveryRetry, DeliveryStatus, UrlVerification,
};
pub use cli::{ArgumentHelp, CallOutput, CommandHelp};
pub use contract::{
    APPROVAL_TIMED_OUT, DECIDED_BY_FOLIO, INTERRUPTED_RESULT, NO_REASON_GIVEN, SERVER_RESTARTED,
    TURN_INTERRUPTED, denial_message,
};

pub use eval::{
    AssertionResult, Attempt, CaseResult, EvalCaseInfo, EvalCaseList, EvalCaseSaved, EvalRun,
    EvalRunResponse, EvalRunSummary, JudgeVerdict, SaveEvalCase, StepObservation, StepResult,
    valid_run_id,
};
pub use event::{
    AbAssigned, ActionApprovalRequested, ActionApprovalResolved, ActionAuthorizationRequested,
    ActionAuthorizationResolved, ActionHostCall, ActionResult, ActionsRequested, Admission,
    AgentBound, ApprovalDecision, ArtifactTagged, ContextCompacted, Elicitation, Event, EventBody,
    FinishReason, MessageAppended, MessageCompleted, MessageQueued, MessageReceived,
    ReasoningAppended, ReasoningCompleted, RequestedCall, SessionCompleted, SessionFailed,
    SessionMode, SessionStarted, SessionWaiting, StepCompleted, StepStarted, SubagentCalled,
    SubagentCompleted, TurnCompleted, TurnFailed, TurnQueued, TurnStarted, format_at,
};
pub use fork::{ForkOrigin, ForkSession};
pub use hook::HookPayload;
pub use host::{
    CallConnectionTool, CancelReminder, GetArtifact, HOST_TOKEN_ENV, HOST_URL_ENV, HostArtifact,
    HostArtifacts, HostConnectionTools, HostConnections, HostIdentity, HostOutput, HostReminders,
    KvDelete, KvEntryResponse, KvGet, KvList, KvListResponse, KvPut, ListArtifacts, MetricKind,
    PutArtifact, RecordMetric, SpanAttributes, StorageEntry, StorageScope, WriteLog,
};
pub use http::{
    Acknowledged, AgentSummary, ApprovalRequest, ArtifactRecord, ArtifactResponse, CreateSession,
    Empty, ErrorBody, ErrorCode, FollowUp, FollowUpAccepted, LogLevel, LogLine, LogsResponse, Page,
    SessionCreated, SessionResponse, SessionStatus, SessionSummary, ToolCallRequest,
    ToolCallResult, retry_after_seconds,
};
pub use limits::{LimitUsage, LimitValues, LimitsResponse};
pub use mcp::{AskArguments, AskResult, AskStatus, CheckArguments, CheckResult};
pub use ok::{OkFalse, OkTrue};
pub use openapi::{ApiServers, OPENAPI_VERSION, error_codes, openapi, openapi_json, operation_id};
pub use reminder::{
    Reminder, ReminderCancelled, ReminderFired, ReminderResponse, ReminderSet, SetReminder,
};
pub use result::{CompactionPoint, RunResult, ToolCallRecord, TurnSummary};
pub use route::{
    Access, Answer, Body, Method, Operation, Param, ParamType, RequestBody, Route, SchemaFn, Scope,
    routes,
};
pub use schedule::{NextFire, ScheduleStatus, SchedulesResponse, SlotOutcome, SlotOutcomeKind};
pub use schema::schemas;
pub use usage::{ModelPrice, Usage, format_usd};
pub use variant::{VariantStats, VariantStatus, VariantsResponse};
