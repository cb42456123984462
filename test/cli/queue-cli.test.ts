// `burrow queue list|show|dead-letters|requeue|drop` against the real server, on a queue the REST API fills and
// dead-letters.
import { randomBytes } from "node:crypto";
import { afterAll, describe, expect, inject, it } from "vitest";
import { keyedApi } from "../helpers/keyed-api.js";
import { runBurrow, type CliResult } from "./run-burrow.js";

const env = inject("burrow");
const clientEnv = { ...process.env, E2B_API_URL: env.apiUrl, E2B_SANDBOX_URL: env.sandboxUrl, E2B_API_KEY: env.apiKey };
const call = keyedApi(env.apiUrl, env.apiKey);
const queue = `cli-q-${randomBytes(4).toString("hex")}`;
const Q = `/burrow/v1/queues/${queue}`;

const burrow = (args: string[]): Promise<CliResult> => runBurrow(args, { env: clientEnv });
const json = async (args: string[]) => {
  const r = await burrow([...args, "--json"]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
};

afterAll(async () => {
  await call("DELETE", `${Q}/dead-letters`).catch(() => undefined);
});

async function deadLetterAll(): Promise<void> {
  for (;;) {
    const m = await call("POST", `${Q}/consume`, { timeoutMs: 2000 });
    if (m.status === 204) return;
    expect((await call("POST", `${Q}/messages/${m.json.receipt}/nack`, { delayMs: 0 })).status).toBe(204);
  }
}

describe("burrow queue", () => {
  it("lists, shows, pages dead letters, requeues and drops", { timeout: 120_000 }, async () => {
    for (const data of ["alpha", "beta", "gamma"]) expect((await call("POST", `${Q}/messages`, { data })).status).toBe(201);
    expect((await json(["queue", "list"])).find((q: { name: string }) => q.name === queue)).toEqual({ name: queue, ready: 3, inFlight: 0, deadLetters: 0 });
    const shown = await burrow(["queue", "show", queue]);
    expect(shown.stdout).toBe(`queue ${queue}: 3 ready, 0 in flight, 0 dead letters\n`);

    await deadLetterAll();
    const page = await json(["queue", "dead-letters", queue, "--limit", "2"]);
    expect(page.total).toBe(3);
    expect(page.items.map((d: { data: string }) => d.data)).toEqual(["alpha", "beta"]);
    const table = await burrow(["queue", "dlq", queue, "--after", String(page.next)]);
    expect(table.stdout).toMatch(/^SEQ\s+REASON\s+ATTEMPTS\s+LASTERROR\s+TIME\s+PAYLOAD\n/);
    expect(table.stdout).toContain("gamma");
    expect(table.stdout).not.toContain("alpha");

    const [alpha, beta] = page.items as Array<{ seq: number }>;
    const requeued = await burrow(["queue", "requeue", queue, String(alpha!.seq)]);
    expect(requeued.code, requeued.stderr).toBe(0);
    expect(requeued.stdout).toMatch(new RegExp(`^requeued ${alpha!.seq} as message \\d+\\n$`));
    expect((await json(["queue", "show", queue])).ready).toBe(1);
    expect((await burrow(["queue", "drop", queue, String(beta!.seq)])).stdout).toBe(`dropped ${beta!.seq}\n`);
    expect(await json(["queue", "requeue", queue, "--all"])).toEqual({ requeued: 1 });
    expect((await json(["queue", "show", queue])).ready).toBe(2);
    await deadLetterAll();
    expect((await burrow(["queue", "drop", queue, "--all"])).stdout).toBe("dropped 2\n");
    expect(await json(["queue", "show", queue])).toEqual({ name: queue, ready: 0, inFlight: 0, deadLetters: 0 });
  });

  it("refuses SEQ together with --all, and a missing queue", async () => {
    const both = await burrow(["queue", "drop", queue, "1", "--all"]);
    expect(both.code).not.toBe(0);
    expect(both.stderr).toContain("SEQ (a positive integer) or --all");
    const missing = await burrow(["queue", "show", `none-${randomBytes(3).toString("hex")}`]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain("(404)");
  });
});
