/// <reference types="node" />
/**
 * The host API (docs/host-api.md), for code Folio runs on behalf of a session (an authored
 * tool, a hook), in Node. Folio gives each such process `FOLIO_HOST_URL` (a Unix socket under
 * the state root, or a loopback `http://` URL) and `FOLIO_HOST_TOKEN` (valid while the process
 * runs, for its own session only); every call here reads them. No dependency beyond `node:http`.
 *
 * ```ts
 * import { host, HostError } from "@folio/client/host";
 * const entry = await host.kv.get("counter", { scope: "principal" });
 * await host.kv.put("counter", ((entry?.value as number) ?? 0) + 1, {
 *   scope: "principal",
 *   ifVersion: entry?.version ?? 0,
 * });
 * ```
 *
 * A refused call rejects with a {@link HostError} carrying the server's code (`version_conflict`
 * for a compare-and-set that found another version, `rate_limited` past the session's budget,
 * `invalid_request` for a path that escapes, ...); `host_unavailable` when the process was not
 * started by Folio for a session, `connection_failed` when the host API cannot be reached.
 */
import { request as httpRequest } from "node:http";
import type { components } from "./generated/openapi.js";

type Schemas = components["schemas"];

/** One stored value with its key, version, `updatedAt` and `expiresAt`. */
export type StorageEntry = Schemas["StorageEntry"];
/** `session` (default), `principal` or `agent`. */
export type StorageScope = Schemas["StorageScope"];
/** Who the token acts for: `{sessionId, callId, principal, agent}`. */
export type HostIdentity = Schemas["HostIdentity"];
/** A page of storage entries (`next`: pass as `after` for the next page; `null` on the last). */
export type KvListResponse = Schemas["KvListResponse"];
/** A pending reminder. */
export type Reminder = Schemas["Reminder"];
/** An artifact record with its text contents. */
export type HostArtifact = Schemas["HostArtifact"];
/** A stored artifact record. */
export type ArtifactRecord = Schemas["ArtifactRecord"];
/** One host connection with its tools (or why it could not be reached). */
export type HostConnectionTools = Schemas["HostConnectionTools"];
/** A host connection tool's answer: `{result, isError}`. */
export type ToolCallResult = Schemas["ToolCallResult"];
/** `counter` or `histogram`. */
export type MetricKind = Schemas["MetricKind"];
/** `info`, `warn` or `error`. */
export type LogLevel = Schemas["LogLevel"];
/** A span or metric attribute value. */
export type AttributeValue = string | number | boolean;

/** A call the host API refused, or could not be made. */
export class HostError extends Error {
  /**
   * The server's code (`unauthorized`, `version_conflict`, `rate_limited`, `invalid_request`,
   * `not_found`, ...), or the helper's own: `host_unavailable` (no `FOLIO_HOST_URL` /
   * `FOLIO_HOST_TOKEN`), `connection_failed`, `invalid_response`.
   */
  readonly code: string;
  /** The HTTP status, when an answer came. */
  readonly status: number | undefined;
  /** Seconds to wait before retrying, from `Retry-After` (with `rate_limited`). */
  readonly retryAfter: number | undefined;

  constructor(code: string, status: number | undefined, message: string, retryAfter?: number) {
    super(status ? `${code} (${status}): ${message}` : `${code}: ${message}`);
    this.name = "HostError";
    this.code = code;
    this.status = status;
    this.retryAfter = retryAfter;
  }
}

function withoutUndefined(body: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(body).filter(([, value]) => value !== undefined));
}

/** Where a request goes: a Unix socket (`unix:<path>`) or a loopback `http://host:port`. */
function target(url: string): { socketPath: string } | { host: string; port: number } {
  if (url.startsWith("unix:")) return { socketPath: url.slice("unix:".length) };
  const parsed = new URL(url);
  if (parsed.protocol !== "http:") {
    throw new HostError("host_unavailable", undefined, `FOLIO_HOST_URL is neither unix:<path> nor http://…: ${url}`);
  }
  return { host: parsed.hostname, port: Number(parsed.port || 80) };
}

