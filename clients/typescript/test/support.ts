// Test support: real `folio serve` and `folio-mock-model` processes, agent folders, a proxy.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** clients/typescript (tests run from dist-test/). */
export const packageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** The repository root. */
export const repoRoot = path.resolve(packageDir, "../..");

/** A binary from its env var or target/debug, or a clear failure saying how to get it. */
function binary(envVar: string, name: string): string {
  const bin = process.env[envVar] || path.join(repoRoot, "target/debug", name);
  if (!existsSync(bin)) {
    throw new Error(`${bin} is missing: run \`cargo build --workspace --bins\` or set ${envVar} to the ${name} binary`);
  }
  return bin;
}

export const folioBin = () => binary("FOLIO_BIN", "folio");
export const mockModelBin = () => binary("FOLIO_MOCK_MODEL_BIN", "folio-mock-model");

const children = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of children) child.kill("SIGKILL");
});

/** Spawns `bin`, resolving with the first stdout match of `pattern` (failing with its output after 20 s). */
function start(bin: string, args: string[], env: NodeJS.ProcessEnv, pattern: RegExp): Promise<{ child: ChildProcess; match: RegExpMatchArray; output: () => string }> {
  const child = spawn(bin, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  children.add(child);
  child.on("exit", () => children.delete(child));
  let out = "";
  let err = "";
  child.stderr!.on("data", (d) => (err += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${bin} ${args.join(" ")} printed no ${pattern} within 20 s:\n${out}\n${err}`)), 20_000);
    child.stdout!.on("data", (d) => {
      out += d;
      const match = out.match(pattern);
      if (match) {
        clearTimeout(timer);
        resolve({ child, match, output: () => out + err });
      }
    });
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${bin} ${args.join(" ")} exited (${code ?? signal}) before printing ${pattern}:\n${out}\n${err}`));
    });
  });
}

/** A reply of the mock model (see folio-mock-model). */
export interface MockReply {
  text?: string;
  toolCalls?: { name: string; input: unknown }[];
  status?: number;
  message?: string;
  firstByteDelayMs?: number;
  chunkDelayMs?: number;
  dropAfterChunks?: number;
}

/** A running folio-mock-model. */
export class MockModel {
  private constructor(
    readonly url: string,
    private readonly child: ChildProcess,
  ) {}

  static async start(): Promise<MockModel> {
    const { child, match } = await start(mockModelBin(), [], process.env, /mock model: (http:\/\/\S+)/);
    return new MockModel(match[1], child);
  }

  /** Queues replies (FIFO). */
  async push(...replies: MockReply[]): Promise<void> {
    const res = await fetch(`${this.url}/mock/replies`, { method: "POST", body: JSON.stringify(replies) });
    if (!res.ok) throw new Error(`mock model refused replies: ${res.status} ${await res.text()}`);
  }

  /** Every model request so far. */
  async requests(): Promise<{ path: string; body: unknown }[]> {
    return (await fetch(`${this.url}/mock/requests`)).json() as Promise<{ path: string; body: unknown }[]>;
  }

  stop(): void {
    this.child.kill("SIGKILL");
  }
}

/** A temporary agent project `<tmp>/ops` with `files` (relative path → contents) besides instructions. */
export function agentDir(files: Record<string, string> = {}): { dir: string; root: string } {
  const root = mkdtempSync(path.join(tmpdir(), "folio-ts-"));
  const dir = path.join(root, "ops");
  const all = { "agent/instructions.md": "You are a test agent.\n", ...files };
  for (const [rel, text] of Object.entries(all)) {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    writeFileSync(path.join(dir, rel), text);
  }
  return { dir, root };
}

/** A tool that needs approval before it runs. */
export const DEPLOY_TOOL = `description = "Deploy a service."
command = ["sh", "-c", "cat >/dev/null; echo deployed"]
needs_approval = true

[input_schema]
type = "object"
required = ["target"]
properties.target = { type = "string" }
`;

/** The environment of a folio process using `model` (without FOLIO_TOKEN, FOLIO_MODEL, FOLIO_FAULT). */
export function folioEnv(model: MockModel): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, OPENAI_API_KEY: "test", OPENAI_BASE_URL: `${model.url}/v1` };
  delete env.FOLIO_TOKEN;
  delete env.FOLIO_MODEL;
  delete env.FOLIO_FAULT;
  return env;
}

