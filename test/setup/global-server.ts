// Starts one real Burrow server (real orchestrator, real sandboxes) for the whole test run and tears it down
// afterwards: sandboxes killed, bridge and firewall tables removed, state directory deleted.
import { rm } from "node:fs/promises";
import { mkdtempSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { envdRuntimeFiles } from "@burrow/envd";
import { codeInterpreterRuntimeFiles } from "@burrow/code-interpreter/runtime-files";
import { createMcpHttpHandler, mcpGatewayRuntimeFiles } from "@burrow/mcp";
import { createDashboardHandler } from "@burrow/dashboard";
import { LocalOrchestrator } from "@burrow/orchestrator";
import { createBus, createBusMetrics } from "@burrow/bus";
import { Registry } from "prom-client";
import { startServer } from "@burrow/server";
import { pino } from "pino";
import { newTestInstance, pruneSubnetReservations } from "../helpers/test-instance.js";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const test = newTestInstance("test");
  // Host image paths are allowed only here (outside the state directory); suites put their images in it.
  const imageDir = mkdtempSync("/var/tmp/burrow-images-");
  const progress = (line: string) => process.stderr.write(`[burrow test server] ${line}\n`);
  // A failed start (a subnet taken by a concurrent instance, say) must not leave the state directory behind.
  const orchestrator = await LocalOrchestrator.create({
    config: {
      stateDir: test.stateDir,
      instance: test.instance,
      subnet: test.subnet,
      pool: { template: "base", size: 2 },
      // A test server never pulls from the internet: only registries a suite starts on the loopback.
      registries: { insecure: [], mirrors: {}, allowPublic: false },
      imageImportDir: imageDir,
    },
    envd: { ...envdRuntimeFiles(), programs: [codeInterpreterRuntimeFiles(), mcpGatewayRuntimeFiles()] },
    onProgress: progress,
  }).catch(async (error: unknown) => {
    await rm(test.stateDir, { recursive: true, force: true });
    throw error;
  });
  const registry = new Registry();
  const bus = await createBus({ kind: "embedded", path: join(test.stateDir, "bus.db"), metrics: createBusMetrics(registry) });
  const server = await startServer(
    { host: "127.0.0.1", port: 0, stateDir: test.stateDir },
    {
      orchestrator,
      templates: orchestrator.templateBuilder,
      bus,
      registry,
      logger: pino({ level: process.env.BURROW_LOG_LEVEL ?? "warn" }),
      // Burrow's MCP server at /mcp and the dashboard at /dashboard, wired as `burrow up` wires them.
      mounts: [
        { path: "/mcp", handle: createMcpHttpHandler() },
        { path: "/dashboard", public: true, handle: createDashboardHandler() },
      ],
    },
  );
  const apiKey = readFileSync(join(test.stateDir, "api-key"), "utf8").trim();
  const url = `http://127.0.0.1:${server.port}`;
  project.provide("burrow", { apiUrl: url, sandboxUrl: url, apiKey, imageDir, ...test });
  return async () => {
    await server.close();
    await bus.close();
    await orchestrator.shutdown();
    await rm(test.stateDir, { recursive: true, force: true });
    await rm(imageDir, { recursive: true, force: true });
    pruneSubnetReservations();
  };
}
