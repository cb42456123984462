// The content API's file operations, confined to one volume's directory. A volume is writable by sandboxes while
// requests run, so a path is never handed to the kernel whole: it is walked one component at a time through
// directory descriptors (`/proc/self/fd/<dir>/<name>` names one entry of an open directory, as openat would, Node
// having no openat), every directory is opened with O_NOFOLLOW, and symlinks are resolved by this code as if the
// volume's root were "/" (RESOLVE_IN_ROOT: absolute targets start at the volume's root, ".." stops there). A
// directory swapped for a symlink in between fails the open instead of leading out. Uids and gids are the
// sandbox's (0 = its root); on disk they are uidBase + id, as in the layers.
import { execFile } from "node:child_process";
import { constants, createReadStream, createWriteStream, type ReadStream, type Stats } from "node:fs";
import { close, fchmod, fchown, fstat, lchown, lstat, mkdir, open, readdir, readlink, unlink } from "node:fs";
import type { Readable, Writable } from "node:stream";
import { finished } from "node:stream/promises";
import { promisify } from "node:util";
import { BurrowError, Code } from "@burrow/protocol";
import type { VolumeHost } from "@burrow/orchestrator";

const openAsync = promisify(open);
const closeAsync = promisify(close);
const lstatAsync = promisify(lstat);
const fstatAsync = promisify(fstat);
const readlinkAsync = promisify(readlink);
const readdirAsync = promisify(readdir);
const mkdirAsync = promisify(mkdir);
const unlinkAsync = promisify(unlink);
const fchownAsync = promisify(fchown);
const fchmodAsync = promisify(fchmod);
const lchownAsync = promisify(lchown);
const run = promisify(execFile);

const MAX_SYMLINKS = 40;
const MAX_DEPTH = 64;
/** Owner of what the content API creates when the request names none: `user` of the base template. */
export const DEFAULT_CONTENT_ID = 1000;

const at = (fd: number, name?: string) => (name === undefined ? `/proc/self/fd/${fd}` : `/proc/self/fd/${fd}/${name}`);

export interface EntryStat {
  name: string;
  path: string;
  type: "file" | "directory" | "symlink" | "unknown";
  size: number;
  mode: number;
  uid: number;
  gid: number;
  atime: string;
  mtime: string;
  ctime: string;
  target?: string;
}

export interface Ownership {
  uid?: number | undefined;
  gid?: number | undefined;
  mode?: number | undefined;
}

/** An errno from a file operation as the API's error. */
function fsError(error: unknown, path: string): BurrowError {
  if (error instanceof BurrowError) return error;
  // libuv has no name for EDQUOT (122): it reports "Unknown system error -122".
  const errno = (error as NodeJS.ErrnoException).errno;
  const code = errno === -122 ? "EDQUOT" : (error as NodeJS.ErrnoException).code;
  const shown = JSON.stringify(path);
  switch (code) {
    case "ENOENT":
      return new BurrowError(Code.NotFound, `path ${shown} not found in the volume`, { reason: "path_not_found" });
    case "EEXIST":
    case "ENOTEMPTY":
      return new BurrowError(Code.AlreadyExists, `path ${shown} exists already`, { reason: "path_exists" });
    case "ENOTDIR":
      return new BurrowError(Code.InvalidArgument, `a component of ${shown} is not a directory`, { reason: "not_a_directory" });
    case "EISDIR":
      return new BurrowError(Code.InvalidArgument, `${shown} is a directory`, { reason: "is_a_directory" });
    case "ELOOP":
      return new BurrowError(Code.InvalidArgument, `${shown} has too many symlinks, or changed into one while it was used`, { reason: "symlink_loop" });
    case "EDQUOT":
    case "ENOSPC":
      return new BurrowError(Code.ResourceExhausted, `the volume is full (its size limit is reached) writing ${shown}`, { reason: "volume_full" });
    case "ENAMETOOLONG":
      return new BurrowError(Code.InvalidArgument, `${shown} is too long`, { reason: "bad_path" });
    case "EPERM":
    case "EACCES":
      return new BurrowError(Code.PermissionDenied, `not permitted on ${shown}`, { reason: "permission_denied" });
    default:
      return new BurrowError(Code.Internal, `volume operation on ${shown} failed (${code ?? (error as Error).message})`, { cause: error });
  }
}

