// @ts-check
// The playground's glue: which session and tab are shown (`?session=…&view=…`; tokens never go
// in the URL), the live stream of the open session, and the actions of the Chat view.

import { ApiError, call, follow, setBearer } from "./api.js";
import { ChatView } from "./chat.js";
import { renderAgent } from "./agent.js";
import { followLogs } from "./logs.js";
import { renderRaw } from "./raw.js";
import { renderRuns } from "./runs.js";
import { renderEvals } from "./evals.js";
import { renderTrace } from "./trace.js";

/** @typedef {import("folio-api").Event} FolioEvent */

const VIEWS = ["chat", "trace", "raw", "runs", "agent", "logs", "evals"];

/** @param {string} id */
function byId(id) {
  return /** @type {HTMLElement} */ (document.getElementById(id));
}

const state = {
  /** @type {string | null} */
  sessionId: null,
  /** @type {FolioEvent[]} */
  events: [],
  /** @type {AbortController | null} */
  stream: null,
  /** @type {AbortController | null} */
  logs: null,
  view: "chat",
  /** @type {number | null} */
  focus: null,
};

const chat = new ChatView(byId("chat"), {
  decide: (callId, decision, reason) =>
    act(() =>
      call("POST", `/v1/session/${state.sessionId}/approvals/${encodeURIComponent(callId)}`, reason ? { decision, reason } : { decision }),
    ),
  answer: (callId, decision, content) =>
    act(() =>
      call(
        "POST",
        `/v1/session/${state.sessionId}/approvals/${encodeURIComponent(callId)}`,
        content === undefined ? { decision } : { decision, content },
      ),
    ),
  fork: (atIndex, message) =>
    act(async () => {
      const answer = await call("POST", `/v1/session/${state.sessionId}/fork`, { atIndex, message });
      keepToken(answer.sessionId, answer.continuationToken);
      open(answer.sessionId, "chat");
    }),
});

/** Runs an action, showing its error (if any) above the views. */
async function act(/** @type {() => Promise<unknown>} */ action) {
  showError("");
  try {
    await action();
  } catch (error) {
    showError(error instanceof Error ? error.message : String(error));
  }
}

function showError(/** @type {string} */ message) {
  const box = byId("error");
  box.textContent = message;
  box.hidden = !message;
}

// Continuation tokens live in this tab's session storage (never in the URL), so a reload can
// continue; a run opened from the list gets one from the server (`POST …/token`) when needed.
/** @param {string} sessionId */
const tokenKey = (sessionId) => `folio.token.${sessionId}`;
function keepToken(/** @type {string} */ sessionId, /** @type {string} */ token) {
  sessionStorage.setItem(tokenKey(sessionId), token);
}

/** The session's continuation token, obtained from the server for its owner when unknown. */
async function token(/** @type {string} */ sessionId, /** @type {boolean} */ fresh) {
  const kept = sessionStorage.getItem(tokenKey(sessionId));
  if (kept && !fresh) return kept;
  const answer = await call("POST", `/v1/session/${sessionId}/token`, {});
  keepToken(sessionId, answer.continuationToken);
  return answer.continuationToken;
}

/**
 * Shows `sessionId` (null: a new session) in `view`, following its stream; `push` adds a
 * history entry (not when the page loads or goes back).
 */
function open(/** @type {string | null} */ sessionId, /** @type {string} */ view, push = true) {
  state.stream?.abort();
  state.stream = null;
  state.sessionId = sessionId;
  state.events = [];
  state.focus = null;
  chat.reset();
  document.body.dataset.status = sessionId ? "" : "new";
  byId("save-case").hidden = !sessionId;
  byId("case-saved").textContent = "";
  byId("session-label").textContent = sessionId || "new session";
  const url = new URL(location.href);
  if (sessionId) url.searchParams.set("session", sessionId);
  else url.searchParams.delete("session");
  url.searchParams.set("view", view);
  if (push) history.pushState(null, "", url);
  else history.replaceState(null, "", url);
  if (sessionId) {
    const controller = new AbortController();
    state.stream = controller;
    follow(sessionId, 0, received, connection, controller.signal);
  }
  show(view);
}

/** The connection badge; a refused stream (not found, another principal's) says why. */
function connection(/** @type {string} */ status, /** @type {string | undefined} */ detail) {
  const badge = byId("connection");
  badge.textContent = status;
  badge.className = `badge ${status}`;
  if (status === "closed" && detail) showError(detail);
}

let redraw = 0;
function received(/** @type {FolioEvent} */ event) {
  state.events.push(event);
  chat.add(event);
  const status = statusAfter(event);
  if (status) document.body.dataset.status = status;
  document.body.dataset.events = String(state.events.length);
  if ((state.view === "trace" || state.view === "raw") && !redraw) {
    redraw = requestAnimationFrame(() => {
      redraw = 0;
      renderView();
    });
  }
}

/** The session status an event implies (for the page and its tests). */
function statusAfter(/** @type {FolioEvent} */ event) {
  switch (event.type) {
    case "turn.started":
      return "running";
    case "action.approval_requested":
    case "action.authorization_requested":
      return "approval";
    case "action.approval_resolved":
    case "action.authorization_resolved":
      return "running";
    case "session.waiting":
      return "waiting";
    case "session.completed":
      return "completed";
    case "session.failed":
      return "failed";
    default:
      return null;
  }
}

