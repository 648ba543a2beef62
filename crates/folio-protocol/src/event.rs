//! The event envelope and every event's `data`.

use std::borrow::Cow;
use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, Utc};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::Usage;

/// One entry of a session's append-only event log (one NDJSON line on the wire).
///
/// Wire form: `{"type", "index", "sessionId", "turnId"?, "at", "data"}`; `at` is RFC 3339 UTC with
/// milliseconds and `turnId` is omitted when the event is not turn-scoped.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Position in the session's log: 0, 1, 2, … without gaps.
    pub index: u64,
    /// The session this event belongs to (`ses_…`).
    pub session_id: String,
    /// The turn this event belongs to (`turn_…`), for turn-scoped events.
    pub turn_id: Option<String>,
    /// When the event was appended (serialized with millisecond precision).
    pub at: DateTime<Utc>,
    /// The event type and its `data`.
    pub body: EventBody,
}

impl Event {
    /// The event's `type` string, e.g. `turn.completed`.
    pub fn event_type(&self) -> &'static str {
        self.body.event_type()
    }

    /// Appends the event to `out` as one NDJSON line: its JSON, then a newline.
    pub fn write_line(&self, out: &mut Vec<u8>) {
        // An event always serializes (its fields are plain data).
        let _ = serde_json::to_writer(&mut *out, self);
        out.push(b'\n');
    }
}

/// Formats a timestamp the way events carry it: RFC 3339 UTC with milliseconds.
pub fn format_at(at: &DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", self.body.event_type())?;
        map.serialize_entry("index", &self.index)?;
        map.serialize_entry("sessionId", &self.session_id)?;
        if let Some(turn_id) = &self.turn_id {
            map.serialize_entry("turnId", turn_id)?;
        }
        map.serialize_entry("at", &format_at(&self.at))?;
        map.serialize_entry("data", &BodyData(&self.body))?;
        map.end()
    }
}

/// Serializes only the `data` half of an [`EventBody`].
struct BodyData<'a>(&'a EventBody);

impl Serialize for BodyData<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize_data(serializer)
    }
}

/// The wire shape of [`Event`]: what it deserializes from, and its JSON Schema.
#[derive(Deserialize, JsonSchema)]
#[schemars(rename = "Event")]
#[serde(rename_all = "camelCase")]
struct EventWire {
    /// Position in the session's log: 0, 1, 2, … without gaps.
    index: u64,
    /// The session this event belongs to (`ses_…`).
    session_id: String,
    /// The turn this event belongs to (`turn_…`), for turn-scoped events.
    #[serde(default)]
    turn_id: Option<String>,
    /// When the event was appended: RFC 3339 UTC with milliseconds.
    at: DateTime<Utc>,
    /// The event type (`type`) and its `data`.
    #[serde(flatten)]
    body: EventBody,
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = EventWire::deserialize(deserializer)?;
        Ok(Event {
            index: wire.index,
            session_id: wire.session_id,
            turn_id: wire.turn_id,
            at: wire.at,
            body: wire.body,
        })
    }
}

impl JsonSchema for Event {
    fn schema_name() -> Cow<'static, str> {
        "Event".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        EventWire::json_schema(generator)
    }
}

macro_rules! event_body {
    ($( $(#[$doc:meta])* $name:literal => $variant:ident($data:ty), )*) => {
        /// Every event type with its typed `data` (`type` is the tag, `data` the content).
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
        #[serde(tag = "type", content = "data")]
        pub enum EventBody {
            $(
                $(#[$doc])*
                #[serde(rename = $name)]
                $variant($data),
            )*
        }

        impl EventBody {
            /// Every event `type` string, in the order of the contract's event table.
            pub const TYPES: &'static [&'static str] = &[$($name,)*];

            /// The wire `type` string of this event.
            pub fn event_type(&self) -> &'static str {
                match self {
                    $(EventBody::$variant(_) => $name,)*
                }
            }

            fn serialize_data<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    $(EventBody::$variant(data) => data.serialize(serializer),)*
                }
            }
        }

        $(
            impl From<$data> for EventBody {
                fn from(data: $data) -> EventBody {
                    EventBody::$variant(data)
                }
            }
        )*
    };
}

