//! The route table of the HTTP API: one [`Route`] per route (method, path with its parameters,
//! request body, answers per status, streaming or not, auth). `folio-server` builds its router
//! from this table (one handler per [`Operation`], an exhaustive match) and the OpenAPI document
//! ([`crate::openapi`]) is generated from it, so the two cannot drift.
//!
//! Paths use `{name}` for a parameter, the syntax of both OpenAPI and axum. Agent routes
//! ([`Scope::Agent`]) are served under `/<slug>` on a multi-agent host and at the root with
//! `--mode single`; host routes ([`Scope::Host`]) always at the root.

use schemars::{JsonSchema, Schema, SchemaGenerator};

use crate::{
    Acknowledged, AgentDescription, AgentSummary, ApprovalRequest, ArtifactRecord,
    ArtifactResponse, CreateSession, Empty, ErrorCode, EvalCaseSaved, EvalRunResponse,
    EvalRunSummary, Event, FollowUp, FollowUpAccepted, ForkSession, LimitsResponse, LogsResponse,
    Page, Reminder, ReminderResponse, SaveEvalCase, SchedulesResponse, SessionCreated,
    SessionResponse, SessionSummary, SetReminder, ToolCallRequest, ToolCallResult,
    VariantsResponse,
};

/// An HTTP method the API uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Method {
    /// `GET`: reads.
    Get,
    /// `POST`: creates or acts.
    Post,
    /// `DELETE`: removes.
    Delete,
}

impl Method {
    /// The method as HTTP writes it (`GET`).
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Delete => "DELETE",
        }
    }
}

/// What a route does: one variant per route, the key `folio-server` maps to its handler and the
/// document's `operationId`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// `POST /v1/session`.
    CreateSession,
    /// `POST /v1/session/{sessionId}`.
    FollowUp,
    /// `GET /v1/session/{sessionId}`.
    GetSession,
    /// `DELETE /v1/session/{sessionId}`.
    DeleteSession,
    /// `POST /v1/session/{sessionId}/stop`.
    StopSession,
    /// `POST /v1/session/{sessionId}/fork`.
    ForkSession,
    /// `POST /v1/session/{sessionId}/token`.
    IssueToken,
    /// `POST /v1/session/{sessionId}/eval-case`.
    SaveEvalCase,
    /// `GET /v1/session/{sessionId}/stream`.
    StreamSession,
    /// `GET /v1/session/{sessionId}/events`.
    SessionEvents,
    /// `POST /v1/session/{sessionId}/approvals/{callId}`.
    ResolveApproval,
    /// `POST /v1/session/{sessionId}/tools/{name}`.
    CallSessionTool,
    /// `POST /v1/session/{sessionId}/reminders`.
    SetReminder,
    /// `GET /v1/session/{sessionId}/reminders`.
    ListReminders,
    /// `DELETE /v1/session/{sessionId}/reminders/{reminderId}`.
    CancelReminder,
    /// `GET /v1/sessions`.
    ListSessions,
    /// `POST /v1/tools/{name}`.
    CallTool,
    /// `GET /v1/agent`.
    DescribeAgent,
    /// `GET /v1/schedules`.
    ListSchedules,
    /// `GET /v1/logs`.
    Logs,
    /// `GET /v1/variants`.
    ListVariants,
    /// `GET /v1/limits`.
    Limits,
    /// `GET /v1/artifacts`.
    ListArtifacts,
    /// `GET /v1/artifacts/{artifactId}`.
    GetArtifact,
    /// `GET /v1/artifacts/{artifactId}/content`.
    ArtifactContent,
    /// `GET /v1/evals`.
    ListEvals,
    /// `GET /v1/evals/{runId}`.
    GetEval,
    /// `GET /v1/openapi.json`.
    OpenApi,
    /// `GET /v1/agents` (host).
    ListAgents,
    /// `GET /v1/host/whoami` (host API socket).
    HostWhoami,
    /// `POST /v1/host/files/{operation}` (host API socket).
    HostFiles,
    /// `POST /v1/host/kv/get` (host API socket).
    HostKvGet,
    /// `POST /v1/host/kv/put` (host API socket).
    HostKvPut,
    /// `POST /v1/host/kv/delete` (host API socket).
    HostKvDelete,
    /// `POST /v1/host/kv/list` (host API socket).
    HostKvList,
    /// `POST /v1/host/reminders/set` (host API socket).
    HostSetReminder,
    /// `POST /v1/host/reminders/list` (host API socket).
    HostListReminders,
    /// `POST /v1/host/reminders/cancel` (host API socket).
    HostCancelReminder,
    /// `POST /v1/host/artifacts/put` (host API socket).
    HostPutArtifact,
    /// `POST /v1/host/artifacts/get` (host API socket).
    HostGetArtifact,
    /// `POST /v1/host/artifacts/list` (host API socket).
    HostListArtifacts,
    /// `POST /v1/host/connections/list` (host API socket).
    HostListConnections,
    /// `POST /v1/host/connections/call` (host API socket).
    HostCallConnection,
    /// `POST /v1/host/telemetry/attributes` (host API socket).
    HostSpanAttributes,
    /// `POST /v1/host/telemetry/metric` (host API socket).
    HostMetric,
    /// `POST /v1/host/telemetry/log` (host API socket).
    HostLog,
}

