// Chat, and see a tool call inline with its arguments, result and duration; the trace view
// (turn, model steps, the tool call) links each bar to its event in Raw; the Agent tab calls a
// tool from a form generated from its schema; the Logs tab shows the session's log lines.
import { browser, equal, scenario, send, status, texts } from "./lib.mjs";

scenario(async (url) => {
  const b = await browser();
  const { page } = b;
  await page.goto(`${url}/playground`);
  await send(page, "echo hello please");
  await status(page, "waiting");
  equal(await texts(page, ".turn.user .text"), ["echo hello please"], "user messages");
  equal(await texts(page, ".call .tool"), ["echo"], "tool calls");
  const args = JSON.parse(await page.textContent(".call .args"));
  equal(args, { text: "hello" }, "arguments");
  const result = await page.textContent(".call .result");
  if (!result.includes("hello")) throw new Error(`the result shows ${result}`);
  const callStatus = await page.textContent(".call .status");
  if (!/^done · \d+ ms$/.test(callStatus)) throw new Error(`the call status is ${callStatus}`);
  equal(await texts(page, ".turn.assistant > .text"), ["Echoed."], "assistant text");

  await page.click('#tabs button[data-tab="trace"]');
  await page.waitForSelector('.span[data-kind="tool"]');
  equal(
    await page.$$eval("#trace .span", (spans) => spans.map((s) => s.dataset.kind)),
    ["turn", "step", "tool", "step"],
    "trace spans",
  );
  await page.click('.span[data-kind="tool"] button.link');
  await page.waitForSelector("#raw .line.focus");
  const focused = JSON.parse(await page.textContent("#raw .line.focus"));
  equal(focused.type, "actions.requested", "the tool bar's event");
  await page.selectOption("#raw-filter", "action.result");
  equal((await texts(page, "#raw .line")).map((l) => JSON.parse(l).type), ["action.result"], "raw filtered");

  // The Agent tab: a form generated from echo's input schema calls it in the open session.
  await page.click('#tabs button[data-tab="agent"]');
  await page.click('details[data-tool="echo"] summary');
  await page.fill('details[data-tool="echo"] input[name="text"]', "direct");
  await page.click('details[data-tool="echo"] button');
  await page.waitForFunction(() => (document.querySelector('details[data-tool="echo"] pre.result')?.textContent || "").includes('"isError": false'));
  const direct = JSON.parse(await page.textContent('details[data-tool="echo"] pre.result'));
  equal(direct.result.input, { text: "direct" }, "the direct call's input");

  // The Logs tab shows the server's lines about this session.
  await page.click('#tabs button[data-tab="logs"]');
  await page.waitForFunction(() => [...document.querySelectorAll("#logs .log")].some((l) => l.textContent.includes("created by local")));
  await b.close();
});