event_body! {
    /// The session was created.
    "session.started" => SessionStarted(SessionStarted),
    /// The session was enrolled in an A/B experiment.
    "ab.assigned" => AbAssigned(AbAssigned),
    /// A chat session finished its turn and waits for a follow-up.
    "session.waiting" => SessionWaiting(SessionWaiting),
    /// A task session finished successfully.
    "session.completed" => SessionCompleted(SessionCompleted),
    /// A task session failed.
    "session.failed" => SessionFailed(SessionFailed),
    /// Reserved: the session was bound to a remote agent runtime.
    "agent.bound" => AgentBound(AgentBound),
    /// A user message reached the session.
    "message.received" => MessageReceived(MessageReceived),
    /// A message for a busy session was queued (coalesce admission); a later
    /// `message.received {coalesced: n}` drains it.
    "message.queued" => MessageQueued(MessageQueued),
    /// A turn waits for a free slot under the agent's concurrency cap.
    "turn.queued" => TurnQueued(TurnQueued),
    /// A turn started.
    "turn.started" => TurnStarted(TurnStarted),
    /// A turn finished with a reply.
    "turn.completed" => TurnCompleted(TurnCompleted),
    /// A turn failed or was interrupted.
    "turn.failed" => TurnFailed(TurnFailed),
    /// A model call (step) started.
    "step.started" => StepStarted(StepStarted),
    /// A model call (step) finished.
    "step.completed" => StepCompleted(StepCompleted),
    /// A reasoning delta streamed from the model.
    "reasoning.appended" => ReasoningAppended(ReasoningAppended),
    /// The step's reasoning is final.
    "reasoning.completed" => ReasoningCompleted(ReasoningCompleted),
    /// An assistant text delta streamed from the model.
    "message.appended" => MessageAppended(MessageAppended),
    /// The step's assistant text is final.
    "message.completed" => MessageCompleted(MessageCompleted),
    /// The model asked for tool calls.
    "actions.requested" => ActionsRequested(ActionsRequested),
    /// A tool call finished.
    "action.result" => ActionResult(ActionResult),
    /// A tool call waits for approval.
    "action.approval_requested" => ActionApprovalRequested(ActionApprovalRequested),
    /// A pending approval was decided.
    "action.approval_resolved" => ActionApprovalResolved(ActionApprovalResolved),
    /// A tool call waits for its session's principal to authorize an MCP server (OAuth).
    "action.authorization_requested" => ActionAuthorizationRequested(ActionAuthorizationRequested),
    /// A pending MCP authorization ended (authorized, refused or abandoned).
    "action.authorization_resolved" => ActionAuthorizationResolved(ActionAuthorizationResolved),
    /// A process of a tool call, hook run or skill command called the host API.
    "action.host_call" => ActionHostCall(ActionHostCall),
    /// A subagent was called.
    "subagent.called" => SubagentCalled(SubagentCalled),
    /// A subagent finished.
    "subagent.completed" => SubagentCompleted(SubagentCompleted),
    /// An artifact was tagged for this session.
    "artifact.tagged" => ArtifactTagged(ArtifactTagged),
    /// The conversation before `upToIndex` was summarized to fit the context window.
    "context.compacted" => ContextCompacted(ContextCompacted),
    /// A reminder was set on the session.
    "reminder.set" => ReminderSet(crate::reminder::ReminderSet),
    /// A reminder was delivered as a follow-up.
    "reminder.fired" => ReminderFired(crate::reminder::ReminderFired),
    /// A reminder was cancelled before it fired.
    "reminder.cancelled" => ReminderCancelled(crate::reminder::ReminderCancelled),
    /// A channel delivery reached the session, or its answer went back (or could not).
    "channel.delivery" => ChannelDelivery(crate::channel::ChannelDelivery),
}

