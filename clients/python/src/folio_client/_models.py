# Generated from docs/openapi.json by datamodel-code-generator: do not edit.
# Regenerate with `clients/python/scripts/generate.py`; `clients/python/scripts/test` fails
# when this file differs from what the generator writes.

from __future__ import annotations

from typing import Any, Literal, TypeAlias, TypedDict

import sys

if sys.version_info >= (3, 11):
    from typing import NotRequired
else:  # pragma: no cover
    from typing_extensions import NotRequired


class AbAssigned(TypedDict):
    """
    `ab.assigned` data.
    """

    experiment: str
    """
    Experiment name.
    """
    reason: NotRequired[str | None]
    """
    Why: `pinned` (its principal is pinned to the variant), `continuation_key` (its
    continuation key hashes to it) or `weight` (its id does, by the variants' weights).
    """
    variant: str
    """
    Variant the session was assigned to.
    """


class Acknowledged(TypedDict):
    """
    `{ok: true}`: the answer of stop, delete and approval decisions.
    """

    ok: Literal[True]
    """
    Always `true`.
    """


class ActionAuthorizationRequested(TypedDict):
    """
    `action.authorization_requested` data: the session's principal must authorize Folio at an
    MCP server's OAuth authorization server before the call can run. Opening `url` in a browser
    and completing the login redirects back to the server's `GET /v1/mcp-auth/callback`, which
    resumes the call; the tokens are stored for that principal only and never appear in events.
    """

    callId: str
    """
    Names this authorization (`auth_…`); its `action.authorization_resolved` carries it.
    """
    server: str
    """
    The MCP connection that needs authorization.
    """
    tool: str
    """
    The tool whose call waits.
    """
    url: str
    """
    The authorization server's URL to open (carries PKCE and a single-use `state`).
    """


class ActionAuthorizationResolved(TypedDict):
    """
    `action.authorization_resolved` data.
    """

    authorized: bool
    """
    Whether tokens were obtained (the call then runs with them).
    """
    callId: str
    """
    The authorization that ended.
    """
    reason: NotRequired[str | None]
    """
    Why it was not authorized (refused at the authorization server, a failed code exchange,
    or abandoned by a restart).
    """


class ActionHostCall(TypedDict):
    """
    `action.host_call` data: a process of a tool call (or hook run, or skill command) called
    the host API. Recorded in the session's log inside that call.
    """

    callId: str
    """
    The tool call (or `hook_…`/`skill_…` run) whose process called.
    """
    detail: Any
    """
    What was read or written: the key and version, the path, the reminder, the artifact,
    the connection and tool (never a stored value or a file's contents).
    """
    error: NotRequired[str | None]
    """
    Why it was refused, when it was.
    """
    operation: str
    """
    The route's group and verb (`kv.put`, `files.read`, `reminders.set`, …).
    """


class ActionResult(TypedDict):
    """
    `action.result` data.
    """

    callId: str
    """
    The call this result answers.
    """
    durationMs: int
    """
    Wall time of the call in milliseconds.
    """
    error: NotRequired[str | None]
    """
    Error message when the call failed.
    """
    isError: bool
    """
    Whether the result is an error (shown to the model as such).
    """
    output: NotRequired[Any]
    """
    Output: a string for text tools, content parts for images, any JSON for authored tools.
    """
    tool: str
    """
    Tool name.
    """


Admission: TypeAlias = Literal['preempt', 'coalesce']
"""
What happens when a message reaches a busy session.

- `preempt`: Cancel the running turn, then run the new message.
- `coalesce`: Queue the message and drain the queue into one follow-up turn.
"""


class AgentBound(TypedDict):
    """
    `agent.bound` data (reserved).
    """

    url: str
    """
    Remote conversation URL.
    """


class AgentHeader(TypedDict):
    """
    The agent half of [`AgentDescription`].
    """

    description: NotRequired[str | None]
    """
    What the agent does, when it says.
    """
    model: str
    """
    The model spec turns run with.
    """
    name: str
    """
    Display name.
    """
    rooted: bool
    """
    Whether the agent has an authored `root/` tree.
    """
    slug: str
    """
    The URL segment it is mounted under.
    """


class AgentSummary(TypedDict):
    """
    One mounted agent of `GET /v1/agents`.
    """

    description: NotRequired[str | None]
    """
    What the agent does, when it says.
    """
    name: str
    """
    Display name.
    """
    slug: str
    """
    The URL segment of the agent.
    """


ApprovalDecision: TypeAlias = Literal['approve', 'deny', 'accept', 'decline', 'cancel']
"""
An approval decision.

- `approve`: Run the call.
- `deny`: Do not run the call.
- `accept`: Answer an elicitation with `content` (missing fields take the schema's defaults).
- `decline`: Refuse an elicitation.
- `cancel`: Dismiss an elicitation without a choice.
"""


class ApprovalRequest(TypedDict):
    """
    `POST /v1/session/:id/approvals/:callId`: the decision on a parked call.
    """

    content: NotRequired[Any]
    """
    An elicitation's answer with `accept`: an object matching its `requestedSchema`
    (fields left out take the schema's defaults).
    """
    decision: ApprovalDecision
    """
    `approve` or `deny` (a call); `accept`, `decline` or `cancel` (an elicitation).
    """
    reason: NotRequired[str | None]
    """
    Why (shown to the model on a denial).
    """


class ArtifactKindInfo(TypedDict):
    """
    One artifact kind.
    """

    description: NotRequired[str | None]
    """
    What it is for.
    """
    name: str
    """
    The kind name.
    """
    schema: NotRequired[Any]
    """
    JSON Schema of its data.
    """


class ArtifactRecord(TypedDict):
    """
    A stored artifact (`<id>.json`; `GET /v1/artifacts` lists them).
    """

    contentType: NotRequired[str | None]
    """
    The MIME type of the contents, when there are contents.
    """
    createdAt: str
    """
    When it was first tagged.
    """
    data: Any
    """
    Structured data (validated against the kind's schema).
    """
    id: str
    """
    `art_` + ULID; stable across upserts of the same `(kind, key)`.
    """
    key: str
    """
    The upsert key, unique within the kind.
    """
    kind: str
    """
    The kind.
    """
    sessionId: NotRequired[str | None]
    """
    The session that last tagged it.
    """
    title: str
    """
    A title for lists.
    """
    updatedAt: str
    """
    When it was last tagged.
    """


class ArtifactRecordPage(TypedDict):
    """
    A page of a list: `GET /v1/sessions` (newest first, with a cursor) and `GET /v1/artifacts`.
    """

    data: list[ArtifactRecord]
    """
    The items of this page.
    """
    nextCursor: NotRequired[str | None]
    """
    Pass as `cursor` for the next page; absent on the last page.
    """
    ok: Literal[True]
    """
    Always `true`.
    """


class ArtifactResponse(TypedDict):
    """
    `GET /v1/artifacts/:id`.
    """

    artifact: ArtifactRecord
    """
    The artifact.
    """
    ok: Literal[True]
    """
    Always `true`.
    """


class ArtifactTagged(TypedDict):
    """
    `artifact.tagged` data.
    """

    id: str
    """
    Artifact id.
    """
    key: str
    """
    Artifact key.
    """
    kind: str
    """
    Artifact kind.
    """
    title: str
    """
    Human title.
    """


class ArtifactsInfo(TypedDict):
    """
    The agent's artifact settings.
    """

    agentTool: bool
    """
    Whether the model is offered `tag_artifact`.
    """
    kinds: list[ArtifactKindInfo]
    """
    The kinds.
    """
    max: int
    """
    Most artifacts kept.
    """


class AssertionResult(TypedDict):
    """
    One assertion's verdict, with what it expected and what it found.
    """

    actual: Any
    """
    What it found.
    """
    expected: Any
    """
    What it expected.
    """
    kind: str
    """
    The assertion's key (`called_tool`, `reply_matches`, `trajectory`, …).
    """
    message: str
    """
    One line for a person: why it failed, or what it checked.
    """
    passed: bool
    """
    Whether it passed.
    """
    score: float
    """
    Its score (0 to 1): 1 or 0, or partial credit for trajectory scores and judges.
    """


