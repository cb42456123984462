// Sandbox root is host uid `uidBase`, so the template must be owned by the shifted range for root
// inside to own /etc, /usr… (the alternative, idmapped mounts, needs util-linux ≥ 2.39 here).
import { lchown, chmod, lstat, readdir } from "node:fs/promises";
import { join } from "node:path";
import { BurrowError, Code } from "@burrow/protocol";

export interface ShiftOptions {
  uidBase: number;
  /** Size of the sandbox uid range; ids at or beyond it cannot be represented inside. */
  uidCount: number;
  signal?: AbortSignal | undefined;
}

/**
 * Add `uidBase` to the uid and gid of every entry under `root` (root included). Already-shifted
 * ids are rejected rather than shifted twice. chown clears setuid/setgid bits, so the mode is
 * written back for regular files and directories that had them (sudo needs its setuid bit).
 */
export async function shiftOwnership(root: string, opts: ShiftOptions): Promise<number> {
  const { uidBase, uidCount, signal } = opts;
  let count = 0;
  // Hard links (gzip/uncompress…) share an inode: shift it once, or the second name sees an
  // already-shifted owner.
  const seen = new Set<string>();
  const shiftOne = async (path: string): Promise<boolean> => {
    const st = await lstat(path);
    if (st.nlink > 1 && !st.isDirectory()) {
      const key = `${st.dev}:${st.ino}`;
      if (seen.has(key)) return false;
      seen.add(key);
    }
    if (st.uid >= uidCount || st.gid >= uidCount) {
      throw new BurrowError(Code.InvalidArgument, `${path} is owned by ${st.uid}:${st.gid}, outside 0..${uidCount - 1}`, { reason: "unmappable_owner" });
    }
    await lchown(path, st.uid + uidBase, st.gid + uidBase);
    if (!st.isSymbolicLink() && (st.mode & 0o6000) !== 0) await chmod(path, st.mode & 0o7777);
    count++;
    return st.isDirectory();
  };
  const walk = async (dir: string): Promise<void> => {
    if (signal?.aborted) throw new BurrowError(Code.Canceled, "ownership shift aborted", { cause: signal.reason });
    const entries = await readdir(dir);
    // Bounded fan-out: enough parallelism to hide syscall latency without exhausting fds.
    for (let i = 0; i < entries.length; i += 64) {
      const batch = entries.slice(i, i + 64).map(async (name) => {
        const p = join(dir, name);
        if (await shiftOne(p)) await walk(p);
      });
      await Promise.all(batch);
    }
  };
  if (await shiftOne(root)) await walk(root);
  return count;
}
