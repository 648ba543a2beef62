"""The host API (docs/host-api.md), for code Folio runs on behalf of a session: an authored
tool, a hook.

Folio gives each such process ``FOLIO_HOST_URL`` (a Unix socket under the state root, or a
loopback ``http://`` URL) and ``FOLIO_HOST_TOKEN`` (valid while the process runs, for its own
session only). This module reads them on each call::

    from folio_client import ConflictError, host

    entry = host.kv.get("counter", scope="principal")
    count = (entry["value"] if entry else 0) + 1
    try:
        host.kv.put("counter", count, scope="principal",
                    if_version=entry["version"] if entry else 0)
    except ConflictError:
        ...  # another process wrote first: read again and retry
    host.reminders.set("check the build", in_="10m")
    host.telemetry.metric("app.counter.bumps", 1)

Every call returns the answer's JSON (the part of it named below, typed with the generated
wire types of :mod:`folio_client.models`) and raises :class:`folio_client.FolioError` (a
subclass by status) when the server refuses it: ``ConflictError`` (``409 version_conflict``)
for a compare-and-set that found another version, ``RateLimitedError`` (``429 rate_limited``,
with ``retry_after``) past the session's call budget or a full storage quota,
``BadRequestError`` for an invalid request or a path that escapes, ``AuthError`` for a token
that is unknown or whose process has ended. Outside a process Folio started for a session,
every call raises :class:`HostNotAvailable`.
"""

from __future__ import annotations

import os
from typing import Any, Literal, cast

import httpx

from ._errors import FolioConnectionError, FolioError, error_from_response
from ._models import (
    ArtifactRecord,
    HostArtifact,
    HostConnectionTools,
    HostIdentity,
    KvListResponse,
    LogLevel,
    MetricKind,
    Reminder,
    StorageEntry,
    StorageScope,
    ToolCallResult,
)

__all__ = [
    "HostNotAvailable",
    "artifacts",
    "connections",
    "files",
    "kv",
    "reminders",
    "telemetry",
    "whoami",
]


class HostNotAvailable(FolioError):
    """The process was not started by Folio for a session: ``FOLIO_HOST_URL`` or
    ``FOLIO_HOST_TOKEN`` is not set (code ``host_unavailable``)."""


_clients: dict[tuple[int, str], httpx.Client] = {}


def _client(url: str) -> httpx.Client:
    """The process's connection to the host API at ``url`` (kept for the process's life; a
    forked child makes its own)."""
    key = (os.getpid(), url)
    client = _clients.get(key)
    if client is None:
        if url.startswith("unix:"):
            # The socket: no TLS, so no certificate store to load (that costs ~40 ms a client).
            transport = httpx.HTTPTransport(uds=url[len("unix:") :], verify=False)
            base = "http://folio-host"
        elif url.startswith("http://"):
            transport = httpx.HTTPTransport(verify=False)
            base = url.rstrip("/")
        else:
            raise HostNotAvailable(
                "host_unavailable",
                None,
                f"FOLIO_HOST_URL is neither unix:<path> nor http://…: {url}",
            )
        # trust_env=False: no proxy from HTTP_PROXY and the like stands between a process and
        # its own host API.
        client = httpx.Client(transport=transport, base_url=base, timeout=60, trust_env=False)
        _clients[key] = client
    return client


