/**
 * @folio/client: a small, dependency-free client for Folio agents served over HTTP
 * (`folio serve`). It makes the hard parts of the protocol hard to get wrong: continuation
 * tokens rotate inside `send`, every message carries an idempotency key that retries reuse,
 * and event streams resume at the next index after a dropped connection.
 *
 * Wire types come from `./generated/openapi.js`, generated from Folio's `docs/openapi.json`.
 */
import type { components } from "./generated/openapi.js";

type Schemas = components["schemas"];

/** One event of a session's log (`{type, index, sessionId, turnId?, at, data}`). */
export type FolioEvent = Schemas["Event"];
/** The event type names (`session.started`, `message.appended`, …). */
export type FolioEventType = FolioEvent["type"];
/** The event of one type, e.g. `EventOf<"turn.completed">`. */
export type EventOf<T extends FolioEventType> = Extract<FolioEvent, { type: T }>;
/** The server's machine-readable error codes. */
export type ErrorCode = Schemas["ErrorCode"];
/** `preempt` (default) or `coalesce`: what a follow-up does to a busy session. */
export type Admission = Schemas["Admission"];
/** `chat` (takes follow-ups) or `task` (ends after its turn). */
export type SessionMode = Schemas["SessionMode"];
/** A session as `GET /v1/session/:id` and lists show it. */
export type SessionSummary = Schemas["SessionSummary"];
/** A page of the caller's sessions (`nextCursor` for the next one). */
export type SessionSummaryPage = Schemas["SessionSummaryPage"];
/** `POST /v1/session`'s body. */
export type CreateSessionRequest = Schemas["CreateSession"];
/** `POST /v1/session`'s answer. */
export type SessionCreated = Schemas["SessionCreated"];
/** `POST /v1/session/:id`'s answer: the rotated token. */
export type FollowUpAccepted = Schemas["FollowUpAccepted"];
/** `GET /v1/agent`: tools, skills, subagents, connections, channels, … */
export type AgentDescription = Schemas["AgentDescription"];
/** A stored artifact record. */
export type ArtifactRecord = Schemas["ArtifactRecord"];
/** A page of artifact records. */
export type ArtifactRecordPage = Schemas["ArtifactRecordPage"];
/** A page of eval run summaries. */
export type EvalRunSummaryPage = Schemas["EvalRunSummaryPage"];
/** One stored eval run, with its cases. */
export type EvalRun = Schemas["EvalRun"];
/** Where a saved eval case was written. */
export type EvalCaseSaved = Schemas["EvalCaseSaved"];
/** A pending reminder. */
export type Reminder = Schemas["Reminder"];
/** A page of reminders. */
export type ReminderPage = Schemas["ReminderPage"];
/** `POST /v1/session/:id/reminders`'s body: `{message, at?}` or `{message, in?}`. */
export type SetReminder = Schemas["SetReminder"];
/** A direct tool call's answer (`{ok, result, isError}`). */
export type ToolCallResult = Schemas["ToolCallResult"];
/** `GET /v1/logs`'s answer. */
export type LogsResponse = Schemas["LogsResponse"];
/** `GET /v1/schedules`'s answer. */
export type SchedulesResponse = Schemas["SchedulesResponse"];
/** An approval decision: `approve`/`deny` (calls) or `accept`/`decline`/`cancel` (elicitations). */
export type ApprovalDecision = Schemas["ApprovalDecision"];

/** What a caller stores to resume a session later (e.g. after a page reload). */
export interface SessionState {
  sessionId: string;
  continuationToken: string | undefined;
}

/** Called whenever a session's continuation token changes, so it can be stored. */
export type TokenListener = (state: SessionState) => void;

/** Options of {@link Folio}. */
export interface FolioOptions {
  /** The agent's base URL: `http://127.0.0.1:3000/<slug>` (or the root with `--mode single`). */
  baseUrl: string;
  /** A bearer token (`--bearer-token` / `--tokens-file`); omit in local mode. */
  token?: string;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
  /** How long retryable requests (keyed sends, reads, stream reconnects) keep trying, in ms (default 30 000). */
  retryTimeoutMs?: number;
  /** A stream that sends nothing (not even the 15 s keep-alive) for this long reconnects, in ms (default 45 000). */
  idleTimeoutMs?: number;
  /** Called whenever any session's continuation token changes. */
  onToken?: TokenListener;
}

