import { execFile } from "node:child_process";
import { rename } from "node:fs/promises";
import { promisify } from "node:util";
import { BurrowError, Code } from "@burrow/protocol";
import { removeTree, toolFailure } from "./remove-tree.js";

const run = promisify(execFile);

/**
 * Move a directory tree, also across btrfs subvolumes (where rename fails with EXDEV): then it is copied with
 * reflinks — shared extents, so only metadata is written — keeping owners, modes, xattrs and overlay whiteouts,
 * and the source is removed with removeTree (sandbox-written trees can be deeper than PATH_MAX). cp works with
 * whole paths, so a tree deeper than PATH_MAX cannot be copied: that fails with an Internal BurrowError
 * (reason move_failed), and nothing of the partial copy is left at the destination.
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
    if (signal?.aborted) throw new BurrowError(Code.Canceled, `moving ${from} to ${to} was canceled`, { cause: error });
    throw new BurrowError(Code.Internal, `cannot copy ${from} to ${to}: ${toolFailure(error)}`, { reason: "move_failed", cause: error });
  }
  await removeTree(from, { signal });
}
