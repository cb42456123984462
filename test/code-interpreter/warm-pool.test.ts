// Once code-interpreter-v1 has been used, the warm pool keeps a sandbox of it with the execution server and its
// kernels already started (the test server's pool is on, so one is kept): a create claims it, and what the caller
// sees is as if the sandbox had started for it: the create's env vars reach the kernels, the access token the
// create set is checked, the `code-interpreter` alias is served the same way, and contexts are fresh.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { Sandbox } from "@e2b/code-interpreter";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { accessToken, connection, createInterpreter, interpreterHeaders } from "./helpers.js";

const env = inject("burrow");
const VALUE = `from the create: 'quoted' "double" $HOME\nsecond line`;

interface RecordFile {
  pid: number;
  ip: string;
  pooled: boolean;
  templateId: string;
}

function readRecord(sandboxId: string): RecordFile {
  return JSON.parse(readFileSync(join(env.stateDir, "sandboxes", sandboxId, "sandbox.json"), "utf8")) as RecordFile;
}

/** Wall-clock start of a host process, from /proc (start time in clock ticks since boot). */
function processStartedAtMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const bootTime = Number(/^btime (\d+)$/m.exec(readFileSync("/proc/stat", "utf8"))?.[1]);
  return bootTime * 1000 + (Number(fields[19]) / 100) * 1000;
}

/** Python run in a kernel that prints when that kernel's process started (ms since the epoch, same clock as here). */
const KERNEL_STARTED_AT = `
import os
with open('/proc/self/stat') as f:
    ticks = int(f.read().rsplit(')', 1)[1].split()[19])
with open('/proc/stat') as f:
    boot = int(next(line for line in f if line.startswith('btime')).split()[1])
print(int(boot * 1000 + ticks * 1000 / os.sysconf('SC_CLK_TCK')), end='')
`;

async function kernelStartedAtMs(sandbox: Sandbox, opts: Parameters<Sandbox["runCode"]>[1] = {}): Promise<number> {
  const execution = await sandbox.runCode(KERNEL_STARTED_AT, opts);
  expect(execution.error).toBeUndefined();
  return Number(execution.logs.stdout.join(""));
}

let templateId = "";

/**
 * Pooled (unclaimed) sandboxes of the code-interpreter template whose execution server reports its default kernels
 * up (a sandbox is pooled from its launch, while its start command still runs).
 */
async function readyInPool(): Promise<number> {
  let count = 0;
  for (const id of readdirSync(join(env.stateDir, "sandboxes"))) {
    let record: RecordFile;
    try {
      record = readRecord(id);
    } catch {
      continue; // being created or removed
    }
    if (!record.pooled || record.templateId !== templateId) continue;
    const health = await fetch(`http://${record.ip}:49999/health`, { signal: AbortSignal.timeout(5000) }).catch(() => undefined);
    if (health?.status === 200) count++;
    await health?.body?.cancel();
  }
  return count;
}

/** Wait for the pool to hold a prestarted sandbox, then leave a gap that a sandbox started by a create could not fake. */
async function poolReady(): Promise<number> {
  for (let i = 0; i < 1200 && (await readyInPool()) < 1; i++) await new Promise((r) => setTimeout(r, 250));
  expect(await readyInPool()).toBe(1);
  await new Promise((r) => setTimeout(r, 1500));
  return Date.now();
}

describe("code interpreter from the warm pool", () => {
  beforeAll(async () => {
    // The first use builds the template if needed and puts it in use: its pool starts filling.
    const first = await createInterpreter(env);
    templateId = readRecord(first.sandboxId).templateId;
    await first.kill();
  }, 1_800_000);

  it("hands out a sandbox whose kernels were already running, with the create's env vars and token", { timeout: 600_000 }, async () => {
    const requestedAt = await poolReady();
    const sandbox = await Sandbox.create({ ...connection(env), envs: { FROM_CREATE: VALUE } });
    try {
      const record = readRecord(sandbox.sandboxId);
      expect(record.pooled).toBe(false);
      expect(processStartedAtMs(record.pid)).toBeLessThan(requestedAt - 1000);
      // The default python kernel ran before the create was asked for, and nothing ran in it before this run.
      const first = await sandbox.runCode(KERNEL_STARTED_AT);
      expect(first.error).toBeUndefined();
      expect(first.executionCount).toBe(1);
      expect(Number(first.logs.stdout.join(""))).toBeLessThan(requestedAt - 1000);
      expect((await sandbox.runCode("1+1")).text).toBe("2");

      // The create's env vars reach every language's kernel, byte for byte.
      expect((await sandbox.runCode("import os; print(os.environ['FROM_CREATE'], end='')")).logs.stdout.join("")).toBe(VALUE);
      expect((await sandbox.runCode("process.stdout.write(process.env.FROM_CREATE)", { language: "javascript" })).logs.stdout.join("")).toBe(VALUE);
      expect((await sandbox.runCode('printf %s "$FROM_CREATE"', { language: "bash" })).logs.stdout.join("")).toBe(VALUE);

      // The token the create set is checked, although the server started before it was set.
      const token = accessToken(sandbox);
      expect(token).toBeTruthy();
      const url = `${env.sandboxUrl}/execute`;
      const body = JSON.stringify({ code: "1" });
      expect((await fetch(url, { method: "POST", headers: interpreterHeaders(sandbox, null), body })).status).toBe(401);
      expect((await fetch(url, { method: "POST", headers: interpreterHeaders(sandbox, "wrong"), body })).status).toBe(401);
      const ok = await fetch(url, { method: "POST", headers: interpreterHeaders(sandbox), body });
      expect(ok.status).toBe(200);
      await ok.text();

      // A context the caller creates gets a kernel of its own, started now, with the create's variables.
      const context = await sandbox.createCodeContext({ language: "python" });
      expect(await kernelStartedAtMs(sandbox, { context })).toBeGreaterThanOrEqual(requestedAt - 1000);
      const fresh = await sandbox.runCode("import os\nprint(os.environ['FROM_CREATE'], end='')\nx", { context });
      expect(fresh.logs.stdout.join("")).toBe(VALUE);
      expect(fresh.error?.name).toBe("NameError");
    } finally {
      await sandbox.kill();
    }
  });

  it("serves the code-interpreter alias from the same pool", { timeout: 600_000 }, async () => {
    const requestedAt = await poolReady();
    const sandbox = await Sandbox.create("code-interpreter", { ...connection(env), envs: { FROM_CREATE: "alias" } });
    try {
      expect(readRecord(sandbox.sandboxId).templateId).toBe(templateId);
      expect(await kernelStartedAtMs(sandbox)).toBeLessThan(requestedAt - 1000);
      expect((await sandbox.runCode("import os; print(os.environ['FROM_CREATE'], end='')")).logs.stdout.join("")).toBe("alias");
    } finally {
      await sandbox.kill();
    }
  });
});
