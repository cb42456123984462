import { execFile } from "node:child_process";
import { rename } from "node:fs/promises";
import { promisify } from "node:util";
import { removeTree, toolFailure } from "./remove-tree.js";

const run = promisify(execFile);

/** A tree that could not be moved; nothing of a partial copy is left at the destination. */
export class MoveDirError extends Error {
  override readonly name = "MoveDirError";
  readonly code = "internal";
}

/**
 * Move a directory tree, also across btrfs subvolumes (where rename fails with EXDEV): then it is copied with
 * reflinks — shared extents, so only metadata is written — keeping owners, modes, xattrs and overlay whiteouts,
 * and the source is removed with removeTree (sandbox-written trees can be deeper than PATH_MAX). cp works with
 * whole paths, so a tree deeper than PATH_MAX cannot be copied: that fails with a MoveDirError.
 */
export async function moveDir(from: string, to: string, signal?: AbortSignal): Promise<void> {
  try {
    await rename(from, to);
    return;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EXDEV") throw error;
  }
  try {
    await run("cp", ["-a", "--reflink=auto", from, to], { signal, maxBuffer: 1024 * 1024 });
  } catch (error) {
    await removeTree(to).catch(() => undefined);
    throw new MoveDirError(`cannot copy ${from} to ${to}: ${toolFailure(error)}`, { cause: error });
  }
  await removeTree(from, { signal });
}
