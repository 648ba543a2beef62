"""The host helper (`folio_client.host`) inside authored Python tools that a real `folio serve`
runs for a session (the model is `folio-mock-model`): a principal-scope counter with
compare-and-set, files, a reminder, a metric and a log line, each recorded as
`action.host_call`; the session's call budget; and the helper outside such a process."""

from __future__ import annotations

import json
import re
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from folio_client import AuthError, Event, Folio, host
from harness import REPO, MockModel, Server, write_agent

# The tools run with the server's environment; the test venv's Python has folio_client
# installed (editable), so the scripts import it as any user's would.
PYTHON = json.dumps(sys.executable)

COUNTER_TOOL = f"""description = "Bump this principal's counter and leave a note."
command = [{PYTHON}, "counter.py"]

[input_schema]
type = "object"
required = ["note"]
properties.note = {{ type = "string" }}
"""

# Reads {input, context} on stdin, calls the host API, prints one JSON object.
COUNTER_SCRIPT = """
import json
import os
import sys

from folio_client import BadRequestError, ConflictError, RateLimitedError, host

note = json.load(sys.stdin)["input"]["note"]
out = {"rateLimited": None}
try:
    out["me"] = host.whoami()
    # Compare-and-set: read, write over the version read, retry on a conflict.
    for attempt in range(5):
        entry = host.kv.get("counter", scope="principal")
        try:
            out["written"] = host.kv.put(
                "counter", (entry["value"] if entry else 0) + 1,
                scope="principal", if_version=entry["version"] if entry else 0,
            )
            break
        except ConflictError:
            continue
    # A write over a version that is not the entry's raises ConflictError and writes nothing.
    try:
        host.kv.put("counter", -1, scope="principal", if_version=out["written"]["version"] + 10)
        out["conflict"] = None
    except ConflictError as err:
        out["conflict"] = {"type": type(err).__name__, "code": err.code, "status": err.status}
    out["after"] = host.kv.get("counter", scope="principal")
    out["listed"] = host.kv.list(scope="principal")

    path = f"notes/{note}.md"
    host.files.write(path, "count is N\\n")
    host.files.edit(path, "count is N", f"count is {out['written']['value']}")
    out["read"] = host.files.read(path)
    try:
        host.files.read("../../../../../etc/passwd")
        out["escape"] = None
    except BadRequestError as err:
        out["escape"] = err.code
    out["reminder"] = host.reminders.set("check the counter", in_="1h")
    host.telemetry.metric("app.counter.bumps", 1, unit="{bump}")
    host.telemetry.log(f"counter is {out['written']['value']} ({note})")
except RateLimitedError as err:
    out["rateLimited"] = str(err)
out["url"] = os.environ["FOLIO_HOST_URL"]
out["token"] = os.environ["FOLIO_HOST_TOKEN"]
print(json.dumps(out))
"""

BURST_TOOL = f"""description = "Call the host API until the session's budget runs out."
command = [{PYTHON}, "burst.py"]

[input_schema]
type = "object"
"""

BURST_SCRIPT = """
import json

from folio_client import RateLimitedError, host

calls, refused = 0, None
while calls < 2000 and refused is None:
    try:
        host.whoami()
        calls += 1
    except RateLimitedError as err:
        refused = {"type": type(err).__name__, "code": err.code, "status": err.status,
                   "retryAfter": err.retry_after}
print(json.dumps({"calls": calls, "refused": refused}))
"""

README_TOOL = f"""description = "The README's host example."
command = [{PYTHON}, "bump.py"]

[input_schema]
type = "object"
"""


def readme_host_example() -> str:
    """The Python README's host example (its third Python block)."""
    readme = (REPO / "clients" / "python" / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.DOTALL)
    assert len(blocks) >= 3 and "from folio_client import" in blocks[2] and "host" in blocks[2]
    return str(blocks[2])


@pytest.fixture
def host_server(
    model: MockModel, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Server]:
    """A `folio serve` of an agent whose authored tools are Python scripts using the host API."""
    project = write_agent(tmp_path)
    tools = project / "agent" / "tools"
    for name, text in {
        "counter.toml": COUNTER_TOOL,
        "counter.py": COUNTER_SCRIPT,
        "burst.toml": BURST_TOOL,
        "burst.py": BURST_SCRIPT,
        "bump.toml": README_TOOL,
        "bump.py": readme_host_example(),
    }.items():
        (tools / name).write_text(text)
    log = tmp_path / "serve.log"
    served = Server(model, project, tmp_path / "state", log)
    yield served
    served.stop()
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        print(f"--- folio serve log ({log}) ---\n{log.read_text()[-6000:]}")


def stored_events(server: Server, session_id: str) -> list[Event]:
    """The session's stored events, read as NDJSON from `GET /v1/session/<id>/events`."""
    with urllib.request.urlopen(f"{server.url}/v1/session/{session_id}/events", timeout=30) as answer:
        assert answer.status == 200
        return [json.loads(line) for line in answer.read().decode().splitlines() if line.strip()]


def of_type(events: list[Event], kind: str) -> list[Any]:
    return [e for e in events if e["type"] == kind]


