// Starts a server on a free loopback port with a stub orchestrator and a throwaway state directory.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { Registry } from "prom-client";
import { startServer, type RunningServer } from "../../src/index.js";
import type { ServerConfigInput } from "../../src/config.js";
import type { ServerDeps } from "../../src/server.js";
import { StubOrchestrator, type StubOrchestratorOptions } from "./stub-orchestrator.js";

export const TEST_API_KEY = `e2b_${"0".repeat(40)}`;

export interface TestServer {
  server: RunningServer;
  stub: StubOrchestrator;
  stateDir: string;
  apiKey: string;
  url: string;
  /** fetch against the server with the API key set. */
  api(path: string, init?: RequestInit): Promise<Response>;
  /** SDK connection options for this server. */
  sdkOpts: { apiKey: string; apiUrl: string; sandboxUrl: string; debug: false };
  /** Restart the server on the same state directory and orchestrator (new port). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export async function startTestServer(
  opts: { config?: ServerConfigInput; stub?: StubOrchestratorOptions; stateDir?: string; deps?: Partial<ServerDeps> } = {},
): Promise<TestServer> {
  const stateDir = opts.stateDir ?? mkdtempSync(join(tmpdir(), "burrow-server-test-"));
  const stub = new StubOrchestrator(opts.stub);
  const start = () =>
    startServer(
      { host: "127.0.0.1", port: 0, stateDir, apiKey: TEST_API_KEY, ...opts.config },
      { orchestrator: stub, logger: pino({ level: process.env["BURROW_TEST_LOG"] ?? "silent" }), registry: new Registry(), upstream: stub.upstream, ...opts.deps },
    );
  let server = await start();
  const t: TestServer = {
    get server() {
      return server;
    },
    stub,
    stateDir,
    apiKey: TEST_API_KEY,
    get url() {
      return server.url;
    },
    api: (path, init = {}) =>
      fetch(`${server.url}${path}`, { ...init, headers: { "X-API-KEY": TEST_API_KEY, ...(init.headers as Record<string, string>) } }),
    get sdkOpts() {
      return { apiKey: TEST_API_KEY, apiUrl: server.url, sandboxUrl: server.url, debug: false as const };
    },
    async restart() {
      await server.close();
      server = await start();
    },
    async close() {
      await server.close();
      await stub.close();
      if (!opts.stateDir) rmSync(stateDir, { recursive: true, force: true });
    },
  };
  return t;
}
