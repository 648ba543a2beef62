"""The host API, for code Folio runs on behalf of a session: an authored tool, a hook.

Folio gives each such process ``FOLIO_HOST_URL`` (a Unix socket under the state root) and
``FOLIO_HOST_TOKEN`` (valid while the process runs, for its own session only). This module
reads them on each call::

    from folio_client import host

    entry = host.kv.get("counter", scope="principal")
    count = (entry["value"] if entry else 0) + 1
    host.kv.put("counter", count, scope="principal",
                if_version=entry["version"] if entry else 0)
    host.reminders.set("check the build", in_="10m")
    host.telemetry.metric("app.counter.bumps", 1)

Every call returns the answer's JSON (a dict, or the part of it named below) and raises
:class:`folio_client.FolioError` (a subclass by status) when the server refuses it:
``ConflictError`` for a compare-and-set that found another version, ``RateLimitedError`` for
``429``.
"""

from __future__ import annotations

import os
from typing import Any

import httpx

from ._errors import FolioError, error_from_response

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
    """The process was not started by Folio for a session (no ``FOLIO_HOST_URL``)."""


def _request(method: str, route: str, body: dict[str, Any] | None = None) -> Any:
    url = os.environ.get("FOLIO_HOST_URL")
    token = os.environ.get("FOLIO_HOST_TOKEN")
    if not url or not token:
        raise HostNotAvailable(
            "host_unavailable",
            None,
            "FOLIO_HOST_URL and FOLIO_HOST_TOKEN are not set: the host API works inside a "
            "process Folio starts for a session (an authored tool's call or a hook)",
        )
    if url.startswith("unix:"):
        transport = httpx.HTTPTransport(uds=url[len("unix:"):])
        base = "http://folio-host"
    else:
        transport = httpx.HTTPTransport()
        base = url.rstrip("/")
    payload = None if body is None else {k: v for k, v in body.items() if v is not None}
    try:
        with httpx.Client(transport=transport, base_url=base, timeout=60) as client:
            response = client.request(
                method,
                route,
                json=payload,
                headers={"Authorization": f"Bearer {token}"},
            )
    except httpx.TransportError as err:
        raise FolioError(
            "connection_failed", None, f"cannot reach the host API at {url}: {err}"
        ) from err
    if response.status_code >= 400:
        raise error_from_response(response)
    return response.json()


def whoami() -> dict[str, Any]:
    """The session, call, principal and agent the token acts for."""
    return _request("GET", "/v1/host/whoami")


