// Streams one run of a Folio agent through LangGraph's JS SDK (@langchain/langgraph-sdk) at the
// agent URL in argv[2]; prints what it saw as one JSON line. Run by tests/agent_protocol.rs.
import { Client } from "@langchain/langgraph-sdk";

const client = new Client({ apiUrl: process.argv[2] });
const [assistant] = await client.assistants.search({ limit: 10 });
const thread = await client.threads.create();
const events = [];
let reply = null;
let tokens = "";
for await (const chunk of client.runs.stream(thread.thread_id, assistant.assistant_id, {
  input: { messages: [{ role: "user", content: "hi from js" }] },
  streamMode: ["values", "messages-tuple"],
})) {
  events.push(chunk.event);
  if (chunk.event === "values") {
    const last = chunk.data.messages?.at(-1);
    if (last?.type === "ai") reply = last.content;
  }
  if (chunk.event === "messages") tokens += chunk.data[0]?.content ?? "";
}
const state = await client.threads.getState(thread.thread_id);
console.log(JSON.stringify({ assistant: assistant.assistant_id, events, reply, tokens,
  messages: state.values.messages.map((m) => [m.type, m.content]) }));