def _request(
    method: str, route: str, body: dict[str, Any] | None = None, *, keep: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Sends one request to the host API named by the environment; returns the answer.

    Fields of ``body`` that are None are left out, except those named in ``keep`` (sent as
    JSON ``null``).
    """
    url = os.environ.get("FOLIO_HOST_URL")
    token = os.environ.get("FOLIO_HOST_TOKEN")
    if not url or not token:
        raise HostNotAvailable(
            "host_unavailable",
            None,
            "FOLIO_HOST_URL and FOLIO_HOST_TOKEN are not set: the host API works inside a "
            "process Folio starts for a session (an authored tool's call or a hook)",
        )
    payload = (
        None if body is None else {k: v for k, v in body.items() if v is not None or k in keep}
    )
    try:
        response = _client(url).request(
            method, route, json=payload, headers={"Authorization": f"Bearer {token}"}
        )
    except httpx.TransportError as err:
        raise FolioConnectionError(
            "connection_failed", None, f"cannot reach the host API at {url}: {err!r}"
        ) from err
    if response.status_code >= 400:
        raise error_from_response(response)
    try:
        answer = response.json()
    except ValueError as err:
        raise FolioError(
            "invalid_response",
            response.status_code,
            f"{route} answered {response.status_code} without JSON: {response.text[:200]}",
        ) from err
    if not isinstance(answer, dict):
        raise FolioError(
            "invalid_response", response.status_code, f"{route} answered {answer!r}, not an object"
        )
    return answer


def whoami() -> HostIdentity:
    """The session, call, principal and agent the token acts for."""
    return cast(HostIdentity, _request("GET", "/v1/host/whoami"))


class _Kv:
    """Storage: JSON values by key, in the ``session`` (default), ``principal`` or ``agent``
    scope; each entry has a ``version`` for compare-and-set."""

    def get(self, key: str, *, scope: StorageScope = "session") -> StorageEntry | None:
        """The entry (``key``, ``value``, ``version``, ``updatedAt``, ``expiresAt``), or None
        when the key has none (or it expired)."""
        answer = _request("POST", "/v1/host/kv/get", {"scope": scope, "key": key})
        return cast("StorageEntry | None", answer.get("entry"))

    def put(
        self,
        key: str,
        value: Any,
        *,
        scope: StorageScope = "session",
        if_version: int | None = None,
        ttl_seconds: int | None = None,
    ) -> StorageEntry:
        """Writes ``value`` (any JSON, at most 256 KiB) and returns the entry as written.

        With ``if_version`` only over that version (0: only when the key has none); otherwise
        raises ``ConflictError`` (code ``version_conflict``) and writes nothing.
        """
        body = {
            "scope": scope,
            "key": key,
            "value": value,
            "ifVersion": if_version,
            "ttlSeconds": ttl_seconds,
        }
        # A JSON null is a value to store, not a field to leave out.
        answer = _request("POST", "/v1/host/kv/put", body, keep=("value",))
        return cast(StorageEntry, answer["entry"])

    def delete(
        self, key: str, *, scope: StorageScope = "session", if_version: int | None = None
    ) -> StorageEntry | None:
        """Removes the entry (with ``if_version``, only at that version); returns it (None when
        there was none)."""
        body = {"scope": scope, "key": key, "ifVersion": if_version}
        return cast(
            "StorageEntry | None", _request("POST", "/v1/host/kv/delete", body).get("entry")
        )

    def list(
        self,
        prefix: str | None = None,
        *,
        scope: StorageScope = "session",
        after: str | None = None,
        limit: int | None = None,
    ) -> KvListResponse:
        """A page ``{"entries": [...], "next": key-or-None}`` in key order (pass ``next`` as
        ``after`` for the following page)."""
        body = {"scope": scope, "prefix": prefix, "after": after, "limit": limit}
        return cast(KvListResponse, _request("POST", "/v1/host/kv/list", body))


class _Files:
    """The session's files: the call's FileSystem, with the same confinement and limits as the
    model's file tools (a path that escapes raises ``BadRequestError``). Each returns what that
    tool answers the model: text, or JSON for structured results."""

    def _run(self, operation: str, body: dict[str, Any]) -> Any:
        return _request("POST", f"/v1/host/files/{operation}", body)["output"]

    def read(self, path: str, *, offset: int | None = None, limit: int | None = None) -> Any:
        """The file's lines, numbered as the ``Read`` tool shows them (``offset``: 1-based)."""
        return self._run("read", {"path": path, "offset": offset, "limit": limit})

    def write(self, path: str, contents: str) -> Any:
        """Creates or overwrites the file (as ``Write``)."""
        return self._run("write", {"path": path, "contents": contents})

    def edit(self, path: str, old_text: str, new_text: str, *, replace_all: bool = False) -> Any:
        """Replaces ``old_text`` by ``new_text`` (exactly one occurrence unless
        ``replace_all``), as ``StrReplace``."""
        body = {
            "path": path,
            "oldText": old_text,
            "newText": new_text,
            "replaceAll": replace_all or None,
        }
        return self._run("edit", body)

    def delete(self, path: str) -> Any:
        """Removes the file (as ``Delete``)."""
        return self._run("delete", {"path": path})

    def list(
        self, path: str | None = None, *, head_limit: int | None = None, offset: int | None = None
    ) -> Any:
        """A directory's entries (default: the root), as ``LS``."""
        return self._run("list", {"path": path, "headLimit": head_limit, "offset": offset})

    def glob(
        self,
        pattern: str,
        *,
        path: str | None = None,
        head_limit: int | None = None,
        offset: int | None = None,
    ) -> Any:
        """Paths matching ``pattern`` (``*`` does not cross ``/``, ``**`` does), as ``Glob``."""
        body = {"pattern": pattern, "path": path, "headLimit": head_limit, "offset": offset}
        return self._run("glob", body)

    def grep(
        self,
        pattern: str,
        *,
        path: str | None = None,
        glob: str | None = None,
        case_insensitive: bool | None = None,
        output_mode: Literal["content", "files_with_matches", "count"] | None = None,
        head_limit: int | None = None,
        offset: int | None = None,
    ) -> Any:
        """Lines (or files, or counts) matching the regular expression ``pattern``, as ``Grep``."""
        body = {
            "pattern": pattern,
            "path": path,
            "glob": glob,
            "caseInsensitive": case_insensitive,
            "outputMode": output_mode,
            "headLimit": head_limit,
            "offset": offset,
        }
        return self._run("grep", body)


class _Reminders:
    """Reminders that wake the (chat) session later."""

    def set(self, message: str, *, in_: str | None = None, at: str | None = None) -> Reminder:
        """Sets one, ``in_`` a delay (``"10m"``) or ``at`` an RFC 3339 instant."""
        body = {"message": message, "in": in_, "at": at}
        return cast(Reminder, _request("POST", "/v1/host/reminders/set", body)["reminder"])

    def list(self) -> list[Reminder]:
        """The session's pending reminders, earliest first."""
        return cast("list[Reminder]", _request("POST", "/v1/host/reminders/list", {})["reminders"])

    def cancel(self, reminder_id: str) -> None:
        """Cancels a pending reminder (``rem_…``)."""
        _request("POST", "/v1/host/reminders/cancel", {"reminderId": reminder_id})


class _Artifacts:
    """The agent's artifacts (typed records, upserted by kind and key)."""

    def put(
        self,
        key: str,
        title: str,
        *,
        kind: str | None = None,
        data: Any = None,
        contents: str | None = None,
        content_type: str | None = None,
    ) -> HostArtifact:
        """Tags an artifact of the session (records ``artifact.tagged``); returns
        ``{"artifact": ..., "contents": ...}``."""
        body = {
            "key": key,
            "title": title,
            "kind": kind,
            "data": data,
            "contents": contents,
            "contentType": content_type,
        }
        return cast(HostArtifact, _request("POST", "/v1/host/artifacts/put", body))

    def get(
        self, artifact_id: str | None = None, *, key: str | None = None, kind: str | None = None
    ) -> HostArtifact:
        """One artifact by id, or by ``key`` (and ``kind``), with its contents."""
        body = {"artifactId": artifact_id, "key": key, "kind": kind}
        return cast(HostArtifact, _request("POST", "/v1/host/artifacts/get", body))

    def list(self, *, kind: str | None = None, session_only: bool = False) -> list[ArtifactRecord]:
        """The agent's artifacts (only the calling session's with ``session_only``), most
        recently updated first."""
        body = {"kind": kind, "sessionOnly": session_only}
        return cast(
            "list[ArtifactRecord]", _request("POST", "/v1/host/artifacts/list", body)["artifacts"]
        )


class _Connections:
    """Tools of the agent's host connections (``agent/host-connections/``), which the model
    never sees."""

    def list(self) -> list[HostConnectionTools]:
        """Each connection with its tools (or why it could not be reached)."""
        return cast(
            "list[HostConnectionTools]",
            _request("POST", "/v1/host/connections/list", {})["connections"],
        )

    def call(
        self, connection: str, tool: str, arguments: dict[str, Any] | None = None
    ) -> ToolCallResult:
        """Calls ``tool``; returns ``{"result": ..., "isError": bool}``."""
        body = {"connection": connection, "tool": tool, "arguments": arguments or {}}
        return cast(ToolCallResult, _request("POST", "/v1/host/connections/call", body))


class _Telemetry:
    """Span attributes, metric points and log lines of the calling tool call."""

    def attributes(self, attributes: dict[str, str | int | float | bool]) -> None:
        """Sets attributes (dotted lowercase names; string, number or boolean values) on the
        calling tool call's span."""
        _request("POST", "/v1/host/telemetry/attributes", {"attributes": attributes})

    def metric(
        self,
        name: str,
        value: float,
        *,
        kind: MetricKind = "counter",
        unit: str | None = None,
        attributes: dict[str, str | int | float | bool] | None = None,
    ) -> None:
        """Records a ``counter`` increment or a ``histogram`` point (``name`` dotted
        lowercase, ``unit`` UCUM)."""
        body = {
            "name": name,
            "kind": kind,
            "value": value,
            "unit": unit,
            "attributes": attributes or {},
        }
        _request("POST", "/v1/host/telemetry/metric", body)

    def log(self, message: str, *, level: LogLevel = "info") -> None:
        """Writes a log line about the session (``info``, ``warn`` or ``error``; at most 8 KiB):
        ``GET /v1/logs`` and OTLP logs."""
        _request("POST", "/v1/host/telemetry/log", {"message": message, "level": level})


kv = _Kv()
files = _Files()
reminders = _Reminders()
artifacts = _Artifacts()
connections = _Connections()
telemetry = _Telemetry()
