// OCI/Docker layers mark deletions with files (`.wh.<name>`, and `.wh..wh..opq` for "hide everything below
// in this directory"); overlayfs marks them with a 0/0 character device and the trusted.overlay.opaque xattr.
// Each imported layer becomes one overlay lower layer, so converting in place is all it takes.
import { execFile } from "node:child_process";
import { lstat, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export const OCI_WHITEOUT_PREFIX = ".wh.";
export const OCI_OPAQUE_MARKER = ".wh..wh..opq";

export interface WhiteoutCounts {
  whiteouts: number;
  opaque: number;
}

/** Replace OCI whiteout files under `root` with overlayfs whiteouts. */
export async function convertWhiteouts(root: string, signal?: AbortSignal): Promise<WhiteoutCounts> {
  const counts: WhiteoutCounts = { whiteouts: 0, opaque: 0 };
  const walk = async (dir: string): Promise<void> => {
    signal?.throwIfAborted();
    for (const name of await readdir(dir)) {
      const path = join(dir, name);
      if (name === OCI_OPAQUE_MARKER) {
        await rm(path, { force: true });
        // node has no setxattr; setfattr (the attr package) is on every machine that builds the base template.
        await run("setfattr", ["-n", "trusted.overlay.opaque", "-v", "y", dir], { signal });
        counts.opaque++;
      } else if (name.startsWith(OCI_WHITEOUT_PREFIX)) {
        const hidden = join(dir, name.slice(OCI_WHITEOUT_PREFIX.length));
        await rm(path, { force: true });
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
