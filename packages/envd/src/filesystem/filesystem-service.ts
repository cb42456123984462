import { filesystemPb, type Filesystem } from "@burrow/protocol";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { cp, lstat, readdir, rename, rm, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { EnvdContext } from "../context.js";
import { errnoOf } from "@burrow/protocol/errors";
import { connectErrorFrom, connectErrorFromFs } from "../errors.js";
import { EventQueue } from "../rpc/event-queue.js";
import { rpcUser } from "../rpc/request-user.js";
import { keepaliveIntervalMs } from "../rpc/stream-headers.js";
import type { SandboxUser } from "../users/user-db.js";
import { entryInfo } from "./entry-info.js";
import { mkdirAllOwned } from "./owned-mkdir.js";
import { resolveUserPath } from "./paths.js";
import type { DirEvent } from "./watch/dir-watcher.js";
import { openDirWatcher, toFilesystemEvent } from "./watch/watch-dir.js";
import type { WatcherRegistry } from "./watch/watcher-registry.js";

export function createFilesystemService(env: EnvdContext, watchers: WatcherRegistry): ServiceImpl<typeof Filesystem> {
  const { users } = env;

  function resolve(ctx: HandlerContext, raw: string): { user: SandboxUser; path: string } {
    const user = rpcUser(env, ctx);
    try {
      return { user, path: resolveUserPath(raw, user, env.state.defaultWorkdir) };
    } catch (err) {
      throw connectErrorFrom(err);
    }
  }

  async function info(path: string, what = `path '${path}'`) {
    try {
      return await entryInfo(path, users);
    } catch (err) {
      throw connectErrorFromFs(err, what);
    }
  }

  async function listDir(root: string, depth: number): Promise<filesystemPb.EntryInfo[]> {
    const out: filesystemPb.EntryInfo[] = [];
    async function walk(dir: string, level: number): Promise<void> {
      let names: string[];
      try {
        names = (await readdir(dir)).sort();
      } catch (err) {
        if (dir === root) throw connectErrorFromFs(err, `path '${dir}'`);
        return; // unreadable or vanished subdirectory
      }
      for (const name of names) {
        const p = join(dir, name);
        const e = await entryInfo(p, users).catch(() => undefined);
        if (!e) continue;
        out.push(e);
        // symlinked directories are listed but not descended into (no cycles)
        if (level < depth && e.type === filesystemPb.FileType.DIRECTORY && e.symlinkTarget === undefined) {
          await walk(p, level + 1);
        }
      }
    }
    await walk(root, 1);
    return out;
  }

  return {
    async stat(req, ctx) {
      const { path } = resolve(ctx, req.path);
      return { entry: await info(path) };
    },

    async makeDir(req, ctx) {
      const { user, path } = resolve(ctx, req.path);
      const existing = await stat(path).catch(() => undefined);
      if (existing?.isDirectory()) throw new ConnectError(`directory '${path}' already exists`, Code.AlreadyExists);
      if (existing) throw new ConnectError(`path '${path}' already exists and is not a directory`, Code.InvalidArgument);
      try {
        await mkdirAllOwned(path, user);
      } catch (err) {
        throw connectErrorFromFs(err, `make directory '${path}'`);
      }
      return { entry: await info(path) };
    },

    async move(req, ctx) {
      const { user, path: source } = resolve(ctx, req.source);
      const { path: destination } = resolve(ctx, req.destination);
      await lstat(source).catch((err: unknown) => {
        throw connectErrorFromFs(err, `source '${source}'`);
      });
      try {
        await mkdirAllOwned(dirname(destination), user);
        await rename(source, destination).catch(async (err: unknown) => {
          if (errnoOf(err) !== "EXDEV") throw err;
          // across filesystems rename(2) cannot work: copy, then delete
          await cp(source, destination, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
          await rm(source, { recursive: true, force: true });
        });
      } catch (err) {
        throw connectErrorFromFs(err, `move '${source}' to '${destination}'`);
      }
      return { entry: await info(destination) };
    },

    async listDir(req, ctx) {
      const { path } = resolve(ctx, req.path);
      const s = await stat(path).catch((err: unknown) => {
        throw connectErrorFromFs(err, `path '${path}'`);
      });
      if (!s.isDirectory()) throw new ConnectError(`path '${path}' is not a directory`, Code.InvalidArgument);
      return { entries: await listDir(path, Math.max(1, Math.min(req.depth || 1, 64))) };
    },

    async remove(req, ctx) {
      const { path } = resolve(ctx, req.path);
      try {
        await rm(path, { recursive: true, force: true });
      } catch (err) {
        throw connectErrorFromFs(err, `remove '${path}'`);
      }
      return {};
    },

    async *watchDir(req, ctx) {
      const { path } = resolve(ctx, req.path);
      const queue = new EventQueue<DirEvent>();
      const watcher = await openDirWatcher(
        { path, recursive: req.recursive, allowNetworkMounts: req.allowNetworkMounts },
        (e) => queue.push(e),
        () => queue.close(),
      );
      try {
        yield { event: { case: "start" as const, value: {} } };
        const idleMs = keepaliveIntervalMs(ctx.requestHeader);
        for (;;) {
          const r = await queue.next(ctx.signal, idleMs);
          if (r.kind === "done") return;
          if (r.kind === "idle") yield { event: { case: "keepalive" as const, value: {} } };
          else yield { event: { case: "filesystem" as const, value: await toFilesystemEvent(r.value, req.includeEntry, users) } };
        }
      } finally {
        watcher.close();
      }
    },

    async createWatcher(req, ctx) {
      const { path } = resolve(ctx, req.path);
      const watcherId = await watchers.create(
        { path, recursive: req.recursive, allowNetworkMounts: req.allowNetworkMounts }, req.includeEntry);
      return { watcherId };
    },

    async getWatcherEvents(req) {
      return { events: await watchers.take(req.watcherId) };
    },

    removeWatcher(req) {
      watchers.remove(req.watcherId);
      return {};
    },
  };
}


