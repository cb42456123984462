// Under load, nothing looks dead that is alive: 600 running sandboxes each get `commands.run('echo ok')` at the same
// moment, through one server, with the official SDK, and every one of them answers; then again with the same
// Sandbox objects after a 10 s pause, over the connections kept open across it (client → gateway and gateway →
// envd). The server runs in its own process (the global test server is left alone) with its idle keep-alive raised
// to 30 s, so that the SDK keeps its connections across the pause (with the default 5 s it would close them after
// 3 s). Slow on a busy 2-core machine (creating 600 sandboxes takes minutes): every wait is generous and bounded.
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Sandbox } from "e2b";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { newTestInstance } from "../helpers/test-instance.js";

const SANDBOXES = Number(process.env["BURROW_LOAD_SANDBOXES"] ?? 600);
/** Creates in flight at once. */
const CREATE_CONCURRENCY = 24;
/** A create that the busy host refused or timed out (504 "envd did not become ready") is tried again this often. */
const CREATE_ATTEMPTS = 3;
const IDLE_GAP_MS = 10_000;
/** One call may wait this long: on a loaded machine 600 commands queue for minutes (the SDK's default is 60 s). */
const CALL_TIMEOUT_MS = 15 * 60_000;
const MINUTE = 60_000;

/** Run `fn` over `items` with at most `limit` in flight. */
async function bounded<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

/** Errors counted by class and message, so that a failure shows what went wrong and how often. */
function countErrors(results: PromiseSettledResult<unknown>[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const result of results) {
    if (result.status === "fulfilled") continue;
    const err = result.reason as Error;
    const key = `${err?.name}: ${String(err?.message).slice(0, 200)}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

describe(`${SANDBOXES} sandboxes, one command each at once`, () => {
  const instance = newTestInstance("load");
  let server: ServerProcess;
  let opts: { apiKey: string; apiUrl: string; sandboxUrl: string; debug: false };
  const sandboxes: Sandbox[] = [];
  let createRetries = 0;

  beforeAll(async () => {
    server = await startServerProcess(instance, await freePort(), ["--pool-size", "0"], {
      BURROW_KEEP_ALIVE_TIMEOUT_MS: "30000",
      NODE_OPTIONS: "--trace-warnings",
    });
    opts = { apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url, debug: false };
    await bounded(
      Array.from({ length: SANDBOXES }, (_, i) => i),
      CREATE_CONCURRENCY,
      async () => {
        for (let attempt = 1; ; attempt++) {
          try {
            sandboxes.push(await Sandbox.create("base", { ...opts, timeoutMs: 60 * MINUTE, requestTimeoutMs: CALL_TIMEOUT_MS }));
            return;
          } catch (err) {
            if (attempt >= CREATE_ATTEMPTS) throw err;
            createRetries++;
          }
        }
      },
    );
  }, 40 * MINUTE);

  afterAll(async () => {
    try {
      if (server) {
        await bounded(sandboxes, 32, async (sandbox) => void (await Sandbox.kill(sandbox.sandboxId, opts).catch(() => false)));
        const left = await Sandbox.list(opts)
          .nextItems()
          .catch(() => undefined);
        await stopServerProcess(server, "SIGTERM");
        // Killed through the API, nothing is left for `burrow down` to kill.
        expect(left).toEqual([]);
      }
    } finally {
      const down = burrowDown(instance);
      rmSync(instance.stateDir, { recursive: true, force: true });
      expect(down).toMatch(/killed 0 sandbox/);
    }
  }, 30 * MINUTE);

  async function everyoneAtOnce(): Promise<void> {
    expect(sandboxes.length).toBe(SANDBOXES);
    const results = await Promise.allSettled(
      sandboxes.map(async (sandbox) => {
        const result = await sandbox.commands.run("echo ok", { requestTimeoutMs: CALL_TIMEOUT_MS, timeoutMs: CALL_TIMEOUT_MS });
        if (result.stdout !== "ok\n") throw new Error(`${sandbox.sandboxId} printed ${JSON.stringify(result.stdout)}`);
      }),
    );
    expect(countErrors(results), `create retries: ${createRetries}`).toEqual({});
  }

  it("every sandbox answers", { timeout: 20 * MINUTE }, async () => {
    await everyoneAtOnce();
  });

  it(`every sandbox answers again after ${IDLE_GAP_MS / 1000} s idle, over the connections kept open`, { timeout: 20 * MINUTE }, async () => {
    await new Promise((resolve) => setTimeout(resolve, IDLE_GAP_MS));
    await everyoneAtOnce();
  });

  it("the server printed no listener-leak warning and stayed up", () => {
    expect(server.output()).not.toMatch(/MaxListenersExceededWarning/);
    expect(server.child.exitCode).toBeNull();
  });
});