/** Components of a request path below the volume's root; ".." that would leave it is a 400. */
function components(path: string): string[] {
  if (typeof path !== "string" || path.includes("\0")) throw new BurrowError(Code.InvalidArgument, "path must be a string without NUL", { reason: "bad_path" });
  const out: string[] = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (out.length === 0) throw new BurrowError(Code.InvalidArgument, `path ${JSON.stringify(path)} leaves the volume`, { reason: "path_escapes_volume" });
      out.pop();
    } else out.push(part);
  }
  return out;
}

const show = (parts: readonly string[]) => `/${parts.join("/")}`;

/** An entry named by the path: its parent directory (an open fd) and its name; no name for the root itself. */
interface Located {
  dir: number;
  name: string | undefined;
  /** Path of the entry from the volume's root, after symlinks. */
  parts: string[];
}

/**
 * Copy a request body into a file. Unlike pipeline, a failing write (the volume full) leaves the body alone: the
 * request must stay readable for the answer to reach the client.
 */
function copyInto(body: Readable, out: Writable): Promise<void> {
  return new Promise((resolve, reject) => {
    out.once("error", (error) => {
      body.unpipe(out);
      reject(error);
    });
    out.once("finish", resolve);
    body.once("error", reject);
    body.pipe(out);
  });
}

/** Read and drop the rest of a request body, so that an error answer reaches the client instead of a reset. */
export async function drain(body: Readable): Promise<void> {
  if (body.readableEnded || body.destroyed) return;
  body.resume();
  await finished(body).catch(() => undefined);
}

export class VolumeFiles {
  private readonly fds: number[] = [];

  private constructor(
    private readonly host: VolumeHost,
    private readonly root: number,
  ) {
    this.fds.push(root);
  }

  static async open(host: VolumeHost): Promise<VolumeFiles> {
    const root = await openAsync(host.dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    return new VolumeFiles(host, root);
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.fds.splice(0).map((fd) => closeAsync(fd)));
  }

