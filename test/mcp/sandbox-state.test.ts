// Burrow's MCP tools beyond the basics, over streamable HTTP: pause and resume, checkpoint and roll back, fork,
// watching files, the bus and queues, and python code in a code-interpreter sandbox (its template builds on first use).
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { call, connectBurrowMcp, data } from "./mcp-clients.js";

const env = inject("burrow");

describe("Burrow MCP tools: state, files, bus and code", () => {
  let client: Client;
  const created: string[] = [];
  const snapshots: string[] = [];

  async function createSandbox(template = "base", timeout?: number): Promise<string> {
    const { sandboxId } = data<{ sandboxId: string }>(await call(client, "create_sandbox", { template }, timeout ? { timeout, onprogress: () => undefined } : {}));
    created.push(sandboxId);
    return sandboxId;
  }

  beforeAll(async () => {
    client = await connectBurrowMcp(env, "http");
  });

  afterAll(async () => {
    for (const id of created) await call(client, "kill_sandbox", { sandboxId: id }, { allowError: true }).catch(() => undefined);
    for (const id of snapshots) await fetch(`${env.apiUrl}/templates/${id}`, { method: "DELETE", headers: { "x-api-key": env.apiKey } });
    await client?.close();
  });

  test("pause, then a command resumes it; checkpoint and roll back; fork", { timeout: 300_000 }, async () => {
    const sandboxId = await createSandbox();
    await call(client, "write_file", { sandboxId, path: "/home/user/state.txt", content: "checkpointed" });
    expect(data(await call(client, "pause_sandbox", { sandboxId }))).toMatchObject({ paused: true });
    expect(data<{ state: string }>(await call(client, "get_sandbox", { sandboxId })).state).toBe("paused");
    expect(data(await call(client, "run_command", { sandboxId, command: "cat state.txt" }))).toMatchObject({ exitCode: 0, stdout: "checkpointed" });
    expect(data<{ state: string }>(await call(client, "get_sandbox", { sandboxId })).state).toBe("running");

    const { snapshotId } = data<{ snapshotId: string }>(await call(client, "snapshot_sandbox", { sandboxId }));
    snapshots.push(snapshotId);
    const listed = data<{ snapshots: { snapshotId: string }[] }>(await call(client, "list_snapshots", { sandboxId }));
    expect(listed.snapshots.map((s) => s.snapshotId)).toContain(snapshotId);
    await call(client, "write_file", { sandboxId, path: "/home/user/state.txt", content: "changed later" });

    const restored = data<{ sandboxId: string; killed: string }>(await call(client, "restore_snapshot", { snapshotId, replaceSandboxId: sandboxId }));
    created.push(restored.sandboxId);
    expect(restored.killed).toBe(sandboxId);
    expect(data(await call(client, "run_command", { sandboxId: restored.sandboxId, command: "cat state.txt" }))).toMatchObject({ stdout: "checkpointed" });
    expect((await call(client, "get_sandbox", { sandboxId }, { allowError: true })).isError).toBe(true);

    const forked = data<{ forks: { sandboxId?: string; error?: string }[] }>(await call(client, "fork_sandbox", { sandboxId: restored.sandboxId }));
    expect(forked.forks).toHaveLength(1);
    const fork = forked.forks[0]!.sandboxId!;
    created.push(fork);
    expect(data(await call(client, "run_command", { sandboxId: fork, command: "cat state.txt" }))).toMatchObject({ stdout: "checkpointed" });
  });

  test("watch_files reports changes made while it watches", { timeout: 120_000 }, async () => {
    const sandboxId = await createSandbox();
    await call(client, "run_command", { sandboxId, command: "mkdir -p /home/user/watched" });
    const progress: string[] = [];
    const watching = call(client, "watch_files", { sandboxId, path: "/home/user/watched", durationSeconds: 30, maxEvents: 1 }, { onprogress: (m) => progress.push(m) });
    // Write until the watch has seen something (it starts a moment after the call is sent).
    let settled = false;
    void watching.finally(() => (settled = true));
    for (let i = 0; !settled && i < 100; i++) {
      await call(client, "write_file", { sandboxId, path: `/home/user/watched/f${i}.txt`, content: "x" });
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const result = data<{ events: { name: string; type: string }[]; truncated: boolean }>(await watching);
    expect(result.events).toHaveLength(1);
    expect(result.events[0]!.name).toMatch(/^f\d+\.txt$/);
    expect(result.truncated).toBe(true);
    expect(progress.join("\n")).toContain(result.events[0]!.name);
  });

  test("the bus: publish and read on a subject; a work queue", { timeout: 60_000 }, async () => {
    const subject = `mcp.test.${Math.random().toString(36).slice(2)}`;
    const reading = call(client, "bus_read", { subject: `${subject}.>`, waitSeconds: 30, maxMessages: 1 });
    let settled = false;
    void reading.finally(() => (settled = true));
    for (let i = 0; !settled && i < 100; i++) {
      await call(client, "bus_publish", { subject: `${subject}.hello`, data: "hi from MCP", headers: { from: "test" } });
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const read = data<{ messages: { subject: string; data: string; headers: Record<string, string> }[] }>(await reading);
    expect(read.messages).toHaveLength(1);
    expect(read.messages[0]).toMatchObject({ subject: `${subject}.hello`, data: "hi from MCP", headers: { from: "test" } });

    const badSubject = await call(client, "bus_publish", { subject: `${subject}.*`, data: "x" }, { allowError: true });
    expect(badSubject.isError).toBe(true);

    const queue = `mcpq-${Math.random().toString(36).slice(2)}`;
    await call(client, "queue_enqueue", { queue, data: "low", priority: 0 });
    await call(client, "queue_enqueue", { queue, data: "urgent", priority: 9 });
    // Higher priorities first.
    expect(data(await call(client, "queue_take", { queue }))).toMatchObject({ message: { data: "urgent", priority: 9 } });
    expect(data(await call(client, "queue_take", { queue }))).toMatchObject({ message: { data: "low" } });
    expect(data(await call(client, "queue_take", { queue, waitSeconds: 0 }))).toEqual({ queue, message: null });
  });

  test("run_code runs python in a code-interpreter sandbox", { timeout: 1_200_000 }, async () => {
    // The first create builds code-interpreter-v1 (minutes); the MCP call waits for it.
    const sandboxId = await createSandbox("code-interpreter-v1", 1_100_000);
    const progress: string[] = [];
    const ran = await call(client, "run_code", { sandboxId, code: "x = 6 * 7\nprint('answer', x)\nx" }, { onprogress: (m) => progress.push(m) });
    const result = data<{ stdout: string; results: { text?: string }[]; error?: unknown }>(ran);
    expect(result.stdout).toBe("answer 42\n");
    expect(result.results.map((r) => r.text)).toEqual(["42"]);
    expect(result.error).toBeUndefined();
    expect(progress.join("")).toContain("answer 42");
    // State persists between cells; an exception is reported with its traceback.
    const failed = data<{ error: { name: string; value: string; traceback: string } }>(await call(client, "run_code", { sandboxId, code: "x / 0" }));
    expect(failed.error.name).toBe("ZeroDivisionError");
    expect(failed.error.traceback).toContain("ZeroDivisionError");
    // A chart comes back as an image.
    const chart = await call(client, "run_code", { sandboxId, code: "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()" });
    expect(chart.content.some((c) => c.type === "image" && c.mimeType === "image/png")).toBe(true);
  });
});
