// @ts-check
// The Runs list: the caller's sessions (every principal's under `folio dev` on loopback),
// searchable, with status, title, A/B variant, time, turns and tokens; each opens as Chat,
// Trace or Raw.

import { ApiError, call } from "./api.js";
import { el, time, tokens } from "./dom.js";

/** @typedef {import("folio-api").SessionSummary} SessionSummary */

/**
 * Lists runs matching `q` into `root`; `open(id, view)` opens one.
 * @param {HTMLElement} root
 * @param {string} q
 * @param {(sessionId: string, view: string) => void} open
 */
export async function renderRuns(root, q, open) {
  const query = `limit=100${q ? `&q=${encodeURIComponent(q)}` : ""}`;
  /** @type {import("folio-api").SessionPage} */
  let page;
  try {
    page = await call("GET", `/v1/sessions?scope=all&${query}`);
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 403) throw error;
    page = await call("GET", `/v1/sessions?${query}`);
  }
  root.textContent = "";
  if (!page.data.length) {
    root.append(el("p", { cls: "empty", text: q ? "No run matches." : "No runs yet." }));
    return;
  }
  const body = el("tbody");
  for (const run of page.data) {
    /** @param {string} view */
    const link = (view) => {
      const button = el("button", { cls: "link", text: view, attrs: { "data-view": view } });
      button.onclick = () => open(run.sessionId, view);
      return button;
    };
    body.append(
      el("tr", { attrs: { "data-session": run.sessionId } }, [
        el("td", {}, [
          el("div", { text: run.title || "(untitled)" }),
          el("div", { cls: "id", text: run.sessionId }),
          ...(run.variant ? [el("span", { cls: "badge variant", text: `variant ${run.variant}` })] : []),
        ]),
        el("td", {}, [el("span", { cls: `badge ${run.status}`, text: run.status })]),
        el("td", { text: time(run.createdAt) }),
        el("td", { text: String(run.turns) }),
        el("td", { cls: "tokens", text: tokens(run.usage) || "—" }),
        el("td", {}, [link("chat"), " ", link("trace"), " ", link("raw")]),
      ]),
    );
  }
  const head = el("tr", {}, ["Run", "Status", "Created", "Turns", "Tokens", "Open"].map((h) => el("th", { text: h })));
  root.append(el("table", { cls: "runs" }, [el("thead", {}, [head]), body]));
}
