// Read-only lookups through a stack of layers the way overlayfs would see them (top layer first), without
// mounting anything: COPY needs owners from /etc/passwd and the attributes of existing parent directories.
//
// Layers are content an image or a build wrote, so nothing here may reach the host through them: a lookup
// descends in a layer only through real directories (lstat, never through a symbolic link), so every path it
// touches stays inside a layer directory. Symbolic links of the image are resolved the way the sandbox would
// see them — against the image root, `..` stopping at `/` — never against the host.
import type { Stats } from "node:fs";
import { lstat, readFile, readlink } from "node:fs/promises";
import { join } from "node:path";
import { Code } from "@burrow/protocol";
import { TemplateBuildError } from "./template-build-error.js";

/** Linux gives up after 40 links in one lookup; so does this. */
const MAX_SYMLINK_HOPS = 40;

/** Is this an overlayfs whiteout (a 0/0 character device)? */
function isWhiteout(st: Stats): boolean {
  return st.isCharacterDevice() && st.rdev === 0;
}

function components(path: string): string[] {
  return path.split("/").filter((part) => part !== "" && part !== ".");
}

interface LayerEntry {
  /** The layer directory the merged entry comes from. */
  layer: string;
  /** Host path of the entry inside that layer: every parent of it is a real directory of the layer. */
  hostPath: string;
  stats: Stats;
}

/**
 * The merged entry at `parts` (literal components: no `..`, no symbolic links to follow), or undefined when
 * absent or deleted. When a parent is not a directory in the merged view, that parent is returned with
 * `blocked` set, so callers can tell "missing" from "under a file or symbolic link".
 */
async function lookupLiteral(layerDirs: readonly string[], parts: readonly string[]): Promise<(LayerEntry & { blocked: boolean }) | undefined> {
  // Layers whose directory at the current prefix takes part in the merged directory.
  let dirs = [...layerDirs];
  for (let index = 0; index < parts.length; index++) {
    const last = index === parts.length - 1;
    const prefix = parts.slice(0, index + 1);
    let found: LayerEntry | undefined;
    const next: string[] = [];
    for (const layer of dirs) {
      const hostPath = join(layer, ...prefix);
      const st = await lstat(hostPath).catch(() => undefined);
      if (!st) continue;
      if (isWhiteout(st)) break;
      found ??= { layer, hostPath, stats: st };
      // A non-directory hides everything below it; so does a directory over a lower non-directory.
      if (!st.isDirectory()) break;
      next.push(layer);
    }
    if (!found) return undefined;
    if (last) return { ...found, blocked: false };
    if (!found.stats.isDirectory()) return { ...found, blocked: true };
    dirs = next;
  }
  return undefined;
}

export interface ResolvedImagePath {
  /** Absolute path in the image with every symbolic link on the way resolved (within the image). */
  path: string;
  /** The part of `path` that exists, if a non-directory stands where a directory is needed. */
  notDirectory?: string | undefined;
}

/**
 * Resolve `path` (absolute, in the sandbox) against the merged layers as the sandbox would: symbolic links
 * are followed relative to the image root (an absolute target starts again at `/`, `..` stops at `/`). The
 * last component is followed only with `followLast`. Missing components are kept as written, so the result
 * also names paths that do not exist yet (a COPY destination).
 */
export async function resolveInLayers(layerDirs: readonly string[], path: string, followLast: boolean): Promise<ResolvedImagePath> {
  const queue = components(path);
  const resolved: string[] = [];
  let hops = 0;
  let missing = false;
  while (queue.length > 0) {
    const part = queue.shift() as string;
    if (part === "..") {
      resolved.pop();
      continue;
    }
    const last = queue.length === 0;
    if (missing) {
      resolved.push(part);
      continue;
    }
    const entry = await lookupLiteral(layerDirs, [...resolved, part]);
    if (!entry) {
      missing = true;
      resolved.push(part);
      continue;
    }
    if (entry.stats.isSymbolicLink() && (!last || followLast)) {
      if (++hops > MAX_SYMLINK_HOPS) {
        throw new TemplateBuildError(Code.InvalidArgument, `too many levels of symbolic links in ${path} in the image`);
      }
      const target = await readlink(entry.hostPath);
      if (target.startsWith("/")) resolved.length = 0;
      queue.unshift(...components(target));
      continue;
    }
    resolved.push(part);
    if (!last && !entry.stats.isDirectory()) return { path: `/${[...resolved, ...queue].join("/")}`, notDirectory: `/${resolved.join("/")}` };
  }
  return { path: `/${resolved.join("/")}` };
}

/**
 * lstat of `path` (absolute, in the sandbox, symbolic links not followed anywhere) in the topmost layer that
 * has it; undefined if absent, deleted, or below something that is not a directory.
 */
export async function statInLayers(layerDirs: readonly string[], path: string): Promise<Stats | undefined> {
  const parts = components(path);
  if (parts.length === 0) return lookupRoot(layerDirs);
  const entry = await lookupLiteral(layerDirs, parts);
  return entry && !entry.blocked ? entry.stats : undefined;
}

async function lookupRoot(layerDirs: readonly string[]): Promise<Stats | undefined> {
  for (const dir of layerDirs) {
    const st = await lstat(dir).catch(() => undefined);
    if (st) return st;
  }
  return undefined;
}

/** A regular file's text as the sandbox would read it (symbolic links resolved within the image). */
export async function readFileInLayers(layerDirs: readonly string[], path: string): Promise<string | undefined> {
  const resolved = await resolveInLayers(layerDirs, path, true);
  if (resolved.notDirectory) return undefined;
  const parts = components(resolved.path);
  if (parts.length === 0) return undefined;
  const entry = await lookupLiteral(layerDirs, parts);
  if (!entry || entry.blocked || !entry.stats.isFile()) return undefined;
  // Every parent of hostPath is a real directory of an immutable layer and the entry a regular file.
  return readFile(entry.hostPath, "utf8");
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
