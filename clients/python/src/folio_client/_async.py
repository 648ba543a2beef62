"""The client classes: `AsyncFolio`, `AsyncSession` and their helpers.

Both clients come from one source, `_async.py`: `scripts/generate.py` writes `_sync.py` from it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import aclosing
from time import monotonic
from types import TracebackType
from typing import Any, cast
from urllib.parse import quote

import httpx

from ._core import (
    BUSY_TYPES,
    FINAL_TYPES,
    IDLE_TYPES,
    RETRYABLE_STATUS,
    STREAM_TIMEOUT,
    RetryPolicy,
    TurnResult,
    drop_none,
    gap_error,
    json_of,
    new_idempotency_key,
    parse_event,
    parse_events,
)
from ._errors import FolioError, connection_error, error_from_response
from ._models import (
    Admission,
    AgentDescription,
    ArtifactRecord,
    ArtifactRecordPage,
    EvalCaseSaved,
    EvalRun,
    EvalRunSummaryPage,
    Event,
    FollowUpAccepted,
    LogsResponse,
    Reminder,
    SchedulesResponse,
    SessionCreated,
    SessionMode,
    SessionSummary,
    SessionSummaryPage,
    ToolCallResult,
)


def _seg(value: str) -> str:
    """One path segment, percent-encoded."""
    return quote(value, safe="")


class AsyncFolio:
    """The asynchronous client of one Folio agent.

    ``base_url`` is the agent's base URL as ``folio serve`` prints it
    (``http://127.0.0.1:4000/<slug>``, or the root with ``--mode single``); ``token`` is the
    bearer token (omit it for a local-mode server on loopback). Close it with ``aclose()`` or
    use it as a context manager.
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
        )
        self.retry = retry or RetryPolicy()
        """How network errors are retried."""
        self.sessions = AsyncSessions(self)
        """Create, resume, get and list sessions."""
        self.artifacts = AsyncArtifacts(self)
        """The agent's artifact records and contents."""
        self.evals = AsyncEvals(self)
        """Stored eval runs (``folio eval`` writes them)."""

    async def agent(self) -> AgentDescription:
        """What discovery found: the agent, its tools, skills, connections, channels, ..."""
        return cast(AgentDescription, await self._call("GET", "/v1/agent"))

    async def call_tool(self, name: str, input: Any = None) -> ToolCallResult:
        """Calls an authored tool directly, without a model or a session."""
        return cast(
            ToolCallResult,
            await self._call("POST", f"/v1/tools/{_seg(name)}", json={"input": input}),
        )

    async def schedules(self) -> SchedulesResponse:
        """The agent's schedules, their next slots and last outcomes."""
        return cast(SchedulesResponse, await self._call("GET", "/v1/schedules"))

    async def logs(self, since: int | None = None) -> LogsResponse:
        """Recent server log lines about the caller's sessions (``since``: only lines with a
        greater ``seq``)."""
        params = drop_none(since=since)
        return cast(LogsResponse, await self._call("GET", "/v1/logs", params=params))

    async def aclose(self) -> None:
        """Closes the client's connections."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncFolio:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        key: str | None = None,
    ) -> Any:
        """Sends one request and returns its JSON body, or raises its `FolioError`.

        Reads (``GET``) and requests with an idempotency ``key`` are retried after network
        errors and retryable statuses, with the same key: the server answers a retry of a
        request it already took with the first answer, so nothing happens twice. Any other
        request is sent once.
        """
        retryable = method == "GET" or key is not None
        headers = {"Idempotency-Key": key} if key else None
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await self._http.request(
                    method, path, json=json, params=params, headers=headers
                )
            except httpx.TransportError as err:
                if not retryable:
                    # Not safe to repeat: the server may or may not have acted on it.
                    raise connection_error(
                        f"{method} {path} (not retried: it may have been applied; check "
                        "the session before sending it again)", err, attempt
                    ) from err
                if attempt >= self.retry.attempts:
                    raise connection_error(f"{method} {path}", err, attempt) from err
            else:
                if not (retryable and response.status_code in RETRYABLE_STATUS) or (
                    attempt >= self.retry.attempts
                ):
                    return json_of(response)
            await asyncio.sleep(self.retry.delay(attempt))

    async def _get_bytes(self, path: str) -> bytes:
        """A ``GET`` answered with raw bytes (retried like any read)."""
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await self._http.get(path)
            except httpx.TransportError as err:
                if attempt >= self.retry.attempts:
                    raise connection_error(f"GET {path}", err, attempt) from err
            else:
                if response.status_code not in RETRYABLE_STATUS or attempt >= self.retry.attempts:
                    if not response.is_success:
                        raise error_from_response(response)
                    return response.content
            await asyncio.sleep(self.retry.delay(attempt))


class AsyncSessions:
    """The sessions of the agent: ``folio.sessions``."""

    def __init__(self, folio: AsyncFolio) -> None:
        self._folio = folio

    async def create(
        self,
        message: str,
        *,
        mode: SessionMode | None = None,
        title: str | None = None,
        workspace_files: dict[str, str] | None = None,
        continuation_key: str | None = None,
        idempotency_key: str | None = None,
    ) -> AsyncSession:
        """Starts a session with its first message; returns once the message is durable.

        ``mode`` is ``"chat"`` (the default: the session waits for follow-ups) or ``"task"``.
        The request carries an idempotency key (``idempotency_key``, or a fresh one), reused
        by every retry after a network error, so a lost answer never makes two sessions.
        """
        body = drop_none(
            message=message,
            mode=mode,
            title=title,
            workspaceFiles=workspace_files,
            continuationKey=continuation_key,
        )
        created = cast(
            SessionCreated,
            await self._folio._call(
                "POST", "/v1/session", json=body, key=idempotency_key or new_idempotency_key()
            ),
        )
        return AsyncSession(self._folio, created["sessionId"], created["continuationToken"])

    def resume(self, session_id: str, continuation_token: str | None = None) -> AsyncSession:
        """A handle on an existing session from stored state (no request is sent).

        Without ``continuation_token`` the handle can stream, inspect, stop and decide
        approvals; to send, pass the latest token or call ``renew_token()`` first.
        """
        return AsyncSession(self._folio, session_id, continuation_token)

    async def get(self, session_id: str) -> SessionSummary:
        """One session's summary (status, turns, last index, ...)."""
        answer = await self._folio._call("GET", f"/v1/session/{_seg(session_id)}")
        return cast(SessionSummary, answer["session"])

    async def list(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        query: str | None = None,
        status: str | None = None,
        meta_key: str | None = None,
        meta_value: str | None = None,
        created_from: str | None = None,
        created_before: str | None = None,
        updated_from: str | None = None,
        updated_before: str | None = None,
    ) -> SessionSummaryPage:
        """One page of the caller's sessions, newest first; pass the page's ``nextCursor``
        as ``cursor`` for the next. ``query`` filters by title or id; ``status``
        (``running``, ``waiting``, ``completed``, ``failed``), ``meta_key`` (``channel``,
        ``variant``, ``purpose``, ``continuationKey``) with ``meta_value``, and the created
        and updated ranges (RFC 3339 times, ``…_from`` inclusive, ``…_before`` exclusive)
        filter through the server's session index."""
        params = drop_none(
            limit=limit,
            cursor=cursor,
            q=query,
            status=status,
            metaKey=meta_key,
            metaValue=meta_value,
            createdFrom=created_from,
            createdBefore=created_before,
            updatedFrom=updated_from,
            updatedBefore=updated_before,
        )
        return cast(SessionSummaryPage, await self._folio._call("GET", "/v1/sessions", params=params))


