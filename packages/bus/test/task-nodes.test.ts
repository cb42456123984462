// Two servers sharing one NATS bus (the nodes of a cluster) share its task queue; a task only one of them can run (its
// sandbox is there) is handed to that server's own queue by whichever takes it first, and runs there once.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsBus, TaskService, type RunOptions, type RunResult, type RunTarget, type SandboxRunner } from "../src/index.js";
import { NatsServerFixture } from "./helpers/nats-server.js";

/** Records the runs asked of one server; its sandboxes are those named `<node>-…`. */
class NodeRunner implements SandboxRunner {
  readonly runs: string[] = [];
  constructor(readonly node: string) {}
  nodeFor(target: RunTarget): string | undefined {
    if (!("sandboxId" in target)) return undefined;
    const owner = target.sandboxId.split("-")[0];
    return owner === this.node ? undefined : owner;
  }
  runCommand(target: RunTarget, cmd: string, _opts: RunOptions): Promise<RunResult> {
    if ("sandboxId" in target && this.nodeFor(target) !== undefined) return Promise.reject(new Error(`sandbox ${target.sandboxId} is not on ${this.node}`));
    this.runs.push(cmd);
    return Promise.resolve({ exitCode: 0, stdout: `${this.node}\n`, stderr: "" });
  }
}

describe("tasks on servers sharing a NATS bus", () => {
  let server: NatsServerFixture;
  const buses: NatsBus[] = [];
  beforeAll(async () => {
    server = await NatsServerFixture.start();
    for (let i = 0; i < 2; i++) buses.push(await NatsBus.connect({ servers: server.url }));
  }, 60_000);
  afterAll(async () => {
    for (const bus of buses) await bus.close();
    await server?.stop();
  });

  it("runs each task once, on the server its sandbox is on", { timeout: 60_000 }, async () => {
    const [n1, n2] = [new NodeRunner("n1"), new NodeRunner("n2")];
    const services = await Promise.all(["n1", "n2"].map((node, i) => TaskService.open(buses[i]!, { node, pollMs: 20, maxAttempts: 1, backoffMs: [50] })));
    const workers = [services[0]!.startWorker(n1, { concurrency: 2 }), services[1]!.startWorker(n2, { concurrency: 2 })];
    try {
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) {
        const node = i % 2 === 0 ? "n1" : "n2";
        ids.push((await services[i % 2]!.submit({ id: `t${i}`, target: { sandboxId: `${node === "n1" ? "n2" : "n1"}-sbx` }, cmd: `run ${i}` })).id);
      }
      const done = await Promise.all(ids.map((id) => services[0]!.wait(id, { timeoutMs: 30_000 })));
      expect(done.map((s) => [s.state, s.result?.stdout])).toEqual(ids.map((_, i) => ["succeeded", i % 2 === 0 ? "n2\n" : "n1\n"]));
      expect(n1.runs.sort()).toEqual(["run 1", "run 3", "run 5", "run 7"]);
      expect(n2.runs.sort()).toEqual(["run 0", "run 2", "run 4", "run 6"]);
    } finally {
      await Promise.all(workers.map((w) => w.close()));
    }
  });
});