class CallConnectionTool(TypedDict):
    """
    `POST /v1/host/connections/call`: call a tool of a host connection.
    """

    arguments: NotRequired[dict[str, Any]]
    """
    Its arguments.
    """
    connection: str
    """
    The connection.
    """
    tool: str
    """
    The tool's name on that server.
    """


class CancelReminder(TypedDict):
    """
    `POST /v1/host/reminders/cancel`.
    """

    reminderId: str
    """
    `rem_…`.
    """


ChannelDeliveryOutcome: TypeAlias = Literal['received', 'replied', 'reply_failed']
"""
What a `channel.delivery` event reports.

- `received`: A delivery's message reached the session.
- `replied`: The turn's answer went back to the provider (comment, thread message, `[deliver]` POST).
- `reply_failed`: The turn's answer could not be delivered (see `message`): retries ran out or the provider
refused it.
"""


class ChannelInfo(TypedDict):
    """
    A channel as discovery found it.
    """

    id: str
    """
    The channel id (its file name).
    """
    kind: str
    """
    `webhook`, `github` or `slack`.
    """


class ContextCompacted(TypedDict):
    """
    `context.compacted` data: what the model sees of the session from now on is `summary` in
    place of every event before `up_to_index`. The log itself keeps everything.
    """

    summary: str
    """
    The model-written summary of everything before `up_to_index`.
    """
    tokensAfter: int
    """
    Estimated tokens of the same request rebuilt with the summary.
    """
    tokensBefore: int
    """
    Estimated tokens of the request before compaction.
    """
    upToIndex: int
    """
    The first event index still sent to the model as it was.
    """


class Elicitation(TypedDict):
    """
    What an MCP server asks the user during a tool call (`elicitation/create`, form mode).
    """

    message: str
    """
    The server's message to the user.
    """
    requestedSchema: Any
    """
    The JSON Schema the answer's `content` must match (fields may carry `default`s).
    """
    server: str
    """
    The MCP connection that asks.
    """


class Empty(TypedDict):
    """
    An empty request body (`POST /v1/session/:id/stop`).
    """


ErrorCode: TypeAlias = Literal[
    'invalid_request',
    'unauthorized',
    'forbidden',
    'not_found',
    'stale_continuation_token',
    'session_not_followable',
    'session_busy',
    'approval_resolved',
    'already_exists',
    'version_conflict',
    'rate_limited',
    'idempotency_key_reused',
    'method_not_allowed',
    'request_timeout',
    'payload_too_large',
    'unsupported_media_type',
    'internal',
    'overloaded',
]
"""
The `error` code of an [`ErrorBody`]; each goes with one HTTP status.

- `invalid_request`: `400`: the body or a parameter is invalid (the message names the field).
- `unauthorized`: `401`: missing or bad credentials.
- `forbidden`: `403`: not the caller's session, or a refused caller.
- `not_found`: `404`: no such session, tool, approval, artifact, agent or route.
- `stale_continuation_token`: `409`: the continuation token is not the current one.
- `session_not_followable`: `409`: a follow-up to a task session.
- `session_busy`: `409`: a session-bound tool call while a turn runs.
- `approval_resolved`: `409`: a second decision on one approval.
- `already_exists`: `409`: what the request would create exists already (an eval case of that name).
- `version_conflict`: `409`: a compare-and-set write found another version (storage `ifVersion`).
- `rate_limited`: `429`: too many requests or too much stored; the `Retry-After` header says when to
try again (when waiting helps).
- `idempotency_key_reused`: `422`: an idempotency key sent again with a different request (a retry must repeat the
first request exactly; a new request needs a new key).
- `method_not_allowed`: `405`: the route exists but not with this method.
- `request_timeout`: `408`: the request took too long to answer.
- `payload_too_large`: `413`: the body is over the limit.
- `unsupported_media_type`: `415`: a body that is not JSON (browser guard, docs/http-api.md).
- `internal`: `500`: anything else (never a stack trace).
- `overloaded`: `503`: the server runs and queues as many turns as it is set to take
(`[concurrency]`); the `Retry-After` header says when to try again. Nothing was written.
"""


class EvalCaseSaved(TypedDict):
    """
    The answer to [`SaveEvalCase`]: where the case was written and how `folio eval` names it.
    """

    caseId: str
    """
    The case's id (the name).
    """
    evalId: str
    """
    The eval's id (`from-session/<name>`), what `folio eval --filter` matches.
    """
    ok: Literal[True]
    """
    Always `true`.
    """
    path: str
    """
    The file written, relative to the project folder (`evals/from-session/<name>.eval.toml`).
    """


class EvalRunSummary(TypedDict):
    """
    One run in `GET /v1/evals`: its counts, without the cases.
    """

    durationMs: int
    """
    How long the whole run took, in milliseconds.
    """
    failed: int
    """
    Cases that failed.
    """
    ok: bool
    """
    Whether every case passed.
    """
    passed: int
    """
    Cases that passed.
    """
    rescoredFrom: NotRequired[str | None]
    """
    The run this one re-scored, if any.
    """
    runId: str
    """
    `evr_…`.
    """
    startedAt: str
    """
    When the run started.
    """
    variant: NotRequired[str | None]
    """
    The A/B variant its cases ran with, if one was chosen.
    """


class EvalRunSummaryPage(TypedDict):
    """
    A page of a list: `GET /v1/sessions` (newest first, with a cursor) and `GET /v1/artifacts`.
    """

    data: list[EvalRunSummary]
    """
    The items of this page.
    """
    nextCursor: NotRequired[str | None]
    """
    Pass as `cursor` for the next page; absent on the last page.
    """
    ok: Literal[True]
    """
    Always `true`.
    """


class EventAbAssigned(TypedDict):
    """
    The session was enrolled in an A/B experiment.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: AbAssigned
    type: Literal['ab.assigned']


class EventAgentBound(TypedDict):
    """
    Reserved: the session was bound to a remote agent runtime.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: AgentBound
    type: Literal['agent.bound']


class EventActionResult(TypedDict):
    """
    A tool call finished.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: ActionResult
    type: Literal['action.result']


class EventActionAuthorizationRequested(TypedDict):
    """
    A tool call waits for its session's principal to authorize an MCP server (OAuth).
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: ActionAuthorizationRequested
    type: Literal['action.authorization_requested']


class EventActionAuthorizationResolved(TypedDict):
    """
    A pending MCP authorization ended (authorized, refused or abandoned).
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: ActionAuthorizationResolved
    type: Literal['action.authorization_resolved']


class EventActionHostCall(TypedDict):
    """
    A process of a tool call, hook run or skill command called the host API.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: ActionHostCall
    type: Literal['action.host_call']


class EventArtifactTagged(TypedDict):
    """
    An artifact was tagged for this session.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: ArtifactTagged
    type: Literal['artifact.tagged']


class EventContextCompacted(TypedDict):
    """
    The conversation before `upToIndex` was summarized to fit the context window.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: ContextCompacted
    type: Literal['context.compacted']


FinishReason: TypeAlias = str
"""
stop, tool_calls, length, content_filter, or the provider's own reason verbatim
"""


class FollowUp(TypedDict):
    """
    `POST /v1/session/:id`: a follow-up message.
    """

    admission: NotRequired[Admission | None]
    """
    What to do when the session is busy (default `preempt`).
    """
    clientMessageId: NotRequired[str | None]
    """
    An idempotency key: a retry with the same key, the token it first presented and the
    same request gets the first answer (the same rotated token) instead of `409` or a second
    turn; the key with a different request is refused (`422 idempotency_key_reused`). The
    `Idempotency-Key` header sets it too.
    """
    continuationToken: str
    """
    The current continuation token.
    """
    message: str
    """
    The user message.
    """
    workspaceFiles: NotRequired[dict[str, str]]
    """
    Files written into the workspace before the turn.
    """


