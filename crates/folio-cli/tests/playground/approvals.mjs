// Approve one call and deny another (with a reason) from the page.
import { browser, equal, scenario, send, status, texts } from "./lib.mjs";

scenario(async (url) => {
  const b = await browser();
  const { page } = b;
  await page.goto(`${url}/playground`);
  await send(page, "deploy prod");
  await status(page, "approval");
  equal(JSON.parse(await page.textContent(".call .args")), { target: "prod" }, "first call");
  await page.click(".call .approval button.approve");
  await status(page, "waiting");
  equal(await texts(page, ".call .decision"), ["approved by local"], "first decision");
  const result = await page.textContent(".call.ok .result");
  if (!result.includes("deployed")) throw new Error(`the approved call shows ${result}`);

  await send(page, "deploy eu");
  await status(page, "approval");
  await page.fill(".call .approval .reason", "not today");
  await page.click(".call .approval button.deny");
  await status(page, "waiting");
  equal(await texts(page, ".call .decision"), ["approved by local", "denied by local: not today"], "decisions");
  equal(await page.$$eval(".approval", (n) => n.length), 0, "approval buttons left");
  await b.close();
});
