"""Drives `folio serve`'s Agent Protocol routes with the real langgraph-sdk client.

Run by tests/agent_protocol.rs: argv[1] is the agent's base URL. The Rust test queued the mock
model's replies in the order the steps below ask for them. Prints `ok <step>` per step; any
failed check raises (exit status 1) saying what differed.
"""

import asyncio
import sys

import httpx
from langgraph_sdk import get_client

URL = sys.argv[1]
A = "t"  # the agent's slug: its assistant id


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def human(text):
    return {"messages": [{"role": "user", "content": text}]}


async def raw_frames(path, limit, headers=None):
    """The first `limit` SSE frames of GET `path` as (id, event, data) triples."""
    frames, frame = [], {}
    async with httpx.AsyncClient(base_url=URL, timeout=30) as http:
        async with http.stream("GET", path, headers=headers or {}) as res:
            check(res.status_code == 200, f"GET {path}: {res.status_code}")
            async for line in res.aiter_lines():
                if line == "":
                    if "event" in frame:
                        frames.append(frame)
                        frame = {}
                        if len(frames) >= limit:
                            break
                    continue
                key, _, value = line.partition(": ")
                frame[key] = value
    return frames


async def main():
    client = get_client(url=URL)

    # Assistants: one per agent, its id the slug.
    found = await client.assistants.search()
    check([a["assistant_id"] for a in found] == [A], f"assistants.search: {found}")
    check(await client.assistants.search(graph_id="other") == [], "graph_id filter")
    assistant = await client.assistants.get(A)
    check(assistant["graph_id"] == A, f"assistants.get: {assistant}")
    print("ok assistants")

    # A thread with no message yet.
    thread = await client.threads.create(metadata={"case": "stream"})
    tid = thread["thread_id"]
    check(thread["status"] == "idle", f"new thread: {thread}")
    check((await client.threads.get(tid))["thread_id"] == tid, "threads.get")
    searched = await client.threads.search(metadata={"case": "stream"})
    check([t["thread_id"] for t in searched] == [tid], f"threads.search: {searched}")
    print("ok threads")

    # Stream a run: the reply read from `values` and from `messages-tuple`.
    parts = [
        p
        async for p in client.runs.stream(
            tid, A, input=human("hi"),
            stream_mode=["values", "messages-tuple", "updates", "events"],
        )
    ]
    kinds = [p.event for p in parts]
    check(kinds[0] == "metadata", f"first event: {kinds}")
    values = [p.data for p in parts if p.event == "values"]
    check(values[-1]["messages"][-1]["type"] == "ai", f"values: {values[-1]}")
    check(values[-1]["messages"][-1]["content"] == "hello from folio", f"values: {values[-1]}")
    check(values[-1]["messages"][0] ["type"] == "human", f"values: {values[-1]}")
    tuples = [p.data for p in parts if p.event == "messages"]
    text = "".join(chunk["content"] for chunk, meta in tuples if chunk["type"] == "AIMessageChunk")
    check(text == "hello from folio", f"messages-tuple text: {text!r}")
    check(all(meta["langgraph_node"] for _, meta in tuples), "messages-tuple metadata")
    check(any(p.event == "updates" and "agent" in p.data for p in parts), f"updates: {kinds}")
    check(any(p.event == "events" and p.data["event"] == "on_chat_model_stream" for p in parts),
          "events mode")
    print("ok stream")

    # wait: the final values.
    out = await client.runs.wait(tid, A, input=human("again"))
    check(out["messages"][-1]["content"] == "second answer", f"wait: {out}")
    state = await client.threads.get_state(tid)
    check([m["type"] for m in state["values"]["messages"]] == ["human", "ai", "human", "ai"],
          f"state: {state['values']}")
    runs = await client.runs.list(tid)
    check([r["status"] for r in runs] == ["success", "success"], f"runs: {runs}")
    history = await client.threads.get_history(tid)
    check(len(history) >= 1, "history")
    print("ok wait")

    # An approval is an interrupt; resume with approve.
    thread = await client.threads.create()
    tid = thread["thread_id"]
    out = await client.runs.wait(tid, A, input=human("ship it"))
    check("__interrupt__" in out, f"interrupted wait: {out}")
    interrupt = out["__interrupt__"][0]
    check(interrupt["value"]["tool"] == "Deploy", f"interrupt: {interrupt}")
    runs = await client.runs.list(tid)
    check(runs[0]["status"] == "interrupted", f"interrupted run: {runs}")
    state = await client.threads.get_state(tid)
    check(state["tasks"][0]["interrupts"][0]["id"] == interrupt["id"], f"state tasks: {state}")
    check(state["interrupts"][0]["value"]["input"] == {"target": "prod"}, f"state: {state}")
    check((await client.threads.get(tid))["status"] == "interrupted", "thread status")
    out = await client.runs.wait(tid, A, command={"resume": {"decision": "approve"}})
    tool = [m for m in out["messages"] if m["type"] == "tool"]
    check(tool and tool[0]["content"] == "deployed prod", f"after approve: {out}")
    check(out["messages"][-1]["content"] == "deployed it", f"after approve: {out}")
    check("__interrupt__" not in out, "resumed run ended")
    state = await client.threads.get_state(tid)
    check(state["tasks"] == [] and state["next"] == [], f"state after resume: {state}")
    print("ok interrupt")

    # Double-texting: reject answers 409, enqueue queues behind the running turn.
    thread = await client.threads.create()
    tid = thread["thread_id"]
    first = await client.runs.create(tid, A, input=human("slow one"))
    try:
        await client.runs.create(tid, A, input=human("rejected"), multitask_strategy="reject")
        raise AssertionError("a second run under reject was accepted")
    except httpx.HTTPStatusError as err:
        check(err.response.status_code == 409, f"reject: {err.response.status_code}")
    queued = await client.runs.create(tid, A, input=human("queued one"),
                                      multitask_strategy="enqueue")
    out = await client.runs.join(tid, first["run_id"])
    check(out["messages"][-1]["content"] == "slow reply", f"first run: {out}")
    out = await client.runs.join(tid, queued["run_id"])
    check(out["messages"][-1]["content"] == "queued reply", f"queued run: {out}")
    contents = [m["content"] for m in out["messages"] if m["type"] == "human"]
    check(contents == ["slow one", "queued one"], f"humans: {contents}")
    statuses = {r["run_id"]: r["status"] for r in await client.runs.list(tid)}
    check(statuses == {first["run_id"]: "success", queued["run_id"]: "success"}, f"{statuses}")
    print("ok double-text")

    # join_stream: read part of a run, drop the connection, reconnect with Last-Event-ID.
    thread = await client.threads.create()
    tid = thread["thread_id"]
    run = await client.runs.create(tid, A, input=human("count"), stream_mode=["messages-tuple"])
    path = f"/threads/{tid}/runs/{run['run_id']}/stream"
    head = await raw_frames(path, 4)
    check(head[0]["event"] == "metadata", f"head: {head}")
    import json
    seen = "".join(json.loads(f["data"])[0]["content"] for f in head if f["event"] == "messages")
    rest = [
        p
        async for p in client.runs.join_stream(tid, run["run_id"], last_event_id=head[-1]["id"])
    ]
    check(all(p.event != "metadata" for p in rest), f"replayed metadata: {rest[:2]}")
    tail = "".join(p.data[0]["content"] for p in rest if p.event == "messages")
    full = "one two three four five six seven eight"
    check(seen and seen + tail == full, f"reconnect: {seen!r} + {tail!r}")
    print("ok join_stream")

    # Stateless runs, and deleting a thread.
    out = await client.runs.wait(None, A, input=human("stateless"))
    check(out["messages"][-1]["content"] == "stateless answer", f"stateless: {out}")
    await client.threads.delete(tid)
    try:
        await client.threads.get(tid)
        raise AssertionError("a deleted thread was found")
    except httpx.HTTPStatusError as err:
        check(err.response.status_code == 404, "deleted thread")
    print("ok stateless")

    # Double-texting with interrupt preempts the running turn; cancel stops one.
    thread = await client.threads.create()
    tid = thread["thread_id"]
    first = await client.runs.create(tid, A, input=human("long task"))
    # The first run must have asked the model (taking the slow reply) before the second comes:
    # wait for it to run, then give its model request a moment on a loaded machine.
    for _ in range(200):
        if (await client.runs.get(tid, first["run_id"]))["status"] == "running":
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(1.0)
    second = await client.runs.create(tid, A, input=human("never mind"),
                                      multitask_strategy="interrupt")
    out = await client.runs.join(tid, second["run_id"])
    check(out["messages"][-1]["content"] == "preempting reply", f"interrupting run: {out}")
    statuses = {r["run_id"]: r["status"] for r in await client.runs.list(tid)}
    check(statuses == {first["run_id"]: "interrupted", second["run_id"]: "success"}, f"{statuses}")
    third = await client.runs.create(tid, A, input=human("stop me"))
    await client.runs.cancel(tid, third["run_id"], wait=True)
    check((await client.runs.get(tid, third["run_id"]))["status"] == "interrupted", "cancel")
    try:
        await client.runs.cancel(tid, third["run_id"])
        raise AssertionError("cancelling an ended run was accepted")
    except httpx.HTTPStatusError as err:
        check(err.response.status_code == 409, f"cancel ended run: {err.response.status_code}")
    print("ok interrupt-strategy")

    # A streamed interrupt (updates carry __interrupt__), resumed with deny and a reason.
    thread = await client.threads.create()
    tid = thread["thread_id"]
    parts = [
        p
        async for p in client.runs.stream(
            tid, A, input=human("ship it"), stream_mode=["updates", "messages", "values"]
        )
    ]
    kinds = [p.event for p in parts]
    check(kinds[0] == "metadata" and kinds[-1] == "end", f"interrupt stream: {kinds}")
    interrupts = [p.data["__interrupt__"] for p in parts
                  if p.event == "updates" and "__interrupt__" in p.data]
    check(interrupts and interrupts[0][0]["value"]["tool"] == "Deploy", f"updates: {kinds}")
    check("messages/metadata" in kinds and "messages/complete" in kinds, f"messages: {kinds}")
    check((await client.runs.list(tid))[0]["status"] == "interrupted", "streamed interrupt")
    parts = [
        p
        async for p in client.runs.stream(
            tid, A, command={"resume": {"decision": "deny", "reason": "not today"}},
            stream_mode="values",
        )
    ]
    final = [p.data for p in parts if p.event == "values"][-1]
    tool = [m for m in final["messages"] if m["type"] == "tool"][-1]
    check(tool["status"] == "error" and "not today" in tool["content"], f"denied: {tool}")
    check(final["messages"][-1]["content"] == "not deployed", f"after deny: {final}")
    print("ok deny")


asyncio.run(main())