  private async openDir(dir: number, name: string): Promise<number> {
    const fd = await openAsync(at(dir, name), constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    this.fds.push(fd);
    return fd;
  }

  /**
   * Walk to `path`'s entry. `followFinal`: a symlink as last component is resolved too. `createParents`: missing
   * directories on the way are made (owned as given). A missing last component is fine (the caller creates it).
   */
  private async locate(path: string, opts: { followFinal: boolean; createParents?: Ownership | undefined }): Promise<Located> {
    const queue = components(path);
    let stack: Array<{ fd: number; name: string }> = [];
    let links = 0;
    const top = () => stack[stack.length - 1]?.fd ?? this.root;
    const partsNow = () => stack.map((s) => s.name);
    if (queue.length === 0) return { dir: this.root, name: undefined, parts: [] };
    while (queue.length > 0) {
      const name = queue.shift() as string;
      if (name === "." || name === "") continue;
      if (name === "..") {
        stack.pop();
        continue;
      }
      const last = queue.length === 0;
      if (stack.length >= MAX_DEPTH) throw new BurrowError(Code.InvalidArgument, `${path} is nested too deeply`, { reason: "bad_path" });
      let st: Stats | undefined;
      try {
        st = await lstatAsync(at(top(), name));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      }
      if (st === undefined) {
        if (last) return { dir: top(), name, parts: [...partsNow(), name] };
        if (!opts.createParents) throw fsError(Object.assign(new Error(), { code: "ENOENT" }), show([...partsNow(), name]));
        await this.makeDirAt(top(), name, opts.createParents, true);
        stack.push({ fd: await this.openDir(top(), name), name });
        continue;
      }
      if (st.isSymbolicLink() && (!last || opts.followFinal)) {
        if (++links > MAX_SYMLINKS) throw fsError(Object.assign(new Error(), { code: "ELOOP" }), path);
        const target = await readlinkAsync(at(top(), name));
        if (target.startsWith("/")) stack = [];
        queue.unshift(...target.split("/"));
        continue;
      }
      if (last) return { dir: top(), name, parts: [...partsNow(), name] };
      if (!st.isDirectory()) throw fsError(Object.assign(new Error(), { code: "ENOTDIR" }), path);
      stack.push({ fd: await this.openDir(top(), name), name });
    }
    // The path ended in "..", "." or a symlink to a directory: the directory on top of the stack.
    const parts = partsNow();
    const name = parts.pop();
    stack.pop();
    return { dir: top(), name, parts: name === undefined ? [] : [...parts, name] };
  }

  private hostId(id: number | undefined, what: string): number {
    const value = id ?? DEFAULT_CONTENT_ID;
    if (!Number.isInteger(value) || value < 0 || value >= this.host.uidCount) {
      throw new BurrowError(Code.InvalidArgument, `${what} must be an integer from 0 to ${this.host.uidCount - 1}`, { reason: "bad_owner" });
    }
    return this.host.uidBase + value;
  }

  private sandboxId(id: number): number {
    const value = id - this.host.uidBase;
    return value >= 0 && value < this.host.uidCount ? value : 65534;
  }

  private async makeDirAt(dir: number, name: string, own: Ownership, existingOk: boolean): Promise<void> {
    try {
      await mkdirAsync(at(dir, name), { mode: own.mode ?? 0o755 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EEXIST" && existingOk) return;
      throw error;
    }
    const fd = await openAsync(at(dir, name), constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    try {
      await fchownAsync(fd, this.hostId(own.uid, "uid"), this.hostId(own.gid, "gid"));
      if (own.mode !== undefined) await fchmodAsync(fd, own.mode & 0o7777);
    } finally {
      await closeAsync(fd);
    }
  }

  private entry(st: Stats, parts: readonly string[], target?: string): EntryStat {
    const type = st.isSymbolicLink() ? "symlink" : st.isDirectory() ? "directory" : st.isFile() ? "file" : "unknown";
    return {
      name: parts[parts.length - 1] ?? "",
      path: show(parts),
      type,
      size: st.size,
      mode: st.mode & 0o7777,
      uid: this.sandboxId(st.uid),
      gid: this.sandboxId(st.gid),
      atime: st.atime.toISOString(),
      mtime: st.mtime.toISOString(),
      ctime: st.ctime.toISOString(),
      ...(target !== undefined ? { target } : {}),
    };
  }

  private async statAt(dir: number, name: string | undefined, parts: readonly string[]): Promise<EntryStat> {
    const st = await lstatAsync(at(dir, name));
    const target = st.isSymbolicLink() ? await readlinkAsync(at(dir, name)) : undefined;
    return this.entry(st, parts, target);
  }

  private async run<T>(path: string, op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (error) {
      throw fsError(error, path);
    }
  }

  /** Entries below a directory, `depth` levels deep (1: its children). */
  list(path: string, depth = 1): Promise<EntryStat[]> {
    return this.run(path, async () => {
      if (!Number.isInteger(depth) || depth < 1) throw new BurrowError(Code.InvalidArgument, "depth must be a positive integer", { reason: "bad_depth" });
      const found = await this.locate(path, { followFinal: true });
      const dir = found.name === undefined ? this.root : await this.openDir(found.dir, found.name);
      const out: EntryStat[] = [];
      const walk = async (fd: number, parts: string[], level: number): Promise<void> => {
        const names = (await readdirAsync(at(fd))).sort();
        for (const name of names) {
          let st: EntryStat;
          try {
            st = await this.statAt(fd, name, [...parts, name]);
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code === "ENOENT") continue; // removed meanwhile
            throw error;
          }
          out.push(st);
          if (st.type === "directory" && level < depth) {
            const child = await this.openDir(fd, name).catch(() => undefined);
            if (child !== undefined) await walk(child, [...parts, name], level + 1);
          }
        }
      };
      await walk(dir, found.parts, 1);
      return out;
    });
  }

  /** Make a directory; `force` makes missing parents too and accepts one that exists. */
  makeDir(path: string, own: Ownership & { force?: boolean | undefined }): Promise<EntryStat> {
    return this.run(path, async () => {
      const found = await this.locate(path, { followFinal: false, createParents: own.force ? own : undefined });
      if (found.name === undefined) {
        if (own.force) return this.statAt(this.root, undefined, []);
        throw fsError(Object.assign(new Error(), { code: "EEXIST" }), path);
      }
      await this.makeDirAt(found.dir, found.name, own, own.force === true);
      return this.statAt(found.dir, found.name, found.parts);
    });
  }

  getInfo(path: string): Promise<EntryStat> {
    return this.run(path, async () => {
      const found = await this.locate(path, { followFinal: false });
      return this.statAt(found.dir, found.name, found.parts);
    });
  }

  /** Change owner and mode. A symlink's owner can change, its mode cannot. */
  updateMetadata(path: string, own: Ownership): Promise<EntryStat> {
    return this.run(path, async () => {
      const found = await this.locate(path, { followFinal: false });
      const st = await lstatAsync(at(found.dir, found.name));
      const uid = own.uid === undefined ? -1 : this.hostId(own.uid, "uid");
      const gid = own.gid === undefined ? -1 : this.hostId(own.gid, "gid");
      if (st.isSymbolicLink()) {
        if (own.mode !== undefined) throw new BurrowError(Code.InvalidArgument, `${path} is a symlink, whose mode cannot change`, { reason: "symlink_mode" });
        if (uid !== -1 || gid !== -1) await lchownAsync(at(found.dir, found.name), uid, gid);
      } else {
        // O_NONBLOCK: a FIFO opens at once; O_NOFOLLOW: an entry swapped for a symlink fails instead of leading out.
        const fd = await openAsync(at(found.dir, found.name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
        try {
          if (uid !== -1 || gid !== -1) await fchownAsync(fd, uid, gid);
          if (own.mode !== undefined) await fchmodAsync(fd, own.mode & 0o7777);
        } finally {
          await closeAsync(fd);
        }
      }
      return this.statAt(found.dir, found.name, found.parts);
    });
  }

  /** Remove a file, symlink or whole directory tree (never the volume's root). */
  remove(path: string): Promise<void> {
    return this.run(path, async () => {
      const found = await this.locate(path, { followFinal: false });
      if (found.name === undefined) throw new BurrowError(Code.InvalidArgument, "the volume's root cannot be removed", { reason: "bad_path" });
      const st = await lstatAsync(at(found.dir, found.name));
      if (!st.isDirectory()) return void (await unlinkAsync(at(found.dir, found.name)));
      // rm walks relative to directory descriptors, never follows symlinks and stays on this filesystem. It runs as
      // a child, so the directory is named through this process's descriptor table.
      await run("rm", ["-rf", "--one-file-system", "--", `/proc/${process.pid}/fd/${found.dir}/${found.name}`]);
    });
  }

  /** A regular file's contents as a stream (the descriptor closes with it). */
  readFile(path: string): Promise<{ stream: ReadStream; size: number }> {
    return this.run(path, async () => {
      const found = await this.locate(path, { followFinal: true });
      if (found.name === undefined) throw fsError(Object.assign(new Error(), { code: "EISDIR" }), path);
      const fd = await openAsync(at(found.dir, found.name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      const st = await fstatAsync(fd).catch(async (error: unknown) => {
        await closeAsync(fd);
        throw error;
      });
      if (!st.isFile()) {
        await closeAsync(fd);
        throw st.isDirectory()
          ? fsError(Object.assign(new Error(), { code: "EISDIR" }), path)
          : new BurrowError(Code.InvalidArgument, `${path} is not a regular file`, { reason: "not_a_file" });
      }
      return { stream: createReadStream("", { fd, autoClose: true }), size: st.size };
    });
  }

  /** Write (create or replace) a file from a stream, creating missing parent directories. */
  writeFile(path: string, body: Readable, own: Ownership): Promise<EntryStat> {
    return this.run(path, async () => {
      const found = await this.locate(path, { followFinal: true, createParents: { uid: own.uid, gid: own.gid } });
      if (found.name === undefined) throw fsError(Object.assign(new Error(), { code: "EISDIR" }), path);
      const uid = this.hostId(own.uid, "uid");
      const gid = this.hostId(own.gid, "gid");
      const fd = await openAsync(
        at(found.dir, found.name),
        constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW | constants.O_NONBLOCK,
        own.mode ?? 0o644,
      );
      const out = createWriteStream("", { fd, autoClose: false });
      try {
        const st = await fstatAsync(fd);
        if (!st.isFile()) throw new BurrowError(Code.InvalidArgument, `${path} is not a regular file`, { reason: "not_a_file" });
        await fchownAsync(fd, uid, gid);
        if (own.mode !== undefined) await fchmodAsync(fd, own.mode & 0o7777);
        await copyInto(body, out);
      } catch (error) {
        // The rest of the body is read and dropped, so the client gets the answer instead of a reset connection.
        await drain(body);
        throw error;
      } finally {
        out.destroy();
        await closeAsync(fd).catch(() => undefined);
      }
      return this.statAt(found.dir, found.name, found.parts);
    });
  }
}