/** Codes the client adds to the server's: the network failed, or an answer was not Folio's. */
export type ClientErrorCode = "network_error" | "invalid_response";

/** Every failure: the server's `{error, message}` with the HTTP status, or a client-side one (status 0). */
export class FolioError extends Error {
  /** The server's error code (`stale_continuation_token`, …) or a {@link ClientErrorCode}. */
  readonly code: ErrorCode | ClientErrorCode;
  /** The HTTP status, 0 when no answer arrived. */
  readonly status: number;
  /** Whether the same request may succeed when tried again (network errors, 408, 429, 502–504). */
  readonly retryable: boolean;

  constructor(code: ErrorCode | ClientErrorCode, status: number, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "FolioError";
    this.code = code;
    this.status = status;
    this.retryable = status === 0 ? code === "network_error" : [408, 429, 502, 503, 504].includes(status);
  }
}

/** The outcome of the turn(s) a {@link Session.waitForIdle} waited for. */
export interface TurnResult {
  /** The status the session settled in: `waiting` (chat), `completed` or `failed` (task). */
  status: "waiting" | "completed" | "failed";
  /** The last turn's reply (`turn.completed`), or null when it failed. */
  reply: string | null;
  /** Why the last turn (or task) failed, or null. */
  error: string | null;
  /** The index of the event that ended it (`session.waiting`, …). */
  index: number;
}

/** Options of {@link Session.send}. */
export interface SendOptions {
  /** `preempt` (default: cancel a running turn) or `coalesce` (queue behind it). */
  admission?: Admission;
  /** Files written into the workspace before the turn (relative path → contents). */
  workspaceFiles?: Record<string, string>;
  /** The idempotency key (default: a fresh random one; a retry inside the client reuses it). */
  idempotencyKey?: string;
  /** Aborts the send (and its retries). */
  signal?: AbortSignal;
}

/** Options of {@link Session.events}. */
export interface EventsOptions {
  /** The first index to yield (default 0: the whole session). */
  from?: number;
  /** Stops the stream (the iterator then ends without an error). */
  signal?: AbortSignal;
}

/** Options of {@link Folio.sessions}' `create`. */
export type CreateOptions = Omit<CreateSessionRequest, "clientMessageId"> & {
  /** The idempotency key (default: a fresh random one; retries inside the client reuse it). */
  idempotencyKey?: string;
  /** Called whenever this session's token changes. */
  onToken?: TokenListener;
  /** Aborts the create (and its retries). */
  signal?: AbortSignal;
};

interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  /** Retry network errors and retryable statuses until the retry timeout. */
  retry?: boolean;
  signal?: AbortSignal;
  /** Return the raw response (for non-JSON answers). */
  raw?: boolean;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });

