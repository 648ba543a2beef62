// Another principal (a tokens-file token entered in the page) sees none of alice's runs and
// cannot open her session.
import { browser, equal, scenario, texts } from "./lib.mjs";

scenario(async (url, token, aliceSession) => {
  const b = await browser();
  const { page } = b;
  await page.goto(`${url}/playground?view=runs`);
  await page.waitForSelector("#auth:not([hidden])");
  await page.fill("#bearer", token);
  await page.click("#auth button[type=submit]");
  await page.waitForSelector("#runs .empty");
  equal(await texts(page, "#runs .empty"), ["No runs yet."], "bob's runs");
  const stored = await page.evaluate(() => sessionStorage.getItem("folio.bearer"));
  equal(stored, token, "the token kept in session storage");
  await page.goto(`${url}/playground?session=${aliceSession}`);
  await page.waitForSelector("#error:not([hidden])");
  const error = await page.textContent("#error");
  if (!error.includes("another principal")) throw new Error(`the error says ${error}`);
  equal(await texts(page, "#chat .turn"), [], "alice's messages shown to bob");
  b.problems.length = 0; // the refused calls are the point of this scenario
  await b.close();
});
