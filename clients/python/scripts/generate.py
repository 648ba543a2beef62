#!/usr/bin/env python3
"""Writes the two generated modules of folio_client, or checks them for drift (``--check``).

- ``src/folio_client/_models.py``: TypedDicts of every schema of ``docs/openapi.json``, made by
  datamodel-code-generator (pinned in ``requirements-test.txt``) with the options below.
- ``src/folio_client/_sync.py``: the blocking client, rewritten from ``_async.py`` by plain
  token substitutions (``async def`` -> ``def``, ``await x`` -> ``x``, ...), so the two clients
  can never drift apart.

Run it from anywhere with the test venv's Python; ``scripts/test`` runs it with ``--check``.
"""

from __future__ import annotations

import argparse
import difflib
import re
import subprocess
import sys
import tempfile
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "folio_client"
REPO = Path(__file__).resolve().parents[3]
OPENAPI = REPO / "docs" / "openapi.json"

MODELS_HEADER = """\
# Generated from docs/openapi.json by datamodel-code-generator: do not edit.
# Regenerate with `clients/python/scripts/generate.py`; `clients/python/scripts/test` fails
# when this file differs from what the generator writes.
"""

DATAMODEL_OPTIONS = [
    "--input-file-type", "openapi",
    "--output-model-type", "typing.TypedDict",
    "--target-python-version", "3.10",
    "--use-tag-as-union-variant-name",
    "--no-use-closed-typed-dict",
    "--disable-timestamp",
    "--formatters", "builtin",
    "--use-schema-description",
    "--use-field-description",
    "--disable-warnings",
    "--custom-file-header", MODELS_HEADER,
]

# typing.NotRequired is new in 3.11; the package supports 3.10 through typing_extensions.
_NOT_REQUIRED_IMPORT = "from typing_extensions import NotRequired\n"
_NOT_REQUIRED_COMPAT = """\
import sys

if sys.version_info >= (3, 11):
    from typing import NotRequired
else:  # pragma: no cover
    from typing_extensions import NotRequired
"""

# (pattern, replacement) applied in order to _async.py to make _sync.py.
UNASYNC = [
    (r"\basync def\b", "def"),
    (r"\basync for\b", "for"),
    (r"\basync with\b", "with"),
    (r"\bawait ", ""),
    (r"\bAsyncGenerator\[(.*), None\]", r"Generator[\1, None, None]"),
    (r"\bAsyncGenerator\b", "Generator"),
    (r"\bAsyncFolio\b", "Folio"),
    (r"\bAsyncSessions\b", "Sessions"),
    (r"\bAsyncSession\b", "Session"),
    (r"\bAsyncArtifacts\b", "Artifacts"),
    (r"\bAsyncEvals\b", "Evals"),
    (r"\bhttpx\.AsyncClient\b", "httpx.Client"),
    (r"\bhttpx\.AsyncHTTPTransport\b", "httpx.HTTPTransport"),
    (r"\baiter_lines\b", "iter_lines"),
    (r"\baread\b", "read"),
    (r"\baclosing\b", "closing"),
    (r"\baclose\b", "close"),
    (r"\b__aenter__\b", "__enter__"),
    (r"\b__aexit__\b", "__exit__"),
    (r"\basyncio\.Lock\b", "threading.Lock"),
    (r"\basyncio\.sleep\b", "time.sleep"),
    (r"^import asyncio$", "import threading\nimport time"),
    (r"\basynchronous\b", "blocking"),
    (r"\bAsync\b", "Blocking"),
]

SYNC_HEADER = '''\
# Generated from _async.py by clients/python/scripts/generate.py: do not edit.
'''


def generate_models() -> str:
    """Runs datamodel-codegen on docs/openapi.json and returns the module's text."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "_models.py"
        command = [
            sys.executable, "-m", "datamodel_code_generator",
            "--input", str(OPENAPI), "--output", str(out), *DATAMODEL_OPTIONS,
        ]
        done = subprocess.run(command, capture_output=True, text=True, cwd=tmp)
        if done.returncode != 0:
            sys.exit(f"datamodel-codegen failed ({done.returncode}):\n{done.stderr}")
        text = out.read_text()
    if _NOT_REQUIRED_IMPORT in text:
        text = text.replace(_NOT_REQUIRED_IMPORT, _NOT_REQUIRED_COMPAT)
    return text


def generate_sync() -> str:
    """Rewrites _async.py into the blocking client's module and returns its text."""
    text = (PACKAGE / "_async.py").read_text()
    for pattern, replacement in UNASYNC:
        text = re.sub(pattern, replacement, text, flags=re.MULTILINE)
    return SYNC_HEADER + text


def main() -> int:
    """Writes (or with ``--check`` compares) the generated modules."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when a file would change")
    args = parser.parse_args()
    drift = []
    for name, text in (("_models.py", generate_models()), ("_sync.py", generate_sync())):
        path = PACKAGE / name
        current = path.read_text() if path.exists() else ""
        if current == text:
            continue
        if args.check:
            diff = difflib.unified_diff(
                current.splitlines(keepends=True), text.splitlines(keepends=True),
                f"{name} (committed)", f"{name} (generated)", n=1,
            )
            drift.append(f"{path} is out of date:\n{''.join(list(diff)[:60])}")
        else:
            path.write_text(text)
            print(f"wrote {path}")
    if drift:
        print("\n".join(drift), file=sys.stderr)
        print(
            "The generated modules drifted from docs/openapi.json or _async.py: run "
            "clients/python/scripts/generate.py (with the test venv's python) and commit the result.",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
