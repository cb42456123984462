// COPY: the uploaded tar (paths relative to the build context) is unpacked on the host into a new layer.
// Nothing from the tar runs, so this needs no sandbox; ownership is written as the shifted host uid of the
// target user, and parent directories copy the attributes they have in the layers below (an overlay
// directory takes its owner and mode from the topmost layer that has it, so a root-owned stand-in for
// /home/user would otherwise take the home directory away from its user).
//
// A relative destination is relative to the working directory, as in Docker and E2B; with no WORKDIR set, to the
// home directory of the build's current user (where E2B runs a build's steps without one). A working directory
// exists from the WORKDIR step on in Docker and E2B, so a COPY into it first creates it as E2B's WORKDIR does
// (new directories owned by the current user), and `COPY f .` puts f inside it.
//
// The archive and the layers below are both untrusted: sources are resolved beneath the unpack directory
// (context-paths.ts) and destinations within the image (layer-files.ts), so a chain of harmless-looking
// symbolic links can neither pull a host file into the layer nor push one out of it.
import { chmod, lchown, lstat, mkdir, readdir, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { BurrowError, Code } from "@burrow/protocol";
import { normalizePosix } from "./build-state.js";
import { assertInside, CONTEXT_ESCAPE, resolveBeneath } from "./context-paths.js";
import { lookupAccount, resolveInLayers, statInLayers, type SandboxAccount } from "./layer-files.js";
import { TemplateBuildError } from "./template-build-error.js";
import { BAD_CONTEXT_ARCHIVE, unpackContext } from "./unpack-context.js";

export interface CopyInput {
  /** The uploaded tar(.gz). */
  archive: string;
  src: string;
  dest: string;
  /** User name or uid (`user[:group]`) that owns the copied files. */
  owner: string;
  /** The build's current USER: owns a working directory the COPY creates; its home is the base of a relative
   * destination when no WORKDIR is set. The owner when absent. */
  user?: string | undefined;
  /** Octal mode string applied to every copied entry, or "" to keep the archive's modes. */
  mode: string;
  workdir: string | undefined;
  /** Layers below, top first. */
  lowerDirs: readonly string[];
  /** Empty directory that becomes the layer. */
  layerDir: string;
  /** Scratch directory on the same filesystem as layerDir. */
  scratchDir: string;
  uidBase: number;
  step: string;
}

const GLOB_CHARS = /[*?[]/;

export async function runCopyStep(input: CopyInput): Promise<string[]> {
  try {
    return await copyInto(input);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (error instanceof TemplateBuildError || typeof code !== "string") throw error;
    // A filesystem error names host paths: the unpack and layer directories become the paths the user knows.
    const message = String((error as Error).message)
      .replaceAll(`${join(input.scratchDir, "unpack")}/`, "")
      .replaceAll(input.layerDir, "")
      .replaceAll(input.scratchDir, "");
    throw new TemplateBuildError(Code.Internal, `step ${input.step}: COPY failed: ${message}`, { step: input.step, cause: error });
  }
}

async function copyInto(input: CopyInput): Promise<string[]> {
  const { step } = input;
  const account = await lookupAccount(input.lowerDirs, input.owner);
  if (!account) {
    throw new TemplateBuildError(Code.FailedPrecondition, `step ${step}: COPY owner '${input.owner}' does not exist in the image`, { step });
  }
  const unpack = join(input.scratchDir, "unpack");
  await mkdir(unpack, { recursive: true });
  await unpackArchive(input, unpack);

  const sources = await matchSources(unpack, input);
  if (sources.length === 0) {
    throw new TemplateBuildError(Code.InvalidArgument, `step ${step}: COPY source '${input.src}' matched no uploaded files`, { step });
  }
  const written = await destinationPath(input);
  if (input.workdir !== undefined && isWithin(written, normalizePosix(input.workdir))) await ensureWorkdir(input, input.workdir, account);
  // Symbolic links of the image on the way (/bin → usr/bin) are followed as the sandbox would, within the image.
  const resolved = await resolveInLayers(input.lowerDirs, written, true);
  if (resolved.notDirectory) throw notADirectory(input, resolved.notDirectory);
  const destAbs = resolved.path;
  const destIsDir = namesDirectory(input.dest) || sources.length > 1 || (await isDirectory(input, destAbs));
  const under = (name: string) => `${destAbs === "/" ? "" : destAbs}/${name}`;

  const copied: string[] = [];
  for (const source of sources) {
    const st = await lstat(source);
    if (st.isDirectory()) {
      // A directory's contents go into dest (Docker semantics), merged with what is already there.
      await ensureDir(input, destAbs, account);
      for (const name of await readdir(source)) {
        await placeEntry(input, join(source, name), under(name), account);
        copied.push(under(name));
      }
    } else {
      const target = destIsDir ? under(basename(source)) : destAbs;
      await placeEntry(input, source, target, account);
      copied.push(target);
    }
  }
  await rm(unpack, { recursive: true, force: true });
  return copied;
}

/**
 * What a COPY step adds to its layer's cache key besides the digest of its upload. Layers of COPY steps whose
 * destination depends on the working directory were made by an older rule (relative to `/`, the working
 * directory not created first), so those steps get keys of their own; every other COPY keeps its cached layer.
 */
export function copyCacheKeyInput(uploadDigest: string, dest: string, workdir: string | undefined): string {
  const dependsOnWorkdir =
    !dest.startsWith("/") || /(^|\/)\.\.?$/.test(dest) || (workdir !== undefined && isWithin(normalizePosix(dest), normalizePosix(workdir)));
  return dependsOnWorkdir ? `${uploadDigest} dest-v2` : uploadDigest;
}

/** The absolute destination in the sandbox, before the image's symbolic links are followed. */
async function destinationPath(input: CopyInput): Promise<string> {
  if (input.dest.startsWith("/")) return normalizePosix(input.dest);
  const base = input.workdir ?? (await lookupAccount(input.lowerDirs, input.user ?? input.owner))?.home ?? "/";
  return normalizePosix(`${base}/${input.dest}`);
}

/** Docker's rule: a destination ending in '/' (or naming '.' or '..') is a directory. */
function namesDirectory(dest: string): boolean {
  return /(^|\/)\.{0,2}$/.test(dest);
}

function isWithin(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir === "/" ? "/" : `${dir}/`);
}

/** Is `path` (symbolic links resolved) a directory in this layer or the layers below? */
async function isDirectory(input: CopyInput, path: string): Promise<boolean> {
  const here = await lstat(join(input.layerDir, path)).catch(() => undefined);
  if (here) return here.isDirectory();
  return (await statInLayers(input.lowerDirs, path))?.isDirectory() === true;
}

/** Create the working directory where it is missing, new parts owned by the current user (E2B's WORKDIR). */
async function ensureWorkdir(input: CopyInput, workdir: string, owner: SandboxAccount): Promise<void> {
  const resolved = await resolveInLayers(input.lowerDirs, normalizePosix(workdir), true);
  if (resolved.notDirectory) throw notADirectory(input, resolved.notDirectory);
  const user = input.user !== undefined ? await lookupAccount(input.lowerDirs, input.user) : undefined;
  await ensureDir(input, resolved.path, user ?? owner);
}

async function unpackArchive(input: CopyInput, unpack: string): Promise<void> {
  try {
    await unpackContext(input.archive, unpack);
  } catch (error) {
    if (!(error instanceof BurrowError && error.reason === BAD_CONTEXT_ARCHIVE)) throw error;
    throw new TemplateBuildError(
      Code.InvalidArgument,
      `step ${input.step}: the uploaded files of COPY '${input.src}' cannot be unpacked: ${error.message}`,
      { step: input.step, cause: error },
    );
  }
}

function notADirectory(input: CopyInput, path: string): TemplateBuildError {
  return new TemplateBuildError(
    Code.FailedPrecondition,
    `step ${input.step}: COPY destination parent ${path} exists in the image and is not a directory`,
    { step: input.step },
  );
}

/**
 * Move one unpacked entry to `target` (absolute sandbox path) in the layer, then fix owners and modes. `from`
 * is inside the unpack directory (resolved beneath it or listed from a real directory of it), so moving it
 * takes nothing from anyone else.
 */
async function placeEntry(input: CopyInput, from: string, target: string, account: SandboxAccount): Promise<void> {
  await ensureDir(input, dirname(target), account);
  const to = join(input.layerDir, target);
  const existing = await lstat(to).catch(() => undefined);
  const source = await lstat(from);
  if (source.isDirectory()) {
    // A directory the image already has (or reaches through a link, /bin → usr/bin) is merged into, keeping
    // its owner and mode: moved over it whole, the copy would shadow it in the overlay.
    const into = existing?.isDirectory() ? target : existing ? undefined : await existingImageDir(input, target);
    if (into !== undefined) {
      await ensureDir(input, into, account);
      for (const name of await readdir(from)) await placeEntry(input, join(from, name), `${into}/${name}`, account);
      return;
    }
  }
  if (existing) await rm(to, { recursive: true, force: true });
  await rename(from, to);
  await ownTree(to, account, input);
}

/** `target`, or where its symbolic links lead within the image, when that is a directory of the layers below. */
async function existingImageDir(input: CopyInput, target: string): Promise<string | undefined> {
  const below = await statInLayers(input.lowerDirs, target);
  if (below?.isDirectory()) return target;
  if (!below?.isSymbolicLink()) return undefined;
  const resolved = await resolveInLayers(input.lowerDirs, target, true);
  if (resolved.notDirectory) return undefined;
  return (await statInLayers(input.lowerDirs, resolved.path))?.isDirectory() ? resolved.path : undefined;
}

async function ownTree(path: string, account: SandboxAccount, input: CopyInput): Promise<void> {
  const st = await lstat(path);
  await lchown(path, input.uidBase + account.uid, input.uidBase + account.gid);
  if (!st.isSymbolicLink() && input.mode !== "") await chmod(path, Number.parseInt(input.mode, 8));
  if (st.isDirectory()) for (const name of await readdir(path)) await ownTree(join(path, name), account, input);
}

/**
 * Create `dir` (absolute sandbox path, symbolic links already resolved) and its parents in the layer. Existing
 * directories of the layers below keep their owner and mode; new ones belong to the COPY owner. Every
 * component is checked with lstat before the next one is joined, so the walk never passes a symbolic link.
 */
async function ensureDir(input: CopyInput, dir: string, account: SandboxAccount): Promise<void> {
  let current = "";
  for (const part of dir.split("/").filter((p) => p !== "")) {
    current = `${current}/${part}`;
    const here = join(input.layerDir, current);
    const inLayer = await lstat(here).catch(() => undefined);
    if (inLayer?.isDirectory()) continue;
    if (inLayer) {
      throw new TemplateBuildError(Code.FailedPrecondition, `step ${input.step}: COPY destination parent ${current} is not a directory`, {
        step: input.step,
      });
    }
    const below = await statInLayers(input.lowerDirs, current);
    if (below && !below.isDirectory()) throw notADirectory(input, current);
    await mkdir(here);
    if (below) {
      await lchown(here, below.uid, below.gid);
      await chmod(here, below.mode & 0o7777);
    } else {
      await lchown(here, input.uidBase + account.uid, input.uidBase + account.gid);
      await chmod(here, 0o755);
    }
  }
}

/** The unpacked paths `src` names: one path, or every top-level match of a glob. All are inside `unpack`. */
async function matchSources(unpack: string, input: CopyInput): Promise<string[]> {
  const escape = (reason: string) =>
    new TemplateBuildError(Code.InvalidArgument, `step ${input.step}: COPY source '${input.src}' ${reason}`, { step: input.step });
  const parts: string[] = [];
  for (const part of input.src.split("/")) {
    if (part === "" || part === ".") continue;
    if (part !== "..") parts.push(part);
    else if (parts.pop() === undefined) throw escape("leaves the build context");
  }
  const clean = parts.join("/");
  if (!GLOB_CHARS.test(clean)) {
    try {
      const path = await resolveBeneath(unpack, clean);
      return path === undefined ? [] : [path];
    } catch (error) {
      if (error instanceof BurrowError && error.reason === CONTEXT_ESCAPE) throw escape(error.message);
      throw error;
    }
  }
  const pattern = globToRegExp(clean);
  const out: string[] = [];
  // Only real directories are descended into: a glob never passes a symbolic link.
  const walk = async (dir: string, rel: string): Promise<void> => {
    for (const name of (await readdir(dir)).sort()) {
      const childRel = rel === "" ? name : `${rel}/${name}`;
      if (pattern.test(childRel)) {
        out.push(join(dir, name));
        continue;
      }
      if ((await lstat(join(dir, name))).isDirectory()) await walk(join(dir, name), childRel);
    }
  };
  await walk(unpack, "");
  for (const path of out) await assertInside(unpack, path).catch(() => Promise.reject(escape("leaves the build context")));
  return out;
}

export function globToRegExp(glob: string): RegExp {
  let re = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] as string;
    if (c === "*" && glob[i + 1] === "*") {
      re += ".*";
      i++;
      if (glob[i + 1] === "/") i++;
    } else if (c === "*") re += "[^/]*";
    else if (c === "?") re += "[^/]";
    else if (c === "[") {
      const end = glob.indexOf("]", i);
      if (end < 0) re += "\\[";
      else {
        re += `[${glob.slice(i + 1, end).replace(/^!/, "^")}]`;
        i = end;
      }
    } else re += c.replace(/[.+^${}()|\\]/g, "\\$&");
  }
  return new RegExp(`^${re}$`);
}
