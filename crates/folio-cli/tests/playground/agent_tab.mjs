// The Agent tab: an MCP connection shows as connected with its tools, the subagent and the
// authored tools are listed, a tool needing approval says so, and a schedule shows when it fires
// next on its zone's clock (the server's test clock starts at 2027-01-04T08:59:58Z).
import { browser, equal, scenario, texts } from "./lib.mjs";

scenario(async (url) => {
  const b = await browser();
  const { page } = b;
  await page.goto(`${url}/playground?view=agent`);
  await page.waitForSelector('details[data-tool="echo"]');
  const connections = await texts(page, "#agent section:nth-of-type(4) li");
  if (connections.length !== 1 || !/^everything: connected · \d+ tools — /.test(connections[0])) {
    throw new Error(`connections: ${JSON.stringify(connections)}`);
  }
  const tools = await page.$$eval("details[data-tool]", (cards) => cards.map((c) => c.dataset.tool));
  if (!tools.includes("mcp__everything__echo")) throw new Error(`tools: ${tools}`);
  equal(await page.textContent('details[data-tool="deploy"] summary'), "deploy (needs approval) — Deploy a service.", "deploy");
  equal(await texts(page, "#agent section:nth-of-type(3) li"), ["helper — Looks things up."], "subagents");
  equal(
    await texts(page, '[data-schedule="nightly"]'),
    ["nightly: 30 2 * * * (Europe/Paris) — Tidy the tracker. · next 2027-01-05T02:30:00+01:00"],
    "the schedule's next fire time",
  );
  await b.close();
});
