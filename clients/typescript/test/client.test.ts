// The client against a real `folio serve` and `folio-mock-model`.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { Folio, FolioError, type EventOf, type FolioEvent, type Session, type SessionState } from "@folio/client";
import { emptyConversation, reduceEvent } from "@folio/client/react";
import { agentDir, cleanup, packageDir, DEPLOY_TOOL, DroppingProxy, eventually, folioBin, folioEnv, MockModel, Server } from "./support.js";

const ECHO_TOOL = `description = "Echo the input."
command = ["cat"]

[input_schema]
type = "object"
required = ["text"]
properties.text = { type = "string" }
`;

const ARTIFACTS = `agent_tool = true
[kinds.note]
description = "A note"
`;

let model: MockModel;
let server: Server;
let folio: Folio;
let root: string;
const tokens: SessionState[] = [];

before(async () => {
  model = await MockModel.start();
  const agent = agentDir({
    "agent/tools/deploy.toml": DEPLOY_TOOL,
    "agent/tools/echo.toml": ECHO_TOOL,
    "agent/artifacts.toml": ARTIFACTS,
  });
  root = agent.root;
  server = await Server.start(agent.dir, model);
  folio = new Folio({ baseUrl: server.agentUrl, onToken: (state) => tokens.push(state) });
});

after(async () => {
  await server?.stop();
  model?.stop();
  cleanup(root, server?.stateRoot ?? "");
});

/** Events of `session` from `from` until the first one `until` accepts (included). */
async function collect(session: Session, until: (e: FolioEvent) => boolean, from = 0): Promise<FolioEvent[]> {
  const events: FolioEvent[] = [];
  for await (const event of session.events({ from })) {
    events.push(event);
    if (until(event)) break;
  }
  return events;
}

/** The first event of `type` in `events`. */
function first<T extends FolioEvent["type"]>(events: FolioEvent[], type: T): EventOf<T> {
  const found = events.find((e) => e.type === type);
  assert.ok(found, `no ${type} in ${events.map((e) => e.type).join(", ")}`);
  return found as EventOf<T>;
}

function assertGapless(events: FolioEvent[], from = 0): void {
  assert.deepEqual(
    events.map((e) => e.index),
    events.map((_, i) => from + i),
    "indexes are consecutive, without gap or repeat",
  );
}

