// A dropped connection mid-turn: the first stream answers the events stored so far and then
// ends (as a dropped connection does); the page reconnects with startIndex and the reply shows
// complete, nothing missing or doubled.
import { browser, equal, scenario, send, status, texts } from "./lib.mjs";

scenario(async (url, reply) => {
  const b = await browser();
  const { page } = b;
  let dropped = 0;
  await page.route(/\/stream\?startIndex=0$/, async (route) => {
    await new Promise((resolve) => setTimeout(resolve, 700));
    const partial = await route.fetch({ url: route.request().url().replace(/stream\?startIndex=0$/, "events") });
    dropped = (await partial.text()).trim().split("\n").length;
    await route.fulfill({ response: partial });
  });
  await page.goto(`${url}/playground`);
  await page.evaluate(() => {
    window.states = [];
    const badge = document.getElementById("connection");
    new MutationObserver(() => window.states.push(badge.textContent)).observe(badge, { childList: true, characterData: true, subtree: true });
  });
  await send(page, "tell a long story");
  await status(page, "waiting");
  equal(await texts(page, ".turn.user .text"), ["tell a long story"], "user messages");
  equal(await texts(page, ".turn.assistant > .text"), [reply], "assistant text");
  const states = await page.evaluate(() => window.states);
  equal(states.slice(0, 3), ["live", "reconnecting", "live"], "connection states");
  await page.click('#tabs button[data-tab="raw"]');
  const shown = (await texts(page, "#raw .line")).map((line) => JSON.parse(line).index);
  equal(shown, [...Array(shown.length).keys()], "every event once, in order");
  if (dropped < 4 || dropped >= shown.length) throw new Error(`the first connection carried ${dropped} of ${shown.length} events`);
  await b.close();
});
