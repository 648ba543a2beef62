// @ts-check
// The Evals tab: runs of `folio eval` stored under the state root (`GET /v1/evals`), newest
// first, the newest open; opening one lists its cases with each attempt's error and failed assertions
// (expected and actual), and links each attempt's session to its Chat view.

import { call } from "./api.js";
import { el, json } from "./dom.js";

/** @typedef {import("folio-api").EvalRunSummary} EvalRunSummary */
/** @typedef {import("folio-api").EvalRun} EvalRun */

/** A stored run's line in the list. */
export function runLine(/** @type {EvalRunSummary} */ run) {
  return `${run.startedAt} ${run.ok ? "pass" : "FAIL"}: ${run.passed} passed, ${run.failed} failed (${run.runId})`;
}

/**
 * Lists the stored runs into `root`; `openSession(id)` opens an attempt's session as Chat.
 * @param {HTMLElement} root
 * @param {(sessionId: string) => void} openSession
 */
export async function renderEvals(root, openSession) {
  root.textContent = "loading…";
  /** @type {import("folio-api").EvalRunPage} */
  const page = await call("GET", "/v1/evals");
  root.textContent = "";
  if (!page.data.length) {
    root.append(el("p", { cls: "empty", text: "No eval runs yet: run `folio eval` in the project." }));
    return;
  }
  const detail = el("div", { cls: "eval-run" });
  const list = el("ul", { cls: "eval-runs" });
  for (const run of page.data) {
    const link = el("button", { cls: "link", text: runLine(run), attrs: { "data-run": run.runId } });
    link.onclick = async () => {
      detail.textContent = "loading…";
      try {
        /** @type {import("folio-api").EvalRunResponse} */
        const answer = await call("GET", `/v1/evals/${encodeURIComponent(run.runId)}`);
        detail.textContent = "";
        detail.append(...answer.run.cases.map((c) => caseBlock(c, openSession)));
      } catch (error) {
        detail.textContent = String(/** @type {Error} */ (error).message);
      }
    };
    list.append(el("li", { cls: run.ok ? "pass" : "fail" }, [link]));
  }
  root.append(list, detail);
  // The newest run opens at once: its cases and failed assertions are what one looks for.
  /** @type {HTMLButtonElement | null} */ (list.querySelector("button"))?.click();
}

/**
 * One case: its verdict and score, then per attempt its error and failed assertions.
 * @param {import("folio-api").CaseResult} result
 * @param {(sessionId: string) => void} openSession
 */
function caseBlock(result, openSession) {
  const head = `${result.ok ? "pass" : "FAIL"} ${result.evalId}/${result.caseId} score ${result.score.toFixed(2)}`;
  const block = el("section", { cls: `eval-case ${result.ok ? "pass" : "fail"}`, attrs: { "data-case": `${result.evalId}/${result.caseId}` } }, [
    el("h3", { text: head }),
  ]);
  for (const attempt of result.attempts) {
    const line = el("div", { cls: "attempt", text: `#${attempt.iteration} ${attempt.ok ? "pass" : "fail"} · ${attempt.model} · ${attempt.durationMs} ms ` });
    const session = attempt.sessionId;
    if (session) {
      const open = el("button", { cls: "link", text: "open session" });
      open.onclick = () => openSession(session);
      line.append(open);
    }
    block.append(line);
    if (attempt.error) block.append(el("div", { cls: "assertion failed", text: attempt.error }));
    attempt.steps.forEach((step, n) => {
      for (const a of step.assertions.filter((a) => !a.passed)) {
        block.append(
          el("div", { cls: "assertion failed" }, [
            el("div", { text: `step ${n + 1} ${a.kind}: ${a.message}` }),
            el("pre", { text: `expected ${json(a.expected)}\nactual   ${json(a.actual)}` }),
          ]),
        );
      }
    });
  }
  return block;
}