class AsyncArtifacts:
    """The agent's artifacts: ``folio.artifacts``."""

    def __init__(self, folio: AsyncFolio) -> None:
        self._folio = folio

    async def list(self) -> ArtifactRecordPage:
        """Every artifact record the caller may see."""
        return cast(ArtifactRecordPage, await self._folio._call("GET", "/v1/artifacts"))

    async def get(self, artifact_id: str) -> ArtifactRecord:
        """One artifact record."""
        answer = await self._folio._call("GET", f"/v1/artifacts/{_seg(artifact_id)}")
        return cast(ArtifactRecord, answer["artifact"])

    async def content(self, artifact_id: str) -> bytes:
        """An artifact's contents."""
        return await self._folio._get_bytes(f"/v1/artifacts/{_seg(artifact_id)}/content")


class AsyncEvals:
    """Stored eval runs: ``folio.evals``."""

    def __init__(self, folio: AsyncFolio) -> None:
        self._folio = folio

    async def list(self) -> EvalRunSummaryPage:
        """Summaries of the stored runs, newest first."""
        return cast(EvalRunSummaryPage, await self._folio._call("GET", "/v1/evals"))

    async def get(self, run_id: str) -> EvalRun:
        """One stored run: cases, attempts, steps and every assertion's verdict."""
        answer = await self._folio._call("GET", f"/v1/evals/{_seg(run_id)}")
        return cast(EvalRun, answer["run"])


