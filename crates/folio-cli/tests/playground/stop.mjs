// Stop a running turn with the Stop button (Esc does the same).
import { browser, equal, scenario, send, status, texts } from "./lib.mjs";

scenario(async (url) => {
  const b = await browser();
  const { page } = b;
  await page.goto(`${url}/playground`);
  await send(page, "write slowly");
  await status(page, "running");
  await page.waitForFunction(() => (document.querySelector(".turn.assistant .text")?.textContent || "").length > 0);
  await page.click("#stop");
  await status(page, "waiting");
  equal(await texts(page, ".turn-failed"), ["turn interrupted"], "the stopped turn");
  await b.close();
});
