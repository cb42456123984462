// Changes under a directory in a sandbox, as a stream: envd's Filesystem.WatchDir.
import { filesystemPb, BurrowError, Code } from "@burrow/protocol";
import { envdErrorFrom } from "./envd-error.js";
import type { EnvdTarget } from "./envd-target.js";
import { filesystemClient, rpcHeaders } from "./transport.js";

export type DirEventType = "create" | "write" | "remove" | "rename" | "chmod";

export interface DirEvent {
  /** Relative to the watched directory. */
  name: string;
  type: DirEventType;
}

const EVENT_TYPES: Partial<Record<filesystemPb.EventType, DirEventType>> = {
  [filesystemPb.EventType.CREATE]: "create",
  [filesystemPb.EventType.WRITE]: "write",
  [filesystemPb.EventType.REMOVE]: "remove",
  [filesystemPb.EventType.RENAME]: "rename",
  [filesystemPb.EventType.CHMOD]: "chmod",
};

export interface WatchDirOptions {
  path: string;
  recursive: boolean;
  /** @default DEFAULT_USER */
  user?: string | undefined;
  /** Ends the watch. */
  signal: AbortSignal;
}

/**
 * Resolves once envd watches (its start event), so every change made after that is reported. The stream runs until
 * the signal aborts (it then throws a Canceled BurrowError) or envd ends it; a broken stream throws a BurrowError.
 */
export async function watchDir(target: EnvdTarget, opts: WatchDirOptions): Promise<AsyncIterable<DirEvent>> {
  const what = `cannot watch ${opts.path}`;
  const stream = filesystemClient(target).watchDir(
    { path: opts.path, recursive: opts.recursive },
    { headers: rpcHeaders(target, opts.user), signal: opts.signal },
  );
  const responses = stream[Symbol.asyncIterator]();
  try {
    for (;;) {
      const first = await responses.next();
      if (first.done) throw new BurrowError(Code.Unavailable, `${what}: envd closed the watch before it started`);
      if (first.value.event.case === "start") break;
    }
  } catch (error) {
    throw envdErrorFrom(error, what);
  }
  return (async function* () {
    try {
      for (;;) {
        const next = await responses.next();
        if (next.done) return;
        const event = next.value.event;
        const type = event.case === "filesystem" ? EVENT_TYPES[event.value.type] : undefined;
        if (event.case === "filesystem" && type) yield { name: event.value.name, type };
      }
    } catch (error) {
      throw envdErrorFrom(error, what);
    } finally {
      await responses.return?.();
    }
  })();
}
