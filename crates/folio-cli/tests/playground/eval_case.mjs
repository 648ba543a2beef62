// "Save this run as an eval case": chat, save the run under a name from the Chat view, see
// where it went; saving the same name again is refused with the server's reason.
import { browser, scenario, send, status } from "./lib.mjs";

scenario(async (url, name) => {
  const b = await browser();
  const { page } = b;
  await page.goto(`${url}/playground`);
  await send(page, "echo hello please");
  await status(page, "waiting");
  await page.fill("#case-name", name);
  await page.click('#save-case button[type="submit"]');
  await page.waitForFunction(() => document.querySelector("#case-saved")?.textContent);
  const saved = await page.textContent("#case-saved");
  const expected = `Saved evals/from-session/${name}.eval.toml: \`folio eval --filter from-session/${name}\` runs it.`;
  if (saved !== expected) throw new Error(`the saved note says ${JSON.stringify(saved)}, not ${JSON.stringify(expected)}`);
  await page.fill("#case-name", name);
  await page.click('#save-case button[type="submit"]');
  await page.waitForSelector("#error:not([hidden])");
  const refused = await page.textContent("#error");
  if (!refused.includes(`${name}.eval.toml exists: save the case under another name`)) throw new Error(`a second save shows ${refused}`);
  await b.close();
});
