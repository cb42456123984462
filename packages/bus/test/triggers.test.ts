import { execFile } from "node:child_process";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  EmbeddedBus, TaskService, TriggerEngine, ensureSandboxEventStream, publishSandboxEvent, renderCommand,
  type RunOptions, type RunResult, type RunTarget, type SandboxRunner,
} from "../src/index.js";

/**
 * For the engine's own tests only: runs the command on the host with /bin/sh. Real sandboxes come in through the
 * server's runner; this one records where each command was asked to run.
 */
class HostRunner implements SandboxRunner {
  calls: { target: RunTarget; cmd: string }[] = [];
  runCommand(target: RunTarget, cmd: string, opts: RunOptions): Promise<RunResult> {
    this.calls.push({ target, cmd });
    return new Promise((resolve) => {
      execFile("/bin/sh", ["-c", cmd], { env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", ...opts.env }, timeout: opts.timeoutMs ?? 10_000, signal: opts.signal }, (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === "number" ? (err as { code: number }).code : 1) : 0;
        resolve({ exitCode: code, stdout, stderr });
      });
    });
  }
}

describe("tasks", () => {
  let bus: EmbeddedBus;
  beforeEach(() => {
    bus = new EmbeddedBus({ path: ":memory:" });
  });
  afterEach(async () => {
    await bus.close();
  });

  it("runs a task and records its result; the same id runs once", async () => {
    const tasks = await TaskService.open(bus, { pollMs: 20 });
    const runner = new HostRunner();
    const worker = tasks.startWorker(runner, { workerId: "w1" });
    const { id } = await tasks.submit({ id: "t1", target: { template: "base" }, cmd: "echo hello $WHO", process: { env: { WHO: "burrow" } }, category: "demo" });
    expect((await tasks.submit({ id: "t1", target: { template: "base" }, cmd: "echo again" })).duplicate).toBe(true);
    const s = await tasks.wait(id, { timeoutMs: 10_000 });
    expect(s.state).toBe("succeeded");
    expect(s.result).toMatchObject({ exitCode: 0, stdout: "hello burrow\n" });
    expect(s.spec.category).toBe("demo");
    expect(runner.calls).toEqual([{ target: { template: "base" }, cmd: "echo hello $WHO" }]);
    await worker.close();
  });

  it("retries a failing task with backoff and marks it dead after max attempts", async () => {
    const tasks = await TaskService.open(bus, { maxAttempts: 3, backoffMs: [50, 100], pollMs: 20 });
    const runner = new HostRunner();
    const worker = tasks.startWorker(runner);
    const { id } = await tasks.submit({ target: { sandboxId: "s" }, cmd: "echo nope >&2; exit 3" });
    const s = await tasks.wait(id, { timeoutMs: 10_000 });
    expect(s).toMatchObject({ state: "dead", attempt: 3, error: "exit code 3" });
    expect(s.result?.stderr).toBe("nope\n");
    expect(runner.calls).toHaveLength(3);
    await worker.close();
  });

  it("succeeds on a later attempt", async () => {
    const tasks = await TaskService.open(bus, { maxAttempts: 3, backoffMs: [30], pollMs: 20 });
    const marker = `/tmp/burrow-task-${process.pid}-${Date.now()}`;
    const worker = tasks.startWorker(new HostRunner());
    // Fails the first time (creates the marker), succeeds the second.
    const { id } = await tasks.submit({ target: { sandboxId: "s" }, cmd: `if [ -e ${marker} ]; then rm ${marker}; echo ok; else touch ${marker}; exit 1; fi` });
    const s = await tasks.wait(id, { timeoutMs: 10_000 });
    expect(s).toMatchObject({ state: "succeeded", attempt: 2 });
    await worker.close();
  });

  it("fails over a task held by a worker that died to another worker", async () => {
    const tasks = await TaskService.open(bus, { ackWaitMs: 600, pollMs: 20 });
    let release!: () => void;
    const started = new Promise<void>((r) => (release = r));
    const stuck: SandboxRunner = {
      runCommand: (_t, _c, o) => {
        release();
        return new Promise((_, reject) => o.signal?.addEventListener("abort", () => reject(new Error("killed"))));
      },
    };
    const dying = tasks.startWorker(stuck, { workerId: "dying" });
    const { id } = await tasks.submit({ target: { sandboxId: "s" }, cmd: "echo survived" });
    await started;
    await dying.close(); // dies holding the task, without acknowledging it
    const runner = new HostRunner();
    const live = tasks.startWorker(runner, { workerId: "live" });
    const s = await tasks.wait(id, { timeoutMs: 15_000 });
    expect(s).toMatchObject({ state: "succeeded", worker: "live", attempt: 2, result: { stdout: "survived\n" } });
    expect(runner.calls).toHaveLength(1);
    await live.close();
  });
});

