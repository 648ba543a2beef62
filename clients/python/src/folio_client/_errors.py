"""The exceptions of folio_client: one base class, `FolioError`, with a subclass per kind of
failure a caller may want to handle on its own."""

from __future__ import annotations

import json

import httpx


class FolioError(Exception):
    """An error from a Folio server, or from reaching it.

    ``code`` is the server's machine-readable code (``stale_continuation_token``,
    ``not_found``, ...; see ``ErrorCode`` in the OpenAPI document), or one of the client's own:
    ``connection_failed`` (the server could not be reached, even after retrying),
    ``stream_gap`` (a stream skipped an index) and ``invalid_response``. ``status`` is the HTTP
    status, ``None`` when no answer came. ``message`` says what failed and what to do.
    """

    def __init__(self, code: str, status: int | None, message: str) -> None:
        super().__init__(f"{code} ({status}): {message}" if status else f"{code}: {message}")
        self.code = code
        self.status = status
        self.message = message


class BadRequestError(FolioError):
    """``400``: the request was refused as invalid (the message names the field)."""


class AuthError(FolioError):
    """``401``/``403``: missing or wrong credentials, or not the caller's session."""


class NotFoundError(FolioError):
    """``404``: no such session, tool, approval, artifact, eval run or agent."""


class ConflictError(FolioError):
    """``409``: the request conflicts with the session's state (busy, already decided, ...)."""


class StaleTokenError(ConflictError):
    """``409 stale_continuation_token``: the continuation token is not the current one.

    Another client (or an earlier copy of this session's state) sent a message since this
    token was issued. Resume with the latest stored token, or ask the server for a fresh one
    with ``Session.renew_token()`` (owner only).
    """


class IdempotencyKeyReusedError(FolioError):
    """``422 idempotency_key_reused``: one idempotency key sent with two different requests."""


class RateLimitedError(FolioError):
    """``429 rate_limited``: too many calls, or a storage quota is full.

    ``retry_after`` is the seconds the server asked to wait (``None`` when waiting does not
    help, as with a full quota).
    """

    def __init__(
        self, code: str, status: int | None, message: str, retry_after: float | None = None
    ) -> None:
        super().__init__(code, status, message)
        self.retry_after = retry_after


class OverloadedError(RateLimitedError):
    """``503 overloaded``: the server runs and queues as many turns as it is set to take.

    Nothing was written: send the same request again after ``retry_after`` seconds.
    """


class FolioConnectionError(FolioError):
    """The server could not be reached (or the connection kept failing) after every retry."""


_BY_CODE: dict[str, type[FolioError]] = {
    "stale_continuation_token": StaleTokenError,
    "idempotency_key_reused": IdempotencyKeyReusedError,
}
_BY_STATUS: dict[int, type[FolioError]] = {
    400: BadRequestError,
    401: AuthError,
    403: AuthError,
    404: NotFoundError,
    409: ConflictError,
    429: RateLimitedError,
    503: OverloadedError,
}


def error_from_response(response: httpx.Response) -> FolioError:
    """The typed error of a non-success answer whose body has been read."""
    code, message = "http_error", ""
    try:
        body = json.loads(response.content)
        code = str(body["error"])
        message = str(body["message"])
    except (ValueError, KeyError, TypeError):
        text = response.text.strip()
        message = (
            f"{response.request.method} {response.request.url} answered {response.status_code} "
            f"without a Folio error body{': ' + text[:200] if text else ''}"
        )
    kind = _BY_CODE.get(code) or _BY_STATUS.get(response.status_code, FolioError)
    if issubclass(kind, RateLimitedError):
        wait = response.headers.get("retry-after")
        return kind(
            code, response.status_code, message, float(wait) if wait and wait.isdigit() else None
        )
    return kind(code, response.status_code, message)


def connection_error(what: str, cause: BaseException, tries: int) -> FolioConnectionError:
    """The error raised when ``what`` kept failing to reach the server."""
    return FolioConnectionError(
        "connection_failed",
        None,
        f"{what} failed after {tries} {'try' if tries == 1 else 'tries'}: {cause!r}; "
        "check that the Folio server is running at the client's base URL",
    )
