// Filesystem events onto the bus: for each watch asked for (REST, or `burrow.watch` metadata at create time) the
// server holds an envd WatchDir stream and publishes every change as `sbx.<template>.<sandbox>.fs.<type>` into the
// durable sandbox event stream, so triggers see it. Watches live in memory: they end with their sandbox, and a
// server restart drops them (clients re-create them; the metadata convention does not re-apply after a restart).
import { randomUUID } from "node:crypto";
import { posix } from "node:path";
import { publishSandboxEvent, type Bus } from "@burrow/bus";
import type { Logger } from "pino";
import { Code, ServerError } from "../errors.js";
import type { SandboxEvents } from "../lifecycle/events.js";
import type { SandboxService } from "../lifecycle/sandbox-service.js";
import { FS_EVENT_TYPES, openDirWatch } from "./envd-client.js";

/** Create-time metadata: a path (or comma-separated paths) to watch recursively from the start. */
export const WATCH_METADATA_KEY = "burrow.watch";

export interface WatchInfo {
  watchId: string;
  sandboxId: string;
  path: string;
  recursive: boolean;
  createdAtMs: number;
}

interface Held {
  info: WatchInfo;
  stop: AbortController;
}

export interface WatchBridgeOptions {
  bus: Bus;
  sandboxes: SandboxService;
  events: SandboxEvents;
  logger: Logger;
  /** Watches one sandbox may hold. @default 32 */
  maxPerSandbox?: number;
}

export class WatchBridge {
  readonly #o: WatchBridgeOptions;
  readonly #watches = new Map<string, Held>();
  readonly #unsubscribe: Array<() => void> = [];
  #closed = false;

  constructor(o: WatchBridgeOptions) {
    this.#o = o;
    this.#unsubscribe.push(o.sandboxes.onRemoved((id) => this.#stopSandbox(id)));
    this.#unsubscribe.push(
      o.events.subscribe((e) => {
        const spec = e.type === "created" ? e.metadata[WATCH_METADATA_KEY] : undefined;
        if (!spec) return;
        for (const path of spec.split(",").map((p) => p.trim()).filter(Boolean)) {
          this.start(e.sandboxId, { path, recursive: true }).catch((err: unknown) =>
            o.logger.warn({ err, sandboxId: e.sandboxId, path }, `could not start the ${WATCH_METADATA_KEY} watch`),
          );
        }
      }),
    );
  }

  /** Starts watching; resolves once envd watches, so every change after it is published. */
  async start(sandboxId: string, o: { path: string; recursive: boolean; user?: string | undefined }): Promise<WatchInfo> {
    if (this.#closed) throw new ServerError(Code.Unavailable, "the server is shutting down");
    if (!o.path.startsWith("/")) throw new ServerError(Code.InvalidArgument, `path must be absolute, got "${o.path}"`);
    const live = this.#o.sandboxes.live(sandboxId);
    if (!live) throw new ServerError(Code.NotFound, `sandbox "${sandboxId}" doesn't exist or is not running`);
    if (this.list(sandboxId).length >= (this.#o.maxPerSandbox ?? 32)) {
      throw new ServerError(Code.ResourceExhausted, `sandbox "${sandboxId}" already has ${this.#o.maxPerSandbox ?? 32} watches`);
    }
    const root = posix.normalize(o.path);
    const stop = new AbortController();
    const events = await openDirWatch(
      { address: live.record.address, accessToken: live.row.envdAccessToken },
      { path: root, recursive: o.recursive, user: o.user, signal: stop.signal },
    );
    const info: WatchInfo = { watchId: randomUUID(), sandboxId, path: root, recursive: o.recursive, createdAtMs: Date.now() };
    // The sandbox may have ended while envd was answering.
    if (!this.#o.sandboxes.live(sandboxId) || this.#closed) {
      stop.abort();
      throw new ServerError(Code.NotFound, `sandbox "${sandboxId}" ended`);
    }
    this.#watches.set(info.watchId, { info, stop });
    void this.#pump(info, events, stop.signal, { templateId: live.row.templateId, metadata: live.row.metadata });
    return info;
  }

  async #pump(info: WatchInfo, events: AsyncIterator<{ name: string; type: number }>, signal: AbortSignal, base: { templateId: string; metadata: Record<string, string> }): Promise<void> {
    try {
      for (;;) {
        const r = await events.next();
        if (r.done) break;
        const type = FS_EVENT_TYPES[r.value.type as keyof typeof FS_EVENT_TYPES];
        if (!type) continue;
        // One at a time, so the stream keeps envd's order.
        await publishSandboxEvent(this.#o.bus, {
          category: "fs",
          type,
          sandboxId: info.sandboxId,
          templateId: base.templateId,
          metadata: base.metadata,
          path: posix.join(info.path, r.value.name),
        }).catch((err: unknown) => this.#o.logger.warn({ err, sandboxId: info.sandboxId }, "could not publish a filesystem event"));
      }
    } catch (err) {
      if (!signal.aborted) this.#o.logger.warn({ err, sandboxId: info.sandboxId, path: info.path }, "filesystem watch ended");
    } finally {
      this.#watches.delete(info.watchId);
    }
  }

  list(sandboxId?: string): WatchInfo[] {
    return [...this.#watches.values()].map((h) => h.info).filter((w) => sandboxId === undefined || w.sandboxId === sandboxId);
  }

  /** False when there is no such watch on that sandbox. */
  stop(sandboxId: string, watchId: string): boolean {
    const h = this.#watches.get(watchId);
    if (!h || h.info.sandboxId !== sandboxId) return false;
    this.#watches.delete(watchId);
    h.stop.abort();
    return true;
  }

  #stopSandbox(sandboxId: string): void {
    for (const w of this.list(sandboxId)) this.stop(sandboxId, w.watchId);
  }

  close(): void {
    this.#closed = true;
    for (const u of this.#unsubscribe.splice(0)) u();
    for (const h of this.#watches.values()) h.stop.abort();
    this.#watches.clear();
  }
}
