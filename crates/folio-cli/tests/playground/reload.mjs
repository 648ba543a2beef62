// Reload mid-turn: the stream restarts from index 0 and the full history shows once, nothing
// missing or doubled; the Raw view holds every stored event exactly once.
import { browser, equal, scenario, send, status, texts } from "./lib.mjs";

scenario(async (url, reply) => {
  const b = await browser();
  const { page } = b;
  await page.goto(`${url}/playground`);
  await send(page, "tell a long story");
  await page.waitForFunction(() => (document.querySelector(".turn.assistant .text")?.textContent || "").length > 0);
  await page.reload();
  await status(page, "waiting");
  equal(await texts(page, ".turn.user .text"), ["tell a long story"], "user messages");
  equal(await texts(page, ".turn.assistant > .text"), [reply], "assistant text");
  const id = new URL(page.url()).searchParams.get("session");
  const stored = await page.evaluate(async (id) => {
    const base = location.pathname.replace(/\/playground$/, "");
    const text = await (await fetch(`${base}/v1/session/${id}/events`)).text();
    return text.trim().split("\n").map((line) => JSON.parse(line).index);
  }, id);
  await page.click('#tabs button[data-tab="raw"]');
  await page.waitForSelector("#raw .line");
  const shown = (await texts(page, "#raw .line")).map((line) => JSON.parse(line).index);
  equal(shown, stored, "events shown after the reload");
  await b.close();
});