class _Kv:
    """Storage: JSON values by key, in the ``session`` (default), ``principal`` or ``agent``
    scope; each entry has a ``version`` for compare-and-set."""

    def get(self, key: str, *, scope: str = "session") -> dict[str, Any] | None:
        """The entry (``key``, ``value``, ``version``, ``updatedAt``, ``expiresAt``), or None."""
        return _request("POST", "/v1/host/kv/get", {"scope": scope, "key": key})["entry"]

    def put(
        self,
        key: str,
        value: Any,
        *,
        scope: str = "session",
        if_version: int | None = None,
        ttl_seconds: int | None = None,
    ) -> dict[str, Any]:
        """Writes ``value``; with ``if_version`` only over that version (0: only when new)."""
        body = {
            "scope": scope,
            "key": key,
            "value": value,
            "ifVersion": if_version,
            "ttlSeconds": ttl_seconds,
        }
        return _request("POST", "/v1/host/kv/put", body)["entry"]

    def delete(
        self, key: str, *, scope: str = "session", if_version: int | None = None
    ) -> dict[str, Any] | None:
        """Removes the entry; returns it (None when there was none)."""
        body = {"scope": scope, "key": key, "ifVersion": if_version}
        return _request("POST", "/v1/host/kv/delete", body)["entry"]

    def list(
        self,
        prefix: str | None = None,
        *,
        scope: str = "session",
        after: str | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """A page ``{"entries": [...], "next": key-or-None}`` in key order."""
        body = {"scope": scope, "prefix": prefix, "after": after, "limit": limit}
        return _request("POST", "/v1/host/kv/list", body)


class _Files:
    """The session's files: the turn's FileSystem, confined like the model's file tools."""

    def _run(self, operation: str, body: dict[str, Any]) -> Any:
        return _request("POST", f"/v1/host/files/{operation}", body)["output"]

    def read(self, path: str, *, offset: int | None = None, limit: int | None = None) -> str:
        """The file's lines, numbered as the Read tool shows them."""
        return self._run("read", {"path": path, "offset": offset, "limit": limit})

    def write(self, path: str, contents: str) -> Any:
        """Creates or overwrites the file."""
        return self._run("write", {"path": path, "contents": contents})

    def list(self, path: str | None = None) -> Any:
        """A directory's entries."""
        return self._run("list", {"path": path})

    def glob(self, pattern: str, *, path: str | None = None) -> Any:
        """Paths matching ``pattern``."""
        return self._run("glob", {"pattern": pattern, "path": path})

    def grep(self, pattern: str, *, path: str | None = None) -> Any:
        """Lines matching the regular expression ``pattern``."""
        return self._run("grep", {"pattern": pattern, "path": path})

    def delete(self, path: str) -> Any:
        """Removes the file."""
        return self._run("delete", {"path": path})


class _Reminders:
    """Reminders that wake the (chat) session later."""

    def set(self, message: str, *, in_: str | None = None, at: str | None = None) -> dict[str, Any]:
        """Sets one, ``in_`` a delay (``"10m"``) or ``at`` an RFC 3339 instant."""
        body = {"message": message, "in": in_, "at": at}
        return _request("POST", "/v1/host/reminders/set", body)["reminder"]

    def list(self) -> list[dict[str, Any]]:
        """The session's pending reminders, earliest first."""
        return _request("POST", "/v1/host/reminders/list", {})["reminders"]

    def cancel(self, reminder_id: str) -> None:
        """Cancels a pending reminder."""
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
    ) -> dict[str, Any]:
        """Tags an artifact of the session; returns ``{"artifact": ..., "contents": ...}``."""
        body = {
            "key": key,
            "title": title,
            "kind": kind,
            "data": data,
            "contents": contents,
            "contentType": content_type,
        }
        return _request("POST", "/v1/host/artifacts/put", body)

    def get(
        self, artifact_id: str | None = None, *, key: str | None = None, kind: str | None = None
    ) -> dict[str, Any]:
        """One artifact by id, or by ``key`` (and ``kind``), with its contents."""
        body = {"artifactId": artifact_id, "key": key, "kind": kind}
        return _request("POST", "/v1/host/artifacts/get", body)

    def list(self, *, kind: str | None = None, session_only: bool = False) -> list[dict[str, Any]]:
        """The agent's artifacts, most recently updated first."""
        body = {"kind": kind, "sessionOnly": session_only}
        return _request("POST", "/v1/host/artifacts/list", body)["artifacts"]


class _Connections:
    """Tools of the agent's host connections (``agent/host-connections/``)."""

    def list(self) -> list[dict[str, Any]]:
        """Each connection with its tools."""
        return _request("POST", "/v1/host/connections/list", {})["connections"]

    def call(self, connection: str, tool: str, arguments: dict[str, Any] | None = None) -> Any:
        """Calls ``tool``; returns ``{"result": ..., "isError": bool}``."""
        body = {"connection": connection, "tool": tool, "arguments": arguments or {}}
        return _request("POST", "/v1/host/connections/call", body)


class _Telemetry:
    """Span attributes, metric points and log lines of the calling tool call."""

    def attributes(self, attributes: dict[str, Any]) -> None:
        """Sets attributes (string, number, boolean) on the calling tool call's span."""
        _request("POST", "/v1/host/telemetry/attributes", {"attributes": attributes})

    def metric(
        self,
        name: str,
        value: float,
        *,
        kind: str = "counter",
        unit: str | None = None,
        attributes: dict[str, Any] | None = None,
    ) -> None:
        """Records a ``counter`` increment or a ``histogram`` point."""
        body = {
            "name": name,
            "kind": kind,
            "value": value,
            "unit": unit,
            "attributes": attributes or {},
        }
        _request("POST", "/v1/host/telemetry/metric", body)

    def log(self, message: str, *, level: str = "info") -> None:
        """Writes a log line about the session (``info``, ``warn`` or ``error``)."""
        _request("POST", "/v1/host/telemetry/log", {"message": message, "level": level})


kv = _Kv()
files = _Files()
reminders = _Reminders()
artifacts = _Artifacts()
connections = _Connections()
telemetry = _Telemetry()
