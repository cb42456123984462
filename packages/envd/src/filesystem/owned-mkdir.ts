import { chown, mkdir, stat } from "node:fs/promises";
import { dirname } from "node:path";
import type { SandboxUser } from "../users/user-db.js";

/**
 * `mkdir -p` whose newly created directories belong to the requesting user, as if they had created them
 * (envd itself runs as root). Returns true when `dir` itself was created.
 */
export async function mkdirAllOwned(dir: string, user: SandboxUser): Promise<boolean> {
  const missing: string[] = [];
  let cur = dir;
  for (;;) {
    try {
      const s = await stat(cur);
      if (!s.isDirectory()) {
        throw Object.assign(new Error(`'${cur}' is not a directory`), { code: "ENOTDIR" });
      }
      break;
    } catch (err) {
      if ((err as { code?: string }).code !== "ENOENT") throw err;
      missing.push(cur);
      const parent = dirname(cur);
      if (parent === cur) break;
      cur = parent;
    }
  }
  for (const d of missing.reverse()) {
    try {
      await mkdir(d, { mode: 0o755 });
    } catch (err) {
      if ((err as { code?: string }).code !== "EEXIST") throw err;
      continue; // a concurrent request created it
    }
    await chown(d, user.uid, user.gid);
  }
  return missing.length > 0;
}
