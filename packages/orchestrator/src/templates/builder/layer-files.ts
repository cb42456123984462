// Read-only lookups through a stack of layers the way overlayfs would see them (top layer first), without
// mounting anything: COPY needs owners from /etc/passwd and the attributes of existing parent directories.
import type { Stats } from "node:fs";
import { lstat, readFile } from "node:fs/promises";
import { join } from "node:path";

/** Is this an overlayfs whiteout (a 0/0 character device)? */
function isWhiteout(st: Stats): boolean {
  return st.isCharacterDevice() && st.rdev === 0;
}

/** lstat of `path` (absolute, in the sandbox) in the topmost layer that has it; undefined if absent or deleted. */
export async function statInLayers(layerDirs: readonly string[], path: string): Promise<Stats | undefined> {
  for (const dir of layerDirs) {
    const st = await lstat(join(dir, path)).catch(() => undefined);
    if (!st) continue;
    return isWhiteout(st) ? undefined : st;
  }
  return undefined;
}

export async function readFileInLayers(layerDirs: readonly string[], path: string): Promise<string | undefined> {
  for (const dir of layerDirs) {
    const st = await lstat(join(dir, path)).catch(() => undefined);
    if (!st) continue;
    if (isWhiteout(st) || !st.isFile()) return undefined;
    return readFile(join(dir, path), "utf8");
  }
  return undefined;
}

export interface SandboxAccount {
  uid: number;
  gid: number;
  home: string;
}

/** Resolve a user name or numeric uid (optionally `user:group`) against the layers' /etc/passwd and /etc/group. */
export async function lookupAccount(layerDirs: readonly string[], spec: string): Promise<SandboxAccount | undefined> {
  const [userPart = "", groupPart] = spec.split(":", 2);
  const passwd = parseColonFile((await readFileInLayers(layerDirs, "/etc/passwd")) ?? "");
  let account: SandboxAccount | undefined;
  if (/^\d+$/.test(userPart)) {
    const uid = Number(userPart);
    const row = passwd.find((r) => Number(r[2]) === uid);
    account = { uid, gid: row ? Number(row[3]) : uid, home: row?.[5] ?? "/" };
  } else {
    const row = passwd.find((r) => r[0] === userPart);
    if (!row) return undefined;
    account = { uid: Number(row[2]), gid: Number(row[3]), home: row[5] ?? "/" };
  }
  if (groupPart !== undefined && groupPart !== "") {
    if (/^\d+$/.test(groupPart)) account.gid = Number(groupPart);
    else {
      const groups = parseColonFile((await readFileInLayers(layerDirs, "/etc/group")) ?? "");
      const row = groups.find((r) => r[0] === groupPart);
      if (!row) return undefined;
      account.gid = Number(row[2]);
    }
  }
  return account;
}

function parseColonFile(text: string): string[][] {
  return text
    .split("\n")
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => line.split(":"));
}