/// Where a route is mounted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Under the agent's prefix: `/<slug>` on a multi-agent host, the root with `--mode single`.
    Agent,
    /// At the host's root, whatever the layout.
    Host,
    /// On the host API socket (`FOLIO_HOST_URL`), for a session's processes only.
    Call,
}

/// Whether a route needs the caller's credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Behind the server's auth (bearer token, tokens file, local-dev-strict or anonymous).
    Caller,
    /// Open to anyone the browser guard admits: the answer holds no data.
    Open,
    /// The call's `FOLIO_HOST_TOKEN`, valid while the process it was issued for runs.
    HostToken,
}

/// The schema of a body, from the one generator of the document (a `$ref` into
/// `components/schemas` for a named type).
pub type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

/// The body of an answer.
#[derive(Debug, Clone, Copy)]
pub enum Body {
    /// `application/json`, of this type.
    Json(SchemaFn),
    /// `application/x-ndjson`: one JSON value of this type per line.
    Ndjson(SchemaFn),
    /// Bytes of any media type (the `Content-Type` says which).
    Bytes,
}

/// The JSON request body of a route.
#[derive(Debug, Clone, Copy)]
pub struct RequestBody {
    /// Its type.
    pub schema: SchemaFn,
    /// Whether it may be left out (an empty body reads as `{}`).
    pub optional: bool,
}

/// A success answer of a route.
#[derive(Debug, Clone, Copy)]
pub struct Answer {
    /// Its status (`200`, `201`).
    pub status: u16,
    /// What it means.
    pub description: &'static str,
    /// What it carries.
    pub body: Body,
}

/// The type of a query or header parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    /// Any string.
    Text,
    /// A non-negative integer.
    Count,
    /// An integer from `min` to `max`.
    Range {
        /// The smallest accepted value.
        min: u64,
        /// The largest accepted value.
        max: u64,
    },
    /// One of these strings.
    OneOf(&'static [&'static str]),
}

/// An optional query or header parameter.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    /// Its name (`startIndex`, `Idempotency-Key`).
    pub name: &'static str,
    /// What it does.
    pub description: &'static str,
    /// What it accepts.
    pub kind: ParamType,
}

/// One route of the HTTP API.
#[derive(Debug, Clone, Copy)]
pub struct Route {
    /// What it does (the server's handler, the document's `operationId`).
    pub operation: Operation,
    /// Its method.
    pub method: Method,
    /// Its path, relative to the agent's prefix for [`Scope::Agent`] (`/v1/session/{sessionId}`).
    pub path: &'static str,
    /// Where it is mounted.
    pub scope: Scope,
    /// Whether it needs credentials.
    pub access: Access,
    /// One line saying what it does.
    pub summary: &'static str,
    /// Its optional query parameters.
    pub query: &'static [Param],
    /// Its optional header parameters.
    pub headers: &'static [Param],
    /// Its JSON request body, when it takes one.
    pub request: Option<RequestBody>,
    /// Its success answers.
    pub answers: &'static [Answer],
    /// The error codes of this route beyond those of every route (`403`, `408`, `500`), of
    /// every authenticated route (`401`) and of every route with a body (`400`, `413`, `415`).
    pub errors: &'static [ErrorCode],
}

