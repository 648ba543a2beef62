// Reopen a past run from the Runs list (created elsewhere: the page never saw its token) and
// continue it, attaching a workspace file to the follow-up.
import { browser, equal, scenario, send, status, texts } from "./lib.mjs";

scenario(async (url, sessionId) => {
  const b = await browser();
  const { page } = b;
  await page.goto(`${url}/playground?view=runs`);
  await page.waitForSelector(`tr[data-session="${sessionId}"]`);
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
