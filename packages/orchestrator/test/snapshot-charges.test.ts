// Snapshot charges: usage per owner from manifests, reservations of copies under way, the per-sandbox count, and
// the ledger that keeps a fork's hidden snapshot charged (across restarts) until its forks have ended.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BurrowError, Code } from "@burrow/protocol";
import { SnapshotCharges } from "../src/snapshots/snapshot-charges.js";
import type { TemplateManifest } from "../src/templates/template-store.js";

const MiB = 2 ** 20;
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function ledger(): string {
  const dir = mkdtempSync(join(tmpdir(), "burrow-charges-"));
  dirs.push(dir);
  return join(dir, "snapshot-charges.json");
}

function snapshot(id: string, fields: { snapshotOf?: string; forkOf?: string; owner?: string; sizeBytes?: number }): TemplateManifest {
  return {
    templateId: id,
    aliases: [],
    layers: [`layer-${id}`],
    defaults: { cpuCount: 1, memoryMB: 512, diskMB: 1024, pids: 256 },
    createdAt: new Date().toISOString(),
    ...fields,
  } as TemplateManifest;
}

const quota = { owner: "key:1", maxBytes: 100 * MiB, maxPerSandbox: 2 };

describe("snapshot charges", () => {
  it("sums charged manifests per owner; uncharged snapshots and templates count for nobody", () => {
    const charges = new SnapshotCharges(ledger());
    const manifests = [
      snapshot("a", { snapshotOf: "s1", owner: "key:1", sizeBytes: 30 * MiB }),
      snapshot("b", { snapshotOf: "s2", owner: "key:1", sizeBytes: 10 * MiB }),
      snapshot("c", { snapshotOf: "s3", owner: "key:2", sizeBytes: 5 * MiB }),
      snapshot("d", { snapshotOf: "s1" }),
      snapshot("base", {}),
    ];
    expect(charges.usage(manifests).sort((x, y) => x.owner.localeCompare(y.owner))).toEqual([
      { owner: "key:1", bytes: 40 * MiB, snapshots: 2 },
      { owner: "key:2", bytes: 5 * MiB, snapshots: 1 },
    ]);
  });

  it("refuses a snapshot that would take the owner over the quota, naming usage and limit; reservations count", () => {
    const charges = new SnapshotCharges(ledger());
    const manifests = [snapshot("a", { snapshotOf: "s1", owner: "key:1", sizeBytes: 60 * MiB })];
    const held = charges.reserve(manifests, quota, 30 * MiB);
    let refused: unknown;
    try {
      charges.reserve(manifests, quota, 20 * MiB);
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(BurrowError);
    expect(refused).toMatchObject({
      code: Code.ResourceExhausted,
      reason: "snapshot_storage",
      message: "snapshot storage quota of key:1: 90 MiB used + 20 MiB for this snapshot exceeds the 100 MiB limit; delete snapshots to free space",
    });
    // Another owner is not affected.
    charges.release(charges.reserve(manifests, { ...quota, owner: "key:2" }, 90 * MiB));
    // The copy turned out larger than the writable layer measured: refused after all.
    expect(() => charges.settle(manifests, quota, held, 41 * MiB)).toThrow(/60 MiB used \+ 41 MiB copied for this snapshot exceeds/);
    charges.settle(manifests, quota, held, 35 * MiB);
    expect(charges.usage(manifests)).toEqual([{ owner: "key:1", bytes: 95 * MiB, snapshots: 1 }]);
    charges.release(held);
    charges.release(charges.reserve(manifests, quota, 40 * MiB));
  });

  it("caps snapshots per sandbox, not counting a fork's hidden snapshot", () => {
    const charges = new SnapshotCharges(ledger());
    const manifests = [
      snapshot("a", { snapshotOf: "s1", owner: "key:1", sizeBytes: 1 }),
      snapshot("f", { snapshotOf: "s1", forkOf: "s1", owner: "key:1", sizeBytes: 1 }),
      snapshot("x", { snapshotOf: "s2", owner: "key:1", sizeBytes: 1 }),
    ];
    charges.checkCount(manifests, "s1", quota);
    const two = [...manifests, snapshot("b", { snapshotOf: "s1" })];
    expect(() => charges.checkCount(two, "s1", quota)).toThrow(
      "snapshots per sandbox: sandbox s1 has 2 snapshots, the limit is 2; delete one to take another",
    );
  });

  it("keeps a fork's hidden snapshot charged until its forks end, across a restart", async () => {
    const file = ledger();
    const charges = new SnapshotCharges(file);
    await charges.load();
    const forkBase = snapshot("fb", { snapshotOf: "s1", forkOf: "s1", owner: "key:1", sizeBytes: 20 * MiB });
    await charges.chargeForkBase("fb", "key:1", 20 * MiB);
    // While the manifest still exists it is counted once.
    expect(charges.usage([forkBase])).toEqual([{ owner: "key:1", bytes: 20 * MiB, snapshots: 1 }]);
    expect(charges.usage([])).toEqual([{ owner: "key:1", bytes: 20 * MiB, snapshots: 1 }]);

    const restarted = new SnapshotCharges(file);
    await restarted.load();
    expect(restarted.usage([])).toEqual([{ owner: "key:1", bytes: 20 * MiB, snapshots: 1 }]);
    await restarted.releaseForkBases((templateId) => templateId === "fb");
    expect(restarted.usage([])).toHaveLength(1);
    await restarted.releaseForkBases(() => false);
    expect(restarted.usage([])).toEqual([]);

    const afterRelease = new SnapshotCharges(file);
    await afterRelease.load();
    expect(afterRelease.usage([])).toEqual([]);
  });

  it("starts empty from a missing or damaged ledger", async () => {
    const missing = new SnapshotCharges(ledger());
    await missing.load();
    expect(missing.usage([])).toEqual([]);
    const file = ledger();
    writeFileSync(file, '[{"templateId":"fb","owner":"key:1"}, 7');
    const damaged = new SnapshotCharges(file);
    await damaged.load();
    expect(damaged.usage([])).toEqual([]);
    writeFileSync(file, '[{"templateId":"fb","owner":"key:1"},{"templateId":"ok","owner":"key:2","sizeBytes":5}]');
    await damaged.load();
    expect(damaged.usage([])).toEqual([{ owner: "key:2", bytes: 5, snapshots: 1 }]);
  });
});
