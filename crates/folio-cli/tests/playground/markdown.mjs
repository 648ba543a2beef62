// The model's text renders as Markdown (bold, lists, a table, highlighted code, links that open a
// new tab, images as links), under the page's own CSP with nothing refused by it. Then hostile
// replies (argv[3]: a JSON file, `replies` of them, every vector also as a tool's arguments and
// result) in a page whose CSP is switched off, so the sanitizer alone stands between them and the
// page: no vector runs (each would call alert(n)), none leaves an element or attribute that could
// run script or load anything, in the chat, the trace or the raw events, streamed or replayed.
import { readFileSync } from "node:fs";
import { browser, equal, fail, scenario, send, status, texts } from "./lib.mjs";

/** Records what the page's CSP refused (a sanitizer that did its job leaves nothing to refuse). */
function watchViolations() {
  /** @type {string[]} */
  const violations = [];
  Object.defineProperty(window, "violations", { value: violations });
  document.addEventListener("securitypolicyviolation", (e) => violations.push(`${e.violatedDirective} ${e.blockedURI} ${e.sample}`));
}

/** Everything in the chat, trace and raw views that could run script or load something, and any
 * rendered Markdown outside what Markdown makes. Runs in the page. */
function dangers() {
  const found = [];
  const never = new Set(["script", "iframe", "frame", "frameset", "object", "embed", "svg", "math", "img", "image", "style", "link", "meta", "base", "form", "video", "audio", "source", "template", "noscript", "marquee", "applet", "body", "html"]);
  const markdownTags = new Set(["a", "blockquote", "br", "code", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "li", "ol", "p", "pre", "s", "span", "strong", "table", "tbody", "td", "th", "thead", "tr", "ul"]);
  const markdownAttrs = new Set(["href", "title", "start", "class", "target", "rel"]);
  const urlAttrs = new Set(["href", "src", "action", "formaction", "xlink:href", "data", "poster", "background", "srcset", "ping"]);
  const roots = ["#chat", "#trace", "#raw"].map((s) => document.querySelector(s));
  for (const root of roots) {
    for (const node of root.querySelectorAll("*")) {
      const tag = node.tagName.toLowerCase();
      const where = `<${tag}> in ${node.closest(".turn, .call, .line, .span")?.className || root.id}`;
      if (never.has(tag)) found.push(`${where}: a ${tag} element`);
      for (const { name, value } of node.attributes) {
        const attr = name.toLowerCase();
        // The trace positions its bars with inline styles of its own (set from script, which the
        // CSP allows); nowhere else has any.
        const styled = attr === "style" && root.id !== "trace";
        if (attr.startsWith("on") || styled || attr === "srcdoc") found.push(`${where}: ${name}=${value}`);
        if (urlAttrs.has(attr) && !/^(https?:|mailto:)/i.test(value.trim())) found.push(`${where}: ${name}=${value}`);
      }
      if (node.closest(".markdown") && node.closest(".markdown") !== node) {
        if (!markdownTags.has(tag)) found.push(`${where}: not Markdown`);
        for (const { name, value } of node.attributes) if (!markdownAttrs.has(name)) found.push(`${where}: ${name}=${value} is not Markdown's`);
        if (tag === "a" && node.hasAttribute("href") && (node.getAttribute("target") !== "_blank" || node.getAttribute("rel") !== "noopener noreferrer")) {
          found.push(`${where}: a link without target=_blank rel="noopener noreferrer"`);
        }
      }
    }
  }
  // Tool names, arguments and results are text, never markup.
  for (const node of document.querySelectorAll("#chat .call .tool, #chat .call pre")) {
    if (node.children.length) found.push(`${node.className} holds elements: ${node.innerHTML}`);
  }
  return found.length > 20 ? [...found.slice(0, 20), `and ${found.length - 20} more`] : found;
}