class FollowUpAccepted(TypedDict):
    """
    `200` answer of `POST /v1/session/:id`: the rotated token.
    """

    continuationToken: str
    """
    The new continuation token (the presented one is now stale).
    """
    ok: Literal[True]
    """
    Always `true`.
    """
    sessionId: str
    """
    `ses_…`.
    """


class ForkOrigin(TypedDict):
    """
    Where a forked session came from: `session.started`'s `forkedFrom`.
    """

    atIndex: int
    """
    The index of the original's `message.received` the fork replaced.
    """
    sessionId: str
    """
    The original session (`ses_…`).
    """


class ForkSession(TypedDict):
    """
    `POST /v1/session/:id/fork`: a new session whose log starts as a copy of this one's events
    before `atIndex`, then continues with `message` in place of the message at `atIndex`.
    """

    atIndex: int
    """
    The index of a `message.received` event of the original session: the fork keeps every
    event before it and sends `message` instead.
    """
    message: str
    """
    The (edited) user message the fork continues with.
    """
    title: NotRequired[str | None]
    """
    A title for lists (default: the original's title).
    """


class GetArtifact(TypedDict):
    """
    `POST /v1/host/artifacts/get`: one artifact by id, or by kind and key.
    """

    artifactId: NotRequired[str | None]
    """
    `art_…` (or give `key`, with `kind`).
    """
    key: NotRequired[str | None]
    """
    The upsert key.
    """
    kind: NotRequired[str | None]
    """
    The kind, with `key`.
    """


class HookInfo(TypedDict):
    """
    A hook as discovery found it.
    """

    command: list[str]
    """
    The program and its arguments.
    """
    events: list[str]
    """
    The event types it runs on.
    """
    name: str
    """
    The hook name.
    """


class HostArtifact(TypedDict):
    """
    An artifact with its text contents (`artifacts/get`, `artifacts/put`).
    """

    artifact: ArtifactRecord
    """
    The record.
    """
    contents: NotRequired[str | None]
    """
    Its contents as text (lossy UTF-8), when it has any.
    """
    ok: Literal[True]
    """
    Always `true`.
    """


class HostArtifacts(TypedDict):
    """
    The answer of `artifacts/list`.
    """

    artifacts: list[ArtifactRecord]
    """
    Most recently updated first.
    """
    ok: Literal[True]
    """
    Always `true`.
    """


class HostIdentity(TypedDict):
    """
    Who a host API call acts for (`GET /v1/host/whoami`).
    """

    agent: str
    """
    The agent.
    """
    callId: str
    """
    The tool call, hook run or skill command the token was issued for.
    """
    ok: Literal[True]
    """
    Always `true`.
    """
    principal: str
    """
    The session's principal.
    """
    sessionId: str
    """
    The session.
    """


class HostOutput(TypedDict):
    """
    The answer of a `files/<op>` call: what the file tool of that name answers the model.
    """

    ok: Literal[True]
    """
    Always `true`.
    """
    output: Any
    """
    The tool's output (text, or JSON for structured results).
    """


JudgeVerdict = TypedDict(
    'JudgeVerdict',
    {
        'model': str,
        'pass': bool,
        'reasoning': str,
        'score': float,
    },
)


class LimitUsage(TypedDict):
    """
    What the principal uses now.
    """

    messagesAvailable: NotRequired[int | None]
    """
    Messages it may send now before waiting (whole messages left in its bucket; `null`
    without a `messages_per_minute` limit).
    """
    runningTurns: int
    """
    Of them, those running a turn.
    """
    sessions: int
    """
    Sessions it holds (counted up to its limit plus one, when it has one).
    """
    storageBytes: int
    """
    Bytes its session workspaces on this server hold.
    """


class LimitValues(TypedDict):
    """
    Every limit, by its `[limits]` key (camelCase here).
    """

    messageBytes: int
    """
    Most bytes of one message's text.
    """
    messagesPerMinute: NotRequired[int | None]
    """
    Messages it may send per minute, a bucket of as many refilled evenly (`null`: no limit).
    """
    runningTurns: NotRequired[int | None]
    """
    Most of its turns running at once (`null`: no limit).
    """
    sendBytes: int
    """
    Most bytes of `workspaceFiles` one send may carry.
    """
    sendFiles: int
    """
    Most `workspaceFiles` one send may carry.
    """
    sessions: NotRequired[int | None]
    """
    Most sessions the principal may hold (`null`: no limit).
    """
    storageBytes: NotRequired[int | None]
    """
    Most bytes its session workspaces on this server may hold together (`null`: no limit).
    """
    toolCallsPerTurn: int
    """
    Most tool calls one turn may make.
    """
    workspaceBytes: int
    """
    Most bytes a session workspace may hold.
    """
    workspaceFiles: int
    """
    Most files a session workspace may hold.
    """


class LimitsResponse(TypedDict):
    """
    `GET /v1/limits`: the caller's limits (`[limits]` of `folio.toml` with its own quotas from
    the tokens file over them) and its usage.
    """

    limits: LimitValues
    """
    Its limits.
    """
    ok: Literal[True]
    """
    Always `true`.
    """
    principal: str
    """
    The caller.
    """
    usage: LimitUsage
    """
    What it uses now.
    """


class ListArtifacts(TypedDict):
    """
    `POST /v1/host/artifacts/list`.
    """

    kind: NotRequired[str | None]
    """
    Only this kind.
    """
    sessionOnly: NotRequired[bool]
    """
    Only the calling session's (default `false`: every artifact of the agent).
    """


LogLevel: TypeAlias = Literal['info', 'warn', 'error']
"""
How serious a server log line is.

- `info`: Something happened.
- `warn`: Something is worth a look.
- `error`: Something failed.
"""


class LogLine(TypedDict):
    """
    One server log line.
    """

    at: str
    """
    RFC 3339 UTC with milliseconds.
    """
    level: LogLevel
    """
    `info`, `warn` or `error`.
    """
    message: str
    """
    The line.
    """
    seq: int
    """
    Increases by one per line; pass the last one seen as `since`.
    """


class LogsResponse(TypedDict):
    """
    `GET /v1/logs?since`.
    """

    lines: list[LogLine]
    """
    Lines with `seq > since`, oldest first.
    """
    ok: Literal[True]
    """
    Always `true`.
    """


class MessageAppended(TypedDict):
    """
    `message.appended` data.
    """

    delta: str
    """
    Assistant text delta.
    """


class MessageCompleted(TypedDict):
    """
    `message.completed` data.
    """

    text: str
    """
    The step's full assistant text.
    """


class MessageQueued(TypedDict):
    """
    `message.queued` data: a message admitted with `coalesce` while a turn ran, recorded before
    it was acknowledged; the next `message.received {coalesced: n}` drains it (after a restart
    too).
    """

    clientMessageId: NotRequired[str | None]
    """
    The sender's idempotency key, when given.
    """
    requestDigest: NotRequired[str | None]
    """
    SHA-256 (hex) of the keyed request (see [`MessageReceived::request_digest`]).
    """
    text: str
    """
    The user message.
    """
    workspaceFiles: NotRequired[dict[str, str]]
    """
    Files its turn writes into the workspace first (relative path → contents).
    """


class MessageReceived(TypedDict):
    """
    `message.received` data: the user text, as the conversation rebuild needs it.
    """

    admission: NotRequired[Admission | None]
    """
    Admission policy used for this message.
    """
    clientMessageId: NotRequired[str | None]
    """
    The sender's idempotency key (`Idempotency-Key` header or `clientMessageId`), when given.
    """
    coalesced: NotRequired[int | None]
    """
    How many queued messages were coalesced into this one.
    """
    requestDigest: NotRequired[str | None]
    """
    SHA-256 (hex) of the keyed request, so a retry of the key with another request is
    refused (`idempotency_key_reused`); only with `clientMessageId`.
    """
    text: str
    """
    The user message (coalesced messages already joined).
    """


