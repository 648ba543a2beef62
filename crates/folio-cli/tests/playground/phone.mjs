// Readable on a phone: at 390 px wide no view (chat with a tool call, trace, raw, runs, agent,
// logs) scrolls sideways, and the composer's Send and Stop stay on screen.
import { browser, equal, scenario, send, status } from "./lib.mjs";

scenario(async (url) => {
  const b = await browser({ width: 390, height: 844 });
  const { page } = b;
  await page.goto(`${url}/playground`);
  await send(page, "echo hello please");
  await status(page, "waiting");
  const overflow = () =>
    page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  for (const tab of ["chat", "trace", "raw", "runs", "agent", "logs", "evals"]) {
    await page.click(`#tabs button[data-tab="${tab}"]`);
    await page.waitForSelector(`#view-${tab}:not([hidden])`);
    await page.waitForTimeout(200);
    equal(await overflow(), 0, `pixels the ${tab} view overflows sideways`);
  }
  await page.click('#tabs button[data-tab="chat"]');
  for (const button of ["#send", "#stop"]) {
    const box = await page.locator(button).boundingBox();
    if (!box || box.x < 0 || box.x + box.width > 390) throw new Error(`${button} is off screen: ${JSON.stringify(box)}`);
  }
  await b.close();
});
