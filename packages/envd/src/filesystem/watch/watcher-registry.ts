import { Code, ConnectError } from "@connectrpc/connect";
import { randomUUID } from "node:crypto";
import type { filesystemPb } from "@burrow/protocol";
import type { UserDb } from "../../users/user-db.js";
import type { DirWatcher } from "./dir-watcher.js";
import { openDirWatcher, toFilesystemEvent, type WatchOptions } from "./watch-dir.js";

const MAX_WATCHERS = 256;
// A polled watcher nobody polls must not grow without bound: the oldest events are dropped.
const MAX_PENDING_EVENTS = 10_000;

interface Polled {
  watcher: DirWatcher;
  events: filesystemPb.FilesystemEvent[];
  chain: Promise<void>;
}

/** The polling watchers (CreateWatcher / GetWatcherEvents / RemoveWatcher). */
export class WatcherRegistry {
  #watchers = new Map<string, Polled>();
  constructor(private readonly users: UserDb) {}

  async create(opts: WatchOptions, includeEntry: boolean): Promise<string> {
    if (this.#watchers.size >= MAX_WATCHERS) {
      throw new ConnectError(`too many watchers (max ${MAX_WATCHERS})`, Code.ResourceExhausted);
    }
    const id = randomUUID();
    const polled: Polled = { watcher: undefined as unknown as DirWatcher, events: [], chain: Promise.resolve() };
    polled.watcher = await openDirWatcher(opts, (e) => {
      // events are converted in order even when includeEntry makes the conversion async
      polled.chain = polled.chain.then(async () => {
        polled.events.push(await toFilesystemEvent(e, includeEntry, this.users));
        if (polled.events.length > MAX_PENDING_EVENTS) polled.events.splice(0, polled.events.length - MAX_PENDING_EVENTS);
      });
    }, () => {});
    this.#watchers.set(id, polled);
    return id;
  }

  async take(id: string): Promise<filesystemPb.FilesystemEvent[]> {
    const p = this.#get(id);
    await p.chain;
    return p.events.splice(0);
  }

  remove(id: string): void {
    this.#get(id).watcher.close();
    this.#watchers.delete(id);
  }

  closeAll(): void {
    for (const p of this.#watchers.values()) p.watcher.close();
    this.#watchers.clear();
  }

  #get(id: string): Polled {
    const p = this.#watchers.get(id);
    if (!p) throw new ConnectError(`watcher '${id}' not found`, Code.NotFound);
    return p;
  }
}
