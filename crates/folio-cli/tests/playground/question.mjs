// An MCP server's question (elicitation) in the chat: the question and its answer box, prefilled
// with the schema's defaults, appear on the call; Accept sends the edited answer and the turn
// finishes with the server's result.
import { browser, equal, scenario, send, status, texts } from "./lib.mjs";

scenario(async (url) => {
  const b = await browser();
  const { page } = b;
  await page.goto(`${url}/playground`);
  await send(page, "ask me");
  await status(page, "approval");
  const question = await texts(page, ".call .label");
  if (!question.includes("Please provide inputs for the following fields:")) {
    throw new Error(`the question is not shown: ${JSON.stringify(question)}`);
  }
  const prefilled = JSON.parse(await page.inputValue(".call .approval textarea.answer"));
  equal(prefilled.integer, 42, "the schema's default in the answer box");
  equal(
    await texts(page, ".call .approval button"),
    ["Accept", "Decline", "Cancel"],
    "the question's buttons",
  );
  await page.fill(".call .approval textarea.answer", JSON.stringify({ name: "Ada" }));
  await page.click(".call .approval button.approve");
  await status(page, "waiting");
  equal(await texts(page, ".call .decision"), ["accepted by local"], "the decision");
  equal(await page.$$eval(".approval", (n) => n.length), 0, "question boxes left");
  const result = await page.textContent(".call.ok .result");
  if (!result.includes("Name: Ada") || !result.includes("Favorite Integer: 42")) {
    throw new Error(`the call's result shows ${result}`);
  }
  await b.close();
});
