// @ts-check
// The Trace view: a waterfall of a session's turns, model steps, tool calls and subagents with
// their durations and tokens, built from the event log; each bar links to its events in Raw.

import { duration, el, tokens } from "./dom.js";

/** @typedef {import("folio-api").Event} FolioEvent */

/**
 * One bar of the waterfall.
 * @typedef {object} Span
 * @property {"turn" | "step" | "tool" | "subagent"} kind
 * @property {string} label
 * @property {number} start ms since epoch
 * @property {number | null} end ms since epoch (null while running)
 * @property {number} depth
 * @property {number} startIndex the event that opened it
 * @property {number | null} endIndex the event that closed it
 * @property {string} detail
 * @property {string} tokens the tokens it used (a model step's, a turn's total), or ""
 * @property {boolean} error
 */

/** Builds the spans of a session from its events, in the order they started. */
export function spans(/** @type {FolioEvent[]} */ events) {
  /** @type {Span[]} */
  const out = [];
  /** @type {Span | null} */
  let turn = null;
  /** @type {Span | null} */
  let step = null;
  /** @type {Map<string, Span>} */
  const calls = new Map();
  /** @type {Map<string, Span>} */
  const subagents = new Map();
  // Steps and calls of a running subagent are drawn under it.
  let inner = 0;
  for (const event of events) {
    const at = Date.parse(event.at);
    /** @param {Span} span @param {string} [detail] @param {boolean} [error] */
    const close = (span, detail, error) => {
      span.end = at;
      span.endIndex = event.index;
      if (detail) span.detail = detail;
      if (error) span.error = true;
    };
    /** @param {Span["kind"]} kind @param {string} label @param {number} depth @returns {Span} */
    const open = (kind, label, depth) => {
      /** @type {Span} */
      const span = { kind, label, start: at, end: null, depth, startIndex: event.index, endIndex: null, detail: "", tokens: "", error: false };
      out.push(span);
      return span;
    };
    switch (event.type) {
      case "turn.started":
        turn = open("turn", `turn · ${event.data.model}`, 0);
        break;
      case "turn.completed":
        if (turn) {
          close(turn, `${event.data.steps} steps · ${duration(event.data.durationMs)}`);
          turn.tokens = tokens(event.data.usage);
        }
        turn = null;
        break;
      case "turn.failed":
        if (turn) close(turn, event.data.message, true);
        if (step && step.end === null) close(step, "", true);
        for (const span of calls.values()) if (span.end === null) close(span, "not finished", true);
        turn = null;
        inner = 0;
        break;
      case "step.started":
        step = open("step", `model step ${event.data.step}`, 1 + 3 * inner);
        break;
      case "step.completed":
        if (step) {
          close(step, `${duration(event.data.durationMs)} · ${event.data.finishReason}`);
          step.tokens = tokens(event.data.usage);
        }
        break;
      case "actions.requested":
        for (const call of event.data.calls) calls.set(`${inner}:${call.callId}`, open("tool", `tool ${call.tool}`, 2 + 3 * inner));
        break;
      case "action.result": {
        const span = calls.get(`${inner}:${event.data.callId}`);
        if (span) close(span, duration(event.data.durationMs), event.data.isError);
        break;
      }
      case "subagent.called":
        subagents.set(`${inner}:${event.data.callId}`, open("subagent", `subagent ${event.data.subagent}`, 3 + 3 * inner));
        inner += 1;
        break;
      case "subagent.completed": {
        inner = Math.max(0, inner - 1);
        const span = subagents.get(`${inner}:${event.data.callId}`);
        if (span) close(span, "", event.data.isError);
        break;
      }
      default:
        break;
    }
  }
  return out;
}

/**
 * The tokens of every finished turn of `events`, summed (what the Runs list shows for the
 * session); null when no turn reported any.
 * @param {FolioEvent[]} events
 * @returns {import("folio-api").Usage | null}
 */
export function sessionUsage(events) {
  let inputTokens = 0;
  let outputTokens = 0;
  let cacheReadTokens = 0;
  let cacheWriteTokens = 0;
  let costUsd = 0;
  let priced = true;
  let reported = false;
  for (const event of events) {
    if (event.type !== "turn.completed" || !event.data.usage) continue;
    const usage = event.data.usage;
    reported = true;
    inputTokens += usage.inputTokens ?? 0;
    outputTokens += usage.outputTokens ?? 0;
    cacheReadTokens += usage.cacheReadTokens ?? 0;
    cacheWriteTokens += usage.cacheWriteTokens ?? 0;
    // A turn with tokens and no price leaves the session's cost unknown, as the server sums it.
    const tokens = (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0) + (usage.cacheReadTokens ?? 0) + (usage.cacheWriteTokens ?? 0);
    if (typeof usage.costUsd === "number") costUsd += usage.costUsd;
    else if (tokens > 0) priced = false;
  }
  return reported
    ? { inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens, costUsd: priced ? costUsd : null }
    : null;
}

/**
 * Renders the waterfall of `events` into `root`; `openEvent(index)` shows an event.
 * @param {HTMLElement} root
 * @param {FolioEvent[]} events
 * @param {(index: number) => void} openEvent
 */
export function renderTrace(root, events, openEvent) {
  root.textContent = "";
  const all = spans(events);
  if (!all.length) {
    root.append(el("p", { cls: "empty", text: "No turns yet." }));
    return;
  }
  root.append(el("p", { cls: "trace-total" }, ["Tokens, every finished turn: ", el("span", { cls: "tokens", text: tokens(sessionUsage(events)) || "none reported" })]));
  const last = events.length ? Date.parse(events[events.length - 1].at) : Date.now();
  const t0 = all[0].start;
  const total = Math.max(1, Math.max(last, ...all.map((s) => s.end ?? last)) - t0);
  for (const span of all) {
    const end = span.end ?? last;
    const bar = el("div", { cls: `bar bar-${span.kind}${span.error ? " error" : ""}` });
    bar.style.marginLeft = `${((span.start - t0) / total) * 100}%`;
    bar.style.width = `${Math.max(0.5, ((end - span.start) / total) * 100)}%`;
    const link = el("button", { cls: "link", text: `#${span.startIndex}`, attrs: { title: "Show this event" } });
    link.onclick = () => openEvent(span.startIndex);
    const label = el("div", { cls: "span-label" }, [
      el("span", { text: span.label }),
      " ",
      el("span", { cls: "detail", text: span.end === null ? "running…" : span.detail || duration(end - span.start) }),
      " ",
      ...(span.tokens ? [el("span", { cls: "tokens", text: span.tokens }), " "] : []),
      link,
    ]);
    label.style.paddingLeft = `${span.depth}em`;
    root.append(el("div", { cls: "span", attrs: { "data-kind": span.kind } }, [label, el("div", { cls: "track" }, [bar])]));
  }
}