/**
 * The agent's name in the header; with bearer or tokens-file auth this first call answers 401
 * and the page asks for a token.
 */
function loadTitle() {
  act(async () => {
    /** @type {import("folio-api").AgentDescription} */
    const agent = await call("GET", "/v1/agent");
    byId("title").textContent = `${agent.agent.name} · playground`;
  });
}

/** Shows a tab. */
function show(/** @type {string} */ view) {
  state.view = VIEWS.includes(view) ? view : "chat";
  for (const section of document.querySelectorAll("main > section")) {
    /** @type {HTMLElement} */ (section).hidden = /** @type {HTMLElement} */ (section).dataset.view !== state.view;
  }
  for (const tab of document.querySelectorAll("#tabs button")) {
    tab.setAttribute("aria-selected", String(/** @type {HTMLElement} */ (tab).dataset.tab === state.view));
  }
  const url = new URL(location.href);
  url.searchParams.set("view", state.view);
  history.replaceState(null, "", url);
  state.logs?.abort();
  state.logs = null;
  renderView();
}

function renderView() {
  const openEvent = (/** @type {number} */ index) => {
    state.focus = index;
    show("raw");
  };
  switch (state.view) {
    case "trace":
      renderTrace(byId("trace"), state.events, openEvent);
      break;
    case "raw":
      renderRaw(byId("raw"), /** @type {HTMLSelectElement} */ (byId("raw-filter")), state.events, state.focus);
      break;
    case "runs":
      act(() => renderRuns(byId("runs"), /** @type {HTMLInputElement} */ (byId("runs-search")).value, open));
      break;
    case "agent":
      act(() => renderAgent(byId("agent"), () => state.sessionId));
      break;
    case "evals":
      act(() => renderEvals(byId("evals"), (id) => open(id, "chat")));
      break;
    case "logs": {
      const controller = new AbortController();
      state.logs = controller;
      followLogs(byId("logs"), controller.signal);
      break;
    }
    default:
      break;
  }
}

/** The chosen files as `workspaceFiles` (name → text). */
async function workspaceFiles() {
  const input = /** @type {HTMLInputElement} */ (byId("files"));
  /** @type {Record<string, string>} */
  const files = {};
  for (const file of input.files || []) files[file.name] = await file.text();
  input.value = "";
  return files;
}

async function send() {
  const box = /** @type {HTMLTextAreaElement} */ (byId("message"));
  const message = box.value;
  if (!message.trim()) return;
  const files = await workspaceFiles();
  const admission = /** @type {HTMLSelectElement} */ (byId("admission")).value;
  await act(async () => {
    if (!state.sessionId) {
      const answer = await call("POST", "/v1/session", { message, workspaceFiles: files });
      keepToken(answer.sessionId, answer.continuationToken);
      box.value = "";
      open(answer.sessionId, "chat");
      return;
    }
    const id = state.sessionId;
    const body = (/** @type {string} */ continuationToken) => ({ continuationToken, message, admission, workspaceFiles: files });
    let answer;
    try {
      answer = await call("POST", `/v1/session/${id}`, body(await token(id, false)));
    } catch (error) {
      if (!(error instanceof ApiError) || error.code !== "stale_continuation_token") throw error;
      answer = await call("POST", `/v1/session/${id}`, body(await token(id, true)));
    }
    keepToken(id, answer.continuationToken);
    box.value = "";
  });
}

/** Saves the open run as an eval case of the agent's evals (`evals/from-session/<name>.eval.toml`). */
function saveCase() {
  const id = state.sessionId;
  if (!id) return;
  const input = /** @type {HTMLInputElement} */ (byId("case-name"));
  const name = input.value.trim() || id;
  act(async () => {
    /** @type {import("folio-api").EvalCaseSaved} */
    const saved = await call("POST", `/v1/session/${id}/eval-case`, { name });
    byId("case-saved").textContent = `Saved ${saved.path}: \`folio eval --filter ${saved.evalId}\` runs it.`;
    input.value = "";
  });
}

function stop() {
  if (state.sessionId) act(() => call("POST", `/v1/session/${state.sessionId}/stop`, {}));
}

byId("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  send();
});
byId("stop").addEventListener("click", stop);
byId("save-case").addEventListener("submit", (event) => {
  event.preventDefault();
  saveCase();
});
byId("message").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    send();
  }
});
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape") stop();
});
byId("new-session").addEventListener("click", () => open(null, "chat"));
for (const tab of document.querySelectorAll("#tabs button")) {
  tab.addEventListener("click", () => show(/** @type {HTMLElement} */ (tab).dataset.tab || "chat"));
}
byId("raw-filter").addEventListener("change", () => renderView());
byId("runs-search").addEventListener("input", () => renderView());
window.addEventListener("folio:unauthorized", () => {
  byId("auth").hidden = false;
});
byId("auth").addEventListener("submit", (event) => {
  event.preventDefault();
  setBearer(/** @type {HTMLInputElement} */ (byId("bearer")).value);
  byId("auth").hidden = true;
  loadTitle();
  const params = new URLSearchParams(location.search);
  open(params.get("session"), params.get("view") || "chat");
});
window.addEventListener("popstate", () => {
  const params = new URLSearchParams(location.search);
  open(params.get("session"), params.get("view") || "chat", false);
});

const params = new URLSearchParams(location.search);
open(params.get("session"), params.get("view") || "chat", false);
loadTitle();
