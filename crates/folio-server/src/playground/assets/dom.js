// @ts-check
// Small DOM helpers shared by the views (text is always set as text, never as HTML).

/**
 * Creates an element with a class, text and children.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {{ cls?: string, text?: string, attrs?: Record<string, string> }} [options]
 * @param {(Node | string)[]} [children]
 * @returns {HTMLElementTagNameMap[K]}
 */
export function el(tag, options = {}, children = []) {
  const node = document.createElement(tag);
  if (options.cls) node.className = options.cls;
  if (options.text !== undefined) node.textContent = options.text;
  for (const [name, value] of Object.entries(options.attrs || {})) node.setAttribute(name, value);
  for (const child of children) node.append(child);
  return node;
}

/** Pretty JSON for display. */
export function json(/** @type {unknown} */ value) {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

/** A duration in milliseconds for people: `850 ms`, `2.4 s`. */
export function duration(/** @type {number} */ ms) {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/**
 * Token usage for people: the whole prompt (uncached, cache reads and writes) and the output,
 * with the cost when the model has a price, e.g. `120 in · 45 out · $0.0012`; "" when nothing
 * was reported. The Runs list, the Trace and the chat all show usage so, so their figures
 * compare.
 * @param {import("folio-api").Usage | null | undefined} usage
 */
export function tokens(usage) {
  if (!usage) return "";
  const input = (usage.inputTokens ?? 0) + (usage.cacheReadTokens ?? 0) + (usage.cacheWriteTokens ?? 0);
  const output = usage.outputTokens ?? 0;
  if (!input && !output) return "";
  const cost = typeof usage.costUsd === "number" ? ` · ${usd(usage.costUsd)}` : "";
  return `${input} in · ${output} out${cost}`;
}

/** Dollars as `folio` prints them: `$1.23`, two significant digits below a cent. */
export function usd(/** @type {number} */ cost) {
  if (cost >= 0.01 || cost === 0) return `$${cost.toFixed(2)}`;
  return `$${cost.toFixed(Math.ceil(-Math.log10(cost)) + 1)}`;
}

/** A local time for a RFC 3339 timestamp. */
export function time(/** @type {string} */ at) {
  const date = new Date(at);
  return Number.isNaN(date.getTime()) ? at : date.toLocaleString();
}