MetricKind: TypeAlias = Literal['counter', 'histogram']
"""
The kind of a metric point.

- `counter`: A monotonic sum: the value is added (must be ≥ 0).
- `histogram`: A distribution: the value is recorded.
"""


class NextFire(TypedDict):
    """
    A slot to come, in UTC and in the schedule's zone.
    """

    local: str
    """
    The same instant on the schedule's wall clock, RFC 3339 with its offset.
    """
    utc: str
    """
    The instant.
    """


class PutArtifact(TypedDict):
    """
    `POST /v1/host/artifacts/put`: tag (upsert by kind and key) an artifact of the session.
    """

    contentType: NotRequired[str | None]
    """
    The contents' MIME type (default `text/plain`).
    """
    contents: NotRequired[str | None]
    """
    Text contents.
    """
    data: NotRequired[Any]
    """
    Structured data (checked against the kind's schema).
    """
    key: str
    """
    The upsert key.
    """
    kind: NotRequired[str | None]
    """
    The kind (`artifacts.toml`; default `artifact` when none are configured).
    """
    title: str
    """
    A title.
    """


class ReasoningAppended(TypedDict):
    """
    `reasoning.appended` data.
    """

    delta: str
    """
    Reasoning text delta.
    """


class ReasoningCompleted(TypedDict):
    """
    `reasoning.completed` data, with the provider signature the conversation rebuild sends back.
    """

    signature: NotRequired[str | None]
    """
    Provider signature of the reasoning (Anthropic thinking blocks).
    """
    text: str
    """
    The step's full reasoning text.
    """


class RecordMetric(TypedDict):
    """
    `POST /v1/host/telemetry/metric`: one metric point.
    """

    attributes: NotRequired[dict[str, Any]]
    """
    Attributes of the point (string, number or boolean).
    """
    kind: MetricKind
    """
    `counter` or `histogram`.
    """
    name: str
    """
    Dotted lowercase, 1 to 255 characters (`app.documents.indexed`); the `agent_sdk.`,
    `gen_ai.` and `cursor.` prefixes are Folio's.
    """
    unit: NotRequired[str | None]
    """
    A UCUM unit (`s`, `ms`, `By`, `{document}`), at most 63 characters.
    """
    value: float
    """
    The value.
    """


class Reminder(TypedDict):
    """
    A pending reminder.
    """

    at: str
    """
    When it is due.
    """
    createdAt: str
    """
    When it was set.
    """
    message: str
    """
    What it delivers.
    """
    reminderId: str
    """
    `rem_…`.
    """
    sessionId: str
    """
    The chat session it wakes.
    """


class ReminderCancelled(TypedDict):
    """
    `reminder.cancelled` data: the reminder was cancelled before it fired.
    """

    reminderId: str
    """
    `rem_…`.
    """


class ReminderFired(TypedDict):
    """
    `reminder.fired` data: the reminder was delivered as a follow-up.
    """

    at: str
    """
    When it was due.
    """
    late: bool
    """
    Whether it was delivered late (it fell due while no server ran, or well after `at`).
    """
    reminderId: str
    """
    `rem_…`.
    """


class ReminderPage(TypedDict):
    """
    A page of a list: `GET /v1/sessions` (newest first, with a cursor) and `GET /v1/artifacts`.
    """

    data: list[Reminder]
    """
    The items of this page.
    """
    nextCursor: NotRequired[str | None]
    """
    Pass as `cursor` for the next page; absent on the last page.
    """
    ok: Literal[True]
    """
    Always `true`.
    """


class ReminderResponse(TypedDict):
    """
    The answer of `POST /v1/session/:id/reminders`.
    """

    ok: Literal[True]
    """
    Always `true`.
    """
    reminder: Reminder
    """
    The reminder as stored.
    """


class ReminderSet(TypedDict):
    """
    `reminder.set` data: a reminder was set on the session.
    """

    at: str
    """
    When it is due.
    """
    callId: NotRequired[str | None]
    """
    The `set_reminder` call that asked for it, when the agent set it.
    """
    message: str
    """
    What it delivers.
    """
    reminderId: str
    """
    `rem_…`.
    """


class RequestedCall(TypedDict):
    """
    One tool call of `actions.requested`.
    """

    callId: str
    """
    The provider's tool-call id.
    """
    input: Any
    """
    Input after validation and alias mapping.
    """
    subagent: NotRequired[str | None]
    """
    The subagent this call delegates to, for subagent calls.
    """
    tool: str
    """
    Tool name.
    """


class SaveEvalCase(TypedDict):
    """
    `POST /v1/session/:id/eval-case`: save the session as an eval case named `name` (the file
    `evals/from-session/<name>.eval.toml` and its one case's id).
    """

    name: str
    """
    Letters, digits, `-` and `_` (at most 64, starting with a letter or digit).
    """


class ScheduleInfo(TypedDict):
    """
    A schedule as discovery found it.
    """

    cron: str
    """
    Five-field cron, UTC.
    """
    name: str
    """
    The schedule name (its file name).
    """
    prompt: str
    """
    The first message of each task session it opens.
    """


class SessionCompleted(TypedDict):
    """
    `session.completed` data (empty).
    """


class SessionCreated(TypedDict):
    """
    `201` answer of `POST /v1/session`.
    """

    continuationToken: str
    """
    The token the next follow-up presents (`http:…`).
    """
    ok: Literal[True]
    """
    Always `true`.
    """
    playgroundUrl: str
    """
    The session in the playground.
    """
    sessionId: str
    """
    `ses_…`.
    """
    traceUrl: str
    """
    The session's event dump (`…/v1/session/:id/events`).
    """


class SessionFailed(TypedDict):
    """
    `session.failed` data.
    """

    message: str
    """
    Why the session failed.
    """


SessionMode: TypeAlias = Literal['chat', 'task']
"""
How a session runs: `chat` parks after each turn, `task` ends after its turn.

- `chat`: Parks in `session.waiting` after each turn and takes follow-ups.
- `task`: Ends in `session.completed` or `session.failed`.
"""


class SessionStarted(TypedDict):
    """
    `session.started` data.
    """

    channel: str
    """
    The channel that created the session (e.g. `http`, `cli`, `slack`).
    """
    forkedFrom: NotRequired[ForkOrigin | None]
    """
    The session and event this one was forked from (`POST /v1/session/:id/fork`); the
    events after this one up to the fork's first `message.received` are copies.
    """
    mode: SessionMode
    """
    `chat` or `task`.
    """
    principal: str
    """
    The principal that owns the session.
    """
    title: NotRequired[str | None]
    """
    Optional session title.
    """


SessionStatus: TypeAlias = Literal['running', 'waiting', 'completed', 'failed']
"""
Where a session is in its life.

- `running`: A turn is running.
- `waiting`: A chat session waiting for a follow-up.
- `completed`: A task session that finished.
- `failed`: A task session that failed.
"""


class SessionWaiting(TypedDict):
    """
    `session.waiting` data (empty).
    """


SetReminder = TypedDict(
    'SetReminder',
    {
        'at': NotRequired[str | None],
        'in': NotRequired[str | None],
        'message': str,
    },
)


Severity: TypeAlias = Literal['error', 'warning']
"""
How bad a discovery diagnostic is.

- `error`: Discovery fails; `validate` exits 1; `run`/`serve` refuse to start.
- `warning`: Worth fixing; the agent still runs.
"""


SkillForm: TypeAlias = Literal['flat', 'packaged', 'generated']
"""
How a skill is authored.

- `flat`: `skills/<name>.md`.
- `packaged`: `skills/<name>/SKILL.md` plus siblings.
- `generated`: `skills/<name>.toml` with a generating command.
"""


SkillFrontmatterInfo = TypedDict(
    'SkillFrontmatterInfo',
    {
        'allowed-tools': NotRequired[Any],
        'compatibility': NotRequired[str | None],
        'description': NotRequired[str | None],
        'license': NotRequired[str | None],
        'metadata': NotRequired[Any],
        'name': NotRequired[str | None],
    },
)


