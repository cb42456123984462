// Snapshots and forks (E2B `createSnapshot`, `listSnapshots`, `deleteSnapshot`, `fork`) with the official SDK
// against the real server. Burrow snapshots copy the filesystem only (the sandbox's writable layer, with reflinks,
// while it is frozen): processes and memory are not part of them, so these tests check files, deletions,
// independence and cleanup, never processes.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect } from "vitest";
import { Sandbox, SandboxNotFoundError } from "e2b";
import { cgroupFrozen } from "../helpers/sandbox-internals.js";
import { burrowEnv, sandboxTest, sdkOpts, type Spawn } from "./env.js";

const NOTE = "/home/user/snap/note.txt";

async function listSnapshotIds(sandboxId?: string): Promise<string[]> {
  const paginator = Sandbox.listSnapshots({ ...sdkOpts(), ...(sandboxId ? { sandboxId } : {}) });
  const ids: string[] = [];
  while (paginator.hasNext) ids.push(...(await paginator.nextItems()).map((s) => s.snapshotId));
  return ids;
}

/** A sandbox with a file written, one created by root, and a file of the base image deleted (a whiteout). */
async function prepared(spawn: Spawn): Promise<Sandbox> {
  const sbx = await spawn();
  await sbx.files.write(NOTE, "before snapshot");
  await sbx.commands.run("echo root-owned > /opt/root.txt && rm /etc/issue", { user: "root" });
  return sbx;
}

async function expectPreparedFiles(sbx: Sandbox): Promise<void> {
  expect(await sbx.files.read(NOTE)).toBe("before snapshot");
  expect((await sbx.commands.run("stat -c %U /opt/root.txt && cat /opt/root.txt")).stdout.split("\n").slice(0, 2)).toEqual([
    "root",
    "root-owned",
  ]);
  expect(await sbx.files.exists("/etc/issue")).toBe(false);
  expect((await sbx.commands.run("stat -c %U " + NOTE)).stdout.trim()).toBe("user");
}

function layerExists(layerId: string): boolean {
  return existsSync(join(burrowEnv().stateDir, "layers", layerId));
}

function templateManifest(templateId: string): boolean {
  return existsSync(join(burrowEnv().stateDir, "templates", `${templateId}.json`));
}

describe("snapshots", () => {
  sandboxTest("createSnapshot → create from it has the files; later changes do not leak; list; delete", async ({ spawn }) => {
    const source = await prepared(spawn);
    const snapshot = await source.createSnapshot();
    expect(snapshot.snapshotId).toEqual(expect.any(String));
    expect(snapshot.names).toEqual([]);
    expect(templateManifest(snapshot.snapshotId)).toBe(true);
    // The source goes on running, thawed.
    expect(cgroupFrozen(burrowEnv().instance, source.sandboxId)).toBe(false);
    expect((await source.commands.run("echo alive")).stdout.trim()).toBe("alive");

    await source.files.write(NOTE, "changed after snapshot");
    await source.files.write("/home/user/snap/later.txt", "later");

    const fromSnapshot = await Sandbox.create(snapshot.snapshotId, { ...sdkOpts(), timeoutMs: 120_000 });
    try {
      await expectPreparedFiles(fromSnapshot);
      expect(await fromSnapshot.files.exists("/home/user/snap/later.txt")).toBe(false);
      // Writes in the new sandbox stay there.
      await fromSnapshot.files.write(NOTE, "changed in the copy");
      expect(await source.files.read(NOTE)).toBe("changed after snapshot");
    } finally {
      await fromSnapshot.kill();
    }

    expect(await listSnapshotIds()).toContain(snapshot.snapshotId);
    expect(await listSnapshotIds(source.sandboxId)).toEqual([snapshot.snapshotId]);
    expect((await source.listSnapshots().nextItems()).map((s) => s.snapshotId)).toEqual([snapshot.snapshotId]);

    expect(await Sandbox.deleteSnapshot(snapshot.snapshotId, sdkOpts())).toBe(true);
    expect(await Sandbox.deleteSnapshot(snapshot.snapshotId, sdkOpts())).toBe(false);
    expect(await listSnapshotIds(source.sandboxId)).toEqual([]);
    expect(templateManifest(snapshot.snapshotId)).toBe(false);
    await expect(Sandbox.create(snapshot.snapshotId, { ...sdkOpts(), timeoutMs: 60_000 })).rejects.toThrow();
  }, 180_000);

  sandboxTest("named snapshot: create by name; the name moves to a newer snapshot; paused source stays paused", async ({ spawn }) => {
    const source = await spawn();
    const name = `snap-${Date.now()}`;
    await source.files.write(NOTE, "one");
    const first = await source.createSnapshot({ name });
    expect(first.names).toEqual([name]);

    await source.files.write(NOTE, "two");
    expect(await source.pause()).toBe(true);
    const second = await Sandbox.createSnapshot(source.sandboxId, { ...sdkOpts(), name });
    expect((await source.getInfo()).state).toBe("paused");
    expect(cgroupFrozen(burrowEnv().instance, source.sandboxId)).toBe(true);
    expect(second.snapshotId).not.toBe(first.snapshotId);

    const byName = await Sandbox.create(name, { ...sdkOpts(), timeoutMs: 120_000 });
    const byFirstId = await Sandbox.create(first.snapshotId, { ...sdkOpts(), timeoutMs: 120_000 });
    try {
      expect(await byName.files.read(NOTE)).toBe("two");
      expect(await byFirstId.files.read(NOTE)).toBe("one");
    } finally {
      await Promise.all([byName.kill(), byFirstId.kill()]);
    }
    const listed = await Sandbox.listSnapshots({ ...sdkOpts(), sandboxId: source.sandboxId }).nextItems();
    expect(listed).toEqual(
      expect.arrayContaining([
        { snapshotId: first.snapshotId, names: [] },
        { snapshotId: second.snapshotId, names: [name] },
      ]),
    );
    expect(await Sandbox.deleteSnapshot(name, sdkOpts())).toBe(true);
    expect(await Sandbox.deleteSnapshot(first.snapshotId, sdkOpts())).toBe(true);
    expect(await listSnapshotIds(source.sandboxId)).toEqual([]);
  }, 180_000);

  sandboxTest("createSnapshot of an unknown sandbox → SandboxNotFoundError", async () => {
    await expect(Sandbox.createSnapshot("nosuchsandbox", sdkOpts())).rejects.toBeInstanceOf(SandboxNotFoundError);
  });
});

