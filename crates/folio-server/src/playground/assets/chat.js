// @ts-check
// The Chat view: one session's events as a conversation — user messages (each can be forked),
// streaming reasoning (collapsible) and text, tool calls inline with their arguments, results,
// errors and durations, subagent calls nested in their call, approvals as Approve / Deny (with a
// countdown when the approval times out), an MCP server's questions (elicitations) as a JSON
// answer with Accept / Decline / Cancel. The model's text renders as Markdown (markdown.js);
// everything else, tool arguments and results included, is shown as text.

import { duration, el, json, tokens } from "./dom.js";
import { renderMarkdown } from "./markdown.js";

/** @typedef {import("folio-api").Event} FolioEvent */
/** @typedef {import("folio-api").RequestedCall} RequestedCall */

/**
 * @typedef {object} ChatActions
 * @property {(callId: string, decision: "approve" | "deny", reason: string) => void} decide
 * @property {(callId: string, decision: "accept" | "decline" | "cancel", content: unknown) => void} answer
 * @property {(atIndex: number, text: string) => void} fork
 */

/** Renders events into a container; each event index is rendered at most once. */
export class ChatView {
  /**
   * @param {HTMLElement} root
   * @param {ChatActions} actions
   */
  constructor(root, actions) {
    this.root = root;
    this.actions = actions;
    /** Indexes already shown. @type {Set<number>} */
    this.seen = new Set();
    /** The assistant block of the running turn. @type {HTMLElement | null} */
    this.turn = null;
    /** The text of the running step. @type {HTMLElement | null} */
    this.text = null;
    /** The reasoning of the running step. @type {HTMLElement | null} */
    this.reasoning = null;
    /** Tool-call cards by nesting level and call id (see `key`). @type {Map<string, HTMLElement>} */
    this.calls = new Map();
    /**
     * The subagents running inside the turn, innermost last: their events render inside their
     * call's card; each keeps the outer level's text and reasoning boxes to restore.
     * @type {{ body: HTMLElement, outer: { turn: HTMLElement | null, text: HTMLElement | null, reasoning: HTMLElement | null } }[]}
     */
    this.nested = [];
    /** Messages queued (`coalesce`) that no turn took yet. @type {HTMLElement[]} */
    this.pending = [];
    /** The Markdown source of each text box shown. @type {WeakMap<HTMLElement, string>} */
    this.sources = new WeakMap();
    /** Text boxes with deltas not rendered yet (rendered once per batch of events). @type {Set<HTMLElement>} */
    this.stale = new Set();
  }

  /** Empties the view (another session is shown). */
  reset() {
    this.root.textContent = "";
    this.seen = new Set();
    this.turn = null;
    this.text = null;
    this.reasoning = null;
    this.calls = new Map();
    this.nested = [];
    this.pending = [];
    this.sources = new WeakMap();
    this.stale = new Set();
  }

  /**
   * A call's key: a subagent is a conversation of its own, so its call ids may repeat the
   * outer ones; they are told apart by the nesting level.
   */
  key(/** @type {string} */ callId) {
    return `${this.nested.length}:${callId}`;
  }

  /** The assistant block of the running turn (created on demand). */
  currentTurn() {
    const inner = this.nested[this.nested.length - 1];
    if (inner) return inner.body;
    if (!this.turn) {
      this.turn = el("div", { cls: "turn assistant" });
      this.root.append(this.turn);
    }
    return this.turn;
  }