impl Route {
    /// The names of the path's parameters, in order (`["sessionId", "callId"]`).
    pub fn path_params(&self) -> impl Iterator<Item = &'static str> {
        self.path
            .split('/')
            .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
    }

    /// The path with `value` for every parameter (`/v1/session/x/approvals/x`).
    pub fn path_with(&self, value: &str) -> String {
        self.path
            .split('/')
            .map(|segment| {
                if segment.starts_with('{') {
                    value
                } else {
                    segment
                }
            })
            .collect::<Vec<_>>()
            .join("/")
    }
}

const fn json<T: JsonSchema>() -> Body {
    Body::Json(SchemaGenerator::subschema_for::<T>)
}

const fn request<T: JsonSchema>() -> Option<RequestBody> {
    Some(RequestBody {
        schema: SchemaGenerator::subschema_for::<T>,
        optional: false,
    })
}

/// An empty body: `{}` or nothing.
const NO_FIELDS: Option<RequestBody> = Some(RequestBody {
    schema: SchemaGenerator::subschema_for::<Empty>,
    optional: true,
});

const OK: &str = "Done.";

const IDEMPOTENCY_KEY: Param = Param {
    name: "Idempotency-Key",
    description: "An idempotency key (the same as the body's `clientMessageId`; both given, they must agree): a retry of the same request with the same key gets the first answer; the key with another request is refused (`422 idempotency_key_reused`).",
    kind: ParamType::Text,
};

/// A host API route (on the socket, behind the call's token; every one may answer `429`
/// past the session's call budget), answering `200` with `$answer`.
macro_rules! host_route {
    ($operation:ident, $method:ident, $path:literal, $summary:literal, $request:expr, $answer:ty, [$($error:ident),*]) => {
        Route {
            operation: Operation::$operation,
            method: Method::$method,
            path: $path,
            scope: Scope::Call,
            access: Access::HostToken,
            summary: $summary,
            query: &[],
            headers: &[],
            request: $request,
            answers: &[Answer {
                status: 200,
                description: OK,
                body: json::<$answer>(),
            }],
            errors: &[ErrorCode::RateLimited, $(ErrorCode::$error),*],
        }
    };
}

