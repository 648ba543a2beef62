// @ts-check
// The Raw view: the session's NDJSON, one event per line, filterable by type.

import { el } from "./dom.js";

/** @typedef {import("folio-api").Event} FolioEvent */

/**
 * Renders `events` whose type is `type` (all when empty) into `root`, marking `focus`.
 * @param {HTMLElement} root
 * @param {HTMLSelectElement} filter
 * @param {FolioEvent[]} events
 * @param {number | null} focus
 */
export function renderRaw(root, filter, events, focus) {
  const chosen = filter.value;
  /** @type {string[]} */
  const types = [...new Set(events.map((e) => e.type))].sort();
  filter.textContent = "";
  filter.append(el("option", { text: "every type", attrs: { value: "" } }));
  for (const type of types) filter.append(el("option", { text: type, attrs: { value: type } }));
  filter.value = types.includes(chosen) ? chosen : "";
  root.textContent = "";
  for (const event of events) {
    if (filter.value && event.type !== filter.value) continue;
    const line = el("div", { cls: event.index === focus ? "line focus" : "line", text: JSON.stringify(event), attrs: { id: `event-${event.index}` } });
    root.append(line);
  }
  if (focus !== null) document.getElementById(`event-${focus}`)?.scrollIntoView({ block: "center" });
}