/// How a session runs: `chat` parks after each turn, `task` ends after its turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SessionMode {
    /// Parks in `session.waiting` after each turn and takes follow-ups.
    Chat,
    /// Ends in `session.completed` or `session.failed`.
    Task,
}

/// What happens when a message reaches a busy session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Admission {
    /// Cancel the running turn, then run the new message.
    Preempt,
    /// Queue the message and drain the queue into one follow-up turn.
    Coalesce,
}

/// Why a model response ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    /// The model finished its answer (`stop`).
    Stop,
    /// The model asked for tool calls (`tool_calls`).
    ToolCalls,
    /// The output hit the token limit (`length`).
    Length,
    /// The provider filtered or refused the output (`content_filter`).
    ContentFilter,
    /// Any other reason reported by the provider, verbatim.
    Other(String),
}

impl FinishReason {
    /// The wire string: `stop`, `tool_calls`, `length`, `content_filter` or the provider's own.
    pub fn as_str(&self) -> &str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::Length => "length",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Other(other) => other,
        }
    }

    /// Parses a wire string; unknown strings become [`FinishReason::Other`].
    pub fn parse(text: &str) -> FinishReason {
        match text {
            "stop" => FinishReason::Stop,
            "tool_calls" => FinishReason::ToolCalls,
            "length" => FinishReason::Length,
            "content_filter" => FinishReason::ContentFilter,
            other => FinishReason::Other(other.to_string()),
        }
    }
}

impl std::fmt::Display for FinishReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl JsonSchema for FinishReason {
    fn schema_name() -> Cow<'static, str> {
        "FinishReason".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "stop, tool_calls, length, content_filter, or the provider's own reason verbatim"
        })
    }
}

impl Serialize for FinishReason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FinishReason {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(FinishReason::parse(&text))
    }
}

/// `session.started` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionStarted {
    /// `chat` or `task`.
    pub mode: SessionMode,
    /// The channel that created the session (e.g. `http`, `cli`, `slack`).
    pub channel: String,
    /// Optional session title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The principal that owns the session.
    pub principal: String,
    /// The session and event this one was forked from (`POST /v1/session/:id/fork`); the
    /// events after this one up to the fork's first `message.received` are copies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<crate::ForkOrigin>,
}

/// `ab.assigned` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AbAssigned {
    /// Experiment name.
    pub experiment: String,
    /// Variant the session was assigned to.
    pub variant: String,
    /// Why: `pinned` (its principal is pinned to the variant), `continuation_key` (its
    /// continuation key hashes to it) or `weight` (its id does, by the variants' weights).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `session.waiting` data (empty).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionWaiting {}

/// `session.completed` data (empty).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionCompleted {}

/// `session.failed` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionFailed {
    /// Why the session failed.
    pub message: String,
}

/// `agent.bound` data (reserved).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentBound {
    /// Remote conversation URL.
    pub url: String,
}

/// `message.received` data: the user text, as the conversation rebuild needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageReceived {
    /// The user message (coalesced messages already joined).
    pub text: String,
    /// Admission policy used for this message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<Admission>,
    /// How many queued messages were coalesced into this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coalesced: Option<u32>,
    /// The sender's idempotency key (`Idempotency-Key` header or `clientMessageId`), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_message_id: Option<String>,
    /// SHA-256 (hex) of the keyed request, so a retry of the key with another request is
    /// refused (`idempotency_key_reused`); only with `clientMessageId`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_digest: Option<String>,
}

