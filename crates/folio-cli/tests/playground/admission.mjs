// The admission choice: a follow-up sent with "coalesce" while a turn runs waits for it
// (message.queued) instead of interrupting it, then runs as the next turn.
import { browser, equal, scenario, send, status, texts } from "./lib.mjs";

scenario(async (url) => {
  const b = await browser();
  const { page } = b;
  await page.goto(`${url}/playground`);
  await send(page, "first");
  await status(page, "running");
  await page.waitForFunction(() => (document.querySelector(".turn.assistant .text")?.textContent || "").length > 0);
  await page.selectOption("#admission", "coalesce");
  await send(page, "second");
  // Shown as queued below the running reply until its turn takes it.
  await page.waitForSelector(".turn.user.queued");
  equal(await texts(page, ".turn.user.queued .text"), ["second"], "the queued message");
  await page.waitForFunction(() => document.querySelectorAll(".turn-footer").length === 2);
  await status(page, "waiting");
  equal(await texts(page, ".turn.user .text"), ["first", "second"], "messages");
  equal(await texts(page, ".turn-failed"), [], "interrupted turns");
  equal(await texts(page, ".turn.user.queued"), [], "messages still shown as queued");
  await b.close();
});
