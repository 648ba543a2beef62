"""The asynchronous client (`AsyncFolio`) against a real `folio serve` and `folio-mock-model`:
the main flows of test_sync.py, awaited."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from urllib.parse import urlparse

import pytest

from folio_client import (
    AsyncFolio,
    AsyncSession,
    ConflictError,
    Event,
    FolioError,
    NotFoundError,
    StaleTokenError,
)
from harness import LosingProxy, MockModel, Server

pytestmark = pytest.mark.anyio

LONG_REPLY = " ".join(f"word{n}" for n in range(60))


@pytest.fixture
async def folio(server: Server) -> AsyncIterator[AsyncFolio]:
    """An async client of the test's server."""
    async with AsyncFolio(server.url) as client:
        yield client


async def until(events: AsyncIterator[Event], kind: str, seen: list[Event] | None = None) -> Event:
    """Reads ``events`` until one of type ``kind``, collecting them into ``seen``."""
    async for event in events:
        if seen is not None:
            seen.append(event)
        if event["type"] == kind:
            return event
    raise AssertionError(f"the stream ended before {kind}")


async def assert_gapless(events: list[Event], session: AsyncSession) -> None:
    """Indexes 0, 1, 2, ... and exactly the server's log."""
    assert [e["index"] for e in events] == list(range(len(events)))
    assert events == await session.history()


async def test_create_follow_send_and_wait(folio: AsyncFolio, model: MockModel) -> None:
    model.push({"text": "hello there"}, {"text": "second answer"})
    session = await folio.sessions.create("hi", continuation_key="acme:7", workspace_files={"a.txt": "a"})
    first_token = session.continuation_token
    assert session.session_id.startswith("ses_") and first_token
    assert (await session.wait_for_idle()).reply == "hello there"
    await session.send("next")
    assert session.continuation_token not in (None, first_token)
    assert (await session.wait_for_idle()).reply == "second answer"

    seen: list[Event] = []
    events = session.events(start=0)
    await until(events, "turn.completed", seen)
    await until(events, "turn.completed", seen)
    await until(events, "session.waiting", seen)
    await events.aclose()
    await assert_gapless(seen, session)
    assert (await session.info())["turns"] == 2
    assert [s["sessionId"] for s in (await folio.sessions.list())["data"]] == [session.session_id]


async def test_a_stream_cut_by_kill_9_resumes_without_a_lost_or_repeated_event(
    folio: AsyncFolio, server: Server, model: MockModel
) -> None:
    model.push({"text": LONG_REPLY, "chunkDelayMs": 50})
    session = await folio.sessions.create("talk for a while")
    seen: list[Event] = []
    events = session.events()
    appended = 0
    async for event in events:
        seen.append(event)
        if event["type"] == "message.appended":
            appended += 1
            if appended == 3:
                break
    server.kill()
    await asyncio.sleep(1.0)
    server.restart()
    failed = await until(events, "turn.failed", seen)
    assert failed["type"] == "turn.failed" and failed["data"]["message"] == "server restarted"
    await until(events, "session.waiting", seen)
    model.push({"text": "back again"})
    await session.send("are you there?")
    done = await until(events, "turn.completed", seen)
    await until(events, "session.waiting", seen)
    await events.aclose()
    assert done["type"] == "turn.completed" and done["data"]["reply"] == "back again"
    await assert_gapless(seen, session)


async def test_a_lost_answer_is_retried_and_recorded_once(server: Server, model: MockModel) -> None:
    model.push({"text": "one"}, {"text": "two"})
    prefix = urlparse(server.url).path
    proxy = LosingProxy(server.host)
    try:
        async with AsyncFolio(proxy.url(prefix)) as lossy, AsyncFolio(server.url) as direct:
            proxy.lose_next("POST", f"{prefix}/v1/session")
            session = await lossy.sessions.create("first")
            assert len(proxy.lost) == 1
            assert len((await direct.sessions.list())["data"]) == 1
            watcher = direct.sessions.resume(session.session_id)
            await watcher.wait_for_idle()

            path = f"{prefix}/v1/session/{session.session_id}"
            proxy.lose_next("POST", path)
            await session.send("second")
            assert proxy.forwarded.count(("POST", path)) == 2 and proxy.lost[-1] == ("POST", path)
            assert (await watcher.wait_for_idle()).reply == "two"
            log = await watcher.history()
            texts = [e["data"]["text"] for e in log if e["type"] == "message.received"]
            assert texts == ["first", "second"]
    finally:
        proxy.close()