  /** Shows one event (ignored when its index was shown already). */
  add(/** @type {FolioEvent} */ event) {
    if (this.seen.has(event.index)) return;
    this.seen.add(event.index);
    switch (event.type) {
      case "message.received":
        // A turn takes every queued message (joined into this one): they are shown here now.
        for (const bubble of this.pending) bubble.remove();
        this.pending = [];
        this.user(event.index, event.data.text);
        break;
      case "message.queued":
        this.queued(event.index, event.data.text);
        break;
      case "turn.queued":
        this.note(`waiting for a free slot (position ${event.data.position})`);
        break;
      case "turn.started":
        this.turn = null;
        this.currentTurn().dataset.turn = event.turnId || "";
        break;
      case "step.started":
        this.text = null;
        this.reasoning = null;
        break;
      case "reasoning.appended":
        this.reasoningBox().textContent += event.data.delta;
        break;
      case "reasoning.completed":
        this.reasoningBox().textContent = event.data.text;
        break;
      case "message.appended": {
        const box = this.textBox();
        this.sources.set(box, (this.sources.get(box) || "") + event.data.delta);
        this.renderSoon(box);
        break;
      }
      case "message.completed":
        if (event.data.text) {
          const box = this.textBox();
          this.sources.set(box, event.data.text);
          this.stale.delete(box);
          renderMarkdown(box, event.data.text);
        }
        break;
      case "actions.requested":
        for (const call of event.data.calls) this.call(call);
        break;
      case "action.approval_requested":
        if (event.data.elicitation) this.question(event.data.callId, event.data.tool, event.data.elicitation);
        else this.approval(event.data.callId, event.data.tool, event.data.input, event.data.expiresAt);
        break;
      case "action.approval_resolved": {
        const card = this.calls.get(this.key(event.data.callId));
        card?.querySelector(".approval")?.remove();
        const reason = event.data.reason ? `: ${event.data.reason}` : "";
        const word = {
          approve: "approved",
          deny: "denied",
          accept: "accepted",
          decline: "declined",
          cancel: "cancelled",
        }[event.data.decision];
        this.cardLine(event.data.callId, `${word} by ${event.data.by}${reason}`, `decision ${event.data.decision}`);
        break;
      }
      case "action.authorization_requested":
        this.authorization(event.data);
        break;
      case "action.authorization_resolved": {
        const card = this.calls.get(this.key(event.data.callId));
        card?.querySelector(".approval")?.remove();
        const status = card?.querySelector(".status");
        if (status) status.textContent = event.data.authorized ? "authorized" : "not authorized";
        const reason = event.data.reason ? `: ${event.data.reason}` : "";
        this.cardLine(event.data.callId, `${event.data.authorized ? "authorized" : "not authorized"}${reason}`, "decision");
        break;
      }
      case "action.result":
        this.result(event.data);
        break;
      case "subagent.called": {
        this.cardLine(event.data.callId, `→ ${event.data.subagent}: ${event.data.prompt}`, "subagent-prompt");
        const body = el("div", { cls: "subagent-body" });
        const card = this.calls.get(this.key(event.data.callId));
        if (card) {
          card.classList.add("subagent");
          const tool = card.querySelector(".tool");
          if (tool && !tool.textContent?.includes("→")) tool.textContent += ` → subagent ${event.data.subagent}`;
        }
        (card || this.currentTurn()).append(body);
        this.nested.push({ body, outer: { turn: this.turn, text: this.text, reasoning: this.reasoning } });
        this.text = null;
        this.reasoning = null;
        break;
      }
      case "subagent.completed": {
        const level = this.nested.pop();
        if (level) ({ turn: this.turn, text: this.text, reasoning: this.reasoning } = level.outer);
        this.cardLine(
          event.data.callId,
          `← ${event.data.subagent}: ${event.data.reply}`,
          event.data.isError ? "subagent-reply error" : "subagent-reply",
        );
        break;
      }
      case "turn.completed": {
        const usage = tokens(event.data.usage);
        const facts = [`${event.data.steps} step${event.data.steps === 1 ? "" : "s"}`, duration(event.data.durationMs)];
        if (usage) facts.push(usage);
        this.nested = [];
        this.currentTurn().append(el("div", { cls: "turn-footer", text: facts.join(" · ") }));
        this.turn = null;
        break;
      }
      case "turn.failed":
        this.nested = [];
        this.currentTurn().append(el("div", { cls: "turn-failed", text: event.data.message }));
        this.turn = null;
        break;
      case "context.compacted":
        this.note(`context compacted: ${event.data.tokensBefore} → ${event.data.tokensAfter} tokens`);
        break;
      case "artifact.tagged":
        this.note(`artifact ${event.data.kind}/${event.data.key}: ${event.data.title}`);
        break;
      case "session.started":
        if (event.data.forkedFrom) {
          const from = event.data.forkedFrom;
          this.note(`forked from ${from.sessionId} at event ${from.atIndex}`);
        }
        break;
      case "ab.assigned": {
        const why = event.data.reason ? ` (${event.data.reason})` : "";
        this.note(`variant ${event.data.variant} of ${event.data.experiment}${why}`);
        break;
      }
      case "session.failed":
        this.note(`session failed: ${event.data.message}`);
        break;
      default:
        break;
    }
  }

  note(/** @type {string} */ text) {
    this.root.append(el("div", { cls: "note", text }));
  }

  /**
   * A message waiting for the running turn (`message.queued`), until the next turn takes it;
   * the running turn's reply goes on above it.
   */
  queued(/** @type {number} */ index, /** @type {string} */ text) {
    const bubble = el("div", { cls: "turn user queued", attrs: { "data-index": String(index) } }, [
      el("div", { cls: "text", text }),
      el("div", { cls: "note", text: "queued: runs after the current turn" }),
    ]);
    this.pending.push(bubble);
    this.root.append(bubble);
  }

