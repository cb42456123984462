// Checkpoint trees in the orchestrator, with real sandboxes on a real btrfs state directory: a chain of depth 50
// with branches, rollback in place to an early checkpoint, branches from a middle one, deletion with and without
// dependants, a restart on the same state directory, quota charging, and nothing left on disk after it all.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { envdRuntimeFiles } from "@burrow/envd";
import { BurrowError, Code } from "@burrow/protocol";
import { envdAt, LocalOrchestrator, runProcess, type SandboxRecord } from "@burrow/orchestrator";
import { burrowDown } from "../helpers/server-process.js";
import { newTestInstance } from "../helpers/test-instance.js";

const instance = newTestInstance("ckpt");
const DEPTH = 50;

function open(): Promise<LocalOrchestrator> {
  return LocalOrchestrator.create({
    config: { stateDir: instance.stateDir, instance: instance.instance, subnet: instance.subnet, pool: { template: "base", size: 0 } },
    envd: envdRuntimeFiles(),
  });
}

/** Run a shell line in the sandbox as root through envd with `token`; resolves its stdout (throws on a non-zero exit). */
async function sh(sandbox: SandboxRecord, token: string, line: string): Promise<string> {
  let out = "";
  let err = "";
  const result = await runProcess(envdAt(sandbox.address, token), { cmd: "/bin/sh", args: ["-c", line], user: "root" }, (stream, data) => {
    if (stream === "stderr") err += Buffer.from(data).toString();
    else out += Buffer.from(data).toString();
  });
  if (result.exitCode !== 0) throw new Error(`'${line}' exited ${result.exitCode}: ${err}`);
  return out;
}

async function rejection(promise: Promise<unknown>): Promise<BurrowError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BurrowError);
  return error as BurrowError;
}

/** Names in a directory of the state (through its symlink onto the disk image). */
function entries(dir: string): string[] {
  return readdirSync(join(instance.stateDir, dir)).sort();
}

/** Subvolumes on the state's disk image, by path relative to its root. */
function subvolumes(): string[] {
  const out = execFileSync("btrfs", ["subvolume", "list", "-o", join(instance.stateDir, "data")], { encoding: "utf8" });
  return out
    .split("\n")
    .map((line) => line.split(" path ")[1]?.trim())
    .filter((p): p is string => p !== undefined && p !== "");
}

