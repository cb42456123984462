import { filesystemPb } from "@burrow/protocol";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { nativeAddon, type InotifyEvent } from "../../native/native-modules.js";

const { EventType } = filesystemPb;

// inotify(7) bits
const IN_MODIFY = 0x2, IN_ATTRIB = 0x4, IN_MOVED_FROM = 0x40, IN_MOVED_TO = 0x80, IN_CREATE = 0x100;
const IN_DELETE = 0x200, IN_DELETE_SELF = 0x400, IN_MOVE_SELF = 0x800, IN_Q_OVERFLOW = 0x4000;
const IN_IGNORED = 0x8000, IN_ONLYDIR = 0x1000000, IN_ISDIR = 0x40000000;
const WATCH_MASK = IN_MODIFY | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF
  | IN_MOVE_SELF | IN_ONLYDIR;

export interface DirEvent {
  /** Path relative to the watched directory. */
  name: string;
  type: filesystemPb.EventType;
  /** Absolute path of the entry. */
  path: string;
}

/**
 * Watches a directory (optionally its whole tree) with inotify and reports fsnotify-style events: CREATE
 * (created or moved in), WRITE, REMOVE, RENAME (moved away), CHMOD. Directories created later are watched too.
 */
export class DirWatcher {
  #handle: object | undefined;
  #dirs = new Map<number, string>(); // wd -> path relative to root ("" = root)

  constructor(
    readonly root: string,
    private readonly recursive: boolean,
    private readonly onEvent: (e: DirEvent) => void,
    private readonly onRootGone: () => void,
  ) {}

  /** Starts watching; throws (ENOENT, ENOTDIR, …) when the root cannot be watched. */
  async start(): Promise<void> {
    const addon = nativeAddon();
    this.#handle = addon.inotifyOpen((events) => this.#handle && this.#onEvents(events));
    try {
      this.#add("");
    } catch (err) {
      this.close();
      throw err;
    }
    if (this.recursive) await this.#addTree("");
  }

  close(): void {
    if (!this.#handle) return;
    nativeAddon().inotifyClose(this.#handle);
    this.#handle = undefined;
    this.#dirs.clear();
  }

  #add(rel: string): void {
    if (!this.#handle) return;
    const wd = nativeAddon().inotifyAddWatch(this.#handle, join(this.root, rel), WATCH_MASK);
    this.#dirs.set(wd, rel);
  }

  async #addTree(rel: string): Promise<void> {
    let entries;
    try {
      entries = await readdir(join(this.root, rel), { withFileTypes: true });
    } catch {
      return; // vanished or unreadable while walking
    }
    for (const e of entries) {
      if (!e.isDirectory()) continue;
      const child = join(rel, e.name);
      try {
        this.#add(child);
      } catch {
        continue;
      }
      await this.#addTree(child);
    }
  }

  #onEvents(events: InotifyEvent[]): void {
    for (const ev of events) {
      if (ev.mask & IN_Q_OVERFLOW) continue;
      const dir = this.#dirs.get(ev.wd);
      if (dir === undefined) continue;
      if (ev.mask & IN_IGNORED) {
        this.#dirs.delete(ev.wd);
        if (dir === "") this.onRootGone();
        continue;
      }
      if (ev.mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
        if (dir === "") this.onRootGone(); // subdirectories are reported by their parent's watch
        continue;
      }
      const name = join(dir, ev.name);
      const path = join(this.root, name);
      const type = ev.mask & (IN_CREATE | IN_MOVED_TO) ? EventType.CREATE
        : ev.mask & IN_DELETE ? EventType.REMOVE
        : ev.mask & IN_MOVED_FROM ? EventType.RENAME
        : ev.mask & IN_MODIFY ? EventType.WRITE
        : ev.mask & IN_ATTRIB ? EventType.CHMOD
        : undefined;
      if (type === undefined) continue;
      if (this.recursive && type === EventType.CREATE && ev.mask & IN_ISDIR) {
        try {
          this.#add(name);
          void this.#addTree(name);
        } catch {
          // gone already
        }
      }
      this.onEvent({ name, type, path });
    }
  }
}
