// Reopen a past run from the Runs list (created elsewhere: the page never saw its token) and
// continue it, attaching a workspace file to the follow-up. The list is searchable and shows
// each run's status, turns and tokens.
import { browser, equal, scenario, send, status, texts } from "./lib.mjs";

scenario(async (url, sessionId) => {
  const b = await browser();
  const { page } = b;
  await page.goto(`${url}/playground?view=runs`);
  await page.waitForSelector(`tr[data-session="${sessionId}"]`);
  const row = `tr[data-session="${sessionId}"]`;
  equal(await texts(page, `${row} .badge`), ["waiting"], "the run's status");
  equal(await texts(page, `${row} .tokens`), ["120 in · 7 out"], "the run's tokens");
  await page.fill("#runs-search", "no such run");
  await page.waitForSelector("#runs .empty");
  equal(await texts(page, "#runs .empty"), ["No run matches."], "a search that matches nothing");
  await page.fill("#runs-search", "greet");
  await page.waitForSelector(row);
  equal(await page.$$eval("#runs tbody tr", (rows) => rows.length), 1, "runs matching the title");
  await page.click(`tr[data-session="${sessionId}"] button[data-view="chat"]`);
  await status(page, "waiting");
  equal(await texts(page, ".turn.assistant > .text"), ["Hi."], "the past reply");
  await page.setInputFiles("#files", { name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("remember the milk") });
  await send(page, "again");
  await page.waitForFunction(() => document.querySelectorAll(".turn-footer").length === 2);
  equal(await texts(page, ".turn.user .text"), ["hello", "again"], "messages");
  equal(await texts(page, ".turn.assistant > .text"), ["Hi.", "Again."], "replies");
  await b.close();
});
