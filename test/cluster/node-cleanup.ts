// Tearing down a test's cluster: every node's server stopped, its instance brought down (sandboxes, bridge, firewall
// tables, cgroups) and its state directory removed, then the NATS servers stopped — each step whatever happened to
// the others, so that one failure leaves nothing running; the first failure is thrown at the end.
import { rmSync } from "node:fs";
import { burrowDown, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import type { TestInstance } from "../helpers/test-instance.js";

export interface TestNode {
  instance: TestInstance;
  server?: ServerProcess | undefined;
}

export async function tearDownCluster(nodes: readonly TestNode[], nats: { stop(): Promise<void> } | undefined, before: Array<() => unknown> = []): Promise<void> {
  const failures: unknown[] = [];
  const step = async (fn: () => unknown) => {
    try {
      await fn();
    } catch (err) {
      failures.push(err);
    }
  };
  for (const fn of before) await step(fn);
  for (const node of nodes) {
    if (node.server) await step(() => stopServerProcess(node.server!, "SIGTERM"));
    await step(() => burrowDown(node.instance));
    await step(() => rmSync(node.instance.stateDir, { recursive: true, force: true }));
  }
  if (nats) await step(() => nats.stop());
  if (failures.length > 0) throw failures[0];
}
