// Shared by the playground's browser scenarios: Debian's chromium driven by playwright-core
// (its path comes from PLAYWRIGHT_CORE), and small assertions that fail with a clear message.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { chromium } = require(process.env.PLAYWRIGHT_CORE);

/** Starts headless chromium and opens a page (a laptop screen unless `viewport` says
 * otherwise; `options` are more of Playwright's context options); every page error, failed
 * request or external request fails the scenario. */
export async function browser(viewport = { width: 1100, height: 800 }, options = {}) {
  const instance = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const context = await instance.newContext({ viewport, ...options });
  const page = await context.newPage();
  page.setDefaultTimeout(20000);
  const problems = [];
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("requestfailed", (request) => {
    const url = request.url();
    // A stream aborted on purpose (reload, another session) is not a failure.
    if (!url.includes("/stream?")) problems.push(`request failed: ${url} ${request.failure()?.errorText}`);
  });
  page.on("request", (request) => {
    if (!request.url().startsWith(process.env.FOLIO_HOST)) problems.push(`external request: ${request.url()}`);
  });
  return {
    page,
    context,
    problems,
    async close() {
      await instance.close();
      if (problems.length) fail(problems.join("\n"));
    },
  };
}

/** Fails the scenario. */
export function fail(message) {
  console.error(`FAIL: ${message}`);
  process.exit(1);
}

/** Asserts `actual` deep-equals `expected`. */
export function equal(actual, expected, what) {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) fail(`${what}: expected ${e}, got ${a}`);
}

/** Types a message and sends it with the keyboard shortcut. */
export async function send(page, text) {
  await page.fill("#message", text);
  await page.press("#message", "Control+Enter");
}

/** Waits until the open session reports `status` (running, approval, waiting, …). */
export async function status(page, value) {
  await page.waitForSelector(`body[data-status="${value}"]`);
}

/** The texts of every element matching `selector`. */
export async function texts(page, selector) {
  return page.$$eval(selector, (nodes) => nodes.map((n) => n.textContent));
}

/** Runs a scenario with the agent URL (argv[2]) and reports success. */
export async function scenario(run) {
  const url = process.argv[2];
  const extra = process.argv.slice(3);
  try {
    await run(url, ...extra);
  } catch (error) {
    fail(error.stack || String(error));
  }
  console.log("ok");
}
