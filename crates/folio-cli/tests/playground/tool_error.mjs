// A tool call that fails shows its error and duration as the run's events record them; the
// step's reasoning sits in a collapsed box that opens on a click; the trace shows each model step's tokens, the turn's total and the session's, equal to the
// usage its events report.
import { browser, equal, scenario, send, status, texts } from "./lib.mjs";

/** A duration as the page writes it. */
const duration = (ms) => (ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`);
/** Usage as the page writes it. */
const tokens = (u) => `${u.inputTokens + u.cacheReadTokens + u.cacheWriteTokens} in · ${u.outputTokens} out`;

scenario(async (url) => {
  const b = await browser();
  const { page } = b;
  await page.goto(`${url}/playground`);
  await send(page, "break it");
  await status(page, "waiting");

  // The run's own events, from the Raw view.
  await page.click('#tabs button[data-tab="raw"]');
  await page.waitForSelector("#raw .line");
  const events = (await texts(page, "#raw .line")).map((line) => JSON.parse(line));
  const result = events.find((e) => e.type === "action.result");
  if (!result?.data.isError || !result.data.error) throw new Error(`the call did not fail: ${JSON.stringify(result)}`);

  await page.click('#tabs button[data-tab="chat"]');
  equal(await texts(page, ".call .tool"), ["fail"], "tool calls");
  equal(await texts(page, ".call .status"), [`error · ${duration(result.data.durationMs)}`], "the call's status");
  equal(await texts(page, ".call .result.error"), [result.data.error], "the call's error");
  equal(await texts(page, "details.reasoning .reasoning-text"), ["The tool failed; say so."], "the reasoning");
  equal(await page.$eval("details.reasoning", (d) => d.open), false, "the reasoning starts collapsed");
  await page.click("details.reasoning summary");
  equal(await page.$eval("details.reasoning", (d) => d.open), true, "the reasoning opens");

  await page.click('#tabs button[data-tab="trace"]');
  await page.waitForSelector('.span[data-kind="tool"]');
  const spanTokens = await page.$$eval("#trace .span", (spans) =>
    spans.map((s) => [s.dataset.kind, s.querySelector(".tokens")?.textContent || ""]),
  );
  const steps = events.filter((e) => e.type === "step.completed").map((e) => ["step", tokens(e.data.usage)]);
  const turn = events.find((e) => e.type === "turn.completed");
  equal(spanTokens, [["turn", tokens(turn.data.usage)], steps[0], ["tool", ""], steps[1]], "the trace's tokens");
  equal(spanTokens, [["turn", "330 in · 12 out"], ["step", "110 in · 5 out"], ["tool", ""], ["step", "220 in · 7 out"]], "the tokens the model reported");
  equal(await texts(page, ".trace-total .tokens"), ["330 in · 12 out"], "the session's total");
  equal(await page.$$eval('.span[data-kind="tool"] .bar', (bars) => bars.map((bar) => bar.classList.contains("error"))), [true], "the failed call's bar");
  await b.close();
});
