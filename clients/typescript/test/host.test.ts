// The host helper (`@folio/client/host`) inside an authored Node tool that a real `folio serve`
// runs for a session (the model is `folio-mock-model`): a principal-scope counter with
// compare-and-set, files, a reminder, a metric and a log line, each recorded as
// `action.host_call`; the session's call budget; the README's example; refused tokens; and the
// helper outside such a process.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, describe, test } from "node:test";
import { Folio, type EventOf, type FolioEvent } from "@folio/client";
import { host, HostError } from "@folio/client/host";
import { agentDir, cleanup, MockModel, packageDir, Server } from "./support.js";

const COUNTER_TOOL = `description = "Bump this principal's counter and leave a note."
command = ["node", "counter.mjs"]

[input_schema]
type = "object"
required = ["note"]
properties.note = { type = "string" }
`;

/** The tool: reads `{input, context}` on stdin, calls the host API, prints one JSON object. */
const COUNTER_SCRIPT = () => `import { host, HostError } from ${JSON.stringify(HOST_MODULE)};

let text = "";
for await (const chunk of process.stdin) text += chunk;
const { input } = JSON.parse(text); // {input, context}

const me = await host.whoami();

// Compare-and-set: read, write over the version read, retry on a conflict.
let written;
for (let attempt = 0; !written; attempt++) {
  const entry = await host.kv.get("counter", { scope: "principal" });
  try {
    written = await host.kv.put("counter", (entry?.value ?? 0) + 1, { scope: "principal", ifVersion: entry?.version ?? 0 });
  } catch (err) {
    if (!(err instanceof HostError) || err.code !== "version_conflict" || attempt > 5) throw err;
  }
}

// A write over a version that is not the entry's is refused, and writes nothing.
let conflict = null;
try {
  await host.kv.put("counter", -1, { scope: "principal", ifVersion: written.version + 10 });
} catch (err) {
  conflict = { name: err.name, code: err.code, status: err.status };
}
const after = await host.kv.get("counter", { scope: "principal" });

await host.files.write("notes/" + input.note + ".md", "count is " + written.value + "\\n");
const read = await host.files.read("notes/" + input.note + ".md");
let escape = null;
try {
  await host.files.read("../../../../../etc/passwd");
} catch (err) {
  escape = err.code;
}
const reminder = await host.reminders.set("check the counter", { in: "1h" });
await host.telemetry.metric("app.counter.bumps", 1, { unit: "{bump}" });
await host.telemetry.log("counter is " + written.value + " (" + input.note + ")");

const url = process.env.FOLIO_HOST_URL;
const token = process.env.FOLIO_HOST_TOKEN;
console.log(JSON.stringify({ me, written, conflict, after, read, escape, reminder, url, token }));
`;

const HOST_MODULE = pathToFileURL(path.join(packageDir, "dist/host.js")).href;

/** The README's host example (the code block of its "Host API helpers" section), importing the build. */
function readmeHostExample(): string {
  const readme = readFileSync(path.join(packageDir, "README.md"), "utf8");
  const section = readme.split("## Host API helpers")[1]?.split("\n## ")[0] ?? "";
  const code = section.match(/```js\n([\s\S]*?)```/)?.[1];
  assert.ok(code && code.includes('from "@folio/client/host"'), "the README has a host example");
  return code.replace('"@folio/client/host"', JSON.stringify(HOST_MODULE));
}

const BUMP_TOOL = `description = "The README's host example."
command = ["node", "bump.mjs"]

[input_schema]
type = "object"
`;

const BURST_TOOL = `description = "Call the host API until the session's budget runs out."
command = ["node", "burst.mjs"]

[input_schema]
type = "object"
`;

const BURST_SCRIPT = () => `import { host, HostError } from ${JSON.stringify(HOST_MODULE)};
let calls = 0;
let refused = null;
while (calls < 2000 && !refused) {
  try {
    await host.whoami();
    calls++;
  } catch (err) {
    if (!(err instanceof HostError)) throw err;
    refused = { code: err.code, status: err.status, retryAfter: err.retryAfter };
  }
}
console.log(JSON.stringify({ calls, refused }));
`;

let model: MockModel;
let server: Server;
let folio: Folio;
let root: string;
/** The first counter call's output (its host URL and token, for the replay test). */
let firstCall: CounterOutput | undefined;

