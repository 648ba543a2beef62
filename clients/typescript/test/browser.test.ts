// The built ESM client and React hook in headless Chromium (playwright-core), against folio serve.
//
// The page is served by a small dev-server-like proxy (its own files under /app/, everything else
// forwarded to folio serve), so the page and the API share one origin, as browsers need without
// CORS; folio serve admits that origin with --allowed-origin (README "Browsers are callers too").
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import path from "node:path";
import { after, test } from "node:test";
import { agentDir, cleanup, DEPLOY_TOOL, DroppingProxy, MockModel, packageDir, Server } from "./support.js";

const chromiumPath = process.env.CHROMIUM || "/usr/bin/chromium";
const cleanups: (() => Promise<void> | void)[] = [];
after(async () => {
  for (const done of cleanups.reverse()) await done();
});

test("the client and the React hook work in headless Chromium", async (t) => {
  if (!existsSync(chromiumPath)) {
    const why = `${chromiumPath} is missing (install Debian's chromium, e.g. scripts/install-test-deps as root, or set CHROMIUM)`;
    if (process.env.FOLIO_TEST_DEPS_REQUIRED === "1") assert.fail(`${why}; FOLIO_TEST_DEPS_REQUIRED=1 makes this a failure`);
    t.skip(`skipping the browser test: ${why}`);
    return;
  }
  const { chromium } = await import("playwright-core");

  const model = await MockModel.start();
  cleanups.push(() => model.stop());
  const agent = agentDir({ "agent/tools/deploy.toml": DEPLOY_TOOL });
  cleanups.push(() => cleanup(agent.root));
  const file = (rel: string) => path.join(packageDir, rel);
  const app = await new DroppingProxy("http://unset", {
    "/app/index.html": file("test/browser/index.html"),
    "/app/app.js": file("test/browser/app.js"),
    "/app/react-shim.js": file("test/browser/react-shim.js"),
    "/app/dist/index.js": file("dist/index.js"),
    "/app/dist/react.js": file("dist/react.js"),
    "/app/dist/generated/openapi.js": file("dist/generated/openapi.js"),
    "/app/vendor/react.development.js": file("node_modules/react/umd/react.development.js"),
    "/app/vendor/react-dom.development.js": file("node_modules/react-dom/umd/react-dom.development.js"),
  }).start();
  cleanups.push(() => app.stop());
  const server = await Server.start(agent.dir, model, { extra: ["--allowed-origin", app.url] });
  cleanups.push(() => server.stop());
  cleanups.push(() => cleanup(server.stateRoot));
  app.target = server.url;

  const browser = await chromium.launch({
    executablePath: chromiumPath,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  cleanups.push(() => browser.close());
  const page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(20_000);
  const problems: string[] = [];
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  // Error answers are checked below (the browser logs each as a console error too).
  const failures: string[] = [];
  page.on("response", (res) => {
    const url = new URL(res.url());
    if (res.status() >= 400 && url.pathname !== "/favicon.ico") failures.push(`${res.status()} ${res.request().method()} ${url.pathname}`);
  });
  page.on("console", (msg) => {
    if (msg.type() === "error" && !msg.text().startsWith("Failed to load resource")) problems.push(`console error: ${msg.text()}`);
  });
  page.on("requestfailed", (req) => {
    // A stream the hook aborts on reload is not a failure.
    if (!req.url().includes("/stream?")) problems.push(`request failed: ${req.url()} ${req.failure()?.errorText}`);
  });

  // The plain client.
  await model.push({ text: "Hello, browser." }, { text: "Again, browser." });
  await page.goto(`${app.url}/app/index.html`);
  await page.waitForFunction(() => (window as unknown as { appReady?: boolean }).appReady === true);
  const result = await page.evaluate(() => (window as unknown as { runClient: () => Promise<unknown> }).runClient());
  const run = result as { sessionId: string; types: string[]; indexes: number[]; reply: string; stale: Record<string, unknown> };
  assert.match(run.sessionId, /^ses_/);
  assert.deepEqual(run.indexes, run.types.map((_, i) => i), "gapless from 0");
  assert.equal(run.types[0], "session.started");
  assert.equal(run.types.at(-1), "session.waiting");
  assert.ok(run.types.includes("message.completed"), run.types.join(", "));
  assert.equal(run.reply, "Again, browser.");
  assert.deepEqual(
    [run.stale.isFolioError, run.stale.code, run.stale.status],
    [true, "stale_continuation_token", 409],
    JSON.stringify(run.stale),
  );

  // The hook: a first message creates the session; a tool call waits for approval.
  type Chat = { send: (text: string) => Promise<void>; approve: (callId: string) => Promise<void>; pendingApprovals: { callId: string }[] };
  const chat = (fn: (chat: Chat) => Promise<void>) => page.evaluate(`(${fn.toString()})(window.chat)`);
  await model.push({ toolCalls: [{ name: "deploy", input: { target: "prod" } }] }, { text: "Deployed from the hook." });
  await chat((c) => c.send("deploy prod"));
  await page.locator("#approvals li", { hasText: "deploy" }).waitFor();
  assert.equal(await page.locator("#status").textContent(), "awaiting_approval");
  await chat((c) => c.approve(c.pendingApprovals[0].callId));
  await page.locator("#messages li.assistant", { hasText: "Deployed from the hook." }).waitFor();
  await page.locator("#status", { hasText: "waiting" }).waitFor();
  assert.equal(await page.locator("#tools li").textContent(), "deploy: done");
  assert.equal(await page.locator("#approvals li").count(), 0);
  const sessionId = await page.locator("#session").textContent();
  assert.match(sessionId ?? "", /^ses_/);
  const stored = await page.evaluate(() => JSON.parse(localStorage.getItem("folio-browser-test") ?? "null"));
  assert.equal(stored.sessionId, sessionId);

  // After a reload the hook resumes from localStorage: the same conversation, and it can send.
  await page.reload();
  await page.locator("#messages li.assistant", { hasText: "Deployed from the hook." }).waitFor();
  assert.equal(await page.locator("#session").textContent(), sessionId);
  await model.push({ text: "Still here after the reload." });
  await chat((c) => c.send("still there?"));
  await page.locator("#messages li.assistant", { hasText: "Still here after the reload." }).waitFor();
  assert.deepEqual(await page.locator("#messages li").allTextContents(), [
    "user: deploy prod",
    "assistant: Deployed from the hook.",
    "user: still there?",
    "assistant: Still here after the reload.",
  ]);
  assert.deepEqual(problems, []);
  assert.deepEqual(failures, [`409 POST /ops/v1/session/${run.sessionId}`], "the stale send is the only error answer");
});
