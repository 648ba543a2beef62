"""Fixtures: a mock model, an agent project and a `folio serve` per test."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from harness import MockModel, Server, write_agent


@pytest.fixture
def model() -> Iterator[MockModel]:
    """A fresh `folio-mock-model` (its reply queue starts empty)."""
    mock = MockModel()
    yield mock
    mock.stop()


@pytest.fixture
def server(model: MockModel, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Server]:
    """A `folio serve` of a fresh agent project and state root; its log is printed on failure."""
    log = tmp_path / "serve.log"
    served = Server(model, write_agent(tmp_path), tmp_path / "state", log)
    yield served
    served.stop()
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        print(f"--- folio serve log ({log}) ---\n{log.read_text()[-6000:]}")


@pytest.fixture
def anyio_backend() -> str:
    """The async tests run on asyncio."""
    return "asyncio"


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Keeps each phase's report on the test item (for the server-log fixture)."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report