before(async () => {
  model = await MockModel.start();
  const agent = agentDir({
    "agent/tools/counter.toml": COUNTER_TOOL,
    "agent/tools/counter.mjs": COUNTER_SCRIPT(),
    "agent/tools/burst.toml": BURST_TOOL,
    "agent/tools/burst.mjs": BURST_SCRIPT(),
    "agent/tools/bump.toml": BUMP_TOOL,
    "agent/tools/bump.mjs": readmeHostExample(),
  });
  root = agent.root;
  server = await Server.start(agent.dir, model);
  folio = new Folio({ baseUrl: server.agentUrl });
});

after(async () => {
  await server?.stop();
  model?.stop();
  cleanup(root, server?.stateRoot ?? "");
});

/** The session's stored events, read as NDJSON from `GET /v1/session/<id>/events`. */
async function storedEvents(sessionId: string): Promise<FolioEvent[]> {
  const res = await fetch(`${server.agentUrl}/v1/session/${sessionId}/events`);
  assert.equal(res.status, 200);
  return (await res.text())
    .split("\n")
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as FolioEvent);
}

function ofType<T extends FolioEvent["type"]>(events: FolioEvent[], type: T): EventOf<T>[] {
  return events.filter((e) => e.type === type) as EventOf<T>[];
}

interface CounterOutput {
  me: { sessionId: string; callId: string; principal: string; agent: string };
  written: { key: string; value: number; version: number };
  conflict: { name: string; code: string; status: number } | null;
  after: { value: number; version: number };
  read: string;
  escape: string | null;
  reminder: { reminderId: string; message: string; sessionId: string };
  url: string;
  token: string;
}

/** Runs one session whose model calls `tool` once; answers its output and the session's events. */
async function runTool<T>(tool: string, input: unknown): Promise<{ sessionId: string; out: T; events: FolioEvent[] }> {
  await model.push({ toolCalls: [{ name: tool, input }] }, { text: "done" });
  const session = await folio.sessions.create({ message: `run ${tool}` });
  const idle = await session.waitForIdle();
  assert.equal(idle.reply, "done", idle.error ?? "");
  const events = await storedEvents(session.sessionId);
  const results = ofType(events, "action.result").filter((e) => e.data.tool === tool);
  assert.equal(results.length, 1);
  assert.equal(results[0].data.isError, false, JSON.stringify(results[0].data));
  return { sessionId: session.sessionId, out: results[0].data.output as T, events };
}

const countOnce = (note: string) => runTool<CounterOutput>("counter", { note });

