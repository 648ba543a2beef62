// The Agent tab: an MCP connection shows as connected with its tools, the subagent and the
// authored tools are listed, and a tool needing approval says so.
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
  await b.close();
});
