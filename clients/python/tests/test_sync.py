"""The blocking client (`Folio`) against a real `folio serve` and `folio-mock-model`."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from urllib.parse import urlparse

import pytest

from folio_client import (
    ConflictError,
    Event,
    Folio,
    FolioError,
    NotFoundError,
    Session,
    StaleTokenError,
)
from harness import LosingProxy, MockModel, Server

LONG_REPLY = " ".join(f"word{n}" for n in range(60))
# A turn that tags an artifact (the agent's `note` kind), then answers.
TAGGING = (
    {"toolCalls": [{"name": "tag_artifact", "input": {
        "kind": "note", "key": "n1", "title": "First note", "data": {"n": 1}, "contents": "hello"}}]},
    {"text": "Tagged."},
)


@pytest.fixture
def folio(server: Server) -> Iterator[Folio]:
    """A client of the test's server."""
    with Folio(server.url) as client:
        yield client


def until(events: Iterator[Event], kind: str, seen: list[Event] | None = None) -> Event:
    """Reads ``events`` until one of type ``kind``, collecting them into ``seen``."""
    for event in events:
        if seen is not None:
            seen.append(event)
        if event["type"] == kind:
            return event
    raise AssertionError(f"the stream ended before {kind}")


def assert_gapless(events: list[Event], session: Session) -> None:
    """Indexes 0, 1, 2, ... and exactly the server's log."""
    assert [e["index"] for e in events] == list(range(len(events)))
    assert events == session.history()


def test_create_follow_send_and_wait(folio: Folio, model: MockModel) -> None:
    model.push({"text": "hello there"}, {"text": "second answer"})
    session = folio.sessions.create(
        "hi", title="Greeting", continuation_key="acme:ticket-7", workspace_files={"notes.txt": "n"}
    )
    assert session.session_id.startswith("ses_")
    first_token = session.continuation_token
    assert first_token and first_token.startswith("http:")

    result = session.wait_for_idle()
    assert (result.ok, result.reply, result.error) == (True, "hello there", None)

    accepted = session.send("next")
    assert accepted["sessionId"] == session.session_id
    assert session.continuation_token == accepted["continuationToken"] != first_token
    assert session.wait_for_idle().reply == "second answer"
    # Idle already: returns the same result without waiting.
    assert session.wait_for_idle().reply == "second answer"

    seen: list[Event] = []
    events = session.events(start=0)
    until(events, "turn.completed", seen)
    last = until(events, "turn.completed", seen)
    until(events, "session.waiting", seen)
    events.close()
    assert last["type"] == "turn.completed" and last["data"]["reply"] == "second answer"
    assert_gapless(seen, session)
    started = seen[0]
    assert started["type"] == "session.started" and started["data"]["mode"] == "chat"
    summary = session.info()
    assert (summary["status"], summary["turns"], summary["title"]) == ("waiting", 2, "Greeting")
    assert summary.get("continuationKey") == "acme:ticket-7"
    # Reading from the middle starts at that index.
    middle = session.events(start=3)
    assert next(middle)["index"] == 3
    middle.close()


def test_a_stream_cut_by_kill_9_resumes_without_a_lost_or_repeated_event(
    folio: Folio, server: Server, model: MockModel
) -> None:
    model.push({"text": LONG_REPLY, "chunkDelayMs": 50})
    session = folio.sessions.create("talk for a while")
    seen: list[Event] = []
    events = session.events()
    appended = 0
    for event in events:
        seen.append(event)
        if event["type"] == "message.appended":
            appended += 1
            if appended == 3:
                break
    # The server dies mid-turn, stays down for a moment, and comes back on the same port.
    server.kill()
    time.sleep(1.0)
    server.restart()
    failed = until(events, "turn.failed", seen)
    assert failed["type"] == "turn.failed" and failed["data"]["message"] == "server restarted"
    until(events, "session.waiting", seen)
    # The session continues after the restart, on the same stream.
    model.push({"text": "back again"})
    session.send("are you there?")
    done = until(events, "turn.completed", seen)
    until(events, "session.waiting", seen)
    events.close()
    assert done["type"] == "turn.completed" and done["data"]["reply"] == "back again"
    assert_gapless(seen, session)
    assert session.wait_for_idle().reply == "back again"


def test_a_lost_answer_is_retried_and_recorded_once(server: Server, model: MockModel) -> None:
    model.push({"text": "one"}, {"text": "two"}, {"text": "three"})
    prefix = urlparse(server.url).path
    proxy = LosingProxy(server.host)
    try:
        with Folio(proxy.url(prefix)) as lossy, Folio(server.url) as direct:
            # A create whose answer is lost: the retry gets the same session, not a second one.
            proxy.lose_next("POST", f"{prefix}/v1/session")
            session = lossy.sessions.create("first")
            assert proxy.lost == [("POST", f"{prefix}/v1/session")]
            assert [s["sessionId"] for s in direct.sessions.list()["data"]] == [session.session_id]
            watcher = direct.sessions.resume(session.session_id)
            watcher.wait_for_idle()

            # A send whose answer is lost: retried with the same key, recorded once.
            path = f"{prefix}/v1/session/{session.session_id}"
            proxy.lose_next("POST", path)
            token_before = session.continuation_token
            session.send("second")
            assert proxy.lost[-1] == ("POST", path)
            assert proxy.forwarded.count(("POST", path)) == 2
            assert session.continuation_token != token_before
            watcher.wait_for_idle()
            # The rotated token from the retried answer is the current one.
            session.send("third")
            assert watcher.wait_for_idle().reply == "three"

            log = direct.sessions.resume(session.session_id).history()
            texts = [e["data"]["text"] for e in log if e["type"] == "message.received"]
            assert texts == ["first", "second", "third"]
            assert [e["index"] for e in log] == list(range(len(log)))
    finally:
        proxy.close()