describe("sessions", () => {
  test("create, stream, send (token rotates), waitForIdle", async () => {
    await model.push({ text: "Hello there." }, { text: "Second answer." });
    const session = await folio.sessions.create({ message: "hi", title: "ts-basic" });
    assert.match(session.sessionId, /^ses_/);
    const firstToken = session.continuationToken;
    assert.match(firstToken ?? "", /^http:/);
    assert.deepEqual(tokens.at(-1), { sessionId: session.sessionId, continuationToken: firstToken });

    const idle = await session.waitForIdle();
    assert.deepEqual([idle.status, idle.reply, idle.error], ["waiting", "Hello there.", null]);

    const accepted = await session.send("again", { admission: "coalesce" });
    assert.equal(accepted.sessionId, session.sessionId);
    assert.notEqual(session.continuationToken, firstToken, "the token rotated");
    assert.equal(session.continuationToken, accepted.continuationToken);
    assert.deepEqual(tokens.at(-1), session.state, "onToken saw the rotated token");
    const second = await session.waitForIdle();
    assert.equal(second.reply, "Second answer.");
    assert.ok(second.index > idle.index);

    const events = await collect(session, (e) => e.index === second.index);
    assertGapless(events);
    assert.deepEqual(
      events.filter((e) => e.type === "message.received").map((e) => (e as EventOf<"message.received">).data.text),
      ["hi", "again"],
    );
    assert.deepEqual(await session.history(), events, "the dump equals the stream");

    // events({from}) starts where asked.
    const tail = await collect(session, (e) => e.index === second.index, 3);
    assert.equal(tail[0].index, 3);
    assertGapless(tail, 3);

    // The summary follows the log (session.json takes a turn's end just after its event).
    const summary = await eventually("the summary's status", async () => {
      const s = await session.get();
      return s.status === "waiting" ? s : undefined;
    });
    assert.equal(summary.turns, 2);

    // A resumed handle (stored state) continues the conversation.
    await model.push({ text: "Third." });
    const again = folio.sessions.resume(session.sessionId, session.continuationToken);
    await again.send("third");
    assert.equal((await again.waitForIdle()).reply, "Third.");

    // Sends on one handle run in order: neither presents a token the other made stale.
    await model.push({ text: "A." }, { text: "B." });
    await Promise.all([again.send("a", { admission: "coalesce" }), again.send("b", { admission: "coalesce" })]);
    assert.equal((await again.waitForIdle()).reply, "B.");
  });

  test("a stale continuation token is a typed 409", async () => {
    await model.push({ text: "one" }, { text: "two" });
    const session = await folio.sessions.create({ message: "one" });
    const stale = session.continuationToken;
    await session.waitForIdle();
    await session.send("two");
    await session.waitForIdle();
    const old = folio.sessions.resume(session.sessionId, stale);
    await assert.rejects(old.send("from an old tab"), (err: unknown) => {
      assert.ok(err instanceof FolioError);
      assert.equal(err.code, "stale_continuation_token");
      assert.equal(err.status, 409);
      assert.equal(err.retryable, false);
      assert.ok(err.message.length > 0);
      return true;
    });
    // The owner can get a fresh token instead; the one before goes stale.
    const before = session.continuationToken;
    const fresh = await old.refreshToken();
    assert.notEqual(fresh, before);
    await assert.rejects(session.send("stale now"), { code: "stale_continuation_token", status: 409 });

    await assert.rejects(folio.sessions.get("ses_01AAAAAAAAAAAAAAAAAAAAAAAA"), { name: "FolioError", code: "not_found", status: 404 });
    await assert.rejects(folio.sessions.resume(session.sessionId).send("no token"), /no continuation token/);
  });

  test("a task session's stream ends by itself; it takes no follow-up", async () => {
    await model.push({ text: "Task done." });
    const task = await folio.sessions.create({ message: "do it", mode: "task" });
    const events: FolioEvent[] = [];
    for await (const event of task.events()) events.push(event);
    assert.equal(events.at(-1)?.type, "session.completed");
    assertGapless(events);
    assert.deepEqual((await task.waitForIdle()).status, "completed");
    const past: FolioEvent[] = [];
    for await (const event of task.events({ from: events.length })) past.push(event);
    assert.deepEqual(past, [], "a stream from past a finished task's end ends at once");
    await assert.rejects(task.send("more"), { code: "session_not_followable", status: 409 });
  });

  test("stop interrupts the running turn", async () => {
    await model.push({ text: "a slow answer ".repeat(40), chunkDelayMs: 100 });
    const session = await folio.sessions.create({ message: "go slowly" });
    await collect(session, (e) => e.type === "message.appended");
    await session.stop();
    const idle = await session.waitForIdle();
    assert.deepEqual([idle.status, idle.reply, idle.error], ["waiting", null, "turn interrupted"]);
  });
});

describe("approvals", () => {
  test("approve runs the call; deny refuses it; a second decision is a typed 409", async () => {
    await model.push({ toolCalls: [{ name: "deploy", input: { target: "prod" } }] }, { text: "Deployed." });
    const session = await folio.sessions.create({ message: "deploy prod" });
    const asked = first(await collect(session, (e) => e.type === "action.approval_requested"), "action.approval_requested");
    assert.equal(asked.data.tool, "deploy");
    await session.approve(asked.data.callId);
    assert.equal((await session.waitForIdle()).reply, "Deployed.");
    let events = await session.history();
    const approved = first(events, "action.approval_resolved");
    assert.deepEqual([approved.data.callId, approved.data.decision], [asked.data.callId, "approve"]);
    const ran = first(events, "action.result");
    assert.equal(ran.data.isError, false);
    assert.match(JSON.stringify(ran.data.output), /deployed/);
    await assert.rejects(session.deny(asked.data.callId), { code: "approval_resolved", status: 409 });

    await model.push({ toolCalls: [{ name: "deploy", input: { target: "staging" } }] }, { text: "Not deployed." });
    await session.send("deploy staging");
    const from = events.length;
    const asked2 = first(await collect(session, (e) => e.type === "action.approval_requested", from), "action.approval_requested");
    await session.deny(asked2.data.callId, "not today");
    assert.equal((await session.waitForIdle()).reply, "Not deployed.");
    events = (await session.history()).slice(from);
    const denied = first(events, "action.approval_resolved");
    assert.deepEqual([denied.data.decision, denied.data.reason], ["deny", "not today"]);
    const refused = first(events, "action.result");
    assert.equal(refused.data.isError, true);

    // The React hook's reducer rebuilds the conversation from these events.
    const state = (await session.history()).reduce(reduceEvent, emptyConversation);
    assert.deepEqual(
      state.messages.map((m) => [m.role, m.text]),
      [
        ["user", "deploy prod"],
        ["assistant", "Deployed."],
        ["user", "deploy staging"],
        ["assistant", "Not deployed."],
      ],
    );
    assert.deepEqual(
      state.toolCalls.map((c) => [c.tool, c.status, c.isError]),
      [
        ["deploy", "done", false],
        ["deploy", "done", true],
      ],
    );
    assert.deepEqual([state.status, state.pendingApprovals], ["waiting", []]);
  });
});