describe("fork", () => {
  sandboxTest("fork({count: 2}) gives two running sandboxes with the files, independent of each other", async ({ spawn }) => {
    const marker = `fork${Date.now()}`;
    const source = await spawn({ metadata: { marker }, envs: { FORK_ENV: "inherited" } });
    await source.files.write(NOTE, "before snapshot");
    await source.commands.run("echo root-owned > /opt/root.txt && rm /etc/issue", { user: "root" });

    const results = await source.fork({ count: 2, timeoutMs: 120_000 });
    expect(results).toHaveLength(2);
    const forks = results.filter((r): r is Sandbox => r instanceof Sandbox);
    try {
      expect(forks).toHaveLength(2);
      const ids = new Set([source.sandboxId, ...forks.map((f) => f.sandboxId)]);
      expect(ids.size).toBe(3);
      for (const fork of forks) {
        expect(await fork.isRunning()).toBe(true);
        await expectPreparedFiles(fork);
        expect((await fork.commands.run("echo $FORK_ENV")).stdout.trim()).toBe("inherited");
        const info = await fork.getInfo();
        expect(info.metadata).toEqual({ marker });
        expect(info.state).toBe("running");
      }
      const [a, b] = forks as [Sandbox, Sandbox];
      await a.files.write(NOTE, "written in fork a");
      expect(await b.files.read(NOTE)).toBe("before snapshot");
      expect(await source.files.read(NOTE)).toBe("before snapshot");
      await source.files.write(NOTE, "written in the source");
      expect(await a.files.read(NOTE)).toBe("written in fork a");
      expect(await b.files.read(NOTE)).toBe("before snapshot");
      // A fork's snapshot is internal: it is not listed.
      expect(await listSnapshotIds(source.sandboxId)).toEqual([]);

      // Forks are registered like created sandboxes.
      const listed = await Sandbox.list({ ...sdkOpts(), query: { metadata: { marker } } }).nextItems();
      expect(listed.map((s) => s.sandboxId).sort()).toEqual([...ids].sort());
    } finally {
      await Promise.all(forks.map((f) => f.kill()));
    }
    expect(await source.isRunning()).toBe(true);
  }, 180_000);

  sandboxTest("fork without count gives one; fork of an unknown sandbox → SandboxNotFoundError", async ({ sandbox }) => {
    const results = await Sandbox.fork(sandbox.sandboxId, { ...sdkOpts(), timeoutMs: 60_000 });
    expect(results).toHaveLength(1);
    const [fork] = results;
    expect(fork).toBeInstanceOf(Sandbox);
    await (fork as Sandbox).kill();
    await expect(Sandbox.fork("nosuchsandbox", sdkOpts())).rejects.toBeInstanceOf(SandboxNotFoundError);
  }, 120_000);

  sandboxTest("the layer of a deleted snapshot stays while a sandbox uses it, then is garbage-collected", async ({ spawn }) => {
    const source = await spawn();
    await source.files.write(NOTE, "gc");
    const snapshot = await source.createSnapshot();
    const manifestPath = join(burrowEnv().stateDir, "templates", `${snapshot.snapshotId}.json`);
    const layerId = (JSON.parse(readFileSync(manifestPath, "utf8")) as { layers: string[] }).layers[0]!;
    expect(layerExists(layerId)).toBe(true);
    const fromSnapshot = await Sandbox.create(snapshot.snapshotId, { ...sdkOpts(), timeoutMs: 60_000 });
    // Deleted while a sandbox uses it: the layer stays until that sandbox ends.
    expect(await Sandbox.deleteSnapshot(snapshot.snapshotId, sdkOpts())).toBe(true);
    expect(await fromSnapshot.files.read(NOTE)).toBe("gc");
    expect(layerExists(layerId)).toBe(true);
    await fromSnapshot.kill();
    for (;;) {
      if (!layerExists(layerId)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(readdirSync(join(burrowEnv().stateDir, "layers")).includes(layerId)).toBe(false);
  }, 120_000);
});