/** A fresh idempotency key (visible ASCII, as the server requires). */
export function newIdempotencyKey(): string {
  const c = globalThis.crypto;
  if (typeof c?.randomUUID === "function") return c.randomUUID();
  const bytes = c.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The failure of an answer that is not 2xx: the server's error body, or a description of it. */
async function errorOf(res: Response): Promise<FolioError> {
  const text = await res.text().catch(() => "");
  try {
    const body = JSON.parse(text) as { ok?: boolean; error?: ErrorCode; message?: string };
    if (body && body.ok === false && typeof body.error === "string") {
      return new FolioError(body.error, res.status, body.message ?? body.error);
    }
  } catch {
    // not JSON: described below
  }
  const code: ErrorCode | ClientErrorCode = res.status >= 500 ? "internal" : "invalid_response";
  return new FolioError(code, res.status, `HTTP ${res.status} from ${res.url}: ${text.slice(0, 200) || res.statusText}`);
}

/** A client of one Folio agent: `new Folio({ baseUrl })`, then `folio.sessions.create(…)`. */
export class Folio {
  readonly baseUrl: string;
  readonly #token: string | undefined;
  readonly #fetch: typeof fetch;
  /** @internal */
  readonly retryTimeoutMs: number;
  /** @internal */
  readonly idleTimeoutMs: number;
  /** @internal */
  readonly onToken: TokenListener | undefined;

  constructor(options: FolioOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#token = options.token;
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.retryTimeoutMs = options.retryTimeoutMs ?? 30_000;
    this.idleTimeoutMs = options.idleTimeoutMs ?? 45_000;
    this.onToken = options.onToken;
  }

  /** Creating, resuming and listing sessions. */
  readonly sessions = {
    /** Starts a session with its first message; returns once the message is durable (the turn runs on). */
    create: async (options: CreateOptions): Promise<Session> => {
      const { idempotencyKey, onToken, signal, ...request } = options;
      const key = idempotencyKey ?? newIdempotencyKey();
      const created = await this.request<SessionCreated>("POST", "/v1/session", {
        body: { ...request, clientMessageId: key },
        retry: true,
        signal,
      });
      const session = new Session(this, created.sessionId, created.continuationToken, onToken, key);
      session.notifyToken();
      return session;
    },
    /** A handle on a stored session (its token is needed only to send messages). */
    resume: (sessionId: string, continuationToken?: string, options?: { onToken?: TokenListener }): Session =>
      new Session(this, sessionId, continuationToken, options?.onToken),
    /**
     * The caller's sessions, newest first (`nextCursor` pages on; `q` filters title or id;
     * `status`, `metaKey`/`metaValue` and the created/updated ranges, RFC 3339 times, filter
     * through the server's session index).
     */
    list: (
      query: {
        limit?: number;
        cursor?: string;
        q?: string;
        status?: "running" | "waiting" | "completed" | "failed";
        metaKey?: "channel" | "variant" | "purpose" | "continuationKey";
        metaValue?: string;
        createdFrom?: string;
        createdBefore?: string;
        updatedFrom?: string;
        updatedBefore?: string;
      } = {},
    ): Promise<SessionSummaryPage> =>
      this.request("GET", "/v1/sessions", { query, retry: true }),
    /** One session's summary (status, turns, last index, usage). */
    get: async (sessionId: string): Promise<SessionSummary> =>
      (await this.request<Schemas["SessionResponse"]>("GET", `/v1/session/${enc(sessionId)}`, { retry: true })).session,
  };

  /** Stored artifacts (`tag_artifact`). */
  readonly artifacts = {
    /** Every artifact record. */
    list: (): Promise<ArtifactRecordPage> => this.request("GET", "/v1/artifacts", { retry: true }),
    /** One artifact record. */
    get: async (id: string): Promise<ArtifactRecord> =>
      (await this.request<Schemas["ArtifactResponse"]>("GET", `/v1/artifacts/${enc(id)}`, { retry: true })).artifact,
    /** An artifact's contents (a Blob with its content type). */
    content: async (id: string): Promise<Blob> =>
      (await this.request<Response>("GET", `/v1/artifacts/${enc(id)}/content`, { retry: true, raw: true })).blob(),
  };

  /** Stored eval runs (`folio eval` writes them; the server only reads). */
  readonly evals = {
    /** Eval runs, newest first. */
    list: (): Promise<EvalRunSummaryPage> => this.request("GET", "/v1/evals", { retry: true }),
    /** One eval run with its cases. */
    get: async (runId: string): Promise<EvalRun> =>
      (await this.request<Schemas["EvalRunResponse"]>("GET", `/v1/evals/${enc(runId)}`, { retry: true })).run,
  };

  /** What discovery found: tools (with schemas), skills, subagents, connections, channels, … */
  agent(): Promise<AgentDescription> {
    return this.request("GET", "/v1/agent", { retry: true });
  }

  /** Calls an authored tool directly, outside any session (`POST /v1/tools/:name`). */
  callTool(name: string, input: unknown): Promise<ToolCallResult> {
    return this.request("POST", `/v1/tools/${enc(name)}`, { body: { input } });
  }

  /** Recent server log lines about the caller's sessions, after sequence number `since`. */
  logs(since?: number): Promise<LogsResponse> {
    return this.request("GET", "/v1/logs", { query: { since }, retry: true });
  }

  /** The agent's schedules and their next fire times. */
  schedules(): Promise<SchedulesResponse> {
    return this.request("GET", "/v1/schedules", { retry: true });
  }

  /** @internal One HTTP request under the base URL; JSON in and out; errors become {@link FolioError}. */
  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const deadline = Date.now() + this.retryTimeoutMs;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#once<T>(method, path, options);
      } catch (err) {
        const retry = options.retry && err instanceof FolioError && err.retryable && Date.now() < deadline;
        if (!retry) throw err;
        await sleep(Math.min(100 * 2 ** attempt, 2_000), options.signal);
      }
    }
  }

  /** @internal Opens `path` and answers the response once its status is 2xx. */
  async open(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    const url = new URL(this.baseUrl + path);
    for (const [name, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = { accept: "application/json, application/x-ndjson" };
    if (options.body !== undefined) headers["content-type"] = "application/json";
    if (this.#token) headers.authorization = `Bearer ${this.#token}`;
    let res: Response;
    try {
      res = await this.#fetch(url, {
        method,
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal: options.signal,
      });
    } catch (err) {
      if (options.signal?.aborted) throw err;
      throw new FolioError("network_error", 0, `${method} ${url} failed: ${describe(err)} (is folio serve running?)`, {
        cause: err,
      });
    }
    if (!res.ok) throw await errorOf(res);
    return res;
  }

  async #once<T>(method: string, path: string, options: RequestOptions): Promise<T> {
    const res = await this.open(method, path, options);
    if (options.raw) return res as T;
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      // The answer was cut: the request may have been applied (callers retry only keyed ones).
      throw new FolioError("network_error", 0, `${method} ${res.url}: the answer was cut: ${describe(err)}`, { cause: err });
    }
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new FolioError("invalid_response", res.status, `${method} ${res.url} answered non-JSON: ${text.slice(0, 200)}`);
    }
  }
}

