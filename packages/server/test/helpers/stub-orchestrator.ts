// A test-only Orchestrator: every "sandbox" is a tiny HTTP server on 127.0.0.1 standing in for envd and for
// any port a user process would open. Nothing is isolated; it exists to exercise the control plane.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import type {
  CreateSandboxOptions, Orchestrator, SandboxExitReason, SandboxMetricSample, SandboxRecord, TemplateInfo,
} from "@burrow/orchestrator";
import { BurrowError, Code } from "@burrow/protocol";

/** A port that stub sandboxes never listen on, to test "port not open". */
export const CLOSED_PORT = 9;

export interface StubSandbox {
  record: SandboxRecord;
  server: Server;
  port: number;
  envVars: Record<string, string>;
  envdAccessToken: string;
  /** Requests the sandbox received, in order. */
  requests: Array<{ method: string; url: string; headers: IncomingMessage["headers"]; body: string }>;
  /** Upgraded sockets, which server.closeAllConnections() does not see. */
  upgraded: Set<Duplex>;
}

export interface StubOrchestratorOptions {
  /** Delay before createSandbox resolves. */
  createDelayMs?: number;
}

const BASE_TEMPLATE: TemplateInfo = {
  templateId: "tplbase0000000000000",
  aliases: ["base"],
  defaults: { cpuCount: 2, memoryMB: 512, diskMB: 1024, pids: 512 },
  createdAt: new Date("2026-01-01T00:00:00Z"),
};

let counter = 0;
function newId(): string {
  counter += 1;
  return `stub${Date.now().toString(36)}${counter.toString(36).padStart(4, "0")}`;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

/**
 * The stub sandbox's behaviour:
 * - `GET /health` → 204 (like envd);
 * - `GET /stream` → 200 and a chunk every 50 ms until the client goes away (a long-lived Connect stream);
 * - anything else → 200 JSON echo `{sandboxId, method, url, headers, body}`;
 * - upgrades → 101 and an echo of every byte received.
 */
function handler(sbx: () => StubSandbox) {
  return async (req: IncomingMessage, res: ServerResponse) => {
    if (req.url === "/stream") {
      sbx().requests.push({ method: req.method!, url: req.url, headers: req.headers, body: "" });
      res.writeHead(200, { "content-type": "application/connect+json" });
      res.flushHeaders();
      const timer = setInterval(() => res.write("tick\n"), 50);
      res.on("close", () => clearInterval(timer));
      return;
    }
    const body = await readBody(req);
    sbx().requests.push({ method: req.method!, url: req.url!, headers: req.headers, body });
    if (req.method === "GET" && req.url === "/health") {
      res.writeHead(204).end();
      return;
    }
    const payload = JSON.stringify({ sandboxId: sbx().record.sandboxId, method: req.method, url: req.url, headers: req.headers, body });
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(payload) });
    res.end(payload);
  };
}

export class StubOrchestrator implements Orchestrator {
  readonly sandboxes = new Map<string, StubSandbox>();
  readonly templates: TemplateInfo[] = [BASE_TEMPLATE];
  readonly #listeners = new Set<(id: string, reason: SandboxExitReason) => void>();
  readonly #opts: StubOrchestratorOptions;
  killCalls: string[] = [];

  constructor(opts: StubOrchestratorOptions = {}) {
    this.#opts = opts;
  }

  /** Gateway upstream mapping for ServerDeps.upstream: every port of a stub sandbox is its one server. */
  readonly upstream = (record: SandboxRecord, port: number) => ({
    host: "127.0.0.1",
    port: port === CLOSED_PORT ? CLOSED_PORT : (this.sandboxes.get(record.sandboxId)?.port ?? CLOSED_PORT),
  });

