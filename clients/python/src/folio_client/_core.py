"""What the blocking and the asynchronous clients share: retry policy, turn results, parsing."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any, Literal, cast

import httpx

from ._errors import FolioError, error_from_response
from ._models import Event

# Answers worth retrying: the request did not reach the agent, or a proxy gave up on it.
RETRYABLE_STATUS = frozenset({408, 502, 503, 504})
# Events after which a session waits (chat) or is over (task).
IDLE_TYPES = frozenset({"session.waiting", "session.completed", "session.failed"})
FINAL_TYPES = frozenset({"session.completed", "session.failed"})
# Events after which a session has work to do (a message, a turn).
BUSY_TYPES = frozenset({"message.received", "message.queued", "turn.queued", "turn.started"})
# A stream sends an empty line every 15 s; a read that waits longer means the connection died.
STREAM_TIMEOUT = httpx.Timeout(30.0, read=45.0)


@dataclass(frozen=True)
class RetryPolicy:
    """How the client retries after network errors.

    ``attempts`` bounds the tries of one request that is safe to repeat (reads, and creates
    and sends, which carry an idempotency key); ``reconnect_for`` is how many seconds a
    stream keeps reconnecting while the server is unreachable. Waits between tries grow from
    ``initial_delay`` by doubling up to ``max_delay``.
    """

    attempts: int = 8
    reconnect_for: float = 60.0
    initial_delay: float = 0.1
    max_delay: float = 2.0

    def delay(self, attempt: int) -> float:
        """Seconds to wait before try number ``attempt + 1`` (``attempt`` >= 1)."""
        return min(self.max_delay, self.initial_delay * 2.0 ** max(0, attempt - 1))


@dataclass(frozen=True)
class TurnResult:
    """How a session's last turn ended: ``turn.completed`` (``reply`` set) or ``turn.failed``
    (``error`` set, e.g. ``turn interrupted`` after a stop or a preempting message)."""

    status: Literal["completed", "failed"]
    reply: str | None
    error: str | None
    turn_id: str | None
    index: int
    """The index of the ``turn.completed`` / ``turn.failed`` event."""

    @property
    def ok(self) -> bool:
        """Whether the turn completed."""
        return self.status == "completed"

    @staticmethod
    def of(event: Event) -> TurnResult | None:
        """The result an event records, or ``None`` for any other event than a turn's end."""
        turn_id = event.get("turnId")
        if event["type"] == "turn.completed":
            return TurnResult("completed", event["data"]["reply"], None, turn_id, event["index"])
        if event["type"] == "turn.failed":
            return TurnResult("failed", None, event["data"]["message"], turn_id, event["index"])
        return None


def new_idempotency_key() -> str:
    """A fresh idempotency key for one create or send (and its retries)."""
    return f"py-{uuid.uuid4().hex}"


def parse_event(line: str) -> Event | None:
    """One NDJSON line of a stream as an event; ``None`` for a keep-alive (empty) line."""
    if not line.strip():
        return None
    try:
        value = json.loads(line)
    except ValueError as err:
        raise FolioError(
            "invalid_response", None, f"a stream line is not JSON ({err}): {line[:200]!r}"
        ) from err
    if not isinstance(value, dict) or not isinstance(value.get("index"), int):
        raise FolioError("invalid_response", None, f"a stream line is not an event: {line[:200]!r}")
    return cast(Event, value)


def parse_events(text: str) -> list[Event]:
    """Every event of an NDJSON body."""
    return [event for line in text.splitlines() if (event := parse_event(line)) is not None]


def json_of(response: httpx.Response) -> Any:
    """The JSON body of a success answer; raises the typed `FolioError` of any other."""
    if not response.is_success:
        raise error_from_response(response)
    try:
        return response.json()
    except ValueError as err:
        raise FolioError(
            "invalid_response",
            response.status_code,
            f"{response.request.method} {response.request.url} answered a body that is not JSON",
        ) from err


def gap_error(session_id: str, expected: int, got: int) -> FolioError:
    """The error of a stream that skipped an index (the server promises it never does)."""
    return FolioError(
        "stream_gap",
        None,
        f"the stream of {session_id} jumped from index {expected - 1} to {got}; "
        "this is a server bug: report it with the session's log",
    )


def drop_none(**fields: Any) -> dict[str, Any]:
    """A JSON body of the fields that are set."""
    return {key: value for key, value in fields.items() if value is not None}
