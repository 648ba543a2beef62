/// <reference types="node" />
/**
 * The host API, for code Folio runs on behalf of a session (an authored tool, a hook), in
 * Node. Folio gives each such process `FOLIO_HOST_URL` (a Unix socket under the state root)
 * and `FOLIO_HOST_TOKEN` (valid while the process runs, for its own session only); every call
 * here reads them.
 *
 * ```ts
 * import { host } from "@folio/client/host";
 * const entry = await host.kv.get("counter", { scope: "principal" });
 * await host.kv.put("counter", (entry?.value ?? 0) + 1, {
 *   scope: "principal",
 *   ifVersion: entry?.version ?? 0,
 * });
 * ```
 *
 * A refused call rejects with a {@link HostError} carrying the server's code (`version_conflict`
 * for a compare-and-set that found another version, `rate_limited` past the session's budget).
 */
import { request as httpRequest } from "node:http";
import type { components } from "./generated/openapi.js";

type Schemas = components["schemas"];
/** One stored value with its version. */
export type StorageEntry = Schemas["StorageEntry"];
/** `session` (default), `principal` or `agent`. */
export type StorageScope = Schemas["StorageScope"];

/** A call the host API refused, or could not be made. */
export class HostError extends Error {
  /** The server's code (`unauthorized`, `version_conflict`, ...) or `host_unavailable`. */
  readonly code: string;
  /** The HTTP status, when an answer came. */
  readonly status: number | undefined;
  /** Seconds to wait before retrying, from `Retry-After`. */
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
  const payload = body === undefined ? undefined : JSON.stringify(withoutUndefined(body));
  const target = url.startsWith("unix:")
    ? { socketPath: url.slice("unix:".length), host: "folio-host" }
    : (() => {
        const parsed = new URL(url);
        return { host: parsed.hostname, port: Number(parsed.port) };
      })();
  return new Promise<T>((resolve, reject) => {
    const req = httpRequest(
      {
        ...target,
        method,
        path: route,
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/json",
          ...(payload === undefined ? {} : { "content-length": Buffer.byteLength(payload) }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let parsed: unknown;
          try {
            parsed = JSON.parse(text);
          } catch {
            parsed = undefined;
          }
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300 && parsed !== undefined) {
            resolve(parsed as T);
            return;
          }
          const error = (parsed ?? {}) as { error?: string; message?: string };
          const wait = Number(res.headers["retry-after"]);
          reject(
            new HostError(
              error.error ?? "http_error",
              status,
              error.message ?? `the host API answered ${status}: ${text.slice(0, 200)}`,
              Number.isFinite(wait) ? wait : undefined,
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

/** The host API of the current process's session. */
export const host = {
  /** The session, call, principal and agent the token acts for. */
  whoami: () => call<Schemas["HostIdentity"]>("GET", "/v1/host/whoami"),

  /** Storage: JSON values by key, with versions for compare-and-set. */
  kv: {
    /** The entry, or `null`. */
    get: async (key: string, options: { scope?: StorageScope } = {}) =>
      (await call<Schemas["KvEntryResponse"]>("POST", "/v1/host/kv/get", { key, ...options })).entry ?? null,
    /** Writes `value`; with `ifVersion` only over that version (0: only when new). */
    put: async (
      key: string,
      value: unknown,
      options: { scope?: StorageScope; ifVersion?: number; ttlSeconds?: number } = {},
    ) => (await call<Schemas["KvEntryResponse"]>("POST", "/v1/host/kv/put", { key, value, ...options })).entry ?? null,
    /** Removes the entry; resolves to it (`null` when there was none). */
    delete: async (key: string, options: { scope?: StorageScope; ifVersion?: number } = {}) =>
      (await call<Schemas["KvEntryResponse"]>("POST", "/v1/host/kv/delete", { key, ...options })).entry ?? null,
    /** A page of entries in key order. */
    list: (options: { scope?: StorageScope; prefix?: string; after?: string; limit?: number } = {}) =>
      call<Schemas["KvListResponse"]>("POST", "/v1/host/kv/list", { ...options }),
  },

  /** The session's files (the turn's FileSystem, confined like the model's file tools). */
  files: {
    read: async (path: string) => (await call<Schemas["HostOutput"]>("POST", "/v1/host/files/read", { path })).output,
    write: async (path: string, contents: string) =>
      (await call<Schemas["HostOutput"]>("POST", "/v1/host/files/write", { path, contents })).output,
    list: async (path?: string) => (await call<Schemas["HostOutput"]>("POST", "/v1/host/files/list", { path })).output,
    glob: async (pattern: string, path?: string) =>
      (await call<Schemas["HostOutput"]>("POST", "/v1/host/files/glob", { pattern, path })).output,
    grep: async (pattern: string, path?: string) =>
      (await call<Schemas["HostOutput"]>("POST", "/v1/host/files/grep", { pattern, path })).output,
    delete: async (path: string) => (await call<Schemas["HostOutput"]>("POST", "/v1/host/files/delete", { path })).output,
  },

  /** Reminders that wake the (chat) session later. */
  reminders: {
    /** Sets one: `in` a delay (`"10m"`) or `at` an RFC 3339 instant. */
    set: async (message: string, when: { in?: string; at?: string }) =>
      (await call<Schemas["ReminderResponse"]>("POST", "/v1/host/reminders/set", { message, ...when })).reminder,
    list: async () => (await call<Schemas["HostReminders"]>("POST", "/v1/host/reminders/list", {})).reminders,
    cancel: async (reminderId: string) => {
      await call("POST", "/v1/host/reminders/cancel", { reminderId });
    },
  },

  /** The agent's artifacts. */
  artifacts: {
    put: (request: Schemas["PutArtifact"]) => call<Schemas["HostArtifact"]>("POST", "/v1/host/artifacts/put", { ...request }),
    get: (request: Schemas["GetArtifact"]) => call<Schemas["HostArtifact"]>("POST", "/v1/host/artifacts/get", { ...request }),
    list: async (request: Schemas["ListArtifacts"] = {}) =>
      (await call<Schemas["HostArtifacts"]>("POST", "/v1/host/artifacts/list", { ...request })).artifacts,
  },

  /** Tools of the agent's host connections (`agent/host-connections/`). */
  connections: {
    list: async () => (await call<Schemas["HostConnections"]>("POST", "/v1/host/connections/list", {})).connections,
    call: (connection: string, tool: string, args: Record<string, unknown> = {}) =>
      call<Schemas["ToolCallResult"]>("POST", "/v1/host/connections/call", { connection, tool, arguments: args }),
  },

  /** Span attributes, metric points and log lines of the calling tool call. */
  telemetry: {
    attributes: async (attributes: Record<string, string | number | boolean>) => {
      await call("POST", "/v1/host/telemetry/attributes", { attributes });
    },
    metric: async (
      name: string,
      value: number,
      options: { kind?: "counter" | "histogram"; unit?: string; attributes?: Record<string, string | number | boolean> } = {},
    ) => {
      await call("POST", "/v1/host/telemetry/metric", { name, value, kind: options.kind ?? "counter", ...options });
    },
    log: async (message: string, level: "info" | "warn" | "error" = "info") => {
      await call("POST", "/v1/host/telemetry/log", { message, level });
    },
  },
};