scenario(async (url, casesFile) => {
  const cases = JSON.parse(readFileSync(casesFile, "utf8"));
  /** @type {string[]} */
  const vectors = cases.vectors;

  // Markdown, under the page's own CSP (with Trusted Types).
  const a = await browser();
  await a.context.addInitScript(watchViolations);
  const dialogs = [];
  a.page.on("dialog", (dialog) => {
    dialogs.push(dialog.message());
    dialog.dismiss();
  });
  await a.page.goto(`${url}/playground`);
  await send(a.page, "markdown please");
  await status(a.page, "waiting");
  const md = ".turn.assistant .markdown";
  equal(await texts(a.page, `${md} strong`), ["bold"], "bold");
  equal(await texts(a.page, `${md} em`), ["italic"], "italic");
  equal(await texts(a.page, `${md} p > code`), ["inline code"], "inline code");
  equal(await texts(a.page, `${md} s`), ["struck"], "strikethrough");
  equal(await texts(a.page, `${md} ul > li`), ["one", "two"], "bullet list");
  equal(await texts(a.page, `${md} ol > li`), ["three", "four"], "numbered list");
  equal(await a.page.getAttribute(`${md} ol`, "start"), "3", "the numbered list's start");
  equal(await texts(a.page, `${md} table thead th`), ["Name", "Count"], "table head");
  equal(await texts(a.page, `${md} table tbody td`), ["apples", "3"], "table body");
  equal(await a.page.$$eval(`${md} table td`, (cells) => cells.map((c) => c.className)), ["align-left", "align-right"], "column alignment");
  equal(await a.page.getAttribute(`${md} pre > code`, "class"), "hljs language-rust", "the code block's classes");
  equal(await texts(a.page, `${md} pre > code`), ['fn main() {\n    println!("hi");\n}\n'], "the code block's text");
  equal(await texts(a.page, `${md} pre .hljs-keyword`), ["fn"], "highlighted keywords");
  equal(await texts(a.page, `${md} pre .hljs-string`), ['"hi"'], "highlighted strings");
  equal(
    await a.page.$$eval(`${md} a`, (links) => links.map((l) => [l.textContent, l.getAttribute("href"), l.getAttribute("target"), l.getAttribute("rel"), l.getAttribute("title"), l.className])),
    [
      ["the docs", "https://example.com/docs", "_blank", "noopener noreferrer", "Docs", ""],
      ["ops@example.com", "mailto:ops@example.com", "_blank", "noopener noreferrer", null, ""],
      ["https://example.com/bare", "https://example.com/bare", "_blank", "noopener noreferrer", null, ""],
      ["image: a diagram", "https://example.com/d.png", "_blank", "noopener noreferrer", null, "image"],
    ],
    "links (the image as one)",
  );
  equal(await texts(a.page, `${md} > p:last-child`), ["<b>not bold</b> and a [script link](javascript:alert(1))"], "raw HTML and a script link, as text");
  equal(await a.page.$$eval(`${md} img, ${md} b`, (nodes) => nodes.length), 0, "images and raw HTML elements");
  equal(await a.page.evaluate(dangers), [], "dangers in the Markdown page");
  equal(await a.page.evaluate(() => window.violations), [], "what the CSP refused on the Markdown page");

  // Hostile replies, then every vector as a tool's arguments and result, with the CSP off.
  const b = await browser(undefined, { bypassCSP: true });
  b.page.on("dialog", (dialog) => {
    dialogs.push(dialog.message());
    dialog.dismiss();
  });
  b.page.on("popup", (popup) => fail(`a popup opened: ${popup.url()}`));
  await b.page.goto(`${url}/playground`);
  for (let i = 1; i <= cases.replies; i++) {
    await send(b.page, `hostile ${i}`);
    await b.page.waitForFunction((n) => document.querySelectorAll(".turn-footer").length === n, i);
    if (dialogs.length) fail(`reply ${i} ran script: alert(${dialogs.join(", ")})`);
  }
  await send(b.page, "now the tools");
  await b.page.waitForFunction((n) => document.querySelectorAll(".turn-footer").length === n, cases.replies + 1);
  const calls = await b.page.$$eval("#chat .call", (cards) =>
    cards.map((card) => ({
      tool: card.querySelector(".tool")?.textContent,
      args: card.querySelector(".args")?.textContent,
      result: card.querySelector(".result")?.textContent,
    })),
  );
  equal(calls.length, vectors.length + 1, "tool calls");
  vectors.forEach((vector, i) => {
    equal(JSON.parse(calls[i].args || ""), { text: vector }, `call ${i + 1}'s arguments`);
    // echo (`cat`) answers what it was given: the call's context and its input.
    equal(JSON.parse(calls[i].result || "").input, { text: vector }, `call ${i + 1}'s result`);
  });
  equal(calls[vectors.length].tool, "<img src=x onerror=alert(0)>", "a hostile tool name, as text");
  const stats = await b.page.evaluate(() => ({
    links: document.querySelectorAll("#chat .markdown a[href]").length,
    escaped: [...document.querySelectorAll("#chat .markdown")].filter((m) => m.textContent.includes("<img src=x onerror=")).length,
  }));
  let found = await b.page.evaluate(dangers);
  for (const view of ["trace", "raw"]) {
    await b.page.click(`#tabs button[data-tab="${view}"]`);
    await b.page.waitForSelector(view === "trace" ? '.span[data-kind="tool"]' : "#raw .line");
  }
  found = found.concat(await b.page.evaluate(dangers));
  // The same session replayed from its log, without the CSP and then with it.
  const session = new URL(b.page.url()).searchParams.get("session");
  await b.page.goto(`${url}/playground?session=${session}`);
  await b.page.waitForFunction((n) => document.querySelectorAll(".turn-footer").length === n, cases.replies + 1);
  found = found.concat(await b.page.evaluate(dangers));
  await a.page.goto(`${url}/playground?session=${session}`);
  await a.page.waitForFunction((n) => document.querySelectorAll(".turn-footer").length === n, cases.replies + 1);
  found = found.concat(await a.page.evaluate(dangers));
  equal(found, [], "dangerous elements or attributes");
  equal(dialogs, [], "alerts (scripts that ran)");
  equal(await a.page.evaluate(() => window.violations), [], "what the CSP refused");
  console.log(`${cases.replies} hostile replies and ${vectors.length} hostile tool calls: nothing ran; ${stats.links} links kept, ${stats.escaped} replies show an <img onerror> as text`);
  await b.close();
  await a.close();
});