/** One session: stream its events, send messages, decide approvals. Get one from `folio.sessions`. */
export class Session {
  /** The session's id (`ses_…`). */
  readonly sessionId: string;
  /** Called whenever this session's token changes (as well as the Folio-wide `onToken`). */
  onToken: TokenListener | undefined;
  readonly #folio: Folio;
  #token: string | undefined;
  /** The idempotency key of the last message this handle sent (what waitForIdle waits for). */
  #lastKey: string | undefined;
  /** Sends run one at a time: each presents the token the previous one got. */
  #sending: Promise<unknown> = Promise.resolve();

  /** Prefer `folio.sessions.create` / `folio.sessions.resume`, which build it. */
  constructor(folio: Folio, sessionId: string, token: string | undefined, onToken?: TokenListener, lastKey?: string) {
    this.#folio = folio;
    this.sessionId = sessionId;
    this.#token = token;
    this.onToken = onToken;
    this.#lastKey = lastKey;
  }

  /** The current continuation token (store it with `sessionId` to resume later). */
  get continuationToken(): string | undefined {
    return this.#token;
  }

  /** `{sessionId, continuationToken}`, what `folio.sessions.resume` takes back. */
  get state(): SessionState {
    return { sessionId: this.sessionId, continuationToken: this.#token };
  }

  /** @internal Tells the listeners about the current token. */
  notifyToken(): void {
    this.onToken?.(this.state);
    this.#folio.onToken?.(this.state);
  }

  #path(suffix = ""): string {
    return `/v1/session/${enc(this.sessionId)}${suffix}`;
  }

  /**
   * Sends a follow-up; resolves once it is durable (the turn runs on). The token rotates inside;
   * sends on one handle run in order; a network failure is retried with the same idempotency
   * key and token, so the message is recorded once whatever was lost.
   */
  send(text: string, options: SendOptions = {}): Promise<FollowUpAccepted> {
    const run = this.#sending.then(() => this.#send(text, options));
    this.#sending = run.catch(() => undefined);
    return run;
  }