  async createSandbox(opts: CreateSandboxOptions): Promise<SandboxRecord> {
    const template = this.resolveTemplate(opts.template);
    // Shaped like the real orchestrator's OrchestratorError: a Connect code name in `code`.
    if (!template) throw new BurrowError(Code.NotFound, `template '${opts.template}' not found`);
    if (this.#opts.createDelayMs) await new Promise((r) => setTimeout(r, this.#opts.createDelayMs));
    opts.signal?.throwIfAborted();
    const sandboxId = newId();
    let sandbox!: StubSandbox;
    const server = createServer(handler(() => sandbox));
    server.on("upgrade", (req, socket) => {
      sandbox.requests.push({ method: req.method!, url: req.url!, headers: req.headers, body: "" });
      sandbox.upgraded.add(socket);
      socket.on("close", () => sandbox.upgraded.delete(socket));
      socket.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n");
      socket.on("data", (d) => socket.write(d));
      socket.on("error", () => socket.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const record: SandboxRecord = {
      sandboxId,
      templateId: template.templateId,
      address: "127.0.0.1",
      limits: { ...template.defaults, ...opts.limits },
      allowInternetAccess: opts.allowInternetAccess,
      startedAt: new Date(),
      state: "running",
    };
    sandbox = {
      record,
      server,
      port: (server.address() as AddressInfo).port,
      envVars: opts.envVars,
      envdAccessToken: opts.envdAccessToken,
      requests: [],
      upgraded: new Set(),
    };
    this.sandboxes.set(sandboxId, sandbox);
    return record;
  }

  async killSandbox(sandboxId: string): Promise<boolean> {
    this.killCalls.push(sandboxId);
    const sandbox = this.sandboxes.get(sandboxId);
    if (!sandbox) return false;
    await this.#stop(sandbox);
    this.#notify(sandboxId, "killed");
    return true;
  }

  /** Simulate the sandbox's init dying on its own. */
  async crash(sandboxId: string): Promise<void> {
    const sandbox = this.sandboxes.get(sandboxId);
    if (!sandbox) return;
    await this.#stop(sandbox);
    this.#notify(sandboxId, "crashed");
  }

  /** Pretend a sandbox exists that the server never created (e.g. left over from a crash). */
  async adoptOrphan(): Promise<string> {
    const record = await this.createSandbox({ template: "base", allowInternetAccess: true, envVars: {}, envdAccessToken: "x" });
    return record.sandboxId;
  }

  getSandbox(sandboxId: string): SandboxRecord | undefined {
    return this.sandboxes.get(sandboxId)?.record;
  }

  listSandboxes(): SandboxRecord[] {
    return [...this.sandboxes.values()].map((s) => s.record);
  }

  async sampleMetrics(sandboxId: string): Promise<SandboxMetricSample | undefined> {
    const sandbox = this.sandboxes.get(sandboxId);
    if (!sandbox) return undefined;
    return {
      timestamp: new Date(),
      cpuCount: sandbox.record.limits.cpuCount,
      cpuUsedPct: 1.5,
      memUsed: 64 * 1024 * 1024,
      memTotal: sandbox.record.limits.memoryMB * 1024 * 1024,
      memCache: 1024,
      diskUsed: 4096,
      diskTotal: sandbox.record.limits.diskMB * 1024 * 1024,
    };
  }

  resolveTemplate(ref: string): TemplateInfo | undefined {
    const name = ref.split(":")[0]!;
    return this.templates.find((t) => t.templateId === ref || t.aliases.includes(name));
  }

  listTemplates(): TemplateInfo[] {
    return [...this.templates];
  }

  onSandboxExit(listener: (sandboxId: string, reason: SandboxExitReason) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Kills every stub sandbox: unlike the real one, test stubs must not outlive the test. */
  async close(): Promise<void> {
    for (const sandbox of [...this.sandboxes.values()]) await this.#stop(sandbox);
    this.#listeners.clear();
  }

  async #stop(sandbox: StubSandbox): Promise<void> {
    this.sandboxes.delete(sandbox.record.sandboxId);
    sandbox.server.closeAllConnections();
    for (const socket of sandbox.upgraded) socket.destroy();
    await new Promise<void>((resolve) => sandbox.server.close(() => resolve()));
  }

  #notify(sandboxId: string, reason: SandboxExitReason): void {
    for (const listener of this.#listeners) listener(sandboxId, reason);
  }
}
