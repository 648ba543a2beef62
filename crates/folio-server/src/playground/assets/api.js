// @ts-check
// The HTTP API as the page uses it: same-origin calls (the server's browser guard admits them
// unchanged), the bearer token a person typed once (session storage), and event streams that
// reconnect with startIndex after a dropped connection.

/** @typedef {import("folio-api").Event} FolioEvent */
/** @typedef {import("folio-api").ErrorBody} ErrorBody */

/** The agent's URL prefix: the page is served at `<prefix>/playground`. */
export const base = location.pathname.replace(/\/playground\/?$/, "");

const BEARER_KEY = "folio.bearer";

/** The bearer token entered in this tab, if any. */
export function bearer() {
  return sessionStorage.getItem(BEARER_KEY) || "";
}

/** Keeps (or, when empty, forgets) the bearer token for this tab. */
export function setBearer(/** @type {string} */ token) {
  if (token) sessionStorage.setItem(BEARER_KEY, token);
  else sessionStorage.removeItem(BEARER_KEY);
}

/** An API error: the server's `{error, message}` and the HTTP status. */
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} code
   * @param {string} message
   */
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Request headers: JSON bodies, and the bearer token when one was entered. */
function headers(/** @type {boolean} */ body) {
  /** @type {Record<string, string>} */
  const out = {};
  if (body) out["content-type"] = "application/json";
  const token = bearer();
  if (token) out.authorization = `Bearer ${token}`;
  return out;
}

/**
 * Calls a route of this agent and answers its JSON body; throws {@link ApiError} on an error
 * answer (and dispatches `folio:unauthorized` on a 401 so the page can ask for a token).
 * @param {string} method
 * @param {string} path the route under the agent prefix, e.g. `/v1/sessions`
 * @param {unknown} [body]
 * @returns {Promise<any>}
 */
export async function call(method, path, body) {
  const response = await fetch(base + path, {
    method,
    headers: headers(body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const type = response.headers.get("content-type") || "";
  if (!type.includes("json")) {
    if (!response.ok) throw new ApiError(response.status, "http", `${method} ${path}: HTTP ${response.status}`);
    return response.text();
  }
  const answer = await response.json();
  if (!response.ok || answer.ok === false) {
    /** @type {ErrorBody} */
    const error = answer;
    if (response.status === 401) window.dispatchEvent(new CustomEvent("folio:unauthorized"));
    throw new ApiError(response.status, error.error, error.message);
  }
  return answer;
}

/**
 * Reads an NDJSON body line by line.
 * @param {Response} response
 * @param {(value: any) => void} onLine
 * @param {AbortSignal} signal
 */
async function readLines(response, onLine, signal) {
  if (!response.body) return;
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    if (signal.aborted) return;
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n")) >= 0) {
      const text = buffer.slice(0, end);
      buffer = buffer.slice(end + 1);
      if (text.trim()) onLine(JSON.parse(text));
    }
  }
}

/** Every stored event of a session (`GET /v1/session/:id/events`). */
export async function events(/** @type {string} */ sessionId) {
  const response = await fetch(`${base}/v1/session/${sessionId}/events`, { headers: headers(false) });
  if (!response.ok) {
    const error = await response.json();
    throw new ApiError(response.status, error.error, error.message);
  }
  /** @type {FolioEvent[]} */
  const out = [];
  await readLines(response, (event) => out.push(event), new AbortController().signal);
  return out;
}

/**
 * Follows a session's stream from `startIndex`, reconnecting (with the next index) after a
 * dropped connection until `signal` aborts, so no event is missed or delivered twice.
 * @param {string} sessionId
 * @param {number} startIndex
 * @param {(event: FolioEvent) => void} onEvent
 * @param {(state: "live" | "reconnecting" | "closed", detail?: string) => void} onState
 * @param {AbortSignal} signal
 */
export async function follow(sessionId, startIndex, onEvent, onState, signal) {
  let next = startIndex;
  let delay = 250;
  while (!signal.aborted) {
    try {
      const response = await fetch(`${base}/v1/session/${sessionId}/stream?startIndex=${next}`, {
        headers: headers(false),
        signal,
      });
      if (!response.ok) {
        const error = await response.json().catch(() => ({ message: `HTTP ${response.status}` }));
        onState("closed", error.message);
        return;
      }
      onState("live");
      delay = 250;
      await readLines(
        response,
        (/** @type {FolioEvent} */ event) => {
          if (event.index < next) return;
          next = event.index + 1;
          onEvent(event);
        },
        signal,
      );
    } catch (error) {
      if (signal.aborted) return;
    }
    if (signal.aborted) return;
    onState("reconnecting");
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 4000);
  }
}
