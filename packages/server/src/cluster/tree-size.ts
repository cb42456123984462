// Whether a directory tree holds more than a number of bytes, stopping as soon as it does: a move's size cap
// (sandbox-moves.ts) must not read a whole large writable layer to refuse it.
import { lstat, readdir } from "node:fs/promises";
import { join } from "node:path";

/** Apparent sizes of regular files (what an archive of the tree carries), not blocks; entries that vanish count 0. */
export async function treeExceeds(root: string, limit: number): Promise<boolean> {
  let total = 0;
  const pending = [root];
  for (let dir = pending.pop(); dir !== undefined; dir = pending.pop()) {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        pending.push(path);
      } else if (entry.isFile()) {
        total += (await lstat(path).catch(() => undefined))?.size ?? 0;
        if (total > limit) return true;
      }
    }
  }
  return false;
}