describe("checkpoint trees (orchestrator)", () => {
  let orchestrator: LocalOrchestrator;
  const tokens = new Map<string, string>();

  async function create(template = "base"): Promise<SandboxRecord> {
    const token = randomBytes(12).toString("hex");
    const record = await orchestrator.createSandbox({ template, allowInternetAccess: false, envVars: { MARK: "m" }, envdAccessToken: token });
    tokens.set(record.sandboxId, token);
    return record;
  }

  const run = (sandbox: SandboxRecord, line: string) => sh(sandbox, tokens.get(sandbox.sandboxId)!, line);

  beforeAll(async () => {
    orchestrator = await open();
  });

  afterAll(async () => {
    await orchestrator?.shutdown();
    burrowDown(instance);
    await rm(instance.stateDir, { recursive: true, force: true });
  });

  it("keeps a tree of depth 50 with branches, rolls back, branches, deletes, survives a restart and leaves nothing behind", async () => {
    const a = await create();
    const chain: string[] = [];
    for (let i = 0; i < DEPTH; i++) {
      await run(a, `echo ${i} > /home/user/step && echo v${i} > /home/user/changed && touch /home/user/added-${i}`);
      const checkpoint = await orchestrator.checkpointSandbox(a.sandboxId, { label: `step ${i}` });
      expect(checkpoint?.parentId).toBe(i === 0 ? null : chain[i - 1]);
      expect(checkpoint?.contents).toBe("files");
      chain.push(checkpoint!.checkpointId);
    }
    let tree = await orchestrator.listCheckpoints(a.sandboxId);
    expect(tree?.currentId).toBe(chain[DEPTH - 1]);
    expect(tree?.checkpoints.map((c) => c.checkpointId)).toEqual(chain);
    expect(tree?.checkpoints[7]?.label).toBe("step 7");

    // Branch from the middle: each child has that checkpoint's files, and its own checkpoints continue the tree.
    const middle = chain[24]!;
    const childTokens: string[] = [];
    const children = await orchestrator.branchCheckpoint(middle, {
      count: 2,
      forkOptions: (index) => {
        childTokens[index] = randomBytes(12).toString("hex");
        return { envVars: {}, envdAccessToken: childTokens[index] };
      },
    });
    expect(children?.map((c) => c.error)).toEqual([undefined, undefined]);
    for (const [index, child] of children!.entries()) {
      const sandbox = child.sandbox!;
      expect(await sh(sandbox, childTokens[index]!, "cat /home/user/step /home/user/changed")).toBe("24\nv24\n");
      await orchestrator.killSandbox(sandbox.sandboxId);
    }
    // One more child through createSandbox (the control plane's path: the checkpoint's id as the template).
    const b = await create(middle);
    expect(await run(b, "cat /home/user/step /home/user/changed")).toBe("24\nv24\n");
    expect(await run(b, "ls /home/user | grep -c '^added-'")).toBe("25\n");
    await run(b, "echo b > /home/user/branch-b");
    const bCheckpoint = await orchestrator.checkpointSandbox(b.sandboxId, { label: "b" });
    expect(bCheckpoint?.parentId).toBe(middle);
    tree = await orchestrator.listCheckpoints(b.sandboxId);
    expect(tree?.currentId).toBe(bCheckpoint?.checkpointId);
    // Depth first, siblings oldest first: the chain's continuation comes before the branch taken later.
    expect(tree?.checkpoints.map((c) => c.checkpointId)).toEqual([...chain, bCheckpoint!.checkpointId]);

    // Rollback to an early checkpoint: same sandbox, same token, that checkpoint's files exactly.
    await run(a, "echo later > /home/user/after-all && rm /home/user/added-3");
    const rolled = await orchestrator.rollbackSandbox(a.sandboxId, chain[5]!);
    expect(rolled?.sandboxId).toBe(a.sandboxId);
    expect(rolled?.address).toBe(a.address);
    expect(await run(a, "cat /home/user/step /home/user/changed")).toBe("5\nv5\n");
    expect(await run(a, "ls /home/user | grep '^added-' | sort")).toBe(["0", "1", "2", "3", "4", "5"].map((n) => `added-${n}\n`).join(""));
    expect(await run(a, "test ! -e /home/user/after-all && echo gone")).toBe("gone\n");
    expect(await run(a, "echo $MARK")).toBe("m\n");
    // A sibling's checkpoint is in the tree: rolling back to it works too; one from another tree does not.
    const other = await create();
    const otherCheckpoint = await orchestrator.checkpointSandbox(other.sandboxId);
    const outside = await rejection(orchestrator.rollbackSandbox(a.sandboxId, otherCheckpoint!.checkpointId));
    expect(outside.code).toBe(Code.FailedPrecondition);
    expect(outside.reason).toBe("checkpoint_not_in_lineage");
    expect((await rejection(orchestrator.rollbackSandbox(a.sandboxId, "nosuchcheckpoint"))).code).toBe(Code.NotFound);
    const fromEarly = await orchestrator.checkpointSandbox(a.sandboxId, { label: "after rollback" });
    expect(fromEarly?.parentId).toBe(chain[5]);

    // Deleting: refused while checkpoints descend from it, allowed for a leaf.
    const refused = await rejection(orchestrator.deleteCheckpoint(middle));
    expect(refused.code).toBe(Code.FailedPrecondition);
    expect(refused.reason).toBe("checkpoint_has_dependants");
    expect(await orchestrator.deleteCheckpoint(chain[DEPTH - 1]!)).toEqual([chain[DEPTH - 1]]);
    expect(await orchestrator.getCheckpoint(chain[DEPTH - 1]!)).toBeUndefined();
    expect(await orchestrator.deleteCheckpoint("nosuchcheckpoint")).toBeUndefined();

    // A restart on the same state directory finds every checkpoint and which one each sandbox descends from.
    await orchestrator.close();
    orchestrator = await open();
    tree = await orchestrator.listCheckpoints(a.sandboxId);
    expect(tree?.currentId).toBe(fromEarly?.checkpointId);
    expect(tree?.checkpoints).toHaveLength(DEPTH + 1);
    expect((await orchestrator.listCheckpoints(b.sandboxId))?.currentId).toBe(bCheckpoint?.checkpointId);

    // Checkpoints outlive their sandbox: still listed by id and branchable after it is killed.
    await orchestrator.killSandbox(a.sandboxId);
    expect((await orchestrator.getCheckpoint(chain[3]!))?.sandboxId).toBe(a.sandboxId);
    const late = await create(chain[3]);
    expect(await run(late, "cat /home/user/step")).toBe("3\n");

    // Cascade from the root takes the whole tree; then nothing of it is left on disk.
    const deleted = await orchestrator.deleteCheckpoint(chain[0]!, { cascade: true });
    expect(deleted).toHaveLength(DEPTH + 1);
    expect(deleted?.at(-1)).toBe(chain[0]);
    expect(await orchestrator.deleteCheckpoint(otherCheckpoint!.checkpointId)).toEqual([otherCheckpoint!.checkpointId]);
    for (const sandbox of [b, late, other]) await orchestrator.killSandbox(sandbox.sandboxId);
    expect(entries("checkpoints").filter((name) => name !== "heads.json" && name !== ".tmp")).toEqual([]);
    expect(entries("checkpoints/.tmp")).toEqual([]);
    expect(entries("sandboxes")).toEqual([]);
    expect(subvolumes().filter((path) => path.startsWith("checkpoints/") || path.startsWith("sandboxes/"))).toEqual([]);
  });

  it("charges checkpoint bytes to the owner's snapshot quota and refuses past it", async () => {
    const sandbox = await create();
    const quota = { owner: "key:ckpt-test", maxBytes: 64 * 2 ** 20, maxPerSandbox: 10 };
    await run(sandbox, "head -c 8388608 /dev/urandom > /home/user/blob");
    const first = await orchestrator.checkpointSandbox(sandbox.sandboxId, { quota });
    // The checkpoint holds the old blob alone once the sandbox has rewritten it.
    await run(sandbox, "head -c 8388608 /dev/urandom > /home/user/blob");
    const info = await orchestrator.getCheckpoint(first!.checkpointId);
    expect(info?.sizeBytes).toBeGreaterThanOrEqual(8 * 2 ** 20);
    expect(info?.owner).toBe(quota.owner);
    const usage = orchestrator.snapshotUsage().find((u) => u.owner === quota.owner);
    expect(usage?.bytes).toBeGreaterThanOrEqual(8 * 2 ** 20);
    const refused = await rejection(orchestrator.checkpointSandbox(sandbox.sandboxId, { quota: { ...quota, maxBytes: 2 ** 20 } }));
    expect(refused.code).toBe(Code.ResourceExhausted);
    expect(refused.reason).toBe("snapshot_storage");
    expect(await orchestrator.deleteCheckpoint(first!.checkpointId)).toEqual([first!.checkpointId]);
    expect(orchestrator.snapshotUsage().find((u) => u.owner === quota.owner)?.bytes ?? 0).toBe(0);
    await orchestrator.killSandbox(sandbox.sandboxId);
  });
});