class AsyncSession:
    """One session: send messages, follow its events, decide approvals.

    Store ``session_id`` and ``continuation_token`` to resume it later with
    ``folio.sessions.resume(session_id, continuation_token)``. The token rotates on every
    accepted message; the handle keeps the current one, and sends through one handle run one
    at a time so each presents the token the previous one returned.
    """

    def __init__(self, folio: AsyncFolio, session_id: str, continuation_token: str | None) -> None:
        self._folio = folio
        self._id = session_id
        self._token = continuation_token
        self._lock = asyncio.Lock()
        self._idle_cursor = 0
        self._last_turn: TurnResult | None = None

    @property
    def session_id(self) -> str:
        """The session's id (``ses_...``)."""
        return self._id

    @property
    def continuation_token(self) -> str | None:
        """The current continuation token (changes after every send)."""
        return self._token

    @property
    def _path(self) -> str:
        return f"/v1/session/{_seg(self._id)}"

    def __repr__(self) -> str:
        return f"AsyncSession({self._id!r})"

    async def send(
        self,
        text: str,
        *,
        admission: Admission | None = None,
        workspace_files: dict[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> FollowUpAccepted:
        """Sends a follow-up message; returns once it is durable (not when the turn ends).

        ``admission`` says what happens when a turn is running: ``"preempt"`` (the
        default: it is interrupted) or ``"coalesce"`` (the message waits for it). The
        continuation token is rotated inside. The message carries an idempotency key (given,
        or fresh) that every retry after a network error reuses, so it is recorded once.
        Raises `StaleTokenError` when another client sent with this session's token since.
        """
        async with self._lock:
            if self._token is None:
                raise FolioError(
                    "missing_continuation_token",
                    None,
                    f"session {self._id} was resumed without a continuation token: pass the "
                    "stored one to sessions.resume(), or call renew_token() first",
                )
            body = drop_none(
                continuationToken=self._token,
                message=text,
                admission=admission,
                workspaceFiles=workspace_files,
            )
            accepted = cast(
                FollowUpAccepted,
                await self._folio._call(
                    "POST", self._path, json=body, key=idempotency_key or new_idempotency_key()
                ),
            )
            self._token = accepted["continuationToken"]
            return accepted

    async def renew_token(self) -> str:
        """Asks the server for a fresh continuation token (owner only, chat sessions); the
        previous one goes stale. For a stored session whose latest token was lost."""
        async with self._lock:
            answer = await self._folio._call("POST", f"{self._path}/token", json={})
            self._token = cast(str, answer["continuationToken"])
            return self._token

    async def events(self, start: int = 0) -> AsyncGenerator[Event, None]:
        """Every event from index ``start``, then live ones as they are appended.

        Follows a chat session for as long as it lives (stop iterating when you are done);
        ends after a task session's final event. When the connection drops (the server
        restarts, a proxy times out) it reconnects at the next index, for up to
        ``retry.reconnect_for`` seconds of failures, so no event is skipped or repeated.
        """
        next_index = start
        failures = 0
        failing_since: float | None = None
        while True:
            try:
                # Open one event early: if that one is a task's final event, the stream is over
                # (the server may keep a stream opened past a just-finished task's end open).
                async with self._folio._http.stream(
                    "GET",
                    f"{self._path}/stream",
                    params={"startIndex": max(0, next_index - 1)},
                    timeout=STREAM_TIMEOUT,
                ) as response:
                    if response.status_code != 200:
                        await response.aread()
                        if response.status_code not in RETRYABLE_STATUS:
                            raise error_from_response(response)
                        raise httpx.RemoteProtocolError(f"stream answered {response.status_code}")
                    failures, failing_since = 0, None
                    async for line in response.aiter_lines():
                        event = parse_event(line)
                        if event is None:
                            continue
                        if event["index"] < next_index:
                            if event["index"] == next_index - 1 and event["type"] in FINAL_TYPES:
                                return
                            continue
                        if event["index"] > next_index:
                            raise gap_error(self._id, next_index, event["index"])
                        next_index += 1
                        yield event
                        if event["type"] in FINAL_TYPES:
                            return
                # The server closed the stream (shutting down, or the session closed):
                # reconnect; a deleted session answers 404.
            except httpx.TransportError as err:
                failures += 1
                failing_since = failing_since or monotonic()
                if monotonic() - failing_since > self._folio.retry.reconnect_for:
                    raise connection_error(f"streaming {self._id}", err, failures) from err
            await asyncio.sleep(self._folio.retry.delay(max(failures, 1)))

    async def history(self) -> list[Event]:
        """Every stored event of the session (the server's log), without following."""
        body = await self._folio._get_bytes(f"{self._path}/events")
        return parse_events(body.decode())

    async def wait_for_idle(self) -> TurnResult:
        """Waits until the session is idle (``session.waiting``, or a task's end) with no
        message pending, and returns how its last turn ended.

        Idle means: every message accepted before this call (and every message queued with
        ``coalesce``) has had its turn. A turn parked on an approval is not idle: decide it
        (``approve``/``deny``) from another task or thread. Raises `FolioError` (``no_turn``)
        for a session that never ran a turn.
        """
        last = self._last_turn
        # Every message accepted before this call is in the log at or before this index.
        floor = (await self.info())["lastIndex"]
        if floor >= self._idle_cursor:
            # Read on from just after the idle event the previous wait ended on.
            idle, queued = self._idle_cursor > 0, 0
            async with aclosing(self.events(self._idle_cursor)) as events:
                async for event in events:
                    last = TurnResult.of(event) or last
                    kind = event["type"]
                    if kind in IDLE_TYPES:
                        idle = True
                    elif kind in BUSY_TYPES:
                        idle = False
                    if event["type"] == "message.queued":
                        queued += 1
                    elif event["type"] == "message.received":
                        queued = max(0, queued - (event["data"].get("coalesced") or 0))
                    if idle and queued == 0 and event["index"] >= floor:
                        self._idle_cursor, self._last_turn = event["index"] + 1, last
                        break
        if last is None:
            raise FolioError("no_turn", None, f"session {self._id} is idle and never ran a turn")
        return last

    async def info(self) -> SessionSummary:
        """The session's summary (status, turns, last index, ...)."""
        return await self._folio.sessions.get(self._id)

    async def approve(self, call_id: str) -> None:
        """Approves a parked tool call (``action.approval_requested``); the turn resumes."""
        await self._decide(call_id, {"decision": "approve"})

    async def deny(self, call_id: str, reason: str | None = None) -> None:
        """Denies a parked tool call; ``reason`` is shown to the model."""
        await self._decide(call_id, drop_none(decision="deny", reason=reason))

    async def _decide(self, call_id: str, body: dict[str, Any]) -> None:
        await self._folio._call("POST", f"{self._path}/approvals/{_seg(call_id)}", json=body)

    async def stop(self) -> None:
        """Cancels the running turn (``turn.failed``: ``turn interrupted``) and drops
        queued messages; a no-op on an idle session."""
        await self._folio._call("POST", f"{self._path}/stop", json={})

    async def delete(self) -> None:
        """Removes the session (its turn is stopped first)."""
        await self._folio._call("DELETE", self._path)

    async def fork(self, at_index: int, message: str, *, title: str | None = None) -> AsyncSession:
        """A new session that copies this one's events before ``at_index`` (the index of a
        ``message.received``) and continues with ``message`` instead."""
        body = drop_none(atIndex=at_index, message=message, title=title)
        created = cast(SessionCreated, await self._folio._call("POST", f"{self._path}/fork", json=body))
        return AsyncSession(self._folio, created["sessionId"], created["continuationToken"])

    async def reminders(self) -> list[Reminder]:
        """The session's pending reminders."""
        answer = await self._folio._call("GET", f"{self._path}/reminders")
        return cast("list[Reminder]", answer["data"])

    async def set_reminder(
        self, message: str, *, at: str | None = None, after: str | None = None
    ) -> Reminder:
        """Wakes the session with ``message`` (coalesced) at ``at`` (RFC 3339) or ``after``
        a delay (``90s``, ``15m``, ``1h30m``, ...)."""
        body = drop_none(message=message, at=at, **{"in": after})
        answer = await self._folio._call("POST", f"{self._path}/reminders", json=body)
        return cast(Reminder, answer["reminder"])

    async def cancel_reminder(self, reminder_id: str) -> None:
        """Cancels a pending reminder."""
        await self._folio._call("DELETE", f"{self._path}/reminders/{_seg(reminder_id)}")

    async def save_eval_case(self, name: str) -> EvalCaseSaved:
        """Writes the session as the eval case ``evals/from-session/<name>.eval.toml``."""
        return cast(
            EvalCaseSaved,
            await self._folio._call("POST", f"{self._path}/eval-case", json={"name": name}),
        )

    async def call_tool(self, name: str, input: Any = None) -> ToolCallResult:
        """Calls a tool in this session's workspace, without the model (``409 session_busy``
        while a turn runs)."""
        return cast(
            ToolCallResult,
            await self._folio._call("POST", f"{self._path}/tools/{_seg(name)}", json={"input": input}),
        )