class SkillInfo(TypedDict):
    """
    A skill as discovery found it.
    """

    description: NotRequired[str | None]
    """
    The routing rule, when known before loading.
    """
    form: SkillForm
    """
    How it is authored.
    """
    frontmatter: SkillFrontmatterInfo
    """
    The frontmatter.
    """
    name: str
    """
    The name the model refers to it by.
    """
    path: str
    """
    Its file or folder, relative to the project directory.
    """


SlotOutcomeKind: TypeAlias = Literal['fired', 'skipped', 'abandoned', 'failed']
"""
The fate of a slot.

- `fired`: Its task session started.
- `skipped`: It did not fire, by policy (overlap, catch-up, or missed while no server ran).
- `abandoned`: It was claimed, then the process died before its session was recorded as started; it
is not run again.
- `failed`: Starting its task session failed.
"""


class SpanAttributes(TypedDict):
    """
    `POST /v1/host/telemetry/attributes`: attributes for the span of the calling tool call.
    """

    attributes: dict[str, Any]
    """
    Name → string, number or boolean. Names are dotted lowercase (`app.cache.hit`).
    """


class StepStarted(TypedDict):
    """
    `step.started` data.
    """

    step: int
    """
    1-based step number within the turn.
    """


class StorageEntry(TypedDict):
    """
    One stored value.
    """

    expiresAt: NotRequired[str | None]
    """
    When it expires (`null`: never).
    """
    key: str
    """
    Its key.
    """
    updatedAt: str
    """
    When it was last written.
    """
    value: Any
    """
    The JSON value.
    """
    version: int
    """
    1 when first written, raised by every write (compare-and-set on it).
    """


StorageScope: TypeAlias = Literal['session', 'agent', 'principal']
"""
Whose storage an entry is in.

- `session`: The calling session's own entries (removed with the session).
- `agent`: Shared by every session of the agent.
- `principal`: Shared by every session of the agent that the session's principal owns.
"""


class SubagentCalled(TypedDict):
    """
    `subagent.called` data.
    """

    callId: str
    """
    The tool call that delegated.
    """
    prompt: str
    """
    Prompt given to the subagent.
    """
    subagent: str
    """
    Subagent name.
    """


class SubagentCompleted(TypedDict):
    """
    `subagent.completed` data.
    """

    callId: str
    """
    The tool call that delegated.
    """
    isError: bool
    """
    Whether the subagent failed.
    """
    reply: str
    """
    The subagent's reply (or error message).
    """
    subagent: str
    """
    Subagent name.
    """


class SubagentInfo(TypedDict):
    """
    A subagent as discovery found it.
    """

    description: str
    """
    When to delegate to it.
    """
    id: str
    """
    Its id (the folder name).
    """
    model: NotRequired[str | None]
    """
    Its own model, when it has one.
    """


class ToolCallRecord(TypedDict):
    """
    One tool call of a [`RunResult`]: `actions.requested` paired with `action.result` by `callId`.
    """

    callId: str
    """
    The tool-call id.
    """
    durationMs: int
    """
    Call duration in milliseconds (0 when no result was recorded).
    """
    input: Any
    """
    The call's input.
    """
    isError: bool
    """
    Whether the result was an error.
    """
    output: Any
    """
    The result's output; for a failed call its error message; `null` when no result was recorded.
    """
    subagent: NotRequired[str | None]
    """
    The subagent the call delegated to, if any.
    """
    tool: str
    """
    Tool name.
    """


class ToolCallRequest(TypedDict):
    """
    `POST /v1/tools/:name` and `POST /v1/session/:id/tools/:name`: a direct tool call.
    """

    input: NotRequired[Any]
    """
    The tool's input (validated against its schema).
    """


class ToolCallResult(TypedDict):
    """
    The answer of a direct tool call.
    """

    isError: bool
    """
    Whether the tool failed.
    """
    ok: Literal[True]
    """
    Always `true` (a tool that failed still answers `200`, with `isError`).
    """
    result: Any
    """
    The tool's output, or its error text.
    """


class ToolDescription(TypedDict):
    """
    A tool of the live registry (built-in, authored and MCP tools).
    """

    description: str
    """
    What the model is told about it.
    """
    inputSchema: Any
    """
    JSON Schema of the input.
    """
    name: str
    """
    Tool name.
    """
    needsApproval: bool
    """
    Whether each call waits for a person's approval.
    """


class TransportInfoStdio(TypedDict):
    """
    A child process speaking MCP on stdin/stdout.
    """

    args: list[str]
    """
    Its arguments.
    """
    command: str
    """
    The program.
    """
    env: dict[str, str]
    """
    Extra environment variables.
    """
    type: Literal['stdio']


class TransportInfoHttp(TypedDict):
    """
    A streamable HTTP endpoint.
    """

    headers: dict[str, str]
    """
    Headers sent with every request.
    """
    type: Literal['http']
    url: str
    """
    The endpoint URL.
    """


class TransportInfoPeer(TypedDict):
    """
    A peer agent: mounted in the same `folio serve`, or on another server at `url`.
    """

    agent: str
    """
    The peer agent's slug.
    """
    type: Literal['peer']
    url: NotRequired[str | None]
    """
    The peer's `/v1/mcp` on another server (`None`: mounted in the same server).
    """


TransportInfo: TypeAlias = TransportInfoStdio | TransportInfoHttp | TransportInfoPeer
"""
How an MCP connection is reached (templates kept as written).
"""


class TurnFailed(TypedDict):
    """
    `turn.failed` data.
    """

    message: str
    """
    Why the turn failed; exactly `turn interrupted` for stop/preempt.
    """


class TurnQueued(TypedDict):
    """
    `turn.queued` data.
    """

    position: int
    """
    1-based position in the agent's turn queue.
    """


class TurnStarted(TypedDict):
    """
    `turn.started` data.
    """

    model: str
    """
    The model spec used for this turn (e.g. `openai:gpt-4.1-mini`).
    """


class Usage(TypedDict):
    """
    Token counts read from a provider: uncached input, output, cache reads and cache writes, and
    their price.

    `input_tokens` counts only input that was neither read from nor written to the prompt cache,
    so the whole prompt is `input_tokens + cache_read_tokens + cache_write_tokens`.

    `cost_usd` is `null` when the model has no price (never a made-up `0`). A sum keeps a cost
    only while every part with tokens has one: a priced step plus an unpriced one costs `null`.
    """

    cacheReadTokens: NotRequired[int]
    """
    Input tokens read from the prompt cache.
    """
    cacheWriteTokens: NotRequired[int]
    """
    Input tokens written to the prompt cache.
    """
    costUsd: NotRequired[float | None]
    """
    What these tokens cost in US dollars at the model's price; `null` when it has none.
    """
    inputTokens: NotRequired[int]
    """
    Input tokens not served from or written to the cache.
    """
    outputTokens: NotRequired[int]
    """
    Output tokens (including reasoning tokens).
    """


VariantStatus: TypeAlias = Literal['enabled', 'disabled', 'removed']
"""
Whether new sessions may be assigned to a variant.

- `enabled`: New sessions are assigned to it by weight (or pin).
- `disabled`: `enabled = false`: its sessions keep it, no new session gets it.
- `removed`: No longer defined: only past sessions name it.
"""


Visibility: TypeAlias = Literal['model', 'host']
"""
Who sees a connection's tools.

- `model`: The model calls its tools.
- `host`: Only the host (tools and hooks) calls them.
"""


class WriteLog(TypedDict):
    """
    `POST /v1/host/telemetry/log`: a log line about the session.
    """

    level: NotRequired[LogLevel]
    """
    `info` (default), `warn` or `error`.
    """
    message: str
    """
    The line (at most 8 KiB).
    """


