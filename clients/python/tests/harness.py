"""Real processes for the tests: `folio-mock-model` and `folio serve`, plus a proxy that loses
answers. Binaries come from ``FOLIO_BIN`` / ``FOLIO_MOCK_MODEL_BIN`` (default: the repository's
``target/debug``)."""

from __future__ import annotations

import http.client
import http.server
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]

AGENT_TOML = 'name = "Py Agent"\nmodel = "openai:gpt-test"\n'
# A tool that needs approval (as in crates/folio-cli/tests/serve_approvals.rs).
DEPLOY_TOOL = """description = "Deploy a service."
command = ["sh", "-c", "cat >/dev/null; echo deployed"]
needs_approval = true

[input_schema]
type = "object"
required = ["target"]
properties.target = { type = "string" }
"""
ARTIFACTS_TOML = """agent_tool = true
[kinds.note]
description = "A note"
"""


def binary(env: str, name: str) -> str:
    """The path of a Folio binary, from ``env`` or ``target/debug/<name>``; fails clearly."""
    path = os.environ.get(env) or str(REPO / "target" / "debug" / name)
    if not os.access(path, os.X_OK):
        raise RuntimeError(
            f"{name} not found at {path}: build it with `cargo build --workspace --bins` "
            f"or set {env} to its path"
        )
    return path


def write_agent(root: Path) -> Path:
    """An agent project (`agent/` with a tool that needs approval and an artifact kind)."""
    files = {
        "agent/instructions.md": "You are a test agent.\n",
        "agent/agent.toml": AGENT_TOML,
        "agent/tools/deploy.toml": DEPLOY_TOOL,
        "agent/artifacts.toml": ARTIFACTS_TOML,
    }
    project = root / "py-agent"
    for rel, text in files.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text)
    return project


def _read_line(process: subprocess.Popen[str], pattern: str, what: str, timeout: float = 60) -> str:
    """Reads ``process``'s stdout until a line matches ``pattern``; returns group 1."""
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        seen.append(line)
        if match := re.search(pattern, line):
            return match.group(1)
    process.kill()
    raise RuntimeError(f"{what} did not print its URL; its stdout was:\n{''.join(seen)}")


def _drain(process: subprocess.Popen[str]) -> None:
    """Keeps reading stdout so the process never blocks on a full pipe."""
    assert process.stdout is not None
    threading.Thread(target=process.stdout.read, daemon=True).start()


class MockModel:
    """A running `folio-mock-model`: an OpenAI-compatible server with scripted replies."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [binary("FOLIO_MOCK_MODEL_BIN", "folio-mock-model")],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.url = _read_line(self.process, r"mock model: (\S+)", "folio-mock-model")
        _drain(self.process)

    def push(self, *replies: dict[str, Any]) -> None:
        """Queues replies (FIFO): ``{"text": ...}``, ``{"toolCalls": [...]}``, delays, ..."""
        request = urllib.request.Request(
            f"{self.url}/mock/replies", data=json.dumps(list(replies)).encode(), method="POST"
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 200

    def requests(self) -> list[dict[str, Any]]:
        """Every model request so far (``path`` and ``body``)."""
        with urllib.request.urlopen(f"{self.url}/mock/requests", timeout=10) as answer:
            return list(json.load(answer))

    def stop(self) -> None:
        """Ends the process."""
        self.process.kill()
        self.process.wait()


class Server:
    """A running `folio serve` of one agent on the mock model; restartable on its port."""

    def __init__(self, model: MockModel, project: Path, state: Path, log: Path) -> None:
        self.model, self.project, self.state, self.log = model, project, state, log
        self.port = 0
        self.process: subprocess.Popen[str] | None = None
        self.url = ""
        self.start()

    def start(self) -> None:
        """Starts the server (on ``self.port`` after the first start)."""
        env = {k: v for k, v in os.environ.items() if k not in ("FOLIO_TOKEN", "FOLIO_MODEL", "FOLIO_FAULT")}
        env.update(OPENAI_API_KEY="test", OPENAI_BASE_URL=f"{self.model.url}/v1")
        command = [
            binary("FOLIO_BIN", "folio"), "serve", "--model", "openai:mock",
            "--dir", str(self.project), "--state-root", str(self.state), "--port", str(self.port),
        ]
        with self.log.open("a") as log:
            self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
        self.url = _read_line(self.process, r"^agent \S+: (\S+)", "folio serve")
        self.port = int(re.search(r":(\d+)/", self.url).group(1))  # type: ignore[union-attr]
        _drain(self.process)

    @property
    def host(self) -> str:
        """``http://127.0.0.1:P``."""
        return self.url.rsplit("/", 1)[0]

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def restart(self) -> None:
        """Starts again on the same port and state root (after `kill`)."""
        self.start()

    def stop(self) -> None:
        """Ends the process."""
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def eval(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Runs ``folio eval`` on the project with the server's state root and model."""
        env = dict(os.environ, OPENAI_API_KEY="test", OPENAI_BASE_URL=f"{self.model.url}/v1")
        return subprocess.run(
            [binary("FOLIO_BIN", "folio"), "eval", "--dir", str(self.project), "--model", "openai:mock",
             "--state-root", str(self.state), *args],
            capture_output=True, text=True, env=env, timeout=120,
        )


class LosingProxy:
    """An HTTP proxy that forwards every request to ``upstream`` and, for the next ``lose``
    requests whose path matches, drops the connection instead of passing the answer back:
    the server did the work, the client never hears of it."""

    def __init__(self, upstream: str) -> None:
        match = re.match(r"http://([^/:]+):(\d+)", upstream)
        assert match, upstream
        self.upstream = (match.group(1), int(match.group(2)))
        self.lose = 0
        self.lose_method = ""
        self.lose_path = ""
        self.forwarded: list[tuple[str, str]] = []
        self.lost: list[tuple[str, str]] = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection",)}
                upstream = http.client.HTTPConnection(*proxy.upstream, timeout=30)
                upstream.request(self.command, self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                data = answer.read()
                proxy.forwarded.append((self.command, self.path))
                if proxy.lose > 0 and (self.command, self.path) == (proxy.lose_method, proxy.lose_path):
                    proxy.lose -= 1
                    proxy.lost.append((self.command, self.path))
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def lose_next(self, method: str, path: str, count: int = 1) -> None:
        """Loses the answers of the next ``count`` requests ``method path``."""
        self.lose_method, self.lose_path, self.lose = method, path, count

    def url(self, path: str) -> str:
        """The proxy's URL for ``path`` (the agent's prefix)."""
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def close(self) -> None:
        """Stops the proxy."""
        self.server.shutdown()
        self.server.server_close()
