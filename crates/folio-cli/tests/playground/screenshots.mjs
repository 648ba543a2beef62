// Takes the screenshots of docs/playground/ (argv[3] is the output folder): a chat with a tool
// call and an approval, its trace and raw events, the runs list, the agent, logs and evals tabs,
// and the chat on a phone-sized screen.
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
  await page.screenshot({ path: `${out}/chat.png` });
  for (const view of ["trace", "raw", "runs", "agent", "logs", "evals"]) {
    await page.click(`#tabs button[data-tab="${view}"]`);
    await page.waitForTimeout(300);
    await page.screenshot({ path: `${out}/${view}.png` });
  }
  await page.click('#tabs button[data-tab="chat"]');
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: `${out}/phone.png` });
  await b.close();
});