describe("triggers", () => {
  let bus: EmbeddedBus;
  beforeEach(async () => {
    bus = new EmbeddedBus({ path: ":memory:" });
    await ensureSandboxEventStream(bus);
  });
  afterEach(async () => {
    await bus.close();
  });

  it("renders commands with shell-quoted event values", () => {
    const cmd = renderCommand("wc -c {{path}}", { category: "fs", type: "write", sandboxId: "s", templateId: "t", path: "/x/it's here.txt" });
    expect(cmd).toBe(`wc -c '/x/it'\\''s here.txt'`);
  });

  it("runs a command in the source sandbox or a fresh one when a matching event arrives", async () => {
    const tasks = await TaskService.open(bus, { pollMs: 20 });
    const runner = new HostRunner();
    const worker = tasks.startWorker(runner);
    const engine = await TriggerEngine.start({
      bus, tasks,
      rules: [
        { id: "clean", on: { category: "fs", type: "write", pathPrefix: "/data/raw/", metadata: { pipeline: "p1" } }, in: "source", cmd: "echo cleaning {{path}}" },
        { id: "report", on: { category: "proc", type: "exited" }, in: { template: "reporter" }, cmd: (e) => `echo exit ${e.category === "proc" ? e.exitCode : "?"}` },
      ],
    });
    await publishSandboxEvent(bus, { category: "fs", type: "write", sandboxId: "sbx-a", templateId: "py", path: "/data/raw/x.csv", metadata: { pipeline: "p1" } });
    await publishSandboxEvent(bus, { category: "fs", type: "write", sandboxId: "sbx-a", templateId: "py", path: "/tmp/ignored", metadata: { pipeline: "p1" } });
    await publishSandboxEvent(bus, { category: "fs", type: "write", sandboxId: "sbx-b", templateId: "py", path: "/data/raw/y.csv", metadata: { pipeline: "other" } });
    await publishSandboxEvent(bus, { category: "proc", type: "exited", sandboxId: "sbx-c", templateId: "py", pid: 4, exitCode: 2 });
    const deadline = Date.now() + 10_000;
    while (runner.calls.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(runner.calls).toHaveLength(2);
    expect(runner.calls).toContainEqual({ target: { sandboxId: "sbx-a" }, cmd: "echo cleaning '/data/raw/x.csv'" });
    expect(runner.calls).toContainEqual({ target: { template: "reporter" }, cmd: "echo exit 2" });
    expect(engine.fired).toBe(2);
    await engine.close();
    await worker.close();
  });

  it("sees events published while it was down once it is started again", async () => {
    const tasks = await TaskService.open(bus, { pollMs: 20 });
    const rules = [{ id: "resume", on: { category: "lifecycle" as const, type: "created" }, in: "source" as const, cmd: "echo {{sandboxId}}" }];
    const first = await TriggerEngine.start({ bus, tasks, rules });
    await first.close();
    await publishSandboxEvent(bus, { category: "lifecycle", type: "created", sandboxId: "while-down", templateId: "t" });
    const runner = new HostRunner();
    const worker = tasks.startWorker(runner);
    const second = await TriggerEngine.start({ bus, tasks, rules });
    const deadline = Date.now() + 10_000;
    while (runner.calls.length < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(runner.calls).toEqual([{ target: { sandboxId: "while-down" }, cmd: "echo 'while-down'" }]);
    await second.close();
    await worker.close();
  });
});
