// @ts-check
// The Logs tab: the server's log lines about the caller's sessions, polled while shown.

import { call } from "./api.js";
import { el, time } from "./dom.js";

/** Polls `GET /v1/logs?since=` into `root` until `signal` aborts. */
export async function followLogs(/** @type {HTMLElement} */ root, /** @type {AbortSignal} */ signal) {
  let since = 0;
  root.textContent = "";
  while (!signal.aborted) {
    try {
      /** @type {import("folio-api").LogsResponse} */
      const answer = await call("GET", `/v1/logs?since=${since}`);
      for (const line of answer.lines) {
        since = Math.max(since, line.seq);
        root.append(el("div", { cls: `log ${line.level}`, text: `${time(line.at)} ${line.level} ${line.message}` }));
      }
    } catch (error) {
      root.append(el("div", { cls: "log error", text: String(/** @type {Error} */ (error).message) }));
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}