describe("retries and resume", () => {
  test("a send whose answer is lost is retried with its key and recorded once", async () => {
    const proxy = await new DroppingProxy(server.url).start();
    try {
      const client = new Folio({ baseUrl: `${proxy.url}/ops` });
      await model.push({ text: "first" }, { text: "second" }, { text: "third" });
      // The create's answer is lost too: the retry gets the same session, not a second one.
      proxy.dropNext((req) => req.method === "POST" && req.url === "/ops/v1/session");
      const session = await client.sessions.create({ message: "create once", title: "ts-lost-create" });
      assert.equal(proxy.dropped, 1);
      assert.equal((await folio.sessions.list({ q: "ts-lost-create" })).data.length, 1, "one session");
      await session.waitForIdle();

      const token = session.continuationToken;
      proxy.dropNext((req) => req.method === "POST" && req.url === `/ops/v1/session/${session.sessionId}`);
      await session.send("only once");
      assert.equal(proxy.dropped, 2, "the first answer was dropped");
      assert.notEqual(session.continuationToken, token);
      assert.equal((await session.waitForIdle()).reply, "second");
      const received = (await session.history()).filter((e) => e.type === "message.received");
      assert.deepEqual(
        received.map((e) => (e as EventOf<"message.received">).data.text),
        ["create once", "only once"],
        "each message is recorded once",
      );
      // The token the retry got is the current one.
      await session.send("after the retry");
      assert.equal((await session.waitForIdle()).reply, "third");
    } finally {
      await proxy.stop();
    }
  });

  test("a stream cut by a killed server resumes after its restart without losing or repeating an event", async () => {
    await model.push({ text: "word ".repeat(60), chunkDelayMs: 50 });
    const session = await folio.sessions.create({ message: "a long answer" });
    const seen: FolioEvent[] = [];
    let resolveAppended = () => {};
    const appended = new Promise<void>((resolve) => (resolveAppended = resolve));
    const stop = new AbortController();
    const reading = (async () => {
      for await (const event of session.events({ signal: stop.signal })) {
        seen.push(event);
        if (event.type === "message.appended") resolveAppended();
      }
    })();
    await appended; // mid-turn
    await server.kill();
    const before = seen.length;
    await new Promise((r) => setTimeout(r, 300)); // the client is reconnecting meanwhile
    await server.restart();

    // After the restart the cut turn is recorded as failed; the conversation goes on.
    const idle = await eventually("the cut turn's end", () => {
      const failed = seen.find((e) => e.type === "turn.failed");
      return failed && seen.some((e) => e.type === "session.waiting" && e.index > failed.index) ? failed : undefined;
    });
    assert.equal((idle as EventOf<"turn.failed">).data.message, "server restarted");
    await model.push({ text: "back again" });
    await session.send("are you back?");
    const result = await session.waitForIdle();
    assert.equal(result.reply, "back again");
    await eventually("the follow-up's events", () => (seen.at(-1)?.index === result.index ? true : undefined));
    stop.abort();
    await reading;

    assert.ok(before > 0 && seen.length > before, "events arrived before the kill and after the restart");
    assertGapless(seen);
    assert.deepEqual(
      seen.map((e) => [e.index, e.type]),
      server.storedLog(session.sessionId).map((e) => [e.index, e.type]),
      "the client saw exactly the server's log",
    );
  });
});