def run_tool(
    folio: Folio, model: MockModel, server: Server, tool: str, tool_input: dict[str, Any]
) -> tuple[str, Any, list[Event]]:
    """A session whose model calls ``tool`` once; returns its id, the tool's output, its events."""
    model.push({"toolCalls": [{"name": tool, "input": tool_input}]}, {"text": "done"})
    session = folio.sessions.create(f"run {tool}")
    result = session.wait_for_idle()
    assert result.reply == "done", result.error
    events = stored_events(server, session.session_id)
    results = [e for e in of_type(events, "action.result") if e["data"]["tool"] == tool]
    assert len(results) == 1
    assert results[0]["data"]["isError"] is False, results[0]["data"]
    return session.session_id, results[0]["data"]["output"], events


def test_a_python_tool_keeps_a_principal_counter_and_uses_the_session(
    host_server: Server, model: MockModel
) -> None:
    with Folio(host_server.url) as folio:
        runs = [run_tool(folio, model, host_server, "counter", {"note": n}) for n in ("a", "b")]
        logs = folio.logs()
    (first_id, first, _), (second_id, second, _) = runs
    assert first_id != second_id
    assert first["token"] != second["token"], "each call gets its own token"

    for count, (session_id, out, events) in enumerate(runs, start=1):
        assert out["rateLimited"] is None, out["rateLimited"]
        call_id = of_type(events, "action.result")[0]["data"]["callId"]
        # Who the token acts for: this session and call; both sessions are the same principal's.
        assert out["me"]["sessionId"] == session_id
        assert out["me"]["callId"] == call_id
        assert out["me"]["principal"] == first["me"]["principal"]
        assert out["url"].startswith(f"unix:{host_server.state}"), out["url"]
        assert out["token"].startswith("fht_")
        # The counter went 1 then 2 across the sessions; a stale compare-and-set wrote nothing.
        written = out["written"]
        assert (written["key"], written["value"], written["version"]) == ("counter", count, count)
        assert out["conflict"] == {"type": "ConflictError", "code": "version_conflict", "status": 409}
        assert (out["after"]["value"], out["after"]["version"]) == (count, count)
        assert [(e["key"], e["value"]) for e in out["listed"]["entries"]] == [("counter", count)]
        # Files: written, edited and read back through the session's FileSystem; an escape is
        # refused as a bad request.
        assert f"count is {count}" in out["read"]
        assert out["escape"] == "invalid_request"
        # The reminder is this session's, recorded as reminder.set.
        assert out["reminder"]["sessionId"] == session_id
        assert [e["data"]["reminderId"] for e in of_type(events, "reminder.set")] == [
            out["reminder"]["reminderId"]
        ]

        # Every call is in the log as action.host_call, inside the tool call, in order.
        calls = of_type(events, "action.host_call")
        assert [c["data"]["operation"] for c in calls] == [
            "kv.get", "kv.put", "kv.put", "kv.get", "kv.list",
            "files.write", "files.edit", "files.read", "files.read",
            "reminders.set", "telemetry.metric", "telemetry.log",
        ]
        assert [bool(c["data"].get("error")) for c in calls] == [
            False, False, True, False, False, False, False, False, True, False, False, False,
        ]
        assert all(c["data"]["callId"] == call_id for c in calls)
        turn = of_type(events, "action.result")[0]["turnId"]
        assert all(c["turnId"] == turn for c in calls), "recorded in the tool call's turn"
        # The detail names the scope, key and version, never the value.
        put = calls[1]["data"]["detail"]
        assert (put["scope"], put["key"]) == ("principal", "counter"), put
        assert "value" not in put, put

    # The log lines reached the server's logs.
    messages = [line["message"] for line in logs["lines"]]
    assert any("counter is 1 (a)" in m for m in messages), messages
    assert any("counter is 2 (b)" in m for m in messages), messages

    # The calls have ended: their tokens are refused, as is an unknown one.
    with pytest.MonkeyPatch.context() as env:
        env.setenv("FOLIO_HOST_URL", first["url"])
        for token in (first["token"], second["token"], "fht_not-a-token"):
            env.setenv("FOLIO_HOST_TOKEN", token)
            with pytest.raises(AuthError) as refused:
                host.kv.get("counter", scope="principal")
            assert (refused.value.code, refused.value.status) == ("unauthorized", 401)


def test_past_the_session_budget_calls_raise_rate_limited(
    host_server: Server, model: MockModel
) -> None:
    with Folio(host_server.url) as folio:
        _, out, _ = run_tool(folio, model, host_server, "burst", {})
    refused = out["refused"]
    assert refused is not None, f"{out['calls']} calls went through without a refusal"
    assert (refused["type"], refused["code"], refused["status"]) == (
        "RateLimitedError", "rate_limited", 429)
    assert refused["retryAfter"] is not None and refused["retryAfter"] > 0, refused
    # The budget is 200 calls (refilled at 50 per second while the burst runs).
    assert out["calls"] >= 200, out


def test_the_readme_host_example_runs_as_a_tool(host_server: Server, model: MockModel) -> None:
    with Folio(host_server.url) as folio:
        counts = [run_tool(folio, model, host_server, "bump", {})[1] for _ in range(2)]
    assert counts == [{"count": 1}, {"count": 2}]


def test_outside_a_process_folio_started_calls_raise_host_not_available(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("FOLIO_HOST_URL", raising=False)
    monkeypatch.delenv("FOLIO_HOST_TOKEN", raising=False)
    with pytest.raises(host.HostNotAvailable) as missing:
        host.whoami()
    assert (missing.value.code, missing.value.status) == ("host_unavailable", None)
    with pytest.raises(host.HostNotAvailable):
        host.kv.get("counter")
