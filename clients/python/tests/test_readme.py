"""The README's examples run as written against a real server."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from harness import REPO, MockModel, Server

README = REPO / "clients" / "python" / "README.md"
EXAMPLE_URL = "http://127.0.0.1:4000/my-agent"


def examples() -> list[str]:
    """The README's Python code blocks."""
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def run(code: str, server: Server) -> str:
    env = {k: v for k, v in os.environ.items() if k != "FOLIO_TOKEN"}
    done = subprocess.run(
        [sys.executable, "-c", code.replace(EXAMPLE_URL, server.url)],
        capture_output=True, text=True, env=env, timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_blocking_example(server: Server, model: MockModel) -> None:
    model.push({"text": "A one-liner."}, {"text": "En une ligne."}, {"text": "Done."})
    out = run(examples()[0], server)
    assert out.splitlines() == [
        "reply: A one-liner.", "A one-liner.", "En une ligne.", "reply: Done."]


def test_the_async_example(server: Server, model: MockModel) -> None:
    model.push({"text": "Hi."}, {"text": "Hi again."})
    out = run(examples()[1], server)
    lines = out.splitlines()
    assert lines[0] == "0 session.started" and lines[-2].endswith("session.waiting")
    assert lines[-1] == "Hi again."
