// Creates are served from the warm pool when one is configured (the test server keeps two ready): the
// sandbox handed out was started before the create request was made.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, inject, it } from "vitest";
import { Sandbox } from "e2b";

const env = inject("burrow");
const opts = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl };

/** Wall-clock start of a host process, from /proc (start time in clock ticks since boot). */
function processStartedAtMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const startTicks = Number(fields[19]);
  const bootTime = Number(/^btime (\d+)$/m.exec(readFileSync("/proc/stat", "utf8"))?.[1]);
  return bootTime * 1000 + (startTicks / 100) * 1000;
}

/** The id of the template named `base` (ids are random; names live in the manifests). */
function baseTemplateId(): string {
  const dir = join(env.stateDir, "templates");
  for (const file of readdirSync(dir).filter((name) => name.endsWith(".json"))) {
    const manifest = JSON.parse(readFileSync(join(dir, file), "utf8")) as { templateId: string; aliases?: string[] };
    if (manifest.aliases?.includes("base")) return manifest.templateId;
  }
  throw new Error("no template named base in the test server's state");
}

/** Pooled sandboxes of `base` (other templates in use on the shared server, such as desktop, have pools of their own). */
async function pooledCount(): Promise<number> {
  const baseId = baseTemplateId();
  const dir = join(env.stateDir, "sandboxes");
  let count = 0;
  for (const id of readdirSync(dir)) {
    try {
      const record = JSON.parse(readFileSync(join(dir, id, "sandbox.json"), "utf8")) as { pooled: boolean; templateId: string };
      if (record.pooled && record.templateId === baseId) count++;
    } catch {
      // Being created or removed.
    }
  }
  return count;
}

describe("warm pool", () => {
  it("hands out a sandbox that was already running, then refills", async () => {
    for (let i = 0; i < 200 && (await pooledCount()) < 2; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await pooledCount()).toBe(2);
    // Leave a clear gap so that a sandbox started by the create itself could not look pre-started.
    await new Promise((r) => setTimeout(r, 1500));
    const requestedAt = Date.now();
    const sandbox = await Sandbox.create("base", { ...opts, envs: { FROM_CREATE: "yes" } });
    try {
      const record = JSON.parse(readFileSync(join(env.stateDir, "sandboxes", sandbox.sandboxId, "sandbox.json"), "utf8")) as {
        pid: number;
        pooled: boolean;
      };
      expect(record.pooled).toBe(false);
      expect(processStartedAtMs(record.pid)).toBeLessThan(requestedAt - 1000);
      // The claim applied this create's settings.
      expect((await sandbox.commands.run("echo $FROM_CREATE")).stdout.trim()).toBe("yes");
      for (let i = 0; i < 200 && (await pooledCount()) < 2; i++) await new Promise((r) => setTimeout(r, 50));
      expect(await pooledCount()).toBe(2);
    } finally {
      await sandbox.kill();
    }
  });
});