describe("the rest of the surface", () => {
  test("list, fork, reminders, artifacts, tools, evals, agent, logs, schedules", async () => {
    await model.push(
      { toolCalls: [{ name: "tag_artifact", input: { kind: "note", key: "n1", title: "First note", data: { n: 1 }, contents: "hello" } }] },
      { text: "Tagged." },
    );
    const session = await folio.sessions.create({ message: "tag a note", title: "ts-surface" });
    await session.waitForIdle();

    const page = await folio.sessions.list({ q: "ts-surface" });
    assert.deepEqual(page.data.map((s) => s.sessionId), [session.sessionId]);
    const limited = await folio.sessions.list({ limit: 1 });
    assert.equal(limited.data.length, 1);
    assert.ok(limited.nextCursor, "more than one session: a cursor");
    const next = await folio.sessions.list({ limit: 1, cursor: limited.nextCursor ?? undefined });
    assert.notEqual(next.data[0].sessionId, limited.data[0].sessionId);

    // Fork at the first message, with another text.
    const events = await session.history();
    const firstMessage = first(events, "message.received");
    await model.push({ text: "Forked answer." });
    const fork = await session.fork({ atIndex: firstMessage.index, message: "say something else", title: "ts-fork" });
    assert.notEqual(fork.sessionId, session.sessionId);
    assert.ok(fork.continuationToken);
    assert.equal((await fork.waitForIdle()).reply, "Forked answer.");
    const forkStart = first(await fork.history(), "session.started");
    assert.equal((forkStart.data as { forkedFrom?: { sessionId: string } }).forkedFrom?.sessionId, session.sessionId);

    // Reminders.
    const reminder = await session.reminders.set({ message: "ping me", in: "1h" });
    assert.match(reminder.reminderId, /^rem_/);
    assert.deepEqual((await session.reminders.list()).data.map((r) => r.reminderId), [reminder.reminderId]);
    await session.reminders.cancel(reminder.reminderId);
    assert.deepEqual((await session.reminders.list()).data, []);

    // Artifacts (tagged by the model above).
    const artifacts = await folio.artifacts.list();
    const note = artifacts.data.find((a) => a.key === "n1");
    assert.ok(note, JSON.stringify(artifacts));
    assert.equal((await folio.artifacts.get(note.id)).title, "First note");
    assert.equal(await (await folio.artifacts.content(note.id)).text(), "hello");
    await assert.rejects(folio.artifacts.get("art_01AAAAAAAAAAAAAAAAAAAAAAAA"), { code: "not_found", status: 404 });

    // Direct tool calls: an authored tool unscoped, a built-in one in the session.
    const echoed = await folio.callTool("echo", { text: "hi" });
    assert.equal(echoed.isError, false);
    assert.match(JSON.stringify(echoed.result), /hi/);
    const listed = await session.callTool("LS", { path: "." });
    assert.equal(listed.isError, false, JSON.stringify(listed));

    // The agent description.
    const agent = await folio.agent();
    assert.equal(agent.agent.name, "ops");
    const toolNames = agent.tools.map((t) => t.name);
    for (const name of ["deploy", "echo", "tag_artifact"]) assert.ok(toolNames.includes(name), `${name} in ${toolNames}`);

    // Evals: save the session as a case, run it with `folio eval`, read the run back.
    const saved = await session.saveEvalCase("from-ts");
    assert.equal(saved.evalId, "from-session/from-ts");
    assert.ok(existsSync(path.join(server.dir, saved.path)), saved.path);
    await assert.rejects(session.saveEvalCase("from-ts"), { code: "already_exists", status: 409 });
    const before = (await folio.evals.list()).data.length;
    await model.push(
      { toolCalls: [{ name: "tag_artifact", input: { kind: "note", key: "n1", title: "First note", data: { n: 1 }, contents: "hello" } }] },
      { text: "Tagged." },
    );
    const run = spawnSync(
      folioBin(),
      ["eval", "--dir", server.dir, "--state-root", server.stateRoot, "--model", "openai:mock", "--json"],
      { env: folioEnv(model), encoding: "utf8" },
    );
    assert.ok(run.status === 0 || run.status === 1, `folio eval failed to run: ${run.stderr}`);
    const runs = await folio.evals.list();
    assert.equal(runs.data.length, before + 1, `folio eval stored a run: ${run.stdout}\n${run.stderr}`);
    const stored = await folio.evals.get(runs.data[0].runId);
    assert.equal(stored.runId, runs.data[0].runId);
    await assert.rejects(folio.evals.get("evr_missing"), { code: "not_found", status: 404 });

    // Logs and schedules answer.
    assert.ok(Array.isArray((await folio.logs()).lines));
    assert.ok((await folio.schedules()).ok);

    // Delete.
    await fork.delete();
    await assert.rejects(fork.get(), { code: "not_found", status: 404 });
  });

  test("the README's quickstart runs", async () => {
    await model.push({ text: "Steam over the cup" }, { text: "Dark roast at dawn" }, { text: "Rain on the river" });
    const run = spawnSync(process.execPath, [path.join(packageDir, "examples/quickstart.mjs")], {
      env: { ...process.env, FOLIO_URL: server.agentUrl },
      encoding: "utf8",
      timeout: 30_000,
    });
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /^session ses_\w+\nSteam over the cup\nreply: Dark roast at dawn\nresumed: Rain on the river\nerror: 409 stale_continuation_token\n$/);
  });

  test("an unreachable server is a retryable network error", async () => {
    const client = new Folio({ baseUrl: "http://127.0.0.1:9/ops", retryTimeoutMs: 300 });
    await assert.rejects(client.agent(), (err: unknown) => {
      assert.ok(err instanceof FolioError);
      assert.deepEqual([err.code, err.status, err.retryable], ["network_error", 0, true]);
      assert.match(err.message, /is folio serve running/);
      return true;
    });
  });
});
