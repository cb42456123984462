// Where layers and sandbox writable layers live. With btrfs (the default where btrfs-progs is installed) they sit
// on one loop-mounted btrfs image inside the state directory: every sandbox's writable layer is a subvolume with
// a qgroup limit, so writes past its disk size fail with EDQUOT (envd answers 507), and subvolume snapshots make
// copies of a layer nearly free for snapshots and forks. (XFS and ext4 project quotas need kernel options these
// machines lack; btrfs qgroups are part of btrfs itself.) Without btrfs-progs they are plain directories and
// disk limits are not enforced.
import { execFile } from "node:child_process";
import { existsSync, lstatSync, readFileSync } from "node:fs";
import { mkdir, open, readdir, realpath, rmdir, statfs, symlink } from "node:fs/promises";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import { BurrowError, Code } from "@burrow/protocol";
import { diskUsageBytes } from "../disk-usage.js";
import type { Logger } from "../logger.js";
import type { CommandRunner } from "../reaper/run-command.js";
import { removeTree } from "./remove-tree.js";

const run = promisify(execFile);

export type StorageKind = "btrfs" | "directory";

export interface LimitUsage {
  usedBytes: number;
  limitBytes: number;
}

export interface SandboxStorage {
  readonly kind: StorageKind;
  /**
   * Create a sandbox's directory (a subvolume on btrfs). Its overlay upper and work dirs live inside it: overlayfs
   * renames from work into upper, which btrfs refuses across subvolumes.
   */
  createWritableDir(path: string): Promise<void>;
  /** Hard limit on what is written into a writable dir. A no-op without btrfs. */
  applyQuota(path: string, diskMB: number): Promise<void>;
  /**
   * Copy a writable dir to `to` (which must not exist) copy-on-write: a subvolume snapshot on btrfs (read-only for
   * checkpoints, writable to start a sandbox from; either costs what changes afterwards), a reflink copy without
   * btrfs (`readOnly` is not enforced there). Mounts inside `from` are not crossed.
   */
  snapshotDir(from: string, to: string, opts: { readOnly: boolean; signal?: AbortSignal | undefined }): Promise<void>;
  /**
   * Bytes only each of these dirs holds, i.e. what removing it would free now: btrfs exclusive bytes of the
   * subvolumes (after a sync), du without btrfs. Paths btrfs does not know as subvolumes are left out.
   */
  exclusiveBytes(paths: readonly string[], signal?: AbortSignal): Promise<Map<string, number>>;
  /**
   * What a writable dir's (or a volume's) disk limit counts now and the limit: btrfs referenced and max referenced
   * bytes of its subvolume, as of the last transaction commit (no sync; one listing shared by the calls of a second).
   * Undefined without btrfs or a limit.
   */
  limitUsage(path: string, signal?: AbortSignal): Promise<LimitUsage | undefined>;
  /** Unmount the image (after every sandbox is gone). */
  unmount(): Promise<void>;
}

const MKFS_BTRFS = "/usr/sbin/mkfs.btrfs";
const BTRFS = "/usr/bin/btrfs";
/** Largest image created by default; it is sparse, so only what is written takes space on the host. */
const MAX_IMAGE_BYTES = 512 * 2 ** 30;
const MIN_IMAGE_BYTES = 4 * 2 ** 30;

/** The directories that move onto the image; the state directory keeps symlinks to them. */
const DATA_DIRS = ["layers", "sandboxes", "checkpoints", "volumes"] as const;

function isMountPoint(path: string): boolean {
  const mountInfo = readFileSync("/proc/self/mountinfo", "utf8");
  return mountInfo.split("\n").some((line) => line.split(" ")[4] === path);
}

async function isEmptyOrMissing(path: string): Promise<boolean> {
  if (!existsSync(path)) return true;
  if (lstatSync(path).isSymbolicLink()) return true;
  return (await readdir(path)).length === 0;
}

