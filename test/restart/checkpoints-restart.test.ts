// Checkpoint trees survive a server SIGKILL: a tree with a branch taken before the kill lists the same afterwards
// (ids, parents, labels, current checkpoint), the sandbox still rolls back in place to any of its checkpoints, a
// checkpoint branches into new sandboxes with its files, and a checkpoint whose sandbox was killed before the
// restart is still there to branch from. Burrow SDK (on the official e2b SDK) against the real CLI in a process of
// its own, SIGKILLed and started again on the same state directory.
import { rmSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { Sandbox as E2bSandbox } from "e2b";
import { Checkpoint, Sandbox } from "@burrow/sdk";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { newTestInstance } from "../helpers/test-instance.js";

const FILE = "/home/user/step.txt";

/** What must read the same before and after the restart: the tree's shape, not its sizes (they are measured anew). */
function shape(tree: Awaited<ReturnType<Sandbox["checkpoints"]>>) {
  return {
    currentId: tree.currentId,
    checkpoints: tree.checkpoints.map((c) => ({ checkpointId: c.checkpointId, parentId: c.parentId, label: c.label, sandboxId: c.sandboxId })),
  };
}

describe("checkpoints across a server SIGKILL", () => {
  const instance = newTestInstance("ckrestart");
  let server: ServerProcess | undefined;

  afterAll(async () => {
    if (server) await stopServerProcess(server, "SIGTERM");
    burrowDown(instance);
    rmSync(instance.stateDir, { recursive: true, force: true });
  });

  it("the tree lists the same, rollback and branch work, a gone sandbox's checkpoints stay", async () => {
    const port = await freePort();
    server = await startServerProcess(instance, port, ["--pool-size", "0"]);
    const opts = { apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url, debug: false as const };

    const sandbox = await Sandbox.create("base", { ...opts, timeoutMs: 600_000 });
    const ids: string[] = [];
    for (const step of ["one", "two", "three"]) {
      await sandbox.files.write(FILE, step);
      ids.push((await sandbox.checkpoint(`step ${step}`)).checkpointId);
    }
    // A branch of the tree: back to "one", then a sibling of "two".
    await sandbox.rollback(ids[0]!);
    await sandbox.files.write(FILE, "sibling");
    ids.push((await sandbox.checkpoint("sibling")).checkpointId);
    const before = shape(await sandbox.checkpoints());
    expect(before.checkpoints.map((c) => c.parentId)).toEqual([null, ids[0], ids[1], ids[0]]);
    expect(before.currentId).toBe(ids[3]);
    // A sandbox killed before the restart: its checkpoint outlives it.
    const other = await Sandbox.create("base", { ...opts, timeoutMs: 600_000 });
    await other.files.write(FILE, "of a sandbox killed before the restart");
    const orphan = (await other.checkpoint("orphan")).checkpointId;
    await other.kill();

    await stopServerProcess(server, "SIGKILL");
    server = await startServerProcess(instance, port, ["--pool-size", "0"]);
    const again = { ...opts, apiKey: server.apiKey };

    const reconnected = await Sandbox.connect(sandbox.sandboxId, { ...again, timeoutMs: 600_000 });
    expect(shape(await reconnected.checkpoints())).toEqual(before);
    expect(await reconnected.files.read(FILE)).toBe("sibling");

    // Rollback in place to the deepest checkpoint of the other branch.
    await reconnected.rollback(ids[2]!);
    expect(await reconnected.files.read(FILE)).toBe("three");
    expect((await reconnected.checkpoints()).currentId).toBe(ids[2]);

    // Branch from a middle checkpoint and from the gone sandbox's one.
    const children = [...(await Checkpoint.branch(ids[1]!, 2, again)), ...(await Checkpoint.branch(orphan, 1, again))];
    try {
      expect(children.map((c) => c.error)).toEqual([undefined, undefined, undefined]);
      const [a, b, c] = children.map((child) => child.sandbox!);
      expect(await a!.files.read(FILE)).toBe("two");
      expect(await b!.files.read(FILE)).toBe("two");
      expect(await c!.files.read(FILE)).toBe("of a sandbox killed before the restart");
      expect((await a!.checkpoint("in a child")).parentId).toBe(ids[1]);
    } finally {
      await Promise.allSettled(children.map((child) => child.sandbox?.kill()));
    }

    // Deleting still guards dependants, and cascades.
    await expect(reconnected.deleteCheckpoint(ids[0]!)).rejects.toMatchObject({ status: 409 });
    const deleted = await reconnected.deleteCheckpoint(ids[0]!, { cascade: true });
    expect(deleted).toEqual(expect.arrayContaining(ids));
    expect(await Checkpoint.delete(orphan, again)).toEqual([orphan]);
    expect((await reconnected.checkpoints()).checkpoints).toEqual([]);
    expect(await E2bSandbox.kill(sandbox.sandboxId, again)).toBe(true);
  }, 600_000);
});
