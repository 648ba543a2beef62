// Takes the screenshots of docs/playground/ (argv[3] is the output folder): a chat with a tool
// call and an approval, saved as an eval case, its trace (with tokens) and raw events, the runs
// list, the agent and logs tabs, the evals tab with stored runs, and the chat on a phone.
import { browser, scenario, send, status } from "./lib.mjs";

scenario(async (url, out) => {
  const b = await browser();
  const { page } = b;
  await page.setViewportSize({ width: 1100, height: 1000 });
  await page.goto(`${url}/playground`);
  await send(page, "Echo hello, then deploy prod");
  await status(page, "approval");
  await page.fill(".call .approval .reason", "ship it");
  await page.screenshot({ path: `${out}/approval.png` });
  await page.click(".call .approval button.approve");
  await status(page, "waiting");
  await page.fill("#case-name", "echo-and-deploy");
  await page.click('#save-case button[type="submit"]');
  await page.waitForFunction(() => document.querySelector("#case-saved")?.textContent);
  await page.screenshot({ path: `${out}/chat.png` });
  /** What each view shows once it has its data. */
  const ready = {
    trace: '.span[data-kind="tool"]',
    raw: "#raw .line",
    runs: "#runs tbody tr",
    agent: "details[data-tool]",
    logs: "#logs .log",
    evals: ".eval-case",
  };
  for (const [view, selector] of Object.entries(ready)) {
    await page.click(`#tabs button[data-tab="${view}"]`);
    await page.waitForSelector(selector);
    await page.screenshot({ path: `${out}/${view}.png` });
  }
  await page.click('#tabs button[data-tab="chat"]');
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: `${out}/phone.png` });
  await b.close();
});