const plainStorage: SandboxStorage = {
  kind: "directory",
  createWritableDir: async (path) => void (await mkdir(path, { recursive: true })),
  applyQuota: async () => {},
  snapshotDir: async (from, to, opts) => {
    try {
      await run("cp", ["-a", "--reflink=auto", "--one-file-system", "--", from, to], { signal: opts.signal, maxBuffer: 1024 * 1024 });
    } catch (error) {
      await removeTree(to).catch(() => undefined);
      throw error;
    }
  },
  exclusiveBytes: async (paths, signal) => new Map(await Promise.all(paths.map(async (p) => [p, await diskUsageBytes(p, signal)] as const))),
  limitUsage: async () => undefined,
  unmount: async () => {},
};

export async function openSandboxStorage(opts: {
  stateDir: string;
  preferred: StorageKind;
  logger: Logger;
  /** Runs btrfs for each sandbox (on the create path): the reaper's, so the server does not fork. @default execFile */
  runCommand?: CommandRunner | undefined;
}): Promise<SandboxStorage> {
  const { stateDir, logger, runCommand } = opts;
  const tool = async (cmd: string, args: string[]): Promise<void> => {
    if (!runCommand) return void (await run(cmd, args));
    const r = await runCommand(cmd, args);
    if (r.code !== 0) throw new Error(`${cmd} ${args.join(" ")} exited ${r.code ?? r.signal}: ${r.stderr.trim()}`);
  };
  const toolOutput = async (cmd: string, args: string[], signal?: AbortSignal): Promise<string> => {
    if (!runCommand) return (await run(cmd, args, { signal, maxBuffer: 64 * 1024 * 1024 })).stdout;
    const r = await runCommand(cmd, args, { signal });
    if (r.code !== 0) throw new Error(`${cmd} ${args.join(" ")} exited ${r.code ?? r.signal}: ${r.stderr.trim()}`);
    return r.stdout;
  };
  const dataDir = join(stateDir, "data");
  const image = join(stateDir, "disk.img");
  const toolsPresent = existsSync(MKFS_BTRFS) && existsSync(BTRFS);
  const imageExists = existsSync(image);
  if (!imageExists) {
    if (opts.preferred !== "btrfs" || !toolsPresent) {
      if (opts.preferred === "btrfs") logger.warn("btrfs-progs is not installed: sandbox disk limits are not enforced");
      return plainStorage;
    }
    // A state directory that already holds layers as plain directories keeps that layout.
    for (const name of DATA_DIRS) {
      if (!(await isEmptyOrMissing(join(stateDir, name)))) return plainStorage;
    }
    const free = await statfs(stateDir);
    const size = Math.min(MAX_IMAGE_BYTES, Math.floor((free.bavail * free.bsize) / 2 ** 30) * 2 ** 30);
    if (size < MIN_IMAGE_BYTES) {
      logger.warn("less than 4 GiB free: keeping layers as plain directories, without disk limits");
      return plainStorage;
    }
    const handle = await open(image, "wx");
    await handle.truncate(size);
    await handle.close();
    await run(MKFS_BTRFS, ["-q", image]);
  }
  await mkdir(dataDir, { recursive: true });
  if (!isMountPoint(dataDir)) {
    try {
      await run("mount", ["-o", "loop", image, dataDir]);
      await run(BTRFS, ["quota", "enable", dataDir]);
    } catch (error) {
      throw new BurrowError(Code.FailedPrecondition, `cannot mount the sandbox disk image ${image}: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
  for (const name of DATA_DIRS) {
    await mkdir(join(dataDir, name), { recursive: true });
    const link = join(stateDir, name);
    if (existsSync(link) && lstatSync(link).isSymbolicLink()) continue;
    if (existsSync(link)) {
      if (!(await isEmptyOrMissing(link))) {
        throw new BurrowError(Code.FailedPrecondition, `${link} holds data outside the disk image ${image}; move it away`);
      }
      await rmdir(link);
    }
    await symlink(join(dataDir, name), link);
  }
  // A deleted subvolume's qgroup goes once btrfs has dropped the subvolume on current kernels; older ones keep it
  // as a stale qgroup (a few bytes of metadata each). Cleared here, at every start.
  await run(BTRFS, ["qgroup", "clear-stale", dataDir]).catch((error: unknown) =>
    logger.debug({ err: error }, "btrfs qgroup clear-stale failed; stale qgroups stay until the next start"),
  );
  logger.info({ image }, "sandbox storage: btrfs image, one quota-limited subvolume per sandbox");
  const referenced = sharedListing(async (signal) => {
    const out = await toolOutput(BTRFS, ["qgroup", "show", "--raw", "-r", dataDir], signal);
    const usage = new Map<string, LimitUsage>();
    for (const line of out.split("\n")) {
      // qgroupid referenced exclusive max-referenced path
      const [id, rfer, , maxRfer, ...path] = line.trim().split(/\s+/);
      if (id === undefined || !/^\d+\/\d+$/.test(id) || path.length === 0 || maxRfer === "none") continue;
      const entry = { usedBytes: Number(rfer), limitBytes: Number(maxRfer) };
      if (Number.isFinite(entry.usedBytes) && entry.limitBytes > 0) usage.set(path.join(" "), entry);
    }
    return usage;
  });
  return {
    kind: "btrfs",
    async createWritableDir(path: string): Promise<void> {
      await tool(BTRFS, ["subvolume", "create", path]);
    },
    async applyQuota(path: string, diskMB: number): Promise<void> {
      await tool(BTRFS, ["qgroup", "limit", `${Math.ceil(diskMB)}M`, path]);
    },
    async snapshotDir(from: string, to: string, opts: { readOnly: boolean }): Promise<void> {
      await tool(BTRFS, ["subvolume", "snapshot", ...(opts.readOnly ? ["-r"] : []), from, to]);
    },
    async exclusiveBytes(paths: readonly string[], signal?: AbortSignal): Promise<Map<string, number>> {
      // One listing for all of them; qgroup paths are relative to the filesystem's root, which is the data dir.
      // (Text, not --format json: btrfs-progs 6.2 aborts formatting the limits of a limited qgroup in JSON.)
      const out = await toolOutput(BTRFS, ["qgroup", "show", "--raw", "--sync", dataDir], signal);
      const exclusive = new Map<string, number>();
      for (const line of out.split("\n")) {
        const [id, , excl, ...path] = line.trim().split(/\s+/);
        if (id === undefined || !/^\d+\/\d+$/.test(id) || excl === undefined || path.length === 0) continue;
        exclusive.set(path.join(" "), Number(excl));
      }
      const found = new Map<string, number>();
      for (const path of paths) {
        const real = await realpath(path).catch(() => undefined);
        const bytes = real === undefined ? undefined : exclusive.get(relative(dataDir, real));
        if (bytes !== undefined && Number.isFinite(bytes)) found.set(path, bytes);
      }
      return found;
    },
    async limitUsage(path: string, signal?: AbortSignal): Promise<LimitUsage | undefined> {
      const real = await realpath(path).catch(() => undefined);
      return real === undefined ? undefined : (await referenced(signal)).get(relative(dataDir, real));
    },
    async unmount(): Promise<void> {
      if (isMountPoint(dataDir)) await run("umount", [dataDir]);
    },
  };
}

/** One listing answers every caller for LISTING_TTL_MS: a sweep of many sandboxes forks btrfs once, not per sandbox. */
const LISTING_TTL_MS = 1000;
function sharedListing<T>(list: (signal?: AbortSignal) => Promise<T>): (signal?: AbortSignal) => Promise<T> {
  let last: { at: number; value: Promise<T> } | undefined;
  return (signal) => {
    if (last && Date.now() - last.at < LISTING_TTL_MS) return last.value;
    const value = list(signal);
    const entry = { at: Date.now(), value };
    last = entry;
    value.catch(() => {
      if (last === entry) last = undefined;
    });
    return value;
  };
}
