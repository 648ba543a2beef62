// A client of the Folio HTTP API over the types openapi-typescript generates from
// docs/openapi.json (`folio-api.ts`, written next to this file by tests/openapi.rs) and
// openapi-fetch. It is only type-checked (`tsc --noEmit`): every call below must compile, and
// every `@ts-expect-error` line must be an error, or the document lost a type.
import createClient from "openapi-fetch";
import type { components, paths } from "./folio-api";

type Event = components["schemas"]["Event"];
type ErrorCode = components["schemas"]["ErrorCode"];

/** Starts a session, follows it up, decides an approval and reads its events. */
export async function conversation(baseUrl: string, token: string): Promise<string[]> {
  const client = createClient<paths>({
    baseUrl,
    headers: { Authorization: `Bearer ${token}` },
  });
  const created = await client.POST("/v1/session", {
    body: { message: "hello", mode: "chat", workspaceFiles: { "a.txt": "A" } },
    params: { header: { "Idempotency-Key": "k-1" } },
  });
  if (created.error) {
    const code: ErrorCode = created.error.error;
    const ok: false = created.error.ok;
    throw new Error(`${code} (${ok}): ${created.error.message}`);
  }
  const sessionId: string = created.data.sessionId;
  const followed = await client.POST("/v1/session/{sessionId}", {
    params: { path: { sessionId } },
    body: {
      continuationToken: created.data.continuationToken,
      message: "more",
      admission: "coalesce",
    },
  });
  const rotated: string | undefined = followed.data?.continuationToken;
  await client.POST("/v1/session/{sessionId}/approvals/{callId}", {
    params: { path: { sessionId, callId: "call_1" } },
    body: { decision: "approve", reason: "looks right" },
  });
  const page = await client.GET("/v1/sessions", {
    params: { query: { limit: 10, scope: "mine" } },
  });
  const statuses: Array<"running" | "waiting" | "completed" | "failed"> = (
    page.data?.data ?? []
  ).map((session) => session.status);
  const stream = await client.GET("/v1/session/{sessionId}/events", {
    params: { path: { sessionId } },
    parseAs: "text",
  });
  const replies: string[] = [];
  for (const line of (stream.data ?? "").split("\n")) {
    if (line === "") continue;
    const event = JSON.parse(line) as Event;
    if (event.type === "turn.completed") {
      replies.push(event.data.reply);
    }
  }
  const tool = await client.POST("/v1/tools/{name}", {
    params: { path: { name: "echo" } },
    body: { input: { text: "hi" } },
  });
  const isError: boolean | undefined = tool.data?.isError;
  const agents = await client.GET("/v1/agents");
  const slugs: string[] = (agents.data ?? []).map((agent) => agent.slug);
  const document = await client.GET("/v1/openapi.json");
  return [rotated ?? "", ...statuses, ...replies, String(isError), ...slugs, String(document.data)];
}

/** Calls the types must refuse. */
export async function refused(client: ReturnType<typeof createClient<paths>>): Promise<void> {
  // @ts-expect-error: `message` is required.
  await client.POST("/v1/session", { body: { title: "no message" } });
  // @ts-expect-error: no such route.
  await client.GET("/v1/sessionz");
  await client.POST("/v1/session/{sessionId}/approvals/{callId}", {
    params: { path: { sessionId: "ses_1", callId: "call_1" } },
    // @ts-expect-error: not a decision.
    body: { decision: "maybe" },
  });
  // @ts-expect-error: `startIndex` is a number.
  await client.GET("/v1/session/{sessionId}/stream", { params: { path: { sessionId: "s" }, query: { startIndex: "0" } } });
}