/// `message.queued` data: a message admitted with `coalesce` while a turn ran, recorded before
/// it was acknowledged; the next `message.received {coalesced: n}` drains it (after a restart
/// too).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageQueued {
    /// The user message.
    pub text: String,
    /// Files its turn writes into the workspace first (relative path → contents).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub workspace_files: BTreeMap<String, String>,
    /// The sender's idempotency key, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_message_id: Option<String>,
    /// SHA-256 (hex) of the keyed request (see [`MessageReceived::request_digest`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_digest: Option<String>,
}

/// `turn.queued` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnQueued {
    /// 1-based position in the agent's turn queue.
    pub position: u32,
}

/// `turn.started` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnStarted {
    /// The model spec used for this turn (e.g. `openai:gpt-4.1-mini`).
    pub model: String,
}

/// `turn.completed` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnCompleted {
    /// The final assistant reply.
    pub reply: String,
    /// Token usage summed over the steps whose provider reported it, compaction calls
    /// included; `null` when none did.
    #[serde(default)]
    pub usage: Option<Usage>,
    /// The part of `usage` spent compacting the conversation (absent when the turn did not
    /// compact).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction_usage: Option<Usage>,
    /// Number of model calls in the turn.
    pub steps: u32,
    /// Wall time of the turn in milliseconds.
    pub duration_ms: u64,
}

/// `context.compacted` data: what the model sees of the session from now on is `summary` in
/// place of every event before `up_to_index`. The log itself keeps everything.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextCompacted {
    /// The first event index still sent to the model as it was.
    pub up_to_index: u64,
    /// The model-written summary of everything before `up_to_index`.
    pub summary: String,
    /// Estimated tokens of the request before compaction.
    pub tokens_before: u64,
    /// Estimated tokens of the same request rebuilt with the summary.
    pub tokens_after: u64,
}

/// `turn.failed` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnFailed {
    /// Why the turn failed; exactly `turn interrupted` for stop/preempt.
    pub message: String,
}

/// `step.started` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepStarted {
    /// 1-based step number within the turn.
    pub step: u32,
}

/// `step.completed` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepCompleted {
    /// 1-based step number within the turn.
    pub step: u32,
    /// Wall time of the model call in milliseconds.
    pub duration_ms: u64,
    /// Why the model stopped.
    pub finish_reason: FinishReason,
    /// The tokens this model call used, as its provider reported them (absent when it reported
    /// none); the turn's `turn.completed` usage sums them (with any compaction calls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// `reasoning.appended` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningAppended {
    /// Reasoning text delta.
    pub delta: String,
}

/// `reasoning.completed` data, with the provider signature the conversation rebuild sends back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningCompleted {
    /// The step's full reasoning text.
    pub text: String,
    /// Provider signature of the reasoning (Anthropic thinking blocks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// `message.appended` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageAppended {
    /// Assistant text delta.
    pub delta: String,
}

/// `message.completed` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageCompleted {
    /// The step's full assistant text.
    pub text: String,
}

/// `actions.requested` data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActionsRequested {
    /// The tool calls of one step, in the model's order.
    pub calls: Vec<RequestedCall>,
}

/// One tool call of `actions.requested`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestedCall {
    /// The provider's tool-call id.
    pub call_id: String,
    /// Tool name.
    pub tool: String,
    /// Input after validation and alias mapping.
    pub input: Value,
    /// The subagent this call delegates to, for subagent calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent: Option<String>,
}

/// `action.result` data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActionResult {
    /// The call this result answers.
    pub call_id: String,
    /// Tool name.
    pub tool: String,
    /// Output: a string for text tools, content parts for images, any JSON for authored tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Error message when the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Whether the result is an error (shown to the model as such).
    pub is_error: bool,
    /// Wall time of the call in milliseconds.
    pub duration_ms: u64,
}