describe("host API helper", () => {
  test("a Node tool keeps a principal counter, writes files, sets a reminder, records telemetry", async () => {
    const first = await countOnce("first");
    const second = await countOnce("second");
    assert.notEqual(first.sessionId, second.sessionId);
    assert.notEqual(first.out.token, second.out.token, "each call gets its own token");
    firstCall = first.out;

    for (const [run, { sessionId, out, events }] of [first, second].entries()) {
      const count = run + 1;
      const callId = ofType(events, "action.result")[0].data.callId;
      // Who the token acts for: this session and call; both sessions are the same principal's.
      assert.equal(out.me.sessionId, sessionId);
      assert.equal(out.me.callId, callId);
      assert.equal(out.me.principal, first.out.me.principal);
      assert.equal(out.me.agent, "ops");
      // The credentials: a Unix socket under the state root (nothing listens on a port), a fresh token per call.
      assert.ok(out.url.startsWith(`unix:${server.stateRoot}`), out.url);
      assert.match(out.token, /^fht_/);
      // The counter went 1 then 2 across the sessions; a stale compare-and-set wrote nothing.
      assert.deepEqual([out.written.key, out.written.value, out.written.version], ["counter", count, count]);
      assert.deepEqual(out.conflict, { name: "HostError", code: "version_conflict", status: 409 });
      assert.deepEqual([out.after.value, out.after.version], [count, count]);
      // Files: written and read back through the session's FileSystem; an escape is refused.
      assert.match(out.read, new RegExp(`count is ${count}`));
      assert.equal(out.escape, "invalid_request");
      // The reminder is this session's, listed by the HTTP API and recorded as reminder.set.
      assert.equal(out.reminder.sessionId, sessionId);
      assert.equal(out.reminder.message, "check the counter");
      assert.deepEqual(
        ofType(events, "reminder.set").map((e) => e.data.reminderId),
        [out.reminder.reminderId],
      );
      const listed = (await (await fetch(`${server.agentUrl}/v1/session/${sessionId}/reminders`)).json()) as {
        data: { reminderId: string }[];
      };
      assert.deepEqual(
        listed.data.map((r) => r.reminderId),
        [out.reminder.reminderId],
      );

      // Every call is in the session's log as action.host_call, inside the tool call, in order.
      const calls = ofType(events, "action.host_call");
      assert.deepEqual(
        calls.map((e) => e.data.operation),
        [
          "kv.get",
          "kv.put",
          "kv.put",
          "kv.get",
          "files.write",
          "files.read",
          "files.read",
          "reminders.set",
          "telemetry.metric",
          "telemetry.log",
        ],
      );
      assert.ok(calls.every((e) => e.data.callId === callId));
      const turn = ofType(events, "action.result")[0].turnId;
      assert.ok(calls.every((e) => e.turnId === turn), "recorded in the tool call's turn");
      // Refused calls are recorded with their error; the others without one.
      assert.deepEqual(
        calls.map((e) => Boolean(e.data.error)),
        [false, false, true, false, false, false, true, false, false, false],
      );
      // The detail names the key and scope, never the value.
      const put = calls[1].data.detail as Record<string, unknown>;
      assert.equal(put.key, "counter");
      assert.equal(put.scope, "principal");
      assert.ok(!JSON.stringify(put).includes('"value"'), JSON.stringify(put));
    }

    // The log lines reached the server's logs.
    const logs = await (await fetch(`${server.agentUrl}/v1/logs`)).text();
    assert.ok(logs.includes("counter is 1 (first)") && logs.includes("counter is 2 (second)"), logs.slice(0, 2000));
  });

  test("past the session's call budget, calls reject with rate_limited and retryAfter", async () => {
    const { out } = await runTool<{ calls: number; refused: { code: string; status: number; retryAfter?: number } | null }>("burst", {});
    assert.ok(out.refused, `${out.calls} calls went through without a refusal`);
    assert.equal(out.refused.code, "rate_limited");
    assert.equal(out.refused.status, 429);
    assert.ok((out.refused.retryAfter ?? 0) > 0, JSON.stringify(out.refused));
    // The budget is 200 calls (refilled at 50 per second while the burst runs).
    assert.ok(out.calls >= 200, JSON.stringify(out));
  });

  test("the README's host example runs as a tool", async () => {
    const counts = [(await runTool("bump", {})).out, (await runTool("bump", {})).out];
    assert.deepEqual(counts, [{ count: 1 }, { count: 2 }]);
  });

  test("outside a process Folio started, calls reject with host_unavailable", async () => {
    const saved = { url: process.env.FOLIO_HOST_URL, token: process.env.FOLIO_HOST_TOKEN };
    delete process.env.FOLIO_HOST_URL;
    delete process.env.FOLIO_HOST_TOKEN;
    try {
      await assert.rejects(host.whoami(), (err: unknown) => {
        assert.ok(err instanceof HostError);
        assert.equal(err.code, "host_unavailable");
        assert.equal(err.status, undefined);
        return true;
      });
      await assert.rejects(host.kv.get("counter"), (err: unknown) => err instanceof HostError && err.code === "host_unavailable");
    } finally {
      if (saved.url !== undefined) process.env.FOLIO_HOST_URL = saved.url;
      if (saved.token !== undefined) process.env.FOLIO_HOST_TOKEN = saved.token;
    }
  });

  test("a call's token is refused once its process has ended, as is an unknown one", async () => {
    assert.ok(firstCall, "the counter test ran first");
    const saved = { url: process.env.FOLIO_HOST_URL, token: process.env.FOLIO_HOST_TOKEN };
    process.env.FOLIO_HOST_URL = firstCall.url;
    try {
      for (const token of [firstCall.token, "fht_not-a-token"]) {
        process.env.FOLIO_HOST_TOKEN = token;
        await assert.rejects(host.kv.get("counter", { scope: "principal" }), (err: unknown) => {
          assert.ok(err instanceof HostError);
          assert.equal(err.code, "unauthorized");
          assert.equal(err.status, 401);
          return true;
        });
      }
    } finally {
      for (const [name, value] of [
        ["FOLIO_HOST_URL", saved.url],
        ["FOLIO_HOST_TOKEN", saved.token],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });
});
