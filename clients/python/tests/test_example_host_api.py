"""examples/host-api end to end: `folio serve` runs the example's Python tool, which keeps a
per-principal counter with `folio_client.host` across turns, sessions and a `kill -9` of the
server, sets a reminder that fires into the session, writes a file and an artifact, calls the
host connection `ops` (`mcp-server-everything` from npm) and records a metric that reaches an
OTLP receiver — on the disk store and on PostgreSQL."""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import REPO, MockModel, _drain, _read_line, binary

EXAMPLE = REPO / "examples" / "host-api"
NPM_BIN = REPO / "target" / "test-deps" / "npm" / "node_modules" / ".bin"


class OtlpJson:
    """An OTLP/HTTP receiver of JSON exports: keeps every metric name it is sent."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        received = self.names

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                if self.path == "/v1/metrics":
                    for resource in json.loads(body).get("resourceMetrics", []):
                        for scope in resource.get("scopeMetrics", []):
                            for metric in scope.get("metrics", []):
                                received.add(metric["name"])
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()


class Served:
    """`folio serve` of the example, restartable on its port after a kill."""

    def __init__(self, project: Path, state: Path, model: MockModel, otlp: OtlpJson, store: str | None) -> None:
        self.project, self.state, self.model, self.otlp, self.store = project, state, model, otlp, store
        self.port = 0
        self.process: subprocess.Popen[str] | None = None
        self.url = ""
        self.log = state.parent / "serve.log"
        self.start()

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("FOLIO_TOKEN", "FOLIO_MODEL", "FOLIO_FAULT")}
        env.update(
            OPENAI_API_KEY="test",
            OPENAI_BASE_URL=f"{self.model.url}/v1",
            # The tool's `python3` is this interpreter (it has folio_client's dependencies).
            PATH=os.pathsep.join([str(Path(sys.executable).parent), str(NPM_BIN), env.get("PATH", "")]),
            PYTHONPATH=str(REPO / "clients" / "python" / "src"),
            FOLIO_VISIT_REMINDER="2s",
            OTEL_EXPORTER_OTLP_ENDPOINT=self.otlp.url,
            OTEL_EXPORTER_OTLP_PROTOCOL="http/json",
            OTEL_METRIC_EXPORT_INTERVAL="300",
        )
        command = [
            binary("FOLIO_BIN", "folio"), "serve", "--model", "openai:mock",
            "--dir", str(self.project), "--state-root", str(self.state), "--port", str(self.port),
        ]
        if self.store:
            command += ["--store", self.store]
        with self.log.open("a") as log:
            self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
        self.url = _read_line(self.process, r"^agent \S+: (\S+)", "folio serve")
        self.port = int(re.search(r":(\d+)/", self.url).group(1))  # type: ignore[union-attr]
        _drain(self.process)

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def request(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.url}{path}", data=data, method=method, headers={"content-type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            text = answer.read().decode()
        if path.endswith("/events"):
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        return json.loads(text)

    def events(self, session: str) -> list[dict[str, Any]]:
        return self.request("GET", f"/v1/session/{session}/events")

    def wait_for(self, session: str, what: str, test: Any, timeout: float = 60) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            events = self.events(session)
            if test(events):
                return events
            time.sleep(0.2)
        raise AssertionError(f"{what}: not seen in {[e['type'] for e in self.events(session)]}\n{self.log.read_text()[-3000:]}")


def visits(events: list[dict[str, Any]]) -> list[int]:
    """The visit numbers the tool answered, in order."""
    return [
        e["data"]["output"]["visit"]
        for e in events
        if e["type"] == "action.result" and e["data"]["tool"] == "visit" and not e["data"]["isError"]
    ]


def turns_done(n: int) -> Any:
    return lambda events: sum(e["type"] == "turn.completed" for e in events) >= n


def failures(events: list[dict[str, Any]]) -> list[Any]:
    return [e["data"] for e in events if e["type"] == "action.result" and e["data"]["isError"]]


STORES = ["disk", "postgres"]


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest) -> str | None:
    """No `--store` (the state root's disk store), or the test PostgreSQL."""
    if request.param == "disk":
        return None
    url = os.environ.get("FOLIO_TEST_DATABASE_URL")
    if not url:
        if os.environ.get("FOLIO_TEST_DEPS_REQUIRED") == "1":
            pytest.fail("FOLIO_TEST_DATABASE_URL is unset (scripts/test starts a PostgreSQL)")
        pytest.skip("FOLIO_TEST_DATABASE_URL is unset")
    return url


@pytest.fixture
def otlp() -> Iterator[OtlpJson]:
    receiver = OtlpJson()
    yield receiver
    receiver.close()


def test_the_visit_counter_keeps_its_state_through_the_host_api(
    model: MockModel, otlp: OtlpJson, tmp_path: Path, store: str | None
) -> None:
    if not (NPM_BIN / "mcp-server-everything").exists():
        pytest.fail(f"{NPM_BIN / 'mcp-server-everything'} is missing: run scripts/install-test-deps")
    project = tmp_path / "host-api"
    shutil.copytree(EXAMPLE, project)
    # A name of its own: a shared PostgreSQL keeps the agent's storage between runs.
    manifest = project / "agent" / "agent.toml"
    manifest.write_text(manifest.read_text().replace('"Visit Counter"', f'"Visit Counter {os.getpid()}-{time.time_ns()}"'))
    server = Served(project, tmp_path / "state", model, otlp, store)
    try:
        visit = {"toolCalls": [{"name": "visit", "input": {"note": "hello"}}]}
        # First session: one visit; its reminder fires into it 2 s later (a follow-up turn).
        model.push(visit, {"text": "Welcome!"}, {"text": "Following up."})
        first = server.request("POST", "/v1/session", {"message": "Hi, I'm new."})["sessionId"]
        events = server.wait_for(first, "the reminder's turn", turns_done(2))
        assert failures(events) == []
        assert visits(events) == [1]
        fired = [e for e in events if e["type"] == "reminder.fired"]
        assert len(fired) == 1, [e["type"] for e in events]
        operations = [e["data"]["operation"] for e in events if e["type"] == "action.host_call"]
        assert operations == [
            "kv.get", "kv.put", "files.write", "artifacts.put",
            "reminders.set", "connections.call", "telemetry.metric", "telemetry.attributes",
        ], operations
        result = next(e for e in events if e["type"] == "action.result")["data"]["output"]
        assert "visit 1" in json.dumps(result["ops"]), result

        # A crash: the counter is durable.
        server.kill()
        server.start()

        # Second session of the same principal: the counter continues; a follow-up too.
        model.push(visit, {"text": "Welcome back!"}, visit, {"text": "Again!"})
        second = server.request("POST", "/v1/session", {"message": "Hi again."})
        session, token = second["sessionId"], second["continuationToken"]
        server.wait_for(session, "the first turn", turns_done(1))
        server.request("POST", f"/v1/session/{session}", {"message": "Once more.", "continuationToken": token})
        events = server.wait_for(session, "the follow-up", lambda ev: len(visits(ev)) == 2)
        assert failures(events) == []
        assert visits(events) == [2, 3]

        # The artifact holds the latest count; the metric reached the OTLP receiver.
        artifacts = server.request("GET", "/v1/artifacts")["data"]
        mine = [a for a in artifacts if a["key"] == "visitor-local"]
        assert mine and mine[0]["data"] == {"visits": 3}, artifacts
        deadline = time.monotonic() + 20
        while "app.visits" not in otlp.names and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "app.visits" in otlp.names, sorted(otlp.names)
    finally:
        server.stop()
