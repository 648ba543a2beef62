// The browser test's page: the client and the React hook from dist/, against folio serve.
import { Folio, FolioError } from "@folio/client";
import { useFolioSession } from "@folio/client/react";

const folio = new Folio({ baseUrl: `${location.origin}/ops` });

// The plain client: create, stream until idle, send, wait, and a typed error.
window.runClient = async () => {
  const session = await folio.sessions.create({ message: "hello from the browser", title: "browser" });
  const events = [];
  for await (const event of session.events({ from: 0 })) {
    events.push(event);
    if (event.type === "session.waiting") break;
  }
  await session.send("and again", { admission: "coalesce" });
  const idle = await session.waitForIdle();
  let stale = null;
  try {
    await folio.sessions.resume(session.sessionId, "http:not-the-token").send("from nowhere");
  } catch (err) {
    stale = { isFolioError: err instanceof FolioError, code: err.code, status: err.status, message: err.message };
  }
  return { sessionId: session.sessionId, types: events.map((e) => e.type), indexes: events.map((e) => e.index), reply: idle.reply, stale };
};

// The hook: a minimal chat whose state the test reads from the DOM and drives through window.chat.
const h = window.React.createElement;
function Chat() {
  const chat = useFolioSession({ folio, storageKey: "folio-browser-test" });
  window.chat = chat;
  return h(
    "div",
    null,
    h("p", { id: "status" }, chat.status),
    h("p", { id: "session" }, chat.sessionId ?? ""),
    h("ul", { id: "messages" }, chat.messages.map((m) => h("li", { key: m.id, className: m.role }, `${m.role}: ${m.text}`))),
    h("ul", { id: "approvals" }, chat.pendingApprovals.map((p) => h("li", { key: p.callId }, p.tool))),
    h("ul", { id: "tools" }, chat.toolCalls.map((c) => h("li", { key: c.callId }, `${c.tool}: ${c.status}`))),
  );
}
window.ReactDOM.createRoot(document.getElementById("root")).render(h(Chat));
window.appReady = true;
