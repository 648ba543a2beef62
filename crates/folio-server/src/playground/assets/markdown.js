// @ts-check
// Model text as Markdown. markdown-it parses it (CommonMark with GFM tables and strikethrough;
// raw HTML is shown as text; `javascript:`, `vbscript:`, `file:` and most `data:` link targets are
// refused), highlight.js colours fenced code with a known language, and DOMPurify keeps only the
// elements and attributes Markdown makes before anything reaches the page: links to http(s) and
// mailto only, each opening in a new tab without an opener or referrer. Images are never loaded
// (a model's image URL can carry the conversation to a third party): each shows as a link to it.
// The libraries are vendored unchanged from npm (vendor/, pinned in ../vendor.txt).

import MarkdownIt from "./vendor/markdown-it.esm.min.mjs";
import DOMPurify from "./vendor/purify.es.mjs";
import hljs from "./vendor/highlight.min.js";

/** The elements markdown-it makes (its default preset, images as links); nothing else stays. */
const ALLOWED_TAGS = [
  "a", "blockquote", "br", "code", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "li", "ol", "p",
  "pre", "s", "span", "strong", "table", "tbody", "td", "th", "thead", "tr", "ul",
];
/** Their attributes: link targets and titles, list starts, classes (highlighting, alignment). */
const ALLOWED_ATTR = ["href", "title", "start", "class"];
/** The only link targets kept: web pages and mail addresses. */
const ALLOWED_URI_REGEXP = /^(?:https?|mailto):/i;
/** Attributes that are not URLs (DOMPurify checks the others against the regexp above). */
const ADD_URI_SAFE_ATTR = ["start"];

const md = new MarkdownIt("default", {
  html: false,
  linkify: true,
  highlight(code, lang) {
    if (!lang || !hljs.getLanguage(lang)) return "";
    const html = hljs.highlight(code, { language: lang, ignoreIllegals: true }).value;
    return `<pre><code class="hljs language-${md.utils.escapeHtml(lang)}">${html}</code></pre>`;
  },
});

// An image is a link to it, labelled with its description.
md.renderer.rules.image = (tokens, idx, options, env, self) => {
  const token = tokens[idx];
  const alt = self.renderInlineAsText(token.children || [], options, env);
  const href = md.utils.escapeHtml(token.attrGet("src") || "");
  return `<a class="image" href="${href}">${md.utils.escapeHtml(alt ? `image: ${alt}` : "image")}</a>`;
};

// A table column's alignment as a class: the page's CSP refuses inline styles.
md.core.ruler.push("alignment_as_class", (state) => {
  for (const token of state.tokens) {
    const align = /^text-align:(left|center|right)$/.exec(token.attrGet("style") || "");
    if (!align) continue;
    token.attrs = (token.attrs || []).filter(([name]) => name !== "style");
    token.attrSet("class", `align-${align[1]}`);
  }
});

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.nodeName === "A" && node.hasAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

/** Shows `source` (Markdown) in `target`, replacing what it showed. */
export function renderMarkdown(/** @type {HTMLElement} */ target, /** @type {string} */ source) {
  if (!DOMPurify.isSupported) {
    target.textContent = source;
    return;
  }
  const html = md.render(source).trim();
  target.replaceChildren(DOMPurify.sanitize(html, { ALLOWED_TAGS, ALLOWED_ATTR, ALLOWED_URI_REGEXP, ADD_URI_SAFE_ATTR, RETURN_DOM_FRAGMENT: true }));
}
