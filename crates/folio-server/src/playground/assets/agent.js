// @ts-check
// The Agent tab: what `GET /v1/agent` describes (tools with their schemas, skills, subagents,
// connections, channels, hooks, schedules with their next fire times from `GET /v1/schedules`,
// artifacts, diagnostics), and a form generated from a tool's input schema to call it directly.

import { call } from "./api.js";
import { el, json } from "./dom.js";

/** @typedef {import("folio-api").AgentDescription} AgentDescription */
/** @typedef {import("folio-api").ToolDescription} ToolDescription */

/**
 * One form field per property of an object schema; anything else is one JSON field.
 * @param {any} schema
 * @returns {{ node: HTMLElement, value: () => unknown }}
 */
export function schemaForm(schema) {
  const properties = schema && schema.type === "object" && schema.properties ? schema.properties : null;
  if (!properties) {
    const area = el("textarea", { cls: "json-input", attrs: { "aria-label": "input (JSON)" } });
    area.value = "{}";
    return { node: el("label", {}, ["input (JSON)", area]), value: () => JSON.parse(area.value || "null") };
  }
  const required = new Set(schema.required || []);
  /** @type {[string, () => unknown][]} */
  const fields = [];
  const node = el("div", { cls: "schema-form" });
  for (const [name, property] of Object.entries(properties)) {
    /** @type {any} */
    const p = property;
    const title = `${name}${required.has(name) ? " *" : ""}`;
    let input;
    /** @type {() => unknown} */
    let read;
    if (p.type === "boolean") {
      input = el("input", { attrs: { type: "checkbox", name } });
      const box = input;
      read = () => box.checked;
    } else if (Array.isArray(p.enum)) {
      input = el("select", { attrs: { name } }, p.enum.map((/** @type {unknown} */ v) => el("option", { text: String(v) })));
      const select = input;
      read = () => select.value;
    } else if (p.type === "integer" || p.type === "number") {
      input = el("input", { attrs: { type: "number", name } });
      const number = input;
      read = () => (number.value === "" ? undefined : Number(number.value));
    } else if (p.type === "string") {
      input = el("input", { attrs: { type: "text", name } });
      const text = input;
      read = () => (text.value === "" && !required.has(name) ? undefined : text.value);
    } else {
      input = el("textarea", { cls: "json-input", attrs: { name, placeholder: "JSON" } });
      const area = input;
      read = () => (area.value === "" ? undefined : JSON.parse(area.value));
    }
    fields.push([name, read]);
    node.append(el("label", { attrs: { title: p.description || "" } }, [title, input]));
  }
  return {
    node,
    value: () => {
      /** @type {Record<string, unknown>} */
      const out = {};
      for (const [name, read] of fields) {
        const v = read();
        if (v !== undefined) out[name] = v;
      }
      return out;
    },
  };
}

/** A tool with its schema and a Try form (session-scoped when a session is open). */
function toolCard(/** @type {ToolDescription} */ tool, /** @type {() => string | null} */ sessionId) {
  const form = schemaForm(tool.inputSchema);
  const run = el("button", { text: "Call" });
  const out = el("pre", { cls: "result" });
  run.onclick = async () => {
    out.textContent = "…";
    try {
      const id = sessionId();
      const path = id ? `/v1/session/${id}/tools/${encodeURIComponent(tool.name)}` : `/v1/tools/${encodeURIComponent(tool.name)}`;
      const answer = await call("POST", path, { input: form.value() });
      out.textContent = json(answer);
    } catch (error) {
      out.textContent = String(/** @type {Error} */ (error).message);
    }
  };
  return el("details", { cls: "tool-card", attrs: { "data-tool": tool.name } }, [
    el("summary", { text: `${tool.name}${tool.needsApproval ? " (needs approval)" : ""} — ${tool.description}` }),
    el("div", { cls: "label", text: "Input schema" }),
    el("pre", { text: json(tool.inputSchema) }),
    el("div", { cls: "label", text: "Try it" }),
    form.node,
    run,
    out,
  ]);
}

/**
 * A titled list of items, or "none".
 * @template T
 * @param {string} title
 * @param {T[]} items
 * @param {(item: T) => Node | string} show
 */
