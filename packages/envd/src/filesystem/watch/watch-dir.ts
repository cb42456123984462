import { create } from "@bufbuild/protobuf";
import { filesystemPb } from "@burrow/protocol";
import { Code, ConnectError } from "@connectrpc/connect";
import { stat } from "node:fs/promises";
import { connectErrorFromFs } from "../../errors.js";
import type { UserDb } from "../../users/user-db.js";
import { entryInfo } from "../entry-info.js";
import { DirWatcher, type DirEvent } from "./dir-watcher.js";
import { isNetworkMount } from "./network-mount.js";

export interface WatchOptions {
  path: string;
  recursive: boolean;
  allowNetworkMounts: boolean;
}

/** Validates the directory and starts a DirWatcher on it, with Connect errors for the client. */
export async function openDirWatcher(
  opts: WatchOptions,
  onEvent: (e: DirEvent) => void,
  onRootGone: () => void,
): Promise<DirWatcher> {
  const s = await stat(opts.path).catch((err: unknown) => {
    throw connectErrorFromFs(err, `path '${opts.path}'`);
  });
  if (!s.isDirectory()) throw new ConnectError(`path '${opts.path}' is not a directory`, Code.InvalidArgument);
  if (!opts.allowNetworkMounts && (await isNetworkMount(opts.path))) {
    throw new ConnectError(`path '${opts.path}' is on a network mount; set allowNetworkMounts to watch it`,
      Code.FailedPrecondition);
  }
  const w = new DirWatcher(opts.path, opts.recursive, onEvent, onRootGone);
  try {
    await w.start();
  } catch (err) {
    throw connectErrorFromFs(err, `watch '${opts.path}'`);
  }
  return w;
}

/** The wire event; with includeEntry, the entry as it is now (absent when it is already gone). */
export async function toFilesystemEvent(e: DirEvent, includeEntry: boolean, users: UserDb): Promise<filesystemPb.FilesystemEvent> {
  const entry = includeEntry && e.type !== filesystemPb.EventType.REMOVE && e.type !== filesystemPb.EventType.RENAME
    ? await entryInfo(e.path, users).catch(() => undefined)
    : undefined;
  return create(filesystemPb.FilesystemEventSchema, { name: e.name, type: e.type, entry });
}