class ActionApprovalRequested(TypedDict):
    """
    `action.approval_requested` data.
    """

    callId: str
    """
    The call waiting for approval.
    """
    elicitation: NotRequired[Elicitation | None]
    """
    Set when an MCP server asks the user for input during the call (`elicitation/create`):
    `callId` then names the elicitation, answered with `accept` (and `content`), `decline`
    or `cancel` instead of `approve` / `deny`.
    """
    expiresAt: NotRequired[str | None]
    """
    When the call's approval times out (the tool's `approval_timeout`, or the agent's
    `[approvals] timeout`): a call still parked then is denied with
    `action.approval_resolved {decision: "deny", reason: "approval timed out", by: "folio"}`.
    Stored in the log, so a server that restarts keeps the same deadline. Absent: the call
    waits until someone decides.
    """
    input: Any
    """
    The call's input.
    """
    tool: str
    """
    Tool name.
    """


class ActionApprovalResolved(TypedDict):
    """
    `action.approval_resolved` data.
    """

    by: str
    """
    The principal that decided.
    """
    callId: str
    """
    The call that was decided.
    """
    content: NotRequired[Any]
    """
    An accepted elicitation's answer, defaults applied and checked against its schema.
    """
    decision: ApprovalDecision
    """
    `approve` or `deny` (a call); `accept`, `decline` or `cancel` (an elicitation).
    """
    reason: NotRequired[str | None]
    """
    Optional reason given with the decision.
    """


class ActionsRequested(TypedDict):
    """
    `actions.requested` data.
    """

    calls: list[RequestedCall]
    """
    The tool calls of one step, in the model's order.
    """


class ChannelDelivery(TypedDict):
    """
    `channel.delivery`: a channel delivery reached the session, or the answer to one went back
    to its provider (or could not).
    """

    channel: str
    """
    The channel's id.
    """
    deliveryId: NotRequired[str | None]
    """
    The delivery's id (`received`).
    """
    message: NotRequired[str | None]
    """
    Why the answer was not delivered (`reply_failed`).
    """
    outcome: ChannelDeliveryOutcome
    """
    What happened.
    """
    route: NotRequired[str | None]
    """
    The route, event or Slack event type of the delivery (`received`).
    """


class ConnectionDescription(TypedDict):
    """
    A connection of [`AgentDescription`], with who sees it.
    """

    description: NotRequired[str | None]
    """
    What the server offers.
    """
    envVars: list[str]
    """
    Every `${NAME}` the manifest references.
    """
    error: NotRequired[str | None]
    """
    Set while the connection is failed: why its server could not start (`MCP server "…"
    could not start: …`, what a call of its tools answers); `folio serve` retries it in the
    background and its tools appear once it starts. Absent when it runs or is not started.
    """
    name: str
    """
    The connection name.
    """
    transport: TransportInfo
    """
    How to reach it.
    """
    visibleTo: Visibility
    """
    `model` or `host`.
    """


class CreateSession(TypedDict):
    """
    `POST /v1/session`: a new session and its first message.
    """

    clientMessageId: NotRequired[str | None]
    """
    An idempotency key: a retry with the same key and the same request gets the first
    answer (the same session and token) instead of a second session, also while the first
    is still being answered; the key with a different request is refused (`422
    idempotency_key_reused`). The `Idempotency-Key` header sets it too.
    """
    continuationKey: NotRequired[str | None]
    """
    What the conversation is about, in the caller's terms (a ticket, a thread, a tenant's
    case: `acme:ticket-7`): 1 to 256 characters, no control characters. The session keeps
    it; its authored tools see it as `continuationKey` and a live root factory as
    `RootContext.continuation_key`, next to the principal that set it. It does not route
    messages (follow-ups use the continuation token), and two sessions may share one.
    """
    message: str
    """
    The first user message.
    """
    mode: NotRequired[SessionMode | None]
    """
    `chat` (the default) or `task`.
    """
    title: NotRequired[str | None]
    """
    A title for lists.
    """
    workspaceFiles: NotRequired[dict[str, str]]
    """
    Files written into the workspace before the turn (relative path → contents).
    """


class DiagnosticInfo(TypedDict):
    """
    One finding of discovery, about one file.
    """

    file: str
    """
    The file, relative to the project directory (`agent/agent.toml`).
    """
    line: NotRequired[int | None]
    """
    1-based line, where known.
    """
    message: str
    """
    What is wrong and what to do, in one line.
    """
    severity: Severity
    """
    Error or warning.
    """


class ErrorBody(TypedDict):
    """
    Every error answer: `{"ok": false, "error": "<code>", "message": "<one line for a person>"}`.
    """

    error: ErrorCode
    """
    The machine-readable code.
    """
    message: str
    """
    What failed and what to do, in one line.
    """
    ok: Literal[False]
    """
    Always `false`.
    """


class EventSessionStarted(TypedDict):
    """
    The session was created.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: SessionStarted
    type: Literal['session.started']


class EventSessionWaiting(TypedDict):
    """
    A chat session finished its turn and waits for a follow-up.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: SessionWaiting
    type: Literal['session.waiting']


class EventSessionCompleted(TypedDict):
    """
    A task session finished successfully.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: SessionCompleted
    type: Literal['session.completed']


class EventSessionFailed(TypedDict):
    """
    A task session failed.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: SessionFailed
    type: Literal['session.failed']


class EventMessageReceived(TypedDict):
    """
    A user message reached the session.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: MessageReceived
    type: Literal['message.received']


class EventMessageQueued(TypedDict):
    """
    A message for a busy session was queued (coalesce admission); a later
    `message.received {coalesced: n}` drains it.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: MessageQueued
    type: Literal['message.queued']


class EventTurnQueued(TypedDict):
    """
    A turn waits for a free slot under the agent's concurrency cap.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: TurnQueued
    type: Literal['turn.queued']


class EventTurnStarted(TypedDict):
    """
    A turn started.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: TurnStarted
    type: Literal['turn.started']


class EventTurnFailed(TypedDict):
    """
    A turn failed or was interrupted.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: TurnFailed
    type: Literal['turn.failed']


class EventStepStarted(TypedDict):
    """
    A model call (step) started.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: StepStarted
    type: Literal['step.started']


class EventReasoningAppended(TypedDict):
    """
    A reasoning delta streamed from the model.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: ReasoningAppended
    type: Literal['reasoning.appended']


class EventReasoningCompleted(TypedDict):
    """
    The step's reasoning is final.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: ReasoningCompleted
    type: Literal['reasoning.completed']


class EventMessageAppended(TypedDict):
    """
    An assistant text delta streamed from the model.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: MessageAppended
    type: Literal['message.appended']


class EventMessageCompleted(TypedDict):
    """
    The step's assistant text is final.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: MessageCompleted
    type: Literal['message.completed']


class EventActionsRequested(TypedDict):
    """
    The model asked for tool calls.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: ActionsRequested
    type: Literal['actions.requested']


class EventActionApprovalRequested(TypedDict):
    """
    A tool call waits for approval.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: ActionApprovalRequested
    type: Literal['action.approval_requested']


class EventActionApprovalResolved(TypedDict):
    """
    A pending approval was decided.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: ActionApprovalResolved
    type: Literal['action.approval_resolved']


class EventSubagentCalled(TypedDict):
    """
    A subagent was called.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: SubagentCalled
    type: Literal['subagent.called']


class EventSubagentCompleted(TypedDict):
    """
    A subagent finished.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: SubagentCompleted
    type: Literal['subagent.completed']


class EventReminderSet(TypedDict):
    """
    A reminder was set on the session.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: ReminderSet
    type: Literal['reminder.set']


class EventReminderFired(TypedDict):
    """
    A reminder was delivered as a follow-up.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: ReminderFired
    type: Literal['reminder.fired']


class EventReminderCancelled(TypedDict):
    """
    A reminder was cancelled before it fired.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: ReminderCancelled
    type: Literal['reminder.cancelled']


