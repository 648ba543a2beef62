"""Threads and runs outlive the server that made them, read with langgraph-sdk's sync client.

Run by tests/agent_protocol.rs twice: `restart.py URL before` makes a thread with one run and
prints its id; `restart.py URL after THREAD_ID` runs against a new server on the same state
root. Any failed check raises (exit status 1) saying what differed.
"""

import sys

from langgraph_sdk import get_sync_client

URL, PHASE = sys.argv[1], sys.argv[2]
A = "t"


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def human(text):
    return {"messages": [{"role": "user", "content": text}]}


client = get_sync_client(url=URL)

if PHASE == "before":
    thread = client.threads.create(metadata={"case": "restart"})
    out = client.runs.wait(thread["thread_id"], A, input=human("remember me"))
    check(out["messages"][-1]["content"] == "before the restart", f"wait: {out}")
    print(thread["thread_id"])
    sys.exit(0)

tid = sys.argv[3]
thread = client.threads.get(tid)
check(thread["status"] == "idle" and thread["metadata"] == {"case": "restart"}, f"thread: {thread}")
found = client.threads.search(metadata={"case": "restart"})
check([t["thread_id"] for t in found] == [tid], f"search: {found}")
runs = client.runs.list(tid)
check([r["status"] for r in runs] == ["success"], f"runs: {runs}")
state = client.threads.get_state(tid)
check([m["content"] for m in state["values"]["messages"]] == ["remember me", "before the restart"],
      f"state: {state['values']}")
out = client.runs.wait(tid, A, input=human("still there?"))
check(out["messages"][-1]["content"] == "after the restart", f"wait: {out}")
check(len(out["messages"]) == 4, f"the conversation goes on: {out}")
runs = client.runs.list(tid)
check([r["status"] for r in runs] == ["success", "success"], f"runs: {runs}")

# History: the states the values stream showed, newest first, each with its parent.
history = client.threads.get_history(tid, limit=100)
counts = [len(s["values"]["messages"]) for s in history]
check(counts == [4, 3, 2, 1], f"history: {counts}")
check(history[0]["checkpoint"]["checkpoint_id"] == client.threads.get_state(tid)["checkpoint_id"],
      "the newest checkpoint is the state's")
for newer, older in zip(history, history[1:]):
    check(newer["parent_checkpoint"]["checkpoint_id"] == older["checkpoint"]["checkpoint_id"],
          f"parents: {newer['parent_checkpoint']} / {older['checkpoint']}")
check(history[-1]["parent_checkpoint"] is None and history[-1]["metadata"]["source"] == "input",
      f"first checkpoint: {history[-1]}")
page = client.threads.get_history(tid, limit=2, before=history[1]["checkpoint"])
check([len(s["values"]["messages"]) for s in page] == [2, 1], f"before: {page}")
old = client.threads.get_state(tid, checkpoint_id=history[2]["checkpoint"]["checkpoint_id"])
check([m["content"] for m in old["values"]["messages"]] == ["remember me", "before the restart"],
      f"state at a checkpoint: {old['values']}")
print("ok restart")