/** A running `folio serve` of one agent (slug `ops`). */
export class Server {
  child!: ChildProcess;
  /** The host URL (`http://127.0.0.1:P`). */
  url = "";
  /** The agent's base URL (`http://127.0.0.1:P/ops`). */
  agentUrl = "";
  port = 0;
  output: () => string = () => "";

  constructor(
    readonly dir: string,
    readonly stateRoot: string,
    readonly model: MockModel,
    readonly extra: string[] = [],
  ) {}

  /** Starts a server for `dir` (a fresh state root unless given). */
  static async start(dir: string, model: MockModel, options: { stateRoot?: string; extra?: string[] } = {}): Promise<Server> {
    const stateRoot = options.stateRoot ?? mkdtempSync(path.join(tmpdir(), "folio-ts-state-"));
    const server = new Server(dir, stateRoot, model, options.extra);
    await server.restart();
    return server;
  }

  /** (Re)starts the process, on the same port once it has one, with the same state root. */
  async restart(): Promise<void> {
    const env = folioEnv(this.model);
    const args = ["serve", "--model", "openai:mock", "--dir", this.dir, "--state-root", this.stateRoot, "--port", String(this.port), ...this.extra];
    const { child, match, output } = await start(folioBin(), args, env, /agent ops: (http:\/\/[^\s/]+)\/ops/);
    this.child = child;
    this.output = output;
    this.url = match[1];
    this.agentUrl = `${this.url}/ops`;
    const port = Number(new URL(this.url).port);
    if (this.port && port !== this.port) throw new Error(`folio serve restarted on port ${port}, not ${this.port}`);
    this.port = port;
  }

  /** Kills the process with SIGKILL and waits for it to exit. */
  async kill(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once("exit", resolve));
    this.child.kill("SIGKILL");
    await exited;
  }

  /** The session's event log as the server stored it (`<state-root>/ops/traces/<id>.ndjson`). */
  storedLog(sessionId: string): { index: number; type: string }[] {
    const text = readFileSync(path.join(this.stateRoot, "ops", "traces", `${sessionId}.ndjson`), "utf8");
    return text
      .split("\n")
      .filter((line) => line.trim())
      .map((line) => JSON.parse(line) as { index: number; type: string });
  }

  async stop(): Promise<void> {
    await this.kill();
  }
}

/**
 * A proxy in front of `target` that forwards every request; while `dropNext(pred)` is armed, the
 * first matching request is forwarded, its answer read in full, and the client's connection
 * destroyed instead of answering (a lost answer). `files` maps URL paths it answers itself
 * (a web app's files, like a dev server that proxies its API) to files on disk.
 */
export class DroppingProxy {
  url = "";
  dropped = 0;
  private readonly server: http.Server;
  private drop: ((req: http.IncomingMessage) => boolean) | undefined;

  constructor(
    /** Where requests go (settable after start, e.g. to a server that must know the proxy's origin). */
    public target: string,
    private readonly files: Record<string, string> = {},
  ) {
    this.server = http.createServer((req, res) => (this.serveFile(req, res) ? undefined : this.forward(req, res)));
  }

  private serveFile(req: http.IncomingMessage, res: http.ServerResponse): boolean {
    const file = this.files[new URL(req.url ?? "/", "http://x").pathname];
    if (!file) return false;
    const types: Record<string, string> = { ".html": "text/html", ".js": "text/javascript", ".mjs": "text/javascript" };
    res.writeHead(200, { "content-type": types[path.extname(file)] ?? "application/octet-stream", "cache-control": "no-store" });
    res.end(readFileSync(file));
    return true;
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Drops the answer of the next request matching `pred`. */
  dropNext(pred: (req: http.IncomingMessage) => boolean): void {
    this.drop = pred;
  }

  private forward(req: http.IncomingMessage, res: http.ServerResponse): void {
    const target = new URL(this.target);
    const drop = this.drop?.(req) ?? false;
    if (drop) this.drop = undefined;
    const headers = { ...req.headers, host: target.host };
    const upstream = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers }, (answer) => {
      if (drop) {
        answer.resume();
        answer.on("end", () => {
          this.dropped++;
          req.socket.destroy();
        });
        return;
      }
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on("error", () => req.socket.destroy());
    req.pipe(upstream);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** Removes temporary folders. */
export function cleanup(...dirs: string[]): void {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}

/** Polls `check` until it answers a value (not undefined), failing after `ms`. */
export async function eventually<T>(what: string, check: () => Promise<T | undefined> | T | undefined, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
