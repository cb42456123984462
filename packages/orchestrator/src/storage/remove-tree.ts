// Removal of directory trees that code in a sandbox could have written (writable layers, RUN-step results,
// snapshot copies, layers). Such a tree can be deeper than PATH_MAX (a program builds it through directory file
// descriptors), which path-based removal such as fs.rm cannot take (ENAMETOOLONG), and it can hold symlinks
// pointing anywhere on the host. So:
// - a btrfs subvolume (a sandbox's directory) is deleted as a whole with `btrfs subvolume delete`, whatever is
//   inside; its qgroup goes with it once btrfs has dropped the subvolume (kernels that keep it: clear-stale at start);
// - anything else goes with coreutils `rm -rf --one-file-system`, whose fts walk works relative to directory
//   descriptors (any depth), never follows symlinks and refuses to descend into other mounts.
// A mount inside the tree is never crossed: the removal fails instead (FailedPrecondition, reason mounted_inside).
import { execFile } from "node:child_process";
import { readFile, realpath, lstat, statfs } from "node:fs/promises";
import { isAbsolute } from "node:path";
import { promisify } from "node:util";
import { BurrowError, Code } from "@burrow/protocol";
import { BatchQueue } from "../batch-queue.js";

const run = promisify(execFile);

const BTRFS = "/usr/bin/btrfs";
const BTRFS_SUPER_MAGIC = 0x9123683e;
/** Inode number of every btrfs subvolume's root directory. */
const BTRFS_SUBVOLUME_ROOT_INO = 256;
/** How much of a tool's message goes into an error (it may quote paths many kilobytes long). */
const MAX_DETAIL = 300;

/**
 * Subvolumes removed at the same time go to one `btrfs subvolume delete` with many paths: a mass kill otherwise pays
 * a process and btrfs-progs' start-up (~30 ms) per sandbox, one after another, for ~2 ms of kernel work each. When
 * the batch fails, each path is tried alone so a failure is reported for its own path only.
 */
const subvolumeDeletes = new BatchQueue<string>({
  runBatch: (paths) => tool(paths[0] ?? "", BTRFS, ["subvolume", "delete", "--", ...paths], undefined),
  runOne: async (path) => {
    // Deleted by the failed batch already (btrfs-progs goes on past a path it cannot delete).
    const gone = await lstat(path).then(
      () => false,
      (error: NodeJS.ErrnoException) => error.code === "ENOENT",
    );
    if (gone) return;
    await tool(path, BTRFS, ["subvolume", "delete", "--", path], undefined);
  },
});

/** A tree that could not be removed: the BurrowError's details name the tree's root as `path`. */
function removeTreeError(code: Code, path: string, message: string, init: { reason?: string; cause?: unknown } = {}): BurrowError {
  return new BurrowError(code, message, { ...init, details: { path } });
}

/**
 * Remove `path` and everything below it. A missing path is not an error. Rejects with a BurrowError whose details
 * name the path (Canceled when `signal` aborts; the tree may then be partly removed).
 */
export async function removeTree(path: string, opts: { signal?: AbortSignal | undefined } = {}): Promise<void> {
  const { signal } = opts;
  if (!isAbsolute(path) || path === "/") {
    throw removeTreeError(Code.InvalidArgument, path, `refusing to remove '${path}': not an absolute path below /`);
  }
  if (signal?.aborted) throw removeTreeError(Code.Canceled, path, `removal of ${path} was canceled`, { cause: signal.reason });
  const st = await lstat(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return undefined;
    throw removeTreeError(Code.Internal, path, `cannot remove ${path}: ${error.message}`, { reason: "remove_failed", cause: error });
  });
  if (!st) return;
  if (st.isDirectory()) {
    const mounts = await mountsAtOrBelow(path);
    if (mounts.length > 0) {
      throw removeTreeError(
        Code.FailedPrecondition,
        path,
        `cannot remove ${path}: ${mounts.length === 1 ? "a filesystem is" : `${mounts.length} filesystems are`} mounted in it (${clip(mounts.join(", "))})`,
        { reason: "mounted_inside" },
      );
    }
    if (st.ino === BTRFS_SUBVOLUME_ROOT_INO && (await isBtrfs(path))) {
      // Only when the tool is missing or refuses (e.g. a nested subvolume) does the subvolume go file by file.
      try {
        // A cancellable removal runs alone: a shared batch cannot be stopped for one of its paths.
        await (signal ? tool(path, BTRFS, ["subvolume", "delete", "--", path], signal) : subvolumeDeletes.submit(path));
        return;
      } catch (error) {
        if (error instanceof BurrowError && error.code === Code.Canceled) throw error;
      }
    }
  }
  await tool(path, "rm", ["-rf", "--one-file-system", "--", path], signal);
}

/** Run a removal tool; a failure becomes a BurrowError quoting what the tool said (toolFailure). */
async function tool(path: string, file: string, args: string[], signal: AbortSignal | undefined): Promise<void> {
  try {
    await run(file, args, { signal, maxBuffer: 1024 * 1024 });
  } catch (error) {
    if (signal?.aborted) throw removeTreeError(Code.Canceled, path, `removal of ${path} was canceled`, { cause: error });
    throw removeTreeError(Code.Internal, path, `cannot remove ${path}: ${toolFailure(error)}`, { reason: "remove_failed", cause: error });
  }
}

async function isBtrfs(path: string): Promise<boolean> {
  return (await statfs(path)).type === BTRFS_SUPER_MAGIC;
}

/** Mount points of this mount namespace at or below `path` (resolved: mountinfo has real paths). */
async function mountsAtOrBelow(path: string): Promise<string[]> {
  const real = await realpath(path);
  const mountInfo = await readFile("/proc/self/mountinfo", "utf8");
  const found: string[] = [];
  for (const line of mountInfo.split("\n")) {
    const field = line.split(" ")[4];
    if (field === undefined) continue;
    // Spaces, tabs, newlines and backslashes in mount points are written as octal escapes.
    const mountPoint = field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
    if (mountPoint === real || mountPoint.startsWith(`${real}/`)) found.push(mountPoint);
  }
  return found;
}

/** The first line of a failed tool's stderr (or the error's message), its middle cut out when it is long. */
export function toolFailure(error: unknown): string {
  const stderr = String((error as { stderr?: unknown }).stderr ?? "").trim();
  return clip(stderr !== "" ? (stderr.split("\n")[0] ?? "") : (error as Error).message);
}

/** Long text with its middle cut out: the start names the path, the end says what went wrong. */
function clip(text: string): string {
  if (text.length <= MAX_DETAIL) return text;
  const tail = Math.floor(MAX_DETAIL / 3);
  return `${text.slice(0, MAX_DETAIL - tail)}…${text.slice(-tail)}`;
}