def test_approval_round_trip_approve_then_deny(folio: Folio, model: MockModel) -> None:
    model.push(
        {"toolCalls": [{"name": "deploy", "input": {"target": "prod"}}]},
        {"text": "Deployed."},
    )
    session = folio.sessions.create("deploy prod")
    events = session.events()
    requested = until(events, "action.approval_requested")
    assert requested["type"] == "action.approval_requested"
    assert (requested["data"]["tool"], requested["data"]["input"]) == ("deploy", {"target": "prod"})
    call_id = requested["data"]["callId"]
    session.approve(call_id)
    with pytest.raises(ConflictError) as second:
        session.approve(call_id)
    assert (second.value.code, second.value.status) == ("approval_resolved", 409)
    resolved = until(events, "action.approval_resolved")
    assert resolved["type"] == "action.approval_resolved"
    assert (resolved["data"]["decision"], resolved["data"]["by"]) == ("approve", "local")
    ran = until(events, "action.result")
    assert ran["type"] == "action.result" and not ran["data"]["isError"]
    assert "deployed" in str(ran["data"].get("output"))
    assert session.wait_for_idle().reply == "Deployed."

    model.push(
        {"toolCalls": [{"name": "deploy", "input": {"target": "eu"}}]},
        {"text": "Not deployed."},
    )
    session.send("and eu")
    requested = until(events, "action.approval_requested")
    assert requested["type"] == "action.approval_requested"
    session.deny(requested["data"]["callId"], "freeze week")
    denied = until(events, "action.result")
    events.close()
    assert denied["type"] == "action.result"
    assert (denied["data"].get("error"), denied["data"]["isError"]) == (
        "denied by local: freeze week",
        True,
    )
    assert session.wait_for_idle().reply == "Not deployed."


def test_a_stale_token_is_a_typed_409(folio: Folio, model: MockModel) -> None:
    model.push({"text": "a"}, {"text": "b"}, {"text": "c"})
    session = folio.sessions.create("start")
    stored = (session.session_id, session.continuation_token)
    session.wait_for_idle()
    other = folio.sessions.resume(*stored)
    session.send("from the first handle")
    session.wait_for_idle()
    with pytest.raises(StaleTokenError) as stale:
        other.send("from a stale copy")
    error = stale.value
    assert isinstance(error, ConflictError) and isinstance(error, FolioError)
    assert (error.code, error.status) == ("stale_continuation_token", 409)
    assert error.message and "token" in error.message
    # The owner can get a fresh token; the first handle's goes stale in turn.
    other.renew_token()
    other.send("with a renewed token")
    assert other.wait_for_idle().reply == "c"
    with pytest.raises(StaleTokenError):
        session.send("now stale")
    # A handle without a token says what to do.
    with pytest.raises(FolioError) as missing:
        folio.sessions.resume(session.session_id).send("x")
    assert missing.value.code == "missing_continuation_token"


