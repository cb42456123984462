// OCI/Docker layers mark deletions with files (`.wh.<name>`, and `.wh..wh..opq` for "hide everything below
// in this directory"); overlayfs marks them with a 0/0 character device and the trusted.overlay.opaque xattr.
// Each imported layer becomes one overlay lower layer, so converting in place is all it takes.
//
// The names come from the image: a whiteout may only name an entry of its own directory. `.wh.` (nothing),
// `.wh..` and `.wh...` would name the directory itself or its parent — at the top, the layers root — so they
// are refused, and the walk never passes a symbolic link.
import { execFile } from "node:child_process";
import { lstat, readdir, rm } from "node:fs/promises";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import { Code } from "@burrow/protocol";
import { TemplateBuildError } from "../builder/template-build-error.js";

const run = promisify(execFile);

export const OCI_WHITEOUT_PREFIX = ".wh.";
export const OCI_OPAQUE_MARKER = ".wh..wh..opq";
/** `.wh..wh.` names other than the opaque marker are AUFS bookkeeping (e.g. `.wh..wh.plnk`), not deletions. */
const AUFS_META_PREFIX = ".wh..wh.";

export interface WhiteoutCounts {
  whiteouts: number;
  opaque: number;
}

/** The entry a whiteout file hides, or undefined when the name cannot denote an entry of its directory. */
export function whiteoutTarget(name: string): string | undefined {
  const target = name.slice(OCI_WHITEOUT_PREFIX.length);
  if (target === "" || target === "." || target === ".." || target.includes("/") || target.includes("\0")) return undefined;
  return target;
}

/** Replace OCI whiteout files under `root` with overlayfs whiteouts. */
export async function convertWhiteouts(root: string, signal?: AbortSignal): Promise<WhiteoutCounts> {
  const counts: WhiteoutCounts = { whiteouts: 0, opaque: 0 };
  const walk = async (dir: string): Promise<void> => {
    signal?.throwIfAborted();
    for (const name of await readdir(dir)) {
      const path = join(dir, name);
      if (name === OCI_OPAQUE_MARKER) {
        await rm(path, { recursive: true, force: true });
        // node has no setxattr; setfattr (the attr package) is on every machine that builds the base template.
        // `dir` is a real directory inside `root` (the walk only enters those).
        await run("setfattr", ["-h", "-n", "trusted.overlay.opaque", "-v", "y", dir], { signal });
        counts.opaque++;
      } else if (name.startsWith(AUFS_META_PREFIX)) {
        await rm(path, { recursive: true, force: true });
      } else if (name.startsWith(OCI_WHITEOUT_PREFIX)) {
        const target = whiteoutTarget(name);
        if (target === undefined) {
          throw new TemplateBuildError(
            Code.InvalidArgument,
            `image layer has an invalid whiteout '/${relative(root, path)}': it must name an entry of its directory`,
            { step: "base" },
          );
        }
        const hidden = join(dir, target);
        await rm(path, { recursive: true, force: true });
        // rm does not follow a symbolic link named `hidden`; it removes the link.
        await rm(hidden, { recursive: true, force: true });
        await run("mknod", [hidden, "c", "0", "0"], { signal });
        counts.whiteouts++;
      } else if ((await lstat(path)).isDirectory()) {
        await walk(path);
      }
    }
  };
  await walk(root);
  return counts;
}