  /** A user message with its Fork button. */
  user(/** @type {number} */ index, /** @type {string} */ text) {
    this.turn = null;
    const fork = el("button", { cls: "link fork", text: "Fork…", attrs: { title: "Edit this message in a new session" } });
    const bubble = el("div", { cls: "turn user", attrs: { "data-index": String(index) } }, [
      el("div", { cls: "text", text }),
      fork,
    ]);
    fork.onclick = () => this.editFork(bubble, index, text);
    this.root.append(bubble);
  }

  /** Replaces a message's Fork button with an editor that forks with the edited text. */
  editFork(/** @type {HTMLElement} */ bubble, /** @type {number} */ index, /** @type {string} */ text) {
    if (bubble.querySelector(".fork-editor")) return;
    const area = el("textarea", { cls: "fork-text" });
    area.value = text;
    const go = el("button", { text: "Fork and send" });
    const cancel = el("button", { cls: "link", text: "Cancel" });
    const editor = el("div", { cls: "fork-editor" }, [area, el("div", {}, [go, cancel])]);
    go.onclick = () => this.actions.fork(index, area.value);
    cancel.onclick = () => editor.remove();
    bubble.append(editor);
    area.focus();
  }

  /**
   * Renders a text box's Markdown after the events being handled now: a reply replayed or
   * streamed in many deltas is parsed once per batch, not once per delta.
   */
  renderSoon(/** @type {HTMLElement} */ box) {
    if (this.stale.has(box)) return;
    this.stale.add(box);
    queueMicrotask(() => {
      if (!this.stale.delete(box)) return;
      renderMarkdown(box, this.sources.get(box) || "");
    });
  }

  textBox() {
    if (!this.text) {
      this.text = el("div", { cls: "text markdown" });
      this.currentTurn().append(this.text);
    }
    return this.text;
  }

  reasoningBox() {
    if (!this.reasoning) {
      const body = el("div", { cls: "reasoning-text" });
      this.currentTurn().append(el("details", { cls: "reasoning" }, [el("summary", { text: "Reasoning" }), body]));
      this.reasoning = body;
    }
    return this.reasoning;
  }

  /** A tool call's card: name, arguments; the result fills in later. */
  call(/** @type {RequestedCall} */ call) {
    // `subagent` names the subagent that made the call (calls inside a delegation).
    const where = call.subagent ? [el("span", { cls: "where", text: `in ${call.subagent}` })] : [];
    const card = el("details", { cls: "call", attrs: { "data-call": call.callId, open: "" } }, [
      el("summary", {}, [el("span", { cls: "tool", text: call.tool }), ...where, el("span", { cls: "status", text: "running…" })]),
      el("div", { cls: "label", text: "Arguments" }),
      el("pre", { cls: "args", text: json(call.input) }),
    ]);
    this.calls.set(this.key(call.callId), card);
    this.currentTurn().append(card);
    this.text = null;
  }

  /** A line inside a call's card (or a note when the call is unknown). */
  cardLine(/** @type {string} */ callId, /** @type {string} */ text, /** @type {string} */ cls) {
    const card = this.calls.get(this.key(callId));
    if (card) card.append(el("div", { cls, text }));
    else this.note(text);
  }

  /** Approve / Deny (with a reason) on a parked call, with a countdown to its deadline when
   * it has one (`expiresAt`: folio denies it then). */
  approval(
    /** @type {string} */ callId,
    /** @type {string} */ tool,
    /** @type {unknown} */ input,
    /** @type {string | null | undefined} */ expiresAt,
  ) {
    let card = this.calls.get(this.key(callId));
    if (!card) {
      this.call({ callId, tool, input });
      card = /** @type {HTMLElement} */ (this.calls.get(this.key(callId)));
    }
    const status = card.querySelector(".status");
    if (status) status.textContent = "needs approval";
    const reason = el("input", { cls: "reason", attrs: { placeholder: "Reason (optional)", "aria-label": "Reason" } });
    const approve = el("button", { cls: "approve", text: "Approve" });
    const deny = el("button", { cls: "deny", text: "Deny" });
    approve.onclick = () => this.actions.decide(callId, "approve", reason.value);
    deny.onclick = () => this.actions.decide(callId, "deny", reason.value);
    const parts = /** @type {HTMLElement[]} */ ([approve, deny, reason]);
    if (expiresAt) parts.push(countdown(Date.parse(expiresAt)));
    card.append(el("div", { cls: "approval" }, parts));
  }