class EventChannelDelivery(TypedDict):
    """
    A channel delivery reached the session, or its answer went back (or could not).
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: ChannelDelivery
    type: Literal['channel.delivery']


class HostConnectionTools(TypedDict):
    """
    One host connection and its tools (`connections/list`).
    """

    connection: str
    """
    The connection (`agent/host-connections/<name>.toml`).
    """
    error: NotRequired[str | None]
    """
    Why it could not be reached.
    """
    tools: list[ToolDescription]
    """
    Its tools (empty when it could not be reached).
    """


class HostConnections(TypedDict):
    """
    The answer of `connections/list`.
    """

    connections: list[HostConnectionTools]
    """
    Every host connection of the agent.
    """
    ok: Literal[True]
    """
    Always `true`.
    """


class HostReminders(TypedDict):
    """
    The answer of `reminders/list`.
    """

    ok: Literal[True]
    """
    Always `true`.
    """
    reminders: list[Reminder]
    """
    The session's pending reminders, earliest first.
    """


class KvDelete(TypedDict):
    """
    `POST /v1/host/kv/delete` and the `storage_delete` tool: remove one entry.
    """

    ifVersion: NotRequired[int | None]
    """
    Delete only when the entry's version is this one.
    """
    key: str
    """
    The key.
    """
    scope: NotRequired[StorageScope]
    """
    `session` (default), `agent` or `principal`.
    """


class KvEntryResponse(TypedDict):
    """
    The answer of `kv/get`, `kv/put` and `kv/delete`: the entry (as read, as written, or as
    removed; `null` when there is none).
    """

    entry: NotRequired[StorageEntry | None]
    """
    The entry.
    """
    ok: Literal[True]
    """
    Always `true`.
    """


class KvGet(TypedDict):
    """
    `POST /v1/host/kv/get` and the `storage_get` tool: one entry.
    """

    key: str
    """
    The key (1 to 512 bytes).
    """
    scope: NotRequired[StorageScope]
    """
    `session` (default), `agent` or `principal`.
    """


class KvList(TypedDict):
    """
    `POST /v1/host/kv/list` and the `storage_list` tool: a page of entries in key order.
    """

    after: NotRequired[str | None]
    """
    Only keys after this one (the previous page's `next`).
    """
    limit: NotRequired[int | None]
    """
    At most this many (default and cap 1000).
    """
    prefix: NotRequired[str | None]
    """
    Only keys that start with this.
    """
    scope: NotRequired[StorageScope]
    """
    `session` (default), `agent` or `principal`.
    """


class KvListResponse(TypedDict):
    """
    The answer of `kv/list`.
    """

    entries: list[StorageEntry]
    """
    The entries, in key order.
    """
    next: NotRequired[str | None]
    """
    Pass as `after` for the next page (`null`: this was the last).
    """
    ok: Literal[True]
    """
    Always `true`.
    """


class KvPut(TypedDict):
    """
    `POST /v1/host/kv/put` and the `storage_put` tool: write one entry.
    """

    ifVersion: NotRequired[int | None]
    """
    Write only when the entry's version is this one (compare-and-set); `0` means only when
    the key has no entry.
    """
    key: str
    """
    The key (1 to 512 bytes).
    """
    scope: NotRequired[StorageScope]
    """
    `session` (default), `agent` or `principal`.
    """
    ttlSeconds: NotRequired[int | None]
    """
    Seconds until the entry expires (none: it stays).
    """
    value: Any
    """
    Any JSON value, at most 256 KiB as JSON text.
    """


class SessionSummary(TypedDict):
    """
    A session as lists and `GET /v1/session/:id` show it.
    """

    continuationKey: NotRequired[str | None]
    """
    The session's continuation key (set by its channel, or by `continuationKey` at create),
    when it has one.
    """
    createdAt: str
    """
    Creation time (RFC 3339 UTC with milliseconds).
    """
    lastIndex: int
    """
    Index of the last stored event.
    """
    mode: SessionMode
    """
    `chat` or `task`.
    """
    sessionId: str
    """
    `ses_…`.
    """
    status: SessionStatus
    """
    `running`, `waiting`, `completed` or `failed`.
    """
    title: str
    """
    The title (empty when none).
    """
    turns: int
    """
    Turns started.
    """
    updatedAt: str
    """
    Last change (RFC 3339 UTC with milliseconds).
    """
    usage: NotRequired[Usage]
    """
    Tokens used so far: the `usage` of its `turn.completed` events, summed (zero when no
    turn reported any).
    """
    variant: NotRequired[str | None]
    """
    The A/B variant the session runs with (`ab.assigned`), when it was assigned one.
    """


class SessionSummaryPage(TypedDict):
    """
    A page of a list: `GET /v1/sessions` (newest first, with a cursor) and `GET /v1/artifacts`.
    """

    data: list[SessionSummary]
    """
    The items of this page.
    """
    nextCursor: NotRequired[str | None]
    """
    Pass as `cursor` for the next page; absent on the last page.
    """
    ok: Literal[True]
    """
    Always `true`.
    """


class SlotOutcome(TypedDict):
    """
    What became of one slot.
    """

    outcome: SlotOutcomeKind
    """
    What happened.
    """
    reason: NotRequired[str | None]
    """
    Why it was skipped, abandoned or failed.
    """
    sessionId: NotRequired[str | None]
    """
    The task session it opened, when it fired.
    """
    slot: str
    """
    The slot (a cron instant, or the time of a manual run).
    """


class StepCompleted(TypedDict):
    """
    `step.completed` data.
    """

    durationMs: int
    """
    Wall time of the model call in milliseconds.
    """
    finishReason: FinishReason
    """
    Why the model stopped.
    """
    step: int
    """
    1-based step number within the turn.
    """
    usage: NotRequired[Usage | None]
    """
    The tokens this model call used, as its provider reported them (absent when it reported
    none); the turn's `turn.completed` usage sums them (with any compaction calls).
    """


class StepObservation(TypedDict):
    """
    What one step's turn did, as assertions see it.
    """

    approvalsRequested: NotRequired[list[str]]
    """
    The tools whose calls asked for approval, in order.
    """
    durationMs: int
    """
    Turn duration in milliseconds.
    """
    error: NotRequired[str | None]
    """
    The failure message of a failed turn.
    """
    files: NotRequired[dict[str, str | None]]
    """
    The files the step's assertions read after the turn: path → contents (`null`: absent).
    """
    message: str
    """
    The message the step sent.
    """
    modelSteps: int
    """
    Model calls the turn made.
    """
    reply: str
    """
    The turn's reply (for a failed turn, its last assistant text).
    """
    result: NotRequired[Any]
    """
    The reply read as JSON, for a step with a `result_schema` whose reply is JSON.
    """
    succeeded: bool
    """
    Whether the turn completed.
    """
    toolCalls: list[ToolCallRecord]
    """
    Every tool call of the turn, in request order, with its result.
    """
    usage: NotRequired[Usage | None]
    """
    The turn's usage; `null` when the provider reported none.
    """
    verdicts: NotRequired[dict[str, JudgeVerdict]]
    """
    The judges' verdicts, by rubric.
    """


class StepResult(TypedDict):
    """
    One step of an [`Attempt`]: what was observed and every assertion's verdict.
    """

    assertions: list[AssertionResult]
    """
    Every assertion of the step, in the order written.
    """
    observed: StepObservation
    """
    What the step's turn did (what `--rescore` evaluates again).
    """


class TurnCompleted(TypedDict):
    """
    `turn.completed` data.
    """

    compactionUsage: NotRequired[Usage | None]
    """
    The part of `usage` spent compacting the conversation (absent when the turn did not
    compact).
    """
    durationMs: int
    """
    Wall time of the turn in milliseconds.
    """
    reply: str
    """
    The final assistant reply.
    """
    steps: int
    """
    Number of model calls in the turn.
    """
    usage: NotRequired[Usage | None]
    """
    Token usage summed over the steps whose provider reported it, compaction calls
    included; `null` when none did.
    """


class VariantStats(TypedDict):
    """
    One variant's counts, over every session assigned to it.
    """

    approvalsDenied: int
    """
    Tool calls a person (or a timeout) denied (`action.approval.resolved` with `deny`).
    """
    failures: int
    """
    Turns that failed (`turn.failed`, not counting turns interrupted by a stop).
    """
    latencyP50Ms: NotRequired[int | None]
    """
    The median duration of its completed turns in milliseconds (`null`: none completed).
    """
    latencyP95Ms: NotRequired[int | None]
    """
    The 95th percentile duration of its completed turns in milliseconds (`null`: none
    completed).
    """
    name: str
    """
    The variant's name.
    """
    sessions: int
    """
    Sessions assigned to it.
    """
    status: VariantStatus
    """
    Whether new sessions may get it.
    """
    turns: int
    """
    Turns its sessions started.
    """
    usage: Usage
    """
    Tokens its sessions used, with their cost (`costUsd`: `null` when a model has no price).
    """
    weight: int
    """
    Its weight (0 when removed).
    """


class VariantsResponse(TypedDict):
    """
    `GET /v1/variants`: the agent's experiment and each variant's sessions, turns, failures,
    tokens, cost, latency and denied approvals.
    """

    experiment: str
    """
    The experiment's name (`ab.assigned {experiment}`).
    """
    ok: Literal[True]
    """
    Always `true`.
    """
    variants: list[VariantStats]
    """
    The variants `agent.toml` defines, by name, then those only past sessions name.
    """


class AgentDescription(TypedDict):
    """
    `GET /v1/agent`: what discovery found, with the live tool registry.
    """

    agent: AgentHeader
    """
    The agent.
    """
    artifacts: NotRequired[ArtifactsInfo | None]
    """
    Artifact settings, when the agent keeps artifacts.
    """
    channels: list[ChannelInfo]
    """
    Channels.
    """
    connections: list[ConnectionDescription]
    """
    MCP connections (model and host).
    """
    diagnostics: list[DiagnosticInfo]
    """
    Discovery's diagnostics.
    """
    hooks: list[HookInfo]
    """
    Hooks.
    """
    ok: Literal[True]
    """
    Always `true`.
    """
    schedules: list[ScheduleInfo]
    """
    Schedules.
    """
    skills: list[SkillInfo]
    """
    Skills.
    """
    subagents: list[SubagentInfo]
    """
    Subagents.
    """
    tools: list[ToolDescription]
    """
    Every tool the model is offered (with its schema).
    """


class Attempt(TypedDict):
    """
    One run of a case: a fresh session, its steps and their assertions.
    """

    durationMs: int
    """
    Wall time of the attempt in milliseconds.
    """
    error: NotRequired[str | None]
    """
    Why the attempt could not run to its end (timeout, a replay drift, a refused send).
    """
    iteration: int
    """
    1-based iteration.
    """
    model: str
    """
    The model the attempt ran with (`provider:model` or `replay:<fixture>`).
    """
    ok: bool
    """
    Whether the attempt ran and every assertion passed.
    """
    score: float
    """
    The mean score of its assertions (0 to 1).
    """
    sessionId: NotRequired[str | None]
    """
    The case's session (`ses_…`), when one was created.
    """
    steps: list[StepResult]
    """
    Every step that ran.
    """
    usage: NotRequired[Usage | None]
    """
    Usage over its turns; `null` when the provider reported none.
    """


class CaseResult(TypedDict):
    """
    One case of an [`EvalRun`]: its attempts (one per iteration) and their verdict.
    """

    attempts: list[Attempt]
    """
    One attempt per iteration.
    """
    caseId: str
    """
    The case's id within its eval.
    """
    evalId: str
    """
    The eval's id: its path under `evals/` without `.eval.toml`.
    """
    ok: bool
    """
    Whether every attempt passed (`pass^k` over the iterations).
    """
    passRate: float
    """
    The share of attempts that passed (0 to 1).
    """
    score: float
    """
    The mean assertion score over the attempts (0 to 1).
    """
    tags: NotRequired[list[str]]
    """
    The eval's tags.
    """


class EvalRun(TypedDict):
    """
    One `folio eval` run: every case it ran, each with its assertions' verdicts.
    """

    cases: list[CaseResult]
    """
    Every case, in eval and case order.
    """
    durationMs: int
    """
    How long the whole run took, in milliseconds.
    """
    ok: bool
    """
    Whether every case passed.
    """
    rescoredFrom: NotRequired[str | None]
    """
    The run this one re-scored (`folio eval --rescore`), without calling a model.
    """
    runId: str
    """
    `evr_…`.
    """
    startedAt: str
    """
    When the run started.
    """
    variant: NotRequired[str | None]
    """
    The A/B variant every case ran with (`folio eval --variants`); absent: the agent as
    written.
    """


class EvalRunResponse(TypedDict):
    """
    `GET /v1/evals/:runId`: one stored run.
    """

    ok: Literal[True]
    """
    Always `true`.
    """
    run: EvalRun
    """
    The run.
    """


class EventTurnCompleted(TypedDict):
    """
    A turn finished with a reply.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: TurnCompleted
    type: Literal['turn.completed']


class EventStepCompleted(TypedDict):
    """
    A model call (step) finished.
    """

    at: str
    """
    When the event was appended: RFC 3339 UTC with milliseconds.
    """
    index: int
    """
    Position in the session's log: 0, 1, 2, … without gaps.
    """
    sessionId: str
    """
    The session this event belongs to (`ses_…`).
    """
    turnId: NotRequired[str | None]
    """
    The turn this event belongs to (`turn_…`), for turn-scoped events.
    """
    data: StepCompleted
    type: Literal['step.completed']


Event: TypeAlias = (
    EventSessionStarted
    | EventAbAssigned
    | EventSessionWaiting
    | EventSessionCompleted
    | EventSessionFailed
    | EventAgentBound
    | EventMessageReceived
    | EventMessageQueued
    | EventTurnQueued
    | EventTurnStarted
    | EventTurnCompleted
    | EventTurnFailed
    | EventStepStarted
    | EventStepCompleted
    | EventReasoningAppended
    | EventReasoningCompleted
    | EventMessageAppended
    | EventMessageCompleted
    | EventActionsRequested
    | EventActionResult
    | EventActionApprovalRequested
    | EventActionApprovalResolved
    | EventActionAuthorizationRequested
    | EventActionAuthorizationResolved
    | EventActionHostCall
    | EventSubagentCalled
    | EventSubagentCompleted
    | EventArtifactTagged
    | EventContextCompacted
    | EventReminderSet
    | EventReminderFired
    | EventReminderCancelled
    | EventChannelDelivery
)
"""
The wire shape of [`Event`]: what it deserializes from, and its JSON Schema.
"""


class ScheduleStatus(TypedDict):
    """
    One schedule: its policies, its next slots and what its last slot did.
    """

    catchUp: str
    """
    `latest`, `none` or `all`.
    """
    cron: str
    """
    The cron expression as written.
    """
    enabled: bool
    """
    Whether the schedule fires.
    """
    jitterSecs: int
    """
    Each slot fires up to this many seconds late.
    """
    last: NotRequired[SlotOutcome | None]
    """
    The last slot decided, if any.
    """
    name: str
    """
    The schedule name (its file name); its runs have principal `schedule:<name>`.
    """
    next: list[NextFire]
    """
    The next five slots (none when disabled).
    """
    overlap: str
    """
    `skip`, `buffer_one` or `allow`.
    """
    timezone: str
    """
    The IANA time zone the cron fields are read in.
    """


class SchedulesResponse(TypedDict):
    """
    `GET /v1/schedules`: every schedule of the agent, with its next slots and last outcome.
    """

    ok: Literal[True]
    """
    Always `true`.
    """
    schedules: list[ScheduleStatus]
    """
    The schedules, by name.
    """


class SessionResponse(TypedDict):
    """
    `GET /v1/session/:id`.
    """

    ok: Literal[True]
    """
    Always `true`.
    """
    session: SessionSummary
    """
    The session.
    """
