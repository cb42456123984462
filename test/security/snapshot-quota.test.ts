// Snapshots are charged to their owner (the API key that created the sandbox): with the official SDK against a real
// server started with a 100 MiB snapshot quota and 3 snapshots per sandbox. Snapshots of a sandbox holding 40 MB
// are taken until the quota refuses one (507, naming usage and limit, nothing left behind); deleting one frees its
// bytes; a fork's hidden snapshot is charged while its fork runs; a fourth snapshot of one sandbox is refused (429).
import { execFileSync } from "node:child_process";
import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { RateLimitError, Sandbox, SandboxError } from "e2b";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { newTestInstance } from "../helpers/test-instance.js";

const QUOTA_MB = 100;
const instance = newTestInstance("snapq");
let server: ServerProcess | undefined;

afterAll(async () => {
  if (server) await stopServerProcess(server, "SIGTERM");
  burrowDown(instance);
  const tables = execFileSync("nft", ["list", "tables"], { encoding: "utf8" });
  rmSync(instance.stateDir, { recursive: true, force: true });
  expect(tables).not.toContain(`burrow_${instance.instance}`);
});

/** Start the server with BURROW_* settings in its environment (the helper passes the test's environment on). */
async function startWith(env: Record<string, string>): Promise<ServerProcess> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    return await startServerProcess(instance, await freePort(), ["--pool-size", "0"]);
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/** Bytes charged to each owner, from the server's Prometheus metrics. */
async function chargedBytes(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return new Map([...text.matchAll(/^burrow_snapshot_storage_bytes\{owner="([^"]+)"\} (\d+)$/gm)].map((m) => [m[1]!, Number(m[2])]));
}

/** Snapshot copies in progress or abandoned: the orchestrator assembles them here, next to the layers. */
function snapshotCopies(): string[] {
  try {
    return readdirSync(join(instance.stateDir, "data", ".snapshot-tmp"));
  } catch {
    return [];
  }
}

async function snapshotIds(opts: object, sandboxId: string): Promise<string[]> {
  return (await Sandbox.listSnapshots({ ...opts, sandboxId }).nextItems()).map((s) => s.snapshotId);
}

describe("snapshot quota", () => {
  it("charges snapshot bytes to the owner, refuses beyond the quota and frees bytes on delete", { timeout: 300_000 }, async () => {
    server = await startWith({ BURROW_SNAPSHOT_QUOTA_MB: String(QUOTA_MB), BURROW_MAX_SNAPSHOTS_PER_SANDBOX: "3" });
    const opts = { apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url };
    const sandbox = await Sandbox.create("base", { ...opts, timeoutMs: 300_000 });
    try {
      await sandbox.commands.run("head -c 40M /dev/urandom > /home/user/blob && sync");
      const first = await sandbox.createSnapshot();
      const second = await sandbox.createSnapshot();
      const charged = await chargedBytes(server.url);
      expect(charged.size).toBe(1);
      const [owner, bytes] = [...charged][0]!;
      expect(owner).toMatch(/^key:\d+$/);
      // Two copies of 40 MB and a little metadata each.
      expect(bytes).toBeGreaterThanOrEqual(80 * 2 ** 20);
      expect(bytes).toBeLessThan(QUOTA_MB * 2 ** 20);

      const refused = await sandbox.createSnapshot().catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(SandboxError);
      expect((refused as Error).message).toMatch(
        new RegExp(`^507: snapshot storage quota of ${owner}: [\\d.]+ MiB used \\+ [\\d.]+ MiB for this snapshot exceeds the ${QUOTA_MB} MiB limit; delete snapshots to free space$`),
      );
      // Refused before copying: no snapshot, no copy, no change in the charge.
      expect((await snapshotIds(opts, sandbox.sandboxId)).sort()).toEqual([first.snapshotId, second.snapshotId].sort());
      expect(snapshotCopies()).toEqual([]);
      expect((await chargedBytes(server.url)).get(owner)).toBe(bytes);

      // A fork's hidden snapshot is charged like any other: refused now.
      await expect(sandbox.fork()).rejects.toThrow(/snapshot storage quota of key:\d+: .* exceeds the 100 MiB limit/);

      // Deleting a snapshot frees its bytes at once.
      expect(await Sandbox.deleteSnapshot(first.snapshotId, opts)).toBe(true);
      const afterDelete = (await chargedBytes(server.url)).get(owner)!;
      expect(afterDelete).toBeLessThan(bytes - 40 * 2 ** 20 + 2 ** 20);
      const third = await sandbox.createSnapshot();
      expect(await snapshotIds(opts, sandbox.sandboxId)).toContain(third.snapshotId);

      // While a fork runs, the snapshot it started from stays charged (its layer stays on disk), and is released
      // when the fork ends.
      expect(await Sandbox.deleteSnapshot(second.snapshotId, opts)).toBe(true);
      expect(await Sandbox.deleteSnapshot(third.snapshotId, opts)).toBe(true);
      expect((await chargedBytes(server.url)).get(owner) ?? 0).toBe(0);
      const [fork] = await sandbox.fork({ timeoutMs: 120_000 });
      expect(fork).toBeInstanceOf(Sandbox);
      expect(await (fork as Sandbox).files.exists("/home/user/blob")).toBe(true);
      expect((await chargedBytes(server.url)).get(owner)).toBeGreaterThanOrEqual(40 * 2 ** 20);
      expect(await snapshotIds(opts, sandbox.sandboxId)).toEqual([]);
      await (fork as Sandbox).kill();
      for (let i = 0; (await chargedBytes(server.url)).get(owner); i++) {
        expect(i).toBeLessThan(100);
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      await sandbox.kill();
    }
  });

  it("caps the snapshots kept from one sandbox", { timeout: 180_000 }, async () => {
    const opts = { apiKey: server!.apiKey, apiUrl: server!.url, sandboxUrl: server!.url };
    const sandbox = await Sandbox.create("base", opts);
    try {
      const taken = [await sandbox.createSnapshot(), await sandbox.createSnapshot(), await sandbox.createSnapshot()];
      const refused = await sandbox.createSnapshot().catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(RateLimitError);
      expect((refused as Error).message).toContain(
        `snapshots per sandbox: sandbox ${sandbox.sandboxId} has 3 snapshots, the limit is 3; delete one to take another`,
      );
      expect(await Sandbox.deleteSnapshot(taken[0]!.snapshotId, opts)).toBe(true);
      const again = await sandbox.createSnapshot();
      expect((await snapshotIds(opts, sandbox.sandboxId)).sort()).toEqual([taken[1]!.snapshotId, taken[2]!.snapshotId, again.snapshotId].sort());
      for (const id of await snapshotIds(opts, sandbox.sandboxId)) expect(await Sandbox.deleteSnapshot(id, opts)).toBe(true);
    } finally {
      await sandbox.kill();
    }
  });
});
