// Fork from the second message with an edited text, then continue the fork.
import { browser, equal, scenario, send, status, texts } from "./lib.mjs";

scenario(async (url) => {
  const b = await browser();
  const { page } = b;
  await page.goto(`${url}/playground`);
  await send(page, "first");
  await status(page, "waiting");
  await send(page, "second");
  await page.waitForFunction(() => document.querySelectorAll(".turn-footer").length === 2);
  const original = new URL(page.url()).searchParams.get("session");
  await page.locator(".turn.user").nth(1).locator(".fork").click();
  await page.fill(".fork-editor textarea", "second, edited");
  await page.click(".fork-editor button:first-child");
  await page.waitForFunction((original) => new URLSearchParams(location.search).get("session") !== original, original);
  await page.waitForFunction(() => document.querySelectorAll(".turn-footer").length === 2);
  await status(page, "waiting");
  equal(await texts(page, ".turn.user .text"), ["first", "second, edited"], "the fork's messages");
  equal(await texts(page, ".turn.assistant > .text"), ["One.", "Three."], "the fork's replies");
  equal((await texts(page, ".note")).length, 1, "the fork note");
  await send(page, "and on");
  await page.waitForFunction(() => document.querySelectorAll(".turn-footer").length === 3);
  equal(await texts(page, ".turn.assistant > .text"), ["One.", "Three.", "Four."], "the continued fork");
  console.log(`fork ${new URL(page.url()).searchParams.get("session")} of ${original}`);
  await b.close();
});
