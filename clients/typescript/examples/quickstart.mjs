// Quickstart: node examples/quickstart.mjs (after `npm run build`), with FOLIO_URL set to an
// agent's base URL, e.g. http://127.0.0.1:3000/demo as printed by `folio serve`.
import { Folio, FolioError } from "@folio/client";

const folio = new Folio({ baseUrl: process.env.FOLIO_URL ?? "http://127.0.0.1:3000/demo" });

// Start a session; store {sessionId, continuationToken} to come back to it later.
const session = await folio.sessions.create({ message: "Write a haiku about tea." });
console.log("session", session.sessionId);

// Stream its events (live; a dropped connection resumes at the next index).
for await (const event of session.events({ from: 0 })) {
  if (event.type === "message.appended") process.stdout.write(event.data.delta);
  if (event.type === "action.approval_requested") await session.approve(event.data.callId);
  if (event.type === "session.waiting") break;
}
console.log();

// A follow-up: the token rotates inside, the idempotency key makes retries safe.
await session.send("Now one about coffee.");
const result = await session.waitForIdle();
console.log("reply:", result.reply);

// Later (another process, after a reload): resume from the stored state and go on.
const again = folio.sessions.resume(session.sessionId, session.continuationToken);
await again.send("And one about water.");
console.log("resumed:", (await again.waitForIdle()).reply);

// Errors are typed: the first handle's token went stale when `again` sent.
try {
  await session.send("hi");
} catch (err) {
  if (err instanceof FolioError) console.log("error:", err.status, err.code);
}
