// Tearing down what a suite started: steps before (kill its sandboxes, close a browser), every server process stopped,
// its instance brought down (sandboxes, bridge, firewall tables, cgroups) and its state directory removed, then steps
// after (NATS servers, the fake internet, temporary files) — each step whatever happened to the others, so that one
// failure leaves nothing running; the first failure is thrown at the end.
import { rmSync } from "node:fs";
import { burrowDown, stopServerProcess, type ServerProcess } from "./server-process.js";
import type { TestInstance } from "./test-instance.js";

export interface TestNode {
  instance: TestInstance;
  server?: ServerProcess | undefined;
}

export async function tearDownServers(nodes: readonly TestNode[], steps: { before?: Array<() => unknown>; after?: Array<() => unknown> } = {}): Promise<void> {
  const failures: unknown[] = [];
  const step = async (fn: () => unknown) => {
    try {
      await fn();
    } catch (err) {
      failures.push(err);
    }
  };
  for (const fn of steps.before ?? []) await step(fn);
  for (const node of nodes) {
    if (node.server) await step(() => stopServerProcess(node.server!, "SIGTERM"));
    await step(() => burrowDown(node.instance));
    await step(() => rmSync(node.instance.stateDir, { recursive: true, force: true }));
  }
  for (const fn of steps.after ?? []) await step(fn);
  if (failures.length > 0) throw failures[0];
}