const ROUTES: &[Route] = &[
    Route {
        operation: Operation::CreateSession,
        method: Method::Post,
        path: "/v1/session",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "Start a session with its first message; answers once the message is durable, without waiting for the turn.",
        query: &[],
        headers: &[IDEMPOTENCY_KEY],
        request: request::<CreateSession>(),
        answers: &[Answer {
            status: 201,
            description: "The session, its first continuation token and where to watch it.",
            body: json::<SessionCreated>(),
        }],
        errors: &[
            ErrorCode::IdempotencyKeyReused,
            ErrorCode::RateLimited,
            ErrorCode::Overloaded,
        ],
    },
    Route {
        operation: Operation::FollowUp,
        method: Method::Post,
        path: "/v1/session/{sessionId}",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "Send a follow-up message with the current continuation token (preempts a running turn unless `admission` is `coalesce`).",
        query: &[],
        headers: &[IDEMPOTENCY_KEY],
        request: request::<FollowUp>(),
        answers: &[Answer {
            status: 200,
            description: "The message is durable; the continuation token rotated.",
            body: json::<FollowUpAccepted>(),
        }],
        errors: &[
            ErrorCode::NotFound,
            ErrorCode::StaleContinuationToken,
            ErrorCode::SessionNotFollowable,
            ErrorCode::IdempotencyKeyReused,
            ErrorCode::RateLimited,
            ErrorCode::Overloaded,
        ],
    },
    Route {
        operation: Operation::GetSession,
        method: Method::Get,
        path: "/v1/session/{sessionId}",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "Read a session's summary.",
        query: &[],
        headers: &[],
        request: None,
        answers: &[Answer {
            status: 200,
            description: "The session.",
            body: json::<SessionResponse>(),
        }],
        errors: &[ErrorCode::NotFound],
    },
    Route {
        operation: Operation::DeleteSession,
        method: Method::Delete,
        path: "/v1/session/{sessionId}",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "Remove a session (its running turn is stopped first).",
        query: &[],
        headers: &[],
        request: None,
        answers: &[Answer {
            status: 200,
            description: OK,
            body: json::<Acknowledged>(),
        }],
        errors: &[ErrorCode::NotFound],
    },
    Route {
        operation: Operation::StopSession,
        method: Method::Post,
        path: "/v1/session/{sessionId}/stop",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "Cancel the running turn (`turn.failed` with `turn interrupted`) and drop queued messages; a no-op on an idle session.",
        query: &[],
        headers: &[],
        request: NO_FIELDS,
        answers: &[Answer {
            status: 200,
            description: OK,
            body: json::<Acknowledged>(),
        }],
        errors: &[ErrorCode::NotFound],
    },
    Route {
        operation: Operation::ForkSession,
        method: Method::Post,
        path: "/v1/session/{sessionId}/fork",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "Start a new session from this one's events before a `message.received`, continuing with another message.",
        query: &[],
        headers: &[],
        request: request::<ForkSession>(),
        answers: &[Answer {
            status: 201,
            description: "The new session, as `POST /v1/session` answers it.",
            body: json::<SessionCreated>(),
        }],
        errors: &[ErrorCode::NotFound],
    },
    Route {
        operation: Operation::IssueToken,
        method: Method::Post,
        path: "/v1/session/{sessionId}/token",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "Hand the owner of a chat session a fresh continuation token (the one handed out before goes stale).",
        query: &[],
        headers: &[],
        request: NO_FIELDS,
        answers: &[Answer {
            status: 200,
            description: "The new continuation token.",
            body: json::<FollowUpAccepted>(),
        }],
        errors: &[ErrorCode::NotFound, ErrorCode::SessionNotFollowable],
    },
    Route {
        operation: Operation::SaveEvalCase,
        method: Method::Post,
        path: "/v1/session/{sessionId}/eval-case",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "Write the session as an eval case (`evals/from-session/<name>.eval.toml`) into the agent's project.",
        query: &[],
        headers: &[],
        request: request::<SaveEvalCase>(),
        answers: &[Answer {
            status: 201,
            description: "The case was written.",
            body: json::<EvalCaseSaved>(),
        }],
        errors: &[
            ErrorCode::NotFound,
            ErrorCode::SessionBusy,
            ErrorCode::AlreadyExists,
        ],
    },
    Route {
        operation: Operation::StreamSession,
        method: Method::Get,
        path: "/v1/session/{sessionId}/stream",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "Stream the session's events: every stored event from `startIndex`, then live ones while the session lives (a task session's stream ends after its final event); an empty line every 15 s keeps the connection open.",
        query: &[Param {
            name: "startIndex",
            description: "The first event index to send (default 0: the whole session).",
            kind: ParamType::Count,
        }],
        headers: &[],
        request: None,
        answers: &[Answer {
            status: 200,
            description: "One event per line (empty lines are keep-alives).",
            body: Body::Ndjson(SchemaGenerator::subschema_for::<Event>),
        }],
        errors: &[ErrorCode::InvalidRequest, ErrorCode::NotFound],
    },
    Route {
        operation: Operation::SessionEvents,
        method: Method::Get,
        path: "/v1/session/{sessionId}/events",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "Every stored event of the session, then the end of the answer.",
        query: &[],
        headers: &[],
        request: None,
        answers: &[Answer {
            status: 200,
            description: "One event per line.",
            body: Body::Ndjson(SchemaGenerator::subschema_for::<Event>),
        }],
        errors: &[ErrorCode::NotFound],
    },
    Route {
        operation: Operation::ResolveApproval,
        method: Method::Post,
        path: "/v1/session/{sessionId}/approvals/{callId}",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "Decide a parked tool call (`approve`/`deny`) or answer an elicitation (`accept`/`decline`/`cancel`).",
        query: &[],
        headers: &[],
        request: request::<ApprovalRequest>(),
        answers: &[Answer {
            status: 200,
            description: "The decision is recorded; the turn goes on.",
            body: json::<Acknowledged>(),
        }],
        errors: &[ErrorCode::NotFound, ErrorCode::ApprovalResolved],
    },
    Route {
        operation: Operation::CallSessionTool,
        method: Method::Post,
        path: "/v1/session/{sessionId}/tools/{name}",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "Call a tool directly in the caller's session (built-in tools included); refused while a turn runs.",
        query: &[],
        headers: &[],
        request: request::<ToolCallRequest>(),
        answers: &[Answer {
            status: 200,
            description: "The tool's result (a failed tool answers `200` with `isError`).",
            body: json::<ToolCallResult>(),
        }],
        errors: &[ErrorCode::NotFound, ErrorCode::SessionBusy],
    },
    Route {
        operation: Operation::SetReminder,
        method: Method::Post,
        path: "/v1/session/{sessionId}/reminders",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "Set a one-off reminder that wakes the chat session with a message.",
        query: &[],
        headers: &[],
        request: request::<SetReminder>(),
        answers: &[Answer {
            status: 201,
            description: "The reminder as stored.",
            body: json::<ReminderResponse>(),
        }],
        errors: &[ErrorCode::NotFound, ErrorCode::SessionNotFollowable],
    },
    Route {
        operation: Operation::ListReminders,
        method: Method::Get,
        path: "/v1/session/{sessionId}/reminders",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "The session's pending reminders.",
        query: &[],
        headers: &[],
        request: None,
        answers: &[Answer {
            status: 200,
            description: "Every pending reminder (one page).",
            body: json::<Page<Reminder>>(),
        }],
        errors: &[ErrorCode::NotFound],
    },
    Route {
        operation: Operation::CancelReminder,
        method: Method::Delete,
        path: "/v1/session/{sessionId}/reminders/{reminderId}",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "Cancel a pending reminder.",
        query: &[],
        headers: &[],
        request: None,
        answers: &[Answer {
            status: 200,
            description: OK,
            body: json::<Acknowledged>(),
        }],
        errors: &[ErrorCode::NotFound],
    },
    Route {
        operation: Operation::ListSessions,
        method: Method::Get,
        path: "/v1/sessions",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "The caller's sessions, newest first, a page at a time.",
        query: &[
            Param {
                name: "limit",
                description: "Sessions per page (default 50).",
                kind: ParamType::Range { min: 1, max: 200 },
            },
            Param {
                name: "cursor",
                description: "The `nextCursor` of the previous page.",
                kind: ParamType::Text,
            },
            Param {
                name: "q",
                description: "Only sessions whose title or id contains this.",
                kind: ParamType::Text,
            },
            Param {
                name: "scope",
                description: "`all` lists every principal's sessions, only under `folio dev` (or `serve --dev`) for loopback callers (default `mine`).",
                kind: ParamType::OneOf(&["mine", "all"]),
            },
            Param {
                name: "principal",
                description: "With `scope=all`: only this principal's sessions.",
                kind: ParamType::Text,
            },
            Param {
                name: "status",
                description: "Only sessions in this status (as their metadata records it).",
                kind: ParamType::OneOf(&["running", "waiting", "completed", "failed"]),
            },
            Param {
                name: "metaKey",
                description: "Only sessions whose metadata sets this field (to `metaValue`, when given).",
                kind: ParamType::OneOf(&["channel", "variant", "purpose", "continuationKey"]),
            },
            Param {
                name: "metaValue",
                description: "With `metaKey`: the value the field must have.",
                kind: ParamType::Text,
            },
            Param {
                name: "createdFrom",
                description: "Only sessions created at or after this RFC 3339 time.",
                kind: ParamType::Text,
            },
            Param {
                name: "createdBefore",
                description: "Only sessions created before this RFC 3339 time.",
                kind: ParamType::Text,
            },
            Param {
                name: "updatedFrom",
                description: "Only sessions last updated at or after this RFC 3339 time.",
                kind: ParamType::Text,
            },
            Param {
                name: "updatedBefore",
                description: "Only sessions last updated before this RFC 3339 time.",
                kind: ParamType::Text,
            },
        ],
        headers: &[],
        request: None,
        answers: &[Answer {
            status: 200,
            description: "A page of sessions.",
            body: json::<Page<SessionSummary>>(),
        }],
        errors: &[ErrorCode::InvalidRequest],
    },
    Route {
        operation: Operation::CallTool,
        method: Method::Post,
        path: "/v1/tools/{name}",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "Call an authored tool directly, outside any session (built-in tools run only session-scoped).",
        query: &[],
        headers: &[],
        request: request::<ToolCallRequest>(),
        answers: &[Answer {
            status: 200,
            description: "The tool's result (a failed tool answers `200` with `isError`).",
            body: json::<ToolCallResult>(),
        }],
        errors: &[ErrorCode::NotFound],
    },
    Route {
        operation: Operation::DescribeAgent,
        method: Method::Get,
        path: "/v1/agent",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "What discovery found: tools with their schemas, skills, subagents, connections, channels, hooks, schedules, artifacts and diagnostics.",
        query: &[],
        headers: &[],
        request: None,
        answers: &[Answer {
            status: 200,
            description: "The agent.",
            body: json::<AgentDescription>(),
        }],
        errors: &[],
    },
    Route {
        operation: Operation::ListSchedules,
        method: Method::Get,
        path: "/v1/schedules",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "The agent's schedules with their last and next fires.",
        query: &[],
        headers: &[],
        request: None,
        answers: &[Answer {
            status: 200,
            description: "Every schedule.",
            body: json::<SchedulesResponse>(),
        }],
        errors: &[],
    },
    Route {
        operation: Operation::ListVariants,
        method: Method::Get,
        path: "/v1/variants",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "The agent's A/B variants with, for each, its sessions, turns, failures, tokens, cost, turn latency p50/p95 and denied approvals (every principal's sessions).",
        query: &[],
        headers: &[],
        request: None,
        answers: &[Answer {
            status: 200,
            description: "Every variant.",
            body: json::<VariantsResponse>(),
        }],
        errors: &[],
    },
    Route {
        operation: Operation::Logs,
        method: Method::Get,
        path: "/v1/logs",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "Recent server log lines about the caller's sessions (and server-wide lines).",
        query: &[Param {
            name: "since",
            description: "Only lines with a greater `seq` (default 0).",
            kind: ParamType::Count,
        }],
        headers: &[],
        request: None,
        answers: &[Answer {
            status: 200,
            description: "Log lines, oldest first.",
            body: json::<LogsResponse>(),
        }],
        errors: &[ErrorCode::InvalidRequest],
    },
    Route {
        operation: Operation::Limits,
        method: Method::Get,
        path: "/v1/limits",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "The caller's limits (`[limits]` with its own quotas from the tokens file) and what it uses of them now.",
        query: &[],
        headers: &[],
        request: None,
        answers: &[Answer {
            status: 200,
            description: "Its limits and usage.",
            body: json::<LimitsResponse>(),
        }],
        errors: &[],
    },
    Route {
        operation: Operation::ListArtifacts,
        method: Method::Get,
        path: "/v1/artifacts",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "Every stored artifact record.",
        query: &[],
        headers: &[],
        request: None,
        answers: &[Answer {
            status: 200,
            description: "Every artifact (one page).",
            body: json::<Page<ArtifactRecord>>(),
        }],
        errors: &[],
    },
    Route {
        operation: Operation::GetArtifact,
        method: Method::Get,
        path: "/v1/artifacts/{artifactId}",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "One artifact record.",
        query: &[],
        headers: &[],
        request: None,
        answers: &[Answer {
            status: 200,
            description: "The artifact.",
            body: json::<ArtifactResponse>(),
        }],
        errors: &[ErrorCode::NotFound],
    },
    Route {
        operation: Operation::ArtifactContent,
        method: Method::Get,
        path: "/v1/artifacts/{artifactId}/content",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "An artifact's contents, with its content type.",
        query: &[],
        headers: &[],
        request: None,
        answers: &[Answer {
            status: 200,
            description: "The contents.",
            body: Body::Bytes,
        }],
        errors: &[ErrorCode::NotFound],
    },
    Route {
        operation: Operation::ListEvals,
        method: Method::Get,
        path: "/v1/evals",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "The stored eval runs (`folio eval`), newest first.",
        query: &[],
        headers: &[],
        request: None,
        answers: &[Answer {
            status: 200,
            description: "Every eval run's summary (one page).",
            body: json::<Page<EvalRunSummary>>(),
        }],
        errors: &[],
    },
    Route {
        operation: Operation::GetEval,
        method: Method::Get,
        path: "/v1/evals/{runId}",
        scope: Scope::Agent,
        access: Access::Caller,
        summary: "One stored eval run with every case, attempt, step and verdict.",
        query: &[],
        headers: &[],
        request: None,
        answers: &[Answer {
            status: 200,
            description: "The run.",
            body: json::<EvalRunResponse>(),
        }],
        errors: &[ErrorCode::NotFound],
    },
    Route {
        operation: Operation::OpenApi,
        method: Method::Get,
        path: "/v1/openapi.json",
        scope: Scope::Agent,
        access: Access::Open,
        summary: "This document (OpenAPI 3.1), with this agent's prefix as its server. Served without authentication: it holds no data.",
        query: &[],
        headers: &[],
        request: None,
        answers: &[Answer {
            status: 200,
            description: "The OpenAPI document.",
            body: Body::Json(openapi_document_schema),
        }],
        errors: &[],
    },
    Route {
        operation: Operation::ListAgents,
        method: Method::Get,
        path: "/v1/agents",
        scope: Scope::Host,
        access: Access::Caller,
        summary: "The agents this host serves (at the host's root, not under an agent's prefix).",
        query: &[],
        headers: &[],
        request: None,
        answers: &[Answer {
            status: 200,
            description: "Every mounted agent.",
            body: json::<Vec<AgentSummary>>(),
        }],
        errors: &[],
    },
    host_route!(
        HostWhoami,
        Get,
        "/v1/host/whoami",
        "Who the token acts for: the session, the call, the principal and the agent.",
        None,
        crate::HostIdentity,
        []
    ),
    host_route!(
        HostFiles,
        Post,
        "/v1/host/files/{operation}",
        "Runs a file tool on the session's FileSystem (`read`, `write`, `edit`, `delete`, `list`, `glob`, `grep`: Read, Write, StrReplace, Delete, LS, Glob, Grep), the body being that tool's input; the same confinement and limits as the model's calls.",
        request::<serde_json::Map<String, serde_json::Value>>(),
        crate::HostOutput,
        [NotFound]
    ),
    host_route!(
        HostKvGet,
        Post,
        "/v1/host/kv/get",
        "One storage entry (`entry: null` when there is none or it expired).",
        request::<crate::KvGet>(),
        crate::KvEntryResponse,
        []
    ),
    host_route!(
        HostKvPut,
        Post,
        "/v1/host/kv/put",
        "Writes a storage entry (compare-and-set with `ifVersion`; `ifVersion: 0` only when there is none); durable when answered.",
        request::<crate::KvPut>(),
        crate::KvEntryResponse,
        [VersionConflict]
    ),
    host_route!(
        HostKvDelete,
        Post,
        "/v1/host/kv/delete",
        "Removes a storage entry (only at `ifVersion` when given); answers the entry removed, or `null`.",
        request::<crate::KvDelete>(),
        crate::KvEntryResponse,
        [VersionConflict]
    ),
    host_route!(
        HostKvList,
        Post,
        "/v1/host/kv/list",
        "A page of a scope's entries in key order, by prefix.",
        request::<crate::KvList>(),
        crate::KvListResponse,
        []
    ),
    host_route!(
        HostSetReminder,
        Post,
        "/v1/host/reminders/set",
        "Sets a reminder on the session (the same reminders as the HTTP API).",
        request::<SetReminder>(),
        ReminderResponse,
        [SessionNotFollowable]
    ),
    host_route!(
        HostListReminders,
        Post,
        "/v1/host/reminders/list",
        "The session's pending reminders, earliest first.",
        NO_FIELDS,
        crate::HostReminders,
        []
    ),
    host_route!(
        HostCancelReminder,
        Post,
        "/v1/host/reminders/cancel",
        "Cancels a pending reminder of the session.",
        request::<crate::CancelReminder>(),
        Acknowledged,
        [NotFound]
    ),
    host_route!(
        HostPutArtifact,
        Post,
        "/v1/host/artifacts/put",
        "Tags (upserts by kind and key) an artifact of the session; records `artifact.tagged`.",
        request::<crate::PutArtifact>(),
        crate::HostArtifact,
        []
    ),
    host_route!(
        HostGetArtifact,
        Post,
        "/v1/host/artifacts/get",
        "One artifact of the agent, by id or by kind and key, with its contents as text.",
        request::<crate::GetArtifact>(),
        crate::HostArtifact,
        [NotFound]
    ),
    host_route!(
        HostListArtifacts,
        Post,
        "/v1/host/artifacts/list",
        "The agent's artifacts (or the session's), most recently updated first.",
        request::<crate::ListArtifacts>(),
        crate::HostArtifacts,
        []
    ),
    host_route!(
        HostListConnections,
        Post,
        "/v1/host/connections/list",
        "The agent's host connections (agent/host-connections/) and their tools.",
        NO_FIELDS,
        crate::HostConnections,
        []
    ),
    host_route!(
        HostCallConnection,
        Post,
        "/v1/host/connections/call",
        "Calls a tool of a host connection.",
        request::<crate::CallConnectionTool>(),
        ToolCallResult,
        [NotFound]
    ),
    host_route!(
        HostSpanAttributes,
        Post,
        "/v1/host/telemetry/attributes",
        "Sets attributes on the span of the calling tool call.",
        request::<crate::SpanAttributes>(),
        Acknowledged,
        []
    ),
    host_route!(
        HostMetric,
        Post,
        "/v1/host/telemetry/metric",
        "Records a counter or histogram point (names dotted lowercase, not Folio's prefixes).",
        request::<crate::RecordMetric>(),
        Acknowledged,
        []
    ),
    host_route!(
        HostLog,
        Post,
        "/v1/host/telemetry/log",
        "Writes a log line about the session (`GET /v1/logs`, OTLP logs), inside the call's span.",
        request::<crate::WriteLog>(),
        Acknowledged,
        []
    ),
];

