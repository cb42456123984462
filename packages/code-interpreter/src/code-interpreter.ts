// Composes the execution server: kernels, contexts, the token check and the HTTP side. main.ts runs it inside a
// sandbox; tests run it on the host.
import { mkdtemp, rm } from "node:fs/promises";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CodeInterpreterConfig } from "./config.js";
import { ContextRegistry } from "./contexts/context-registry.js";
import { EnvdClient } from "./envd/envd-client.js";
import { AccessGuard } from "./http/access.js";
import { createExecutionServer, type Health } from "./http/server.js";
import { KernelLauncher } from "./kernels/start-kernel.js";
import type { Logger } from "./log.js";
import { companionFiles, nodeCommand } from "./paths.js";

/** Variables of the server's own environment that kernels must not inherit. */
const PRIVATE_ENV = /^BURROW_INTERPRETER_/;

export interface CodeInterpreter {
  readonly server: Server;
  readonly registry: ContextRegistry;
  /** Listen, then create the default contexts (health answers 503 until they are up). */
  listen(): Promise<AddressInfo>;
  /** Resolves once the default contexts are up (rejects if one failed). */
  readonly ready: Promise<void>;
  close(): Promise<void>;
}

export async function createCodeInterpreter(config: CodeInterpreterConfig, logger: Logger): Promise<CodeInterpreter> {
  const runDir = await mkdtemp(join(tmpdir(), "burrow-interpreter-"));
  const files = companionFiles();
  const launcher = new KernelLauncher({ nodeCommand: nodeCommand(), workerScript: files.workerScript, pythonDir: files.pythonDir, runDir }, logger);
  const baseEnv = (): Record<string, string> => {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !PRIVATE_ENV.test(k)) env[k] = v;
    return env;
  };
  const registry = new ContextRegistry({
    startKernel: (opts) => launcher.start(opts),
    supports: (language) => launcher.supports(language),
    defaultCwd: config.defaultCwd,
    baseEnv,
    interruptGraceMs: config.interruptGraceMs,
    maxContexts: config.maxContexts,
    logger,
  });
  let health: Health = { state: "starting" };
  const envd = config.envdUrl ? new EnvdClient({ baseUrl: config.envdUrl }) : undefined;
  const server = createExecutionServer({
    registry,
    access: new AccessGuard(envd),
    response: { keepaliveMs: config.keepaliveMs, maxOutputChars: config.maxOutputChars, maxResultBytes: config.maxResultBytes },
    defaultTimeoutMs: config.defaultTimeoutMs,
    health: () => health,
    logger,
  });
  let markReady!: () => void;
  let markFailed!: (error: Error) => void;
  const ready = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    markFailed = reject;
  });
  ready.catch(() => undefined);
  return {
    server,
    registry,
    ready,
    async listen() {
      const address = await new Promise<AddressInfo>((resolve, reject) => {
        server.once("error", reject);
        server.listen(config.port, config.host, () => {
          server.off("error", reject);
          resolve(server.address() as AddressInfo);
        });
      });
      // The default contexts start side by side, then get a silent no-op each, and the envd client makes its first
      // request: a sandbox waiting in the warm pool has paid for all first times before a client's first run. The
      // server answers (503 on /health) meanwhile.
      void Promise.all([
        ...config.defaultContexts.map(async (language) => {
          const context = await registry.defaultFor(language);
          // A kernel that dies on a no-op is restarted by its context like any other; the run that follows tells.
          await context.warmUp().catch((err: unknown) => logger.warn("warming up a default context failed", { language, err }));
        }),
        envd?.warmUp(),
      ]).then(
        () => {
          health = { state: "ready" };
          markReady();
        },
        (error: unknown) => {
          const message = error instanceof Error ? error.message : String(error);
          health = { state: "failed", message };
          logger.error("a default context failed to start", { err: message });
          markFailed(new Error(message));
        },
      );
      return address;
    },
    async close() {
      server.closeIdleConnections();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        setTimeout(() => {
          server.closeAllConnections();
          resolve();
        }, 2000).unref();
      });
      await registry.close();
      envd?.close();
      await rm(runDir, { recursive: true, force: true });
    },
  };
}
