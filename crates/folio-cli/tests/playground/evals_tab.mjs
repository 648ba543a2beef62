// The Evals tab with stored runs of `folio eval` (argv[3]: the failing case, evalId/caseId;
// argv[4]: the passing one): the runs newest first, the newest opened with its cases, and each
// failed assertion with what was expected and what happened.
import { browser, equal, scenario, texts } from "./lib.mjs";

scenario(async (url, failing, passing) => {
  const b = await browser();
  const { page } = b;
  await page.goto(`${url}/playground?view=evals`);
  await page.waitForSelector(".eval-case");
  const runs = await texts(page, ".eval-runs li");
  equal(runs.length, 2, "stored runs");
  if (!/FAIL: 1 passed, 1 failed/.test(runs[0]) || !/pass: 1 passed, 0 failed/.test(runs[1])) {
    throw new Error(`the runs read ${JSON.stringify(runs)}`);
  }
  const cases = await page.$$eval(".eval-case", (nodes) => nodes.map((c) => `${c.dataset.case} ${c.classList.contains("pass") ? "pass" : "fail"}`));
  equal(cases.sort(), [`${failing} fail`, `${passing} pass`].sort(), "the newest run's cases");
  const failed = await texts(page, `.eval-case[data-case="${failing}"] .assertion.failed`);
  if (!failed.some((text) => text.includes("called_tool") && text.includes("echo"))) {
    throw new Error(`the failed assertions read ${JSON.stringify(failed)}`);
  }
  equal(await texts(page, `.eval-case[data-case="${passing}"] .assertion.failed`), [], "the passing case's failures");
  await b.close();
});
