// Checkpoint trees through the Burrow SDK against a real in-process Burrow server: checkpoint and rollback latency
// at depth 1 and at depth 50 (each checkpoint is a snapshot of its own, so depth should not matter: target within
// 20%), beside a bare btrfs subvolume snapshot on the same filesystem; and the disk 100 checkpoints of a sandbox
// cost when it changes 1 MB between them (target ≤ 1.5× the bytes changed).
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, statfsSync } from "node:fs";
import { join } from "node:path";
import { Sandbox } from "@burrow/sdk";
import { startBurrow, stopBurrow } from "./lib/burrow.mjs";
import { median, report, timeMs } from "./lib/stats.mjs";
import { freeSubnet } from "./lib/host.mjs";

const DEPTH = 50;
const CHECKPOINT_RUNS = Number(process.env.BENCH_CHECKPOINT_RUNS ?? 15);
const ROLLBACKS = Number(process.env.BENCH_ROLLBACKS ?? 8);
const DISK_CHECKPOINTS = 100;
const CHANGE_BYTES = 2 ** 20;

/** Bytes in use on the state's btrfs image, after a sync (data and metadata as the filesystem counts them). */
function usedBytes(dataDir) {
  execFileSync("btrfs", ["filesystem", "sync", dataDir]);
  const st = statfsSync(dataDir);
  return (st.blocks - st.bfree) * st.bsize;
}

export async function runCheckpointBenchmarks() {
  const stateDir = mkdtempSync("/var/tmp/burrow-bench-ckpt-");
  const instance = `c${randomBytes(2).toString("hex")}`;
  const burrow = await startBurrow({ stateDir, instance, subnet: freeSubnet(), pool: { template: "base", size: 0 } });
  const { opts } = burrow;
  const dataDir = join(stateDir, "data");
  try {
    process.stdout.write("\n== checkpoint trees (Burrow SDK → Burrow) ==\n");

    // Baseline: a bare read-only subvolume snapshot of a small subvolume on the same filesystem.
    const scratch = join(dataDir, "bench-scratch");
    execFileSync("btrfs", ["subvolume", "create", scratch]);
    execFileSync("sh", ["-c", `head -c ${CHANGE_BYTES} /dev/urandom > ${scratch}/f`]);
    const bare = [];
    for (let i = 0; i < 20; i++) {
      const to = join(dataDir, `bench-snap-${i}`);
      bare.push(await timeMs(async () => execFileSync("btrfs", ["subvolume", "snapshot", "-r", scratch, to])));
    }
    for (let i = 0; i < 20; i++) execFileSync("btrfs", ["subvolume", "delete", join(dataDir, `bench-snap-${i}`)]);
    execFileSync("btrfs", ["subvolume", "delete", scratch]);

    // Checkpoint latency by depth, interleaved so that the shared machine's load weighs on both alike: a
    // checkpoint of a sandbox with none (depth 1) and of one with a chain of 49 (depth 50), each deleted again.
    const shallow = await Sandbox.create("base", opts);
    const deep = await Sandbox.create("base", opts);
    const ids = [];
    for (let depth = 1; depth < DEPTH; depth++) {
      await deep.files.write("/home/user/step.txt", `step ${depth}`);
      ids.push((await deep.checkpoint()).checkpointId);
    }
    const atDepth1 = [];
    const atDepth50 = [];
    for (let i = 0; i < CHECKPOINT_RUNS; i++) {
      await shallow.files.write("/home/user/step.txt", `run ${i}`);
      await deep.files.write("/home/user/step.txt", `run ${i}`);
      let checkpoint;
      atDepth1.push(await timeMs(async () => (checkpoint = await shallow.checkpoint())));
      await shallow.deleteCheckpoint(checkpoint.checkpointId);
      atDepth50.push(await timeMs(async () => (checkpoint = await deep.checkpoint())));
      if (i < CHECKPOINT_RUNS - 1) await deep.deleteCheckpoint(checkpoint.checkpointId);
      else ids.push(checkpoint.checkpointId);
    }
    report("checkpoint at depth 1, p50", median(atDepth1), "ms", median(bare), "btrfs subvolume snapshot -r");
    report("checkpoint at depth 50, p50", median(atDepth50), "ms", median(atDepth1), "checkpoint at depth 1", "within 20%");
    await shallow.kill();

    // Rollback latency to the first and to the fiftieth checkpoint of the chain, alternating, beside the cold boot
    // it includes (a filesystem pause and the connect that resumes it).
    const coldBoot = [];
    for (let i = 0; i < ROLLBACKS; i++) {
      coldBoot.push(
        await timeMs(async () => {
          await deep.pause({ keepMemory: false });
          await Sandbox.connect(deep.sandboxId, opts);
        }),
      );
    }
    const to1 = [];
    const to50 = [];
    for (let i = 0; i < ROLLBACKS; i++) {
      to1.push(await timeMs(() => deep.rollback(ids[0])));
      to50.push(await timeMs(() => deep.rollback(ids[DEPTH - 1])));
    }
    report("rollback to depth 1 (in place), p50", median(to1), "ms", median(coldBoot), "filesystem pause + cold resume");
    report("rollback to depth 50, p50", median(to50), "ms", median(to1), "rollback to depth 1", "within 20%");
    await deep.deleteCheckpoint(ids[0], { cascade: true });
    await deep.kill();

    // Disk: 100 checkpoints of a sandbox rewriting 1 MB between them.
    const writer = await Sandbox.create("base", opts);
    await writer.commands.run(`head -c ${CHANGE_BYTES} /dev/urandom > /home/user/blob`);
    const before = usedBytes(dataDir);
    let first;
    for (let i = 0; i < DISK_CHECKPOINTS; i++) {
      await writer.commands.run(`head -c ${CHANGE_BYTES} /dev/urandom > /home/user/blob`);
      const checkpoint = await writer.checkpoint();
      first ??= checkpoint.checkpointId;
    }
    const grown = usedBytes(dataDir) - before;
    const changed = DISK_CHECKPOINTS * CHANGE_BYTES;
    const tree = await writer.checkpoints();
    const exclusive = tree.checkpoints.reduce((sum, c) => sum + c.sizeBytes, 0);
    report("disk for 100 checkpoints, 1 MB changed each", grown / 2 ** 20, "MiB", changed / 2 ** 20, "bytes changed", "≤ 1.5×");
    report("  of which checkpoints' exclusive bytes", exclusive / 2 ** 20, "MiB", changed / 2 ** 20, "bytes changed");
    await writer.deleteCheckpoint(first, { cascade: true });
    await writer.kill();
  } finally {
    await stopBurrow(burrow);
    rmSync(stateDir, { recursive: true, force: true });
  }
}