function section(title, items, show) {
  const list = el("ul");
  for (const item of items) list.append(el("li", {}, [show(item)]));
  return el("section", {}, [el("h3", { text: title }), items.length ? list : el("p", { cls: "empty", text: "none" })]);
}

/**
 * A connection's live status: failed (with the server's reason) while `error` is set; else the
 * model's connections are live when the tool registry holds their tools (`mcp__<name>__…`);
 * host connections serve hooks and channels only.
 * @param {import("folio-api").ConnectionDescription} connection
 * @param {ToolDescription[]} tools
 */
export function connectionStatus(connection, tools) {
  if (connection.error) return `failed: ${connection.error}`;
  if (connection.visibleTo === "host") return "host side (not offered to the model)";
  const count = tools.filter((tool) => tool.name.startsWith(`mcp__${connection.name}__`)).length;
  return count ? `connected · ${count} tool${count === 1 ? "" : "s"}` : "not connected (no tools listed)";
}

/**
 * A schedule's line: its cron, zone and prompt, then when it fires next (on its zone's wall
 * clock) and what its last slot did, as `GET /v1/schedules` reports them.
 * @param {import("folio-api").ScheduleInfo} schedule
 * @param {import("folio-api").ScheduleStatus | undefined} status
 */
export function scheduleLine(schedule, status) {
  const head = `${schedule.name}: ${schedule.cron}${status ? ` (${status.timezone})` : ""} — ${schedule.prompt}`;
  if (!status) return `${head} · next fire times unavailable`;
  const next = status.enabled ? status.next[0] : undefined;
  const when = next ? `next ${next.local}` : "disabled";
  const last = status.last ? ` · last ${status.last.slot}: ${status.last.outcome}${status.last.reason ? ` (${status.last.reason})` : ""}` : "";
  return `${head} · ${when}${last}`;
}

/**
 * Loads and renders the agent description.
 * @param {HTMLElement} root
 * @param {() => string | null} sessionId the open session (direct calls run in it)
 */
export async function renderAgent(root, sessionId) {
  root.textContent = "loading…";
  /** @type {AgentDescription} */
  const agent = await call("GET", "/v1/agent");
  /** @type {Map<string, import("folio-api").ScheduleStatus>} */
  const schedules = new Map();
  /** @type {string | null} */
  let schedulesError = null;
  if (agent.schedules.length) {
    try {
      /** @type {import("folio-api").SchedulesResponse} */
      const answer = await call("GET", "/v1/schedules");
      for (const status of answer.schedules) schedules.set(status.name, status);
    } catch (error) {
      schedulesError = `GET /v1/schedules failed: ${/** @type {Error} */ (error).message}`;
    }
  }
  root.textContent = "";
  root.append(
    el("h2", { text: `${agent.agent.name} · ${agent.agent.model}` }),
    el("p", { text: agent.agent.description || "" }),
    el("section", {}, [el("h3", { text: "Tools" }), ...agent.tools.map((tool) => toolCard(tool, sessionId))]),
    section("Skills", agent.skills, (s) => `${s.name} — ${s.description || ""}`),
    section("Subagents", agent.subagents, (s) => `${s.id} — ${s.description}${s.model ? ` (${s.model})` : ""}`),
    section("Connections", agent.connections, (c) => el("span", { text: `${c.name}: ${connectionStatus(c, agent.tools)} — ${json(c.transport)}` })),
    section("Channels", agent.channels, (c) => `${c.id} (${c.kind})`),
    section("Hooks", agent.hooks, (h) => `${h.name}: on ${h.events.join(", ")} runs ${h.command.join(" ")}`),
    section("Schedules", agent.schedules, (s) => el("span", { attrs: { "data-schedule": s.name } }, [scheduleLine(s, schedules.get(s.name))])),
    ...(schedulesError ? [el("p", { cls: "error", text: schedulesError })] : []),
    section("Artifacts", agent.artifacts ? [agent.artifacts] : [], (a) => el("span", { text: json(a) })),
    section("Diagnostics", agent.diagnostics, (d) => `${d.severity}: ${d.file}${d.line ? `:${d.line}` : ""} ${d.message}`),
  );
}