def test_the_rest_of_the_surface(folio: Folio, server: Server, model: MockModel) -> None:
    model.push(*TAGGING)
    session = folio.sessions.create("tag a note", title="Surface")
    assert session.wait_for_idle().reply == "Tagged."

    # Lists and lookups.
    page = folio.sessions.list()
    assert [s["sessionId"] for s in page["data"]] == [session.session_id]
    assert folio.sessions.list(query="Surface")["data"][0]["title"] == "Surface"
    assert folio.sessions.list(query="nothing-like-it")["data"] == []
    assert folio.sessions.get(session.session_id)["status"] == "waiting"
    with pytest.raises(NotFoundError) as missing:
        folio.sessions.get("ses_01AAAAAAAAAAAAAAAAAAAAAAAA")
    assert (missing.value.code, missing.value.status) == ("not_found", 404)

    # Artifacts.
    records = folio.artifacts.list()["data"]
    assert [(r["kind"], r["key"], r["data"]) for r in records] == [("note", "n1", {"n": 1})]
    assert folio.artifacts.get(records[0]["id"]) == records[0]
    assert folio.artifacts.content(records[0]["id"]) == b"hello"

    # The agent description, direct tool calls, logs, schedules.
    agent = folio.agent()
    assert agent["agent"]["name"] == "Py Agent"
    assert any(t["name"] == "deploy" and t.get("needsApproval") for t in agent["tools"])
    direct = folio.call_tool("deploy", {"target": "staging"})
    assert not direct["isError"] and "deployed" in str(direct["result"])
    wrote = session.call_tool("Write", {"path": "note.txt", "contents": "direct\n"})
    assert not wrote["isError"], wrote
    assert any(session.session_id in line["message"] for line in folio.logs(since=0)["lines"])
    assert folio.schedules()["ok"] is True

    # Reminders.
    reminder = session.set_reminder("wake up", after="1h")
    assert reminder["message"] == "wake up" and reminder["sessionId"] == session.session_id
    assert [r["reminderId"] for r in session.reminders()] == [reminder["reminderId"]]
    # An event after the idle one (reminder.set) leaves the session idle.
    assert session.wait_for_idle().reply == "Tagged."
    session.cancel_reminder(reminder["reminderId"])
    assert session.reminders() == []

    # Fork at the first message: the fork runs its own first turn.
    first_message = next(e for e in session.history() if e["type"] == "message.received")
    model.push({"text": "forked answer"})
    fork = session.fork(first_message["index"], "say something else", title="Fork")
    assert fork.session_id != session.session_id
    assert fork.wait_for_idle().reply == "forked answer"
    fork_log = fork.history()
    assert fork_log[0]["type"] == "session.started"
    assert fork_log[0]["data"].get("forkedFrom") == {
        "sessionId": session.session_id, "atIndex": first_message["index"]}

    # Evals: save the session as a case, run `folio eval`, read the stored run.
    saved = session.save_eval_case("tagging")
    assert (saved["evalId"], saved["path"]) == (
        "from-session/tagging", "evals/from-session/tagging.eval.toml")
    model.push(*TAGGING)
    ran = server.eval("--filter", "tagging")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    runs = folio.evals.list()["data"]
    assert len(runs) == 1 and runs[0]["passed"] == 1
    run = folio.evals.get(runs[0]["runId"])
    assert run["runId"] == runs[0]["runId"] and run["cases"][0]["caseId"] == "tagging"
    with pytest.raises(NotFoundError):
        folio.evals.get("evr_NONE")

    # Stop (idle: a no-op), delete; the session is gone.
    session.stop()
    fork.delete()
    with pytest.raises(NotFoundError):
        fork.info()


def test_stop_and_coalesce(folio: Folio, model: MockModel) -> None:
    model.push({"text": LONG_REPLY, "chunkDelayMs": 100})
    session = folio.sessions.create("a long one")
    events = session.events()
    until(events, "message.appended")
    session.stop()
    stopped = until(events, "turn.failed")
    assert stopped["type"] == "turn.failed" and stopped["data"]["message"] == "turn interrupted"
    assert session.wait_for_idle().error == "turn interrupted"

    # Two messages to a busy session with coalesce: one follow-up turn for both.
    model.push({"text": LONG_REPLY, "chunkDelayMs": 30}, {"text": "both handled"})
    session.send("first")
    until(events, "message.appended")
    session.send("second", admission="coalesce")
    session.send("third", admission="coalesce")
    result = session.wait_for_idle()
    events.close()
    assert result.reply == "both handled", [(e["index"], e["type"], e["data"]) for e in session.history()]
    received = [e for e in session.history() if e["type"] == "message.received"]
    assert received[-1]["type"] == "message.received"
    assert received[-1]["data"].get("coalesced") == 2


def test_a_task_stream_ends_after_its_final_event(folio: Folio, model: MockModel) -> None:
    model.push({"text": "done"})
    session = folio.sessions.create("do it once", mode="task")
    events = list(session.events())
    assert events[-1]["type"] == "session.completed"
    assert [e["index"] for e in events] == list(range(len(events)))
    assert session.wait_for_idle().reply == "done"
    # From past the end: nothing, and no endless reconnecting.
    assert list(session.events(start=len(events))) == []
    with pytest.raises(ConflictError) as not_followable:
        session.send("more")
    assert not_followable.value.code == "session_not_followable"


def test_a_stream_opened_past_a_just_finished_task_ends(folio: Folio, model: MockModel) -> None:
    # The server may keep a stream that starts after a task's final event open when it is
    # opened right after that event (its status is not settled yet); the client must not.
    for _ in range(5):
        model.push(*TAGGING)
        session = folio.sessions.create("tag it", mode="task")
        for event in session.events():
            if event["type"] == "session.completed":
                assert list(session.events(start=event["index"] + 1)) == []
                break


def test_a_send_while_the_server_is_down_is_retried_until_it_is_back(
    folio: Folio, server: Server, model: MockModel
) -> None:
    model.push({"text": "before"}, {"text": "after"})
    session = folio.sessions.create("before the outage")
    session.wait_for_idle()
    server.kill()
    restart = threading.Timer(1.0, server.restart)
    restart.start()
    try:
        session.send("during the outage")  # refused connections, then accepted
    finally:
        restart.join()
    assert session.wait_for_idle().reply == "after"
    texts = [e["data"]["text"] for e in session.history() if e["type"] == "message.received"]
    assert texts == ["before the outage", "during the outage"]