  async #send(text: string, options: SendOptions): Promise<FollowUpAccepted> {
    if (this.#token === undefined) {
      throw new FolioError(
        "invalid_request",
        0,
        `session ${this.sessionId} has no continuation token: resume it with its stored token, or call refreshToken() as its owner`,
      );
    }
    const key = options.idempotencyKey ?? newIdempotencyKey();
    const accepted = await this.#folio.request<FollowUpAccepted>("POST", this.#path(), {
      body: {
        continuationToken: this.#token,
        message: text,
        admission: options.admission,
        workspaceFiles: options.workspaceFiles,
        clientMessageId: key,
      },
      retry: true,
      signal: options.signal,
    });
    this.#token = accepted.continuationToken;
    this.#lastKey = key;
    this.notifyToken();
    return accepted;
  }

  /** Owner only: a fresh continuation token (the previous one goes stale), e.g. when it was lost. */
  async refreshToken(): Promise<string> {
    const run = this.#sending.then(async () => {
      const issued = await this.#folio.request<FollowUpAccepted>("POST", this.#path("/token"), { body: {} });
      this.#token = issued.continuationToken;
      this.notifyToken();
      return issued.continuationToken;
    });
    this.#sending = run.catch(() => undefined);
    return run;
  }

  /**
   * The session's events from `from` (default 0), following live ones. A dropped connection
   * (server restart, network) reconnects at the next index: no event is repeated or skipped.
   * Ends when a task session ends, when `signal` aborts, or when the loop breaks; throws a
   * {@link FolioError} when the server refuses (404, 403) or stays unreachable past the retry timeout.
   */
  async *events(options: EventsOptions = {}): AsyncGenerator<FolioEvent, void, undefined> {
    let next = options.from ?? 0;
    let failingSince: number | undefined;
    for (let attempt = 0; ; attempt++) {
      if (options.signal?.aborted) return;
      const connection = new AbortController();
      const stop = () => connection.abort(options.signal?.reason);
      options.signal?.addEventListener("abort", stop, { once: true });
      let idle: ReturnType<typeof setTimeout> | undefined;
      const touch = () => {
        clearTimeout(idle);
        idle = setTimeout(() => connection.abort(new Error("no data (not even a keep-alive)")), this.#folio.idleTimeoutMs);
      };
      let ended = false;
      try {
        touch();
        const res = await this.#folio.open("GET", this.#path("/stream"), {
          query: { startIndex: next },
          signal: connection.signal,
        });
        for await (const line of lines(res, touch)) {
          const event = JSON.parse(line) as FolioEvent;
          if (event.index < next) continue; // never repeat one
          if (event.index > next) {
            throw new FolioError("invalid_response", 200, `stream of ${this.sessionId} skipped from index ${next} to ${event.index}`);
          }
          next = event.index + 1;
          failingSince = undefined;
          attempt = 0;
          yield event;
          if (event.type === "session.completed" || event.type === "session.failed") ended = true;
        }
        if (ended) return; // a task's stream ends after its final event
        // A clean end without one: a task that ended before `from`, or a server shutting down.
        const summary = await this.get();
        if (summary.status !== "running" && summary.status !== "waiting" && next > summary.lastIndex) return;
      } catch (err) {
        if (options.signal?.aborted) return;
        if (err instanceof FolioError && !err.retryable && err.code !== "network_error") throw err;
        failingSince ??= Date.now();
        if (Date.now() - failingSince > this.#folio.retryTimeoutMs) {
          throw err instanceof FolioError
            ? err
            : new FolioError("network_error", 0, `stream of ${this.sessionId} failed: ${describe(err)}`, { cause: err });
        }
      } finally {
        clearTimeout(idle);
        options.signal?.removeEventListener("abort", stop);
        connection.abort();
      }
      if (ended) return;
      await sleep(Math.min(100 * 2 ** attempt, 2_000), options.signal).catch(() => undefined);
    }
  }

  /** Every stored event, without following (`GET …/events`). */
  async history(): Promise<FolioEvent[]> {
    const res = await this.#folio.request<Response>("GET", this.#path("/events"), { raw: true, retry: true });
    const events: FolioEvent[] = [];
    for await (const line of lines(res)) events.push(JSON.parse(line) as FolioEvent);
    return events;
  }

  /**
   * Waits until the message this handle sent last (or, without one, the session's last message)
   * has been answered and the session is idle (`session.waiting`, or a task's end); answers the
   * last turn's outcome. A turn parked on an approval keeps it waiting.
   */
  async waitForIdle(options: { signal?: AbortSignal } = {}): Promise<TurnResult> {
    const key = this.#lastKey;
    const stored = await this.history();
    const isMessage = (e: FolioEvent) => e.type === "message.received" || e.type === "message.queued";
    let anchor = -1;
    for (const e of stored) {
      if (isMessage(e) && (key === undefined || (e.data as { clientMessageId?: string | null }).clientMessageId === key)) {
        anchor = e.index;
      }
    }
    let reply: string | null = null;
    let error: string | null = null;
    const settle = (e: FolioEvent): TurnResult | undefined => {
      if (e.index <= anchor) return undefined;
      if (e.type === "turn.completed") [reply, error] = [e.data.reply, null];
      if (e.type === "turn.failed") [reply, error] = [null, e.data.message];
      if (e.type === "session.failed") error = e.data.message;
      if (e.type === "session.waiting" || e.type === "session.completed" || e.type === "session.failed") {
        return { status: e.type.slice("session.".length) as TurnResult["status"], reply, error, index: e.index };
      }
      return undefined;
    };
    let done: TurnResult | undefined;
    for (const e of stored) done ??= settle(e);
    if (!done) {
      const from = stored.length ? stored[stored.length - 1].index + 1 : 0;
      for await (const e of this.events({ from, signal: options.signal })) {
        if ((done = settle(e))) break;
      }
    }
    if (!done) throw new FolioError("invalid_response", 0, `stream of ${this.sessionId} ended before the session was idle`);
    return done;
  }

  /** The session's summary (status, turns, last index, usage). */
  get(): Promise<SessionSummary> {
    return this.#folio.sessions.get(this.sessionId);
  }

  /** Approves a parked tool call (`action.approval_requested`). */
  approve(callId: string): Promise<void> {
    return this.decide(callId, "approve");
  }

  /** Denies a parked tool call; `reason` is shown to the model. */
  deny(callId: string, reason?: string): Promise<void> {
    return this.decide(callId, "deny", { reason });
  }

  /** Any decision on a parked call or elicitation (`accept` takes `content`). */
  async decide(callId: string, decision: ApprovalDecision, extra: { reason?: string; content?: unknown } = {}): Promise<void> {
    await this.#folio.request("POST", this.#path(`/approvals/${enc(callId)}`), { body: { decision, ...extra } });
  }

  /** Cancels the running turn (`turn.failed` "turn interrupted") and clears queued messages. */
  async stop(): Promise<void> {
    await this.#folio.request("POST", this.#path("/stop"), { body: {} });
  }

  /** Removes the session (stopping its turn first). */
  async delete(): Promise<void> {
    await this.#folio.request("DELETE", this.#path());
  }

  /** A new session replaying this one up to the `message.received` at `atIndex`, then `message` instead. */
  async fork(request: { atIndex: number; message: string; title?: string }, options: { onToken?: TokenListener } = {}): Promise<Session> {
    const created = await this.#folio.request<SessionCreated>("POST", this.#path("/fork"), { body: request });
    const fork = new Session(this.#folio, created.sessionId, created.continuationToken, options.onToken);
    fork.notifyToken();
    return fork;
  }

  /** The session's pending reminders: set one (`{message, in: "15m"}` or `{message, at}`), list, cancel. */
  readonly reminders = {
    /** Sets a one-off wake of this (chat) session. */
    set: async (request: SetReminder): Promise<Reminder> =>
      (await this.#folio.request<Schemas["ReminderResponse"]>("POST", this.#path("/reminders"), { body: request })).reminder,
    /** The pending reminders. */
    list: (): Promise<ReminderPage> => this.#folio.request("GET", this.#path("/reminders"), { retry: true }),
    /** Cancels a pending reminder. */
    cancel: async (reminderId: string): Promise<void> => {
      await this.#folio.request("DELETE", this.#path(`/reminders/${enc(reminderId)}`));
    },
  };

  /** Saves this session as the eval case `evals/from-session/<name>.eval.toml`. */
  saveEvalCase(name: string): Promise<EvalCaseSaved> {
    return this.#folio.request("POST", this.#path("/eval-case"), { body: { name } });
  }

  /** Calls a tool in this session's workspace, outside any turn (`409 session_busy` while one runs). */
  callTool(name: string, input: unknown): Promise<ToolCallResult> {
    return this.#folio.request("POST", this.#path(`/tools/${enc(name)}`), { body: { input } });
  }
}

/** The non-empty lines of an NDJSON body; `onData` is called on every chunk (keep-alives too). */
async function* lines(res: Response, onData?: () => void): AsyncGenerator<string> {
  if (!res.body) return;
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      onData?.();
      buffer += decoder.decode(value, { stream: true });
      let newline: number;
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, newline).trim();
        buffer = buffer.slice(newline + 1);
        if (line) yield line;
      }
    }
    // A last line without its newline is a torn write: never yield it (the next connection resends it).
  } finally {
    reader.releaseLock();
  }
}

const enc = encodeURIComponent;

function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message} (${cause.message})` : err.message;
  }
  return String(err);
}
