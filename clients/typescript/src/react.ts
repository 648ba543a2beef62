/**
 * @folio/client/react: `useFolioSession`, a React hook (react >= 18) over one Folio session:
 * its messages, tool calls and pending approvals, rebuilt from the event stream, and the
 * actions that change it. With `storageKey` the session id and token are kept in
 * localStorage, so a reload resumes the same conversation.
 */
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { FolioError } from "./index.js";
import type { Folio, FolioEvent, SendOptions, Session, SessionState } from "./index.js";

/** A user or assistant message of the conversation. */
export interface ChatMessage {
  /** A stable key: the index of the event that started it. */
  id: string;
  role: "user" | "assistant";
  text: string;
  /** False while an assistant message is still streaming (or a user message is queued). */
  done: boolean;
}

/** A tool call of the conversation and, once it ran, its result. */
export interface ToolCall {
  callId: string;
  tool: string;
  input: unknown;
  status: "requested" | "awaiting_approval" | "done";
  output?: unknown;
  error?: string | null;
  isError?: boolean;
}

/** A call parked until someone approves or denies it. */
export interface PendingApproval {
  callId: string;
  tool: string;
  input: unknown;
}

/** Where the session is: `idle` before any session, `running` a turn, `waiting` for a message, or ended. */
export type ChatStatus = "idle" | "running" | "awaiting_approval" | "waiting" | "completed" | "failed";

/** The conversation as rebuilt from events (what {@link reduceEvent} folds). */
export interface ConversationState {
  messages: ChatMessage[];
  toolCalls: ToolCall[];
  pendingApprovals: PendingApproval[];
  status: ChatStatus;
  /** The last turn's failure (`turn.failed`), cleared by the next turn. */
  lastError: string | null;
  /** The index of the last event folded, -1 before any. */
  lastIndex: number;
}

/** The state before any event. */
export const emptyConversation: ConversationState = {
  messages: [],
  toolCalls: [],
  pendingApprovals: [],
  status: "idle",
  lastError: null,
  lastIndex: -1,
};

/** Folds one event into the conversation (pure; usable without React). */
export function reduceEvent(state: ConversationState, event: FolioEvent): ConversationState {
  if (event.index <= state.lastIndex) return state;
  const next: ConversationState = { ...state, lastIndex: event.index };
  const id = String(event.index);
  const lastAssistant = () => {
    const last = next.messages[next.messages.length - 1];
    return last && last.role === "assistant" && !last.done ? last : undefined;
  };
  const setCall = (callId: string, change: Partial<ToolCall>) => {
    next.toolCalls = next.toolCalls.map((c) => (c.callId === callId ? { ...c, ...change } : c));
  };
  switch (event.type) {
    case "session.started":
    case "turn.started":
    case "turn.queued":
      next.status = "running";
      if (event.type === "turn.started") next.lastError = null;
      break;
    case "message.received":
      if (!event.data.coalesced) next.messages = [...next.messages, { id, role: "user", text: event.data.text, done: true }];
      else next.messages = next.messages.map((m) => (m.role === "user" ? { ...m, done: true } : m));
      next.status = "running";
      break;
    case "message.queued":
      next.messages = [...next.messages, { id, role: "user", text: event.data.text, done: false }];
      break;
    case "message.appended": {
      const open = lastAssistant();
      next.messages = open
        ? [...next.messages.slice(0, -1), { ...open, text: open.text + event.data.delta }]
        : [...next.messages, { id, role: "assistant", text: event.data.delta, done: false }];
      break;
    }
    case "message.completed": {
      const open = lastAssistant();
      next.messages = open
        ? [...next.messages.slice(0, -1), { ...open, text: event.data.text, done: true }]
        : [...next.messages, { id, role: "assistant", text: event.data.text, done: true }];
      break;
    }
    case "actions.requested":
      next.toolCalls = [
        ...next.toolCalls,
        ...event.data.calls.map((c) => ({ callId: c.callId, tool: c.tool, input: c.input, status: "requested" as const })),
      ];
      break;
    case "action.approval_requested":
      next.pendingApprovals = [...next.pendingApprovals, { callId: event.data.callId, tool: event.data.tool, input: event.data.input }];
      setCall(event.data.callId, { status: "awaiting_approval" });
      next.status = "awaiting_approval";
      break;
    case "action.approval_resolved":
      next.pendingApprovals = next.pendingApprovals.filter((p) => p.callId !== event.data.callId);
      setCall(event.data.callId, { status: "requested" });
      if (next.pendingApprovals.length === 0) next.status = "running";
      break;
    case "action.result":
      setCall(event.data.callId, { status: "done", output: event.data.output, error: event.data.error, isError: event.data.isError });
      break;
    case "turn.failed":
      next.lastError = event.data.message;
      next.pendingApprovals = [];
      break;
    case "session.waiting":
      next.status = "waiting";
      next.pendingApprovals = [];
      break;
    case "session.completed":
      next.status = "completed";
      break;
    case "session.failed":
      next.status = "failed";
      next.lastError = event.data.message;
      break;
  }
  return next;
}

