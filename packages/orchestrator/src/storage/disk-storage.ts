// Where layers and sandbox writable layers live. With btrfs (the default where btrfs-progs is installed) they sit
// on one loop-mounted btrfs image inside the state directory: every sandbox's writable layer is a subvolume with
// a qgroup limit, so writes past its disk size fail with EDQUOT (envd answers 507), and subvolume snapshots make
// copies of a layer nearly free for snapshots and forks. (XFS and ext4 project quotas need kernel options these
// machines lack; btrfs qgroups are part of btrfs itself.) Without btrfs-progs they are plain directories and
// disk limits are not enforced.
import { execFile } from "node:child_process";
import { existsSync, lstatSync, readFileSync } from "node:fs";
import { mkdir, open, readdir, rmdir, statfs, symlink } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { BurrowError, Code } from "@burrow/protocol";
import type { Logger } from "../logger.js";
import type { CommandRunner } from "../reaper/run-command.js";

const run = promisify(execFile);

export type StorageKind = "btrfs" | "directory";

export interface SandboxStorage {
  readonly kind: StorageKind;
  /**
   * Create a sandbox's directory (a subvolume on btrfs). Its overlay upper and work dirs live inside it: overlayfs
   * renames from work into upper, which btrfs refuses across subvolumes.
   */
  createWritableDir(path: string): Promise<void>;
  /** Hard limit on what is written into a writable dir. A no-op without btrfs. */
  applyQuota(path: string, diskMB: number): Promise<void>;
  /** Unmount the image (after every sandbox is gone). */
  unmount(): Promise<void>;
}

const MKFS_BTRFS = "/usr/sbin/mkfs.btrfs";
const BTRFS = "/usr/bin/btrfs";
/** Largest image created by default; it is sparse, so only what is written takes space on the host. */
const MAX_IMAGE_BYTES = 512 * 2 ** 30;
const MIN_IMAGE_BYTES = 4 * 2 ** 30;

/** The directories that move onto the image; the state directory keeps symlinks to them. */
const DATA_DIRS = ["layers", "sandboxes"] as const;

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
  return {
    kind: "btrfs",
    async createWritableDir(path: string): Promise<void> {
      await tool(BTRFS, ["subvolume", "create", path]);
    },
    async applyQuota(path: string, diskMB: number): Promise<void> {
      await tool(BTRFS, ["qgroup", "limit", `${Math.ceil(diskMB)}M`, path]);
    },
    async unmount(): Promise<void> {
      if (isMountPoint(dataDir)) await run("umount", [dataDir]);
    },
  };
}