/// An OpenAPI document: a JSON object (its schema is OpenAPI's own).
fn openapi_document_schema(_: &mut SchemaGenerator) -> Schema {
    schemars::json_schema!({
        "type": "object",
        "description": "An OpenAPI 3.1 document (https://spec.openapis.org/oas/v3.1.1)."
    })
}

/// Every route of the HTTP API, in the order the document lists them.
pub fn routes() -> &'static [Route] {
    ROUTES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_has_one_route_and_every_method_path_pair_is_unique() {
        let mut pairs: Vec<(Method, &str)> = routes().iter().map(|r| (r.method, r.path)).collect();
        pairs.sort_unstable();
        pairs.dedup();
        assert_eq!(pairs.len(), routes().len());
        for route in routes() {
            let same = routes()
                .iter()
                .filter(|r| r.operation == route.operation)
                .count();
            assert_eq!(same, 1, "{:?}", route.operation);
        }
    }

    #[test]
    fn path_parameters_are_read_from_the_path() {
        let approval = routes()
            .iter()
            .find(|r| r.operation == Operation::ResolveApproval)
            .unwrap();
        assert_eq!(
            approval.path_params().collect::<Vec<_>>(),
            ["sessionId", "callId"]
        );
        assert_eq!(approval.path_with("x"), "/v1/session/x/approvals/x");
    }
}
