// A subagent call is nested: the tool calls the subagent makes render inside the Task call's
// card (marked with the subagent's name), and the trace draws them under the subagent.
import { browser, equal, scenario, send, status, texts } from "./lib.mjs";

scenario(async (url) => {
  const b = await browser();
  const { page } = b;
  await page.goto(`${url}/playground`);
  await send(page, "ask the helper");
  await status(page, "waiting");
  equal(await texts(page, ".turn.assistant > .call > summary .tool"), ["Task → subagent helper"], "the outer call");
  equal(await texts(page, ".call.subagent .subagent-body .call .tool"), ["echo"], "the subagent's tool call");
  equal(await texts(page, ".call.subagent .subagent-body .call .where"), ["in helper"], "who made it");
  equal(JSON.parse(await page.textContent(".subagent-body .call .args")), { text: "inner" }, "its arguments");
  equal(await texts(page, ".call.subagent .subagent-reply"), ["← helper: Found it."], "the subagent's reply");
  equal(await texts(page, ".turn.assistant > .text"), ["The helper found it."], "the outer text");
  await page.click('#tabs button[data-tab="trace"]');
  await page.waitForSelector('.span[data-kind="subagent"]');
  equal(
    await page.$$eval("#trace .span", (spans) => spans.map((s) => s.dataset.kind)),
    ["turn", "step", "tool", "subagent", "tool", "step"],
    "trace spans",
  );
  await b.close();
});