/** Sends one request to the host API named by the environment. */
function call<T>(method: "GET" | "POST", route: string, body?: Record<string, unknown>): Promise<T> {
  const url = process.env.FOLIO_HOST_URL;
  const token = process.env.FOLIO_HOST_TOKEN;
  if (!url || !token) {
    return Promise.reject(
      new HostError(
        "host_unavailable",
        undefined,
        "FOLIO_HOST_URL and FOLIO_HOST_TOKEN are not set: the host API works inside a process Folio starts for a session (an authored tool's call or a hook)",
      ),
    );
  }
  let to: ReturnType<typeof target>;
  try {
    to = target(url);
  } catch (err) {
    return Promise.reject(err);
  }
  const payload = body === undefined ? undefined : JSON.stringify(withoutUndefined(body));
  return new Promise<T>((resolve, reject) => {
    const req = httpRequest(
      {
        ...to,
        method,
        path: route,
        headers: {
          // Over the socket there is no host name; over TCP Node sends the URL's own.
          ...("socketPath" in to ? { host: "folio-host" } : {}),
          authorization: `Bearer ${token}`,
          accept: "application/json",
          ...(payload === undefined
            ? {}
            : { "content-type": "application/json", "content-length": Buffer.byteLength(payload) }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("error", (err) =>
          reject(new HostError("connection_failed", undefined, `the host API's answer broke off: ${err.message}`)),
        );
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let parsed: unknown;
          try {
            parsed = JSON.parse(text);
          } catch {
            parsed = undefined;
          }
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) {
            if (parsed !== undefined && parsed !== null && typeof parsed === "object") {
              resolve(parsed as T);
            } else {
              reject(new HostError("invalid_response", status, `the host API answered ${status} without JSON: ${text.slice(0, 200)}`));
            }
            return;
          }
          const error = (parsed ?? {}) as { error?: unknown; message?: unknown };
          const wait = Number(res.headers["retry-after"]);
          reject(
            new HostError(
              typeof error.error === "string" ? error.error : "http_error",
              status,
              typeof error.message === "string" ? error.message : `the host API answered ${status}: ${text.slice(0, 200)}`,
              res.headers["retry-after"] !== undefined && Number.isFinite(wait) ? wait : undefined,
            ),
          );
        });
      },
    );
    req.on("error", (err) =>
      reject(new HostError("connection_failed", undefined, `cannot reach the host API at ${url}: ${err.message}`)),
    );
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

/** A files call's answer: what the model's file tool of that name answers (text, or JSON). */
async function files(operation: string, body: Record<string, unknown>): Promise<unknown> {
  return (await call<Schemas["HostOutput"]>("POST", `/v1/host/files/${operation}`, body)).output;
}

/** Options of the `files` calls that page their output lines. */
export interface PageOptions {
  /** Return at most this many output lines (default 200). */
  headLimit?: number;
  /** Skip this many output lines first. */
  offset?: number;
}

/** Options of {@link host.files.grep}. */
export interface GrepOptions extends PageOptions {
  /** A directory or file to search (default: the root). */
  path?: string;
  /** Only files matching this glob; `*.rs` matches at any depth. */
  glob?: string;
  /** Ignore case. */
  caseInsensitive?: boolean;
  /** `content` (default: path:line:text), `files_with_matches` or `count`. */
  outputMode?: "content" | "files_with_matches" | "count";
}

/** The host API of the current process's session. */
export const host = {
  /** The session, call, principal and agent the token acts for. */
  whoami: (): Promise<HostIdentity> => call<HostIdentity>("GET", "/v1/host/whoami"),

  /** Storage: JSON values by key, with versions for compare-and-set. */
  kv: {
    /** The entry, or `null` when the key has none (or it expired). */
    get: async (key: string, options: { scope?: StorageScope } = {}): Promise<StorageEntry | null> =>
      (await call<Schemas["KvEntryResponse"]>("POST", "/v1/host/kv/get", { key, scope: options.scope })).entry ?? null,
    /**
     * Writes `value` (any JSON, at most 256 KiB) and resolves to the entry as written. With
     * `ifVersion` only over that version (`0`: only when the key has none); otherwise rejects
     * with code `version_conflict` and writes nothing.
     */
    put: async (
      key: string,
      value: unknown,
      options: { scope?: StorageScope; ifVersion?: number; ttlSeconds?: number } = {},
    ): Promise<StorageEntry> => {
      const { scope, ifVersion, ttlSeconds } = options;
      const answer = await call<Schemas["KvEntryResponse"]>("POST", "/v1/host/kv/put", { key, value, scope, ifVersion, ttlSeconds });
      if (!answer.entry) throw new HostError("invalid_response", 200, "kv/put answered without the entry it wrote");
      return answer.entry;
    },
    /** Removes the entry (with `ifVersion`, only at that version); resolves to it, `null` when there was none. */
    delete: async (key: string, options: { scope?: StorageScope; ifVersion?: number } = {}): Promise<StorageEntry | null> =>
      (await call<Schemas["KvEntryResponse"]>("POST", "/v1/host/kv/delete", { key, scope: options.scope, ifVersion: options.ifVersion }))
        .entry ?? null,
    /** A page of entries in key order (`limit`: default and cap 1000). */
    list: (options: { scope?: StorageScope; prefix?: string; after?: string; limit?: number } = {}): Promise<KvListResponse> =>
      call<KvListResponse>("POST", "/v1/host/kv/list", {
        scope: options.scope,
        prefix: options.prefix,
        after: options.after,
        limit: options.limit,
      }),
  },

  /**
   * The session's files: the call's FileSystem, with the same confinement and limits as the
   * model's file tools (a path that escapes rejects with `invalid_request`). Each resolves to
   * what that tool answers the model.
   */
  files: {
    /** The file's lines, numbered as `Read` shows them (`offset`: 1-based first line). */
    read: (path: string, options: { offset?: number; limit?: number } = {}) =>
      files("read", { path, offset: options.offset, limit: options.limit }),
    /** Creates or overwrites the file (as `Write`). */
    write: (path: string, contents: string) => files("write", { path, contents }),
    /** Replaces `oldText` by `newText` (exactly one occurrence unless `replaceAll`), as `StrReplace`. */
    edit: (path: string, oldText: string, newText: string, options: { replaceAll?: boolean } = {}) =>
      files("edit", { path, oldText, newText, replaceAll: options.replaceAll }),
    /** Removes the file (as `Delete`). */
    delete: (path: string) => files("delete", { path }),
    /** A directory's entries (default: the root), as `LS`. */
    list: (path?: string, options: PageOptions = {}) => files("list", { path, ...options }),
    /** Paths matching `pattern` (`*` does not cross `/`, `**` does), as `Glob`. */
    glob: (pattern: string, options: { path?: string } & PageOptions = {}) => files("glob", { pattern, ...options }),
    /** Lines (or files, or counts) matching the regular expression `pattern`, as `Grep`. */
    grep: (pattern: string, options: GrepOptions = {}) => files("grep", { pattern, ...options }),
  },

  /** Reminders that wake the (chat) session later. */
  reminders: {
    /** Sets one: `in` a delay (`"10m"`) or `at` an RFC 3339 instant. */
    set: async (message: string, when: { in?: string; at?: string }): Promise<Reminder> =>
      (await call<Schemas["ReminderResponse"]>("POST", "/v1/host/reminders/set", { message, in: when.in, at: when.at })).reminder,
    /** The session's pending reminders, earliest first. */
    list: async (): Promise<Reminder[]> => (await call<Schemas["HostReminders"]>("POST", "/v1/host/reminders/list", {})).reminders,
    /** Cancels a pending reminder (`rem_…`). */
    cancel: async (reminderId: string): Promise<void> => {
      await call("POST", "/v1/host/reminders/cancel", { reminderId });
    },
  },

  /** The agent's artifacts. */
  artifacts: {
    /** Tags (upserts by kind and key) an artifact of the session; records `artifact.tagged`. */
    put: (request: {
      key: string;
      title: string;
      kind?: string;
      data?: unknown;
      contents?: string;
      contentType?: string;
    }): Promise<HostArtifact> => call<HostArtifact>("POST", "/v1/host/artifacts/put", { ...request }),
    /** One artifact by `artifactId`, or by `key` (and `kind`), with its contents. */
    get: (request: { artifactId: string } | { key: string; kind?: string }): Promise<HostArtifact> =>
      call<HostArtifact>("POST", "/v1/host/artifacts/get", { ...request }),
    /** The agent's artifacts (only the calling session's with `sessionOnly`), most recently updated first. */
    list: async (request: { kind?: string; sessionOnly?: boolean } = {}): Promise<ArtifactRecord[]> =>
      (await call<Schemas["HostArtifacts"]>("POST", "/v1/host/artifacts/list", { ...request })).artifacts,
  },

  /** Tools of the agent's host connections (`agent/host-connections/`), which the model never sees. */
  connections: {
    /** Every host connection with its tools. */
    list: async (): Promise<HostConnectionTools[]> =>
      (await call<Schemas["HostConnections"]>("POST", "/v1/host/connections/list", {})).connections,
    /** Calls `tool` of `connection`; resolves to `{result, isError}`. */
    call: (connection: string, tool: string, args: Record<string, unknown> = {}): Promise<ToolCallResult> =>
      call<ToolCallResult>("POST", "/v1/host/connections/call", { connection, tool, arguments: args }),
  },

  /** Span attributes, metric points and log lines of the calling tool call. */
  telemetry: {
    /** Sets attributes (dotted lowercase names) on the calling tool call's span. */
    attributes: async (attributes: Record<string, AttributeValue>): Promise<void> => {
      await call("POST", "/v1/host/telemetry/attributes", { attributes });
    },
    /** Records a metric point: a `counter` increment (the default) or a `histogram` value. */
    metric: async (
      name: string,
      value: number,
      options: { kind?: MetricKind; unit?: string; attributes?: Record<string, AttributeValue> } = {},
    ): Promise<void> => {
      await call("POST", "/v1/host/telemetry/metric", {
        name,
        value,
        kind: options.kind ?? "counter",
        unit: options.unit,
        attributes: options.attributes,
      });
    },
    /** Writes a log line about the session (at most 8 KiB): `GET /v1/logs` and OTLP logs. */
    log: async (message: string, level: LogLevel = "info"): Promise<void> => {
      await call("POST", "/v1/host/telemetry/log", { message, level });
    },
  },
};