/** Options of {@link useFolioSession}. */
export interface UseFolioSessionOptions {
  /** The client of the agent. */
  folio: Folio;
  /** A session to open (otherwise the stored one, otherwise the first `send` creates one). */
  sessionId?: string;
  /** Its continuation token (needed to send). */
  continuationToken?: string;
  /** Keeps `{sessionId, continuationToken}` in localStorage under this key, and resumes from it. */
  storageKey?: string;
}

/** What {@link useFolioSession} returns. */
export interface FolioSessionHandle extends ConversationState {
  /** The session handle, once there is a session. */
  session: Session | null;
  sessionId: string | null;
  /** The last request's failure (a {@link FolioError}), or null. */
  error: FolioError | null;
  /** Sends a message (creating the session on the first one); resolves once it is durable. */
  send: (text: string, options?: SendOptions) => Promise<void>;
  /** Approves a parked call. */
  approve: (callId: string) => Promise<void>;
  /** Denies a parked call. */
  deny: (callId: string, reason?: string) => Promise<void>;
  /** Cancels the running turn. */
  stop: () => Promise<void>;
  /** Forgets the session (and its stored state): the next `send` starts a new one. */
  reset: () => void;
}

function readStored(key: string | undefined): SessionState | undefined {
  if (!key || typeof localStorage === "undefined") return undefined;
  try {
    const value = JSON.parse(localStorage.getItem(key) ?? "null") as SessionState | null;
    return value && typeof value.sessionId === "string" ? value : undefined;
  } catch {
    return undefined;
  }
}

function writeStored(key: string | undefined, state: SessionState | undefined): void {
  if (!key || typeof localStorage === "undefined") return;
  if (state) localStorage.setItem(key, JSON.stringify(state));
  else localStorage.removeItem(key);
}

/** One Folio session as React state: messages, tool calls, approvals, status and actions. */
export function useFolioSession(options: UseFolioSessionOptions): FolioSessionHandle {
  const { folio, storageKey } = options;
  const store = useCallback((state: SessionState) => writeStored(storageKey, state), [storageKey]);
  const [session, setSession] = useState<Session | null>(() => {
    const initial = options.sessionId
      ? { sessionId: options.sessionId, continuationToken: options.continuationToken }
      : readStored(storageKey);
    return initial ? folio.sessions.resume(initial.sessionId, initial.continuationToken, { onToken: store }) : null;
  });
  const [conversation, setConversation] = useState<ConversationState>(emptyConversation);
  const [error, setError] = useState<FolioError | null>(null);
  const creating = useRef<Promise<Session> | null>(null);

  useEffect(() => {
    if (session) store(session.state);
  }, [session, store]);

  // Follow the session's events; a new session (or unmount) ends the previous stream.
  useEffect(() => {
    setConversation(emptyConversation);
    if (!session) return;
    const abort = new AbortController();
    (async () => {
      try {
        for await (const event of session.events({ signal: abort.signal })) {
          setConversation((state) => reduceEvent(state, event));
        }
      } catch (err) {
        if (!abort.signal.aborted) setError(asFolioError(err));
      }
    })();
    return () => abort.abort();
  }, [session]);

  const guard = useCallback(async <T,>(action: () => Promise<T>): Promise<T> => {
    try {
      const result = await action();
      setError(null);
      return result;
    } catch (err) {
      setError(asFolioError(err));
      throw err;
    }
  }, []);

  const send = useCallback(
    (text: string, sendOptions?: SendOptions) =>
      guard(async () => {
        if (session) {
          await session.send(text, sendOptions);
          return;
        }
        creating.current ??= folio.sessions.create({ message: text, onToken: store, signal: sendOptions?.signal });
        try {
          setSession(await creating.current);
        } finally {
          creating.current = null;
        }
      }),
    [folio, session, store, guard],
  );
  const approve = useCallback((callId: string) => guard(() => need(session).approve(callId)), [session, guard]);
  const deny = useCallback((callId: string, reason?: string) => guard(() => need(session).deny(callId, reason)), [session, guard]);
  const stop = useCallback(() => guard(() => need(session).stop()), [session, guard]);
  const reset = useCallback(() => {
    writeStored(storageKey, undefined);
    setSession(null);
  }, [storageKey]);

  return useMemo(
    () => ({
      ...conversation,
      session,
      sessionId: session?.sessionId ?? null,
      error,
      send,
      approve,
      deny,
      stop,
      reset,
    }),
    [conversation, session, error, send, approve, deny, stop, reset],
  );
}

function need(session: Session | null): Session {
  if (!session) throw new FolioError("invalid_request", 0, "no session yet: send a first message");
  return session;
}

function asFolioError(err: unknown): FolioError {
  return err instanceof FolioError ? err : new FolioError("network_error", 0, String(err), { cause: err });
}