  /** An MCP server that needs the user's authorization: a link to its login page, which
   * redirects back to the server and resumes the call. */
  authorization(/** @type {import("folio-api").ActionAuthorizationRequested} */ data) {
    this.call({ callId: data.callId, tool: data.tool, input: { server: data.server } });
    const card = /** @type {HTMLElement} */ (this.calls.get(this.key(data.callId)));
    const status = card.querySelector(".status");
    if (status) status.textContent = `needs authorization at ${data.server}`;
    // The URL comes from the MCP server's metadata: only a web URL becomes a link.
    const web = /^https?:\/\//i.test(data.url);
    const link = web
      ? el("a", {
          cls: "authorize",
          text: `Authorize ${data.server}`,
          attrs: { href: data.url, target: "_blank", rel: "noopener noreferrer" },
        })
      : el("span", { text: `not a web URL, not opened: ${data.url}` });
    card.append(el("div", { cls: "approval" }, [link]));
  }

  /** An MCP server's question: its message, a JSON answer prefilled with the schema's defaults,
   * and Accept / Decline / Cancel. */
  question(
    /** @type {string} */ callId,
    /** @type {string} */ tool,
    /** @type {import("folio-api").Elicitation} */ elicitation,
  ) {
    this.call({ callId, tool, input: elicitation.requestedSchema });
    const card = /** @type {HTMLElement} */ (this.calls.get(this.key(callId)));
    const status = card.querySelector(".status");
    if (status) status.textContent = `question from ${elicitation.server}`;
    const schema = /** @type {{properties?: Record<string, {default?: unknown}>}} */ (elicitation.requestedSchema);
    /** @type {Record<string, unknown>} */
    const defaults = {};
    for (const [name, property] of Object.entries(schema.properties || {})) {
      if (property.default !== undefined) defaults[name] = property.default;
    }
    const content = el("textarea", { cls: "answer", attrs: { "aria-label": "Answer (JSON)", rows: "4" } });
    content.value = JSON.stringify(defaults, null, 2);
    const accept = el("button", { cls: "approve", text: "Accept" });
    const decline = el("button", { cls: "deny", text: "Decline" });
    const cancel = el("button", { cls: "deny", text: "Cancel" });
    accept.onclick = () => {
      try {
        this.actions.answer(callId, "accept", JSON.parse(content.value || "{}"));
      } catch (error) {
        this.note(`the answer is not JSON: ${error}`);
      }
    };
    decline.onclick = () => this.actions.answer(callId, "decline", undefined);
    cancel.onclick = () => this.actions.answer(callId, "cancel", undefined);
    card.append(
      el("div", { cls: "label", text: elicitation.message }),
      el("div", { cls: "approval" }, [content, accept, decline, cancel]),
    );
  }

  /** A call's result or error, with its duration. */
  result(/** @type {import("folio-api").ActionResult} */ data) {
    const card = this.calls.get(this.key(data.callId));
    if (!card) {
      this.note(`${data.tool}: ${data.isError ? data.error || "" : json(data.output)}`);
      return;
    }
    const status = card.querySelector(".status");
    if (status) status.textContent = `${data.isError ? "error" : "done"} · ${duration(data.durationMs)}`;
    card.classList.add(data.isError ? "failed" : "ok");
    card.append(
      el("div", { cls: "label", text: data.isError ? "Error" : "Result" }),
      el("pre", { cls: data.isError ? "result error" : "result", text: data.isError ? data.error || json(data.output) : json(data.output) }),
    );
  }
}

/** A line counting down to `deadline` (ms since the epoch), updated every second until it
 * leaves the page (the decision, or the timeout's denial, removes it). */
function countdown(/** @type {number} */ deadline) {
  const line = el("span", { cls: "expires" });
  const tick = () => {
    const left = Math.max(0, Math.ceil((deadline - Date.now()) / 1000));
    const hours = Math.floor(left / 3600);
    const minutes = Math.floor((left % 3600) / 60);
    const seconds = String(left % 60).padStart(2, "0");
    const clock = hours ? `${hours}:${String(minutes).padStart(2, "0")}:${seconds}` : `${minutes}:${seconds}`;
    line.textContent = left ? `times out in ${clock}` : "timing out…";
  };
  tick();
  let shown = false;
  const timer = setInterval(() => {
    if (line.isConnected) {
      shown = true;
      tick();
    } else if (shown || Date.now() >= deadline) clearInterval(timer);
  }, 1000);
  return line;
}