async def test_approval_round_trip_approve_then_deny(folio: AsyncFolio, model: MockModel) -> None:
    model.push(
        {"toolCalls": [{"name": "deploy", "input": {"target": "prod"}}]},
        {"text": "Deployed."},
        {"toolCalls": [{"name": "deploy", "input": {"target": "eu"}}]},
        {"text": "Not deployed."},
    )
    session = await folio.sessions.create("deploy prod")
    events = session.events()
    requested = await until(events, "action.approval_requested")
    assert requested["type"] == "action.approval_requested"
    await session.approve(requested["data"]["callId"])
    with pytest.raises(ConflictError) as again:
        await session.approve(requested["data"]["callId"])
    assert (again.value.code, again.value.status) == ("approval_resolved", 409)
    ran = await until(events, "action.result")
    assert ran["type"] == "action.result" and not ran["data"]["isError"]
    assert (await session.wait_for_idle()).reply == "Deployed."

    await session.send("and eu")
    requested = await until(events, "action.approval_requested")
    assert requested["type"] == "action.approval_requested"
    await session.deny(requested["data"]["callId"], "freeze week")
    denied = await until(events, "action.result")
    await events.aclose()
    assert denied["type"] == "action.result"
    assert denied["data"].get("error") == "denied by local: freeze week"
    assert (await session.wait_for_idle()).reply == "Not deployed."


async def test_a_stale_token_is_a_typed_409(folio: AsyncFolio, model: MockModel) -> None:
    model.push({"text": "a"}, {"text": "b"})
    session = await folio.sessions.create("start")
    copy = folio.sessions.resume(session.session_id, session.continuation_token)
    await session.send("rotates the token")
    with pytest.raises(StaleTokenError) as stale:
        await copy.send("stale")
    error = stale.value
    assert isinstance(error, FolioError)
    assert (error.code, error.status) == ("stale_continuation_token", 409) and error.message


async def test_concurrent_sends_through_one_handle_rotate_in_turn(
    folio: AsyncFolio, model: MockModel
) -> None:
    model.push({"text": "first"}, *({"text": f"r{n}"} for n in range(4)))
    session = await folio.sessions.create("start")
    await session.wait_for_idle()
    await asyncio.gather(*(session.send(f"m{n}", admission="coalesce") for n in range(4)))
    await session.wait_for_idle()
    received = [e for e in await session.history() if e["type"] == "message.received"]
    texts = "\n".join(e["data"]["text"] for e in received if e["type"] == "message.received")
    assert all(f"m{n}" in texts for n in range(4))


async def test_surface_and_errors(folio: AsyncFolio, model: MockModel) -> None:
    model.push({"text": "hi"}, {"text": "forked"})
    session = await folio.sessions.create("hello", title="Async surface")
    await session.wait_for_idle()
    assert (await folio.agent())["agent"]["name"] == "Py Agent"
    assert (await folio.artifacts.list())["data"] == []
    assert (await folio.evals.list())["data"] == []
    reminder = await session.set_reminder("later", after="2h")
    assert [r["reminderId"] for r in await session.reminders()] == [reminder["reminderId"]]
    await session.cancel_reminder(reminder["reminderId"])
    first = next(e for e in await session.history() if e["type"] == "message.received")
    fork = await session.fork(first["index"], "hello again")
    assert (await fork.wait_for_idle()).reply == "forked"
    await session.stop()
    await session.delete()
    with pytest.raises(NotFoundError):
        await session.info()
    with pytest.raises(NotFoundError):
        async for _ in session.events():
            pass
