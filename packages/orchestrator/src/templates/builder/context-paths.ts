// Paths inside an unpacked build context. The context is whatever the client uploaded, symbolic links
// included, so a source path is resolved one component at a time beneath the unpack directory: a link is
// followed only while it stays inside, and one that would leave (`..` past the top, an absolute target) is an
// error that names the path as the user wrote it. Nothing outside the unpack directory is ever looked at, so
// the answer cannot tell whether some host path exists. A realpath check backs this up.
import { lstat, readlink, realpath } from "node:fs/promises";
import { dirname, join, sep } from "node:path";
import { BurrowError, Code } from "@burrow/protocol";

const MAX_SYMLINK_HOPS = 40;

/** The reason of a context path that would leave the unpack directory (InvalidArgument). */
export const CONTEXT_ESCAPE = "context_escape";

function escapeError(message: string): BurrowError {
  return new BurrowError(Code.InvalidArgument, message, { reason: CONTEXT_ESCAPE });
}

/**
 * Host path of `rel` (relative to `root`) with every symbolic link before the last component followed inside
 * `root`; the last component itself is not followed (COPY copies a link as a link). Undefined when the path
 * does not exist; a BurrowError with reason CONTEXT_ESCAPE when resolving it would leave `root`.
 */
export async function resolveBeneath(root: string, rel: string): Promise<string | undefined> {
  const queue = rel.split("/").filter((part) => part !== "" && part !== ".");
  const resolved: string[] = [];
  let hops = 0;
  while (queue.length > 0) {
    const part = queue.shift() as string;
    if (part === "..") {
      // Every entry of `resolved` is a real directory, so `..` is its parent; above the root is outside.
      if (resolved.length === 0) throw escapeError("leaves the build context");
      resolved.pop();
      continue;
    }
    const hostPath = join(root, ...resolved, part);
    const st = await lstat(hostPath).catch(() => undefined);
    if (!st) return undefined;
    if (queue.length === 0) {
      resolved.push(part);
      break;
    }
    if (st.isSymbolicLink()) {
      if (++hops > MAX_SYMLINK_HOPS) throw escapeError("has too many levels of symbolic links");
      const target = await readlink(hostPath);
      if (target.startsWith("/")) throw escapeError("leaves the build context through an absolute symbolic link");
      queue.unshift(...target.split("/").filter((p) => p !== "" && p !== "."));
      continue;
    }
    if (!st.isDirectory()) return undefined;
    resolved.push(part);
  }
  const result = join(root, ...resolved);
  await assertInside(root, result);
  return result;
}

/** Second line of defence: the real path of `path`'s parent is `root` or inside it. */
export async function assertInside(root: string, path: string): Promise<void> {
  const realRoot = await realpath(root);
  const parent = path === root ? realRoot : await realpath(dirname(path));
  if (parent !== realRoot && !parent.startsWith(realRoot + sep)) throw escapeError("leaves the build context");
}