/// `action.approval_requested` data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActionApprovalRequested {
    /// The call waiting for approval.
    pub call_id: String,
    /// Tool name.
    pub tool: String,
    /// The call's input.
    pub input: Value,
    /// Set when an MCP server asks the user for input during the call (`elicitation/create`):
    /// `callId` then names the elicitation, answered with `accept` (and `content`), `decline`
    /// or `cancel` instead of `approve` / `deny`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<Elicitation>,
    /// When the call's approval times out (the tool's `approval_timeout`, or the agent's
    /// `[approvals] timeout`): a call still parked then is denied with
    /// `action.approval_resolved {decision: "deny", reason: "approval timed out", by: "folio"}`.
    /// Stored in the log, so a server that restarts keeps the same deadline. Absent: the call
    /// waits until someone decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
}

/// What an MCP server asks the user during a tool call (`elicitation/create`, form mode).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Elicitation {
    /// The MCP connection that asks.
    pub server: String,
    /// The server's message to the user.
    pub message: String,
    /// The JSON Schema the answer's `content` must match (fields may carry `default`s).
    pub requested_schema: Value,
}

/// An approval decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalDecision {
    /// Run the call.
    Approve,
    /// Do not run the call.
    Deny,
    /// Answer an elicitation with `content` (missing fields take the schema's defaults).
    Accept,
    /// Refuse an elicitation.
    Decline,
    /// Dismiss an elicitation without a choice.
    Cancel,
}

/// `action.approval_resolved` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActionApprovalResolved {
    /// The call that was decided.
    pub call_id: String,
    /// `approve` or `deny` (a call); `accept`, `decline` or `cancel` (an elicitation).
    pub decision: ApprovalDecision,
    /// Optional reason given with the decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The principal that decided.
    pub by: String,
    /// An accepted elicitation's answer, defaults applied and checked against its schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
}

/// `action.authorization_requested` data: the session's principal must authorize Folio at an
/// MCP server's OAuth authorization server before the call can run. Opening `url` in a browser
/// and completing the login redirects back to the server's `GET /v1/mcp-auth/callback`, which
/// resumes the call; the tokens are stored for that principal only and never appear in events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActionAuthorizationRequested {
    /// Names this authorization (`auth_…`); its `action.authorization_resolved` carries it.
    pub call_id: String,
    /// The tool whose call waits.
    pub tool: String,
    /// The MCP connection that needs authorization.
    pub server: String,
    /// The authorization server's URL to open (carries PKCE and a single-use `state`).
    pub url: String,
}

/// `action.authorization_resolved` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActionAuthorizationResolved {
    /// The authorization that ended.
    pub call_id: String,
    /// Whether tokens were obtained (the call then runs with them).
    pub authorized: bool,
    /// Why it was not authorized (refused at the authorization server, a failed code exchange,
    /// or abandoned by a restart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `subagent.called` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubagentCalled {
    /// The tool call that delegated.
    pub call_id: String,
    /// Subagent name.
    pub subagent: String,
    /// Prompt given to the subagent.
    pub prompt: String,
}

/// `subagent.completed` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubagentCompleted {
    /// The tool call that delegated.
    pub call_id: String,
    /// Subagent name.
    pub subagent: String,
    /// The subagent's reply (or error message).
    pub reply: String,
    /// Whether the subagent failed.
    pub is_error: bool,
}

/// `artifact.tagged` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactTagged {
    /// Artifact id.
    pub id: String,
    /// Artifact kind.
    pub kind: String,
    /// Artifact key.
    pub key: String,
    /// Human title.
    pub title: String,
}

/// `action.host_call` data: a process of a tool call (or hook run, or skill command) called
/// the host API. Recorded in the session's log inside that call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActionHostCall {
    /// The tool call (or `hook_…`/`skill_…` run) whose process called.
    pub call_id: String,
    /// The route's group and verb (`kv.put`, `files.read`, `reminders.set`, …).
    pub operation: String,
    /// What was read or written: the key and version, the path, the reminder, the artifact,
    /// the connection and tool (never a stored value or a file's contents).
    pub detail: Value,
    /// Why it was refused, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
