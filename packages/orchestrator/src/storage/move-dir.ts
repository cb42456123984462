import { execFile } from "node:child_process";
import { rename, rm } from "node:fs/promises";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * Move a directory tree, also across btrfs subvolumes (where rename fails with EXDEV): then it is copied with
 * reflinks — shared extents, so only metadata is written — keeping owners, modes, xattrs and overlay whiteouts.
 */
export async function moveDir(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EXDEV") throw error;
    await run("cp", ["-a", "--reflink=auto", from, to]);
    await rm(from, { recursive: true, force: true });
  }
}
