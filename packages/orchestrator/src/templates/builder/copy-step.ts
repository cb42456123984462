// COPY: the uploaded tar (paths relative to the build context) is unpacked on the host into a new layer.
// Nothing from the tar runs, so this needs no sandbox; ownership is written as the shifted host uid of the
// target user, and parent directories copy the attributes they have in the layers below (an overlay
// directory takes its owner and mode from the topmost layer that has it, so a root-owned stand-in for
// /home/user would otherwise take the home directory away from its user).
import { chmod, lchown, lstat, mkdir, readdir, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import * as tar from "tar";
import { normalizePosix } from "./build-state.js";
import { lookupAccount, statInLayers, type SandboxAccount } from "./layer-files.js";
import { TemplateBuildError } from "./template-build-error.js";

export interface CopyInput {
  /** The uploaded tar(.gz). */
  archive: string;
  src: string;
  dest: string;
  /** User name or uid (`user[:group]`) that owns the copied files. */
  owner: string;
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
  const { step } = input;
  const account = await lookupAccount(input.lowerDirs, input.owner);
  if (!account) {
    throw new TemplateBuildError("failed_precondition", `step ${step}: COPY owner '${input.owner}' does not exist in the image`, { step });
  }
  const unpack = join(input.scratchDir, "unpack");
  await mkdir(unpack, { recursive: true });
  // preserveOwner false: as root node-tar would otherwise apply the uploader's uids; owners are set below.
  await tar.x({ file: input.archive, cwd: unpack, preserveOwner: false, strict: true });

  const sources = await matchSources(unpack, input.src);
  if (sources.length === 0) {
    throw new TemplateBuildError("invalid_argument", `step ${step}: COPY source '${input.src}' matched no uploaded files`, { step });
  }
  const destAbs = normalizePosix(input.dest.startsWith("/") ? input.dest : `${input.workdir ?? "/"}/${input.dest}`);
  const destIsDir =
    input.dest.endsWith("/") || sources.length > 1 || (await statInLayers(input.lowerDirs, destAbs))?.isDirectory() === true;

  const copied: string[] = [];
  for (const source of sources) {
    const st = await lstat(source);
    if (st.isDirectory()) {
      // A directory's contents go into dest (Docker semantics), merged with what is already there.
      await ensureDir(input, destAbs, account);
      for (const name of await readdir(source)) {
        await placeEntry(input, join(source, name), `${destAbs === "/" ? "" : destAbs}/${name}`, account);
        copied.push(`${destAbs === "/" ? "" : destAbs}/${name}`);
      }
    } else {
      const target = destIsDir ? `${destAbs === "/" ? "" : destAbs}/${basename(source)}` : destAbs;
      await placeEntry(input, source, target, account);
      copied.push(target);
    }
  }
  await rm(unpack, { recursive: true, force: true });
  return copied;
}

/** Move one unpacked entry to `target` (absolute sandbox path) in the layer, then fix owners and modes. */
async function placeEntry(input: CopyInput, from: string, target: string, account: SandboxAccount): Promise<void> {
  await ensureDir(input, dirname(target), account);
  const to = join(input.layerDir, target);
  const existing = await lstat(to).catch(() => undefined);
  if (existing?.isDirectory() && (await lstat(from)).isDirectory()) {
    for (const name of await readdir(from)) await placeEntry(input, join(from, name), `${target}/${name}`, account);
    return;
  }
  if (existing) await rm(to, { recursive: true, force: true });
  await rename(from, to);
  await ownTree(to, account, input);
}

async function ownTree(path: string, account: SandboxAccount, input: CopyInput): Promise<void> {
  const st = await lstat(path);
  await lchown(path, input.uidBase + account.uid, input.uidBase + account.gid);
  if (!st.isSymbolicLink() && input.mode !== "") await chmod(path, Number.parseInt(input.mode, 8));
  if (st.isDirectory()) for (const name of await readdir(path)) await ownTree(join(path, name), account, input);
}

/**
 * Create `dir` (absolute sandbox path) and its parents in the layer. Existing directories of the layers below
 * keep their owner and mode; new ones belong to the COPY owner.
 */
async function ensureDir(input: CopyInput, dir: string, account: SandboxAccount): Promise<void> {
  let current = "";
  for (const part of dir.split("/").filter((p) => p !== "")) {
    current = `${current}/${part}`;
    const here = join(input.layerDir, current);
    if ((await lstat(here).catch(() => undefined))?.isDirectory()) continue;
    const below = await statInLayers(input.lowerDirs, current);
    if (below && !below.isDirectory()) {
      throw new TemplateBuildError(
        "failed_precondition",
        `step ${input.step}: COPY destination parent ${current} exists in the image and is not a directory`,
        { step: input.step },
      );
    }
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

/** The unpacked paths `src` names: one path, or every top-level match of a glob. */
async function matchSources(unpack: string, src: string): Promise<string[]> {
  const clean = normalizePosix(src).slice(1);
  if (!GLOB_CHARS.test(clean)) {
    const path = clean === "" ? unpack : join(unpack, clean);
    return (await lstat(path).catch(() => undefined)) ? [path] : [];
  }
  const pattern = globToRegExp(clean);
  const out: string[] = [];
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
