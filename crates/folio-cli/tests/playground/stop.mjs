// Stop a running turn with Esc (the keyboard shortcut), then another with the Stop button.
import { browser, equal, scenario, send, status, texts } from "./lib.mjs";

scenario(async (url) => {
  const b = await browser();
  const { page } = b;
  await page.goto(`${url}/playground`);
  /** Sends `text`, waits for the reply to start streaming, then stops it with `how`. */
  const stopOne = async (text, how, turns) => {
    await send(page, text);
    await status(page, "running");
    await page.waitForFunction(
      (n) => (document.querySelectorAll(".turn.assistant .text")[n - 1]?.textContent || "").length > 0,
      turns,
    );
    await how();
    await page.waitForFunction((n) => document.querySelectorAll(".turn-failed").length === n, turns);
    await status(page, "waiting");
  };
  await stopOne("write slowly", () => page.keyboard.press("Escape"), 1);
  await stopOne("again, slowly", () => page.click("#stop"), 2);
  equal(await texts(page, ".turn-failed"), ["turn interrupted", "turn interrupted"], "the stopped turns");
  await b.close();
});
